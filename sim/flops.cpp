#include "sim/flops.hpp"

#include <array>
#include <cmath>
#include <algorithm>
#include <utility>

#include "core/error.hpp"

namespace modsim::sim {
namespace {

[[noreturn]] void throw_overflow() {
  throw input_error("", "workload", "a FLOP, byte or parameter count does not fit in 64 bits");
}

// An int64 whose arithmetic throws on overflow: the exact path of every formula.
struct checked {
  std::int64_t v = 0;
  checked(std::int64_t x = 0) : v(x) {}  // NOLINT(google-explicit-constructor): mixes with literals
};
checked operator+(checked a, checked b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a.v, b.v, &r)) throw_overflow();
  return r;
}
checked operator-(checked a, checked b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a.v, b.v, &r)) throw_overflow();
  return r;
}
checked operator*(checked a, checked b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a.v, b.v, &r)) throw_overflow();
  return r;
}

// The arithmetic type of a shape's number type: checked for exact counts, double for
// expectations.
template <class N>
struct calc;
template <>
struct calc<std::int64_t> {
  using type = checked;
};
template <>
struct calc<double> {
  using type = double;
};

std::int64_t to_int64(checked x) { return x.v; }
std::int64_t to_int64(double x) {
  // 2^63 as a double; llround of anything at or above it is undefined.
  if (!std::isfinite(x) || std::fabs(x) >= 9223372036854775808.0) throw_overflow();
  return std::llround(x);
}

// ceil(x) robust to the rounding of x (1.1 * 10 / 11 is 1 slot, not 2), as routed_tokens.
std::int64_t robust_ceil(long double x) {
  const long double r = std::round(x);
  if (std::fabs(x - r) <= 1e-9L * std::max(1.0L, std::fabs(x))) return static_cast<std::int64_t>(r);
  return static_cast<std::int64_t>(std::ceil(x));
}

// The shape's numbers in the arithmetic type C, with defaults resolved.
template <class C>
struct dims {
  C B, n, S, L, w;           // batch, tokens, seq_len, context, weight_reads
  C d, H, dq, dkv, F, V, e;  // model dimensions, bytes per element
  C E, NE, K, h;             // experts, no-op experts, top_k, predictor hidden
  double cf = 0;
  bool swiglu = false;
  C T() const { return B * n; }
};

template <class N>
dims<typename calc<N>::type> dims_of(const basic_op_shape<N>& s) {
  using C = typename calc<N>::type;
  const std::int64_t heads = s.n_heads;
  const std::int64_t kv_heads = s.n_kv_heads > 0 ? s.n_kv_heads : s.n_heads;
  const std::int64_t dh = s.d_head > 0 ? s.d_head : (s.n_heads > 0 ? s.d_model / s.n_heads : 0);
  dims<C> x;
  x.B = C(s.batch);
  x.n = C(s.tokens);
  x.S = C(s.seq_len);
  x.L = s.context != N(0) ? C(s.context) : C(s.tokens);
  x.w = C(s.weight_reads);
  x.d = C(std::int64_t{s.d_model});
  x.H = C(heads);
  x.dq = C(heads) * C(dh);
  x.dkv = C(kv_heads) * C(dh);
  x.F = C(std::int64_t{s.d_ff});
  x.V = C(std::int64_t{s.vocab_size});
  x.e = C(std::int64_t{s.elem_bytes});
  x.E = C(std::int64_t{s.experts});
  x.NE = C(std::int64_t{s.noop_experts});
  x.K = C(std::int64_t{s.top_k});
  x.h = C(std::int64_t{s.predictor_hidden > 0 ? s.predictor_hidden : s.d_model});
  x.cf = s.capacity_factor;
  x.swiglu = s.mlp == mlp_kind::swiglu;
  return x;
}

template <class C>
struct cost {
  C matmul = C(0);
  C other = C(0);
  C bytes = C(0);
};

// ---- the formulas: one per op (flops.hpp has the table) -------------------------------

