// Sweep grids (profiler/grid.hpp): the Cartesian product of the axes, the points skipped with
// their reasons, and the timing and attention forms of an expansion.
#include "profiler/grid.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/des/decode.hpp"

namespace modsim::profiler {
namespace {

bool depends_on_capacity(kernels::op o) {
  using kernels::op;
  return !(o == op::block_dense || o == op::block_dense_train || o == op::router || o == op::decode_dense ||
           o == op::decode_step || o == op::adamw);
}

bool is_moe_op(kernels::op o) {
  using kernels::op;
  return o == op::layer_mode || o == op::expert_router || o == op::experts;
}

// Why `p` cannot be measured, or "" when it can.
std::string invalid_reason(const point& p) {
  const kernels::block_shape& s = p.shape;
  if (s.d_model % s.n_heads != 0)
    return "d_model " + std::to_string(s.d_model) + " is not divisible by n_heads " + std::to_string(s.n_heads);
  if (s.n_heads % s.n_kv_heads != 0)
    return "n_heads " + std::to_string(s.n_heads) + " is not a multiple of n_kv_heads " + std::to_string(s.n_kv_heads);
  if (p.op == kernels::op::mlp_gate && s.mlp != kernels::mlp_kind::swiglu) return "mlp_gate exists only for swiglu";
  if (is_moe_op(p.op) && s.experts < 1) return "needs experts (the grid's \"experts\" axis)";
  if (s.variant == kernels::moe_variant::integrated && s.noop_experts < 1)
    return "the integrated variant needs at least one no-op expert";
  try {
    s.validate();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

// A block shape from the grid's axes (kv = 0: MHA; d_head = d / heads).
// The layer shapes the grid crosses with its other axes, for one value of its mlp axis: its
// "shapes" list (whose entries carry their own mlp; taken once, for the first mlp value only),
// or the product of d_model, n_heads, n_kv_heads and d_ff in that nesting order.
std::vector<grid::layer_dims> dims_of(const grid& g, kernels::mlp_kind mlp) {
  if (!g.shapes.empty()) return mlp == g.mlp.front() ? g.shapes : std::vector<grid::layer_dims>{};
  std::vector<grid::layer_dims> out;
  const std::vector<std::int64_t> no_kv = {0};
  for (auto d : g.d_model)
    for (auto h : g.n_heads)
      for (auto kv : g.n_kv_heads.empty() ? no_kv : g.n_kv_heads)
        for (auto f : g.d_ff) out.push_back({d, h, kv, f, mlp, {}});
  return out;
}

kernels::block_shape shape_of(std::int64_t batch, std::int64_t seq, std::int64_t d, std::int64_t heads, std::int64_t kv,
                              std::int64_t d_ff, kernels::mlp_kind mlp) {
  kernels::block_shape sh;
  sh.batch = batch;
  sh.seq_len = seq;
  sh.d_model = d;
  sh.n_heads = heads;
  sh.n_kv_heads = kv > 0 ? kv : heads;
  sh.d_head = heads > 0 ? d / heads : 0;
  sh.d_ff = d_ff;
  sh.mlp = mlp;
  return sh;
}

// Why decode point `p` cannot be measured, or "".
std::string decode_invalid_reason(const point& p) {
  if (p.op == kernels::op::decode_dense && p.decode_routing == decode_run::pad)
    return "decode_dense has no routed layer: pad is the same step as sync";
  if (p.op == kernels::op::decode_step) {
    if (!p.model) return "decode_step needs a model (the grid's \"model\" or --model)";
    if (p.model_name.empty()) return "decode_step needs its model's name";
    if (p.model->moe) return "model " + p.model->name + ": MoE / MoDE layers have no decode kernel";
    if (p.model->routing && p.model->routing->inference != sim::inference_routing::predictor)
      return "model " + p.model->name + ": decode kernels route with the causal predictor (routing.inference)";
    if (!p.model->routing && p.decode_routing == decode_run::pad)
      return "model " + p.model->name + " has no routed layer: pad is the same step as sync";
  }
  if (p.shape.seq_len < 1) return "seq_len (the cached context) must be >= 1";
  return invalid_reason(p);
}

// The capacity of a model's first routed layer (1 when none).
double model_capacity(const sim::model_spec& m) {
  if (!m.routing) return 1.0;
  for (const sim::layer_plan& l : sim::plan_layers(m))
    if (l.routed) return l.capacity;
  return m.routing->capacity;
}

void expand_decode(const grid& g, expansion& out) {
  using kernels::op;
  auto add = [&](point p) {
    if (g.max_cached_tokens > 0 && p.shape.batch * p.shape.seq_len > g.max_cached_tokens) {
      out.skipped.push_back({std::move(p), "a cache of more than " + std::to_string(g.max_cached_tokens) +
                                               " tokens per layer (batch x seq_len): over the preset's bound"});
      return;
    }
    if (p.decode_routing != decode_run::sync && p.pad_capacity <= 0)
      p.pad_capacity = sim::des::default_pad_capacity(p.shape.capacity, p.shape.batch);
    if (p.decode_routing == decode_run::sync) p.pad_capacity = 0;
    std::string why = decode_invalid_reason(p);
    if (why.empty())
      out.points.push_back(std::move(p));
    else
      out.skipped.push_back({std::move(p), why});
  };
  for (kernels::dtype t : g.dtypes)
    for (op o : g.ops) {
      if (!kernels::is_decode(o)) continue;
      if (o == op::decode_step) {
        if (g.models.empty()) {
          point p;
          p.op = o;
          p.type = t;
          out.skipped.push_back({p, "decode_step needs a model (the grid's \"model\" or --model)"});
          continue;
        }
        for (std::size_t mi = 0; mi < g.models.size(); ++mi)
          for (auto b : g.batch)
            for (auto ctx : g.seq_len)
              for (const decode_run r : g.decode_routing)
                for (double pc : g.pad_capacity) {
                  const auto& m = g.models[mi];
                  point p;
                  p.op = o;
                  p.type = t;
                  p.model = m;
                  p.model_name = mi < g.model_names.size() ? g.model_names[mi] : m->name;
                  p.decode_routing = r;
                  p.pad_capacity = pc;
                  kernels::block_shape& sh = p.shape;
                  sh.batch = b;
                  sh.seq_len = ctx;
                  sh.d_model = m->d_model;
                  sh.n_heads = m->n_heads;
                  sh.n_kv_heads = m->n_kv_heads > 0 ? m->n_kv_heads : m->n_heads;
                  sh.d_head = m->d_head > 0 ? m->d_head : (m->n_heads > 0 ? m->d_model / m->n_heads : 0);
                  sh.d_ff = m->d_ff;
                  sh.mlp = m->mlp;
                  sh.capacity = model_capacity(*m);
                  p.predictor_hidden =
                      m->routing ? (m->routing->predictor_hidden > 0 ? m->routing->predictor_hidden : m->d_model) : 0;
                  add(std::move(p));
                }
        continue;
      }
      for (auto mlp_axis : g.mlp)
        for (auto b : g.batch)
          for (auto ctx : g.seq_len)
            for (const grid::layer_dims& dims : dims_of(g, mlp_axis)) {
              const auto d = dims.d_model, h = dims.n_heads, kv = dims.n_kv_heads, f = dims.d_ff;
              const auto mlp = dims.mlp;
              for (std::size_t ci = 0; ci < g.capacity.size(); ++ci)
                for (const decode_run r : g.decode_routing)
                  for (std::size_t pi = 0; pi < g.pad_capacity.size(); ++pi)
                    for (std::size_t hi = 0; hi < g.predictor_hidden.size(); ++hi) {
                      // decode_dense: once per shape (no capacity, padding or predictor).
                      if (o == op::decode_dense && (ci | pi | hi) != 0) continue;
                      const std::int64_t ph = g.predictor_hidden[hi];
                      point p;
                      p.op = o;
                      p.type = t;
                      p.decode_routing = r;
                      p.pad_capacity = o == op::decode_mod ? g.pad_capacity[pi] : 0;
                      p.shape = shape_of(b, ctx, d, h, kv, f, mlp);
                      p.shape.capacity = o == op::decode_mod ? g.capacity[ci] : 1.0;
                      p.predictor_hidden = o == op::decode_mod ? (ph > 0 ? ph : std::min<std::int64_t>(256, d)) : 0;
                      add(std::move(p));
                    }
            }
    }
}

}  // namespace

std::int64_t decode_routed_count(const point& p) {
  const double m = std::round(p.shape.capacity * static_cast<double>(p.shape.batch));
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(m), 0, p.shape.batch);
}

expansion expand(const grid& g) {
  expansion out;
  bool any_moe = false;
  for (kernels::op o : g.ops) any_moe |= is_moe_op(o);
  // Shapes outside, ops inside: consecutive points share a workspace.
  for (kernels::dtype t : g.dtypes)
    for (auto mlp_axis : g.mlp)
      for (auto b : g.batch)
        for (auto s : g.seq_len)
          for (const grid::layer_dims& dims : dims_of(g, mlp_axis)) {
            const auto d = dims.d_model, h = dims.n_heads, kv = dims.n_kv_heads, f = dims.d_ff;
            const auto mlp = dims.mlp;
            for (std::size_t ci = 0; ci < g.capacity.size(); ++ci)
              for (std::size_t vi = 0; vi < (any_moe ? g.variants.size() : 1); ++vi)
                for (std::size_t ei = 0; ei < (any_moe ? g.experts.size() : 1); ++ei)
                  for (std::size_t ni = 0; ni < (any_moe ? g.noop_experts.size() : 1); ++ni)
                    for (std::size_t fi = 0; fi < (any_moe ? g.capacity_factor.size() : 1); ++fi)
                      for (kernels::op o : g.ops)
                        for (std::size_t ri = 0; ri < g.recompute.size(); ++ri) {
                          if (kernels::is_decode(o)) continue;  // below
                          const bool moe = is_moe_op(o);
                          // Each op once per distinct shape it depends on.
                          if (!depends_on_capacity(o) && ci > 0) continue;
                          if (!moe && (vi | ei | ni | fi) != 0) continue;
                          if (!kernels::is_train(o) && ri > 0) continue;  // recompute: training ops only
                          // The optimizer step: once per layer shape (the grid's first batch and sequence).
                          if (kernels::is_optimizer(o) && (b != g.batch.front() || s != g.seq_len.front())) continue;
                          const auto variant = moe ? g.variants[vi] : kernels::moe_variant::none;
                          if (moe && variant != kernels::moe_variant::integrated && ni > 0) continue;
                          point p;
                          p.op = o;
                          p.type = t;
                          if (kernels::is_train(o)) p.recompute = g.recompute[ri];
                          p.shape = shape_of(b, s, d, h, kv, f, mlp);
                          kernels::block_shape& sh = p.shape;
                          sh.capacity = depends_on_capacity(o) ? g.capacity[ci] : 1.0;
                          if (moe) {
                            sh.variant = variant;
                            sh.experts = g.experts[ei];
                            sh.noop_experts = variant == kernels::moe_variant::integrated ? g.noop_experts[ni] : 0;
                            sh.capacity_factor = g.capacity_factor[fi];
                            sh.top_k = 1;
                          }
                          std::string why = invalid_reason(p);
                          if (why.empty())
                            out.points.push_back(p);
                          else
                            out.skipped.push_back({p, why});
                        }
          }
  expand_decode(g, out);
  return out;
}

expansion with_attention(expansion e, attention_impl a) {
  if (a == attention_impl::unfused) return e;
  expansion out;
  out.skipped = std::move(e.skipped);
  for (point& p : e.points) {
    p.attention = a;
    const bool unfused_only =
        p.op == kernels::op::attn_scores || p.op == kernels::op::attn_softmax || p.op == kernels::op::attn_values;
    if (unfused_only)
      out.skipped.push_back({std::move(p),
                             "fused attention runs scores, softmax and values as one kernel; it is timed inside "
                             "the blocks (block_dense, block_mod, layer_mode)"});
    else
      out.points.push_back(std::move(p));
  }
  return out;
}

expansion with_timing(expansion e, timing_mode t) {
  if (t == timing_mode::isolated) return e;
  expansion out;
  out.skipped = std::move(e.skipped);
  for (point& p : e.points) {
    p.timing = t;
    if (kernels::is_block(p.op)) {
      p.block = p.op;
      out.points.push_back(std::move(p));
    } else {
      out.skipped.push_back(
          {std::move(p), "in_block times ops through their block; list block_dense, block_mod or layer_mode"});
    }
  }
  return out;
}

}  // namespace modsim::profiler
