// The measuring method's statistics and stopping rule, on known samples and synthetic timers.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "profiler/measure.hpp"

using namespace modsim::profiler;

namespace {

// Samples of 1 s and 2 s in turn, starting with 1 s.
std::function<double()> one_two() {
  return [i = 0]() mutable { return 1.0 + (i++ % 2); };
}

}  // namespace

TEST(Measure, PercentilesInterpolateBetweenClosestRanks) {
  // Samples 1..10: q·(n−1) positions 0.9 → 1.9, 4.5 → 5.5, 8.1 → 9.1 (by hand).
  sample_stats s = summarize({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(s.median_s, 5.5);
  EXPECT_DOUBLE_EQ(s.p10_s, 1.9);
  EXPECT_DOUBLE_EQ(s.p90_s, 9.1);
  EXPECT_DOUBLE_EQ(s.mean_s, 5.5);
  EXPECT_EQ(s.samples, 10);
}

TEST(Measure, OddCountMedianIsTheMiddleSample) {
  sample_stats s = summarize({3.0, 1.0, 2.0});
  EXPECT_DOUBLE_EQ(s.median_s, 2.0);
  EXPECT_DOUBLE_EQ(s.p10_s, 1.2);  // 0.1·2 = 0.2 → 1 + 0.2·(2−1)
  EXPECT_DOUBLE_EQ(s.p90_s, 2.8);
}

TEST(Measure, RelativeErrorIsTheStandardErrorOfTheMean) {
  // {1, 3}: mean 2, sample variance 2, stderr sqrt(2/2) = 1, relative 0.5.
  EXPECT_DOUBLE_EQ(summarize({1, 3}).rel_error, 0.5);
  EXPECT_DOUBLE_EQ(summarize({4, 4, 4}).rel_error, 0.0);
}

TEST(Measure, SteadyTimerStopsAtTheMinimumSamplesAndTime) {
  stop_rule rule;
  rule.warmup = 3;
  rule.min_samples = 5;
  rule.min_time_s = 2.0;
  rule.max_time_s = 10;
  int calls = 0;
  sample_stats s = measure(
      [&] {
        ++calls;
        return 0.25;
      },
      rule);
  // Zero spread converges as soon as both minimums hold: 8 samples of 0.25 s reach 2 s.
  EXPECT_EQ(s.samples, 8);
  EXPECT_EQ(calls, 11);  // + 3 warm-up
  EXPECT_TRUE(s.converged);
  EXPECT_DOUBLE_EQ(s.median_s, 0.25);
}

TEST(Measure, NoisyTimerTakesMoreSamplesThanAQuietOne) {
  stop_rule rule;
  rule.min_samples = 5;
  rule.min_time_s = 0;
  rule.max_time_s = 1e9;
  rule.max_samples = 100000;
  rule.target_rel_error = 0.01;
  std::mt19937 rng(7);
  auto noisy = [&](double rel_sd) {
    std::normal_distribution<double> n(1.0, rel_sd);
    return measure([&] { return std::max(0.01, n(rng)); }, rule);
  };
  sample_stats quiet = noisy(0.01);
  sample_stats loud = noisy(0.2);
  EXPECT_TRUE(quiet.converged);
  EXPECT_TRUE(loud.converged);
  // stderr = sd/sqrt(n) ≤ 0.01 needs n ≈ (0.2/0.01)² = 400 for the loud timer.
  EXPECT_GT(loud.samples, 250);
  EXPECT_LT(quiet.samples, 20);
  EXPECT_NEAR(loud.median_s, 1.0, 0.05);
}

TEST(Measure, TimeCapStopsAnUnconvergedRun) {
  stop_rule rule;
  rule.min_samples = 5;
  rule.min_time_s = 0;
  rule.max_time_s = 10.0;
  rule.target_rel_error = 1e-9;  // unreachable with alternating samples
  int i = 0;
  sample_stats s = measure([&] { return (i++ % 2) ? 0.25 : 0.75; }, rule);
  EXPECT_FALSE(s.converged);
  EXPECT_EQ(s.samples, 20);  // 20 samples of mean 0.5 s reach the 10 s cap
}

TEST(Measure, SampleCapStopsToo) {
  stop_rule rule;
  rule.min_samples = 2;
  rule.max_samples = 7;
  rule.min_time_s = 0;
  rule.max_time_s = 1e9;
  rule.target_rel_error = 0;
  sample_stats s = measure(one_two(), rule);
  EXPECT_EQ(s.samples, 7);
  EXPECT_FALSE(s.converged);
}

// The rule of the noisy-cap tests: no warm-up, at least 5 samples, a 3 s time cap.
stop_rule three_second_cap() {
  stop_rule rule;
  rule.warmup = 0;
  rule.min_samples = 5;
  rule.min_time_s = 0;
  rule.max_time_s = 3;
  return rule;
}

// A point still imprecise at the time cap goes on to the noisy cap: alternating samples of 1 s
// and 2 s never reach a 1e-9 relative error. Without the noisy cap they stop at 5 samples
// (1+2+1+2+1 = 7 s ≥ 3 s, the minimum count reached); with a 20 s noisy cap at 14 (7 ones and
// 7 twos: 21 s; after 13 samples 19 s).
TEST(Measure, ANoisyPointSamplesOnToTheNoisyCap) {
  stop_rule rule = three_second_cap();
  rule.target_rel_error = 1e-9;
  const sample_stats capped = measure(one_two(), rule);
  EXPECT_EQ(capped.samples, 5);
  EXPECT_FALSE(capped.extended);
  EXPECT_FALSE(capped.converged);
  rule.noisy_max_time_s = 20;
  const sample_stats noisy = measure(one_two(), rule);
  EXPECT_EQ(noisy.samples, 14);
  EXPECT_TRUE(noisy.extended);
  EXPECT_FALSE(noisy.converged);
}

// A noisy point also takes the noisy minimum of samples: with a 4 s noisy cap (reached at the
// 5th sample, 7 s) and a minimum of 15, alternating 1 s / 2 s samples stop at 15 (8 ones, 7 twos).
TEST(Measure, ANoisyPointTakesTheNoisyMinimumOfSamples) {
  stop_rule rule = three_second_cap();
  rule.noisy_max_time_s = 4;
  rule.noisy_min_samples = 15;
  rule.target_rel_error = 1e-9;
  const sample_stats s = measure(one_two(), rule);
  EXPECT_EQ(s.samples, 15);
  EXPECT_DOUBLE_EQ(s.mean_s, 22.0 / 15);
  EXPECT_TRUE(s.extended);
  // Without a noisy cap the minimum does nothing: 5 samples, as before.
  rule.noisy_max_time_s = 0;
  EXPECT_EQ(measure(one_two(), rule).samples, 5);
}

// A precise point stops where it did without the noisy cap: 0.5 s samples of no spread
// converge at the 5th sample (2.5 s), under the 3 s cap, and are not extended.
TEST(Measure, APrecisePointIgnoresTheNoisyCap) {
  stop_rule rule = three_second_cap();
  rule.noisy_max_time_s = 100;
  const sample_stats s = measure([] { return 0.5; }, rule);
  EXPECT_EQ(s.samples, 5);
  EXPECT_TRUE(s.converged);
  EXPECT_FALSE(s.extended);
}

// Disturbed samples: four of 1 s, one of 1.5 s, then 1 s again. At the minimum of 5 samples
// (5.5 s, past the 3 s cap) the mean's error is far above 1 %, so the point samples on. With n
// samples, one of them 1.5: mean 1 + 0.5/n, squared deviations 0.25 (n−1)/n, sample variance
// 0.25/n, standard error 0.5/n, relative 0.5/(n + 0.5): at most 1 % first at n = 50 (50.5 s,
// under the 100 s noisy cap).
TEST(Measure, ADisturbedPointConvergesOnceTheDisturbanceIsDiluted) {
  stop_rule rule = three_second_cap();
  rule.noisy_max_time_s = 100;
  rule.target_rel_error = 0.01;
  int i = 0;
  const sample_stats s = measure([&] { return i++ == 4 ? 1.5 : 1.0; }, rule);
  EXPECT_TRUE(s.extended);
  EXPECT_TRUE(s.converged);
  EXPECT_EQ(s.samples, 50);
  EXPECT_DOUBLE_EQ(s.median_s, 1.0);
}

TEST(Measure, PassesCombineAsTheMedianOfTheirMediansAndTheWidestSpread) {
  // Three passes of one point, the second on a machine slowed by 30 %.
  auto pass = [](double median, double p10, double p90, double mean, int n, bool converged, bool extended) {
    sample_stats s;
    s.median_s = median;
    s.p10_s = p10;
    s.p90_s = p90;
    s.mean_s = mean;
    s.samples = n;
    s.rel_error = median / 100;
    s.converged = converged;
    s.extended = extended;
    return s;
  };
  const sample_stats c =
      combine_passes({pass(1.00, 0.98, 1.03, 1.0, 5, true, false), pass(1.30, 1.28, 1.35, 1.3, 10, true, true),
                      pass(1.02, 0.99, 1.05, 1.0, 5, false, false)});
  EXPECT_DOUBLE_EQ(c.median_s, 1.02);  // the middle of 1.00, 1.02, 1.30: the slow pass is outvoted
  EXPECT_DOUBLE_EQ(c.p10_s, 0.98);
  EXPECT_DOUBLE_EQ(c.p90_s, 1.35);
  EXPECT_DOUBLE_EQ(c.mean_s, (5 * 1.0 + 10 * 1.3 + 5 * 1.0) / 20);  // 1.15
  EXPECT_EQ(c.samples, 20);
  EXPECT_DOUBLE_EQ(c.rel_error, 0.013);
  EXPECT_FALSE(c.converged);  // the third pass did not
  EXPECT_TRUE(c.extended);    // the second did
  // Two passes: the median is their mean; one pass is itself.
  EXPECT_DOUBLE_EQ(combine_passes({pass(1.0, 1, 1, 1, 3, true, false), pass(2.0, 2, 2, 2, 3, true, false)}).median_s,
                   1.5);
  EXPECT_DOUBLE_EQ(combine_passes({pass(1.7, 1, 2, 1.7, 3, true, false)}).median_s, 1.7);
  EXPECT_THROW(combine_passes({}), std::exception);
}

TEST(Measure, PassSpreadIsTheRangeOfThePassesMediansOverTheirMedian) {
  auto pass = [](double median) {
    sample_stats s;
    s.median_s = s.p10_s = s.p90_s = s.mean_s = median;
    s.samples = 5;
    return s;
  };
  // Medians 1.00, 1.30, 1.02: (1.30 − 1.00) / 1.02 = 29.41 %.
  EXPECT_NEAR(pass_spread_pct({pass(1.00), pass(1.30), pass(1.02)}), 100 * 0.30 / 1.02, 1e-12);
  // Two passes: over their mean, (2 − 1) / 1.5.
  EXPECT_NEAR(pass_spread_pct({pass(1.0), pass(2.0)}), 100 / 1.5, 1e-12);
  EXPECT_EQ(pass_spread_pct({pass(1.0)}), 0.0);
  EXPECT_EQ(pass_spread_pct({}), 0.0);
}
