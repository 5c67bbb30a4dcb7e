// kernels/cpu/vec_math.cpp: the fp32 exp behind softmax, gelu and silu.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/vec_math.hpp"

namespace modsim::kernels::cpu {
namespace {

TEST(ExpApprox, IsWithinAFewUlpsOverTheWholeRange) {
  double worst = 0.0;
  for (double x = -87.0; x <= 88.0; x += 0.001) {
    const auto xf = static_cast<float>(x);
    const double exact = std::exp(static_cast<double>(xf));
    worst = std::max(worst, std::abs(exp_approx(xf) - exact) / exact);
  }
  EXPECT_LT(worst, 3e-7);
}

TEST(ExpApprox, ClampsInsteadOfOverflowing) {
  EXPECT_TRUE(std::isfinite(exp_approx(1000.0f)));
  EXPECT_GT(exp_approx(-1000.0f), 0.0f);
  EXPECT_LT(exp_approx(-1000.0f), 1e-37f);
}

TEST(SoftmaxCausalRows, LeavesEachRowSummingToOne) {
  const std::int64_t n = 37;  // not a multiple of any vector width
  std::vector<float> s(static_cast<std::size_t>(n * n));
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<float>(std::sin(static_cast<double>(i))) * 5.0f;
  softmax_causal_rows(s.data(), n, 0, n);
  for (std::int64_t i = 0; i < n; ++i) {
    double sum = 0.0;
    for (std::int64_t j = 0; j < n; ++j) sum += s[static_cast<std::size_t>(i * n + j)];
    EXPECT_NEAR(sum, 1.0, 1e-6) << "row " << i;
  }
}

}  // namespace
}  // namespace modsim::kernels::cpu
