#pragma once
// The element-wise and reduction kernels of one layer's training step on CUDA
// (kernels/cuda/train.cu): the backward of RMSNorm, of the MLP activations and of the causal
// softmax, the MoD routing's scatter and its backward (the router's gradient), the GQA head
// sums, the AdamW step and dtype conversions. Activations and their gradients have the
// layer's dtype t (fp32 or bf16); norms' inverse RMS, router values and every parameter-sized
// buffer are fp32; all arithmetic is in fp32. The formulas are the CPU reference's
// (kernels/cpu/train.cpp, kernels/cpu/vec_math.cpp).
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

// dst[i] = src[i] for i < count, fp32 to t and t to fp32.
void convert_from_f32(dtype t, const float* src, void* dst, std::int64_t count, cudaStream_t stream);
void convert_to_f32(dtype t, const void* src, float* dst, std::int64_t count, cudaStream_t stream);

// act = gelu(up) (tanh form) or silu(gate)·up; all [count] of type t; gate is read for swiglu only.
void mlp_act_forward(dtype t, bool swiglu, const void* up, const void* gate, void* act, std::int64_t count,
                     cudaStream_t stream);
// d_up (and d_gate for swiglu) from d_act, given the saved pre-activations.
void mlp_act_backward(dtype t, bool swiglu, const void* up, const void* gate, const void* d_act, void* d_up,
                      void* d_gate, std::int64_t count, cudaStream_t stream);

// `matrices` causal n×n softmaxes P and, in place, their incoming gradients G:
// G[i, j] ← scale·P[i, j]·(G[i, j] − Σ_l P[i, l]·G[i, l]) for j ≤ i, 0 above the diagonal
// (the scores' gradient, scale = the scores' 1/sqrt(d_head)).
void attn_softmax_backward(dtype t, const void* probs, void* grad, std::int64_t matrices, std::int64_t n, float scale,
                           cudaStream_t stream);

// RMSNorm's input gradient: d_in[r] = resid[r] + inv_r·(d_out[r]⊙g − n̂_r·mean(d_out[r]⊙g⊙n̂_r)),
// n̂_r = in[r]·inv_r, inv_r = 1/sqrt(mean(in[r]²) + eps) (written to inv [rows], fp32).
// in, d_out, resid, d_in [rows, d] and gain [d] of type t; d_in must not overlap the others.
void rms_norm_backward(dtype t, const void* in, const void* gain, const void* d_out, const void* resid, void* d_in,
                       float* inv, std::int64_t rows, std::int64_t d, cudaStream_t stream);

// out[c] = Σ_r w[r]·a[r, c]·b[r, c] (b may be null: then 1), fp32, overwritten; a and b
// [rows, d] of type t, w [rows] fp32. The norm gains' gradient (a = d_out, b = in, w = inv) and
// the router vector's (a = x̃, w = dL/dr).
void weighted_column_sum(dtype t, const void* a, const void* b, const float* w, float* out, std::int64_t rows,
                         std::int64_t d, cudaStream_t stream);

// GQA: dst[r, kv·d_head + c] = Σ_{j < group} src[r, (kv·group + j)·d_head + c]; src [rows,
// kv_heads·group·d_head], dst [rows, kv_heads·d_head], type t.
void sum_head_groups(dtype t, const void* src, void* dst, std::int64_t rows, std::int64_t kv_heads, std::int64_t group,
                     std::int64_t d_head, cudaStream_t stream);

// Routed token j of sequence b sits at row b·S + index[b·k + j mod k] of x and out ([B·S, d],
// type t); y and x̃ are [B·k, d] (type t), r [B·k] fp32.
// out = x, then out_row = x_row + r_j·(y_j − x̃_j) (Equation 1).
void routed_scatter_forward(dtype t, const void* x, const void* y, const void* xt, const float* r,
                            const std::int32_t* index, void* out, std::int64_t batch, std::int64_t seq_len,
                            std::int64_t k, std::int64_t d, cudaStream_t stream);
