// The training kernels of kernels/train.hpp on the CPU: one layer's forward (keeping what the
// backward reads), its backward, and AdamW. GEMMs through OpenBLAS, the rest through the pool,
// never both at once (as the backend's forward).
#include "kernels/train.hpp"
#include "kernels/train_tensors.hpp"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "kernels/cpu/vec_math.hpp"
#include "kernels/init.hpp"
#include "core/error.hpp"

namespace modsim::kernels::train {

std::vector<std::vector<float>*> layer_params::tensors() {
  return {&router_w, &attn_norm_g,     &w_q,         &w_k,           &w_v,          &w_o, &mlp_norm_g, &w_up, &w_gate,
          &w_down,   &expert_router_w, &expert_w_up, &expert_w_gate, &expert_w_down};
}

std::vector<const std::vector<float>*> layer_params::tensors() const {
  return {&router_w, &attn_norm_g,     &w_q,         &w_k,           &w_v,          &w_o, &mlp_norm_g, &w_up, &w_gate,
          &w_down,   &expert_router_w, &expert_w_up, &expert_w_gate, &expert_w_down};
}

std::int64_t layer_params::parameter_count() const {
  std::int64_t n = 0;
  for (const auto* t : tensors()) n += static_cast<std::int64_t>(t->size());
  return n;
}

namespace {

using i64 = std::int64_t;

void validate_shape(const block_shape& s, bool routed) {
  s.validate();
  if (s.variant == moe_variant::staged && !routed)
    throw input_error("", "layer_params.routed", "a staged MoDE layer is routed");
  if (s.variant == moe_variant::integrated && routed)
    throw input_error("", "layer_params.routed", "an integrated MoDE layer is not routed (its no-op experts route)");
}

// Elements of each parameter tensor, in layer_params::tensors() order.
std::vector<i64> tensor_sizes(const block_shape& s, bool routed) {
  const i64 d = s.d_model, f = s.d_ff;
  const bool moe = s.variant != moe_variant::none, swiglu = s.mlp == mlp_kind::swiglu;
  const i64 dense = moe ? 0 : 1, E = moe ? s.experts : 0;
  return {routed ? d : 0,
          d,
          d * s.d_q(),
          d * s.d_kv(),
          d * s.d_kv(),
          s.d_q() * d,
          d,
          dense * d * f,
          swiglu ? dense * d * f : 0,
          dense * f * d,
          moe ? d * s.router_experts() : 0,
          E * d * f,
          swiglu ? E * d * f : 0,
          E * f * d};
}

// The workspace tensor whose initial values a parameter takes (kernels/init.hpp).
constexpr tensor init_tensors[] = {tensor::router_w,
                                   tensor::attn_norm_g,
                                   tensor::w_q,
                                   tensor::w_k,
                                   tensor::w_v,
                                   tensor::w_o,
                                   tensor::mlp_norm_g,
                                   tensor::w_up,
                                   tensor::w_gate,
                                   tensor::w_down,
                                   tensor::expert_router_w,
                                   tensor::expert_w_up,
                                   tensor::expert_w_gate,
                                   tensor::expert_w_down};

void check_size(const std::vector<float>& v, i64 expected, const char* name) {
  if (static_cast<i64>(v.size()) != expected)
    throw input_error("", std::string("layer_params.") + name,
                      "has " + std::to_string(v.size()) + " elements, the shape needs " + std::to_string(expected));
}

void check_params(const layer_params& p) {
  validate_shape(p.shape, p.routed);
  const auto sizes = tensor_sizes(p.shape, p.routed);
  const auto tensors = p.tensors();
  for (std::size_t i = 0; i < sizes.size(); ++i) check_size(*tensors[i], sizes[i], tensor_names[i]);
}

int i32(i64 v) { return static_cast<int>(v); }

// C[m×n] = alpha·op(A)·op(B) + beta·C, row-major; op(A) is m×k, op(B) k×n.
void gemm(bool a_t, bool b_t, i64 m, i64 n, i64 k, float alpha, const float* a, i64 lda, const float* b, i64 ldb,
          float beta, float* c, i64 ldc) {
  cblas_sgemm(CblasRowMajor, a_t ? CblasTrans : CblasNoTrans, b_t ? CblasTrans : CblasNoTrans, i32(m), i32(n), i32(k),
              alpha, a, i32(lda), b, i32(ldb), beta, c, i32(ldc));
}

// dW[in×out] = Aᵀ·dC for A [m×in], dC [m×out].
void weight_grad(i64 m, i64 in, i64 out, const float* a, const float* dc, float* dw) {
  gemm(true, false, in, out, m, 1.0f, a, in, dc, out, 0.0f, dw, out);
}

template <class T>
void fit(std::vector<T>& v, i64 n) {
  v.resize(static_cast<std::size_t>(n));
}

}  // namespace

void check_span(std::size_t size, std::int64_t expected, const char* name) {
  if (static_cast<i64>(size) != expected)
    throw input_error("", name,
                      "has " + std::to_string(size) + " elements, the layer needs " + std::to_string(expected));
}

void check_predictor_inputs(const predictor_params& p, const block_shape& shape, std::span<const float> x,
                            std::span<const std::int32_t> routed_index) {
  const i64 T = shape.tokens(), d = shape.d_model, hd = p.hidden, S = shape.seq_len, k = shape.routed_tokens();
  if (p.d_model != d)
    throw input_error("", "predictor_params.d_model",
                      "is " + std::to_string(p.d_model) + ", the layer's d_model is " + std::to_string(d));
  if (hd <= 0) throw input_error("", "predictor_params.hidden", "must be positive, got " + std::to_string(hd));
  check_span(p.w1.size(), d * hd, "predictor_params.w1");
  check_span(p.w2.size(), hd, "predictor_params.w2");
  check_span(x.size(), T * d, "x");
  check_span(routed_index.size(), shape.batch * k, "routed_index");
  for (const std::int32_t pos : routed_index)
    if (pos < 0 || pos >= S) throw input_error("", "routed_index", "holds position " + std::to_string(pos));
}

layer_params zero_params(const block_shape& shape, bool routed) {
  validate_shape(shape, routed);
  layer_params p;
  p.shape = shape;
  p.routed = routed;
  const auto sizes = tensor_sizes(shape, routed);
  const auto tensors = p.tensors();
  for (std::size_t i = 0; i < sizes.size(); ++i) tensors[i]->assign(static_cast<std::size_t>(sizes[i]), 0.0f);
  return p;
}

layer_params random_params(const block_shape& shape, bool routed, std::uint64_t seed) {
  layer_params p = zero_params(shape, routed);
  const auto tensors = p.tensors();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    auto& v = *tensors[i];
    if (v.empty()) continue;
    const auto rule = initial_values(init_tensors[i], shape);
    fill_normal_parallel(v, seed, rule->stream, rule->mean, rule->std_dev);
  }
  return p;
}