template <class C>
cost<C> f_router(const dims<C>& x) {
  const C BS = x.B * x.S;
  return {C(2) * BS * x.d, C(0), x.e * (BS * x.d + x.w * x.d + BS)};
}
template <class C>
cost<C> f_topk(const dims<C>& x) {
  const C BS = x.B * x.S;
  return {C(0), BS, x.e * BS + C(4) * x.T()};
}
template <class C>
cost<C> f_gather(const dims<C>& x) {
  const C Bk = x.T();
  return {C(0), C(0), C(4) * Bk + C(2) * x.e * Bk * (x.d + C(1))};
}
template <class C>
cost<C> f_predictor(const dims<C>& x) {
  const C BS = x.B * x.S;
  return {C(2) * BS * (x.d * x.h + x.h), BS * (x.h + C(2)), x.e * (BS * x.d + x.w * (x.d * x.h + C(2) * x.h) + BS)};
}
template <class C>
cost<C> f_norm(const dims<C>& x) {
  const C T = x.T();
  return {C(0), C(4) * T * x.d, x.e * (C(2) * T * x.d + x.w * x.d)};
}
template <class C>
cost<C> f_qkv_proj(const dims<C>& x) {
  const C T = x.T();
  const C P = x.dq + C(2) * x.dkv;
  return {C(2) * T * x.d * P, C(0), x.e * (T * x.d + x.w * x.d * P + T * P)};
}
template <class C>
cost<C> f_attn_scores(const dims<C>& x) {
  const C BnL = x.B * x.n * x.L;
  return {C(2) * BnL * x.dq, C(0), x.e * (x.T() * x.dq + x.B * x.L * x.dkv + x.H * BnL)};
}
template <class C>
cost<C> f_attn_softmax(const dims<C>& x) {
  const C HBnL = x.H * x.B * x.n * x.L;
  return {C(0), C(5) * HBnL, C(2) * x.e * HBnL};
}
template <class C>
cost<C> f_attn_values(const dims<C>& x) {
  const C BnL = x.B * x.n * x.L;
  return {C(2) * BnL * x.dq, C(0), x.e * (x.H * BnL + x.B * x.L * x.dkv + x.T() * x.dq)};
}
template <class C>
cost<C> f_out_proj(const dims<C>& x) {
  const C T = x.T();
  return {C(2) * T * x.dq * x.d, T * x.d, x.e * (T * x.dq + x.w * x.dq * x.d + C(2) * T * x.d)};
}
template <class C>
cost<C> f_mlp_up(const dims<C>& x) {
  const C T = x.T();
  return {C(2) * T * x.d * x.F, C(0), x.e * (T * x.d + x.w * x.d * x.F + T * x.F)};
}
template <class C>
cost<C> f_mlp_act(const dims<C>& x) {
  const C TF = x.T() * x.F;
  if (x.swiglu) return {C(0), C(5) * TF, C(3) * x.e * TF};
  return {C(0), C(8) * TF, C(2) * x.e * TF};
}
template <class C>
cost<C> f_mlp_down(const dims<C>& x) {
  const C T = x.T();
  return {C(2) * T * x.F * x.d, T * x.d, x.e * (T * x.F + x.w * x.F * x.d + C(2) * T * x.d)};
}
template <class C>
cost<C> f_scatter(const dims<C>& x) {
  const C Bk = x.T();
  return {C(0), C(3) * Bk * x.d, C(4) * Bk + x.e * (C(3) * Bk * x.d + Bk)};
}
template <class C>
cost<C> f_expert_router(const dims<C>& x) {
  const C T = x.T();
  const C EN = x.E + x.NE;
  return {C(2) * T * x.d * EN, C(5) * T * EN, x.e * (T * x.d + x.w * x.d * EN + T * EN)};
}

checked slots(const dims<checked>& x) {
  const checked EN = x.E + x.NE;
  if (EN.v <= 0 || x.E.v <= 0) return 0;
  if (x.cf > 0) {
    const long double per_expert = static_cast<long double>(x.cf) * static_cast<long double>(x.T().v) *
                                   static_cast<long double>(x.K.v) / static_cast<long double>(EN.v);
    if (per_expert >= 9.2e18L) throw_overflow();
    return x.E * robust_ceil(per_expert);
  }
  const checked num = x.T() * x.K * x.E;
  return (num + EN - 1).v / EN.v;
}
double slots(const dims<double>& x) {
  const double EN = x.E + x.NE;
  if (EN <= 0 || x.E <= 0) return 0;
  // Expectations: the expected slot count, not rounded up.
  if (x.cf > 0) return x.E * (x.cf * x.T() * x.K / EN);
  return x.T() * x.K * x.E / EN;
}

