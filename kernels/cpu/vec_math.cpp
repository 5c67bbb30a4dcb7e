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

MODSIM_VECTORIZE
void skinny_gemm(const float* a, const float* b, float* c, std::int64_t m, std::int64_t k, std::int64_t n,
                 std::int64_t n_begin, std::int64_t n_end, float beta) {
  // Columns in blocks whose m accumulator rows stay in L1 while B's rows stream past.
  constexpr std::int64_t block = 256;
  alignas(64) float acc[skinny_max_rows][block];
  for (std::int64_t j0 = n_begin; j0 < n_end; j0 += block) {
    const std::int64_t w = n_end - j0 < block ? n_end - j0 : block;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < w; ++j) acc[i][j] = beta != 0.0f ? c[i * n + j0 + j] : 0.0f;
    std::int64_t kk = 0;
    // Four rows of B at a time: each accumulator row is loaded and stored once per four.
    for (; kk + 4 <= k; kk += 4) {
      const float* b0 = b + kk * n + j0;
      const float* b1 = b0 + n;
      const float* b2 = b1 + n;
      const float* b3 = b2 + n;
      for (std::int64_t i = 0; i < m; ++i) {
        const float a0 = a[i * k + kk], a1 = a[i * k + kk + 1], a2 = a[i * k + kk + 2], a3 = a[i * k + kk + 3];
        float* row = acc[i];
        for (std::int64_t j = 0; j < w; ++j) row[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
      }
    }
    for (; kk < k; ++kk) {
      const float* b0 = b + kk * n + j0;
      for (std::int64_t i = 0; i < m; ++i) {
        const float a0 = a[i * k + kk];
        float* row = acc[i];
        for (std::int64_t j = 0; j < w; ++j) row[j] += a0 * b0[j];
      }
    }
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < w; ++j) c[i * n + j0 + j] = acc[i][j];
  }
}

MODSIM_VECTORIZE
void decode_scores(const float* q, const float* k, float* scores, std::int64_t n, std::int64_t dh, std::int64_t group,
                   std::int64_t score_stride, float scale) {
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
                   std::int64_t p_stride) {
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
