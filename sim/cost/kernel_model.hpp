#pragma once
// The kernel-sequence cost model of a GPU: what a calibrated GPU prediction is made of.
//
// An op is the list of kernels the CUDA backend launches for it (gpu_kernels(); qkv_proj is
// three cuBLAS GEMMs, out_proj a residual copy and a GEMM, scatter a restore and a scatter,
// the MoE ops their router GEMM, choice, rank, dispatch, two batched GEMMs and combine, ...).
// Each kernel has a device time from first principles with a few fitted numbers per kernel
// class (kernel_params):
//   GEMM (also batched):  floor + ((q·flops / (ε_c·peak))³ + (bytes / (ε_b·bandwidth))³)^(1/3)
//       q = wave quantisation of its output tiles over the SMs: with the tile and split-K a
//       cuBLAS-like heuristic picks for the shape (sim/cost/gemm_tiles.hpp, gemm_tiles = chosen),
//       or, in calibrations fitted before that (fixed128), of 128×128 tiles (1 below one wave:
//       split-K fills the machine); the second term is the weight/activation bandwidth bound
//       that few-token (decode) GEMMs live on; the cube-root blend is a smooth max.
//   memory-bound kernels (router, gather, norms, softmax, copies, activation, scatter):
//       floor + bytes / (ε_b·bandwidth)
//   serial kernels (top-k per sequence, the MoE rank kernel, the expert choice):
//       floor + per_item · items
// with 0 < ε < 1 (bounded by the datasheet roofline) and every term non-negative, so each
// curve is monotone in the work and extrapolates to shapes outside the calibration without
// inventing efficiencies above the hardware's.
//
// A sequence of kernels on one stream (a block, a layer, a forward pass) is a host queue and a
// device queue: the host spends host_s enqueuing each kernel, the device starts kernel i at
// max(host enqueue time, end of kernel i−1 + gap_s). Inside a sequence a kernel's inputs were
// just written by the previous kernel and partly sit in L2: a fraction warm_fraction of its
// input bytes (at most L2's size) is not fetched from DRAM. A timed measurement adds event_s
// (the cost of the CUDA events around the region). So the cold isolated op rows of the
// profiler (one op alone, L2 flushed) and the blocks measured in one piece are two views of
// the same kernels, and both calibrate them (sim/cost/calibrate.hpp); in-block op rows (timed
// between consecutive kernels, warm) calibrate them directly.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "sim/model/flops.hpp"
#include "sim/cost/gemm_tiles.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim {

enum class kernel_kind : int {
  gemm,
  batched_gemm,
  router,
  topk,
  gather,
  norm,
  softmax,
  copy,
  act,
  scatter,
  choice,
  rank,
  memset,
};
inline constexpr int kernel_kind_count = 13;
const char* to_string(kernel_kind k);
// Throws modsim::error(bad_input) for an unknown name.
kernel_kind kernel_kind_of(std::string_view name);

// One kernel launch: its work in the units its class is timed by.
struct kernel_work {
  kernel_kind kind = kernel_kind::copy;
  double flops = 0;  // matmul FLOPs (GEMMs)
  double bytes = 0;  // minimum DRAM traffic
  double tiles = 0;  // 128×128 output tiles, all batches (GEMMs)
  double items = 0;  // serial work items (top-k: positions per SM round; rank/choice: tokens)
  // A GEMM's dimensions (m = 0: none, e.g. the fused attention kernel, whose unit of work is
  // its 128-query tiles): what the tile chooser tiles (gemm_tiling::chosen).
  gemm_problem gemm{0, 0, 0, 0};
};

// How the CUDA backend runs attention (core/types.hpp): unfused, attn_scores and attn_values
// are batched GEMMs over the full n×L square, the scores written to memory and read back by
// attn_softmax and attn_values; fused, one causal attention kernel.
using modsim::attention_impl;
using modsim::parse_attention_impl;
// What a model predicts when nothing says otherwise: fused (what a fast GPU stack runs); a
// measurement row or a calibration that says "unfused" selects the unfused kernels.
inline constexpr attention_impl default_gpu_attention = attention_impl::fused;

