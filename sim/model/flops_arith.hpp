#pragma once
// The arithmetic of the FLOP/byte formulas (sim/model/flops_formulas.cpp), the layer evaluation
// (sim/model/flops.cpp) and the parameter counts (sim/model/parameters.cpp): an int64 that throws on
// overflow for exact counts, doubles for expectations, and a shape's numbers with its
// defaults resolved. Internal to sim/.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.hpp"
#include "sim/model/flops.hpp"

namespace modsim::sim::detail {

[[noreturn]] inline void throw_overflow() {
  throw input_error("", "workload", "a FLOP, byte or parameter count does not fit in 64 bits");
}

// An int64 whose arithmetic throws on overflow: the exact path of every formula.
struct checked {
  std::int64_t v = 0;
  checked(std::int64_t x = 0) : v(x) {}  // NOLINT(google-explicit-constructor): mixes with literals
};
inline checked operator+(checked a, checked b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a.v, b.v, &r)) throw_overflow();
  return r;
}
inline checked operator-(checked a, checked b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a.v, b.v, &r)) throw_overflow();
  return r;
}
inline checked operator*(checked a, checked b) {
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

inline std::int64_t to_int64(checked x) { return x.v; }
inline std::int64_t to_int64(double x) {
  // 2^63 as a double; llround of anything at or above it is undefined.
  if (!std::isfinite(x) || std::fabs(x) >= 9223372036854775808.0) throw_overflow();
  return std::llround(x);
}

// ceil(x) robust to the rounding of x (1.1 * 10 / 11 is 1 slot, not 2), as routed_tokens.
inline std::int64_t robust_ceil(long double x) {
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
  if (s.window > 0 && static_cast<double>(s.window) < static_cast<double>(s.context != N(0) ? s.context : s.tokens))
    x.L = C(s.window);
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

template <class C>
op_cost finish(modsim::op o, const cost<C>& c) {
  return op_cost{o, to_int64(c.matmul), to_int64(c.other), to_int64(c.bytes)};
}

}  // namespace modsim::sim::detail
