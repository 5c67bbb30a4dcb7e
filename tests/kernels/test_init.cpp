// kernels/init.{hpp,cpp}: the shared random fill of weights and inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.hpp"
#include "kernels/init.hpp"

namespace modsim::kernels {
namespace {

TEST(FillNormal, DependsOnlyOnSeedStreamAndIndexSoAnySplitGivesTheSameValues) {
  std::vector<float> whole(1000), split(1000);
  fill_normal(whole, 5, 17, 0.0, 1.0, 0, 1000);
  fill_normal(split, 5, 17, 0.0, 1.0, 500, 1000);
  fill_normal(split, 5, 17, 0.0, 1.0, 0, 500);
  EXPECT_EQ(whole, split);
  std::vector<float> other(1000);
  fill_normal(other, 6, 17, 0.0, 1.0, 0, 1000);
  EXPECT_NE(whole, other);
}

TEST(FillNormal, HasTheRequestedMeanAndSpreadAndNoZeros) {
  std::vector<float> v(200000);
  fill_normal(v, 1, 2, 1.0, 0.1, 0, static_cast<std::int64_t>(v.size()));
  double sum = 0.0, sq = 0.0;
  for (float f : v) {
    ASSERT_NE(f, 0.0f);
    sum += f;
    sq += f * f;
  }
  const double mean = sum / static_cast<double>(v.size());
  EXPECT_NEAR(mean, 1.0, 0.002);
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(v.size()) - mean * mean), 0.1, 0.002);
}

TEST(InitialValues, WeightsUseOneOverSqrtFanInAndIntermediatesAreNotDrawn) {
  const auto s = test::small_shape();
  EXPECT_NEAR(initial_values(tensor::w_q, s)->std_dev, 1.0 / std::sqrt(32.0), 1e-12);
  EXPECT_NEAR(initial_values(tensor::w_down, s)->std_dev, 1.0 / 8.0, 1e-12);  // fan-in d_ff = 64
  EXPECT_NEAR(initial_values(tensor::router_w, s)->std_dev, 1.0 / std::sqrt(32.0), 1e-12);
  EXPECT_EQ(initial_values(tensor::attn_norm_g, s)->mean, 1.0);
  EXPECT_NE(initial_values(tensor::x, s, 0)->stream, initial_values(tensor::x, s, 1)->stream);
  EXPECT_FALSE(initial_values(tensor::scores, s).has_value());
  EXPECT_FALSE(initial_values(tensor::routed_index, s).has_value());
}

TEST(InitialValues, AreWhatTheCpuWorkspaceHolds) {
  auto be = make_cpu_backend(2);
  const auto s = test::small_shape();
  auto ws = test::make_ws(*be, s, 42);
  for (tensor t : {tensor::w_v, tensor::mlp_norm_g, tensor::x}) {
    std::vector<float> expected(static_cast<std::size_t>(ws->size(t)));
    const auto rule = *initial_values(t, s);
    fill_normal(expected, 42, rule.stream, rule.mean, rule.std_dev, 0, ws->size(t));
    EXPECT_EQ(ws->download(t), expected) << to_string(t);
  }
}

}  // namespace
}  // namespace modsim::kernels
