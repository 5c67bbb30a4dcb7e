#pragma once
// Shared by every file of the CUDA backend: the one checking macro for CUDA runtime and
// cuBLAS calls, element types (fp32 and bf16) with fp32 conversion helpers, 16-byte vector
// access, warp/launch helpers. Only .cu/.cuh files of kernels/cuda/ include it.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/backend.hpp"
#include "core/error.hpp"

namespace modsim::kernels::cuda {

// "LIBRARY error NAME (DESCRIPTION) in CALL at FILE:LINE" — the message of every failed
// CUDA or cuBLAS call, thrown as modsim::error (runtime).
inline std::string check_message(const char* library, const char* name, const char* description, const char* call,
                                 const char* file, int line) {
  return std::string(library) + " error " + name + " (" + description + ") in " + call + " at " + file + ":" +
         std::to_string(line);
}

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw modsim::runtime_error(
      check_message("CUDA", cudaGetErrorName(status), cudaGetErrorString(status), call, file, line));
}

inline void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw modsim::runtime_error(
      check_message("cuBLAS", cublasGetStatusName(status), cublasGetStatusString(status), call, file, line));
}

}  // namespace modsim::kernels::cuda

// Checks a cudaError_t or cublasStatus_t; throws modsim::error (runtime) naming the call,
// the file and the line.
#define MODSIM_CUDA_CHECK(call) ::modsim::kernels::cuda::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports a launch error (bad configuration, no kernel image) under
// the kernel's name. Errors during execution surface at the next synchronising call.
#define MODSIM_CUDA_CHECK_LAUNCH(kernel_name) \
  ::modsim::kernels::cuda::check(cudaGetLastError(), kernel_name "<<<...>>>", __FILE__, __LINE__)

namespace modsim::kernels::cuda {

using bf16 = __nv_bfloat16;

// Element conversions; all arithmetic is in fp32.
__host__ __device__ __forceinline__ float to_float(float v) { return v; }
__host__ __device__ __forceinline__ float to_float(bf16 v) { return __bfloat162float(v); }
template <class T>
__host__ __device__ __forceinline__ T from_float(float v);
template <>
__host__ __device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__host__ __device__ __forceinline__ bf16 from_float<bf16>(float v) {
  return __float2bfloat16_rn(v);
}

// Elements of T in one 16-byte access.
template <class T>
inline constexpr int vec_width = 16 / static_cast<int>(sizeof(T));

// V consecutive elements at p (16-byte aligned when V = vec_width<T>), as fp32.
template <class T, int V>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[V]) {
  if constexpr (V * sizeof(T) == 16) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = to_float(e[i]);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = to_float(p[i]);
  }
}

template <class T, int V>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[V]) {
  if constexpr (V * sizeof(T) == 16) {
    uint4 raw;
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int i = 0; i < V; ++i) e[i] = from_float<T>(in[i]);
    *reinterpret_cast<uint4*>(p) = raw;
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) p[i] = from_float<T>(in[i]);
  }
}

// Rows of length `cols` can be read with 16-byte vectors (buffers come from cudaMalloc,
// which aligns to 256 bytes, and row r starts at r·cols elements).
template <class T>
inline bool rows_vectorizable(std::int64_t cols) {
  return cols % vec_width<T> == 0;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Blocks of `per_block` covering `n` items, capped by CUDA's grid limit (kernels loop).
inline unsigned grid_for(std::int64_t n, std::int64_t per_block, std::int64_t cap = 1 << 20) {
  std::int64_t blocks = (n + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  if (blocks > cap) blocks = cap;
  return static_cast<unsigned>(blocks);
}

// Calls f(T{}) with T = float or bf16 for the workspace's dtype.
template <class F>
void dispatch_dtype(dtype t, F&& f) {
  switch (t) {
    case dtype::fp32:
      f(float{});
      return;
    case dtype::bf16:
      f(bf16{});
      return;
    case dtype::fp16:
      break;
  }
  throw input_error("", "dtype", "the cuda backend supports fp32 and bf16, got " + std::string(to_string(t)));
}

}  // namespace modsim::kernels::cuda
