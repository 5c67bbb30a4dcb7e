// kernels/cpu/mlp.cpp: mlp_norm, mlp_up, mlp_gate, mlp_act, mlp_down (gelu and swiglu).
#include <gtest/gtest.h>

#include "helpers.hpp"

namespace modsim::kernels {
namespace {

using test::head;
using test::make_ws;
using test::small_shape;
using test::tolerance;

class MlpOps : public ::testing::TestWithParam<mlp_kind> {
 protected:
  void SetUp() override {
    m_shape = small_shape(0.5, GetParam());
    m_backend = make_cpu_backend(2);
    m_ws = make_ws(*m_backend, m_shape);
    m_m = m_shape.batch * m_shape.block_tokens();
  }
  bool swiglu() const { return m_shape.mlp == mlp_kind::swiglu; }
  block_shape m_shape;
  std::unique_ptr<backend> m_backend;
  std::unique_ptr<workspace> m_ws;
  std::int64_t m_m = 0;
};

TEST_P(MlpOps, MlpNormIsRmsNormOfH) {
  const auto h = ref::to_double(head(m_ws->download(tensor::h), m_m * m_shape.d_model));
  m_backend->run(op::mlp_norm, *m_ws);
  const auto expected = ref::rms_norm(h, ref::to_double(m_ws->download(tensor::mlp_norm_g)), m_m, m_shape.d_model);
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::mlp_in), expected), tolerance);
}

TEST_P(MlpOps, UpAndGateProjectionsMatchTheReference) {
  const std::int64_t d = m_shape.d_model, f = m_shape.d_ff;
  m_ws->upload(tensor::mlp_in, ref::random_floats(static_cast<std::size_t>(m_m * d), 51));
  const auto u = ref::to_double(head(m_ws->download(tensor::mlp_in), m_m * d));
  const auto w = ref::read_weights(*m_ws);
  m_backend->run(op::mlp_up, *m_ws);
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::mlp_hidden), ref::matmul(u, w.wup, m_m, d, f)), tolerance);
  if (swiglu()) {
    m_backend->run(op::mlp_gate, *m_ws);
    EXPECT_LE(ref::relative_error(m_ws->download(tensor::mlp_gate_hidden), ref::matmul(u, w.wgate, m_m, d, f)),
              tolerance);
  } else {
    EXPECT_THROW(m_backend->run(op::mlp_gate, *m_ws), modsim::error);
  }
}

TEST_P(MlpOps, ActIsGeluTanhOrSiluTimesUp) {
  const std::int64_t count = m_m * m_shape.d_ff;
  const auto up = ref::random_floats(static_cast<std::size_t>(count), 53, 3.0);
  const auto gate = ref::random_floats(static_cast<std::size_t>(count), 57, 3.0);
  m_ws->upload(tensor::mlp_hidden, up);
  if (swiglu()) m_ws->upload(tensor::mlp_gate_hidden, gate);
  m_backend->run(op::mlp_act, *m_ws);
  ref::mat expected(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < expected.size(); ++i)
    expected[i] = swiglu() ? ref::silu(gate[i]) * up[i] : ref::gelu(up[i]);
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::mlp_hidden), expected), tolerance);
}

TEST_P(MlpOps, DownAddsTheResidual) {
  const std::int64_t d = m_shape.d_model, f = m_shape.d_ff;
  const auto a = ref::to_double(head(m_ws->download(tensor::mlp_hidden), m_m * f));
  const auto h = ref::to_double(head(m_ws->download(tensor::h), m_m * d));
  m_backend->run(op::mlp_down, *m_ws);
  auto expected = ref::matmul(a, ref::read_weights(*m_ws).wdown, m_m, f, d);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] += h[i];
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::y), expected), tolerance);
}

std::string kind_name(const ::testing::TestParamInfo<mlp_kind>& p) {
  return p.param == mlp_kind::gelu ? "Gelu" : "Swiglu";
}

INSTANTIATE_TEST_SUITE_P(Kinds, MlpOps, ::testing::Values(mlp_kind::gelu, mlp_kind::swiglu), kind_name);

}  // namespace
}  // namespace modsim::kernels
