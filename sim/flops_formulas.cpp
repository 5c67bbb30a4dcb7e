// The FLOP/byte formula of each op (sim/flops.hpp's table): one function per op in exact
// (checked int64) and expected (double) arithmetic, the dispatch over the op table, and the
// op-name helpers.
#include <string>

#include "core/error.hpp"
#include "sim/flops.hpp"
#include "sim/flops_arith.hpp"

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

}  // namespace modsim::sim
