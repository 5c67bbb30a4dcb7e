#include "kernels/cuda/rmsnorm.cuh"

#include <cub/block/block_reduce.cuh>

namespace modsim::kernels::cuda {

namespace {

constexpr int threads = 256;

// In: the input's type (the block's dtype, or fp32 for the decode step's residual stream);
// T: the gain's and the output's.
template <class In, class T, int V>
__global__ void __launch_bounds__(threads) rms_norm_kernel(const In* __restrict__ in, const T* __restrict__ gain,
                                                           T* __restrict__ out, std::int64_t rows, std::int64_t d) {
  using reduce = cub::BlockReduce<float, threads>;
  __shared__ typename reduce::TempStorage storage;
  __shared__ float s_scale;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const In* a = in + row * d;
    T* o = out + row * d;
    float sum = 0.0f;
    for (std::int64_t i = static_cast<std::int64_t>(threadIdx.x) * V; i < d; i += threads * V) {
      float v[V];
      load_vec<In, V>(a + i, v);
#pragma unroll
      for (int j = 0; j < V; ++j) sum = fmaf(v[j], v[j], sum);
    }
    sum = reduce(storage).Sum(sum);
    if (threadIdx.x == 0) s_scale = 1.0f / sqrtf(sum / static_cast<float>(d) + rms_norm_eps);
    __syncthreads();
    const float scale = s_scale;
    for (std::int64_t i = static_cast<std::int64_t>(threadIdx.x) * V; i < d; i += threads * V) {
      float v[V], g[V];
      load_vec<In, V>(a + i, v);
      load_vec<T, V>(gain + i, g);
#pragma unroll
      for (int j = 0; j < V; ++j) v[j] = v[j] * scale * g[j];
      store_vec<T, V>(o + i, v);
    }
    __syncthreads();  // s_scale and the reduce storage are reused by the next row
  }
}

}  // namespace

void rms_norm(dtype t, const void* in, const void* gain, void* out, std::int64_t rows, std::int64_t d,
              cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const auto* a = static_cast<const T*>(in);
    const auto* g = static_cast<const T*>(gain);
    auto* o = static_cast<T*>(out);
    if (rows_vectorizable<T>(d))
      rms_norm_kernel<T, T, vec_width<T>><<<grid_for(rows, 1), threads, 0, stream>>>(a, g, o, rows, d);
    else
      rms_norm_kernel<T, T, 1><<<grid_for(rows, 1), threads, 0, stream>>>(a, g, o, rows, d);
    MODSIM_CUDA_CHECK_LAUNCH("rms_norm_kernel");
  });
}

void rms_norm_from_f32(dtype t, const float* in, const void* gain, void* out, std::int64_t rows, std::int64_t d,
                       cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    rms_norm_kernel<float, T, 1><<<grid_for(rows, 1, 1 << 16), threads, 0, stream>>>(in, static_cast<const T*>(gain),
                                                                                     static_cast<T*>(out), rows, d);
    MODSIM_CUDA_CHECK_LAUNCH("rms_norm_kernel");
  });
}

}  // namespace modsim::kernels::cuda
