// kernels/cpu/routing.cpp: router, topk, gather, scatter (paper §3.1, Equation 1).
#include <gtest/gtest.h>

#include "helpers.hpp"

namespace modsim::kernels {
namespace {

using test::make_ws;
using test::small_shape;
using test::tolerance;

// The seed's worked example (§6): S = 4, d = 8.
const std::vector<float> example_x = {0.5f,  -0.2f, 0.1f,  0.3f,  0.0f,  0.4f, -0.1f, 0.2f,   //
                                      -0.1f, 0.5f,  0.2f,  -0.3f, 0.1f,  0.0f, 0.4f,  -0.2f,  //
                                      0.3f,  0.3f,  -0.4f, 0.1f,  0.2f,  0.1f, 0.0f,  0.5f,   //
                                      0.0f,  0.1f,  0.2f,  0.6f,  -0.1f, 0.3f, 0.2f,  0.0f};
const std::vector<float> example_w = {0.2f, 0.1f, -0.1f, 0.3f, 0.2f, 0.4f, 0.0f, 0.1f};
const std::vector<float> example_f1 = {0.10f, 0.05f, -0.02f, 0.20f, 0.00f, 0.15f, -0.05f, 0.10f};

block_shape example_shape() {
  block_shape s;
  s.batch = 1;
  s.seq_len = 4;
  s.d_model = 8;
  s.n_heads = 2;
  s.n_kv_heads = 2;
  s.d_head = 4;
  s.d_ff = 16;
  s.capacity = 0.25;  // C = 1
  return s;
}

TEST(Router, WorkedExampleGivesThePapersWeights) {
  auto be = make_cpu_backend(2);
  auto ws = make_ws(*be, example_shape());
  ws->upload(tensor::x, example_x);
  ws->upload(tensor::router_w, example_w);
  be->run(op::router, *ws);
  const auto r = ws->download(tensor::router_logits);
  EXPECT_NEAR(r[0], 0.34, 1e-6);
  EXPECT_NEAR(r[1], -0.08, 1e-6);
  EXPECT_NEAR(r[2], 0.29, 1e-6);
  EXPECT_NEAR(r[3], 0.27, 1e-6);
}

TEST(Topk, WorkedExampleRoutesOnlyTheFirstToken) {
  auto be = make_cpu_backend(2);
  auto ws = make_ws(*be, example_shape());
  ws->upload(tensor::x, example_x);
  ws->upload(tensor::router_w, example_w);
  be->run(op::router, *ws);
  be->run(op::topk, *ws);
  EXPECT_EQ(ws->download_indices(tensor::routed_index), std::vector<std::int32_t>{0});
}

TEST(Scatter, WorkedExampleGivesEquationOnesValues) {
  auto be = make_cpu_backend(2);
  auto ws = make_ws(*be, example_shape());
  ws->upload(tensor::x, example_x);
  ws->upload(tensor::router_w, example_w);
  be->run(op::router, *ws);
  be->run(op::topk, *ws);
  be->run(op::gather, *ws);
  EXPECT_NEAR(ws->download(tensor::routed_r)[0], 0.34, 1e-6);
  // A block whose delta is f_1: y = x̃ + f_1.
  std::vector<float> y(8);
  for (int c = 0; c < 8; ++c) y[c] = example_x[c] + example_f1[c];
  ws->upload(tensor::y, y);
  be->run(op::scatter, *ws);
  const auto out = ws->download(tensor::out);
  EXPECT_NEAR(out[0], 0.534, 1e-6);  // component 1
  EXPECT_NEAR(out[3], 0.368, 1e-6);  // component 4
  for (int c = 0; c < 8; ++c) EXPECT_NEAR(out[c], example_x[c] + 0.34 * example_f1[c], 1e-6);
  for (int i = 8; i < 32; ++i) EXPECT_EQ(out[i], example_x[i]) << "unrouted tokens pass unchanged";
}

TEST(BlockMod, WorkedExampleChangesOnlyTheRoutedToken) {
  auto be = make_cpu_backend(2);
  auto ws = make_ws(*be, example_shape());
  ws->upload(tensor::x, example_x);
  ws->upload(tensor::router_w, example_w);
  be->run(op::block_mod, *ws);
  const auto w = ref::read_weights(*ws);
  const ref::mat x1(example_x.begin(), example_x.begin() + 8);
  block_shape one = example_shape();
  const ref::mat y = ref::block(one, w, x1, 1);  // the block sees token 1 alone
  const auto out = ws->download(tensor::out);
  ref::mat expected(example_x.begin(), example_x.end());
  for (int c = 0; c < 8; ++c) expected[c] = x1[c] + 0.34 * (y[c] - x1[c]);
  EXPECT_LE(ref::relative_error(out, expected), 1e-5);
  for (int i = 8; i < 32; ++i) EXPECT_EQ(out[i], example_x[i]);
}

TEST(Router, MatchesTheReferenceOnRandomData) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape();
  auto ws = make_ws(*be, s);
  ws->upload(tensor::x, ref::random_floats(s.tokens() * s.d_model, 11));
  be->run(op::router, *ws);
  const auto expected =
      ref::router_logits(s, ref::to_double(ws->download(tensor::x)), ref::to_double(ws->download(tensor::router_w)));
  EXPECT_LE(ref::relative_error(ws->download(tensor::router_logits), expected), tolerance);
}

TEST(Topk, MatchesAStableArgsortPerSequenceSortedByPosition) {
  auto be = make_cpu_backend(2);
  for (double capacity : {0.125, 0.25, 0.5, 0.75, 1.0}) {
    const auto s = small_shape(capacity);
    auto ws = make_ws(*be, s);
    const auto r = ref::random_floats(s.tokens(), 21);
    ws->upload(tensor::router_logits, r);
    be->run(op::topk, *ws);
    const auto got = ws->download_indices(tensor::routed_index);
    const auto expected = ref::top_k(s, ref::to_double(r));
    EXPECT_EQ(std::vector<int>(got.begin(), got.end()), expected) << "capacity " << capacity;
  }
}

TEST(Topk, TiesStillSelectExactlyK) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape(0.25);  // k = 3 of 12
  auto ws = make_ws(*be, s);
  ws->upload(tensor::router_logits, std::vector<float>(static_cast<std::size_t>(s.tokens()), 0.5f));
  be->run(op::topk, *ws);
  EXPECT_EQ(ws->download_indices(tensor::routed_index), (std::vector<std::int32_t>{0, 1, 2, 0, 1, 2}));
}

