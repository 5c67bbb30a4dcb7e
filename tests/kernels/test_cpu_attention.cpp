// kernels/cpu/attention.cpp: attn_norm, qkv_proj, attn_scores, attn_softmax, attn_values,
// out_proj, each run alone against the float64 reference (GQA 4:2). Single ops work on the
// routed token set (k per sequence; k = S at capacity 1).
#include <gtest/gtest.h>

#include "helpers.hpp"

namespace modsim::kernels {
namespace {

using test::head;
using test::make_ws;
using test::small_shape;
using test::tolerance;

class AttentionOps : public ::testing::TestWithParam<double> {
 protected:
  void SetUp() override {
    m_shape = small_shape(GetParam());
    m_backend = make_cpu_backend(2);
    m_ws = make_ws(*m_backend, m_shape);
    m_n = m_shape.block_tokens();
    m_m = m_shape.batch * m_n;
  }
  block_shape m_shape;
  std::unique_ptr<backend> m_backend;
  std::unique_ptr<workspace> m_ws;
  std::int64_t m_n = 0, m_m = 0;
};

TEST_P(AttentionOps, AttnNormIsRmsNormWithGain) {
  const auto in = ref::to_double(head(m_ws->download(tensor::routed_x), m_m * m_shape.d_model));
  m_backend->run(op::attn_norm, *m_ws);
  const auto expected = ref::rms_norm(in, ref::to_double(m_ws->download(tensor::attn_norm_g)), m_m, m_shape.d_model);
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::attn_in), expected), tolerance);
}

TEST_P(AttentionOps, QkvProjMatchesTheReference) {
  const std::int64_t d = m_shape.d_model;
  m_ws->upload(tensor::attn_in, ref::random_floats(static_cast<std::size_t>(m_m * d), 31));
  m_backend->run(op::qkv_proj, *m_ws);
  const auto a = ref::to_double(head(m_ws->download(tensor::attn_in), m_m * d));
  const auto w = ref::read_weights(*m_ws);
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::q), ref::matmul(a, w.wq, m_m, d, m_shape.d_q())), tolerance);
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::k), ref::matmul(a, w.wk, m_m, d, m_shape.d_kv())), tolerance);
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::v), ref::matmul(a, w.wv, m_m, d, m_shape.d_kv())), tolerance);
}

TEST_P(AttentionOps, AttnScoresAreScaledDotProductsWithGroupedKvHeads) {
  const auto q = ref::to_double(m_ws->download(tensor::q));
  const auto k = ref::to_double(m_ws->download(tensor::k));
  m_backend->run(op::attn_scores, *m_ws);
  const auto expected = ref::attention_scores(m_shape, q, k, m_n);
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::scores), expected), tolerance);
}

TEST_P(AttentionOps, AttnSoftmaxIsCausalAndNormalised) {
  const std::int64_t matrices = m_shape.batch * m_shape.n_heads;
  const auto s = ref::random_floats(static_cast<std::size_t>(matrices * m_n * m_n), 41, 3.0);
  m_ws->upload(tensor::scores, s);
  m_backend->run(op::attn_softmax, *m_ws);
  const auto p = m_ws->download(tensor::scores);
  EXPECT_LE(ref::relative_error(p, ref::causal_softmax(ref::to_double(s), matrices, m_n)), tolerance);
  for (std::int64_t i = 0; i < m_n; ++i)
    for (std::int64_t j = i + 1; j < m_n; ++j) EXPECT_EQ(p[i * m_n + j], 0.0f) << "masked entry " << i << "," << j;
}

TEST_P(AttentionOps, AttnSoftmaxSurvivesLargeScores) {
  const std::int64_t matrices = m_shape.batch * m_shape.n_heads;
  auto s = ref::random_floats(static_cast<std::size_t>(matrices * m_n * m_n), 43, 1.0);
  for (auto& v : s) v += 1000.0f;  // exp would overflow without the max subtraction
  m_ws->upload(tensor::scores, s);
  m_backend->run(op::attn_softmax, *m_ws);
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::scores), ref::causal_softmax(ref::to_double(s), matrices, m_n)),
            tolerance);
}

TEST_P(AttentionOps, AttnValuesMatchTheReference) {
  const std::int64_t matrices = m_shape.batch * m_shape.n_heads;
  const auto p = ref::random_floats(static_cast<std::size_t>(matrices * m_n * m_n), 47);
  m_ws->upload(tensor::scores, p);
  m_backend->run(op::attn_values, *m_ws);
  const auto expected =
      ref::attention_values(m_shape, ref::to_double(p), ref::to_double(m_ws->download(tensor::v)), m_n);
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::attn_out), expected), tolerance);
}

TEST_P(AttentionOps, OutProjAddsTheResidual) {
  const std::int64_t d = m_shape.d_model, dq = m_shape.d_q();
  const auto in = ref::to_double(head(m_ws->download(tensor::routed_x), m_m * d));
  const auto o = ref::to_double(head(m_ws->download(tensor::attn_out), m_m * dq));
  m_backend->run(op::out_proj, *m_ws);
  auto expected = ref::matmul(o, ref::read_weights(*m_ws).wo, m_m, dq, d);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] += in[i];
  EXPECT_LE(ref::relative_error(m_ws->download(tensor::h), expected), tolerance);
}

INSTANTIATE_TEST_SUITE_P(Capacities, AttentionOps, ::testing::Values(0.5, 1.0));

}  // namespace
}  // namespace modsim::kernels