std::int64_t saved_activations::bytes() const {
  const std::vector<const std::vector<float>*> floats = {
      &x, &routed_r, &attn_in, &q,    &k,   &v, &probs,        &attn_out,
      &h, &mlp_in,   &up,      &gate, &act, &y, &expert_probs, &expert_out};
  i64 n = static_cast<i64>(routed_index.size() + expert_index.size());
  for (const auto* f : floats) n += static_cast<i64>(f->size());
  return n * 4;
}

std::int64_t adamw_state::bytes() const { return (m.parameter_count() + v.parameter_count()) * 4; }

struct cpu_trainer::impl {
  explicit impl(int n_threads) : threads(n_threads), pool(n_threads) {}

  int threads;
  cpu::thread_pool pool;
  // The activations a `full` forward does not keep: written by forward's run (probabilities
  // not kept) and by backward's recomputation (all kept).
  saved_activations recomputed;
  // Scratch, grown on first use.
  std::vector<std::pair<float, std::int32_t>> topk_pairs;  // [T]
  std::vector<float> r;                                    // [T] router weights
  std::vector<float> xt;                                   // [m, d] gathered input
  std::vector<float> head_scratch;                         // [slots, 2, n, n] probabilities, their gradient
  std::vector<float> dk_heads, dv_heads;                   // [B, H, n, d_head] per head (GQA)
  std::vector<float> grad_y, dxt, grad_h, du;              // [m, d]
  std::vector<float> dact, dup, dgate;                     // [m, f]
  std::vector<float> grad_attn, grad_q, grad_k, grad_v;    // [m, d_q], [m, d_kv] ×2
  std::vector<float> da;                                   // [m, d]
  std::vector<float> dr;                                   // [m]
  std::vector<float> gain_partials;                        // [chunks, d]
  // MoE: kept rows grouped by expert (offsets [E + 1], the token row of each grouped row),
  // the grouped inputs and their gradients, the expert logits' and gates' gradients.
  std::vector<i64> expert_offsets, expert_fill;
  std::vector<std::int32_t> expert_rows;
  std::vector<float> expert_in, d_expert_out, d_expert_in;  // [kept, d]
  std::vector<float> d_logits;                              // [m, E']
  std::vector<float> pred_hidden, pred_dhidden;             // [T, hidden] predictor
  std::vector<float> pred_logits, pred_dlogits;             // [T]

  void ensure_blas_threads() {
    if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
  }

  i64 row_grain(i64 rows) const { return std::max<i64>(8, rows / (4 * pool.size()) + 1); }
  i64 elem_grain(i64 count) const { return std::max<i64>(1 << 14, count / (4 * pool.size()) + 1); }

  void copy(const float* src, float* dst, i64 count) { cpu::parallel_copy(pool, src, dst, count); }

  // Rows per causal block of an n-token attention: a row block reads only the keys up to its
  // last row, so smaller blocks skip more of the masked half, at smaller GEMMs.
  static i64 causal_block(i64 n) { return n <= 128 ? n : 64; }

  // body(slot, task) for every task in [0, tasks), each on one participant of the pool with
  // single-threaded OpenBLAS; slot in [0, min(pool.size(), tasks)) names the participant's
  // scratch. Tasks are claimed one at a time, so uneven ones balance.
  template <class F>
  void for_each_task(i64 tasks, F&& body) {
    const i64 slots = std::min<i64>(pool.size(), tasks);
    if (slots <= 1) {
      for (i64 t = 0; t < tasks; ++t) body(0, t);
      return;
    }
    openblas_set_num_threads(1);
    std::atomic<i64> next{0};
    pool.parallel_for(slots, 1, [&](i64 s0, i64 s1) {
      for (i64 slot = s0; slot < s1; ++slot)
        for (i64 t = next++; t < tasks; t = next++) body(slot, t);
    });
    openblas_set_num_threads(threads);
  }

  void rms_norm(const float* in, const float* g, float* out, i64 rows, i64 d) {
    pool.parallel_for(rows, row_grain(rows),
                      [&](i64 r0, i64 r1) { cpu::rms_norm_rows(in + r0 * d, g, out + r0 * d, r1 - r0, d); });
  }

  // d_in += RMSNorm backward; d_gain = Σ over rows (overwritten).
  void rms_norm_backward(const float* in, const float* g, const float* d_out, float* d_in, float* d_gain, i64 rows,
                         i64 d) {
    const i64 chunks = std::min<i64>(rows, 4 * pool.size());
    fit(gain_partials, chunks * d);
    std::fill(gain_partials.begin(), gain_partials.end(), 0.0f);
    pool.parallel_for(chunks, 1, [&](i64 c0, i64 c1) {
      for (i64 c = c0; c < c1; ++c) {
        const i64 r0 = rows * c / chunks, r1 = rows * (c + 1) / chunks;
        cpu::rms_norm_backward_rows(in + r0 * d, g, d_out + r0 * d, d_in + r0 * d, gain_partials.data() + c * d,
                                    r1 - r0, d);
      }
    });
    std::fill(d_gain, d_gain + d, 0.0f);
    for (i64 c = 0; c < chunks; ++c) cpu::axpy(1.0f, gain_partials.data() + c * d, d_gain, d);
  }

