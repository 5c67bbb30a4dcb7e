// One layer's training step on CUDA (kernels/cuda_train.hpp), composed as the CPU reference
// (kernels/cpu/train.cpp) composes it, op for op: cuBLAS for every GEMM (the projections'
// dgrad and wgrad, attention's per-(sequence, head) products through device pointer arrays),
// the kernels of train_ops.cu for the rest, the forward ops' kernels (router, top-k, gather,
// RMSNorm, causal softmax) where the forward is the backend's.
#include "kernels/cuda/train.cuh"

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/expert_router.cuh"
#include "kernels/cuda/gather.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/router.cuh"
#include "kernels/cuda/softmax.cuh"
#include "kernels/cuda/topk.cuh"
#include "kernels/cuda/train_ops.cuh"
#include "kernels/train_tensors.hpp"
#include "core/error.hpp"

namespace modsim::kernels::train {

namespace {

using i64 = std::int64_t;
using cuda::gemm_args;
using cuda::detail::device_buffer;
using cuda::detail::device_context;

// Positions in layer_params::tensors().
enum param_index : std::size_t {
  p_router_w = 0,
  p_attn_norm_g,
  p_w_q,
  p_w_k,
  p_w_v,
  p_w_o,
  p_mlp_norm_g,
  p_w_up,
  p_w_gate,
  p_w_down,
  p_expert_router_w,
  p_expert_w_up,
  p_expert_w_gate,
  p_expert_w_down,
  param_count
};

// The per-(sequence, head) operands of attention, one device pointer array each.
enum attention_operand : std::size_t { a_q, a_k, a_v, a_p, a_o, a_do, a_dp, a_dq, a_dk, a_dv, operand_count };

}  // namespace

struct cuda_trainer::impl {
  struct parameter {
    i64 count = 0;
    device_buffer master, copy, grad, m, v;  // copy: bf16 only (fp32 GEMMs read master)
  };

  std::shared_ptr<device_context> ctx;
  block_shape sh;
  bool routed = false;
  dtype t = dtype::fp32;
  std::size_t es = 4;
  i64 T = 0, d = 0, S = 0, n = 0, m = 0, k = 0, dq = 0, dkv = 0, f = 0, H = 0, KV = 0, dh = 0, group = 1;
  bool swiglu = false, moe = false;
  i64 E = 0, Et = 0, capacity = 0;  // MoE MLP: real experts, router outputs, tokens per expert
  float scale = 1.0f;
  std::array<parameter, param_count> p;
  device_buffer staging;  // fp32 [T, d]
  // Forward (type t unless noted).
  device_buffer x, out, r /*f32 [T]*/, index /*i32 [B, k]*/, rr /*f32 [m]*/, xt, attn_in, q, kb, vb, probs, attn_out, h,
      mlp_in, up, gate, act, y;
  // Backward.
  device_buffer dout, dx, gy, dr /*f32 [m]*/, dact, dup, dgate, du, gh, gattn, dprobs, gq, gk_full, gv_full, gk, gv, da,
      dxt, inv /*f32 [m]*/;
  // MoE MLP (fp32 unless noted): expert logits and their softmax [m, Et], the chosen expert
  // (i32 [m]) and its gate [m], the kept rows grouped by expert (i32 [m]; host copy and the
  // E + 1 group offsets beside it), the experts' inputs and outputs and their gradients (type
  // t, [m, d]), the logits' gradient (and its type-t copy under bf16).
  device_buffer e_logits, e_probs, e_index, e_gate, e_rows, expert_in, expert_out, d_expert_out, d_expert_in, d_elogits,
      d_elogits_t;
  std::vector<std::int32_t> host_index, host_rows;
  std::vector<i64> offsets;
  i64 kept = 0;
  std::vector<const void*> ptrs;  // operand_count groups of B·H pointers
  device_buffer dev_ptrs;
  bool aligned = false;
  bool have_forward = false;
  recompute mode = recompute::none;
  i64 adam_step = 0;

  // Throws bad_input for what the trainer cannot take; touches no device.
  static void validate(const layer_params& params, dtype type) {
    if (type != dtype::fp32 && type != dtype::bf16)
      throw input_error("", "dtype", "CUDA training runs fp32 and bf16, got " + std::string(to_string(type)));
    if (params.shape.variant != moe_variant::none && params.shape.experts > cuda::max_experts)
      throw input_error("", "block_shape.experts",
                        "CUDA training takes at most " + std::to_string(cuda::max_experts) + " experts, got " +
                            std::to_string(params.shape.experts));
    const layer_params zero = zero_params(params.shape, params.routed);  // validates the shape
    const auto want = zero.tensors();
    const auto have = params.tensors();
    for (std::size_t i = 0; i < param_count; ++i)
      check_span(have[i]->size(), static_cast<i64>(want[i]->size()),
                 (std::string("layer_params.") + tensor_names[i]).c_str());
  }

