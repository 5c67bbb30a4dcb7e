#pragma once
// router: r = x·w over `rows` tokens (a GEMV, one warp per token, fp32 accumulation).
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

// x [rows, d] and w [d] of type t; r [rows] fp32.
void router(dtype t, const void* x, const void* w, float* r, std::int64_t rows, std::int64_t d, cudaStream_t stream);

}  // namespace modsim::kernels::cuda