template <class C>
cost<C> f_experts(const dims<C>& x) {
  const C M = slots(x);
  const C T = x.T();
  const C mm = x.swiglu ? C(6) : C(4);
  const C act = x.swiglu ? C(5) * x.F : C(8) * x.F;
  const C mats = x.swiglu ? C(3) : C(2);
  return {M * mm * x.d * x.F, M * act + C(2) * M * x.d + T * x.d,
          x.e * (x.w * x.E * mats * x.d * x.F + C(2) * M * x.d + C(2) * T * x.d)};
}
template <class C>
cost<C> f_lm_head(const dims<C>& x) {
  const C BS = x.B * x.S;
  return {C(2) * BS * x.d * x.V, C(4) * BS * x.d, x.e * (BS * x.d + x.w * x.d * x.V + BS * x.V)};
}

template <class C>
op_cost finish(modsim::op o, const cost<C>& c) {
  return op_cost{o, to_int64(c.matmul), to_int64(c.other), to_int64(c.bytes)};
}

template <class Shape>
op_cost formula_of(modsim::op o, const Shape& s);

// The costs of `ids` at shape `s`, in order.
template <class Shape>
void append_ops(std::vector<op_cost>& out, const Shape& s, const std::vector<modsim::op>& ids) {
  for (const modsim::op id : ids) out.push_back(formula_of(id, s));
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

struct evaluation {
  std::vector<layer_flops> layers;
  op_cost lm_head;
  std::int64_t matmul = 0, other = 0, bytes = 0;
};

evaluation evaluate(const model_spec& model, const workload& w) {
  evaluation ev;
  const op_shape base = shape_of(model, w);
  const bool has_moe = model.mode.has_value();
  const mode_variant variant = has_moe ? model.mode->variant : mode_variant::staged;
  const bool decode = w.mode == run_mode::decode;
  const std::int64_t repeat = w.mode == run_mode::train ? 3 : 1;

  for (const layer_plan& plan : plan_layers(model)) {
    // `moe` ignores the schedule; `integrated` routes through no-op experts, not MoD.
    const bool routed = plan.routed && !(has_moe && variant == mode_variant::moe);
    const bool mod_routing = routed && !(has_moe && variant == mode_variant::integrated);
    layer_flops lf;
    lf.index = plan.index;
    lf.routed = routed;
    lf.capacity = routed ? plan.capacity : 1.0;

    op_shape s = base;
    if (routed && has_moe && variant == mode_variant::integrated) s.noop_experts = model.mode->noop_experts;
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
      append_ops(lf.ops, x, after_routing(layer_ops({true, has_moe}, s.mlp)));
      lf.expected_tokens = x.batch;
      lf.tokens = std::llround(x.batch);
      lf.expected = x;
      lf.has_expected = true;
    }
    lf.shape = s;

    checked m, o, b;
    for (op_cost& c : lf.ops) {
      if (repeat != 1) c = times(c, repeat);
      add_to(m, o, b, c);
    }
    lf.matmul_flops = m.v;
    lf.other_flops = o.v;
    lf.bytes = b.v;
    ev.layers.push_back(std::move(lf));
  }

  op_shape head = base;
  if (decode) head.seq_len = 1;
  ev.lm_head = times(ops::lm_head(head), repeat);

  checked m, o, b;
  for (const layer_flops& lf : ev.layers) {
    m = m + lf.matmul_flops;
    o = o + lf.other_flops;
    b = b + lf.bytes;
  }
  add_to(m, o, b, ev.lm_head);
  ev.matmul = m.v;
  ev.other = o.v;
  ev.bytes = b.v;
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
  s.elem_bytes = dtype_bytes(w.type);
  if (model.mode) {
    s.experts = model.mode->experts;
    s.top_k = model.mode->top_k;
    s.capacity_factor = model.mode->capacity_factor;
  }
  if (model.routing) s.predictor_hidden = model.routing->predictor_hidden;
  return s;
}

