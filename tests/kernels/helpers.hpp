#pragma once
// Shapes and small helpers shared by the kernels tests.
#include <memory>

#include "kernels/backend.hpp"
#include "reference.hpp"
#include "core/error.hpp"

namespace modsim::kernels::test {

// fp32 against the float64 reference, norm-wise.
inline constexpr double tolerance = 1e-5;

// B=2, S=12, d=32, 4 query heads over 2 kv heads (GQA 4:2), d_head 8, d_ff 64.
inline block_shape small_shape(double capacity = 0.5, mlp_kind mlp = mlp_kind::gelu) {
  block_shape s;
  s.batch = 2;
  s.seq_len = 12;
  s.d_model = 32;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.d_head = 8;
  s.d_ff = 64;
  s.mlp = mlp;
  s.capacity = capacity;
  return s;
}

inline block_shape moe_shape(moe_variant variant, mlp_kind mlp = mlp_kind::gelu) {
  block_shape s = small_shape(0.5, mlp);
  s.variant = variant;
  s.experts = 4;
  s.noop_experts = variant == moe_variant::integrated ? 1 : 0;
  s.capacity_factor = 1.0;
  return s;
}

inline std::unique_ptr<workspace> make_ws(backend& be, const block_shape& s, std::uint64_t seed = 7) {
  workspace_options o;
  o.seed = seed;
  return be.make_workspace(s, dtype::fp32, o);
}

inline std::vector<float> head(const std::vector<float>& v, std::int64_t n) {
  return std::vector<float>(v.begin(), v.begin() + n);
}

}  // namespace modsim::kernels::test
