#include "kernels/cuda/topk.cuh"

#include <cub/block/block_scan.cuh>

namespace modsim::kernels::cuda {

namespace {

constexpr int threads = 256;  // = radix bins: thread t owns bin t during the select

// Ascending key order = descending weight order.
__device__ __forceinline__ std::uint32_t descending_key(float v) {
  if (isnan(v)) v = -INFINITY;
  if (v == 0.0f) v = 0.0f;  // -0 == +0 as in the CPU's comparison
  std::uint32_t u = __float_as_uint(v);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);  // order-preserving for floats
  return ~u;
}

__global__ void __launch_bounds__(threads)
    topk_kernel(const float* __restrict__ r, std::int32_t* __restrict__ index, std::int64_t seq_len, std::int64_t k) {
  using scan = cub::BlockScan<int, threads>;
  __shared__ typename scan::TempStorage scan_storage;
  __shared__ int histogram[threads];
  __shared__ std::uint32_t s_prefix;
  __shared__ int s_remaining;

  const int tid = static_cast<int>(threadIdx.x);
  const float* row = r + static_cast<std::int64_t>(blockIdx.x) * seq_len;
  std::int32_t* out = index + static_cast<std::int64_t>(blockIdx.x) * k;

  // Radix select of the k-th smallest key K: after the passes, `remaining` keys equal to K
  // are still needed and k − remaining keys are smaller than K.
  std::uint32_t prefix = 0, mask = 0;
  int remaining = static_cast<int>(k);
  for (int shift = 24; shift >= 0; shift -= 8) {
    histogram[tid] = 0;
    __syncthreads();
    for (std::int64_t i = tid; i < seq_len; i += threads) {
      const std::uint32_t key = descending_key(row[i]);
      if ((key & mask) == prefix) atomicAdd(&histogram[(key >> shift) & 0xffu], 1);
    }
    __syncthreads();
    const int count = histogram[tid];
    int before = 0;
    scan(scan_storage).ExclusiveSum(count, before);
    if (before < remaining && remaining <= before + count) {  // exactly one bin
      s_prefix = prefix | (static_cast<std::uint32_t>(tid) << shift);
      s_remaining = remaining - before;
    }
    __syncthreads();
    prefix = s_prefix;
    remaining = s_remaining;
    mask |= 0xffu << shift;
    __syncthreads();  // histogram and the scan storage are reused
  }
  const std::uint32_t kth = prefix;

  // Positions in ascending order: keys below K, then the first `remaining` equal to K.
  int equal_before = 0, chosen_before = 0;
  for (std::int64_t base = 0; base < seq_len && chosen_before < k; base += threads) {
    const std::int64_t i = base + tid;
    const bool valid = i < seq_len;
    const std::uint32_t key = valid ? descending_key(row[i]) : 0u;
    const bool less = valid && key < kth;
    const bool equal = valid && key == kth;
    int equal_rank = 0, equal_total = 0;
    scan(scan_storage).ExclusiveSum(equal ? 1 : 0, equal_rank, equal_total);
    __syncthreads();
    const bool chosen = less || (equal && equal_before + equal_rank < remaining);
    int slot = 0, chosen_total = 0;
    scan(scan_storage).ExclusiveSum(chosen ? 1 : 0, slot, chosen_total);
    __syncthreads();
    if (chosen) out[chosen_before + slot] = static_cast<std::int32_t>(i);
    equal_before += equal_total;
    chosen_before += chosen_total;
  }
}

}  // namespace

void topk(const float* r, std::int32_t* index, std::int64_t batch, std::int64_t seq_len, std::int64_t k,
          cudaStream_t stream) {
  if (batch == 0) return;
  if (k < 1 || k > seq_len)
    throw input_error("", "topk", "k = " + std::to_string(k) + " outside [1, " + std::to_string(seq_len) + "]");
  topk_kernel<<<static_cast<unsigned>(batch), threads, 0, stream>>>(r, index, seq_len, k);
  MODSIM_CUDA_CHECK_LAUNCH("topk_kernel");
}

}  // namespace modsim::kernels::cuda
