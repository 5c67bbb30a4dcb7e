// kernels/cpu/cpu_backend.cpp: the composed blocks (block_dense, block_mod), Equation 1 at
// capacity 1, causality, and repeat/rotation behaviour.
#include <gtest/gtest.h>

#include <algorithm>

#include "helpers.hpp"

namespace modsim::kernels {
namespace {

using test::make_ws;
using test::small_shape;
using test::tolerance;

TEST(BlockDense, MatchesTheReference) {
  for (mlp_kind kind : {mlp_kind::gelu, mlp_kind::swiglu}) {
    auto be = make_cpu_backend(2);
    const auto s = small_shape(0.25, kind);  // capacity is ignored by block_dense
    auto ws = make_ws(*be, s);
    be->run(op::block_dense, *ws);
    const auto expected = ref::block(s, ref::read_weights(*ws), ref::to_double(ws->download(tensor::x)), s.seq_len);
    EXPECT_LE(ref::relative_error(ws->download(tensor::y), expected), tolerance);
  }
}

TEST(BlockMod, MatchesTheReferenceAtEveryCapacity) {
  for (double capacity : {0.125, 0.25, 0.5, 0.75, 1.0}) {
    for (mlp_kind kind : {mlp_kind::gelu, mlp_kind::swiglu}) {
      auto be = make_cpu_backend(2);
      const auto s = small_shape(capacity, kind);
      auto ws = make_ws(*be, s, 5);
      be->run(op::block_mod, *ws);
      const auto expected = ref::mod_layer(s, ref::read_weights(*ws), ref::to_double(ws->download(tensor::x)));
      const auto idx = ws->download_indices(tensor::routed_index);
      EXPECT_EQ(std::vector<int>(idx.begin(), idx.end()), expected.routed);
      EXPECT_LE(ref::relative_error(ws->download(tensor::out), expected.out), tolerance) << "capacity " << capacity;
    }
  }
}

TEST(BlockMod, AtCapacityOneIsTheDenseBlockWithEachDeltaScaledByItsRouterWeight) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape(1.0);
  auto ws = make_ws(*be, s);
  be->run(op::block_dense, *ws);
  const auto x = ws->download(tensor::x);
  const auto y = ws->download(tensor::y);
  be->run(op::block_mod, *ws);
  const auto r = ws->download(tensor::router_logits);
  ref::mat expected(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t row = i / static_cast<std::size_t>(s.d_model);
    expected[i] = static_cast<double>(x[i]) + static_cast<double>(r[row]) * (static_cast<double>(y[i]) - x[i]);
  }
  EXPECT_LE(ref::relative_error(ws->download(tensor::out), expected), tolerance);
}

TEST(BlockMod, RepeatsAndRotationsKeepOutEqualToEquationOne) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape(0.25);
  workspace_options o;
  o.seed = 9;
  o.input_copies = 3;
  auto ws = be->make_workspace(s, dtype::fp32, o);
  for (int repeat = 0; repeat < 5; ++repeat) {
    be->run(op::block_mod, *ws);
    const auto expected = ref::mod_layer(s, ref::read_weights(*ws), ref::to_double(ws->download(tensor::x)));
    EXPECT_LE(ref::relative_error(ws->download(tensor::out), expected.out), tolerance) << "repeat " << repeat;
    ws->rotate();
  }
  // A new router vector changes the routing; rows routed before must fall back to x.
  ws->upload(tensor::router_w, ref::random_floats(static_cast<std::size_t>(s.d_model), 99, 0.2));
  be->run(op::block_mod, *ws);
  const auto expected = ref::mod_layer(s, ref::read_weights(*ws), ref::to_double(ws->download(tensor::x)));
  EXPECT_LE(ref::relative_error(ws->download(tensor::out), expected.out), tolerance);
}

TEST(CpuBackend, RefusesFusedAttentionAndModelOnlyOps) {
  auto be = make_cpu_backend(1);
  workspace_options o;
  o.fused_attention = true;
  EXPECT_THROW(be->make_workspace(small_shape(0.5), dtype::fp32, o), modsim::error);
  auto ws = be->make_workspace(small_shape(0.5), dtype::fp32, {});
  EXPECT_THROW(be->run(op::lm_head, *ws), modsim::error);
  EXPECT_THROW(be->run(op::predictor, *ws), modsim::error);
}

