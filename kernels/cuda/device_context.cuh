#pragma once
// What one CUDA backend owns on its device (device_context: stream, cuBLAS handle and its
// workspace, the cuDNN session made on first use) and device_buffer, one block of device memory.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "kernels/cuda/attention_cudnn.hpp"
#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda::detail {

// cuBLAS's own scratch, given to it once so that no GEMM allocates (NVIDIA recommends
// 32 MiB on Hopper).
inline constexpr std::size_t cublas_workspace_bytes = std::size_t{32} << 20;

// What one backend owns on its device; shared with its workspaces so that either may be
// destroyed first.
struct device_context {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  void* cublas_workspace = nullptr;

  explicit device_context(int dev);
  ~device_context() { release(); }
  device_context(const device_context&) = delete;
  device_context& operator=(const device_context&) = delete;

  void make_current() const { MODSIM_CUDA_CHECK(cudaSetDevice(device)); }
  void synchronize() const { MODSIM_CUDA_CHECK(cudaStreamSynchronize(stream)); }

  // The cuDNN handle on `stream`, made on first use (fused attention only): loading cuDNN and
  // making a handle take long enough to keep them out of backends that never ask.
  const cudnn_session& cudnn();

  // One line naming the device (name, SMs, clocks, memory, L2) and the driver, runtime and
  // cuBLAS versions (backend::device()).
  std::string description() const;

 private:
  // Errors are ignored: this runs in destructors.
  void release() noexcept;

  std::unique_ptr<cudnn_session> m_cudnn;
};

// One cudaMalloc'ed block (256-byte aligned), zeroed on allocation; freed on destruction.
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(std::size_t bytes, cudaStream_t stream);
  ~device_buffer() {
    if (m_ptr != nullptr) cudaFree(m_ptr);
  }
  device_buffer(device_buffer&& o) noexcept
      : m_ptr(std::exchange(o.m_ptr, nullptr)), m_bytes(std::exchange(o.m_bytes, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      if (m_ptr != nullptr) cudaFree(m_ptr);
      m_ptr = std::exchange(o.m_ptr, nullptr);
      m_bytes = std::exchange(o.m_bytes, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  void* get() const { return m_ptr; }
  std::size_t bytes() const { return m_bytes; }
  template <class T>
  T* as() const {
    return static_cast<T*>(m_ptr);
  }

 private:
  void* m_ptr = nullptr;
  std::size_t m_bytes = 0;
};

}  // namespace modsim::kernels::cuda::detail