  // The block on xin [m, d] (n tokens per sequence); y [m, d] = xin + Δ. Keeps its
  // activations in `s` (probs only when keep_probs).
  void block_forward(const layer_params& p, const float* xin, i64 n, float* y, saved_activations& s, bool keep_probs) {
    const auto& sh = p.shape;
    const i64 B = sh.batch, m = B * n, d = sh.d_model, f = sh.d_ff, H = sh.n_heads, dh = sh.d_head;
    const i64 dq = sh.d_q(), dkv = sh.d_kv(), group = sh.n_heads / sh.n_kv_heads;
    const bool swiglu = sh.mlp == mlp_kind::swiglu;
    fit(s.attn_in, m * d);
    fit(s.q, m * dq);
    fit(s.k, m * dkv);
    fit(s.v, m * dkv);
    fit(s.attn_out, m * dq);
    fit(s.h, m * d);
    fit(s.mlp_in, m * d);
    if (keep_probs)
      fit(s.probs, B * H * n * n);
    else
      s.probs.clear();

    rms_norm(xin, p.attn_norm_g.data(), s.attn_in.data(), m, d);
    gemm(false, false, m, dq, d, 1.0f, s.attn_in.data(), d, p.w_q.data(), dq, 0.0f, s.q.data(), dq);
    gemm(false, false, m, dkv, d, 1.0f, s.attn_in.data(), d, p.w_k.data(), dkv, 0.0f, s.k.data(), dkv);
    gemm(false, false, m, dkv, d, 1.0f, s.attn_in.data(), d, p.w_v.data(), dkv, 0.0f, s.v.data(), dkv);
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    const i64 bs = causal_block(n);
    if (!keep_probs) fit(head_scratch, std::min<i64>(pool.size(), B * H) * 2 * n * n);
    for_each_task(B * H, [&](i64 slot, i64 bh) {
      const i64 b = bh / H, head = bh % H, kv = head / group;
      float* pr = keep_probs ? s.probs.data() + bh * n * n : head_scratch.data() + slot * 2 * n * n;
      const float* v_kv = s.v.data() + b * n * dkv + kv * dh;
      float* o_h = s.attn_out.data() + b * n * dq + head * dh;
      for (i64 i0 = 0; i0 < n; i0 += bs) {
        const i64 i1 = std::min(n, i0 + bs);
        attention_probs_rows(s, b, head, kv, n, dq, dkv, dh, scale, i0, i1, pr);
        gemm(false, false, i1 - i0, dh, i1, 1.0f, pr + i0 * n, n, v_kv, dkv, 0.0f, o_h + i0 * dq, dq);  // O = P·V
      }
    });
    copy(xin, s.h.data(), m * d);
    gemm(false, false, m, d, dq, 1.0f, s.attn_out.data(), dq, p.w_o.data(), d, 1.0f, s.h.data(), d);
    rms_norm(s.h.data(), p.mlp_norm_g.data(), s.mlp_in.data(), m, d);
    copy(s.h.data(), y, m * d);
    if (sh.variant == moe_variant::none) {
      s.expert_probs.clear();
      s.expert_index.clear();
      s.expert_out.clear();
      fit(s.up, m * f);
      fit(s.gate, swiglu ? m * f : 0);
      fit(s.act, m * f);
      mlp_forward(s.mlp_in.data(), m, p.w_up.data(), p.w_gate.data(), p.w_down.data(), s.up.data(), s.gate.data(),
                  s.act.data(), y, swiglu, d, f, 1.0f);
    } else {
      moe_forward(p, s, m, y);
    }
  }

  // One MLP on rows u [rows, d]: up, gate (swiglu), act [rows, f] kept; out [rows, d] =
  // act·W_down + beta·out.
  void mlp_forward(const float* u, i64 rows, const float* w_up, const float* w_gate, const float* w_down, float* up,
                   float* gate, float* act, float* out, bool swiglu, i64 d, i64 f, float beta) {
    gemm(false, false, rows, f, d, 1.0f, u, d, w_up, f, 0.0f, up, f);
    if (swiglu) gemm(false, false, rows, f, d, 1.0f, u, d, w_gate, f, 0.0f, gate, f);
    const i64 count = rows * f;
    pool.parallel_for(count, elem_grain(count), [&](i64 b, i64 e) {
      if (swiglu)
        cpu::silu_mul_to(up + b, gate + b, act + b, e - b);
      else
        cpu::gelu_to(up + b, act + b, e - b);
    });
    gemm(false, false, rows, d, f, 1.0f, act, f, w_down, d, beta, out, d);
  }

  // One MLP's backward on rows u [rows, d] given d_out [rows, d]: the three (two) weight
  // gradients, and d_u [rows, d] (overwritten).
  void mlp_backward(const float* u, i64 rows, const float* w_up, const float* w_gate, const float* w_down,
                    const float* up, const float* gate, const float* act, const float* d_out, float* d_u, float* g_up,
                    float* g_gate, float* g_down, bool swiglu, i64 d, i64 f) {
    fit(dact, rows * f);
    fit(dup, rows * f);
    fit(dgate, swiglu ? rows * f : 0);
    gemm(false, true, rows, f, d, 1.0f, d_out, d, w_down, d, 0.0f, dact.data(), f);
    weight_grad(rows, f, d, act, d_out, g_down);
    const i64 count = rows * f;
    pool.parallel_for(count, elem_grain(count), [&](i64 b, i64 e) {
      if (swiglu)
        cpu::silu_mul_backward(up + b, gate + b, dact.data() + b, dup.data() + b, dgate.data() + b, e - b);
      else
        cpu::gelu_backward(up + b, dact.data() + b, dup.data() + b, e - b);
    });
    weight_grad(rows, d, f, u, dup.data(), g_up);
    gemm(false, true, rows, d, f, 1.0f, dup.data(), f, w_up, f, 0.0f, d_u, d);
    if (swiglu) {
      weight_grad(rows, d, f, u, dgate.data(), g_gate);
      gemm(false, true, rows, d, f, 1.0f, dgate.data(), f, w_gate, f, 1.0f, d_u, d);
    }
  }

