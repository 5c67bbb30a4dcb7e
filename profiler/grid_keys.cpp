// Sweep grids (profiler/grid.hpp): the sample a point will yield and its row key.
#include "profiler/grid.hpp"

namespace modsim::profiler {

sim::measured_sample sample_of(const point& p) {
  const kernels::block_shape& k = p.shape;
  sim::measured_sample m;
  m.op = p.op;
  m.type = p.type;
  m.batch = k.batch;
  m.seq_len = k.seq_len;
  m.d_model = static_cast<int>(k.d_model);
  m.n_heads = static_cast<int>(k.n_heads);
  m.n_kv_heads = static_cast<int>(k.n_kv_heads);
  m.d_ff = static_cast<int>(k.d_ff);
  m.mlp = k.mlp;
  m.capacity = k.capacity;
  m.variant = k.variant;
  m.experts = k.experts;
  m.noop_experts = k.noop_experts;
  m.capacity_factor = k.capacity_factor;
  m.timing = p.timing;
  m.block = p.block;
  m.attention = p.attention;
  m.recompute = p.recompute;
  m.decode_routing = p.decode_routing;
  m.pad_capacity = p.pad_capacity;
  m.predictor_hidden = static_cast<int>(p.predictor_hidden);
  m.model_name = p.model_name;
  m.model = p.model;
  return m;
}

std::string point_key(const point& p) { return sim::shape_key(sample_of(p)); }

}  // namespace modsim::profiler
