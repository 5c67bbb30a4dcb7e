// The shared order statistics (sim/common/stats.hpp) against values worked out by hand.
#include <gtest/gtest.h>

#include <vector>

#include "sim/des/serving.hpp"
#include "sim/common/stats.hpp"

namespace modsim::sim {
namespace {

TEST(Stats, PercentilesOfFourValuesInterpolateBetweenRanks) {
  // Sorted 1 2 3 4, ranks 0..3. p50: rank 0.5 x 3 = 1.5 -> 2 + 0.5 x (3 - 2) = 2.5.
  // p90: rank 2.7 -> 3 + 0.7 x 1 = 3.7. p99: rank 2.97 -> 3.97. Mean 10 / 4 = 2.5.
  const percentiles p = percentiles_of({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(p.p50, 2.5);
  EXPECT_DOUBLE_EQ(p.p90, 3.7);
  EXPECT_DOUBLE_EQ(p.p99, 3.97);
  EXPECT_DOUBLE_EQ(p.mean, 2.5);
}

TEST(Stats, PercentilesOfNothingAreZeroAndOfOneValueThatValue) {
  const percentiles none = percentiles_of({});
  EXPECT_EQ(none.p50, 0);
  EXPECT_EQ(none.p90, 0);
  EXPECT_EQ(none.p99, 0);
  EXPECT_EQ(none.mean, 0);
  const percentiles one = percentiles_of({7});
  EXPECT_EQ(one.p50, 7);
  EXPECT_EQ(one.p99, 7);
  EXPECT_EQ(one.mean, 7);
}

TEST(Stats, PercentileOfSortedValuesAndValueAtRank) {
  const std::vector<double> v{10, 20, 30, 40, 50};
  // q = 0.25: rank 0.25 x 4 = 1 -> 20. q = 0.6: rank 2.4 -> 30 + 0.4 x 10 = 34.
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.25), 20);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.6), 34);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 1.0), 50);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.0), 10);
  // Rank 0.5 -> halfway between 10 and 20; the last rank has no next value.
  EXPECT_DOUBLE_EQ(value_at_rank(v, 0.5), 15);
  EXPECT_DOUBLE_EQ(value_at_rank(v, 4.0), 50);
}

TEST(Stats, MedianIsTheMiddleOrTheMeanOfTheTwoMiddleValues) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({-1, 5}), 2);
  EXPECT_EQ(median({}), 0);
}

TEST(Stats, ServingKeepsItsPercentilesName) {
  // des::percentiles and des::percentiles_of are the shared ones.
  const des::percentiles p = des::percentiles_of({1, 3});
  EXPECT_DOUBLE_EQ(p.p50, 2);
  EXPECT_DOUBLE_EQ(p.mean, 2);
}

}  // namespace
}  // namespace modsim::sim