  impl(std::shared_ptr<device_context> context, const layer_params& params, dtype type)
      : ctx(std::move(context)), sh(params.shape), routed(params.routed), t(type) {
    validate(params, type);
    const auto have = params.tensors();
    es = t == dtype::bf16 ? 2 : 4;
    T = sh.tokens();
    d = sh.d_model;
    S = sh.seq_len;
    k = routed ? sh.routed_tokens() : 0;
    n = routed ? k : S;
    m = sh.batch * n;
    dq = sh.d_q();
    dkv = sh.d_kv();
    f = sh.d_ff;
    H = sh.n_heads;
    KV = sh.n_kv_heads;
    dh = sh.d_head;
    group = H / KV;
    swiglu = sh.mlp == mlp_kind::swiglu;
    moe = sh.variant != moe_variant::none;
    if (moe) {
      E = sh.experts;
      Et = sh.router_experts();
      capacity = sh.expert_capacity(m);
    }
    scale = 1.0f / std::sqrt(static_cast<float>(dh));
    ctx->make_current();
    const cudaStream_t st = ctx->stream;
    for (std::size_t i = 0; i < param_count; ++i) {
      auto& q_ = p[i];
      q_.count = static_cast<i64>(have[i]->size());
      const auto bytes = static_cast<std::size_t>(q_.count) * 4;
      q_.master = device_buffer(bytes, st);
      q_.grad = device_buffer(bytes, st);
      q_.m = device_buffer(bytes, st);
      q_.v = device_buffer(bytes, st);
      if (t == dtype::bf16) q_.copy = device_buffer(static_cast<std::size_t>(q_.count) * es, st);
      if (q_.count > 0)
        MODSIM_CUDA_CHECK(cudaMemcpyAsync(q_.master.get(), have[i]->data(), bytes, cudaMemcpyHostToDevice, st));
      if (t == dtype::bf16) cuda::convert_from_f32(t, q_.master.as<float>(), q_.copy.get(), q_.count, st);
    }
    const auto act_buf = [&](i64 elements) { return device_buffer(static_cast<std::size_t>(elements) * es, st); };
    const auto f32_buf = [&](i64 elements) { return device_buffer(static_cast<std::size_t>(elements) * 4, st); };
    const i64 B = sh.batch, nn = B * H * n * n;
    staging = f32_buf(T * d);
    x = act_buf(T * d);
    out = act_buf(T * d);
    dout = act_buf(T * d);
    dx = act_buf(T * d);
    if (routed) {
      r = f32_buf(T);
      index = device_buffer(static_cast<std::size_t>(m) * sizeof(std::int32_t), st);
      rr = f32_buf(m);
      xt = act_buf(m * d);
      y = act_buf(m * d);
      gy = act_buf(m * d);
      dr = f32_buf(m);
      dxt = act_buf(m * d);
    }
    attn_in = act_buf(m * d);
    q = act_buf(m * dq);
    kb = act_buf(m * dkv);
    vb = act_buf(m * dkv);
    probs = act_buf(nn);
    attn_out = act_buf(m * dq);
    h = act_buf(m * d);
    mlp_in = act_buf(m * d);
    up = act_buf(m * f);
    if (swiglu) gate = act_buf(m * f);
    act = act_buf(m * f);
    dact = act_buf(m * f);
    dup = act_buf(m * f);
    if (swiglu) dgate = act_buf(m * f);
    du = act_buf(m * d);
    gh = act_buf(m * d);
    gattn = act_buf(m * dq);
    dprobs = act_buf(nn);
    gq = act_buf(m * dq);
    gk = act_buf(m * dkv);
    gv = act_buf(m * dkv);
    if (group > 1) {
      gk_full = act_buf(m * dq);
      gv_full = act_buf(m * dq);
    }
    da = act_buf(m * d);
    inv = f32_buf(m);
    if (moe) {
      e_logits = f32_buf(m * Et);
      e_probs = f32_buf(m * Et);
      e_index = device_buffer(static_cast<std::size_t>(m) * sizeof(std::int32_t), st);
      e_gate = f32_buf(m);
      e_rows = device_buffer(static_cast<std::size_t>(m) * sizeof(std::int32_t), st);
      expert_in = act_buf(m * d);
      expert_out = act_buf(m * d);
      d_expert_out = act_buf(m * d);
      d_expert_in = act_buf(m * d);
      d_elogits = f32_buf(m * Et);
      if (t == dtype::bf16) d_elogits_t = act_buf(m * Et);
    }
    build_pointers();
    ctx->synchronize();
  }

