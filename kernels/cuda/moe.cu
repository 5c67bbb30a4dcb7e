#include "kernels/cuda/moe.cuh"

#include "kernels/cuda/expert_router.cuh"
#include "kernels/cuda/gather.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/mlp_act.cuh"

namespace modsim::kernels::cuda {

namespace {

constexpr int threads = 128;

// y[t] = h[t] + gate[t]·out[slot(t)] (slot >= 0), else h[t]; fp32 arithmetic.
template <class T, int V>
__global__ void __launch_bounds__(threads)
    combine_kernel(const T* __restrict__ h, const T* __restrict__ out, const float* __restrict__ gate,
                   const std::int32_t* __restrict__ slot_of_token, T* __restrict__ y, std::int64_t m, std::int64_t d) {
  for (std::int64_t t = blockIdx.x; t < m; t += gridDim.x) {
    const std::int64_t slot = slot_of_token[t];
    const float g = slot >= 0 ? gate[t] : 0.0f;
    for (std::int64_t i = static_cast<std::int64_t>(threadIdx.x) * V; i < d; i += threads * V) {
      float a[V];
      load_vec<T, V>(h + t * d + i, a);
      if (slot >= 0) {
        float b[V];
        load_vec<T, V>(out + slot * d + i, b);
#pragma unroll
        for (int l = 0; l < V; ++l) a[l] += g * b[l];
      }
      store_vec<T, V>(y + t * d + i, a);
    }
  }
}

}  // namespace

void experts(dtype t, cublasHandle_t handle, cudaStream_t stream, const moe_buffers& b, const moe_dims& dims) {
  const std::int64_t m = dims.m, d = dims.d, dff = dims.d_ff, cap = dims.capacity, E = dims.experts;
  if (m == 0) return;
  const std::int64_t slots = E * cap;
  if (slots > 0) {
    MODSIM_CUDA_CHECK(
        cudaMemsetAsync(b.token_of_slot, 0xff, static_cast<std::size_t>(slots) * sizeof(std::int32_t), stream));
  }
  expert_slots(b.index, b.slot_of_token, b.token_of_slot, m, dims.experts, cap, stream);
  if (slots > 0) {
    copy_rows(t, b.u, b.token_of_slot, b.expert_in, slots, d, stream);
    gemm_args up{t, t, cap, dff, d, 1.0f, 0.0f, b.expert_in, d, b.w_up, dff, false, b.expert_hidden, dff};
    gemm_strided_batched(handle, up, cap * d, d * dff, cap * dff, E);
    if (dims.swiglu) {
      gemm_args gate = up;
      gate.b = b.w_gate;
      gate.c_ptr = b.expert_gate_hidden;
      gemm_strided_batched(handle, gate, cap * d, d * dff, cap * dff, E);
      silu_mul(t, b.expert_hidden, b.expert_gate_hidden, slots * dff, stream);
    } else {
      gelu(t, b.expert_hidden, slots * dff, stream);
    }
    gemm_args down{t, t, cap, d, dff, 1.0f, 0.0f, b.expert_hidden, dff, b.w_down, d, false, b.expert_out, d};
    gemm_strided_batched(handle, down, cap * dff, dff * d, cap * d, E);
  }
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const auto* hs = static_cast<const T*>(b.h);
    const auto* os = static_cast<const T*>(b.expert_out);
    auto* ys = static_cast<T*>(b.y);
    if (rows_vectorizable<T>(d))
      combine_kernel<T, vec_width<T>>
          <<<grid_for(m, 1), threads, 0, stream>>>(hs, os, b.gate, b.slot_of_token, ys, m, d);
    else
      combine_kernel<T, 1><<<grid_for(m, 1), threads, 0, stream>>>(hs, os, b.gate, b.slot_of_token, ys, m, d);
    MODSIM_CUDA_CHECK_LAUNCH("combine_kernel");
  });
}

}  // namespace modsim::kernels::cuda