TEST(Topk, TiesAtTheBoundaryGoToTheLowerPositions) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape(0.25);  // k = 3 of 12
  auto ws = make_ws(*be, s);
  // Sequence 0: 9 is the largest; 4 ties at 5 for the last two places (positions 2, 6, 7, 11).
  // Sequence 1: the boundary value 1 ties at positions 0 and 10; 3 and 2 are above it.
  std::vector<float> r = {0, 0, 5, 0, 9, 0, 5, 5, 0, 0, 0, 5,  //
                          1, 0, 0, 0, 3, 0, 0, 2, 0, 0, 1, 0};
  ws->upload(tensor::router_logits, r);
  be->run(op::topk, *ws);
  EXPECT_EQ(ws->download_indices(tensor::routed_index), (std::vector<std::int32_t>{2, 4, 6, 0, 4, 7}));
}

TEST(Topk, SelectsPerSequenceNotAcrossTheBatch) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape(0.25);
  auto ws = make_ws(*be, s);
  std::vector<float> r(static_cast<std::size_t>(s.tokens()));
  for (std::size_t i = 0; i < r.size(); ++i)
    r[i] = i < 12 ? -100.0f - static_cast<float>(i) : 100.0f + static_cast<float>(i);
  ws->upload(tensor::router_logits, r);
  be->run(op::topk, *ws);
  // Sequence 0 still routes its own top 3 (positions 0, 1, 2: the least negative).
  EXPECT_EQ(ws->download_indices(tensor::routed_index), (std::vector<std::int32_t>{0, 1, 2, 9, 10, 11}));
}

TEST(Gather, CopiesTheRoutedRowsAndWeights) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape(0.25);
  auto ws = make_ws(*be, s);
  const std::vector<std::int32_t> idx = {1, 5, 11, 0, 3, 4};
  ws->upload_indices(tensor::routed_index, idx);
  be->run(op::gather, *ws);
  const auto x = ws->download(tensor::x);
  const auto r = ws->download(tensor::router_logits);
  const auto xt = ws->download(tensor::routed_x);
  const auto rt = ws->download(tensor::routed_r);
  const std::int64_t d = s.d_model;
  for (std::int64_t j = 0; j < 6; ++j) {
    const std::int64_t row = (j / 3) * 12 + idx[static_cast<std::size_t>(j)];
    EXPECT_EQ(rt[j], r[row]);
    for (std::int64_t c = 0; c < d; ++c) ASSERT_EQ(xt[j * d + c], x[row * d + c]);
  }
}

TEST(Scatter, MatchesEquationOneAndForgetsThePreviousRouting) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape(0.25);
  auto ws = make_ws(*be, s);
  const std::int64_t d = s.d_model, k = 3;
  const auto x = ws->download(tensor::x);
  for (const std::vector<std::int32_t>& idx :
       {std::vector<std::int32_t>{1, 5, 11, 0, 3, 4}, std::vector<std::int32_t>{2, 5, 7, 6, 8, 9}}) {
    ws->upload_indices(tensor::routed_index, idx);
    be->run(op::gather, *ws);
    ws->upload(tensor::y, ref::random_floats(static_cast<std::size_t>(2 * k * d), 5));
    be->run(op::scatter, *ws);
    const auto xt = ws->download(tensor::routed_x), rt = ws->download(tensor::routed_r), y = ws->download(tensor::y);
    ref::mat expected(x.begin(), x.end());
    for (std::int64_t j = 0; j < 2 * k; ++j) {
      const std::int64_t row = (j / k) * 12 + idx[static_cast<std::size_t>(j)];
      for (std::int64_t c = 0; c < d; ++c)
        expected[row * d + c] = static_cast<double>(x[row * d + c]) +
                                static_cast<double>(rt[j]) * (static_cast<double>(y[j * d + c]) - xt[j * d + c]);
    }
    EXPECT_LE(ref::relative_error(ws->download(tensor::out), expected), tolerance);
  }
}

}  // namespace
}  // namespace modsim::kernels
