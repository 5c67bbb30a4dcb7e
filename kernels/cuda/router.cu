#include "kernels/cuda/router.cuh"

namespace modsim::kernels::cuda {

namespace {

constexpr int warps_per_block = 8;

template <class T, int V>
__global__ void router_kernel(const T* __restrict__ x, const T* __restrict__ w, float* __restrict__ r,
                              std::int64_t rows, std::int64_t d) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  for (std::int64_t row = warp; row < rows; row += warps) {
    const T* xr = x + row * d;
    float acc = 0.0f;
    for (std::int64_t i = static_cast<std::int64_t>(lane) * V; i < d; i += 32 * V) {
      float a[V], b[V];
      load_vec<T, V>(xr + i, a);
      load_vec<T, V>(w + i, b);
#pragma unroll
      for (int j = 0; j < V; ++j) acc = fmaf(a[j], b[j], acc);
    }
    acc = warp_sum(acc);
    if (lane == 0) r[row] = acc;
  }
}

template <class T>
void launch(const void* x, const void* w, float* r, std::int64_t rows, std::int64_t d, cudaStream_t stream) {
  const unsigned grid = grid_for(rows, warps_per_block);
  if (rows_vectorizable<T>(d))
    router_kernel<T, vec_width<T>>
        <<<grid, 32 * warps_per_block, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(w), r, rows, d);
  else
    router_kernel<T, 1>
        <<<grid, 32 * warps_per_block, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(w), r, rows, d);
  MODSIM_CUDA_CHECK_LAUNCH("router_kernel");
}

}  // namespace

void router(dtype t, const void* x, const void* w, float* r, std::int64_t rows, std::int64_t d, cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_dtype(t, [&](auto tag) { launch<decltype(tag)>(x, w, r, rows, d, stream); });
}

}  // namespace modsim::kernels::cuda
