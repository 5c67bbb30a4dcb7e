#pragma once
// The small dense model the FLOP, training and memory tests count by hand: d 64, 2 layers,
// 4 heads (d_head 16, d_q = d_kv = 64), d_ff 256 (gelu), vocab 100.
#include "sim/model/spec.hpp"

namespace modsim::sim::test {

inline model_spec small_dense() {
  model_spec m;
  m.name = "small";
  m.d_model = 64;
  m.n_layers = 2;
  m.n_heads = 4;
  m.n_kv_heads = 4;
  m.d_head = 16;
  m.d_ff = 256;
  m.vocab_size = 100;
  m.mlp = mlp_kind::gelu;
  return m;
}

}  // namespace modsim::sim::test