  // Attention's operands for pair bh = b·H + head (kv = head / group): Q, dO, dQ and the
  // per-head K and V gradients at the query head's columns, K and V at the KV head's, P and dP
  // the pair's n×n matrices.
  void build_pointers() {
    const i64 B = sh.batch, pairs = B * H;
    ptrs.assign(static_cast<std::size_t>(operand_count * pairs), nullptr);
    void* dk_target = group > 1 ? gk_full.get() : gk.get();
    void* dv_target = group > 1 ? gv_full.get() : gv.get();
    aligned = true;
    const auto at = [&](const void* base, i64 elements) {
      const char* ptr = static_cast<const char*>(base) + static_cast<std::size_t>(elements) * es;
      if (reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0) aligned = false;
      return static_cast<const void*>(ptr);
    };
    for (i64 bh = 0; bh < pairs; ++bh) {
      const i64 b = bh / H, head = bh % H, kv = head / group;
      const i64 q_off = b * n * dq + head * dh, kv_off = b * n * dkv + kv * dh, s_off = bh * n * n;
      const i64 dkv_off = group > 1 ? q_off : kv_off;
      const auto set = [&](attention_operand o, const void* v) { ptrs[static_cast<std::size_t>(o * pairs + bh)] = v; };
      set(a_q, at(q.get(), q_off));
      set(a_k, at(kb.get(), kv_off));
      set(a_v, at(vb.get(), kv_off));
      set(a_p, at(probs.get(), s_off));
      set(a_o, at(attn_out.get(), q_off));
      set(a_do, at(gattn.get(), q_off));
      set(a_dp, at(dprobs.get(), s_off));
      set(a_dq, at(gq.get(), q_off));
      set(a_dk, at(dk_target, dkv_off));
      set(a_dv, at(dv_target, dkv_off));
    }
    if (aligned && pairs > 0) {
      dev_ptrs = device_buffer(ptrs.size() * sizeof(void*), ctx->stream);
      MODSIM_CUDA_CHECK(cudaMemcpyAsync(dev_ptrs.get(), ptrs.data(), ptrs.size() * sizeof(void*),
                                        cudaMemcpyHostToDevice, ctx->stream));
    }
  }

  // Leading dimension of the per-head K/V gradient targets.
  i64 dkv_ld() const { return group > 1 ? dq : dkv; }

  // One GEMM per (sequence, head) pair: C_bh = alpha·op(A_bh)·op(B_bh) + beta·C_bh.
  void per_pair(gemm_args g, attention_operand a, attention_operand b, attention_operand c) {
    const i64 pairs = sh.batch * H;
    g.ab = t;
    g.c = t;
    if (aligned) {
      const auto* base = static_cast<const void* const*>(dev_ptrs.get());
      cuda::gemm_pointer_batched(ctx->cublas, g, base + a * pairs, base + b * pairs,
                                 const_cast<void* const*>(base + c * pairs), pairs);
      return;
    }
    for (i64 bh = 0; bh < pairs; ++bh) {
      g.a = ptrs[static_cast<std::size_t>(a * pairs + bh)];
      g.b = ptrs[static_cast<std::size_t>(b * pairs + bh)];
      g.c_ptr = const_cast<void*>(ptrs[static_cast<std::size_t>(c * pairs + bh)]);
      cuda::gemm(ctx->cublas, g);
    }
  }

  // The weights the GEMMs read (type t).
  const void* w(std::size_t i) const { return t == dtype::bf16 ? p[i].copy.get() : p[i].master.get(); }

  // Element `offset` of a type-t buffer.
  const void* at_t(const void* base, i64 offset) const { return static_cast<const char*>(base) + offset * es; }
  void* at_t(void* base, i64 offset) const { return static_cast<char*>(base) + offset * es; }

  // C[rows, cols] (type t) = A[rows, inner]·W[inner, cols] + beta·C.
  void project(const void* a, i64 rows, i64 inner, std::size_t wi, i64 cols, void* c, float beta) {
    project_w(a, rows, inner, w(wi), cols, c, beta);
  }
  void project_w(const void* a, i64 rows, i64 inner, const void* weights, i64 cols, void* c, float beta) {
    cuda::project(ctx->cublas, t, a, rows, inner, weights, cols, c, t, beta);
  }

  // dA[rows, inner] (type t) = dC[rows, cols]·Wᵀ + beta·dA, W [inner, cols].
  void dgrad(const void* dc, i64 rows, i64 cols, std::size_t wi, i64 inner, void* da_, float beta) {
    dgrad_w(dc, rows, cols, w(wi), inner, da_, beta);
  }
  void dgrad_w(const void* dc, i64 rows, i64 cols, const void* weights, i64 inner, void* da_, float beta) {
    gemm_args g;
    g.ab = g.c = t;
    g.m = rows;
    g.n = inner;
    g.k = cols;
    g.beta = beta;
    g.a = dc;
    g.lda = cols;
    g.b = weights;
    g.ldb = cols;
    g.b_transposed = true;
    g.c_ptr = da_;
    g.ldc = inner;
    cuda::gemm(ctx->cublas, g);
  }

  // dW[inner, cols] (fp32, overwritten) = Aᵀ·dC, A [rows, inner], dC [rows, cols] (type t).
  void wgrad(const void* a, i64 rows, i64 inner, const void* dc, i64 cols, std::size_t wi) {
    wgrad_to(a, rows, inner, dc, cols, p[wi].grad.as<float>());
  }
  void wgrad_to(const void* a, i64 rows, i64 inner, const void* dc, i64 cols, float* dw) {
    gemm_args g;
    g.ab = t;
    g.c = dtype::fp32;
    g.m = inner;
    g.n = cols;
    g.k = rows;
    g.a = a;
    g.lda = inner;
    g.a_transposed = true;
    g.b = dc;
    g.ldb = cols;
    g.c_ptr = dw;
    g.ldc = cols;
    cuda::gemm(ctx->cublas, g);
  }

