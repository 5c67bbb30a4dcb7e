#include "kernels/cuda/attention.cuh"

#include <cmath>

#include "kernels/cuda/gemm.cuh"

namespace modsim::kernels::cuda {

namespace {

std::size_t element_size(dtype t) { return t == dtype::bf16 ? sizeof(bf16) : sizeof(float); }

const char* offset(const void* base, std::int64_t elements, std::size_t element_bytes) {
  return static_cast<const char*>(base) + static_cast<std::size_t>(elements) * element_bytes;
}

gemm_args scores_args(dtype t, const attention_layout& l) {
  gemm_args g;
  g.ab = t;
  g.c = t;
  g.m = l.n;
  g.n = l.n;
  g.k = l.d_head;
  g.alpha = 1.0f / std::sqrt(static_cast<float>(l.d_head));  // as the CPU backend
  g.lda = l.d_q();
  g.ldb = l.d_kv();
  g.b_transposed = true;
  g.ldc = l.n;
  return g;
}

gemm_args values_args(dtype t, const attention_layout& l) {
  gemm_args g;
  g.ab = t;
  g.c = t;
  g.m = l.n;
  g.n = l.d_head;
  g.k = l.n;
  g.lda = l.n;
  g.ldb = l.d_kv();
  g.ldc = l.d_q();
  return g;
}

}  // namespace

std::vector<const void*> attention_pointers(const attention_layout& l, std::size_t es, const void* q, const void* k,
                                            const void* v, const void* scores, const void* attn_out) {
  const std::int64_t pairs = l.pairs(), group = l.heads / l.kv_heads, n = l.n, dh = l.d_head;
  std::vector<const void*> p(static_cast<std::size_t>(6 * pairs));
  for (std::int64_t bh = 0; bh < pairs; ++bh) {
    const std::int64_t b = bh / l.heads, head = bh % l.heads, kv = head / group;
    const auto i = static_cast<std::size_t>(bh), P = static_cast<std::size_t>(pairs);
    const std::int64_t q_off = b * n * l.d_q() + head * dh, kv_off = b * n * l.d_kv() + kv * dh, s_off = bh * n * n;
    p[i] = offset(q, q_off, es);
    p[P + i] = offset(k, kv_off, es);
    p[2 * P + i] = offset(scores, s_off, es);
    p[3 * P + i] = offset(scores, s_off, es);
    p[4 * P + i] = offset(v, kv_off, es);
    p[5 * P + i] = offset(attn_out, q_off, es);
  }
  return p;
}

void attn_scores(cublasHandle_t handle, dtype t, const attention_plan& plan, const void* q, const void* k,
                 void* scores) {
  const attention_layout& l = plan.layout;
  gemm_args g = scores_args(t, l);
  const std::int64_t pairs = l.pairs();
  if (plan.aligned) {
    const void* const* p = plan.pointers;
    gemm_pointer_batched(handle, g, p, p + pairs, const_cast<void* const*>(p + 2 * pairs), pairs);
    return;
  }
  const std::size_t es = element_size(t);
  const std::int64_t group = l.heads / l.kv_heads, nn = l.n * l.n;
  if (unaligned_loops_over_sequences(l)) {
    // Sequence b, query head j of each KV group: its kv_heads query heads h = kv·group + j.
    for (std::int64_t b = 0; b < l.batch; ++b)
      for (std::int64_t j = 0; j < group; ++j) {
        g.a = offset(q, b * l.n * l.d_q() + j * l.d_head, es);
        g.b = offset(k, b * l.n * l.d_kv(), es);
        g.c_ptr = const_cast<char*>(offset(scores, (b * l.heads + j) * nn, es));
        gemm_strided_batched(handle, g, group * l.d_head, l.d_head, group * nn, l.kv_heads);
      }
    return;
  }
  for (std::int64_t head = 0; head < l.heads; ++head) {
    g.a = offset(q, head * l.d_head, es);
    g.b = offset(k, (head / group) * l.d_head, es);
    g.c_ptr = const_cast<char*>(offset(scores, head * nn, es));
    gemm_strided_batched(handle, g, l.n * l.d_q(), l.n * l.d_kv(), l.heads * nn, l.batch);
  }
}

void attn_values(cublasHandle_t handle, dtype t, const attention_plan& plan, const void* scores, const void* v,
                 void* attn_out) {
  const attention_layout& l = plan.layout;
  gemm_args g = values_args(t, l);
  const std::int64_t pairs = l.pairs();
  if (plan.aligned) {
    const void* const* p = plan.pointers;
    gemm_pointer_batched(handle, g, p + 3 * pairs, p + 4 * pairs, const_cast<void* const*>(p + 5 * pairs), pairs);
    return;
  }
  const std::size_t es = element_size(t);
  const std::int64_t group = l.heads / l.kv_heads, nn = l.n * l.n;
  if (unaligned_loops_over_sequences(l)) {
    for (std::int64_t b = 0; b < l.batch; ++b)
      for (std::int64_t j = 0; j < group; ++j) {
        g.a = offset(scores, (b * l.heads + j) * nn, es);
        g.b = offset(v, b * l.n * l.d_kv(), es);
        g.c_ptr = const_cast<char*>(offset(attn_out, b * l.n * l.d_q() + j * l.d_head, es));
        gemm_strided_batched(handle, g, group * nn, l.d_head, group * l.d_head, l.kv_heads);
      }
    return;
  }
  for (std::int64_t head = 0; head < l.heads; ++head) {
    g.a = offset(scores, head * nn, es);
    g.b = offset(v, (head / group) * l.d_head, es);
    g.c_ptr = const_cast<char*>(offset(attn_out, head * l.d_head, es));
    gemm_strided_batched(handle, g, l.heads * nn, l.n * l.d_kv(), l.n * l.d_q(), l.batch);
  }
}

}  // namespace modsim::kernels::cuda
