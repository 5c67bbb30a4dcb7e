// attn_norm, qkv_proj, attn_scores, attn_softmax, attn_values, out_proj. Scores are
// materialised per (sequence, head) as the full n×n square (the FLOP convention's count);
// the causal mask is applied by the softmax.
#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace modsim::kernels::cpu {

namespace {

int i32(std::int64_t v) { return static_cast<int>(v); }

// C[m×n] = alpha·A[m×k]·B[k×n] + beta·C, row-major, B optionally transposed.
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b,
          std::int64_t ldb, bool b_transposed, float beta, float* c, std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans, i32(m), i32(n), i32(k), alpha, a,
              i32(lda), b, i32(ldb), beta, c, i32(ldc));
}

}  // namespace

void attn_norm(context& c, const block_io& io) {
  const auto& s = c.shape();
  const std::int64_t rows = s.batch * io.n, d = s.d_model;
  const float* g = c.ws.data(tensor::attn_norm_g);
  float* out = c.ws.data(tensor::attn_in);
  c.pool.parallel_for(
      rows, std::max<std::int64_t>(8, rows / (4 * c.pool.size()) + 1),
      [&](std::int64_t r0, std::int64_t r1) { rms_norm_rows(io.in + r0 * d, g, out + r0 * d, r1 - r0, d); });
}

void qkv_proj(context& c, const block_io& io) {
  const auto& s = c.shape();
  const std::int64_t m = s.batch * io.n, d = s.d_model, dq = s.d_q(), dkv = s.d_kv();
  const float* a = c.ws.data(tensor::attn_in);
  gemm(m, dq, d, 1.0f, a, d, c.ws.data(tensor::w_q), dq, false, 0.0f, c.ws.data(tensor::q), dq);
  gemm(m, dkv, d, 1.0f, a, d, c.ws.data(tensor::w_k), dkv, false, 0.0f, c.ws.data(tensor::k), dkv);
  gemm(m, dkv, d, 1.0f, a, d, c.ws.data(tensor::w_v), dkv, false, 0.0f, c.ws.data(tensor::v), dkv);
}

void attn_scores(context& c, const block_io& io, std::int64_t bh_begin, std::int64_t bh_end) {
  const auto& s = c.shape();
  const std::int64_t n = io.n, H = s.n_heads, dh = s.d_head, dq = s.d_q(), dkv = s.d_kv();
  const std::int64_t group = s.n_heads / s.n_kv_heads;  // query heads per kv head
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const float* q = c.ws.data(tensor::q);
  const float* k = c.ws.data(tensor::k);
  float* sc = c.ws.data(tensor::scores);
  for (std::int64_t bh = bh_begin; bh < bh_end; ++bh) {
    const std::int64_t b = bh / H, head = bh % H, kv = head / group;
    gemm(n, n, dh, scale, q + b * n * dq + head * dh, dq, k + b * n * dkv + kv * dh, dkv, true, 0.0f, sc + bh * n * n,
         n);
  }
}

void attn_softmax(context& c, const block_io& io, std::int64_t bh_begin, std::int64_t bh_end) {
  const std::int64_t n = io.n;
  float* sc = c.ws.data(tensor::scores);
  // Rows of all (sequence, head) pairs in one loop; dynamic blocks balance the causal rows.
  const std::int64_t rows = (bh_end - bh_begin) * n;
  const std::int64_t grain = std::clamp<std::int64_t>(rows / (8 * c.pool.size()), 1, 64);
  c.pool.parallel_for(rows, grain, [&](std::int64_t r0, std::int64_t r1) {
    while (r0 < r1) {
      const std::int64_t bh = bh_begin + r0 / n, i = r0 % n;
      const std::int64_t end = std::min(r1 - r0, n - i);  // rows left in this matrix
      softmax_causal_rows(sc + bh * n * n, n, i, i + end);
      r0 += end;
    }
  });
}

void attn_values(context& c, const block_io& io, std::int64_t bh_begin, std::int64_t bh_end) {
  const auto& s = c.shape();
  const std::int64_t n = io.n, H = s.n_heads, dh = s.d_head, dq = s.d_q(), dkv = s.d_kv();
  const std::int64_t group = s.n_heads / s.n_kv_heads;
  const float* v = c.ws.data(tensor::v);
  const float* sc = c.ws.data(tensor::scores);
  float* o = c.ws.data(tensor::attn_out);
  for (std::int64_t bh = bh_begin; bh < bh_end; ++bh) {
    const std::int64_t b = bh / H, head = bh % H, kv = head / group;
    gemm(n, dh, n, 1.0f, sc + bh * n * n, n, v + b * n * dkv + kv * dh, dkv, false, 0.0f, o + b * n * dq + head * dh,
         dq);
  }
}

void out_proj(context& c, const block_io& io) {
  const auto& s = c.shape();
  const std::int64_t m = s.batch * io.n, d = s.d_model, dq = s.d_q();
  float* h = c.ws.data(tensor::h);
  parallel_copy(c.pool, io.in, h, m * d);
  gemm(m, d, dq, 1.0f, c.ws.data(tensor::attn_out), dq, c.ws.data(tensor::w_o), d, false, 1.0f, h, d);
}

}  // namespace modsim::kernels::cpu