  // Groups the rows that real experts kept by expert (token order within one) from `index`.
  i64 group_experts(const std::vector<std::int32_t>& index, i64 m, i64 E) {
    expert_offsets.assign(static_cast<std::size_t>(E + 1), 0);
    for (i64 t = 0; t < m; ++t)
      if (index[t] >= 0 && index[t] < E) ++expert_offsets[static_cast<std::size_t>(index[t]) + 1];
    for (i64 e = 0; e < E; ++e) expert_offsets[e + 1] += expert_offsets[e];
    expert_fill.assign(expert_offsets.begin(), expert_offsets.end() - 1);
    const i64 kept = expert_offsets[static_cast<std::size_t>(E)];
    fit(expert_rows, kept);
    for (i64 t = 0; t < m; ++t)
      if (index[t] >= 0 && index[t] < E)
        expert_rows[static_cast<std::size_t>(expert_fill[static_cast<std::size_t>(index[t])]++)] =
            static_cast<std::int32_t>(t);
    return kept;
  }

  // Gathers u's kept rows into expert_in [kept, d].
  void gather_expert_in(const float* u, i64 kept, i64 d) {
    fit(expert_in, kept * d);
    pool.parallel_for(kept, std::max<i64>(16, kept / pool.size() + 1), [&](i64 j0, i64 j1) {
      for (i64 j = j0; j < j1; ++j)
        std::memcpy(expert_in.data() + j * d, u + i64{expert_rows[static_cast<std::size_t>(j)]} * d,
                    static_cast<std::size_t>(d) * sizeof(float));
    });
  }

  // The MoE MLP on u = s.mlp_in [m, d]: y (holding h) += gate·expert(u) for kept rows.
  void moe_forward(const layer_params& p, saved_activations& s, i64 m, float* y) {
    const auto& sh = p.shape;
    const i64 d = sh.d_model, f = sh.d_ff, E = sh.experts, Et = sh.router_experts();
    const bool swiglu = sh.mlp == mlp_kind::swiglu;
    fit(s.expert_probs, m * Et);
    fit(s.expert_index, m);
    float* probs_t = s.expert_probs.data();
    gemm(false, false, m, Et, d, 1.0f, s.mlp_in.data(), d, p.expert_router_w.data(), Et, 0.0f, probs_t, Et);
    std::vector<i64> taken(static_cast<std::size_t>(E), 0);
    const i64 cap = sh.expert_capacity(m);
    for (i64 t = 0; t < m; ++t) {  // sequential: capacity is first come, first served
      float* l = probs_t + t * Et;
      i64 best = 0;
      for (i64 e = 1; e < Et; ++e)
        if (l[e] > l[best]) best = e;
      const float top = l[best];
      float sum = 0.0f;
      for (i64 e = 0; e < Et; ++e) sum += (l[e] = std::exp(l[e] - top));
      for (i64 e = 0; e < Et; ++e) l[e] /= sum;
      std::int32_t chosen = static_cast<std::int32_t>(best);
      if (best < E) {
        if (taken[static_cast<std::size_t>(best)] < cap)
          ++taken[static_cast<std::size_t>(best)];
        else
          chosen = -1;
      }
      s.expert_index[static_cast<std::size_t>(t)] = chosen;
    }
    const i64 kept = group_experts(s.expert_index, m, E);
    gather_expert_in(s.mlp_in.data(), kept, d);
    fit(s.up, kept * f);
    fit(s.gate, swiglu ? kept * f : 0);
    fit(s.act, kept * f);
    fit(s.expert_out, kept * d);
    for (i64 e = 0; e < E; ++e) {
      const i64 off = expert_offsets[static_cast<std::size_t>(e)], cnt = expert_offsets[e + 1] - off;
      if (cnt == 0) continue;
      mlp_forward(expert_in.data() + off * d, cnt, p.expert_w_up.data() + e * d * f,
                  swiglu ? p.expert_w_gate.data() + e * d * f : nullptr, p.expert_w_down.data() + e * f * d,
                  s.up.data() + off * f, swiglu ? s.gate.data() + off * f : nullptr, s.act.data() + off * f,
                  s.expert_out.data() + off * d, swiglu, d, f, 0.0f);
    }
    for (i64 j = 0; j < kept; ++j) {
      const i64 t = expert_rows[static_cast<std::size_t>(j)];
      const float gate = probs_t[t * Et + s.expert_index[static_cast<std::size_t>(t)]];
      cpu::axpy(gate, s.expert_out.data() + j * d, y + t * d, d);
    }
  }

