#pragma once
// topk: per sequence, the k positions with the largest router weight, sorted by position.
// Ties: the lower position wins (as the CPU backend's stable descending argsort); NaN counts
// as -inf and -0 as +0, so exactly the CPU's choice. One block per sequence: a 4-pass radix
// select (8 bits a pass) finds the k-th largest key, then two block scans over positions
// write the chosen positions in ascending order.
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

// r [batch, seq_len] fp32; index [batch, k] int32. 1 <= k <= seq_len.
void topk(const float* r, std::int32_t* index, std::int64_t batch, std::int64_t seq_len, std::int64_t k,
          cudaStream_t stream);

}  // namespace modsim::kernels::cuda
