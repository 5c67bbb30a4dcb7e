#include "kernels/cuda/decode_attention.cuh"

#include <cmath>
#include <cub/block/block_reduce.cuh>

namespace modsim::kernels::cuda {

namespace {

constexpr int append_threads = 256;
constexpr int attention_threads = 128;  // 4 warps
constexpr int reduce_threads = 128;
constexpr int count_threads = 256;

// Tokens of sequence b's cache the attention reads: its lengths[b] cached ones and the new
// one, never more than the cache holds.
__device__ __forceinline__ std::int64_t keys_of(const std::int32_t* lengths, std::int32_t b, std::int64_t max_context) {
  const std::int64_t n = static_cast<std::int64_t>(lengths[b]) + 1;
  return n < max_context ? n : max_context;
}

// Element offset of (token t of sequence b, kv head g, dim 0) in a pool.
__device__ __forceinline__ std::int64_t slot_offset(const std::int32_t* block_table, std::int32_t b, std::int64_t t,
                                                    std::int64_t pages_per_sequence, std::int64_t page_tokens,
                                                    std::int64_t n_kv_heads, std::int64_t g, std::int64_t d_head) {
  const std::int64_t page = block_table[b * pages_per_sequence + t / page_tokens];
  return ((page * n_kv_heads + g) * page_tokens + t % page_tokens) * d_head;
}

template <class T>
__global__ void __launch_bounds__(append_threads)
    append_kv_kernel(T* __restrict__ k_pool, T* __restrict__ v_pool, const std::int32_t* __restrict__ block_table,
                     const std::int32_t* __restrict__ lengths, std::int64_t pages_per_sequence,
                     std::int64_t page_tokens, std::int64_t max_context, std::int64_t n_kv_heads, std::int64_t d_head,
                     std::int64_t d_q, const float* __restrict__ qkv, std::int64_t ld_qkv,
                     const std::int32_t* __restrict__ seq_of_row, const std::int32_t* __restrict__ real_rows,
                     std::int64_t rows) {
  const std::int64_t d_kv = n_kv_heads * d_head;
  const std::int64_t real = real_rows != nullptr ? *real_rows : rows;
  const std::int64_t total = (real < rows ? real : rows) * d_kv;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * append_threads;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * append_threads + threadIdx.x; e < total; e += stride) {
    const std::int64_t j = e / d_kv, c = e % d_kv;  // c = g·d_head + i
    const std::int32_t b = seq_of_row[j];
    if (b < 0) continue;
    const std::int64_t slot = lengths[b];
    if (slot >= max_context) continue;  // full: the host refuses the step before this
    const std::int64_t g = c / d_head, i = c % d_head;
    const std::int64_t dst =
        slot_offset(block_table, b, slot, pages_per_sequence, page_tokens, n_kv_heads, g, d_head) + i;
    const float* row = qkv + j * ld_qkv + d_q;
    k_pool[dst] = from_float<T>(row[c]);
    v_pool[dst] = from_float<T>(row[d_kv + c]);
  }
}

// One block per (split, row, kv head): the `group` = n_heads / n_kv_heads query heads of kv
// head g against keys [split·S, min((split+1)·S, n_keys)) of the row's sequence. Writes per
// query head the chunk's maximum score m, Σ exp(s − m) and Σ exp(s − m)·v.
// Shared memory: base offsets [S] int64, scaled queries [group][d_head], scores [group][S].
template <class T>
__global__ void __launch_bounds__(attention_threads)
    split_kv_kernel(const T* __restrict__ k_pool, const T* __restrict__ v_pool,
                    const std::int32_t* __restrict__ block_table, const std::int32_t* __restrict__ lengths,
                    std::int64_t pages_per_sequence, std::int64_t page_tokens, std::int64_t max_context,
                    std::int64_t n_heads, std::int64_t n_kv_heads, std::int64_t d_head, const float* __restrict__ qkv,
                    std::int64_t ld_qkv, const std::int32_t* __restrict__ seq_of_row, float* __restrict__ part_o,
                    float* __restrict__ part_m, float* __restrict__ part_l, std::int64_t splits, float scale) {
  constexpr std::int64_t S = decode_split_tokens;
  const std::int64_t split = blockIdx.x, j = blockIdx.y, g = blockIdx.z;
  const std::int32_t b = seq_of_row[j];
  if (b < 0) return;  // no sequence (uniform over the block)
  const std::int64_t n_keys = keys_of(lengths, b, max_context);
  const std::int64_t start = split * S;
  if (start >= n_keys) return;  // past the sequence's cache: the reduce reads no partial here
  const std::int64_t n = n_keys - start < S ? n_keys - start : S;
  const std::int64_t group = n_heads / n_kv_heads;

  extern __shared__ std::int64_t smem[];
  std::int64_t* base = smem;                      // [S]
  float* q = reinterpret_cast<float*>(smem + S);  // [group][d_head]
  float* p = q + group * d_head;                  // [group][S]

  const std::int64_t tid = threadIdx.x;
  for (std::int64_t c = tid; c < group * d_head; c += attention_threads) {
    const std::int64_t hh = c / d_head, i = c % d_head;
    q[c] = qkv[j * ld_qkv + (g * group + hh) * d_head + i] * scale;
  }
  for (std::int64_t tt = tid; tt < n; tt += attention_threads)
    base[tt] = slot_offset(block_table, b, start + tt, pages_per_sequence, page_tokens, n_kv_heads, g, d_head);
  __syncthreads();

  // Scores: one warp per key, lanes over d_head.
  const std::int64_t warp = tid / 32, lane = tid % 32, warps = attention_threads / 32;
  for (std::int64_t tt = warp; tt < n; tt += warps) {
    const T* key = k_pool + base[tt];
    for (std::int64_t hh = 0; hh < group; ++hh) {
      float s = 0.0f;
      for (std::int64_t i = lane; i < d_head; i += 32) s = fmaf(q[hh * d_head + i], to_float(key[i]), s);
      s = warp_sum(s);
      if (lane == 0) p[hh * S + tt] = s;
    }
  }
  __syncthreads();

  // The chunk's softmax numerators: one warp per query head.
  for (std::int64_t hh = warp; hh < group; hh += warps) {
    float m = -INFINITY;
    for (std::int64_t tt = lane; tt < n; tt += 32) m = fmaxf(m, p[hh * S + tt]);
    m = warp_max(m);
    float l = 0.0f;
    for (std::int64_t tt = lane; tt < n; tt += 32) {
      const float e = expf(p[hh * S + tt] - m);
      p[hh * S + tt] = e;
      l += e;
    }
    l = warp_sum(l);
    if (lane == 0) {
      const std::int64_t at = (j * n_heads + g * group + hh) * splits + split;
      part_m[at] = m;
      part_l[at] = l;
    }
  }
  __syncthreads();

  // Unnormalised outputs: one thread per (query head, dim), consecutive threads on consecutive dims.
  for (std::int64_t c = tid; c < group * d_head; c += attention_threads) {
    const std::int64_t hh = c / d_head, i = c % d_head;
    float acc = 0.0f;
    for (std::int64_t tt = 0; tt < n; ++tt) acc = fmaf(p[hh * S + tt], to_float(v_pool[base[tt] + i]), acc);
    part_o[((j * n_heads + g * group + hh) * splits + split) * d_head + i] = acc;
  }
}

// One block per (query head, row): combines the partials of the splits that hold keys,
// o = Σ_s exp(m_s − M)·o_s / Σ_s exp(m_s − M)·l_s with M = max_s m_s.
template <class T>
__global__ void __launch_bounds__(reduce_threads)
    split_kv_reduce_kernel(const std::int32_t* __restrict__ lengths, std::int64_t max_context, std::int64_t n_heads,
                           std::int64_t d_head, const std::int32_t* __restrict__ seq_of_row,
                           const float* __restrict__ part_o, const float* __restrict__ part_m,
                           const float* __restrict__ part_l, std::int64_t splits, T* __restrict__ out) {
  const std::int64_t head = blockIdx.x, j = blockIdx.y;
  T* o = out + j * n_heads * d_head + head * d_head;
  const std::int32_t b = seq_of_row[j];
  if (b < 0) {
    for (std::int64_t i = threadIdx.x; i < d_head; i += reduce_threads) o[i] = from_float<T>(0.0f);
    return;
  }
  const std::int64_t n_keys = keys_of(lengths, b, max_context);
  std::int64_t used = (n_keys + decode_split_tokens - 1) / decode_split_tokens;
  if (used > splits) used = splits;
  const std::int64_t at = (j * n_heads + head) * splits;
  float m = -INFINITY;
  for (std::int64_t s = 0; s < used; ++s) m = fmaxf(m, part_m[at + s]);
  float l = 0.0f;
  for (std::int64_t s = 0; s < used; ++s) l += part_l[at + s] * expf(part_m[at + s] - m);
  const float inv_l = 1.0f / l;  // l >= 1: the split holding the maximum contributes exp(0)·(≥ 1)
  for (std::int64_t i = threadIdx.x; i < d_head; i += reduce_threads) {
    float acc = 0.0f;
    for (std::int64_t s = 0; s < used; ++s) acc = fmaf(part_o[(at + s) * d_head + i], expf(part_m[at + s] - m), acc);
    o[i] = from_float<T>(acc * inv_l);
  }
}

__global__ void __launch_bounds__(count_threads)
    count_keys_kernel(const std::int32_t* __restrict__ lengths, std::int64_t max_context,
                      const std::int32_t* __restrict__ seq_of_row, std::int64_t rows, std::int64_t* __restrict__ keys) {
  using reduce = cub::BlockReduce<long long, count_threads>;
  __shared__ typename reduce::TempStorage storage;
  long long sum = 0;
  for (std::int64_t j = threadIdx.x; j < rows; j += count_threads) {
    const std::int32_t b = seq_of_row[j];
    if (b >= 0) sum += keys_of(lengths, b, max_context);
  }
  sum = reduce(storage).Sum(sum);
  if (threadIdx.x == 0) *keys = sum;
}

}  // namespace

