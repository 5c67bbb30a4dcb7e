#pragma once
// scatter (Equation 1): out_i = x_i + r_i·(y_j − x̃_j) for the routed token i = idx_j, in
// fp32. `out` holds x^{l+1} in place: only rows routed now or by the previous scatter are
// written (restore_rows puts x back into the previous ones first), as in the CPU backend.
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

// out[rows[j]] = x[rows[j]] for j < count (rows of length d, type t).
void restore_rows(dtype t, const void* x, const std::int32_t* rows, void* out, std::int64_t count, std::int64_t d,
                  cudaStream_t stream);

// x, out [B·S, d]; y, routed_x [B·k, d] (type t); routed_r [B·k] fp32; index [B, k].
// Writes the rows it updated (b·S + idx) to written_rows [B·k].
void scatter(dtype t, const void* x, const void* y, const void* routed_x, const float* routed_r,
             const std::int32_t* index, void* out, std::int32_t* written_rows, std::int64_t batch, std::int64_t seq_len,
             std::int64_t k, std::int64_t d, cudaStream_t stream);

}  // namespace modsim::kernels::cuda
