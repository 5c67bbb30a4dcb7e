#pragma once
// The GEMM tiling a cuBLAS-like library picks for a shape, and the wave quantisation that
// follows from it (the cost model's q, sim/cost/cost.hpp and sim/cost/kernel_model.hpp).
//
// A GEMM C (M×N) = A (M×K) · B (K×N), `batch` independent products, runs as thread blocks
// (CTAs) that each compute one tm×tn output tile over K / split_k of the inner dimension; the
// SMs take the CTAs in waves of sm_count. choose_gemm_tile() tries every candidate tile
//   64×64, 64×128, 128×64, 128×128, 128×256, 256×128
// and split-K factor s ∈ {1, 2, 4, 8, 16}, and keeps the one of least predicted time, in units
// of one SM's multiply-accumulates at a 128×128 tile's efficiency:
//   time = waves · tm·tn·(K/s) / eff(tm, tn)  +  (s > 1 ? reduction : 0)
//   tiles = batch · ⌈M/tm⌉ · ⌈N/tn⌉,   waves = ⌈tiles·s / sm_count⌉
//   eff(tile) = the tile's efficiency relative to 128×128 (gemm_tile_efficiency): a larger
//       tile reuses each loaded element over more multiply-accumulates, so it runs closer to
//       the peak: 64×64 0.80, 64×128 and 128×64 0.90, 128×128 1, 128×256 and 256×128 1.05
//   reduction = 2·s·M·N·batch / sm_count · r: each split writes its fp32 partial sums and a
//       reduction reads them back, spread over the SMs; r = 2·peak_matmul(dtype) / bandwidth
//       is the multiply-accumulates an SM does in the time it moves one fp32 element (H100
//       bf16: 2 · 989e12 / 3.35e12 ≈ 590; 512 when the hardware file lacks the numbers).
// Split-K (s > 1) is a candidate only when the tile's tiles < sm_count (the machine is not
// full without it) and K/s ≥ 256 (each split keeps a long inner loop). Candidates are tried
// in the order above, s ascending, and a later one replaces the best only when it is faster
// by more than 1e-9 relative: the choice is deterministic, ties going to the earlier (the
// 128×128 tile first, then larger tiles, then smaller; no split before a split).
//
// The cost model's quantisation factor is the chosen time over the ideal time of a machine
// whose every SM does useful work at a 128×128 tile's efficiency (M·N·K·batch / sm_count):
//   q = time / (M·N·K·batch / sm_count)   (1 for a perfectly filled machine of 128×128 tiles)
// This is what a real library does only in outline: cuBLASLt's heuristics also weigh the
// kernel's pipeline stages, swizzling and the epilogue. On a GPU the profiler can record the
// algorithm cuBLASLt chose for a shape (the tile and split-K it reports) to check this choice.
//
// gemm_tiling (sim/model/spec.hpp) is which tiling the cost model uses: fixed128, one 128×128 tile
// for every shape and q = ⌈tiles/SMs⌉·SMs/tiles (sim/cost/cost.cpp gemm_waves, sim/cost/kernel_model.cpp
// kernel_device_s); chosen, choose_gemm_tile's q. A hardware file's JSON key "gemm_tiles" picks
// it for what `modsim calibrate` fits (absent = fixed128: the chosen tiles were not better on
// the committed H100 data, docs/cost-model.md "GEMM tiling") and for its uncalibrated datasheet roofline
// (absent = chosen on a GPU: hardware_spec::roofline_gemm_tiles); a calibration records the
// tiling it was fitted with (its "gemm_tiles" key, absent = fixed128, as in every calibration
// written before the chooser).
#include <optional>
#include <string>
#include <string_view>

#include "sim/model/flops.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim {

struct gemm_problem {
  double m = 0, n = 0, k = 0;  // C (m×n) = A (m×k) · B (k×n)
  double batch = 1;            // independent products (batched GEMMs)
};

struct gemm_tile_choice {
  int tile_m = 128, tile_n = 128;
  int split_k = 1;
  double tiles = 0;            // output tiles, all batches: batch · ⌈M/tm⌉ · ⌈N/tn⌉
  double waves = 0;            // ⌈tiles · split_k / sm_count⌉
  double wave_efficiency = 0;  // useful work / (waves · sm_count · tile work) = M·N·batch·s / (waves·SMs·tm·tn)
  double time = 0;             // predicted time, SM multiply-accumulates at 128×128 efficiency
  double q = 1;                // time / ideal time (see above)
};

// The efficiency of a tm×tn tile relative to 128×128 (the table above; 0 for another tile).
double gemm_tile_efficiency(int tile_m, int tile_n);

// The multiply-accumulates an SM does in the time it moves one fp32 element of split-K
// partial sums: 2 · peak_matmul(t) / memory bandwidth, or 512 without those numbers.
double split_k_element_cost(const hardware_spec& hw, dtype t);

// The tile and split-K of `g` on `sm_count` SMs (the rule above), `element_cost` as
// split_k_element_cost. A problem with no work (a zero dimension) or no SMs: the 128×128 tile,
// no split, 0 tiles, q = 1.
gemm_tile_choice choose_gemm_tile(const gemm_problem& g, int sm_count, double element_cost);
gemm_tile_choice choose_gemm_tile(const gemm_problem& g, const hardware_spec& hw, dtype t);

// gemm_tiling (sim/model/spec.hpp) by name: "fixed128" | "chosen".
const char* to_string(gemm_tiling m);
// Throws modsim::error(bad_input) "FILE: KEY: ..." for another name.
gemm_tiling parse_gemm_tiling(std::string_view name, const std::string& file, const std::string& key);

// The GEMM op `o` runs at shape `s` as (batch, M, N, K) — the product whose output tiles
// gemm_output_tiles counts (qkv_proj one GEMM of dq + 2·dkv columns, attention one product per
// (sequence, head), the experts' up projection per expert); empty for an op that is not such
// a GEMM. Expected shapes count whole sequences and tokens (rounded up).
std::optional<gemm_problem> op_gemm(modsim::op o, const op_shape& s);
std::optional<gemm_problem> op_gemm(modsim::op o, const expected_op_shape& s);

}  // namespace modsim::sim