TEST(CpuBackend, ThreadCountDoesNotChangeResults) {
  const auto s = small_shape(0.5, mlp_kind::swiglu);
  auto one = make_cpu_backend(1);
  auto ws1 = make_ws(*one, s);
  one->run(op::block_mod, *ws1);
  auto three = make_cpu_backend(3);
  auto ws3 = make_ws(*three, s);
  three->run(op::block_mod, *ws3);
  EXPECT_LE(ref::relative_error(ws3->download(tensor::out), ws1->download(tensor::out)), 1e-6);
}

// Causality of block_dense: changing token t of a sequence never changes an earlier token's
// output, nor anything in another sequence.
TEST(BlockDense, ChangingALaterTokenNeverChangesAnEarlierOutput) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape();
  auto ws = make_ws(*be, s);
  const std::int64_t d = s.d_model, S = s.seq_len;
  be->run(op::block_dense, *ws);
  const auto y0 = ws->download(tensor::y);
  for (std::int64_t t : {S - 1, std::int64_t{5}}) {
    auto x = ws->download(tensor::x);
    for (std::int64_t c = 0; c < d; ++c) x[t * d + c] += 0.5f;  // sequence 0, position t
    ws->upload(tensor::x, x);
    be->run(op::block_dense, *ws);
    const auto y1 = ws->download(tensor::y);
    for (std::int64_t i = 0; i < t * d; ++i) ASSERT_EQ(y1[i], y0[i]) << "position " << i / d << " before " << t;
    EXPECT_NE(y1[t * d], y0[t * d]);
    for (std::int64_t i = S * d; i < 2 * S * d; ++i) ASSERT_EQ(y1[i], y0[i]) << "sequence 1";
    ws->upload(tensor::x, ref::random_floats(0, 0));  // no-op upload keeps x
  }
}

// Causality of block_mod. The block on the gathered tokens is causal, but top-k routing
// compares router weights across the whole sequence, so changing a later token can change
// WHICH tokens are routed (including earlier ones). To test the block's causality we change
// the last routed token of sequence 0 along a direction orthogonal to the router vector:
// its router weight (hence the selection) stays the same, and every earlier position must
// produce exactly the same output.
TEST(BlockMod, ChangingALaterTokenWithFixedRoutingNeverChangesAnEarlierOutput) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape(0.5);
  auto ws = make_ws(*be, s);
  const std::int64_t d = s.d_model, k = s.routed_tokens();
  be->run(op::block_mod, *ws);
  const auto out0 = ws->download(tensor::out);
  const auto idx0 = ws->download_indices(tensor::routed_index);
  const std::int64_t t = idx0[static_cast<std::size_t>(k - 1)];  // last routed position of sequence 0
  ASSERT_GT(t, 0);

  const auto w = ws->download(tensor::router_w);
  auto z = ref::random_floats(static_cast<std::size_t>(d), 71);
  double zw = 0.0, ww = 0.0;
  for (std::int64_t c = 0; c < d; ++c) {
    zw += static_cast<double>(z[c]) * w[c];
    ww += static_cast<double>(w[c]) * w[c];
  }
  auto x = ws->download(tensor::x);
  for (std::int64_t c = 0; c < d; ++c) x[t * d + c] += static_cast<float>(z[c] - zw / ww * w[c]);
  ws->upload(tensor::x, x);
  be->run(op::block_mod, *ws);
  ASSERT_EQ(ws->download_indices(tensor::routed_index), idx0) << "the change must keep the routing";
  const auto out1 = ws->download(tensor::out);
  for (std::int64_t i = 0; i < t * d; ++i) ASSERT_EQ(out1[i], out0[i]) << "position " << i / d << " before " << t;
  EXPECT_NE(out1[t * d], out0[t * d]) << "the routed token itself does change";
}

