#include "kernels/cuda/gather.cuh"

namespace modsim::kernels::cuda {

namespace {

constexpr int threads = 128;

template <class T, int V>
__device__ __forceinline__ void copy_row(const T* __restrict__ src, T* __restrict__ dst, std::int64_t d) {
  for (std::int64_t i = static_cast<std::int64_t>(threadIdx.x) * V; i < d; i += threads * V) {
    float v[V];
    load_vec<T, V>(src + i, v);
    store_vec<T, V>(dst + i, v);
  }
}

template <class T, int V>
__global__ void __launch_bounds__(threads)
    gather_kernel(const T* __restrict__ x, const float* __restrict__ r, const std::int32_t* __restrict__ index,
                  T* __restrict__ routed_x, float* __restrict__ routed_r, std::int64_t rows, std::int64_t seq_len,
                  std::int64_t k, std::int64_t d) {
  for (std::int64_t j = blockIdx.x; j < rows; j += gridDim.x) {
    const std::int64_t row = (j / k) * seq_len + index[j];
    copy_row<T, V>(x + row * d, routed_x + j * d, d);
    if (threadIdx.x == 0) routed_r[j] = r[row];
  }
}

template <class T, int V>
__global__ void __launch_bounds__(threads)
    copy_rows_kernel(const T* __restrict__ src, const std::int32_t* __restrict__ rows, T* __restrict__ dst,
                     std::int64_t count, std::int64_t d) {
  for (std::int64_t j = blockIdx.x; j < count; j += gridDim.x) {
    const std::int32_t row = rows[j];
    if (row >= 0) {
      copy_row<T, V>(src + static_cast<std::int64_t>(row) * d, dst + j * d, d);
    } else {
      float zero[V] = {};
      for (std::int64_t i = static_cast<std::int64_t>(threadIdx.x) * V; i < d; i += threads * V)
        store_vec<T, V>(dst + j * d + i, zero);
    }
  }
}

}  // namespace

void gather(dtype t, const void* x, const float* r, const std::int32_t* index, void* routed_x, float* routed_r,
            std::int64_t batch, std::int64_t seq_len, std::int64_t k, std::int64_t d, cudaStream_t stream) {
  const std::int64_t rows = batch * k;
  if (rows == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const auto* xs = static_cast<const T*>(x);
    auto* xt = static_cast<T*>(routed_x);
    if (rows_vectorizable<T>(d))
      gather_kernel<T, vec_width<T>>
          <<<grid_for(rows, 1), threads, 0, stream>>>(xs, r, index, xt, routed_r, rows, seq_len, k, d);
    else
      gather_kernel<T, 1><<<grid_for(rows, 1), threads, 0, stream>>>(xs, r, index, xt, routed_r, rows, seq_len, k, d);
    MODSIM_CUDA_CHECK_LAUNCH("gather_kernel");
  });
}

void copy_rows(dtype t, const void* src, const std::int32_t* rows, void* dst, std::int64_t count, std::int64_t d,
               cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const auto* s = static_cast<const T*>(src);
    auto* o = static_cast<T*>(dst);
    if (rows_vectorizable<T>(d))
      copy_rows_kernel<T, vec_width<T>><<<grid_for(count, 1), threads, 0, stream>>>(s, rows, o, count, d);
    else
      copy_rows_kernel<T, 1><<<grid_for(count, 1), threads, 0, stream>>>(s, rows, o, count, d);
    MODSIM_CUDA_CHECK_LAUNCH("copy_rows_kernel");
  });
}

}  // namespace modsim::kernels::cuda
