#pragma once
// attn_scores and attn_values: per (sequence, head) GEMMs through cuBLAS, GQA included
// (query head h reads kv head h / (n_heads / n_kv_heads)). One cublasGemmBatchedEx over all
// B·H pairs with device pointer arrays made at workspace creation; when some pointer is not
// 16-byte aligned (d_head or n not a multiple of 16 bytes' worth of elements), which cuBLAS's
// tensor-core kernels need, strided-batched GEMMs instead: one per head over the sequences,
// or, when that is fewer launches (batch · n_heads / n_kv_heads < n_heads: few sequences),
// one per (sequence, query head of a KV group) over the KV heads. A MoD block routes
// k = ⌈capacity · S⌉ tokens, so most capacities give such a k.
// Scores: S = Q·Kᵀ/sqrt(d_head), the full n×n square (the causal mask is the softmax's).
#include <cstdint>
#include <vector>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

struct attention_layout {
  std::int64_t batch = 0, n = 0, heads = 0, kv_heads = 0, d_head = 0;
  std::int64_t pairs() const { return batch * heads; }
  std::int64_t d_q() const { return heads * d_head; }
  std::int64_t d_kv() const { return kv_heads * d_head; }
};

// Host list of 6·B·H pointers: Q, K, S for the scores GEMMs, then P (= S), V, O for the
// values GEMMs, pair bh = b·heads + h at position bh of each group. `element_bytes` is the
// size of one element of q, k, v, scores and attn_out.
std::vector<const void*> attention_pointers(const attention_layout& l, std::size_t element_bytes, const void* q,
                                            const void* k, const void* v, const void* scores, const void* attn_out);

// The unaligned case's loop: over the sequences and the query heads of a KV group (true),
// or over the heads (false): whichever launches fewer GEMMs, the heads on a tie.
inline bool unaligned_loops_over_sequences(const attention_layout& l) {
  return l.kv_heads > 0 && l.batch * (l.heads / l.kv_heads) < l.heads;
}

struct attention_plan {
  attention_layout layout;
  std::int64_t n = 0;
  bool aligned = false;                   // all pointers 16-byte aligned: use `pointers`
  const void* const* pointers = nullptr;  // device copy of attention_pointers(), or null
};

void attn_scores(cublasHandle_t handle, dtype t, const attention_plan& plan, const void* q, const void* k,
                 void* scores);
void attn_values(cublasHandle_t handle, dtype t, const attention_plan& plan, const void* scores, const void* v,
                 void* attn_out);

}  // namespace modsim::kernels::cuda
