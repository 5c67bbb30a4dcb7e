#include "kernels/cuda/mlp_act.cuh"

namespace modsim::kernels::cuda {

namespace {

constexpr int threads = 256;

__device__ __forceinline__ float gelu_tanh(float v) {
  constexpr float c = 0.7978845608028654f;  // sqrt(2/pi)
  const float u = 2.0f * c * (v + 0.044715f * v * v * v);
  return v / (1.0f + expf(-u));
}

__device__ __forceinline__ float silu_times(float g, float up) { return g / (1.0f + expf(-g)) * up; }

// Elements [0, count) in chunks of V (count % V == 0).
template <class T, int V, bool swiglu>
__global__ void __launch_bounds__(threads)
    act_kernel(T* __restrict__ up, const T* __restrict__ gate, std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * threads * V;
  for (std::int64_t i = (static_cast<std::int64_t>(blockIdx.x) * threads + threadIdx.x) * V; i < count; i += stride) {
    float u[V];
    load_vec<T, V>(up + i, u);
    if constexpr (swiglu) {
      float g[V];
      load_vec<T, V>(gate + i, g);
#pragma unroll
      for (int j = 0; j < V; ++j) u[j] = silu_times(g[j], u[j]);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) u[j] = gelu_tanh(u[j]);
    }
    store_vec<T, V>(up + i, u);
  }
}

template <bool swiglu>
void launch(dtype t, void* up, const void* gate, std::int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    auto* u = static_cast<T*>(up);
    const auto* g = static_cast<const T*>(gate);
    constexpr int V = vec_width<T>;
    if (count % V == 0)
      act_kernel<T, V, swiglu><<<grid_for(count / V, threads, 1 << 16), threads, 0, stream>>>(u, g, count);
    else
      act_kernel<T, 1, swiglu><<<grid_for(count, threads, 1 << 16), threads, 0, stream>>>(u, g, count);
    MODSIM_CUDA_CHECK_LAUNCH("act_kernel");
  });
}

}  // namespace

void gelu(dtype t, void* up, std::int64_t count, cudaStream_t stream) { launch<false>(t, up, nullptr, count, stream); }

void silu_mul(dtype t, void* up, const void* gate, std::int64_t count, cudaStream_t stream) {
  launch<true>(t, up, gate, count, stream);
}

}  // namespace modsim::kernels::cuda