  // The MoE MLP's backward given dy [m, d]: du [m, d] (overwritten), the experts' and the
  // expert router's gradients.
  void moe_backward(const layer_params& p, const saved_activations& s, i64 m, const float* dy, layer_grads& g) {
    const auto& sh = p.shape;
    const i64 d = sh.d_model, f = sh.d_ff, E = sh.experts, Et = sh.router_experts();
    const bool swiglu = sh.mlp == mlp_kind::swiglu;
    const i64 kept = group_experts(s.expert_index, m, E);
    gather_expert_in(s.mlp_in.data(), kept, d);
    fit(d_expert_out, kept * d);
    fit(d_expert_in, kept * d);
    fit(d_logits, m * Et);
    std::fill(d_logits.begin(), d_logits.end(), 0.0f);
    const float* probs_t = s.expert_probs.data();
    // y_t = h_t + gate_t·out_j: d out_j = gate_t·dy_t; d gate_t = ⟨dy_t, out_j⟩, and through
    // gate_t = softmax(l_t)[e*]: d l_t[e] = d gate_t·gate_t·(δ(e, e*) − probs_t[e]).
    pool.parallel_for(kept, std::max<i64>(16, kept / pool.size() + 1), [&](i64 j0, i64 j1) {
      for (i64 j = j0; j < j1; ++j) {
        const i64 t = expert_rows[static_cast<std::size_t>(j)];
        const i64 chosen = s.expert_index[static_cast<std::size_t>(t)];
        const float* pt = probs_t + t * Et;
        const float gate = pt[chosen];
        const float* dyt = dy + t * d;
        float* dout = d_expert_out.data() + j * d;
        for (i64 c = 0; c < d; ++c) dout[c] = gate * dyt[c];
        const float dgate_t = cpu::dot(dyt, s.expert_out.data() + j * d, d);
        float* dl = d_logits.data() + t * Et;
        for (i64 e = 0; e < Et; ++e) dl[e] = dgate_t * gate * ((e == chosen ? 1.0f : 0.0f) - pt[e]);
      }
    });
    std::fill(g.expert_w_up.begin(), g.expert_w_up.end(), 0.0f);
    std::fill(g.expert_w_gate.begin(), g.expert_w_gate.end(), 0.0f);
    std::fill(g.expert_w_down.begin(), g.expert_w_down.end(), 0.0f);
    for (i64 e = 0; e < E; ++e) {
      const i64 off = expert_offsets[static_cast<std::size_t>(e)], cnt = expert_offsets[e + 1] - off;
      if (cnt == 0) continue;
      mlp_backward(expert_in.data() + off * d, cnt, p.expert_w_up.data() + e * d * f,
                   swiglu ? p.expert_w_gate.data() + e * d * f : nullptr, p.expert_w_down.data() + e * f * d,
                   s.up.data() + off * f, swiglu ? s.gate.data() + off * f : nullptr, s.act.data() + off * f,
                   d_expert_out.data() + off * d, d_expert_in.data() + off * d, g.expert_w_up.data() + e * d * f,
                   swiglu ? g.expert_w_gate.data() + e * d * f : nullptr, g.expert_w_down.data() + e * f * d, swiglu, d,
                   f);
    }
    // du = d l·W_routerᵀ, plus each kept row's expert input gradient.
    weight_grad(m, d, Et, s.mlp_in.data(), d_logits.data(), g.expert_router_w.data());
    gemm(false, true, m, d, Et, 1.0f, d_logits.data(), Et, p.expert_router_w.data(), Et, 0.0f, du.data(), d);
    for (i64 j = 0; j < kept; ++j)
      cpu::axpy(1.0f, d_expert_in.data() + j * d, du.data() + i64{expert_rows[static_cast<std::size_t>(j)]} * d, d);
  }

  // Rows [i0, i1) of pr [n, n] = causal softmax(q_head·k_kvᵀ·scale) of sequence b: the scores
  // of keys [0, i1) only (the causal mask zeroes the rest), then the softmax, which writes the
  // zeros. Single-threaded BLAS (a task of for_each_task).
  void attention_probs_rows(const saved_activations& s, i64 b, i64 head, i64 kv, i64 n, i64 dq, i64 dkv, i64 dh,
                            float scale, i64 i0, i64 i1, float* pr) {
    gemm(false, true, i1 - i0, i1, dh, scale, s.q.data() + (b * n + i0) * dq + head * dh, dq,
         s.k.data() + b * n * dkv + kv * dh, dkv, 0.0f, pr + i0 * n, n);
    cpu::softmax_causal_rows(pr, n, i0, i1);
  }

  // The whole layer on x: out [T, d]; activations into `s` (probs only when keep_probs).
  void layer_forward(const layer_params& p, const float* x, float* out, saved_activations& s, bool keep_probs) {
    const auto& sh = p.shape;
    const i64 T = sh.tokens(), d = sh.d_model, S = sh.seq_len;
    if (!p.routed) {
      s.routed_index.clear();
      s.routed_r.clear();
      s.y.clear();
      block_forward(p, x, S, out, s, keep_probs);
      return;
    }
    const i64 k = sh.routed_tokens(), m = sh.batch * k;
    fit(r, T);
    fit(topk_pairs, T);
    fit(s.routed_index, m);
    fit(s.routed_r, m);
    fit(s.y, m * d);
    fit(xt, m * d);
    const float* w = p.router_w.data();
    pool.parallel_for(T, std::max<i64>(16, T / (4 * pool.size()) + 1), [&](i64 b, i64 e) {
      for (i64 t = b; t < e; ++t) r[static_cast<std::size_t>(t)] = cpu::dot(x + t * d, w, d);
    });
    pool.parallel_for(sh.batch, 1, [&](i64 b0, i64 b1) {
      for (i64 b = b0; b < b1; ++b)
        cpu::topk_sequence(r.data() + b * S, S, k, topk_pairs.data() + b * S, s.routed_index.data() + b * k);
    });
    pool.parallel_for(m, std::max<i64>(16, m / pool.size() + 1), [&](i64 j0, i64 j1) {
      for (i64 j = j0; j < j1; ++j) {
        const i64 row = (j / k) * S + s.routed_index[static_cast<std::size_t>(j)];
        std::memcpy(xt.data() + j * d, x + row * d, static_cast<std::size_t>(d) * sizeof(float));
        s.routed_r[static_cast<std::size_t>(j)] = r[static_cast<std::size_t>(row)];
      }
    });
    block_forward(p, xt.data(), k, s.y.data(), s, keep_probs);
    copy(x, out, T * d);
    pool.parallel_for(m, std::max<i64>(16, m / pool.size() + 1), [&](i64 j0, i64 j1) {
      for (i64 j = j0; j < j1; ++j) {
        const i64 row = (j / k) * S + s.routed_index[static_cast<std::size_t>(j)];
        cpu::scaled_delta_add(x + row * d, s.y.data() + j * d, xt.data() + j * d,
                              s.routed_r[static_cast<std::size_t>(j)], out + row * d, d);
      }
    });
  }

