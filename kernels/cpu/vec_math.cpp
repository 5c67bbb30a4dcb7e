#include "kernels/cpu/vec_math.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace modsim::kernels::cpu {

namespace {

// Inlined into each target_clones variant, so it is compiled for that target.
[[gnu::always_inline]] inline float fast_exp(float x) {
  x = x > 88.0f ? 88.0f : x;  // plain selects: vectorize to min/max without NaN branches
  x = x < -87.0f ? -87.0f : x;
  // round(x·log2 e); inlined as one rounding instruction on the x86-64-v3/v4 clones.
  const float n = std::nearbyint(x * 1.44269504088896341f);
  // Cody-Waite: x − n·ln 2 in two steps; fma keeps -fassociative-math from merging them.
  float r = std::fma(n, -0.693359375f, x);
  r = std::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  const auto bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23;
  return e * std::bit_cast<float>(bits);
}

}  // namespace

float exp_approx(float x) { return fast_exp(x); }

MODSIM_VECTORIZE
void rms_norm_rows(const float* in, const float* gain, float* out, std::int64_t rows, std::int64_t d) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* a = in + r * d;
    float* o = out + r * d;
    float sum = 0.0f;
    for (std::int64_t c = 0; c < d; ++c) sum += a[c] * a[c];
    const float scale = 1.0f / std::sqrt(sum / static_cast<float>(d) + rms_norm_eps);
    for (std::int64_t c = 0; c < d; ++c) o[c] = a[c] * scale * gain[c];
  }
}

MODSIM_VECTORIZE
void softmax_causal_rows(float* scores, std::int64_t n, std::int64_t row_begin, std::int64_t row_end) {
  for (std::int64_t i = row_begin; i < row_end; ++i) {
    float* s = scores + i * n;
    const std::int64_t len = i + 1;
    float m = s[0];
    for (std::int64_t j = 1; j < len; ++j) m = s[j] > m ? s[j] : m;
    float sum = 0.0f;
    for (std::int64_t j = 0; j < len; ++j) {
      const float e = fast_exp(s[j] - m);
      s[j] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;
    for (std::int64_t j = 0; j < len; ++j) s[j] *= inv;
    if (len < n) std::memset(s + len, 0, static_cast<std::size_t>(n - len) * sizeof(float));
  }
}

MODSIM_VECTORIZE
void gelu_inplace(float* x, std::int64_t count) {
  constexpr float c = 0.7978845608028654f;  // sqrt(2/pi)
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    const float u = 2.0f * c * (v + 0.044715f * v * v * v);
    x[i] = v / (1.0f + fast_exp(-u));
  }
}

MODSIM_VECTORIZE
void silu_mul_inplace(float* up, const float* gate, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    up[i] = g / (1.0f + fast_exp(-g)) * up[i];
  }
}

MODSIM_VECTORIZE
void gelu_to(const float* in, float* out, std::int64_t count) {
  constexpr float c = 0.7978845608028654f;  // sqrt(2/pi)
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = in[i];
    const float u = 2.0f * c * (v + 0.044715f * v * v * v);
    out[i] = v / (1.0f + fast_exp(-u));
  }
}

MODSIM_VECTORIZE
void silu_mul_to(const float* up, const float* gate, float* out, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + fast_exp(-g)) * up[i];
  }
}

MODSIM_VECTORIZE
void gelu_backward(const float* in, const float* d_out, float* d_in, std::int64_t count) {
  constexpr float c = 0.7978845608028654f;  // sqrt(2/pi)
  for (std::int64_t i = 0; i < count; ++i) {
    const float v = in[i];
    const float u = 2.0f * c * (v + 0.044715f * v * v * v);
    const float sig = 1.0f / (1.0f + fast_exp(-u));
    const float du = 2.0f * c * (1.0f + 3.0f * 0.044715f * v * v);
    d_in[i] = d_out[i] * (sig + v * sig * (1.0f - sig) * du);
  }
}

