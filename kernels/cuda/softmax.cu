#include "kernels/cuda/softmax.cuh"

namespace modsim::kernels::cuda {

namespace {

constexpr int warps_per_block = 8;

template <class T>
__global__ void __launch_bounds__(32 * warps_per_block)
    causal_softmax_kernel(T* __restrict__ scores, std::int64_t rows, std::int64_t n) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32; r < rows;
       r += warps) {
    T* s = scores + r * n;
    const std::int64_t len = r % n + 1;  // causal: row i sees columns 0..i
    float m = -INFINITY;
    for (std::int64_t j = lane; j < len; j += 32) m = fmaxf(m, to_float(s[j]));
    m = warp_max(m);
    float sum = 0.0f;
    for (std::int64_t j = lane; j < len; j += 32) sum += expf(to_float(s[j]) - m);
    sum = warp_sum(sum);
    const float inv = 1.0f / sum;
    for (std::int64_t j = lane; j < len; j += 32) s[j] = from_float<T>(expf(to_float(s[j]) - m) * inv);
    for (std::int64_t j = len + lane; j < n; j += 32) s[j] = from_float<T>(0.0f);
  }
}

}  // namespace

void attn_softmax(dtype t, void* scores, std::int64_t matrices, std::int64_t n, cudaStream_t stream) {
  const std::int64_t rows = matrices * n;
  if (rows == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    causal_softmax_kernel<T>
        <<<grid_for(rows, warps_per_block), 32 * warps_per_block, 0, stream>>>(static_cast<T*>(scores), rows, n);
    MODSIM_CUDA_CHECK_LAUNCH("causal_softmax_kernel");
  });
}

}  // namespace modsim::kernels::cuda