namespace ops {
#define MODSIM_FLOPS_DEFINE_OP(name, formula)                                               \
  op_cost name(const op_shape& s) { return finish(modsim::op::name, formula(dims_of(s))); } \
  op_cost name(const expected_op_shape& s) { return finish(modsim::op::name, formula(dims_of(s))); }
MODSIM_FLOPS_DEFINE_OP(router, f_router)
MODSIM_FLOPS_DEFINE_OP(topk, f_topk)
MODSIM_FLOPS_DEFINE_OP(gather, f_gather)
MODSIM_FLOPS_DEFINE_OP(predictor, f_predictor)
MODSIM_FLOPS_DEFINE_OP(attn_norm, f_norm)
MODSIM_FLOPS_DEFINE_OP(qkv_proj, f_qkv_proj)
MODSIM_FLOPS_DEFINE_OP(attn_scores, f_attn_scores)
MODSIM_FLOPS_DEFINE_OP(attn_softmax, f_attn_softmax)
MODSIM_FLOPS_DEFINE_OP(attn_values, f_attn_values)
MODSIM_FLOPS_DEFINE_OP(out_proj, f_out_proj)
MODSIM_FLOPS_DEFINE_OP(mlp_norm, f_norm)
MODSIM_FLOPS_DEFINE_OP(mlp_up, f_mlp_up)
MODSIM_FLOPS_DEFINE_OP(mlp_gate, f_mlp_up)
MODSIM_FLOPS_DEFINE_OP(mlp_act, f_mlp_act)
MODSIM_FLOPS_DEFINE_OP(mlp_down, f_mlp_down)
MODSIM_FLOPS_DEFINE_OP(scatter, f_scatter)
MODSIM_FLOPS_DEFINE_OP(expert_router, f_expert_router)
MODSIM_FLOPS_DEFINE_OP(experts, f_experts)
MODSIM_FLOPS_DEFINE_OP(lm_head, f_lm_head)
#undef MODSIM_FLOPS_DEFINE_OP

std::int64_t expert_slots(const op_shape& s) { return slots(dims_of(s)).v; }
double expert_slots(const expected_op_shape& s) { return slots(dims_of(s)); }
}  // namespace ops

namespace {
// The `flops` column of the op table (core/op_table.hpp): the formula of each op. The switch
// names every enumerator, so a new op without a formula does not compile (-Wswitch).
template <class Shape>
op_cost formula_of(modsim::op o, const Shape& s) {
  using enum modsim::op;
  switch (o) {
    case router:
      return ops::router(s);
    case topk:
      return ops::topk(s);
    case gather:
      return ops::gather(s);
    case predictor:
      return ops::predictor(s);
    case attn_norm:
      return ops::attn_norm(s);
    case qkv_proj:
      return ops::qkv_proj(s);
    case attn_scores:
      return ops::attn_scores(s);
    case attn_softmax:
      return ops::attn_softmax(s);
    case attn_values:
      return ops::attn_values(s);
    case out_proj:
      return ops::out_proj(s);
    case mlp_norm:
      return ops::mlp_norm(s);
    case mlp_up:
      return ops::mlp_up(s);
    case mlp_gate:
      return ops::mlp_gate(s);
    case mlp_act:
      return ops::mlp_act(s);
    case mlp_down:
      return ops::mlp_down(s);
    case scatter:
      return ops::scatter(s);
    case expert_router:
      return ops::expert_router(s);
    case experts:
      return ops::experts(s);
    case lm_head:
      return ops::lm_head(s);
    case block_dense:
    case block_mod:
    case layer_mode:
      break;
    case decode_dense:
    case decode_mod:
    case decode_step:
      throw input_error("", "op",
                        "'" + std::string(to_string(o)) + "' is a decode step (sim/des/step.hpp lists its kernels)");
  }
  throw input_error("", "op", "'" + std::string(to_string(o)) + "' is a whole block (block_costs lists its ops)");
}
}  // namespace

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

const std::vector<std::string_view>& op_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> v;
    for (modsim::op o : model_ops()) v.push_back(to_string(o));
    return v;
  }();
  return names;
}

const char* op_class_of(modsim::op o) {
  return info(o).op_class.data();  // the table's literals are NUL-terminated
}

modsim::op op_of_kernel(std::string_view kernel_op) {
  const auto o = find_op(kernel_op);
  if (!o) throw input_error("", "op", "unknown op '" + std::string(kernel_op) + "'");
  return *o;
}

const char* op_class_of(std::string_view kernel_op) { return op_class_of(op_of_kernel(kernel_op)); }
op_cost cost_of(modsim::op o, const op_shape& s) { return formula_of(o, s); }
op_cost cost_of(modsim::op o, const expected_op_shape& s) { return formula_of(o, s); }