MODSIM_VECTORIZE
void silu_mul_backward(const float* up, const float* gate, const float* d_out, float* d_up, float* d_gate,
                       std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) {
    const float g = gate[i];
    const float sig = 1.0f / (1.0f + fast_exp(-g));
    d_up[i] = d_out[i] * g * sig;
    d_gate[i] = d_out[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
  }
}

MODSIM_VECTORIZE
void softmax_causal_backward_rows(const float* probs, float* grad, std::int64_t n, std::int64_t row_begin,
                                  std::int64_t row_end, float scale) {
  for (std::int64_t i = row_begin; i < row_end; ++i) {
    const float* p = probs + i * n;
    float* g = grad + i * n;
    const std::int64_t len = i + 1;
    float dot = 0.0f;
    for (std::int64_t j = 0; j < len; ++j) dot += p[j] * g[j];
    for (std::int64_t j = 0; j < len; ++j) g[j] = scale * p[j] * (g[j] - dot);
    if (len < n) std::memset(g + len, 0, static_cast<std::size_t>(n - len) * sizeof(float));
  }
}

MODSIM_VECTORIZE
void rms_norm_backward_rows(const float* in, const float* gain, const float* d_out, float* d_in, float* d_gain,
                            std::int64_t rows, std::int64_t d) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* a = in + r * d;
    const float* go = d_out + r * d;
    float* gi = d_in + r * d;
    float ss = 0.0f;
    for (std::int64_t c = 0; c < d; ++c) ss += a[c] * a[c];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + rms_norm_eps);
    float dot = 0.0f;
    for (std::int64_t c = 0; c < d; ++c) dot += go[c] * gain[c] * a[c];
    const float mean = dot * inv / static_cast<float>(d);  // mean(ĝ·n̂)
    for (std::int64_t c = 0; c < d; ++c) {
      const float n_hat = a[c] * inv;
      gi[c] += inv * (go[c] * gain[c] - n_hat * mean);
      d_gain[c] += go[c] * n_hat;
    }
  }
}

MODSIM_VECTORIZE
void adamw_update(float* p, const float* g, float* m, float* v, std::int64_t count, float beta1, float beta2, float c1,
                  float c2, float lr, float eps, float decay) {
  for (std::int64_t i = 0; i < count; ++i) {
    const float mi = beta1 * m[i] + (1.0f - beta1) * g[i];
    const float vi = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * (mi * c1) / (std::sqrt(vi * c2) + eps) + decay * p[i];
  }
}

MODSIM_VECTORIZE
void scaled_delta_add(const float* x, const float* y, const float* xt, float r, float* out, std::int64_t d) {
  for (std::int64_t i = 0; i < d; ++i) out[i] = x[i] + r * (y[i] - xt[i]);
}

MODSIM_VECTORIZE
float dot(const float* a, const float* b, std::int64_t d) {
  float sum = 0.0f;
  for (std::int64_t i = 0; i < d; ++i) sum += a[i] * b[i];
  return sum;
}

MODSIM_VECTORIZE
void axpy(float g, const float* v, float* out, std::int64_t d) {
  for (std::int64_t i = 0; i < d; ++i) out[i] += g * v[i];
}

std::int64_t packed_size(std::int64_t k, std::int64_t n) { return (n + panel_cols - 1) / panel_cols * k * panel_cols; }

void pack_panels(const float* b, std::int64_t k, std::int64_t n, float* out) {
  for (std::int64_t j0 = 0; j0 < n; j0 += panel_cols) {
    const std::int64_t w = n - j0 < panel_cols ? n - j0 : panel_cols;
    for (std::int64_t r = 0; r < k; ++r) {
      std::memcpy(out, b + r * n + j0, static_cast<std::size_t>(w) * sizeof(float));
      std::memset(out + w, 0, static_cast<std::size_t>(panel_cols - w) * sizeof(float));
      out += panel_cols;
    }
  }
}

