// The device side of the CUDA backend: making and releasing a device_context, its one-line
// description, device_buffer's allocation, and cuda_device_count (kernels/cuda_backend.hpp).
#include <cstdio>
#include <memory>
#include <string>

#include "kernels/cuda/device_context.cuh"
#include "kernels/cuda_backend.hpp"

namespace modsim::kernels {

namespace cuda::detail {
namespace {

std::string version_string(int v, int major_div, int minor_div, int minor_mod) {
  return std::to_string(v / major_div) + "." + std::to_string((v / minor_div) % minor_mod);
}

}  // namespace

device_context::device_context(int dev) : device(dev) {
  MODSIM_CUDA_CHECK(cudaSetDevice(device));
  try {
    MODSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    MODSIM_CUDA_CHECK(cublasCreate(&cublas));
    MODSIM_CUDA_CHECK(cublasSetStream(cublas, stream));
    // fp32 GEMMs stay fp32 (no TF32); bf16 GEMMs use the tensor cores regardless.
    MODSIM_CUDA_CHECK(cublasSetMathMode(cublas, CUBLAS_DEFAULT_MATH));
    MODSIM_CUDA_CHECK(cublasSetPointerMode(cublas, CUBLAS_POINTER_MODE_HOST));
    MODSIM_CUDA_CHECK(cudaMalloc(&cublas_workspace, cublas_workspace_bytes));
    MODSIM_CUDA_CHECK(cublasSetWorkspace(cublas, cublas_workspace, cublas_workspace_bytes));
  } catch (...) {
    release();
    throw;
  }
}

const cudnn_session& device_context::cudnn() {
  if (!m_cudnn) m_cudnn = std::make_unique<cudnn_session>(stream);
  return *m_cudnn;
}

std::string device_context::description() const {
  make_current();
  cudaDeviceProp prop{};
  MODSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int clock_khz = 0, memory_clock_khz = 0, driver = 0, runtime = 0, cublas_version = 0;
  MODSIM_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
  MODSIM_CUDA_CHECK(cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, device));
  MODSIM_CUDA_CHECK(cudaDriverGetVersion(&driver));
  MODSIM_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  MODSIM_CUDA_CHECK(cublasGetVersion(cublas, &cublas_version));
  const auto gib = static_cast<double>(prop.totalGlobalMem) / static_cast<double>(1ULL << 30);
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f", gib);
  return std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
         std::to_string(prop.multiProcessorCount) + " SMs, " + std::to_string(clock_khz / 1000) + " MHz, memory " +
         memory + " GiB at " + std::to_string(memory_clock_khz / 1000) + " MHz, L2 " +
         std::to_string(prop.l2CacheSize >> 20) + " MiB, driver " + version_string(driver, 1000, 10, 100) +
         ", runtime " + version_string(runtime, 1000, 10, 100) + ", cuBLAS " + std::to_string(cublas_version / 10000) +
         "." + std::to_string((cublas_version / 100) % 100) + "." + std::to_string(cublas_version % 100);
}

void device_context::release() noexcept {
  cudaSetDevice(device);
  if (stream != nullptr) cudaStreamSynchronize(stream);
  m_cudnn.reset();
  if (cublas != nullptr) cublasDestroy(cublas);
  if (cublas_workspace != nullptr) cudaFree(cublas_workspace);
  if (stream != nullptr) cudaStreamDestroy(stream);
  cublas = nullptr;
  cublas_workspace = nullptr;
  stream = nullptr;
}

device_buffer::device_buffer(std::size_t bytes, cudaStream_t stream) : m_bytes(bytes) {
  if (bytes == 0) return;
  MODSIM_CUDA_CHECK(cudaMalloc(&m_ptr, bytes));
  const cudaError_t status = cudaMemsetAsync(m_ptr, 0, bytes, stream);
  if (status != cudaSuccess) {
    cudaFree(m_ptr);
    m_ptr = nullptr;
    ::modsim::kernels::cuda::check(status, "cudaMemsetAsync(m_ptr, 0, bytes, stream)", __FILE__, __LINE__);
  }
}

}  // namespace cuda::detail

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the error the query left
    return 0;
  }
  return count;
}

}  // namespace modsim::kernels
