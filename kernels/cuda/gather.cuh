#pragma once
// gather: x̃ = x[idx], r̃ = r[idx] (row = b·S + idx[b·k + j]).
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

// x [B·S, d] and routed_x [B·k, d] of type t; r [B·S], routed_r [B·k] fp32; index [B, k].
void gather(dtype t, const void* x, const float* r, const std::int32_t* index, void* routed_x, float* routed_r,
            std::int64_t batch, std::int64_t seq_len, std::int64_t k, std::int64_t d, cudaStream_t stream);

// dst[i] = src[rows[i]] for i < count (rows of length d, type t): row copies for the MoE
// dispatch; rows[i] < 0 writes a zero row.
void copy_rows(dtype t, const void* src, const std::int32_t* rows, void* dst, std::int64_t count, std::int64_t d,
               cudaStream_t stream);

}  // namespace modsim::kernels::cuda
