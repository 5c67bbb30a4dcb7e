// The FLOP/byte formula of each op (sim/model/flops.hpp's table): one function per op in exact
// (checked int64) and expected (double) arithmetic, the dispatch over the op table, and the
// op-name helpers; then a training step's (the train table): each op's backward (exact
// arithmetic only: a training step has no expected shapes), what recomputation runs again, and
// the AdamW step.
#include <string>

#include "core/error.hpp"
#include "sim/model/flops.hpp"
#include "sim/model/flops_arith.hpp"

namespace modsim::sim {
namespace {

using namespace detail;

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
// One AdamW step over a dense layer's parameters (the optimizer step's formula, adamw_cost).
template <class C>
cost<C> f_adamw(const dims<C>& x) {
  const C mats = x.swiglu ? C(3) : C(2);
  const C params = x.d * (x.dq + C(2) * x.dkv) + x.dq * x.d + C(2) * x.d + mats * x.d * x.F;
  const C per_param = C(adamw_bytes_per_param(static_cast<int>(to_int64(x.e))));
  return {C(0), C(k_adamw_flops_per_param) * params, per_param * params};
}

}  // namespace

namespace ops {
using namespace detail;

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
MODSIM_FLOPS_DEFINE_OP(adamw, f_adamw)
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
    case block_dense_train:
    case block_mod_train:
      throw input_error("", "op",
                        "'" + std::string(to_string(o)) + "' is a training block (train_block_cost prices it)");
    case adamw:
      return ops::adamw(s);
  }
  throw input_error("", "op", "'" + std::string(to_string(o)) + "' is a whole block (block_costs lists its ops)");
}
}  // namespace

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

op_cost cost_of(modsim::op o, const op_shape& s) { return formula_of(o, s); }
op_cost cost_of(modsim::op o, const expected_op_shape& s) { return formula_of(o, s); }

// ---- training: backward, recomputation, optimizer (flops.hpp's train table) ----------

namespace {

using C = detail::checked;
using detail::cost;
using detail::dims;
using detail::dims_of;
using detail::finish;

cost<C> b_router(const dims<C>& x) {
  const C BS = x.B * x.S;
  return {C(4) * BS * x.d, C(0), x.e * (C(3) * BS * x.d + C(2) * BS + C(2) * x.w * x.d)};
}
cost<C> b_gather(const dims<C>& x) {
  const C Bk = x.T();
  return {C(0), Bk * x.d, C(4) * Bk + x.e * (C(3) * Bk * x.d + Bk + x.B * x.S)};
}
cost<C> b_norm(const dims<C>& x) {
  const C T = x.T();
  return {C(0), C(8) * T * x.d, x.e * (C(4) * T * x.d + C(2) * x.w * x.d)};
}
// A GEMM's dgrad and wgrad: (rows × in)·(in × out) forward, weights in × out.
cost<C> b_gemm(const dims<C>& x, C in, C out) {
  const C T = x.T();
  return {C(4) * T * in * out, C(0), C(2) * x.e * (T * in + x.w * in * out + T * out)};
}
cost<C> b_attn_matmuls(const dims<C>& x) {
  const C BnL = x.B * x.n * x.L;
  return {C(4) * BnL * x.dq, C(0), x.e * (C(2) * x.H * BnL + C(2) * x.B * x.L * x.dkv + C(2) * x.T() * x.dq)};
}
cost<C> b_attn_softmax(const dims<C>& x) {
  const C HBnL = x.H * x.B * x.n * x.L;
  return {C(0), C(10) * HBnL, C(3) * x.e * HBnL};
}
cost<C> b_mlp_act(const dims<C>& x) {
  const C TF = x.T() * x.F;
  if (x.swiglu) return {C(0), C(10) * TF, C(5) * x.e * TF};
  return {C(0), C(16) * TF, C(3) * x.e * TF};
}
cost<C> b_scatter(const dims<C>& x) {
  const C Bk = x.T();
  return {C(0), C(3) * Bk * x.d, C(4) * Bk + x.e * (C(3) * Bk * x.d + C(2) * Bk)};
}
// The cross-entropy loss and its gradient, one fused pass over the logits (flops.hpp:
// k_loss_flops_per_logit, k_loss_flops_per_row): read them, write dL/dlogits in their place.
cost<C> b_loss(const dims<C>& x) {
  const C BS = x.B * x.S;
  const C logits = BS * x.V;
  return {C(0), C(k_loss_flops_per_logit) * logits + C(k_loss_flops_per_row) * BS, C(2) * x.e * logits};
}
// The LM head's backward: the loss, then the projection's dgrad and wgrad and the final norm's.
cost<C> b_lm_head(const dims<C>& x) {
  const C BS = x.B * x.S;
  const cost<C> loss = b_loss(x);
  return {C(4) * BS * x.d * x.V, C(8) * BS * x.d + loss.other,
          x.e * (C(2) * BS * x.d + C(2) * x.w * x.d * x.V + C(2) * BS * x.V) +
              x.e * (C(4) * BS * x.d + C(2) * x.w * x.d) + loss.bytes};
}

op_cost twice(op_cost c) {
  c.matmul_flops = (C(2) * c.matmul_flops).v;
  c.other_flops = (C(2) * c.other_flops).v;
  return c;
}

}  // namespace

