#pragma once
// attn_softmax: causal softmax in place over [matrices, n, n] score matrices. Row i keeps
// columns 0..i (max-subtracted, normalised, in fp32), columns i+1..n−1 become 0. The
// 1/sqrt(d_head) scale is applied by the scores GEMM, as in the CPU backend. One warp per row.
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

void attn_softmax(dtype t, void* scores, std::int64_t matrices, std::int64_t n, cudaStream_t stream);

}  // namespace modsim::kernels::cuda