// dy_j = r_j·dout_row and dr_j = ⟨dout_row, y_j − x̃_j⟩ (fp32) for every routed token.
void routed_scatter_backward(dtype t, const void* dout, const void* y, const void* xt, const float* r,
                             const std::int32_t* index, void* dy, float* dr, std::int64_t batch, std::int64_t seq_len,
                             std::int64_t k, std::int64_t d, cudaStream_t stream);
// dx = dout, then dx_row += dx̃_j − r_j·dout_row + dr_j·w (w [d] fp32: r = w·x) for routed rows.
void routed_input_grad(dtype t, const void* dout, const void* dxt, const float* r, const float* dr, const float* w,
                       const std::int32_t* index, void* dx, std::int64_t batch, std::int64_t seq_len, std::int64_t k,
                       std::int64_t d, cudaStream_t stream);

// MoDE's MLP (an MoE, token-choice top-1). kept rows j < count are the tokens real experts
// took, grouped by expert: token rows[j] chose expert index[rows[j]]; probs [m, experts_total]
// fp32 is the softmax of the expert logits, the chosen one the gate.
// probs[r] = softmax(logits[r]) over `cols` columns (fp32).
void softmax_rows(const float* logits, float* probs, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// y[rows[j]] += gate·expert_out[j] (y, expert_out [·, d] of type t).
void moe_combine(dtype t, const void* expert_out, const std::int32_t* rows, const std::int32_t* index,
                 const float* probs, std::int64_t experts_total, void* y, std::int64_t count, std::int64_t d,
                 cudaStream_t stream);
// For each kept row: d_expert_out[j] = gate·dy[t]; d_logits[t, e] = ⟨dy[t], expert_out[j]⟩·gate·(δ(e, chosen) −
// probs[t, e]) (fp32; rows of tokens no real expert took are left as they are: zero them first).
void moe_backward_rows(dtype t, const void* dy, const void* expert_out, const std::int32_t* rows,
                       const std::int32_t* index, const float* probs, std::int64_t experts_total, void* d_expert_out,
                       float* d_logits, std::int64_t count, std::int64_t d, cudaStream_t stream);
// dst[rows[j]] += src[j] for j < count (rows distinct; type t).
void add_rows(dtype t, const void* src, const std::int32_t* rows, void* dst, std::int64_t count, std::int64_t d,
              cudaStream_t stream);

// AdamW over `count` fp32 parameters p with gradients g and moments m, v (kernels/train.hpp's
// update; c1 = 1/(1 − β1^t), c2 = 1/(1 − β2^t), decay = lr·weight_decay); when `copy` is not
// null it receives p in type t (the bf16 weights the GEMMs read).
struct adamw_coefficients {
  float beta1, beta2, c1, c2, lr, eps, decay;
};
void adamw(dtype t, float* p, const float* g, float* m, float* v, void* copy, std::int64_t count,
           const adamw_coefficients& k, cudaStream_t stream);

// The causal predictor's BCE on T tokens (fp32): given logits z [T] and targets t [T] (0 or 1),
// writes loss_i = max(z, 0) − t·z + log(1 + e^−|z|) to loss [T] and (σ(z) − t)/T to dz [T].
void bce_with_logits(const float* z, const float* target, float* loss, float* dz, std::int64_t count,
                     cudaStream_t stream);
// h ← max(h, 0) (count fp32 elements).
void relu_inplace(float* h, std::int64_t count, cudaStream_t stream);
// dh[r, c] = h[r, c] > 0 ? dz[r]·w2[c] : 0, h and dh [rows, hidden] fp32.
void predictor_hidden_grad(const float* h, const float* dz, const float* w2, float* dh, std::int64_t rows,
                           std::int64_t hidden, cudaStream_t stream);
// target[b·S + index[b·k + j]] = 1 (after zeroing target [B·S]).
void routed_targets(const std::int32_t* index, float* target, std::int64_t batch, std::int64_t seq_len, std::int64_t k,
                    cudaStream_t stream);

}  // namespace modsim::kernels::cuda
