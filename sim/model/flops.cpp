// The FLOP/byte model of a whole model: each layer's ops (layer_ops, in the order they run)
// costed by their formulas (sim/model/flops_formulas.cpp) at the layer's shape, for a forward pass, a
// training step or a decode step; the blocks the profiler times. Weight counts are
// sim/model/parameters.cpp, GEMM tiles sim/cost/gemm_tiles.cpp.
#include "sim/model/flops.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "core/error.hpp"
#include "sim/model/flops_arith.hpp"

namespace modsim::sim {
namespace {

using detail::checked;

// The costs of `ids` at shape `s`, in order.
template <class Shape>
void append_ops(std::vector<op_cost>& out, const Shape& s, const std::vector<modsim::op>& ids) {
  for (const modsim::op id : ids) out.push_back(cost_of(id, s));
}

// layer_ops without the routing decision (router, topk): what a decode step's routed layer
// runs after its predictor (or router) has decided per token.
std::vector<modsim::op> after_routing(std::vector<modsim::op> ids) {
  std::erase_if(ids, [](modsim::op o) { return o == modsim::op::router || o == modsim::op::topk; });
  return ids;
}

void add_to(checked& m, checked& o, checked& b, const op_cost& c) {
  m = m + c.matmul_flops;
  o = o + c.other_flops;
  b = b + c.bytes;
}

op_cost times(op_cost c, std::int64_t k) {
  c.matmul_flops = (checked(c.matmul_flops) * k).v;
  c.other_flops = (checked(c.other_flops) * k).v;
  c.bytes = (checked(c.bytes) * k).v;
  return c;
}

// The report of `model` under `w` without its weight count and dense totals.
flops_report evaluate(const model_spec& model, const workload& w, attention_impl attention) {
  flops_report ev;
  ev.model_name = model.name;
  ev.load = w;
  const op_shape base = shape_of(model, w);
  const bool has_moe = model.moe.has_value();
  const bool decode = w.run == run_mode::decode;
  const bool train = w.run == run_mode::train;

  for (const layer_routing& plan : route_layers(model)) {
    const bool mod_routing = plan.mod_routed;
    layer_flops lf;
    lf.index = plan.index;
    lf.routed = plan.routed;
    lf.capacity = plan.capacity;

    op_shape s = base;
    if (plan.noop_experts > 0) s.noop_experts = plan.noop_experts;
    if (!decode) {
      if (mod_routing) s.tokens = routed_tokens(plan.capacity, w.seq_len);
      lf.ops = layer_costs(s, {mod_routing, has_moe});
      lf.tokens = (checked(s.batch) * s.tokens).v;
      lf.expected_tokens = static_cast<double>(lf.tokens);
    } else if (!mod_routing) {
      // One new token per sequence, attending to the S cached entries and itself.
      s.tokens = 1;
      s.seq_len = 1;
      s.context = (checked(w.seq_len) + 1).v;
      append_ops(lf.ops, s, layer_ops({false, has_moe}, s.mlp));
      lf.tokens = w.batch;
      lf.expected_tokens = static_cast<double>(w.batch);
    } else {
      // The routing decision for all B new tokens, then the block for the expected
      // m = capacity·B routed ones over the routed-only KV cache.
      const double B = static_cast<double>(w.batch);
      s.tokens = 1;
      s.seq_len = 1;
      if (model.routing && model.routing->inference == inference_routing::router) {
        lf.ops.push_back(ops::router(s));
      } else {
        lf.ops.push_back(ops::predictor(s));
      }
      expected_op_shape x;
      x.batch = plan.capacity * B;
      x.tokens = 1;
      x.seq_len = 1;
      x.context = static_cast<double>(routed_tokens(plan.capacity, w.seq_len)) + 1.0;
      x.weight_reads = 1.0 - std::pow(1.0 - plan.capacity, B);
      x.d_model = s.d_model;
      x.n_heads = s.n_heads;
      x.n_kv_heads = s.n_kv_heads;
      x.d_head = s.d_head;
      x.d_ff = s.d_ff;
      x.vocab_size = s.vocab_size;
      x.mlp = s.mlp;
      x.elem_bytes = s.elem_bytes;
      x.experts = s.experts;
      x.top_k = s.top_k;
      x.capacity_factor = s.capacity_factor;
      x.noop_experts = s.noop_experts;
      x.predictor_hidden = s.predictor_hidden;
      x.window = s.window;
      append_ops(lf.ops, x, after_routing(layer_ops({true, has_moe}, s.mlp)));
      lf.expected_tokens = x.batch;
      lf.tokens = std::llround(x.batch);
      lf.expected = x;
      lf.has_expected = true;
    }
    lf.shape = s;

    if (train) {
      // Each op: its forward, its backward and what recomputation runs again; ops holds the sum.
      lf.forward = lf.ops;
      for (std::size_t i = 0; i < lf.ops.size(); ++i) {
        const modsim::op id = lf.forward[i].op;
        lf.backward.push_back(ops::backward_of(id, s));
        lf.recompute.push_back(ops::recompute_of(id, s, w.recompute, attention));
        lf.ops[i] = sum_costs({lf.forward[i], lf.backward[i], lf.recompute[i]}, id);
      }
    }
    checked m, o, b;
    for (const op_cost& c : lf.ops) add_to(m, o, b, c);
    lf.matmul_flops = m.v;
    lf.other_flops = o.v;
    lf.bytes = b.v;
    ev.layers.push_back(std::move(lf));
  }

  op_shape head = base;
  if (decode) head.seq_len = 1;
  ev.lm_head = ops::lm_head(head);
  if (train) {
    ev.lm_head_forward = ev.lm_head;
    ev.lm_head_backward = ops::backward_of(modsim::op::lm_head, head);
    ev.lm_head = sum_costs({ev.lm_head_forward, ev.lm_head_backward}, modsim::op::lm_head);
  }

  checked m, o, b;
  for (const layer_flops& lf : ev.layers) {
    m = m + lf.matmul_flops;
    o = o + lf.other_flops;
    b = b + lf.bytes;
  }
  add_to(m, o, b, ev.lm_head);
  if (train) {
    train_breakdown t;
    t.recompute = w.recompute;
    t.attention = attention;
    checked fm, fo, fb, bm, bo, bb, rm, ro, rb;
    for (const layer_flops& lf : ev.layers)
      for (std::size_t i = 0; i < lf.ops.size(); ++i) {
        add_to(fm, fo, fb, lf.forward[i]);
        add_to(bm, bo, bb, lf.backward[i]);
        add_to(rm, ro, rb, lf.recompute[i]);
      }
    add_to(fm, fo, fb, ev.lm_head_forward);
    add_to(bm, bo, bb, ev.lm_head_backward);
    t.forward = op_cost{modsim::op::lm_head, fm.v, fo.v, fb.v};
    t.backward = op_cost{modsim::op::lm_head, bm.v, bo.v, bb.v};
    t.recompute_cost = op_cost{modsim::op::lm_head, rm.v, ro.v, rb.v};
    t.optimizer = adamw_cost(parameter_count(model), base.elem_bytes);
    t.optimizer_bytes_per_param = adamw_bytes_per_param(base.elem_bytes);
    t.model_matmul_flops = (checked(3) * fm).v;
    o = o + t.optimizer.other_flops;
    b = b + t.optimizer.bytes;
    ev.train = t;
  }
  ev.totals.matmul_flops = m.v;
  ev.totals.other_flops = o.v;
  ev.totals.bytes = b.v;
  return ev;
}

}  // namespace

op_shape shape_of(const model_spec& model, const workload& w) {
  if (w.batch < 1) throw input_error("", "batch", "must be at least 1, got " + std::to_string(w.batch));
  if (w.seq_len < 1) throw input_error("", "seq_len", "must be at least 1, got " + std::to_string(w.seq_len));
  op_shape s;
  s.batch = w.batch;
  s.tokens = w.seq_len;
  s.seq_len = w.seq_len;
  s.d_model = model.d_model;
  s.n_heads = model.n_heads;
  s.n_kv_heads = model.n_kv_heads;
  s.d_head = model.d_head;
  s.d_ff = model.d_ff;
  s.vocab_size = model.vocab_size;
  s.mlp = model.mlp;
  s.window = model.sliding_window;
  s.elem_bytes = dtype_bytes(w.type);
  if (model.moe) {
    s.experts = model.moe->experts;
    s.top_k = model.moe->top_k;
    s.capacity_factor = model.moe->capacity_factor;
  }
  if (model.routing) s.predictor_hidden = model.routing->predictor_hidden;
  return s;
}

namespace {

// Whether op `o` runs in a layer of `kind` with `mlp`: a switch over every op with no default, so
// the compiler names this place when an op is added. Where it runs in the layer is its op table
// row's layer order (core/op_table.hpp), the one statement of the order.
bool in_layer(modsim::op o, layer_kind kind, mlp_kind mlp) {
  switch (o) {
    using enum modsim::op;
    case router:
    case topk:
    case gather:
    case scatter:
      return kind.mod_routing;
    case attn_norm:
    case qkv_proj:
    case attn_scores:
    case attn_softmax:
    case attn_values:
    case out_proj:
    case mlp_norm:
      return true;
    case mlp_up:
    case mlp_act:
    case mlp_down:
      return !kind.moe;
    case mlp_gate:
      return !kind.moe && mlp == mlp_kind::swiglu;
    case expert_router:
    case experts:
      return kind.moe;
    // Outside a layer's block: the causal predictor (a decode step adds it) and the LM head
    // (once per model); whole blocks and decode steps are timed whole.
    case predictor:
    case lm_head:
    case block_dense:
    case block_mod:
    case layer_mode:
    case decode_dense:
    case decode_mod:
    case decode_step:
    case block_dense_train:
    case block_mod_train:
    case adamw:
      return false;
  }
  return false;
}

}  // namespace

std::vector<modsim::op> layer_ops(layer_kind kind, mlp_kind mlp) {
  std::vector<modsim::op> out;
  for (const modsim::op o : model_ops())  // in the table's layer order
    if (in_layer(o, kind, mlp)) out.push_back(o);
  return out;
}

std::vector<op_cost> layer_costs(const op_shape& s, layer_kind kind) {
  std::vector<op_cost> out;
  append_ops(out, s, layer_ops(kind, s.mlp));
  return out;
}

op_shape block_op_shape(modsim::op block, const op_shape& s, double capacity, moe_variant variant) {
  op_shape x = s;
  x.context = 0;
  x.tokens = s.seq_len;
  if (block == modsim::op::block_mod) {
    x.tokens = routed_tokens(capacity, s.seq_len);
  } else if (block == modsim::op::layer_mode) {
    if (variant != moe_variant::integrated) x.noop_experts = 0;
    if (variant == moe_variant::staged) x.tokens = routed_tokens(capacity, s.seq_len);
  }
  return x;
}

std::vector<op_cost> block_costs(modsim::op block, const op_shape& s, double capacity, moe_variant variant) {
  const op_shape x = block_op_shape(block, s, capacity, variant);
  if (block == modsim::op::block_dense) return layer_costs(x, {false, false});
  if (block == modsim::op::block_mod) return layer_costs(x, {true, false});
  if (block == modsim::op::layer_mode) {
    if (s.experts < 1) throw input_error("", "experts", "layer_mode needs at least one expert");
    switch (variant) {
      case moe_variant::moe:
      case moe_variant::integrated:
        return layer_costs(x, {false, true});
      case moe_variant::staged:
        return layer_costs(x, {true, true});
      case moe_variant::none:
        throw input_error("", "variant", "layer_mode needs an MoE variant (moe, staged or integrated)");
    }
  }
  throw input_error(
      "", "op",
      "unknown block '" + std::string(to_string(block)) + "' (expected block_dense, block_mod or layer_mode)");
}

op_cost sum_costs(const std::vector<op_cost>& list, modsim::op as) {
  checked m, o, b;
  for (const op_cost& c : list) add_to(m, o, b, c);
  return op_cost{as, m.v, o.v, b.v};
}

op_cost train_block_cost(modsim::op train, const op_shape& s, double capacity, modsim::recompute r) {
  if (train != modsim::op::block_dense_train && train != modsim::op::block_mod_train)
    throw input_error("", "op",
                      "'" + std::string(to_string(train)) +
                          "' is not a training block (expected block_dense_train or block_mod_train)");
  const modsim::op forward = train == modsim::op::block_mod_train ? modsim::op::block_mod : modsim::op::block_dense;
  const std::vector<op_cost> ops = block_costs(forward, s, capacity);
  const op_cost once = sum_costs(ops, train);
  checked m, o, b;
  add_to(m, o, b, times(once, 3));
  if (r == modsim::recompute::full) add_to(m, o, b, once);
  if (r == modsim::recompute::selective)
    for (const op_cost& c : ops)
      if (c.op == modsim::op::attn_scores || c.op == modsim::op::attn_softmax) add_to(m, o, b, c);
  return op_cost{train, m.v, o.v, b.v};
}

flops_report evaluate_flops(const model_spec& model, const workload& w, attention_impl attention) {
  flops_report r = evaluate(model, w, attention);
  r.params = parameter_count(model);
  // A model that routes nothing evaluates as its dense baseline (routing is all it drops).
  const flops_totals dense = model.routing ? evaluate(dense_baseline(model), w, attention).totals : r.totals;
  r.totals.dense_matmul_flops = dense.matmul_flops;
  r.totals.dense_other_flops = dense.other_flops;
  r.totals.dense_bytes = dense.bytes;
  return r;
}

flops_report evaluate_flops(const model_spec& model, const workload& w, const flops_report& dense,
                            attention_impl attention) {
  flops_report r = evaluate(model, w, attention);
  r.params = parameter_count(model);
  r.totals.dense_matmul_flops = dense.totals.matmul_flops;
  r.totals.dense_other_flops = dense.totals.other_flops;
  r.totals.dense_bytes = dense.totals.bytes;
  return r;
}

}  // namespace modsim::sim
