#pragma once
// mlp_act, in place in the hidden buffer, in fp32 with the CPU backend's formulas:
// gelu (tanh form) x·sigmoid(2·√(2/π)(x + 0.044715x³)); swiglu silu(gate)·up.
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

// up [count] ← gelu(up), type t.
void gelu(dtype t, void* up, std::int64_t count, cudaStream_t stream);
// up [count] ← gate·sigmoid(gate)·up, type t.
void silu_mul(dtype t, void* up, const void* gate, std::int64_t count, cudaStream_t stream);

}  // namespace modsim::kernels::cuda
