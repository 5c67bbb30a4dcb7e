#include "kernels/cuda/gemm.cuh"

#include <algorithm>
#include <limits>
#include <utility>
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
  cublasOperation_t op_b, op_a;
  int m, n, k, lda, ldb, ldc;
  cudaDataType_t ab, c;
};

col_major to_col_major(const gemm_args& g) {
  return {g.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
          g.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N,
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
  MODSIM_CUDA_CHECK(cublasGemmEx(handle, c.op_b, c.op_a, c.n, c.m, c.k, &g.alpha, g.b, c.ab, c.ldb, g.a, c.ab, c.lda,
                                 &g.beta, g.c_ptr, c.c, c.ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void gemm_strided_batched(cublasHandle_t handle, const gemm_args& g, std::int64_t stride_a, std::int64_t stride_b,
                          std::int64_t stride_c, std::int64_t batch) {
  if (empty(g) || batch == 0) return;
  const col_major c = to_col_major(g);
  MODSIM_CUDA_CHECK(cublasGemmStridedBatchedEx(
      handle, c.op_b, c.op_a, c.n, c.m, c.k, &g.alpha, g.b, c.ab, c.ldb, static_cast<long long>(stride_b), g.a, c.ab,
      c.lda, static_cast<long long>(stride_a), &g.beta, g.c_ptr, c.c, c.ldc, static_cast<long long>(stride_c),
      to_int(batch, "batch"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void gemm_pointer_batched(cublasHandle_t handle, const gemm_args& g, const void* const* a_array,
                          const void* const* b_array, void* const* c_array, std::int64_t batch) {
  if (empty(g) || batch == 0) return;
  const col_major c = to_col_major(g);
  MODSIM_CUDA_CHECK(cublasGemmBatchedEx(handle, c.op_b, c.op_a, c.n, c.m, c.k, &g.alpha, b_array, c.ab, c.ldb, a_array,
                                        c.ab, c.lda, &g.beta, c_array, c.c, c.ldc, to_int(batch, "batch"),
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

namespace {

// The tile sizes of the cuBLASLt tile ids named here (the candidates of sim/cost/gemm_tiles.hpp and
// their neighbours); {0, 0} for another id.
std::pair<int, int> tile_size(std::uint32_t id) {
  switch (id) {
#define MODSIM_TILE(M, N)              \
  case CUBLASLT_MATMUL_TILE_##M##x##N: \
    return {M, N};
    MODSIM_TILE(64, 32)
    MODSIM_TILE(32, 128)
    MODSIM_TILE(64, 64)
    MODSIM_TILE(128, 32)
    MODSIM_TILE(64, 128)
    MODSIM_TILE(128, 64)
    MODSIM_TILE(64, 256)
    MODSIM_TILE(128, 128)
    MODSIM_TILE(256, 64)
    MODSIM_TILE(128, 256)
    MODSIM_TILE(256, 128)
    MODSIM_TILE(64, 96)
    MODSIM_TILE(96, 128)
    MODSIM_TILE(128, 96)
    MODSIM_TILE(128, 160)
    MODSIM_TILE(160, 128)
    MODSIM_TILE(192, 128)
    MODSIM_TILE(128, 192)
    MODSIM_TILE(64, 192)
    MODSIM_TILE(256, 256)
#undef MODSIM_TILE
    default:
      return {0, 0};
  }
}

// Destroys the cuBLASLt descriptors of one query, whatever happened.
struct lt_descriptors {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  lt_descriptors() = default;
  lt_descriptors(const lt_descriptors&) = delete;
  lt_descriptors& operator=(const lt_descriptors&) = delete;
  ~lt_descriptors() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

}  // namespace

backend::gemm_choice lt_heuristic(cublasLtHandle_t lt, const gemm_args& g, std::int64_t batch) {
  backend::gemm_choice out;
  if (empty(g) || batch <= 0) {
    out.note = "no work";
    return out;
  }
  col_major c{};
  try {
    c = to_col_major(g);
  } catch (const modsim::error& e) {
    out.note = e.what();
    return out;
  }
  lt_descriptors d;
  const auto ok = [&](cublasStatus_t s, const char* what) {
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    out.note = std::string(what) + ": " + cublasGetStatusString(s);
    return false;
  };
  // The call gemm() makes: cuBLAS's A is the row-major B (n×k, transposed or not), its B the
  // row-major A (k×m), its C the row-major C (n×m), all column-major with the row-major
  // leading dimensions.
  const cublasOperation_t no = CUBLAS_OP_N;
  const std::uint64_t rows_a = c.op_b == CUBLAS_OP_N ? std::uint64_t(c.n) : std::uint64_t(c.k);
  const std::uint64_t cols_a = c.op_b == CUBLAS_OP_N ? std::uint64_t(c.k) : std::uint64_t(c.n);
  if (!ok(cublasLtMatmulDescCreate(&d.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul descriptor") ||
      !ok(cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_TRANSA, &c.op_b, sizeof(c.op_b)), "transa") ||
      !ok(cublasLtMatmulDescSetAttribute(d.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no, sizeof(no)), "transb") ||
      !ok(cublasLtMatrixLayoutCreate(&d.a, c.ab, rows_a, cols_a, c.ldb), "layout A") ||
      !ok(cublasLtMatrixLayoutCreate(&d.b, c.ab, std::uint64_t(c.k), std::uint64_t(c.m), c.lda), "layout B") ||
      !ok(cublasLtMatrixLayoutCreate(&d.c, c.c, std::uint64_t(c.n), std::uint64_t(c.m), c.ldc), "layout C"))
    return out;
  if (batch > 1) {
    const auto count =
        static_cast<std::int32_t>(std::min<std::int64_t>(batch, std::numeric_limits<std::int32_t>::max()));
    const std::int64_t strides[3] = {std::int64_t(cols_a) * c.ldb, std::int64_t(c.m) * c.lda,
                                     std::int64_t(c.m) * c.ldc};
    cublasLtMatrixLayout_t layouts[3] = {d.a, d.b, d.c};
    for (int i = 0; i < 3; ++i)
      if (!ok(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
              "batch count") ||
          !ok(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
                                               sizeof(strides[i])),
              "batch stride"))
        return out;
  }
  const std::uint64_t workspace = 32ull << 20;
  if (!ok(cublasLtMatmulPreferenceCreate(&d.pref), "preference") ||
      !ok(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                               sizeof(workspace)),
          "workspace"))
    return out;
  cublasLtMatmulHeuristicResult_t r{};
  int found = 0;
  if (!ok(cublasLtMatmulAlgoGetHeuristic(lt, d.desc, d.a, d.b, d.c, d.c, d.pref, 1, &r, &found), "heuristic"))
    return out;
  if (found < 1) {
    out.note = "the heuristic found no algorithm";
    return out;
  }
  std::int32_t algo = 0, split = 1;
  std::uint32_t tile = 0, stages = 0;
  std::uint16_t cluster = 0;
  std::size_t written = 0;
  if (!ok(cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_ID, &algo, sizeof(algo), &written),
          "algorithm id") ||
      !ok(cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &written),
          "tile id") ||
      !ok(cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof(split),
                                               &written),
          "split-K") ||
      !ok(cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages),
                                               &written),
          "stages id") ||
      !ok(cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster,
                                               sizeof(cluster), &written),
          "cluster shape id"))
    return out;
  out.known = true;
  out.algo_id = algo;
  out.tile_id = static_cast<int>(tile);
  out.split_k = std::max(1, static_cast<int>(split));
  out.stages_id = static_cast<int>(stages);
  out.cluster_shape_id = cluster;
  const auto [tm, tn] = tile_size(tile);
  out.tile_m = tm;
  out.tile_n = tn;
  if (tm == 0) out.note = "tile id " + std::to_string(tile) + " is not one modsim names";
  return out;
}

void project(cublasHandle_t handle, dtype ab, const void* a, std::int64_t m, std::int64_t k, const void* w,
             std::int64_t n, void* c, dtype c_type, float beta) {
  gemm_args g;
  g.ab = ab;
  g.c = c_type;
  g.m = m;
  g.n = n;
  g.k = k;
  g.beta = beta;
  g.a = a;
  g.lda = k;
  g.b = w;
  g.ldb = n;
  g.c_ptr = c;
  g.ldc = n;
  gemm(handle, g);
}

}  // namespace modsim::kernels::cuda
