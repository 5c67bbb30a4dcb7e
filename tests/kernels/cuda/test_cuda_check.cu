// The CUDA backend's checking macro (kernels/cuda/common.cuh): a failed CUDA or cuBLAS call
// becomes modsim::error (runtime) naming the error, the call, the file and the line. Runs
// without a GPU: the error codes are fake, only their names are looked up.
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/common.cuh"

namespace {

cudaError_t fake_cuda_call(int) { return cudaErrorInvalidValue; }
cublasStatus_t fake_cublas_call() { return CUBLAS_STATUS_INVALID_VALUE; }

// The message of the modsim::error that `f` throws; fails the test when it throws nothing.
template <class F>
std::string message_of(F f, modsim::error_kind* kind) {
  try {
    f();
  } catch (const modsim::error& e) {
    *kind = e.kind();
    return e.what();
  }
  ADD_FAILURE() << "no modsim::error thrown";
  return {};
}

}  // namespace

TEST(CudaCheck, AFailedCudaCallNamesTheErrorTheCallTheFileAndTheLine) {
  modsim::error_kind kind = modsim::error_kind::bad_input;
  int line = 0;
  const std::string m = message_of(
      [&] {
        line = __LINE__ + 1;
        MODSIM_CUDA_CHECK(fake_cuda_call(42));
      },
      &kind);
  EXPECT_EQ(kind, modsim::error_kind::runtime);
  EXPECT_NE(m.find("CUDA error cudaErrorInvalidValue"), std::string::npos) << m;
  EXPECT_NE(m.find("in fake_cuda_call(42)"), std::string::npos) << m;
  EXPECT_NE(m.find(std::string("test_cuda_check.cu:") + std::to_string(line)), std::string::npos) << m;
}

TEST(CudaCheck, AFailedCublasCallNamesTheStatusTheCallTheFileAndTheLine) {
  modsim::error_kind kind = modsim::error_kind::bad_input;
  int line = 0;
  const std::string m = message_of(
      [&] {
        line = __LINE__ + 1;
        MODSIM_CUDA_CHECK(fake_cublas_call());
      },
      &kind);
  EXPECT_EQ(kind, modsim::error_kind::runtime);
  EXPECT_NE(m.find("cuBLAS error CUBLAS_STATUS_INVALID_VALUE"), std::string::npos) << m;
  EXPECT_NE(m.find("in fake_cublas_call()"), std::string::npos) << m;
  EXPECT_NE(m.find(std::string("test_cuda_check.cu:") + std::to_string(line)), std::string::npos) << m;
}

TEST(CudaCheck, SuccessDoesNotThrow) {
  EXPECT_NO_THROW(MODSIM_CUDA_CHECK(cudaSuccess));
  EXPECT_NO_THROW(MODSIM_CUDA_CHECK(CUBLAS_STATUS_SUCCESS));
}
