#include "kernels/cuda/gemm.cuh"

#include <limits>
#include <string>

namespace modsim::kernels::cuda {

namespace {

cudaDataType_t cuda_type(dtype t) {
  switch (t) {
    case dtype::fp32:
      return CUDA_R_32F;
    case dtype::bf16:
      return CUDA_R_16BF;
    case dtype::fp16:
      return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

int to_int(std::int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw input_error("", "gemm", std::string(what) + " = " + std::to_string(v) + " does not fit cuBLAS's int");
  return static_cast<int>(v);
}

bool empty(const gemm_args& g) { return g.m == 0 || g.n == 0 || g.k == 0; }

// The column-major call: C'[n×m] = op(B')[n×k]·A'[k×m] with B' = B viewed column-major.
struct col_major {
  cublasOperation_t op_b;
  int m, n, k, lda, ldb, ldc;
  cudaDataType_t ab, c;
};

col_major to_col_major(const gemm_args& g) {
  return {g.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
          to_int(g.m, "m"),
          to_int(g.n, "n"),
          to_int(g.k, "k"),
          to_int(g.lda, "lda"),
          to_int(g.ldb, "ldb"),
          to_int(g.ldc, "ldc"),
          cuda_type(g.ab),
          cuda_type(g.c)};
}

}  // namespace

void gemm(cublasHandle_t handle, const gemm_args& g) {
  if (empty(g)) return;
  const col_major c = to_col_major(g);
  MODSIM_CUDA_CHECK(cublasGemmEx(handle, c.op_b, CUBLAS_OP_N, c.n, c.m, c.k, &g.alpha, g.b, c.ab, c.ldb, g.a, c.ab,
                                 c.lda, &g.beta, g.c_ptr, c.c, c.ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void gemm_strided_batched(cublasHandle_t handle, const gemm_args& g, std::int64_t stride_a, std::int64_t stride_b,
                          std::int64_t stride_c, std::int64_t batch) {
  if (empty(g) || batch == 0) return;
  const col_major c = to_col_major(g);
  MODSIM_CUDA_CHECK(cublasGemmStridedBatchedEx(
      handle, c.op_b, CUBLAS_OP_N, c.n, c.m, c.k, &g.alpha, g.b, c.ab, c.ldb, static_cast<long long>(stride_b), g.a,
      c.ab, c.lda, static_cast<long long>(stride_a), &g.beta, g.c_ptr, c.c, c.ldc, static_cast<long long>(stride_c),
      to_int(batch, "batch"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void gemm_pointer_batched(cublasHandle_t handle, const gemm_args& g, const void* const* a_array,
                          const void* const* b_array, void* const* c_array, std::int64_t batch) {
  if (empty(g) || batch == 0) return;
  const col_major c = to_col_major(g);
  MODSIM_CUDA_CHECK(cublasGemmBatchedEx(handle, c.op_b, CUBLAS_OP_N, c.n, c.m, c.k, &g.alpha, b_array, c.ab, c.ldb,
                                        a_array, c.ab, c.lda, &g.beta, c_array, c.c, c.ldc, to_int(batch, "batch"),
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace modsim::kernels::cuda