std::vector<modsim::op> layer_ops(layer_kind kind, mlp_kind mlp) {
  using enum modsim::op;
  std::vector<modsim::op> out;
  out.reserve(16);
  auto add = [&out](std::initializer_list<modsim::op> ops) {
    for (const modsim::op o : ops) out.push_back(o);
  };
  if (kind.mod_routing) add({router, topk, gather});
  add({attn_norm, qkv_proj, attn_scores, attn_softmax, attn_values, out_proj, mlp_norm});
  if (kind.moe) {
    add({expert_router, experts});
  } else {
    add({mlp_up});
    if (mlp == mlp_kind::swiglu) add({mlp_gate});
    add({mlp_act, mlp_down});
  }
  if (kind.mod_routing) add({scatter});
  return out;
}

std::vector<op_cost> layer_costs(const op_shape& s, layer_kind kind) {
  std::vector<op_cost> out;
  append_ops(out, s, layer_ops(kind, s.mlp));
  return out;
}

op_shape block_op_shape(modsim::op block, const op_shape& s, double capacity, mode_variant variant) {
  op_shape x = s;
  x.context = 0;
  x.tokens = s.seq_len;
  if (block == modsim::op::block_mod) {
    x.tokens = routed_tokens(capacity, s.seq_len);
  } else if (block == modsim::op::layer_mode) {
    if (variant != mode_variant::integrated) x.noop_experts = 0;
    if (variant == mode_variant::staged) x.tokens = routed_tokens(capacity, s.seq_len);
  }
  return x;
}

std::vector<op_cost> block_costs(modsim::op block, const op_shape& s, double capacity, mode_variant variant) {
  const op_shape x = block_op_shape(block, s, capacity, variant);
  if (block == modsim::op::block_dense) return layer_costs(x, {false, false});
  if (block == modsim::op::block_mod) return layer_costs(x, {true, false});
  if (block == modsim::op::layer_mode) {
    if (s.experts < 1) throw input_error("", "experts", "layer_mode needs at least one expert");
    switch (variant) {
      case mode_variant::moe:
      case mode_variant::integrated:
        return layer_costs(x, {false, true});
      case mode_variant::staged:
        return layer_costs(x, {true, true});
      case mode_variant::none:
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

std::vector<std::int64_t> layer_parameter_counts(const model_spec& model) {
  const checked d = model.d_model;
  const checked dq = model.d_q();
  const checked dkv = model.d_kv();
  const checked F = model.d_ff;
  const checked mats = model.mlp == mlp_kind::swiglu ? 3 : 2;
  const bool has_moe = model.mode.has_value();
  const mode_variant variant = has_moe ? model.mode->variant : mode_variant::staged;

  std::vector<std::int64_t> out;
  for (const layer_plan& plan : plan_layers(model)) {
    const bool routed = plan.routed && !(has_moe && variant == mode_variant::moe);
    const bool mod_routing = routed && !(has_moe && variant == mode_variant::integrated);
    checked total = d * (dq + 2 * dkv) + dq * d + 2 * d;
    if (has_moe) {
      const checked E = model.mode->experts;
      const checked noop = routed && variant == mode_variant::integrated ? model.mode->noop_experts : 0;
      total = total + d * (E + noop) + E * mats * d * F;
    } else {
      total = total + mats * d * F;
    }
    if (mod_routing) {
      total = total + d;  // router
      if (model.routing && model.routing->inference == inference_routing::predictor) {
        const checked h = model.routing->predictor_hidden > 0 ? model.routing->predictor_hidden : model.d_model;
        total = total + d * h + h;
      }
    }
    out.push_back(total.v);
  }
  return out;
}

std::int64_t outside_layer_parameter_count(const model_spec& model) {
  const checked d = model.d_model;
  const checked V = model.vocab_size;
  return (V * d + V * d + d).v;  // embedding, lm head, final norm
}

std::int64_t parameter_count(const model_spec& model) {
  checked total = outside_layer_parameter_count(model);
  for (const std::int64_t l : layer_parameter_counts(model)) total = total + checked(l);
  return total.v;
}

flops_report evaluate_flops(const model_spec& model, const workload& w) {
  evaluation ev = evaluate(model, w);
  const evaluation dense = evaluate(dense_baseline(model), w);
  flops_report r;
  r.model_name = model.name;
  r.load = w;
  r.layers = std::move(ev.layers);
  r.lm_head = std::move(ev.lm_head);
  r.totals.matmul_flops = ev.matmul;
  r.totals.other_flops = ev.other;
  r.totals.bytes = ev.bytes;
  r.totals.dense_matmul_flops = dense.matmul;
  r.totals.dense_other_flops = dense.other;
  r.totals.dense_bytes = dense.bytes;
  r.params = parameter_count(model);
  return r;
}

}  // namespace modsim::sim
