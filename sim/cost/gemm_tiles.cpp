// The GEMM tile chooser (sim/cost/gemm_tiles.hpp) and gemm_output_tiles (sim/model/flops.hpp): the
// output tiles of each op's GEMM, for the cost model's wave quantisation.
#include "sim/cost/gemm_tiles.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.hpp"
#include "sim/model/flops.hpp"

namespace modsim::sim {
namespace {

struct tile_candidate {
  int m, n;
  double efficiency;  // relative to 128×128
};
// In the order they are tried (ties go to the earlier).
constexpr std::array<tile_candidate, 6> k_tiles{{
    {128, 128, 1.00},
    {128, 256, 1.05},
    {256, 128, 1.05},
    {128, 64, 0.90},
    {64, 128, 0.90},
    {64, 64, 0.80},
}};
constexpr std::array<int, 5> k_splits{1, 2, 4, 8, 16};
constexpr double k_min_split_depth = 256;  // K / split_k at least this
constexpr double k_default_element_cost = 512;

double ceil_div(double a, double b) { return std::ceil(a / b - 1e-9); }

}  // namespace

double gemm_tile_efficiency(int tile_m, int tile_n) {
  for (const tile_candidate& c : k_tiles)
    if (c.m == tile_m && c.n == tile_n) return c.efficiency;
  return 0;
}

double split_k_element_cost(const hardware_spec& hw, dtype t) {
  const double peak = hw.peak_matmul_flops.of(t);
  if (!(peak > 0) || !(hw.memory_bandwidth_bytes_s > 0)) return k_default_element_cost;
  return 2 * peak / hw.memory_bandwidth_bytes_s;
}

gemm_tile_choice choose_gemm_tile(const gemm_problem& g, int sm_count, double element_cost) {
  gemm_tile_choice best;
  const double M = std::ceil(g.m - 1e-9), N = std::ceil(g.n - 1e-9), K = g.k;
  const double batch = std::ceil(g.batch - 1e-9);
  if (sm_count <= 0 || !(M > 0) || !(N > 0) || !(K > 0) || !(batch > 0)) return best;
  const double sms = sm_count;
  const double ideal = M * N * K * batch / sms;
  bool first = true;
  for (const tile_candidate& c : k_tiles) {
    const double tiles = batch * ceil_div(M, c.m) * ceil_div(N, c.n);
    for (int split : k_splits) {
      const double s = split;
      if (split > 1 && (tiles >= sms || K / s < k_min_split_depth)) break;
      const double waves = ceil_div(tiles * s, sms);
      double time = waves * c.m * c.n * (K / s) / c.efficiency;
      if (split > 1) time += 2 * s * M * N * batch / sms * element_cost;
      if (first || time < best.time * (1 - 1e-9)) {
        first = false;
        best.tile_m = c.m;
        best.tile_n = c.n;
        best.split_k = split;
        best.tiles = tiles;
        best.waves = waves;
        best.wave_efficiency = M * N * batch * s / (waves * sms * c.m * c.n);
        best.time = time;
        best.q = time / ideal;
      }
    }
  }
  return best;
}

gemm_tile_choice choose_gemm_tile(const gemm_problem& g, const hardware_spec& hw, dtype t) {
  return choose_gemm_tile(g, hw.sm_count, split_k_element_cost(hw, t));
}

const char* to_string(gemm_tiling m) { return m == gemm_tiling::chosen ? "chosen" : "fixed128"; }

gemm_tiling parse_gemm_tiling(std::string_view name, const std::string& file, const std::string& key) {
  if (name == "chosen") return gemm_tiling::chosen;
  if (name == "fixed128") return gemm_tiling::fixed128;
  throw input_error(file, key, "unknown GEMM tiling '" + std::string(name) + "' (fixed128 or chosen)");
}

namespace {
// op_gemm: the GEMM each op runs, as (batch, rows, columns, inner dimension) of its output. A
// switch over every enumerator beside the formulas: a new op is a decision here too.
template <class N>
std::optional<gemm_problem> op_gemm_impl(modsim::op o, const basic_op_shape<N>& s) {
  const double B = std::ceil(double(s.batch) - 1e-9);
  const double n = std::max(1.0, std::ceil(double(s.tokens) - 1e-9));
  const double L_all = s.context > 0 ? std::ceil(double(s.context) - 1e-9) : n;
  const double L = s.window > 0 ? std::min(L_all, static_cast<double>(s.window)) : L_all;
  const double d = s.d_model;
  const double dh = s.d_head > 0 ? s.d_head : (s.n_heads > 0 ? double(s.d_model) / s.n_heads : 0);
  const double H = s.n_heads;
  const double kvh = s.n_kv_heads > 0 ? s.n_kv_heads : H;
  const double dq = H * dh, dkv = kvh * dh;
  const double T = std::max(1.0, B * n);
  auto gemm = [](double batch, double m, double cols, double k) {
    return std::optional<gemm_problem>(gemm_problem{m, cols, k, batch});
  };
  switch (o) {
    using enum modsim::op;
    case qkv_proj:
      return gemm(1, T, dq + 2 * dkv, d);
    case out_proj:
      return gemm(1, T, d, dq);
    case mlp_down:
      return gemm(1, T, d, s.d_ff);
    case mlp_up:
    case mlp_gate:
      return gemm(1, T, s.d_ff, d);
    case attn_scores:
      return gemm(B * H, n, L, dh);
    case attn_values:
      return gemm(B * H, n, dh, L);
    case lm_head:
      return gemm(1, std::max(1.0, B * std::ceil(double(s.seq_len) - 1e-9)), s.vocab_size, d);
    case experts: {
      if (s.experts <= 0) return std::nullopt;
      const double per_expert = std::max(1.0, std::ceil(double(ops::expert_slots(s)) / s.experts));
      return gemm(s.experts, per_expert, s.d_ff, d);
    }
    // Bandwidth-bound ops and matrix-vector products (router, predictor, expert router: a
    // few output columns): no wave quantisation. Blocks are priced from their ops.
    case router:
    case topk:
    case gather:
    case predictor:
    case attn_norm:
    case attn_softmax:
    case mlp_norm:
    case mlp_act:
    case scatter:
    case expert_router:
    case block_dense:
    case block_mod:
    case layer_mode:
    case decode_dense:
    case decode_mod:
    case decode_step:
    case block_dense_train:
    case block_mod_train:
    case adamw:
      return std::nullopt;
  }
  return std::nullopt;
}

template <class N>
double output_tiles_impl(modsim::op o, const basic_op_shape<N>& s, double tile) {
  const std::optional<gemm_problem> g = op_gemm_impl(o, s);
  if (!g) return 0;
  return g->batch * std::ceil(g->m / tile) * std::ceil(g->n / tile);
}
}  // namespace

std::optional<gemm_problem> op_gemm(modsim::op o, const op_shape& s) { return op_gemm_impl(o, s); }
std::optional<gemm_problem> op_gemm(modsim::op o, const expected_op_shape& s) { return op_gemm_impl(o, s); }

double gemm_output_tiles(modsim::op o, const op_shape& s, double tile) { return output_tiles_impl(o, s, tile); }
double gemm_output_tiles(modsim::op o, const expected_op_shape& s, double tile) {
  return output_tiles_impl(o, s, tile);
}

}  // namespace modsim::sim
