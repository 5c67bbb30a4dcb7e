#pragma once
// Decode attention over a paged KV cache (kernels/decode.hpp): the append of the new keys and
// values at each sequence's next slot, and split-KV ("flash-decoding") attention of one query
// per (row, head) over that sequence's cache, GQA, followed by the reduce of the partial
// softmaxes. All arithmetic in fp32; the cache pools have the step's type T.
//
// Layouts (elements):
//  - pool (K or V) [pages][n_kv_heads][page_tokens][d_head], type T;
//  - block_table [batch][pages_per_sequence] int32: page of a sequence's p-th page_tokens slots;
//  - lengths [batch] int32: cached tokens before this step (the new token goes to slot lengths[b]);
//  - qkv [rows][ld_qkv] fp32: q at column 0 (d_q), k at d_q, v at d_q + d_kv;
//  - seq_of_row [rows] int32: the sequence of each row (a padding row repeats one);
//  - real_rows (device int32, may be null = all rows): rows j >= *real_rows are padding: they
//    attend like the others (over their sequence's cache and the key in its next slot) but
//    append nothing and advance nothing.
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

// Keys one attention block reads (one split of a sequence's cache).
inline constexpr std::int64_t decode_split_tokens = 128;

struct paged_kv {
  void* k_pool = nullptr;
  void* v_pool = nullptr;
  const std::int32_t* block_table = nullptr;
  std::int32_t* lengths = nullptr;
  std::int64_t pages_per_sequence = 0;
  std::int64_t page_tokens = 0;
  std::int64_t max_context = 0;
};

struct decode_heads {
  std::int64_t n_heads = 0, n_kv_heads = 0, d_head = 0;
  std::int64_t d_q() const { return n_heads * d_head; }
  std::int64_t d_kv() const { return n_kv_heads * d_head; }
};

// Splits of a cache of max_context tokens: ceil(max_context / decode_split_tokens).
inline std::int64_t decode_splits(std::int64_t max_context) {
  return (max_context + decode_split_tokens - 1) / decode_split_tokens;
}

// Writes row j's k and v into slot lengths[seq_of_row[j]] of its sequence (real rows with a
// free slot; lengths are left unchanged).
void decode_append_kv(dtype t, const paged_kv& kv, const decode_heads& h, const float* qkv, std::int64_t ld_qkv,
                      const std::int32_t* seq_of_row, const std::int32_t* real_rows, std::int64_t rows,
                      cudaStream_t stream);

// Scratch of the split-KV attention, fp32: partial outputs [rows][n_heads][splits][d_head],
// partial maxima and sums [rows][n_heads][splits].
struct decode_attention_scratch {
  float* part_o = nullptr;
  float* part_m = nullptr;
  float* part_l = nullptr;
  std::int64_t splits = 0;  // decode_splits(max_context)
};

// out[j][h·d_head + i] (type t, [rows][d_q]) = softmax(q_j,h · K_b,g / sqrt(d_head)) · V_b,g over
// the lengths[b] + 1 first slots of sequence b = seq_of_row[j] (the new key included: call
// after decode_append_kv), g = h / (n_heads / n_kv_heads).
void decode_attention(dtype t, const paged_kv& kv, const decode_heads& h, const float* qkv, std::int64_t ld_qkv,
                      const std::int32_t* seq_of_row, std::int64_t rows, const decode_attention_scratch& scratch,
                      void* out, cudaStream_t stream);

// *keys = Σ_j (lengths[seq_of_row[j]] + 1) over the rows: the cached keys (each of d_kv
// elements, for K and for V) the attention of these rows reads. One thread block.
void decode_count_keys(const paged_kv& kv, const std::int32_t* seq_of_row, std::int64_t rows, std::int64_t* keys,
                       cudaStream_t stream);

// Dynamic shared memory of one split-KV attention block, bytes.
std::size_t decode_attention_smem(const decode_heads& h);
// Allows decode_attention's kernel `bytes` of dynamic shared memory (above the 48 KiB default).
void decode_attention_reserve_smem(dtype t, std::size_t bytes);

}  // namespace modsim::kernels::cuda