namespace ops {

op_cost lm_head_loss(const op_shape& s) { return finish(modsim::op::lm_head, b_loss(dims_of(s))); }

op_cost backward_of(modsim::op o, const op_shape& s) {
  using enum modsim::op;
  const dims<C> x = dims_of(s);
  switch (o) {
    case router:
      return finish(o, b_router(x));
    case topk:
      return op_cost{o, 0, 0, 0};
    case gather:
      return finish(o, b_gather(x));
    case predictor:
      // Trained on stop-gradient inputs: a small MLP's dgrad and wgrad, twice its forward.
      return twice(ops::predictor(s));
    case attn_norm:
    case mlp_norm:
      return finish(o, b_norm(x));
    case qkv_proj:
      return finish(o, b_gemm(x, x.d, x.dq + C(2) * x.dkv));
    case attn_scores:
    case attn_values:
      return finish(o, b_attn_matmuls(x));
    case attn_softmax:
      return finish(o, b_attn_softmax(x));
    case out_proj:
      return finish(o, b_gemm(x, x.dq, x.d));
    case mlp_up:
    case mlp_gate:
      return finish(o, b_gemm(x, x.d, x.F));
    case mlp_act:
      return finish(o, b_mlp_act(x));
    case mlp_down:
      return finish(o, b_gemm(x, x.F, x.d));
    case scatter:
      return finish(o, b_scatter(x));
    case expert_router: {
      const C EN = x.E + x.NE;
      cost<C> c = b_gemm(x, x.d, EN);
      c.other = C(10) * x.T() * EN;
      return finish(o, c);
    }
    case experts: {
      op_cost c = twice(ops::experts(s));
      const C M = C(ops::expert_slots(s));
      const C mats = x.swiglu ? C(3) : C(2);
      c.bytes = (x.e * (C(2) * x.w * x.E * mats * x.d * x.F + C(3) * M * x.d + C(2) * x.T() * x.d)).v;
      return c;
    }
    case lm_head:
      return finish(o, b_lm_head(x));
    case block_dense:
    case block_mod:
    case layer_mode:
    case decode_dense:
    case decode_mod:
    case decode_step:
    case block_dense_train:
    case block_mod_train:
    case adamw:
      break;
  }
  throw input_error("", "op",
                    "'" + std::string(to_string(o)) +
                        "' has no backward formula (a block, a decode step, a training block or the optimizer step)");
}

op_cost recompute_of(modsim::op o, const op_shape& s, recompute_mode r, attention_impl a) {
  using enum modsim::op;
  op_cost none{o, 0, 0, 0};
  const bool fused = a == attention_impl::fused;
  if (r == recompute_mode::full) {
    op_cost c = cost_of(o, s);
    // The fused kernel's backward recomputes the scores once more.
    if (fused && o == attn_scores) c.matmul_flops = (C(2) * c.matmul_flops).v;
    return c;
  }
  if (fused) {
    if (o != attn_scores) return none;
    const op_cost f = cost_of(o, s);
    return op_cost{o, f.matmul_flops, 0, 0};  // the scores, inside the backward kernel
  }
  if (r == recompute_mode::selective && (o == attn_scores || o == attn_softmax)) return cost_of(o, s);
  return none;
}

}  // namespace ops

std::int64_t adamw_bytes_per_param(int elem_bytes) {
  // fp32 weights: read w, g, m, v; write w, m, v. Narrower weights: an fp32 master copy read and
  // written with the moments, the e-byte gradient read and the e-byte weights written.
  if (elem_bytes >= 4) return 4 * 4 + 3 * 4;
  return 3 * 4 + 3 * 4 + 2 * std::int64_t{elem_bytes};
}

optimizer_cost adamw_cost(std::int64_t params, int elem_bytes) {
  optimizer_cost c;
  c.params = params;
  c.other_flops = (C(k_adamw_flops_per_param) * params).v;
  c.bytes = (C(adamw_bytes_per_param(elem_bytes)) * params).v;
  return c;
}

}  // namespace modsim::sim
