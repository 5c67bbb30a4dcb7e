#pragma once
// attn_norm / mlp_norm: out[r] = in[r] / sqrt(mean(in[r]²) + eps) · gain, in fp32 (eps as
// the CPU backend: 1e-6 inside the square root). One block per row.
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

inline constexpr float rms_norm_eps = 1e-6f;

// in, out [rows, d] and gain [d], all of type t.
void rms_norm(dtype t, const void* in, const void* gain, void* out, std::int64_t rows, std::int64_t d,
              cudaStream_t stream);
// The same from an fp32 input (the decode step's residual stream) to gain and out of type t.
void rms_norm_from_f32(dtype t, const float* in, const void* gain, void* out, std::int64_t rows, std::int64_t d,
                       cudaStream_t stream);

}  // namespace modsim::kernels::cuda