namespace {

// The default clone passes 64-byte vectors differently from the AVX-512 one; they never cross
// a call (every helper taking or returning one is always_inline), so GCC's ABI note is moot.
#pragma GCC diagnostic ignored "-Wpsabi"
// Sixteen floats as one vector (one AVX-512 register; two AVX2 or four SSE registers on the
// other clones). Loads and stores go through memcpy, so no alignment is assumed.
using v16 = float __attribute__((vector_size(64)));
[[gnu::always_inline]] inline v16 load16(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
[[gnu::always_inline]] inline void store16(float* p, v16 v) { std::memcpy(p, &v, sizeof v); }
[[gnu::always_inline]] inline float sum16(v16 v) {
  float s = 0.0f;
  for (int i = 0; i < 16; ++i) s += v[i];
  return s;
}

// How far ahead of its reads a panel stream prefetches: into L1 2 KiB ahead and into L2 8 KiB
// ahead (with 8 rows a panel's FMAs keep fewer loads in flight than a core needs to stream
// at full speed; the far requests fill that gap).
constexpr std::int64_t prefetch_floats = 512;
constexpr std::int64_t prefetch_far_floats = 2048;

// M rows of A against one packed panel (panel_cols = 32 columns, two vectors per row).
template <int M>
[[gnu::always_inline]] inline void panel_rows(const float* a, const float* bp, float* c, std::int64_t k, std::int64_t n,
                                              std::int64_t cols, float beta) {
  v16 acc0[M], acc1[M];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = v16{};
  for (std::int64_t kk = 0; kk < k; ++kk, bp += panel_cols) {
    __builtin_prefetch(bp + prefetch_floats);
    __builtin_prefetch(bp + prefetch_floats + 16);
    __builtin_prefetch(bp + prefetch_far_floats, 0, 2);
    __builtin_prefetch(bp + prefetch_far_floats + 16, 0, 2);
    const v16 b0 = load16(bp), b1 = load16(bp + 16);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      const float ai = a[i * k + kk];
      acc0[i] += ai * b0;
      acc1[i] += ai * b1;
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) {
    float* ci = c + i * n;
    if (cols == panel_cols && beta == 0.0f) {
      store16(ci, acc0[i]);
      store16(ci + 16, acc1[i]);
    } else {
      alignas(64) float row[panel_cols];
      store16(row, acc0[i]);
      store16(row + 16, acc1[i]);
      for (std::int64_t j = 0; j < cols; ++j) ci[j] = beta != 0.0f ? ci[j] + row[j] : row[j];
    }
  }
}

// panel_rows<r> for a run-time r in [1, M], each instantiation inlined into the caller's clone.
template <int M>
[[gnu::always_inline]] inline void rows_of(std::int64_t r, const float* a, const float* bp, float* c, std::int64_t k,
                                           std::int64_t n, std::int64_t cols, float beta) {
  if constexpr (M > 1) {
    if (r < M) return rows_of<M - 1>(r, a, bp, c, k, n, cols, beta);
  }
  panel_rows<M>(a, bp, c, k, n, cols, beta);
}

}  // namespace

MODSIM_VECTORIZE
void panel_gemm(const float* a, const float* packed_b, float* c, std::int64_t m, std::int64_t k, std::int64_t n,
                std::int64_t panel_begin, std::int64_t panel_end, float beta) {
  for (std::int64_t p = panel_begin; p < panel_end; ++p) {
    const float* bp = packed_b + p * k * panel_cols;
    const std::int64_t j0 = p * panel_cols, cols = n - j0 < panel_cols ? n - j0 : panel_cols;
    for (std::int64_t i0 = 0; i0 < m; i0 += 8) {
      const float* ai = a + i0 * k;
      float* ci = c + i0 * n + j0;
      rows_of<8>(m - i0 < 8 ? m - i0 : 8, ai, bp, ci, k, n, cols, beta);
    }
  }
}

namespace {

// decode_scores for d_head = 16·C: each key's C vectors loaded once for the group's heads;
// key t's C cache lines of the run at `pf` (if any) prefetched as key t is read.
template <int C>
[[gnu::always_inline]] inline void scores_fixed(const float* q, const float* k, float* scores, std::int64_t n,
                                                std::int64_t group, std::int64_t score_stride, float scale,
                                                const float* pf) {
  for (std::int64_t t = 0; t < n; ++t) {
    const float* kt = k + t * 16 * C;
    if (pf != nullptr) {
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c) __builtin_prefetch(pf + t * 16 * C + 16 * c);
    }
    v16 kv[C];
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) kv[c] = load16(kt + 16 * c);
    for (std::int64_t h = 0; h < group; ++h) {
      const float* qh = q + h * 16 * C;
      v16 acc = load16(qh) * kv[0];
#pragma GCC unroll 16
      for (int c = 1; c < C; ++c) acc += load16(qh + 16 * c) * kv[c];
      scores[h * score_stride + t] = sum16(acc) * scale;
    }
  }
}