  // Attention's backward for every (sequence, head), one task each (for_each_task): from
  // grad_attn = dL/dO, the probabilities (kept, or recomputed per head under selective) and
  // q, k, v, writes grad_q, grad_k and grad_v. Causal blocks of bs rows: row block [i0, i1)
  // reads keys [0, i1) only and column block [j0, j1) rows [j0, n) only, the rest of P and
  // dS being zero. A GQA group's heads write their dK and dV apart (dk_heads, dv_heads) and
  // are summed after, so no two tasks write the same rows.
  void attention_backward(const saved_activations& s, i64 B, i64 n, i64 dh, i64 H, i64 group, i64 dq, i64 dkv) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    const i64 bs = causal_block(n), m = B * n;
    const bool recompute_probs = s.probs.empty();
    fit(head_scratch, std::min<i64>(pool.size(), B * H) * 2 * n * n);
    if (group > 1) {
      fit(dk_heads, B * H * n * dh);
      fit(dv_heads, B * H * n * dh);
    }
    for_each_task(B * H, [&](i64 slot, i64 bh) {
      const i64 b = bh / H, head = bh % H, kv = head / group;
      float* scratch = head_scratch.data() + slot * 2 * n * n;
      float* ds = scratch + n * n;
      const float* pr = scratch;
      if (recompute_probs) {
        for (i64 i0 = 0; i0 < n; i0 += bs)
          attention_probs_rows(s, b, head, kv, n, dq, dkv, dh, scale, i0, std::min(n, i0 + bs), scratch);
      } else {
        pr = s.probs.data() + bh * n * n;
      }
      const float* q_h = s.q.data() + b * n * dq + head * dh;
      const float* k_kv = s.k.data() + b * n * dkv + kv * dh;
      const float* v_kv = s.v.data() + b * n * dkv + kv * dh;
      const float* do_h = grad_attn.data() + b * n * dq + head * dh;
      float* dq_h = grad_q.data() + b * n * dq + head * dh;
      float* dk_h = group > 1 ? dk_heads.data() + bh * n * dh : grad_k.data() + b * n * dkv + kv * dh;
      float* dv_h = group > 1 ? dv_heads.data() + bh * n * dh : grad_v.data() + b * n * dkv + kv * dh;
      const i64 ld_kv = group > 1 ? dh : dkv;
      for (i64 i0 = 0; i0 < n; i0 += bs) {
        const i64 i1 = std::min(n, i0 + bs);
        gemm(false, true, i1 - i0, i1, dh, 1.0f, do_h + i0 * dq, dq, v_kv, dkv, 0.0f, ds + i0 * n, n);  // dP = dO·Vᵀ
        cpu::softmax_causal_backward_rows(pr, ds, n, i0, i1, scale);                                    // dS
        gemm(false, false, i1 - i0, dh, i1, 1.0f, ds + i0 * n, n, k_kv, dkv, 0.0f, dq_h + i0 * dq, dq);  // dQ = dS·K
      }
      for (i64 j0 = 0; j0 < n; j0 += bs) {
        const i64 j1 = std::min(n, j0 + bs);
        gemm(true, false, j1 - j0, dh, n - j0, 1.0f, pr + j0 * n + j0, n, do_h + j0 * dq, dq, 0.0f, dv_h + j0 * ld_kv,
             ld_kv);  // dV = Pᵀ·dO
        gemm(true, false, j1 - j0, dh, n - j0, 1.0f, ds + j0 * n + j0, n, q_h + j0 * dq, dq, 0.0f, dk_h + j0 * ld_kv,
             ld_kv);  // dK = dSᵀ·Q
      }
    });
    if (group == 1) return;
    // dK, dV of a kv head = Σ over its group's heads.
    pool.parallel_for(m, row_grain(m), [&](i64 r0, i64 r1) {
      for (i64 row = r0; row < r1; ++row) {
        const i64 b = row / n, i = row % n;
        for (i64 kv = 0; kv < dkv / dh; ++kv) {
          float* gk = grad_k.data() + row * dkv + kv * dh;
          float* gv = grad_v.data() + row * dkv + kv * dh;
          std::fill(gk, gk + dh, 0.0f);
          std::fill(gv, gv + dh, 0.0f);
          for (i64 head = kv * group; head < (kv + 1) * group; ++head) {
            const i64 off = ((b * H + head) * n + i) * dh;
            cpu::axpy(1.0f, dk_heads.data() + off, gk, dh);
            cpu::axpy(1.0f, dv_heads.data() + off, gv, dh);
          }
        }
      }
    });
  }

  // The block's backward: given dy [m, d], writes dxin [m, d] (the residual included) and the
  // block's weight gradients. xin is the block's input (x or the gathered x̃).
  void block_backward(const layer_params& p, const saved_activations& s, const float* xin, i64 n, const float* dy,
                      float* dxin, layer_grads& g) {
    const auto& sh = p.shape;
    const i64 B = sh.batch, m = B * n, d = sh.d_model, f = sh.d_ff, H = sh.n_heads, dh = sh.d_head;
    const i64 dq = sh.d_q(), dkv = sh.d_kv(), group = sh.n_heads / sh.n_kv_heads;
    const bool swiglu = sh.mlp == mlp_kind::swiglu;
    fit(grad_h, m * d);
    fit(du, m * d);
    fit(grad_attn, m * dq);
    fit(grad_q, m * dq);
    fit(grad_k, m * dkv);
    fit(grad_v, m * dkv);
    fit(da, m * d);

    // MLP: y = h + MLP(u).
    if (sh.variant == moe_variant::none)
      mlp_backward(s.mlp_in.data(), m, p.w_up.data(), p.w_gate.data(), p.w_down.data(), s.up.data(), s.gate.data(),
                   s.act.data(), dy, du.data(), g.w_up.data(), g.w_gate.data(), g.w_down.data(), swiglu, d, f);
    else
      moe_backward(p, s, m, dy, g);
    copy(dy, grad_h.data(), m * d);
    rms_norm_backward(s.h.data(), p.mlp_norm_g.data(), du.data(), grad_h.data(), g.mlp_norm_g.data(), m, d);

    // Attention: h = xin + attn_out·W_o.
    weight_grad(m, dq, d, s.attn_out.data(), grad_h.data(), g.w_o.data());
    gemm(false, true, m, dq, d, 1.0f, grad_h.data(), d, p.w_o.data(), dq, 0.0f, grad_attn.data(), dq);
    attention_backward(s, B, n, dh, H, group, dq, dkv);
    weight_grad(m, d, dq, s.attn_in.data(), grad_q.data(), g.w_q.data());
    weight_grad(m, d, dkv, s.attn_in.data(), grad_k.data(), g.w_k.data());
    weight_grad(m, d, dkv, s.attn_in.data(), grad_v.data(), g.w_v.data());
    gemm(false, true, m, d, dq, 1.0f, grad_q.data(), dq, p.w_q.data(), dq, 0.0f, da.data(), d);
    gemm(false, true, m, d, dkv, 1.0f, grad_k.data(), dkv, p.w_k.data(), dkv, 1.0f, da.data(), d);
    gemm(false, true, m, d, dkv, 1.0f, grad_v.data(), dkv, p.w_v.data(), dkv, 1.0f, da.data(), d);
    copy(grad_h.data(), dxin, m * d);
    rms_norm_backward(xin, p.attn_norm_g.data(), da.data(), dxin, g.attn_norm_g.data(), m, d);
  }

  void layer_backward(const layer_params& p, const saved_activations& s, const float* x, const float* dout, float* dx,
                      layer_grads& g) {
    const auto& sh = p.shape;
    const i64 T = sh.tokens(), d = sh.d_model, S = sh.seq_len;
    if (!p.routed) {
      block_backward(p, s, x, S, dout, dx, g);
      return;
    }
    const i64 k = sh.routed_tokens(), m = sh.batch * k;
    fit(xt, m * d);
    fit(grad_y, m * d);
    fit(dxt, m * d);
    fit(dr, m);
    const auto row_of = [&](i64 j) { return (j / k) * S + s.routed_index[static_cast<std::size_t>(j)]; };
    // out_i = x_i + r_i·(y_j − x̃_j): dy_j = r_i·dout_i, dr_i = ⟨dout_i, y_j − x̃_j⟩.
    pool.parallel_for(m, std::max<i64>(16, m / pool.size() + 1), [&](i64 j0, i64 j1) {
      for (i64 j = j0; j < j1; ++j) {
        const i64 row = row_of(j);
        const float* go = dout + row * d;
        float* xj = xt.data() + j * d;
        std::memcpy(xj, x + row * d, static_cast<std::size_t>(d) * sizeof(float));
        const float rj = s.routed_r[static_cast<std::size_t>(j)];
        const float* yj = s.y.data() + j * d;
        float* dyj = grad_y.data() + j * d;
        float sum = 0.0f;
        for (i64 c = 0; c < d; ++c) {
          sum += go[c] * (yj[c] - xj[c]);
          dyj[c] = rj * go[c];
        }
        dr[static_cast<std::size_t>(j)] = sum;
      }
    });
    block_backward(p, s, xt.data(), k, grad_y.data(), dxt.data(), g);
    // dL/dw = Σ_j dr_j·x̃_j (skipped tokens have no router gradient).
    cblas_sgemv(CblasRowMajor, CblasTrans, i32(m), i32(d), 1.0f, xt.data(), i32(d), dr.data(), 1, 0.0f,
                g.router_w.data(), 1);
    copy(dout, dx, T * d);
    const float* w = p.router_w.data();
    pool.parallel_for(m, std::max<i64>(16, m / pool.size() + 1), [&](i64 j0, i64 j1) {
      for (i64 j = j0; j < j1; ++j) {
        const i64 row = row_of(j);
        const float rj = s.routed_r[static_cast<std::size_t>(j)];
        // dx_i = dout_i (the identity) + dx̃_j − r_i·dout_i (the −x̃ of Δ) + dr_i·w (r = w·x).
        float* dxi = dx + row * d;
        const float* dxj = dxt.data() + j * d;
        const float drj = dr[static_cast<std::size_t>(j)];
        for (i64 c = 0; c < d; ++c) dxi[c] += dxj[c] - rj * dout[row * d + c] + drj * w[c];
      }
    });
  }
};

