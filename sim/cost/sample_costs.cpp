// A measured sample priced (sim/cost/sample_costs.hpp): shapes and costs, kernel sequences,
// predicted times.
#include "sim/cost/sample_costs.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/op_table.hpp"
#include "sim/cost/decode_fit.hpp"
#include "sim/des/decode.hpp"

namespace modsim::sim {

measured_sample with_costs(measured_sample s) {
  const measured_sample& p = s;
  auto bad = [&](const std::string& key, const std::string& reason) { return input_error(p.where, key, reason); };
  if (p.batch < 1) throw bad("batch", "must be >= 1");
  if (p.seq_len < 1) throw bad("seq_len", "must be >= 1");
  if (p.d_model < 1) throw bad("d_model", "must be >= 1");
  if (p.n_heads < 1 || p.d_model % p.n_heads != 0) throw bad("n_heads", "must divide d_model");
  if (p.d_ff < 1) throw bad("d_ff", "must be >= 1");
  if (!(p.capacity > 0 && p.capacity <= 1)) throw bad("capacity", "must be in (0, 1]");
  if (!(p.median_s > 0) || !std::isfinite(p.median_s)) throw bad("median_s", "must be > 0");
  if (p.variant == moe_variant::moe)
    throw bad("variant", "unknown variant 'moe' (expected none, staged or integrated)");
  s.layer_variant = p.variant == moe_variant::integrated ? moe_variant::integrated : moe_variant::staged;
  op_shape& x = s.shape;
  x = op_shape{};
  x.batch = p.batch;
  x.seq_len = p.seq_len;
  x.d_model = p.d_model;
  x.n_heads = p.n_heads;
  x.n_kv_heads = p.n_kv_heads > 0 ? p.n_kv_heads : p.n_heads;
  x.d_head = p.d_model / p.n_heads;
  x.d_ff = p.d_ff;
  x.mlp = p.mlp;
  x.elem_bytes = dtype_bytes(p.type);
  x.experts = p.experts;
  x.top_k = 1;
  x.capacity_factor = std::max(0.0, p.capacity_factor);
  x.noop_experts = p.noop_experts;
  x.tokens = p.variant == moe_variant::integrated ? p.seq_len : routed_tokens(p.capacity, p.seq_len);
  try {
    if (s.is_decode()) {
      des::decode_kernels(des::decode_case_of(p), p.type, &s.cost);
      s.cost.op = p.op;
      x.tokens = 1;
    } else if (s.is_block()) {
      if (p.op == modsim::op::block_dense) x.tokens = p.seq_len;
      s.cost = sum_costs(block_costs(p.op, x, p.capacity, s.layer_variant), p.op);
    } else if (modsim::is_train(p.op)) {
      if (p.op == modsim::op::block_dense_train) x.tokens = p.seq_len;
      s.cost = train_block_cost(p.op, x, p.capacity, p.recompute);
    } else {
      s.cost = cost_of(p.op, x);
    }
  } catch (const error& e) {
    throw bad("op", e.what());
  }
  return s;
}

kernel_row kernel_row_of(const measured_sample& s) {
  kernel_row r;
  r.type = s.type;
  r.measured_s = s.median_s;
  try {
    if (s.is_block()) {
      const op_shape x = block_op_shape(s.op, s.shape, s.capacity, s.layer_variant);
      for (const op_cost& c : block_costs(s.op, s.shape, s.capacity, s.layer_variant)) {
        const std::vector<kernel_work> k = gpu_kernels(c.op, x);
        r.kernels.insert(r.kernels.end(), k.begin(), k.end());
      }
      r.whole_block = true;
      r.weight = 3;
    } else {
      r.kernels = gpu_kernels(s.op, s.shape);
      r.timing = s.timing;
    }
  } catch (const error& e) {
    throw input_error(s.where, "op", e.what());
  }
  return r;
}

block_prediction predict_sample(const measured_sample& s, const cost_model& model) {
  block_prediction b;
  if (s.is_decode()) {
    const des::decode_case c = des::decode_case_of(s);
    const des::timeline t = des::decode_timeline(c, s.type, decode_device_model(model, s.type, c.lm_head));
    for (const des::kernel& k : t.kernels) b.ops_s += k.device_s;
    b.kernels = t.summary.launches;
    b.total_s = t.summary.step_s;
    b.overhead_s = b.total_s - b.ops_s;
    return b;
  }
  if (modsim::is_optimizer(s.op)) {
    // One AdamW step over a layer's parameters, as predict --mode train prices the step.
    optimizer_cost c;
    c.params = s.cost.other_flops / k_adamw_flops_per_param;
    c.other_flops = s.cost.other_flops;
    c.bytes = s.cost.bytes;
    const op_time t = model.optimizer_time_of(c, s.type);
    b.ops_s = t.time_s;
    b.kernels = t.kernels;
    b.total_s = b.ops_s;
    return b;
  }
  if (const std::optional<dtype> kt = model.kernel_model_dtype(s.type)) {
    kernel_row r = kernel_row_of(s);
    r.type = *kt;
    const kernel_params& p = *model.kernel_model();
    for (const kernel_work& k : r.kernels) b.ops_s += kernel_device_s(k, r.type, p, model.hardware(), true);
    b.kernels = static_cast<int>(r.kernels.size());
    b.total_s = predict_row(r, p, model.hardware());
    b.overhead_s = b.total_s - b.ops_s;
    return b;
  }
  if (modsim::is_train(s.op)) {
    const train_row_prediction t = predict_train_row(s, model);
    b.ops_s = t.ops_s;
    b.kernels = t.kernels;
    b.total_s = t.total_s;
    b.overhead_s = b.total_s - b.ops_s;
    b.stand_ins = t.stand_ins;
    for (stand_in_use& u : b.stand_ins) u.share = b.total_s > 0 ? u.share / b.total_s : 0.0;
    return b;
  }
  if (!s.is_block()) {
    const op_time t = model.time_of(s.cost, s.shape, s.type);
    // An op row is the op measured alone: no launch overhead, no in-layer refetch.
    b.ops_s = t.isolated_s;
    b.kernels = t.kernels;
    b.total_s = b.ops_s;
    return b;
  }
  for (const op_cost& c : block_costs(s.op, s.shape, s.capacity, s.layer_variant)) {
    const op_time t = model.time_of(c, s.shape, s.type);
    b.ops_s += t.time_s;
    b.kernels += t.kernels;
    if (t.calibrated && t.calibrated_as && *t.calibrated_as != c.op)
      b.stand_ins.push_back({c.op, *t.calibrated_as, t.time_s});
  }
  b.overhead_s = b.kernels * model.launch_s();
  b.total_s = b.ops_s + b.overhead_s;
  for (stand_in_use& u : b.stand_ins) u.share = b.total_s > 0 ? u.share / b.total_s : 0.0;
  return b;
}

train_row_prediction predict_train_row(const measured_sample& s, const cost_model& model) {
  if (!modsim::is_train(s.op))
    throw input_error(s.where, "op", "'" + std::string(to_string(s.op)) + "' is not a training row");
  const modsim::op block = s.op == modsim::op::block_mod_train ? modsim::op::block_mod : modsim::op::block_dense;
  const op_shape x = block_op_shape(block, s.shape, s.capacity);
  train_row_prediction out;
  std::vector<op_time> sequence, backward;
  for (const op_cost& f : block_costs(block, s.shape, s.capacity)) {
    const train_op_time t = model.train_time_of(f, ops::backward_of(f.op, x), x, s.type, s.recompute);
    sequence.push_back(t.forward);
    if (t.recompute.kernels > 0) backward.push_back(t.recompute);
    backward.push_back(t.backward);
    for (const op_time* p : {&t.forward, &t.backward, &t.recompute}) {
      out.ops_s += p->time_s;
      out.kernels += p->kernels;
    }
    out.backward_s += t.backward.time_s;
    out.backward_by_class[static_cast<int>(backward_class_of(f.op))] += t.backward.time_s;
    if (t.forward.calibrated && t.forward.calibrated_as && *t.forward.calibrated_as != f.op)
      out.stand_ins.push_back(
          {f.op, *t.forward.calibrated_as, t.forward.time_s + t.backward.time_s + t.recompute.time_s});
  }
  for (std::size_t i = backward.size(); i-- > 0;) sequence.push_back(backward[i]);
  out.total_s = std::max(out.ops_s, model.sequence_s(sequence));
  return out;
}

}  // namespace modsim::sim
