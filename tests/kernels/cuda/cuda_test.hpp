#pragma once
// What the CUDA tests share: the skip where no GPU can be reached, and a block shape from its
// dimensions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cuda_backend.hpp"

// Skips the test with "no CUDA device" on a machine without one.
#define MODSIM_REQUIRE_GPU() \
  if (::modsim::kernels::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"

namespace modsim::kernels::test {

// A layer of `batch` sequences of `seq` tokens, width d over `heads` query and `kv` key/value
// heads (d_head = d / heads), an MLP of d_ff, routed at `capacity` where it routes.
inline block_shape layer_shape(std::int64_t batch, std::int64_t seq, std::int64_t d, std::int64_t heads,
                               std::int64_t kv, std::int64_t d_ff, mlp_kind mlp, double capacity) {
  block_shape s;
  s.batch = batch;
  s.seq_len = seq;
  s.d_model = d;
  s.n_heads = heads;
  s.n_kv_heads = kv;
  s.d_head = d / heads;
  s.d_ff = d_ff;
  s.mlp = mlp;
  s.capacity = capacity;
  return s;
}

// Parity against the CPU: fp32 within 1e-4, bf16 within 2e-2 (norm-wise, relative).
inline double tolerance(dtype t) { return t == dtype::fp32 ? 1e-4 : 2e-2; }

// ‖got − want‖₂ / ‖want‖₂ over the first `count` values (the CPU's result is `want`).
inline double relative_error(const std::vector<float>& got, const std::vector<float>& want, std::size_t count) {
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < count && i < got.size() && i < want.size(); ++i) {
    const double g = got[i], w = want[i];
    diff += (g - w) * (g - w);
    norm += w * w;
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// The same over all of them, which must be as many.
inline double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  return relative_error(got, want, want.size());
}

}  // namespace modsim::kernels::test