void decode_count_keys(const paged_kv& kv, const std::int32_t* seq_of_row, std::int64_t rows, std::int64_t* keys,
                       cudaStream_t stream) {
  count_keys_kernel<<<1, count_threads, 0, stream>>>(kv.lengths, kv.max_context, seq_of_row, rows, keys);
  MODSIM_CUDA_CHECK_LAUNCH("count_keys_kernel");
}

void decode_append_kv(dtype t, const paged_kv& kv, const decode_heads& h, const float* qkv, std::int64_t ld_qkv,
                      const std::int32_t* seq_of_row, const std::int32_t* real_rows, std::int64_t rows,
                      cudaStream_t stream) {
  if (rows == 0 || h.d_kv() == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    append_kv_kernel<T><<<grid_for(rows * h.d_kv(), append_threads, 1 << 16), append_threads, 0, stream>>>(
        static_cast<T*>(kv.k_pool), static_cast<T*>(kv.v_pool), kv.block_table, kv.lengths, kv.pages_per_sequence,
        kv.page_tokens, kv.max_context, h.n_kv_heads, h.d_head, h.d_q(), qkv, ld_qkv, seq_of_row, real_rows, rows);
    MODSIM_CUDA_CHECK_LAUNCH("append_kv_kernel");
  });
}