// Without that constraint: outputs before both the changed token and the first position
// whose routing changed are unchanged, whatever the change does to the routing.
TEST(BlockMod, OutputsBeforeTheFirstRoutingChangeAreUnchanged) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape(0.5);
  auto ws = make_ws(*be, s);
  const std::int64_t d = s.d_model, S = s.seq_len, k = s.routed_tokens();
  be->run(op::block_mod, *ws);
  const auto out0 = ws->download(tensor::out);
  const auto idx0 = ws->download_indices(tensor::routed_index);
  const auto x0 = ws->download(tensor::x);
  int routing_changed = 0;
  for (std::uint64_t trial = 0; trial < 8; ++trial) {
    const std::int64_t t = S - 1 - static_cast<std::int64_t>(trial % 3);
    auto x = x0;
    const auto z = ref::random_floats(static_cast<std::size_t>(d), 100 + trial, 2.0);
    for (std::int64_t c = 0; c < d; ++c) x[t * d + c] += z[c];
    ws->upload(tensor::x, x);
    be->run(op::block_mod, *ws);
    const auto idx1 = ws->download_indices(tensor::routed_index);
    std::vector<bool> routed0(static_cast<std::size_t>(S)), routed1(static_cast<std::size_t>(S));
    for (std::int64_t j = 0; j < k; ++j) {
      routed0[static_cast<std::size_t>(idx0[static_cast<std::size_t>(j)])] = true;
      routed1[static_cast<std::size_t>(idx1[static_cast<std::size_t>(j)])] = true;
    }
    std::int64_t first = t;
    for (std::int64_t p = 0; p < t; ++p)
      if (routed0[static_cast<std::size_t>(p)] != routed1[static_cast<std::size_t>(p)]) {
        first = p;
        break;
      }
    if (first < t) ++routing_changed;
    const auto out1 = ws->download(tensor::out);
    for (std::int64_t i = 0; i < first * d; ++i)
      ASSERT_EQ(out1[i], out0[i]) << "trial " << trial << " position " << i / d;
  }
  ws->upload(tensor::x, x0);
  EXPECT_GT(routing_changed, 0) << "some trial should have moved an earlier token in or out";
}

// Top-k routing itself looks ahead (the reason the paper needs a causal predictor for
// sampling): a later token with a large router weight evicts an earlier one, whose output
// falls back to its input.
TEST(BlockMod, TopkRoutingLetsALaterTokenEvictAnEarlierOne) {
  auto be = make_cpu_backend(2);
  const auto s = small_shape(0.25);  // k = 3 of 12
  auto ws = make_ws(*be, s);
  const std::int64_t d = s.d_model, S = s.seq_len, k = s.routed_tokens();
  auto x = ws->download(tensor::x);
  const auto w = ws->download(tensor::router_w);
  be->run(op::block_mod, *ws);
  const auto idx0 = ws->download_indices(tensor::routed_index);
  ASSERT_NE(idx0[static_cast<std::size_t>(k - 1)], S - 1) << "pick a seed where the last token is not routed";
  const std::int64_t evicted_guess = idx0[0];
  // Raise the last token's router weight far above the others.
  for (std::int64_t c = 0; c < d; ++c) x[(S - 1) * d + c] += 100.0f * w[c];
  ws->upload(tensor::x, x);
  be->run(op::block_mod, *ws);
  const auto idx1 = ws->download_indices(tensor::routed_index);
  EXPECT_EQ(idx1[static_cast<std::size_t>(k - 1)], S - 1);
  // Exactly one earlier token left the selection and now passes through unchanged.
  std::vector<std::int32_t> left;
  for (std::int64_t j = 0; j < k; ++j)
    if (std::find(idx1.begin(), idx1.begin() + k, idx0[static_cast<std::size_t>(j)]) == idx1.begin() + k)
      left.push_back(idx0[static_cast<std::size_t>(j)]);
  ASSERT_EQ(left.size(), 1u);
  (void)evicted_guess;
  const auto out = ws->download(tensor::out);
  for (std::int64_t c = 0; c < d; ++c) EXPECT_EQ(out[left[0] * d + c], x[left[0] * d + c]);
}

}  // namespace
}  // namespace modsim::kernels