// The kernels the CUDA backend launches for `op` at shape `s` (n = s.tokens per sequence),
// elements of s.elem_bytes, with attention run `attention`: fused, attn_scores is the one
// fused kernel (fused_attention_kernel) and attn_softmax / attn_values launch none, so a
// block's kernels hold the attention once. The two-argument forms are the unfused kernels
// (what rows without an attention column measured). Throws modsim::error(bad_input) for a
// whole block or a decode step (their kernels are their ops').
std::vector<kernel_work> gpu_kernels(modsim::op op, const op_shape& s, attention_impl attention);
std::vector<kernel_work> gpu_kernels(modsim::op op, const expected_op_shape& s, attention_impl attention);
std::vector<kernel_work> gpu_kernels(modsim::op op, const op_shape& s);
std::vector<kernel_work> gpu_kernels(modsim::op op, const expected_op_shape& s);

// The fused causal attention kernel of shape `s` (n queries per sequence over L = context or
// n keys, the queries the last n of the L positions): a batched_gemm with
//   flops = 4·B·H·d_head·(n·L − n(n−1)/2)   (Q·Kᵀ and P·V over the causal keys only)
//   bytes = e·(2·B·n·H·d_head + 2·B·L·H_kv·d_head)   (Q and O, K and V, each once)
//   tiles = B·H·⌈n/128⌉   (128-query tiles, the fused kernels' unit of parallel work)
kernel_work fused_attention_kernel(const op_shape& s);
kernel_work fused_attention_kernel(const expected_op_shape& s);

struct kernel_class_params {
  double floor_s = 2e-6;              // per launch, >= 0
  double compute_efficiency = 0.7;    // of the datasheet matmul peak, in (0, 1)
  double bandwidth_efficiency = 0.8;  // of the datasheet memory bandwidth, in (0, 1)
  double per_item_s = 1e-9;           // serial kernels, >= 0
};

// The fitted numbers of the model (the `kernels` object of a calibration block).
struct kernel_params {
  double event_s = 2e-6;       // timing overhead of one measured region (CUDA events)
  double host_s = 4e-6;        // host time to enqueue one kernel
  double gap_s = 1e-6;         // device idle between consecutive kernels of a stream
  double warm_fraction = 0.3;  // of a kernel's input bytes (<= L2) served from L2 in a sequence
  // How a GEMM's wave quantisation is tiled (sim/cost/gemm_tiles.hpp): fixed128 unless a
  // calibration says otherwise (its "gemm_tiles" key); default_kernel_params(hw), and so
  // `modsim calibrate`, takes the hardware file's (hw.gemm_tiles).
  gemm_tiling gemm_tiles = gemm_tiling::fixed128;
  // The largest GEMM wave factor q (gemm_wave_factor) among the kernels of the rows the
  // calibration was fitted on (JSON "max_wave_factor"; 0: not recorded). Past it the wave
  // padding a prediction carries is the tiling model's assumption, not a measurement.
  double max_wave_factor = 0;
  std::array<kernel_class_params, kernel_kind_count> kinds{};

  kernel_class_params& of(kernel_kind k) { return kinds[static_cast<std::size_t>(k)]; }
  const kernel_class_params& of(kernel_kind k) const { return kinds[static_cast<std::size_t>(k)]; }
};

// Starting values (and the prior the fit is pulled towards where data say nothing) for `hw`.
kernel_params default_kernel_params(const hardware_spec& hw);

// The wave quantisation factor q of GEMM kernel `k` (1 for any other kernel): with
// gemm_tiling::fixed128, ⌈tiles/SMs⌉·SMs/tiles once the tiles fill the SMs (else 1); with
// chosen, choose_gemm_tile's q.
double gemm_wave_factor(const kernel_work& k, dtype t, gemm_tiling tiling, const hardware_spec& hw);

// Device seconds of kernel `k` with dtype `t` on `hw`; `warm` = inside a sequence. `max_q` > 0
// caps the GEMM wave factor at it (what the kernel would take had its waves been no worse
// than that).
double kernel_device_s(const kernel_work& k, dtype t, const kernel_params& p, const hardware_spec& hw, bool warm,
                       double max_q = 0);

// The host/device queue over kernels whose device times are `device_s`, in launch order:
// seconds from the first enqueue to the end of the last kernel (no event_s).
double sequence_s(const std::vector<double>& device_s, const kernel_params& p);

}  // namespace modsim::sim