  void copy_act(const void* src, void* dst, i64 elements) {
    MODSIM_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, static_cast<std::size_t>(elements) * es, cudaMemcpyDeviceToDevice, ctx->stream));
  }

  // probs = causal softmax(Q·Kᵀ·scale) per pair.
  void attention_probs() {
    gemm_args g;
    g.m = n;
    g.n = n;
    g.k = dh;
    g.alpha = scale;
    g.lda = dq;
    g.ldb = dkv;
    g.b_transposed = true;
    g.ldc = n;
    per_pair(g, a_q, a_k, a_p);
    cuda::attn_softmax(t, probs.get(), sh.batch * H, n, ctx->stream);
  }

  const void* block_in() const { return routed ? xt.get() : x.get(); }
  void* block_out() const { return routed ? y.get() : out.get(); }

  // One MLP's backward over `rows` rows of u starting at row `first` of the MLP buffers (up,
  // gate, act, dact, dup, dgate): weight gradients into g_up/g_gate/g_down (fp32), du [rows, d]
  // (type t, overwritten) from d_out [rows, d].
  void mlp_backward(const void* u, i64 rows, const void* w_up, const void* w_gate, const void* w_down, i64 first,
                    const void* d_out, void* du_, float* g_up, float* g_gate, float* g_down) {
    const i64 o = first * f;
    dgrad_w(d_out, rows, d, w_down, f, at_t(dact.get(), o), 0.0f);
    wgrad_to(at_t(act.get(), o), rows, f, d_out, d, g_down);
    cuda::mlp_act_backward(t, swiglu, at_t(up.get(), o), swiglu ? at_t(gate.get(), o) : nullptr, at_t(dact.get(), o),
                           at_t(dup.get(), o), swiglu ? at_t(dgate.get(), o) : nullptr, rows * f, ctx->stream);
    wgrad_to(u, rows, d, at_t(dup.get(), o), f, g_up);
    dgrad_w(at_t(dup.get(), o), rows, f, w_up, d, du_, 0.0f);
    if (swiglu) {
      wgrad_to(u, rows, d, at_t(dgate.get(), o), f, g_gate);
      dgrad_w(at_t(dgate.get(), o), rows, f, w_gate, d, du_, 1.0f);
    }
  }

  // The MoE MLP on u = mlp_in: y (holding h) += gate·expert(u) for the rows real experts keep.
  // Reads the choices back to the host to group the kept rows by expert (one synchronization).
  void moe_forward(void* yb) {
    const cudaStream_t st = ctx->stream;
    gemm_args g;  // logits [m, Et] fp32 = u·W_router
    g.ab = t;
    g.c = dtype::fp32;
    g.m = m;
    g.n = Et;
    g.k = d;
    g.a = mlp_in.get();
    g.lda = d;
    g.b = w(p_expert_router_w);
    g.ldb = Et;
    g.c_ptr = e_logits.get();
    g.ldc = Et;
    cuda::gemm(ctx->cublas, g);
    cuda::softmax_rows(e_logits.as<float>(), e_probs.as<float>(), m, Et, st);
    cuda::expert_choice(e_logits.as<float>(), e_index.as<std::int32_t>(), e_gate.as<float>(), m, static_cast<int>(Et),
                        static_cast<int>(E), capacity, st);
    host_index.resize(static_cast<std::size_t>(m));
    MODSIM_CUDA_CHECK(cudaMemcpyAsync(host_index.data(), e_index.get(), host_index.size() * sizeof(std::int32_t),
                                      cudaMemcpyDeviceToHost, st));
    ctx->synchronize();
    offsets.assign(static_cast<std::size_t>(E + 1), 0);
    for (const std::int32_t e : host_index)
      if (e >= 0 && e < E) ++offsets[static_cast<std::size_t>(e) + 1];
    for (i64 e = 0; e < E; ++e) offsets[static_cast<std::size_t>(e + 1)] += offsets[static_cast<std::size_t>(e)];
    kept = offsets[static_cast<std::size_t>(E)];
    host_rows.resize(static_cast<std::size_t>(kept));
    std::vector<i64> fill(offsets.begin(), offsets.end() - 1);
    for (i64 row = 0; row < m; ++row) {
      const std::int32_t e = host_index[static_cast<std::size_t>(row)];
      if (e >= 0 && e < E)
        host_rows[static_cast<std::size_t>(fill[static_cast<std::size_t>(e)]++)] = static_cast<std::int32_t>(row);
    }
    if (kept > 0)
      MODSIM_CUDA_CHECK(cudaMemcpyAsync(e_rows.get(), host_rows.data(), host_rows.size() * sizeof(std::int32_t),
                                        cudaMemcpyHostToDevice, st));
    const auto* rows = e_rows.as<std::int32_t>();
    cuda::copy_rows(t, mlp_in.get(), rows, expert_in.get(), kept, d, st);
    for (i64 e = 0; e < E; ++e) {
      const i64 off = offsets[static_cast<std::size_t>(e)], cnt = offsets[static_cast<std::size_t>(e + 1)] - off;
      if (cnt == 0) continue;
      const void* in = at_t(expert_in.get(), off * d);
      project_w(in, cnt, d, at_t(w(p_expert_w_up), e * d * f), f, at_t(up.get(), off * f), 0.0f);
      if (swiglu) project_w(in, cnt, d, at_t(w(p_expert_w_gate), e * d * f), f, at_t(gate.get(), off * f), 0.0f);
      cuda::mlp_act_forward(t, swiglu, at_t(up.get(), off * f), swiglu ? at_t(gate.get(), off * f) : nullptr,
                            at_t(act.get(), off * f), cnt * f, st);
      project_w(at_t(act.get(), off * f), cnt, f, at_t(w(p_expert_w_down), e * f * d), d,
                at_t(expert_out.get(), off * d), 0.0f);
    }
    cuda::moe_combine(t, expert_out.get(), rows, e_index.as<std::int32_t>(), e_probs.as<float>(), Et, yb, kept, d, st);
  }

  // The MoE MLP's backward given dy [m, d]: du (overwritten), the experts' gradients (zero for
  // an expert that took no token) and the expert router's (through the gate).
  void moe_backward(const void* dy) {
    const cudaStream_t st = ctx->stream;
    const auto* rows = e_rows.as<std::int32_t>();
    MODSIM_CUDA_CHECK(cudaMemsetAsync(d_elogits.get(), 0, static_cast<std::size_t>(m * Et) * 4, st));
    cuda::moe_backward_rows(t, dy, expert_out.get(), rows, e_index.as<std::int32_t>(), e_probs.as<float>(), Et,
                            d_expert_out.get(), d_elogits.as<float>(), kept, d, st);
    for (const std::size_t i : {std::size_t{p_expert_w_up}, std::size_t{p_expert_w_gate}, std::size_t{p_expert_w_down}})
      if (p[i].count > 0)
        MODSIM_CUDA_CHECK(cudaMemsetAsync(p[i].grad.get(), 0, static_cast<std::size_t>(p[i].count) * 4, st));
    for (i64 e = 0; e < E; ++e) {
      const i64 off = offsets[static_cast<std::size_t>(e)], cnt = offsets[static_cast<std::size_t>(e + 1)] - off;
      if (cnt == 0) continue;
      mlp_backward(at_t(expert_in.get(), off * d), cnt, at_t(w(p_expert_w_up), e * d * f),
                   swiglu ? at_t(w(p_expert_w_gate), e * d * f) : nullptr, at_t(w(p_expert_w_down), e * f * d), off,
                   at_t(d_expert_out.get(), off * d), at_t(d_expert_in.get(), off * d),
                   p[p_expert_w_up].grad.as<float>() + e * d * f,
                   swiglu ? p[p_expert_w_gate].grad.as<float>() + e * d * f : nullptr,
                   p[p_expert_w_down].grad.as<float>() + e * f * d);
    }
    // The router: dW_r = uᵀ·d logits, du = d logits·W_rᵀ (+ each kept row's expert input gradient).
    const void* dl = d_elogits.get();
    if (t == dtype::bf16) {
      cuda::convert_from_f32(t, d_elogits.as<float>(), d_elogits_t.get(), m * Et, st);
      dl = d_elogits_t.get();
    }
    wgrad(mlp_in.get(), m, d, dl, Et, p_expert_router_w);
    dgrad(dl, m, Et, p_expert_router_w, d, du.get(), 0.0f);
    cuda::add_rows(t, d_expert_in.get(), rows, du.get(), kept, d, st);
  }

  void forward_pass() {
    const cudaStream_t st = ctx->stream;
    if (routed) {
      cuda::router(t, x.get(), w(p_router_w), r.as<float>(), T, d, st);
      cuda::topk(r.as<float>(), index.as<std::int32_t>(), sh.batch, S, k, st);
      cuda::gather(t, x.get(), r.as<float>(), index.as<std::int32_t>(), xt.get(), rr.as<float>(), sh.batch, S, k, d,
                   st);
    }
    const void* xin = block_in();
    cuda::rms_norm(t, xin, w(p_attn_norm_g), attn_in.get(), m, d, st);
    project(attn_in.get(), m, d, p_w_q, dq, q.get(), 0.0f);
    project(attn_in.get(), m, d, p_w_k, dkv, kb.get(), 0.0f);
    project(attn_in.get(), m, d, p_w_v, dkv, vb.get(), 0.0f);
    attention_probs();
    gemm_args g;
    g.m = n;
    g.n = dh;
    g.k = n;
    g.lda = n;
    g.ldb = dkv;
    g.ldc = dq;
    per_pair(g, a_p, a_v, a_o);
    copy_act(xin, h.get(), m * d);
    project(attn_out.get(), m, dq, p_w_o, d, h.get(), 1.0f);
    cuda::rms_norm(t, h.get(), w(p_mlp_norm_g), mlp_in.get(), m, d, st);
    void* yb = block_out();
    if (moe) {
      copy_act(h.get(), yb, m * d);
      moe_forward(yb);
    } else {
      project(mlp_in.get(), m, d, p_w_up, f, up.get(), 0.0f);
      if (swiglu) project(mlp_in.get(), m, d, p_w_gate, f, gate.get(), 0.0f);
      cuda::mlp_act_forward(t, swiglu, up.get(), gate.get(), act.get(), m * f, st);
      copy_act(h.get(), yb, m * d);
      project(act.get(), m, f, p_w_down, d, yb, 1.0f);
    }
    if (routed)
      cuda::routed_scatter_forward(t, x.get(), y.get(), xt.get(), rr.as<float>(), index.as<std::int32_t>(), out.get(),
                                   sh.batch, S, k, d, st);
  }

  void backward_pass() {
    const cudaStream_t st = ctx->stream;
    if (mode == recompute::full) forward_pass();
    const void* dy = dout.get();
    if (routed) {
      cuda::routed_scatter_backward(t, dout.get(), y.get(), xt.get(), rr.as<float>(), index.as<std::int32_t>(),
                                    gy.get(), dr.as<float>(), sh.batch, S, k, d, st);
      dy = gy.get();
    }
    const void* xin = block_in();
    // MLP: y = h + act·W_down (dense), or the experts' (MoE).
    if (moe) {
      moe_backward(dy);
    } else {
      mlp_backward(mlp_in.get(), m, w(p_w_up), w(p_w_gate), w(p_w_down), 0, dy, du.get(), p[p_w_up].grad.as<float>(),
                   p[p_w_gate].grad.as<float>(), p[p_w_down].grad.as<float>());
    }
    cuda::rms_norm_backward(t, h.get(), w(p_mlp_norm_g), du.get(), dy, gh.get(), inv.as<float>(), m, d, st);
    cuda::weighted_column_sum(t, du.get(), h.get(), inv.as<float>(), p[p_mlp_norm_g].grad.as<float>(), m, d, st);
    // Attention: h = xin + attn_out·W_o.
    wgrad(attn_out.get(), m, dq, gh.get(), d, p_w_o);
    dgrad(gh.get(), m, d, p_w_o, dq, gattn.get(), 0.0f);
    if (mode == recompute::selective) attention_probs();
    {
      gemm_args g;  // dP = dO·Vᵀ
      g.m = n;
      g.n = n;
      g.k = dh;
      g.lda = dq;
      g.ldb = dkv;
      g.b_transposed = true;
      g.ldc = n;
      per_pair(g, a_do, a_v, a_dp);
    }
    {
      gemm_args g;  // dV (per query head) = Pᵀ·dO
      g.m = n;
      g.n = dh;
      g.k = n;
      g.a_transposed = true;
      g.lda = n;
      g.ldb = dq;
      g.ldc = dkv_ld();
      per_pair(g, a_p, a_do, a_dv);
    }
    cuda::attn_softmax_backward(t, probs.get(), dprobs.get(), sh.batch * H, n, scale, st);
    {
      gemm_args g;  // dQ = dS·K
      g.m = n;
      g.n = dh;
      g.k = n;
      g.lda = n;
      g.ldb = dkv;
      g.ldc = dq;
      per_pair(g, a_dp, a_k, a_dq);
    }
    {
      gemm_args g;  // dK (per query head) = dSᵀ·Q
      g.m = n;
      g.n = dh;
      g.k = n;
      g.a_transposed = true;
      g.lda = n;
      g.ldb = dq;
      g.ldc = dkv_ld();
      per_pair(g, a_dp, a_q, a_dk);
    }
    if (group > 1) {  // GQA: a KV head's gradient is the sum over its query heads
      cuda::sum_head_groups(t, gk_full.get(), gk.get(), m, KV, group, dh, st);
      cuda::sum_head_groups(t, gv_full.get(), gv.get(), m, KV, group, dh, st);
    }
    wgrad(attn_in.get(), m, d, gq.get(), dq, p_w_q);
    wgrad(attn_in.get(), m, d, gk.get(), dkv, p_w_k);
    wgrad(attn_in.get(), m, d, gv.get(), dkv, p_w_v);
    dgrad(gq.get(), m, dq, p_w_q, d, da.get(), 0.0f);
    dgrad(gk.get(), m, dkv, p_w_k, d, da.get(), 1.0f);
    dgrad(gv.get(), m, dkv, p_w_v, d, da.get(), 1.0f);
    void* dxin = routed ? dxt.get() : dx.get();
    cuda::rms_norm_backward(t, xin, w(p_attn_norm_g), da.get(), gh.get(), dxin, inv.as<float>(), m, d, st);
    cuda::weighted_column_sum(t, da.get(), xin, inv.as<float>(), p[p_attn_norm_g].grad.as<float>(), m, d, st);
    if (routed) {
      // dL/dw = Σ_j dr_j·x̃_j; dx = dout + (dx̃ − r·dout + dr·w) on routed rows.
      cuda::weighted_column_sum(t, xt.get(), nullptr, dr.as<float>(), p[p_router_w].grad.as<float>(), m, d, st);
      cuda::routed_input_grad(t, dout.get(), dxt.get(), rr.as<float>(), dr.as<float>(),
                              p[p_router_w].master.as<float>(), index.as<std::int32_t>(), dx.get(), sh.batch, S, k, d,
                              st);
    }
  }

  void upload_act(std::span<const float> host, void* dst) {
    check_span(host.size(), T * d, "x");
    ctx->make_current();
    MODSIM_CUDA_CHECK(
        cudaMemcpyAsync(staging.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice, ctx->stream));
    cuda::convert_from_f32(t, staging.as<float>(), dst, T * d, ctx->stream);
    ctx->synchronize();  // staging is reused
  }

  void download_act(const void* src, std::span<float> host, const char* name) {
    check_span(host.size(), T * d, name);
    ctx->make_current();
    cuda::convert_to_f32(t, src, staging.as<float>(), T * d, ctx->stream);
    MODSIM_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), staging.get(), host.size() * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    ctx->synchronize();
  }

  // Each parameter-sized buffer (`member` of every parameter) into `dst`'s tensors.
  void download_params(device_buffer parameter::*member, layer_params& dst) {
    dst = zero_params(sh, routed);
    const auto tensors = dst.tensors();
    ctx->make_current();
    for (std::size_t i = 0; i < param_count; ++i)
      if (p[i].count > 0)
        MODSIM_CUDA_CHECK(cudaMemcpyAsync(tensors[i]->data(), (p[i].*member).get(),
                                          static_cast<std::size_t>(p[i].count) * 4, cudaMemcpyDeviceToHost,
                                          ctx->stream));
    ctx->synchronize();
  }
};