cpu_trainer::cpu_trainer(int threads) {
  if (threads < 0) throw input_error("", "threads", "must not be negative, got " + std::to_string(threads));
  if (threads == 0) threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  m_impl = std::make_unique<impl>(threads);
  openblas_set_num_threads(threads);
}

cpu_trainer::~cpu_trainer() = default;

void cpu_trainer::forward(const layer_params& params, std::span<const float> x, std::span<float> out,
                          saved_activations& saved, recompute mode) {
  check_params(params);
  const i64 td = params.shape.tokens() * params.shape.d_model;
  check_span(x.size(), td, "x");
  check_span(out.size(), td, "out");
  m_impl->ensure_blas_threads();
  saved.mode = mode;
  fit(saved.x, td);
  m_impl->copy(x.data(), saved.x.data(), td);
  if (mode == recompute::full) {
    m_impl->layer_forward(params, x.data(), out.data(), m_impl->recomputed, false);
    for (auto* v :
         {&saved.routed_r, &saved.attn_in, &saved.q, &saved.k, &saved.v, &saved.probs, &saved.attn_out, &saved.h,
          &saved.mlp_in, &saved.up, &saved.gate, &saved.act, &saved.y, &saved.expert_probs, &saved.expert_out})
      v->clear();
    saved.routed_index.clear();
    saved.expert_index.clear();
    return;
  }
  m_impl->layer_forward(params, x.data(), out.data(), saved, mode == recompute::none);
}