std::size_t decode_attention_smem(const decode_heads& h) {
  const std::int64_t group = h.n_heads / h.n_kv_heads;
  return static_cast<std::size_t>(decode_split_tokens) * sizeof(std::int64_t) +
         static_cast<std::size_t>(group * h.d_head + group * decode_split_tokens) * sizeof(float);
}

void decode_attention_reserve_smem(dtype t, std::size_t bytes) {
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    MODSIM_CUDA_CHECK(
        cudaFuncSetAttribute(split_kv_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  });
}

void decode_attention(dtype t, const paged_kv& kv, const decode_heads& h, const float* qkv, std::int64_t ld_qkv,
                      const std::int32_t* seq_of_row, std::int64_t rows, const decode_attention_scratch& scratch,
                      void* out, cudaStream_t stream) {
  if (rows == 0) return;
  const float scale = 1.0f / std::sqrt(static_cast<float>(h.d_head));
  const std::size_t smem = decode_attention_smem(h);
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const dim3 grid(static_cast<unsigned>(scratch.splits), static_cast<unsigned>(rows),
                    static_cast<unsigned>(h.n_kv_heads));
    split_kv_kernel<T><<<grid, attention_threads, smem, stream>>>(
        static_cast<const T*>(kv.k_pool), static_cast<const T*>(kv.v_pool), kv.block_table, kv.lengths,
        kv.pages_per_sequence, kv.page_tokens, kv.max_context, h.n_heads, h.n_kv_heads, h.d_head, qkv, ld_qkv,
        seq_of_row, scratch.part_o, scratch.part_m, scratch.part_l, scratch.splits, scale);
    MODSIM_CUDA_CHECK_LAUNCH("split_kv_kernel");
    const dim3 reduce_grid(static_cast<unsigned>(h.n_heads), static_cast<unsigned>(rows));
    split_kv_reduce_kernel<T><<<reduce_grid, reduce_threads, 0, stream>>>(
        kv.lengths, kv.max_context, h.n_heads, h.d_head, seq_of_row, scratch.part_o, scratch.part_m, scratch.part_l,
        scratch.splits, static_cast<T*>(out));
    MODSIM_CUDA_CHECK_LAUNCH("split_kv_reduce_kernel");
  });
}

}  // namespace modsim::kernels::cuda
