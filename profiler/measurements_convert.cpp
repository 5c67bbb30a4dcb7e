// The measurements CSV (profiler/measurements.hpp): the row a point yields (shape, costs per
// sim/model/flops, times) and a row as the cost model's measured sample.
#include "profiler/measurements.hpp"

#include <map>
#include <memory>
#include <optional>

#include "core/error.hpp"
#include "profiler/measure.hpp"
#include "sim/model/config.hpp"
#include "sim/des/decode.hpp"
#include "sim/model/flops.hpp"

namespace modsim::profiler {
namespace {

// sim/model/flops's op list of block op `block` on `p`'s shape.
std::vector<sim::op_cost> costs_of_block(kernels::op block, const point& p) {
  const kernels::block_shape& k = p.shape;
  const sim::op_shape s = op_shape_of(p);
  switch (block) {
    case kernels::op::block_dense:
      return sim::block_costs(block, s);
    case kernels::op::block_mod:
      return sim::block_costs(block, s, k.capacity);
    case kernels::op::layer_mode:
      return sim::block_costs(
          block, s, k.capacity,
          k.variant == kernels::moe_variant::integrated ? sim::moe_variant::integrated : sim::moe_variant::staged);
    default:
      break;
  }
  throw input_error("", "op", std::string(kernels::to_string(block)) + " is not a block");
}

}  // namespace

sim::op_shape op_shape_of(const point& p) {
  const kernels::block_shape& k = p.shape;
  sim::op_shape s;
  s.batch = k.batch;
  s.seq_len = k.seq_len;
  s.tokens = k.block_tokens();
  s.d_model = static_cast<int>(k.d_model);
  s.n_heads = static_cast<int>(k.n_heads);
  s.n_kv_heads = static_cast<int>(k.n_kv_heads);
  s.d_head = static_cast<int>(k.d_head);
  s.d_ff = static_cast<int>(k.d_ff);
  s.mlp = k.mlp == kernels::mlp_kind::swiglu ? sim::mlp_kind::swiglu : sim::mlp_kind::gelu;
  s.elem_bytes = sim::dtype_bytes(p.type);
  s.experts = k.experts;
  s.top_k = 1;
  s.capacity_factor = k.capacity_factor;
  s.noop_experts = k.noop_experts;
  return s;
}

std::vector<modsim::op> block_ops(const point& p) {
  std::vector<modsim::op> ops;
  for (const sim::op_cost& c : costs_of_block(p.block, p)) ops.push_back(c.op);
  return ops;
}

void fill_costs(const point& p, measurement_row& row) {
  if (kernels::is_decode(p.op)) {
    // The simulator's kernels of this step (FLOPs and bytes do not depend on the times).
    const sim::des::decode_case c = sim::des::decode_case_of(sample_of(p));
    sim::op_cost cost;
    sim::des::decode_kernels(c, p.type, &cost);
    row.tokens = c.batch;
    row.matmul_flops = cost.matmul_flops;
    row.other_flops = cost.other_flops;
    row.bytes = cost.bytes;
    return;
  }
  const kernels::block_shape& k = p.shape;
  const sim::op_shape s = op_shape_of(p);
  sim::op_cost c;
  std::int64_t tokens = k.batch * k.block_tokens();
  switch (p.op) {
    case kernels::op::block_dense:
      c = sim::sum_costs(costs_of_block(p.op, p), p.op);
      tokens = k.batch * k.seq_len;
      break;
    case kernels::op::block_mod:
      c = sim::sum_costs(costs_of_block(p.op, p), p.op);
      tokens = k.batch * k.routed_tokens();
      break;
    case kernels::op::layer_mode:
      c = sim::sum_costs(costs_of_block(p.op, p), p.op);
      break;
    case kernels::op::block_dense_train:
      c = sim::train_block_cost(p.op, s, 1.0, p.recompute);
      tokens = k.batch * k.seq_len;
      break;
    case kernels::op::block_mod_train:
      c = sim::train_block_cost(p.op, s, k.capacity, p.recompute);
      tokens = k.batch * k.routed_tokens();
      break;
    case kernels::op::router:
    case kernels::op::topk:
      c = sim::cost_of(p.op, s);
      tokens = k.batch * k.seq_len;
      break;
    default:
      c = sim::cost_of(p.op, s);
      break;
  }
  row.tokens = tokens;
  row.matmul_flops = c.matmul_flops;
  row.other_flops = c.other_flops;
  row.bytes = c.bytes;
}

measurement_row make_row(const point& p, backend_kind backend, const std::string& device, const sample_stats& stats) {
  measurement_row r;
  r.backend = backend;
  r.device = device;
  r.op = p.op;
  r.type = p.type;
  const kernels::block_shape& s = p.shape;
  r.batch = s.batch;
  r.seq_len = s.seq_len;
  r.d_model = s.d_model;
  r.n_heads = s.n_heads;
  r.d_ff = s.d_ff;
  r.capacity = s.capacity;
  r.n_kv_heads = s.n_kv_heads;
  r.mlp = s.mlp;
  r.variant = s.variant;
  r.experts = s.experts;
  r.noop_experts = s.noop_experts;
  r.capacity_factor = s.variant == kernels::moe_variant::none ? 0.0 : s.capacity_factor;
  r.timing = p.timing;
  if (p.timing == timing_mode::in_block) r.block = p.block;
  r.attention = p.attention;
  r.recompute = p.recompute;
  if (kernels::is_decode(p.op)) {
    r.decode_routing = p.decode_routing;
    r.pad_capacity = p.pad_capacity;
    r.predictor_hidden = p.predictor_hidden;
    r.model = p.model_name;
  }
  fill_costs(p, r);
  r.median_s = stats.median_s;
  r.p10_s = stats.p10_s;
  r.p90_s = stats.p90_s;
  r.samples = stats.samples;
  return r;
}

}  // namespace modsim::profiler
