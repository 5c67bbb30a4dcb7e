#pragma once
// Row kernels of the CPU backend's non-GEMM ops: plain loops that GCC vectorizes, compiled
// for AVX-512, AVX2+FMA and the baseline and picked at load time (target_clones), so the
// library stays portable. vec_math.cpp is built with reassociation allowed (sums and maxima
// vectorize; their order, hence the last bits, depends on the vector width) and finite
// math assumed (inputs are finite). All in fp32.
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MODSIM_VECTORIZE __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MODSIM_VECTORIZE
#endif

namespace modsim::kernels::cpu {

// RMSNorm epsilon (inside the square root, added to mean(x²)).
inline constexpr float rms_norm_eps = 1e-6f;

// out[r] = in[r] / sqrt(mean(in[r]²) + eps) · gain, for rows [0, rows), rows of length d.
void rms_norm_rows(const float* in, const float* gain, float* out, std::int64_t rows, std::int64_t d);

// Causal softmax in place of rows [row_begin, row_end) of one n×n score matrix: row i keeps
// columns 0..i (normalised, max-subtracted), columns i+1..n-1 become 0.
void softmax_causal_rows(float* scores, std::int64_t n, std::int64_t row_begin, std::int64_t row_end);

// x ← gelu(x), tanh approximation: 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))), computed as
// x·sigmoid(2·√(2/π)(x + 0.044715x³)).
void gelu_inplace(float* x, std::int64_t count);

// up ← silu(gate)·up = gate·sigmoid(gate)·up.
void silu_mul_inplace(float* up, const float* gate, std::int64_t count);

// Out-of-place forms for the training forward, which keeps the pre-activations:
// out = gelu(in) (as gelu_inplace) and out = silu(gate)·up (as silu_mul_inplace).
void gelu_to(const float* in, float* out, std::int64_t count);
void silu_mul_to(const float* up, const float* gate, float* out, std::int64_t count);

// Backward of gelu_to: d_in = d_out · gelu'(in), with gelu' the derivative of the form
// gelu_inplace computes, x·σ(u), u = 2·√(2/π)(x + 0.044715x³):
// σ(u) + x·σ(u)(1 − σ(u))·2·√(2/π)(1 + 3·0.044715x²). No argument may alias another.
void gelu_backward(const float* in, const float* d_out, float* d_in, std::int64_t count);
// Backward of silu_mul_to: d_up = d_out·silu(gate), d_gate = d_out·up·σ(gate)(1 + gate(1 − σ(gate))).
// No argument may alias another.
void silu_mul_backward(const float* up, const float* gate, const float* d_out, float* d_up, float* d_gate,
                       std::int64_t count);

// Backward of softmax_causal_rows for rows [row_begin, row_end) of one n×n matrix: with P the
// probabilities and dP = dL/dP (in `grad`), grad ← scale·P ⊙ (dP − Σ_j P_j·dP_j) on columns
// 0..i of row i, 0 after (the scores' gradient, times the scores' scale).
void softmax_causal_backward_rows(const float* probs, float* grad, std::int64_t n, std::int64_t row_begin,
                                  std::int64_t row_end, float scale);

// Backward of rms_norm_rows over rows [0, rows): with inv = 1/sqrt(mean(in²) + eps) and
// n̂ = in·inv, d_in += inv·(ĝ − n̂·mean(ĝ·n̂)) where ĝ = d_out·gain, and d_gain += d_out·n̂
// (summed over the rows). Accumulates into d_in and d_gain.
void rms_norm_backward_rows(const float* in, const float* gain, const float* d_out, float* d_in, float* d_gain,
                            std::int64_t rows, std::int64_t d);

// One AdamW update of `count` parameters p with gradients g and moments m, v (in place):
// m ← β1·m + (1 − β1)·g; v ← β2·v + (1 − β2)·g²; p ← p − lr·(m·c1 / (sqrt(v·c2) + eps)) − decay·p,
// with c1, c2 the bias corrections 1/(1 − β^t) and decay = lr·weight_decay.
void adamw_update(float* p, const float* g, float* m, float* v, std::int64_t count, float beta1, float beta2, float c1,
                  float c2, float lr, float eps, float decay);

// out = x + r·(y − xt), vectors of length d (Equation 1 for one routed token).
void scaled_delta_add(const float* x, const float* y, const float* xt, float r, float* out, std::int64_t d);

// Σ a[i]·b[i], length d.
float dot(const float* a, const float* b, std::int64_t d);

// out += g·v, length d.
void axpy(float g, const float* v, float* out, std::int64_t d);

// A matrix product for decode, where a few rows meet a large weight matrix. The weights are
// packed once into column panels of panel_cols columns (pack_panels: panel p holds columns
// [p·panel_cols, (p+1)·panel_cols) as k rows of panel_cols contiguous floats, the last panel
// zero-padded), so each thread streams whole panels front to back, prefetching ahead, while
// up to 8 rows of A stay in registers per pass (more rows: further passes over the panel,
// then from L2). A row-major B read by columns would jump a row's length at every step and
// defeat the hardware prefetcher; a packed panel is one sequential stream.
inline constexpr std::int64_t panel_cols = 32;
// Floats a packed k×n matrix takes: ceil(n / panel_cols) panels of k·panel_cols.
std::int64_t packed_size(std::int64_t k, std::int64_t n);
// Packs row-major B[k×n] into `out` (packed_size(k, n) floats).
void pack_panels(const float* b, std::int64_t k, std::int64_t n, float* out);
// C[m×n] = A[m×k]·B + beta·C for the columns of panels [panel_begin, panel_end), A and C
// row-major, B packed by pack_panels. beta is 0 (C is only written) or 1.
void panel_gemm(const float* a, const float* packed_b, float* c, std::int64_t m, std::int64_t k, std::int64_t n,
                std::int64_t panel_begin, std::int64_t panel_end, float beta);

// Decode attention over one run of n cached keys (one KV head, d_head = dh, keys row after
// row): for each of the `group` query heads h sharing that KV head,
// scores[h·score_stride + t] = scale · q[h·dh ..]·k[t·dh ..] for t in [0, n).
// `prefetch` (may be null): the start of a run the caller reads soon after, n·dh floats that
// are requested line by line as this run's keys are read, so a paged cache, whose runs lie
// at scattered places, reads as one stream (the hardware prefetchers stop at a run's end).
// Only a hint: the results do not depend on it.
void decode_scores(const float* q, const float* k, float* scores, std::int64_t n, std::int64_t dh, std::int64_t group,
                   std::int64_t score_stride, float scale, const float* prefetch = nullptr);
// ... and out[h·dh + i] += Σ_t p[h·p_stride + t] · v[t·dh + i] (`prefetch` as above).
void decode_values(const float* p, const float* v, float* out, std::int64_t n, std::int64_t dh, std::int64_t group,
                   std::int64_t p_stride, const float* prefetch = nullptr);
// x ← softmax(x) over n values (max-subtracted).
void softmax_inplace(float* x, std::int64_t n);

// exp(x) in fp32, relative error about 2e-7 over the whole float range (Cephes expf);
// inputs below -87 give exp(-87), above 88 give exp(88).
float exp_approx(float x);

}  // namespace modsim::kernels::cpu