// decode_values for d_head = 16·C: each head's output row stays in registers over the run
// (the run at `pf` prefetched during the first head's sweep).
template <int C>
[[gnu::always_inline]] inline void values_fixed(const float* p, const float* v, float* out, std::int64_t n,
                                                std::int64_t group, std::int64_t p_stride, const float* pf) {
  for (std::int64_t h = 0; h < group; ++h) {
    float* oh = out + h * 16 * C;
    const float* ph = p + h * p_stride;
    v16 acc[C];
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) acc[c] = load16(oh + 16 * c);
    for (std::int64_t t = 0; t < n; ++t) {
      if (h == 0 && pf != nullptr) {
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c) __builtin_prefetch(pf + t * 16 * C + 16 * c);
      }
      const float w = ph[t];
      const float* vt = v + t * 16 * C;
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c) acc[c] += w * load16(vt + 16 * c);
    }
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) store16(oh + 16 * c, acc[c]);
  }
}

// Prefetches n·dh floats from pf (the generic d_head path), one request per cache line.
[[gnu::always_inline]] inline void prefetch_run(const float* pf, std::int64_t floats) {
  if (pf == nullptr) return;
  for (std::int64_t i = 0; i < floats; i += 16) __builtin_prefetch(pf + i);
}

}  // namespace

MODSIM_VECTORIZE
void decode_scores(const float* q, const float* k, float* scores, std::int64_t n, std::int64_t dh, std::int64_t group,
                   std::int64_t score_stride, float scale, const float* prefetch) {
  switch (dh) {
    case 64:
      return scores_fixed<4>(q, k, scores, n, group, score_stride, scale, prefetch);
    case 128:
      return scores_fixed<8>(q, k, scores, n, group, score_stride, scale, prefetch);
    default:
      break;
  }
  prefetch_run(prefetch, n * dh);
  for (std::int64_t t = 0; t < n; ++t) {
    const float* kt = k + t * dh;
    for (std::int64_t h = 0; h < group; ++h) {
      const float* qh = q + h * dh;
      float s = 0.0f;
      for (std::int64_t i = 0; i < dh; ++i) s += qh[i] * kt[i];
      scores[h * score_stride + t] = s * scale;
    }
  }
}

MODSIM_VECTORIZE
void decode_values(const float* p, const float* v, float* out, std::int64_t n, std::int64_t dh, std::int64_t group,
                   std::int64_t p_stride, const float* prefetch) {
  switch (dh) {
    case 64:
      return values_fixed<4>(p, v, out, n, group, p_stride, prefetch);
    case 128:
      return values_fixed<8>(p, v, out, n, group, p_stride, prefetch);
    default:
      break;
  }
  prefetch_run(prefetch, n * dh);
  for (std::int64_t t = 0; t < n; ++t) {
    const float* vt = v + t * dh;
    for (std::int64_t h = 0; h < group; ++h) {
      const float w = p[h * p_stride + t];
      float* oh = out + h * dh;
      for (std::int64_t i = 0; i < dh; ++i) oh[i] += w * vt[i];
    }
  }
}

MODSIM_VECTORIZE
void softmax_inplace(float* x, std::int64_t n) {
  float mx = x[0];
  for (std::int64_t i = 1; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  float sum = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = fast_exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (std::int64_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace modsim::kernels::cpu
