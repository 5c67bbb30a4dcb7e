#pragma once
// Row-major GEMMs through cuBLAS (column-major underneath: C = A·B row-major is Cᵀ = Bᵀ·Aᵀ
// column-major, so the operands are swapped). fp32: CUBLAS_COMPUTE_32F, no TF32. bf16:
// bf16 operands on the tensor cores, fp32 accumulation (CUBLAS_COMPUTE_32F).
#include <cstdint>

#include <cublasLt.h>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

// C[m×n] = alpha·op(A)·op(B) + beta·C, row-major with leading dimensions lda/ldb/ldc.
// op(A) = A ([m×k]) or, with a_transposed, Aᵀ where A is stored [k×m] (the training's weight
// gradients, dW = Xᵀ·dY); op(B) = B ([k×n]) or, with b_transposed, Bᵀ where B is stored [n×k]. A and B have type
// `ab`, C has type `c` (ab or fp32). m, n or k of 0 does nothing.
struct gemm_args {
  dtype ab = dtype::fp32;
  dtype c = dtype::fp32;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
  const void* a = nullptr;
  std::int64_t lda = 0;
  const void* b = nullptr;
  std::int64_t ldb = 0;
  bool b_transposed = false;
  void* c_ptr = nullptr;
  std::int64_t ldc = 0;
  bool a_transposed = false;  // last, so that positional initializers of the others still read
};

void gemm(cublasHandle_t handle, const gemm_args& g);

// A projection: C[m, n] (type c_type) = A[m, k]·W[k, n] + beta·C, row-major and tightly packed,
// A and W of type ab. The one helper the prefill block and the decode step project through.
void project(cublasHandle_t handle, dtype ab, const void* a, std::int64_t m, std::int64_t k, const void* w,
             std::int64_t n, void* c, dtype c_type, float beta);

// `batch` GEMMs, operand i at a + i·stride_a (elements), etc.
void gemm_strided_batched(cublasHandle_t handle, const gemm_args& g, std::int64_t stride_a, std::int64_t stride_b,
                          std::int64_t stride_c, std::int64_t batch);

// `batch` GEMMs whose operands are listed in device arrays of pointers (each pointer must be
// 16-byte aligned: cuBLAS's tensor-core kernels assume it). g.a/g.b/g.c_ptr are ignored.
void gemm_pointer_batched(cublasHandle_t handle, const gemm_args& g, const void* const* a_array,
                          const void* const* b_array, void* const* c_array, std::int64_t batch);

// cuBLASLt's heuristic (its first answer) for the column-major call the functions above hand
// cuBLAS for `g` (types, sizes, leading dimensions and the transposition of B; no pointer is
// read and nothing runs), `batch` products described as strided, with the workspace cuBLAS
// itself may use on Hopper (32 MiB). The tile is in cuBLAS's m×n, which is this row-major
// call's n×m. Never throws: a failure is known = false and a note.
backend::gemm_choice lt_heuristic(cublasLtHandle_t lt, const gemm_args& g, std::int64_t batch);

}  // namespace modsim::kernels::cuda