cuda_trainer::cuda_trainer(std::unique_ptr<impl> implementation) : m_impl(std::move(implementation)) {}

cuda_trainer::cuda_trainer(const layer_params& params, const cuda_train_options& options) {
  impl::validate(params, options.type);
  auto ctx = std::make_shared<device_context>(options.device);
  m_impl = std::make_unique<impl>(std::move(ctx), params, options.type);
}

cuda_trainer::~cuda_trainer() = default;

void cuda_trainer::set_input(std::span<const float> x) { m_impl->upload_act(x, m_impl->x.get()); }

void cuda_trainer::set_output_grad(std::span<const float> dout) { m_impl->upload_act(dout, m_impl->dout.get()); }

void cuda_trainer::forward(recompute mode) {
  m_impl->ctx->make_current();
  m_impl->mode = mode;
  m_impl->forward_pass();
  m_impl->have_forward = true;
}

void cuda_trainer::backward() {
  if (!m_impl->have_forward) throw input_error("", "backward", "needs a forward first");
  m_impl->ctx->make_current();
  m_impl->backward_pass();
}

void cuda_trainer::adamw_step(const adamw_options& o) {
  auto& im = *m_impl;
  im.ctx->make_current();
  ++im.adam_step;
  const double step = static_cast<double>(im.adam_step);
  cuda::adamw_coefficients c{};
  c.beta1 = static_cast<float>(o.beta1);
  c.beta2 = static_cast<float>(o.beta2);
  c.c1 = static_cast<float>(1.0 / (1.0 - std::pow(o.beta1, step)));
  c.c2 = static_cast<float>(1.0 / (1.0 - std::pow(o.beta2, step)));
  c.lr = static_cast<float>(o.lr);
  c.eps = static_cast<float>(o.eps);
  c.decay = static_cast<float>(o.lr * o.weight_decay);
  for (auto& q : im.p)
    cuda::adamw(im.t, q.master.as<float>(), q.grad.as<float>(), q.m.as<float>(), q.v.as<float>(),
                im.t == dtype::bf16 ? q.copy.get() : nullptr, q.count, c, im.ctx->stream);
}

