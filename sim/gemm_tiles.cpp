// gemm_output_tiles (sim/flops.hpp): the output tiles of each op's GEMM, for the cost model's
// wave quantisation.
#include <algorithm>
#include <cmath>

#include "sim/flops.hpp"

namespace modsim::sim {
namespace {
// gemm_output_tiles: the GEMM each op runs, as (batch, rows, columns) of its output. A switch
// over every enumerator beside the formulas: a new op is a decision here too.
template <class N>
double output_tiles_impl(modsim::op o, const basic_op_shape<N>& s, double tile) {
  const double B = std::ceil(double(s.batch) - 1e-9);
  const double n = std::max(1.0, std::ceil(double(s.tokens) - 1e-9));
  const double L = s.context > 0 ? std::ceil(double(s.context) - 1e-9) : n;
  const double d = s.d_model;
  const double dh = s.d_head > 0 ? s.d_head : (s.n_heads > 0 ? double(s.d_model) / s.n_heads : 0);
  const double H = s.n_heads;
  const double kvh = s.n_kv_heads > 0 ? s.n_kv_heads : H;
  const double dq = H * dh, dkv = kvh * dh;
  const double T = std::max(1.0, B * n);
  auto tiles = [tile](double batch, double m, double cols) {
    return batch * std::ceil(m / tile) * std::ceil(cols / tile);
  };
  switch (o) {
    using enum modsim::op;
    case qkv_proj:
      return tiles(1, T, dq + 2 * dkv);
    case out_proj:
    case mlp_down:
      return tiles(1, T, d);
    case mlp_up:
    case mlp_gate:
      return tiles(1, T, s.d_ff);
    case attn_scores:
      return tiles(B * H, n, L);
    case attn_values:
      return tiles(B * H, n, dh);
    case lm_head:
      return tiles(1, std::max(1.0, B * std::ceil(double(s.seq_len) - 1e-9)), s.vocab_size);
    case experts: {
      if (s.experts <= 0) return 0;
      const double per_expert = std::max(1.0, std::ceil(double(ops::expert_slots(s)) / s.experts));
      return tiles(s.experts, per_expert, s.d_ff);
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
      return 0;
  }
  return 0;
}
}  // namespace

double gemm_output_tiles(modsim::op o, const op_shape& s, double tile) { return output_tiles_impl(o, s, tile); }
double gemm_output_tiles(modsim::op o, const expected_op_shape& s, double tile) {
  return output_tiles_impl(o, s, tile);
}

}  // namespace modsim::sim
