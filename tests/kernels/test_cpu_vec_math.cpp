// kernels/cpu/vec_math.cpp: the fp32 exp behind softmax, gelu and silu; the decode step's
// packed-panel product and attention kernels against plain float64 loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

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

// Deterministic values in [-1, 1) without a generator.
std::vector<float> values(std::int64_t n, std::uint32_t salt) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uint32_t x = 2463534242u ^ salt;
  for (float& f : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    f = static_cast<float>(x % 2000) / 1000.0f - 1.0f;
  }
  return v;
}

TEST(PanelGemm, MatchesAPlainProductForEveryRowCountAndAPartialLastPanel) {
  const std::int64_t k = 37, n = 70;  // three panels, the last with 6 columns
  const std::vector<float> b = values(k * n, 1);
  std::vector<float> packed(static_cast<std::size_t>(packed_size(k, n)), -7.0f);
  ASSERT_EQ(packed_size(k, n), 3 * k * panel_cols);
  pack_panels(b.data(), k, n, packed.data());
  for (std::int64_t m = 1; m <= 20; ++m) {
    const std::vector<float> a = values(m * k, static_cast<std::uint32_t>(m));
    for (const float beta : {0.0f, 1.0f}) {
      const std::vector<float> c0 = values(m * n, 99);
      std::vector<float> c = c0;
      // Two calls over disjoint panel ranges, as two threads would make them.
      panel_gemm(a.data(), packed.data(), c.data(), m, k, n, 0, 1, beta);
      panel_gemm(a.data(), packed.data(), c.data(), m, k, n, 1, 3, beta);
      double worst = 0.0;
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          double want = beta * static_cast<double>(c0[static_cast<std::size_t>(i * n + j)]);
          for (std::int64_t q = 0; q < k; ++q)
            want +=
                static_cast<double>(a[static_cast<std::size_t>(i * k + q)]) * b[static_cast<std::size_t>(q * n + j)];
          worst = std::max(worst, std::abs(c[static_cast<std::size_t>(i * n + j)] - want));
        }
      }
      EXPECT_LT(worst, 1e-4) << "m = " << m << ", beta = " << beta;
    }
  }
}

TEST(DecodeAttention, ScoresAndValuesMatchPlainLoopsForEachHeadWidth) {
  for (const std::int64_t dh : {8, 64, 128, 80}) {
    for (const std::int64_t group : {1, 4}) {
      const std::int64_t n = 13, stride = 17;
      const std::vector<float> q = values(group * dh, 3), keys = values(n * dh, 4), vals = values(n * dh, 5);
      const std::vector<float> p = values(group * stride, 6);
      std::vector<float> scores(static_cast<std::size_t>(group * stride), 0.0f);
      decode_scores(q.data(), keys.data(), scores.data(), n, dh, group, stride, 0.125f);
      std::vector<float> out = values(group * dh, 7);
      const std::vector<float> out0 = out;
      decode_values(p.data(), vals.data(), out.data(), n, dh, group, stride);
      double worst_s = 0.0, worst_v = 0.0;
      for (std::int64_t h = 0; h < group; ++h) {
        for (std::int64_t t = 0; t < n; ++t) {
          double s = 0.0;
          for (std::int64_t i = 0; i < dh; ++i)
            s += static_cast<double>(q[static_cast<std::size_t>(h * dh + i)]) *
                 keys[static_cast<std::size_t>(t * dh + i)];
          worst_s = std::max(worst_s, std::abs(scores[static_cast<std::size_t>(h * stride + t)] - 0.125 * s));
        }
        for (std::int64_t i = 0; i < dh; ++i) {
          double o = out0[static_cast<std::size_t>(h * dh + i)];
          for (std::int64_t t = 0; t < n; ++t)
            o += static_cast<double>(p[static_cast<std::size_t>(h * stride + t)]) *
                 vals[static_cast<std::size_t>(t * dh + i)];
          worst_v = std::max(worst_v, std::abs(out[static_cast<std::size_t>(h * dh + i)] - o));
        }
      }
      EXPECT_LT(worst_s, 1e-4) << "d_head " << dh << ", group " << group;
      EXPECT_LT(worst_v, 1e-4) << "d_head " << dh << ", group " << group;
    }
  }
}

TEST(DecodeAttention, APrefetchHintLeavesScoresAndValuesUnchanged) {
  for (const std::int64_t dh : {8, 64, 128, 80}) {
    for (const std::int64_t group : {1, 4}) {
      const std::int64_t n = 13, stride = 17;
      const std::vector<float> q = values(group * dh, 3), keys = values(n * dh, 4), vals = values(n * dh, 5);
      const std::vector<float> p = values(group * stride, 6), next = values(n * dh, 8);
      std::vector<float> s0(static_cast<std::size_t>(group * stride), 0.0f), s1 = s0;
      decode_scores(q.data(), keys.data(), s0.data(), n, dh, group, stride, 0.125f);
      decode_scores(q.data(), keys.data(), s1.data(), n, dh, group, stride, 0.125f, next.data());
      EXPECT_EQ(s0, s1) << "d_head " << dh << ", group " << group;
      std::vector<float> o0 = values(group * dh, 7), o1 = o0;
      decode_values(p.data(), vals.data(), o0.data(), n, dh, group, stride);
      decode_values(p.data(), vals.data(), o1.data(), n, dh, group, stride, next.data());
      EXPECT_EQ(o0, o1) << "d_head " << dh << ", group " << group;
    }
  }
}

}  // namespace
}  // namespace modsim::kernels::cpu