void cuda_trainer::synchronize() {
  m_impl->ctx->make_current();
  m_impl->ctx->synchronize();
  MODSIM_CUDA_CHECK(cudaGetLastError());
}

void cuda_trainer::read_output(std::span<float> out) const { m_impl->download_act(m_impl->out.get(), out, "out"); }

void cuda_trainer::read_input_grad(std::span<float> dx) const { m_impl->download_act(m_impl->dx.get(), dx, "dx"); }

void cuda_trainer::read_grads(layer_grads& grads) const { m_impl->download_params(&impl::parameter::grad, grads); }

void cuda_trainer::read_params(layer_params& params) const {
  m_impl->download_params(&impl::parameter::master, params);
}

std::vector<std::int32_t> cuda_trainer::read_routed_index() const {
  auto& im = *m_impl;
  std::vector<std::int32_t> out(static_cast<std::size_t>(im.routed ? im.m : 0));
  if (out.empty()) return out;
  im.ctx->make_current();
  MODSIM_CUDA_CHECK(cudaMemcpyAsync(out.data(), im.index.get(), out.size() * sizeof(std::int32_t),
                                    cudaMemcpyDeviceToHost, im.ctx->stream));
  im.ctx->synchronize();
  return out;
}

double cuda_trainer::predictor_backward(const predictor_params& pp, std::span<const float> x,
                                        std::span<const std::int32_t> routed_index, predictor_grads& grads) {
  auto& im = *m_impl;
  const block_shape& shape = im.sh;
  check_predictor_inputs(pp, shape, x, routed_index);
  const i64 T = shape.tokens(), d = shape.d_model, hd = pp.hidden, S = shape.seq_len, k = shape.routed_tokens();
  im.ctx->make_current();
  const cudaStream_t st = im.ctx->stream;
  const auto f32 = [&](i64 elements) { return device_buffer(static_cast<std::size_t>(elements) * 4, st); };
  // Scratch of its own: the predictor is small and runs outside the timed layer step.
  device_buffer dx_ = f32(T * d), w1 = f32(d * hd), w2 = f32(hd), hidden = f32(T * hd), dhidden = f32(T * hd),
                logits = f32(T), target = f32(T), loss = f32(T), dz = f32(T), gw1 = f32(d * hd), gw2 = f32(hd);
  device_buffer idx(routed_index.size() * sizeof(std::int32_t), st);
  const auto up = [&](const void* src, device_buffer& dst, std::size_t bytes) {
    if (bytes > 0) MODSIM_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src, bytes, cudaMemcpyHostToDevice, st));
  };
  up(x.data(), dx_, x.size() * 4);
  up(pp.w1.data(), w1, pp.w1.size() * 4);
  up(pp.w2.data(), w2, pp.w2.size() * 4);
  up(routed_index.data(), idx, routed_index.size() * sizeof(std::int32_t));
  cuda::routed_targets(idx.as<std::int32_t>(), target.as<float>(), shape.batch, S, k, st);
  cuda::project(im.ctx->cublas, dtype::fp32, dx_.get(), T, d, w1.get(), hd, hidden.get(), dtype::fp32, 0.0f);
  cuda::relu_inplace(hidden.as<float>(), T * hd, st);
  const std::vector<float> bias(static_cast<std::size_t>(T), pp.bias);
  up(bias.data(), logits, bias.size() * 4);
  cuda::project(im.ctx->cublas, dtype::fp32, hidden.get(), T, hd, w2.get(), 1, logits.get(), dtype::fp32, 1.0f);
  cuda::bce_with_logits(logits.as<float>(), target.as<float>(), loss.as<float>(), dz.as<float>(), T, st);
  gemm_args g;  // dL/dw2 [hd] = hiddenᵀ·dz
  g.m = hd;
  g.n = 1;
  g.k = T;
  g.a = hidden.get();
  g.lda = hd;
  g.a_transposed = true;
  g.b = dz.get();
  g.ldb = 1;
  g.c_ptr = gw2.get();
  g.ldc = 1;
  cuda::gemm(im.ctx->cublas, g);
  cuda::predictor_hidden_grad(hidden.as<float>(), dz.as<float>(), w2.as<float>(), dhidden.as<float>(), T, hd, st);
  gemm_args g1;  // dL/dW1 [d, hd] = xᵀ·dhidden
  g1.m = d;
  g1.n = hd;
  g1.k = T;
  g1.a = dx_.get();
  g1.lda = d;
  g1.a_transposed = true;
  g1.b = dhidden.get();
  g1.ldb = hd;
  g1.c_ptr = gw1.get();
  g1.ldc = hd;
  cuda::gemm(im.ctx->cublas, g1);
  std::vector<float> host_loss(static_cast<std::size_t>(T)), host_dz(static_cast<std::size_t>(T));
  grads.d_model = d;
  grads.hidden = hd;
  grads.w1.resize(static_cast<std::size_t>(d * hd));
  grads.w2.resize(static_cast<std::size_t>(hd));
  MODSIM_CUDA_CHECK(cudaMemcpyAsync(host_loss.data(), loss.get(), host_loss.size() * 4, cudaMemcpyDeviceToHost, st));
  MODSIM_CUDA_CHECK(cudaMemcpyAsync(host_dz.data(), dz.get(), host_dz.size() * 4, cudaMemcpyDeviceToHost, st));
  MODSIM_CUDA_CHECK(cudaMemcpyAsync(grads.w1.data(), gw1.get(), grads.w1.size() * 4, cudaMemcpyDeviceToHost, st));
  MODSIM_CUDA_CHECK(cudaMemcpyAsync(grads.w2.data(), gw2.get(), grads.w2.size() * 4, cudaMemcpyDeviceToHost, st));
  im.ctx->synchronize();
  double total = 0.0, dbias = 0.0;
  for (std::size_t i = 0; i < host_loss.size(); ++i) {
    total += host_loss[i];
    dbias += host_dz[i];
  }
  grads.bias = static_cast<float>(dbias);
  return total / static_cast<double>(T);
}

