#include "kernels/cuda/scatter.cuh"

namespace modsim::kernels::cuda {

namespace {

constexpr int threads = 128;

template <class T, int V>
__global__ void __launch_bounds__(threads)
    restore_kernel(const T* __restrict__ x, const std::int32_t* __restrict__ rows, T* __restrict__ out,
                   std::int64_t count, std::int64_t d) {
  for (std::int64_t j = blockIdx.x; j < count; j += gridDim.x) {
    const std::int64_t row = rows[j];
    for (std::int64_t i = static_cast<std::int64_t>(threadIdx.x) * V; i < d; i += threads * V) {
      float v[V];
      load_vec<T, V>(x + row * d + i, v);
      store_vec<T, V>(out + row * d + i, v);
    }
  }
}

template <class T, int V>
__global__ void __launch_bounds__(threads)
    scatter_kernel(const T* __restrict__ x, const T* __restrict__ y, const T* __restrict__ xt,
                   const float* __restrict__ rt, const std::int32_t* __restrict__ index, T* __restrict__ out,
                   std::int32_t* __restrict__ written, std::int64_t count, std::int64_t seq_len, std::int64_t k,
                   std::int64_t d) {
  for (std::int64_t j = blockIdx.x; j < count; j += gridDim.x) {
    const std::int64_t row = (j / k) * seq_len + index[j];
    const float r = rt[j];
    for (std::int64_t i = static_cast<std::int64_t>(threadIdx.x) * V; i < d; i += threads * V) {
      float a[V], b[V], c[V];
      load_vec<T, V>(x + row * d + i, a);
      load_vec<T, V>(y + j * d + i, b);
      load_vec<T, V>(xt + j * d + i, c);
#pragma unroll
      for (int l = 0; l < V; ++l) a[l] = a[l] + r * (b[l] - c[l]);
      store_vec<T, V>(out + row * d + i, a);
    }
    if (threadIdx.x == 0) written[j] = static_cast<std::int32_t>(row);
  }
}

}  // namespace

void restore_rows(dtype t, const void* x, const std::int32_t* rows, void* out, std::int64_t count, std::int64_t d,
                  cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const auto* xs = static_cast<const T*>(x);
    auto* o = static_cast<T*>(out);
    if (rows_vectorizable<T>(d))
      restore_kernel<T, vec_width<T>><<<grid_for(count, 1), threads, 0, stream>>>(xs, rows, o, count, d);
    else
      restore_kernel<T, 1><<<grid_for(count, 1), threads, 0, stream>>>(xs, rows, o, count, d);
    MODSIM_CUDA_CHECK_LAUNCH("restore_kernel");
  });
}

void scatter(dtype t, const void* x, const void* y, const void* routed_x, const float* routed_r,
             const std::int32_t* index, void* out, std::int32_t* written_rows, std::int64_t batch, std::int64_t seq_len,
             std::int64_t k, std::int64_t d, cudaStream_t stream) {
  const std::int64_t count = batch * k;
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const auto* xs = static_cast<const T*>(x);
    const auto* ys = static_cast<const T*>(y);
    const auto* xt = static_cast<const T*>(routed_x);
    auto* o = static_cast<T*>(out);
    if (rows_vectorizable<T>(d))
      scatter_kernel<T, vec_width<T>><<<grid_for(count, 1), threads, 0, stream>>>(xs, ys, xt, routed_r, index, o,
                                                                                  written_rows, count, seq_len, k, d);
    else
      scatter_kernel<T, 1><<<grid_for(count, 1), threads, 0, stream>>>(xs, ys, xt, routed_r, index, o, written_rows,
                                                                       count, seq_len, k, d);
    MODSIM_CUDA_CHECK_LAUNCH("scatter_kernel");
  });
}

}  // namespace modsim::kernels::cuda