void cpu_trainer::backward(const layer_params& params, const saved_activations& saved, std::span<const float> dout,
                           std::span<float> dx, layer_grads& grads) {
  check_params(params);
  const i64 td = params.shape.tokens() * params.shape.d_model;
  check_span(saved.x.size(), td, "saved.x");
  check_span(dout.size(), td, "dout");
  check_span(dx.size(), td, "dx");
  m_impl->ensure_blas_threads();
  const auto sizes = tensor_sizes(params.shape, params.routed);
  grads.shape = params.shape;
  grads.routed = params.routed;
  const auto gt = grads.tensors();
  for (std::size_t i = 0; i < sizes.size(); ++i) fit(*gt[i], sizes[i]);
  const saved_activations* s = &saved;
  if (saved.mode == recompute::full) {
    // The layer's forward again, keeping everything; its output is not needed (dx is scratch
    // until the backward writes it).
    m_impl->layer_forward(params, saved.x.data(), dx.data(), m_impl->recomputed, true);
    s = &m_impl->recomputed;
  }
  m_impl->layer_backward(params, *s, saved.x.data(), dout.data(), dx.data(), grads);
}

double cpu_trainer::predictor_backward(const predictor_params& p, const block_shape& shape, std::span<const float> x,
                                       std::span<const std::int32_t> routed_index, predictor_grads& grads) {
  shape.validate();
  check_predictor_inputs(p, shape, x, routed_index);
  const i64 T = shape.tokens(), d = shape.d_model, hd = p.hidden, S = shape.seq_len, k = shape.routed_tokens();
  auto& im = *m_impl;
  im.ensure_blas_threads();
  fit(im.pred_hidden, T * hd);
  fit(im.pred_dhidden, T * hd);
  fit(im.pred_logits, T);
  fit(im.pred_dlogits, T);
  grads.d_model = d;
  grads.hidden = hd;
  fit(grads.w1, d * hd);
  fit(grads.w2, hd);
  // Targets: 1 at the routed positions (written into pred_dlogits first).
  float* target = im.pred_dlogits.data();
  std::fill(target, target + T, 0.0f);
  for (i64 j = 0; j < shape.batch * k; ++j) {
    const std::int32_t pos = routed_index[static_cast<std::size_t>(j)];
    if (pos < 0 || pos >= S) throw input_error("", "routed_index", "holds position " + std::to_string(pos));
    target[(j / k) * S + pos] = 1.0f;
  }
  float* hidden = im.pred_hidden.data();
  gemm(false, false, T, hd, d, 1.0f, x.data(), d, p.w1.data(), hd, 0.0f, hidden, hd);
  im.pool.parallel_for(T * hd, im.elem_grain(T * hd), [&](i64 b, i64 e) {
    for (i64 i = b; i < e; ++i) hidden[i] = std::max(hidden[i], 0.0f);
  });
  float* logits = im.pred_logits.data();
  std::fill(logits, logits + T, p.bias);
  cblas_sgemv(CblasRowMajor, CblasNoTrans, i32(T), i32(hd), 1.0f, hidden, i32(hd), p.w2.data(), 1, 1.0f, logits, 1);
  // BCE with logits, per token: max(p, 0) − t·p + log(1 + e^−|p|); dL/dp = (σ(p) − t) / T.
  double loss = 0.0, dbias = 0.0;
  const float inv_t = 1.0f / static_cast<float>(T);
  for (i64 i = 0; i < T; ++i) {
    const double z = logits[i], t = target[i];
    loss += std::max(z, 0.0) - t * z + std::log1p(std::exp(-std::abs(z)));
    const float dz = (1.0f / (1.0f + std::exp(-logits[i])) - target[i]) * inv_t;
    target[i] = dz;  // pred_dlogits now holds dL/dp
    dbias += dz;
  }
  const float* dlogits = im.pred_dlogits.data();
  grads.bias = static_cast<float>(dbias);
  cblas_sgemv(CblasRowMajor, CblasTrans, i32(T), i32(hd), 1.0f, hidden, i32(hd), dlogits, 1, 0.0f, grads.w2.data(), 1);
  float* dhidden = im.pred_dhidden.data();
  const float* w2 = p.w2.data();
  im.pool.parallel_for(T, im.row_grain(T), [&](i64 r0, i64 r1) {
    for (i64 r = r0; r < r1; ++r)
      for (i64 c = 0; c < hd; ++c) dhidden[r * hd + c] = hidden[r * hd + c] > 0.0f ? dlogits[r] * w2[c] : 0.0f;
  });
  weight_grad(T, d, hd, x.data(), dhidden, grads.w1.data());
  return loss / static_cast<double>(T);
}

void cpu_trainer::adamw_step(layer_params& params, const layer_grads& grads, adamw_state& state,
                             const adamw_options& o) {
  check_params(params);
  if (grads.parameter_count() != params.parameter_count())
    throw input_error("", "layer_grads", "do not match the parameters' sizes");
  if (state.m.parameter_count() != params.parameter_count()) {
    state.m = zero_params(params.shape, params.routed);
    state.v = zero_params(params.shape, params.routed);
    state.step = 0;
  }
  ++state.step;
  const double t = static_cast<double>(state.step);
  const auto lr = static_cast<float>(o.lr), b1 = static_cast<float>(o.beta1), b2 = static_cast<float>(o.beta2);
  const auto eps = static_cast<float>(o.eps), decay = static_cast<float>(o.lr * o.weight_decay);
  const auto c1 = static_cast<float>(1.0 / (1.0 - std::pow(o.beta1, t)));
  const auto c2 = static_cast<float>(1.0 / (1.0 - std::pow(o.beta2, t)));
  const auto pt = params.tensors();
  const auto gt = grads.tensors();
  const auto mt = state.m.tensors();
  const auto vt = state.v.tensors();
  for (std::size_t i = 0; i < pt.size(); ++i) {
    float* p = pt[i]->data();
    const float* g = gt[i]->data();
    float* m = mt[i]->data();
    float* v = vt[i]->data();
    const auto count = static_cast<i64>(pt[i]->size());
    m_impl->pool.parallel_for(count, m_impl->elem_grain(count), [&](i64 b, i64 e) {
      cpu::adamw_update(p + b, g + b, m + b, v + b, e - b, b1, b2, c1, c2, lr, eps, decay);
    });
  }
}

}  // namespace modsim::kernels::train