std::int64_t cuda_trainer::device_bytes() const {
  const auto& im = *m_impl;
  std::size_t n = im.staging.bytes() + im.dev_ptrs.bytes();
  for (const auto& q : im.p) n += q.master.bytes() + q.copy.bytes() + q.grad.bytes() + q.m.bytes() + q.v.bytes();
  for (const device_buffer* b :
       {&im.x,     &im.out, &im.r,     &im.index,    &im.rr,     &im.xt,     &im.attn_in, &im.q,
        &im.kb,    &im.vb,  &im.probs, &im.attn_out, &im.h,      &im.mlp_in, &im.up,      &im.gate,
        &im.act,   &im.y,   &im.dout,  &im.dx,       &im.gy,     &im.dr,     &im.dact,    &im.dup,
        &im.dgate, &im.du,  &im.gh,    &im.gattn,    &im.dprobs, &im.gq,     &im.gk_full, &im.gv_full,
        &im.gk,    &im.gv,  &im.da,    &im.dxt,      &im.inv})
    n += b->bytes();
  return static_cast<std::int64_t>(n);
}

}  // namespace modsim::kernels::train

namespace modsim::kernels::cuda {

std::unique_ptr<train::cuda_trainer> make_trainer(std::shared_ptr<detail::device_context> ctx,
                                                  const train::layer_params& params, dtype type) {
  return std::make_unique<train::cuda_trainer>(
      std::make_unique<train::cuda_trainer::impl>(std::move(ctx), params, type));
}

}  // namespace modsim::kernels::cuda
