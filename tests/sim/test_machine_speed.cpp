// sim::smoothed_anchors, median_anchor and hold_machine_speed against hand-worked values.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "sim/cost/machine_speed.hpp"

namespace modsim::sim {
namespace {

measured_sample timed(const std::string& where, double median_s, double anchor_s) {
  measured_sample s;
  s.where = where;
  s.median_s = median_s;
  s.anchor_s = anchor_s;
  return s;
}

// a.csv: a point of two rows (an in_block block and its op) at an anchor of 1 ms, one at 4 ms,
// one at 2 ms, a row without an anchor; b.csv: one point at 8 ms.
std::vector<measured_sample> two_files() {
  return {timed("a.csv:2", 10e-3, 1e-3), timed("a.csv:3", 5e-3, 1e-3), timed("a.csv:4", 10e-3, 4e-3),
          timed("a.csv:5", 10e-3, 2e-3), timed("a.csv:6", 7e-3, 0),    timed("b.csv:2", 10e-3, 8e-3)};
}

TEST(MachineSpeed, ARowsSpeedIsTheMedianAnchorOfItsPointAndItsNeighbours) {
  const std::vector<double> a = smoothed_anchors(two_files());
  ASSERT_EQ(a.size(), 6u);
  EXPECT_DOUBLE_EQ(a[0], 2.5e-3);  // {1, 4}: the first point has one neighbour, the mean of two
  EXPECT_DOUBLE_EQ(a[1], 2.5e-3);  // the same point
  EXPECT_DOUBLE_EQ(a[2], 2e-3);    // {1, 4, 2}
  EXPECT_DOUBLE_EQ(a[3], 3e-3);    // {4, 2}: b.csv's point is no neighbour
  EXPECT_DOUBLE_EQ(a[4], 0.0);     // no anchor
  EXPECT_DOUBLE_EQ(a[5], 8e-3);    // alone in its file
  // Over the rows with one: {2.5, 2.5, 2, 3, 8} → 2.5.
  EXPECT_DOUBLE_EQ(median_anchor(two_files()), 2.5e-3);
  EXPECT_DOUBLE_EQ(median_anchor({timed("a.csv:2", 1, 0)}), 0.0);
  EXPECT_DOUBLE_EQ(median_anchor({}), 0.0);
}

TEST(MachineSpeed, RowsAreRescaledByTheAnchorRatioToThePowerOfTheElasticity) {
  std::vector<measured_sample> rows = two_files();
  const speed_hold h = hold_machine_speed(rows, 2e-3, 1.0);
  EXPECT_DOUBLE_EQ(rows[0].median_s, 8e-3);         // 10 ms × 2 / 2.5
  EXPECT_DOUBLE_EQ(rows[1].median_s, 4e-3);         // 5 ms × 2 / 2.5
  EXPECT_DOUBLE_EQ(rows[2].median_s, 10e-3);        // at the reference
  EXPECT_NEAR(rows[3].median_s, 20e-3 / 3, 1e-15);  // 10 ms × 2 / 3
  EXPECT_DOUBLE_EQ(rows[4].median_s, 7e-3);         // left as measured
  EXPECT_DOUBLE_EQ(rows[5].median_s, 2.5e-3);       // 10 ms × 2 / 8
  EXPECT_EQ(h.held, 5);
  EXPECT_EQ(h.without, 1);
  // Ratios 1.25, 1.25, 1, 1.5, 4: median 1.25; p10 at rank 0.4 → 1 + 0.4 · 0.25 = 1.1; p90 at
  // rank 3.6 → 1.5 + 0.6 · 2.5 = 3; max 4.
  EXPECT_DOUBLE_EQ(h.median_ratio, 1.25);
  EXPECT_NEAR(h.p10_ratio, 1.1, 1e-12);
  EXPECT_NEAR(h.p90_ratio, 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(h.max_ratio, 4.0);
  EXPECT_NE(h.text().find("5 rows held"), std::string::npos) << h.text();
  EXPECT_NE(h.text().find("1 rows without an anchor"), std::string::npos) << h.text();

  // Elasticity 0.5: the square root of the ratio, 10 ms × sqrt(2 / 2.5) = 8.944 ms.
  std::vector<measured_sample> half = two_files();
  hold_machine_speed(half, 2e-3, 0.5);
  EXPECT_NEAR(half[0].median_s, 10e-3 * std::sqrt(0.8), 1e-15);
  // The default elasticity is the documented 0.7.
  std::vector<measured_sample> dflt = two_files();
  hold_machine_speed(dflt, 2e-3);
  EXPECT_NEAR(dflt[0].median_s, 10e-3 * std::pow(0.8, 0.7), 1e-15);
}

TEST(MachineSpeed, NoReferenceChangesNothing) {
  std::vector<measured_sample> rows = two_files();
  const speed_hold h = hold_machine_speed(rows, 0);
  EXPECT_FALSE(h.any());
  EXPECT_DOUBLE_EQ(rows[0].median_s, 10e-3);
}

// One file of eight one-row points at anchors 1.0, 1.1, 0.9, 1.0, 2.0, 2.1, 1.9, 1.0 ms (times
// 1-8 ms; no two neighbours alike, which would make them one point), then a row without an
// anchor (9 ms).
std::vector<measured_sample> spell() {
  std::vector<measured_sample> rows;
  const double anchors[] = {1.0, 1.1, 0.9, 1.0, 2.0, 2.1, 1.9, 1.0};
  for (int i = 0; i < 8; ++i)
    rows.push_back(timed("s.csv:" + std::to_string(i + 2), (i + 1) * 1e-3, anchors[i] * 1e-3));
  rows.push_back(timed("s.csv:10", 9e-3, 0));
  return rows;
}

TEST(MachineSpeed, RowsOfADeepSlowSpellAreLeftOut) {
  // Smoothed: {1.0, 1.1} → 1.05, {1.0, 1.1, 0.9} → 1.0, {1.1, 0.9, 1.0} → 1.0, {0.9, 1.0, 2.0}
  // → 1.0, {1.0, 2.0, 2.1} → 2.0, {2.0, 2.1, 1.9} → 2.0, {2.1, 1.9, 1.0} → 1.9, {1.9, 1.0} →
  // 1.45. Sorted 1.0, 1.0, 1.0, 1.05, 1.45, 1.9, 2.0, 2.0: the 25th percentile (rank 1.75) is 1 ms.
  std::vector<measured_sample> rows = spell();
  const slow_cut c = leave_out_slow_rows(rows, 1.6);
  EXPECT_DOUBLE_EQ(c.fast_s, 1e-3);
  EXPECT_DOUBLE_EQ(c.limit, 1.6);
  EXPECT_EQ(c.rows, 9);
  EXPECT_EQ(c.left_out, 3);  // 2.0, 2.0, 1.9 ms; 1.45 ms is within 1.6 ×, the anchorless row stays
  EXPECT_DOUBLE_EQ(c.slowest_ratio, 2.0);
  ASSERT_EQ(rows.size(), 6u);
  const double kept[] = {1e-3, 2e-3, 3e-3, 4e-3, 8e-3, 9e-3};  // in their order
  for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_DOUBLE_EQ(rows[i].median_s, kept[i]) << i;
  EXPECT_NE(c.text().find("3 of 9 rows left out"), std::string::npos) << c.text();
  EXPECT_NE(c.text().find("more than 60% slower"), std::string::npos) << c.text();

  // A limit of 1.4 takes the 1.45 ms point as well; 0 (or no anchor at all) takes none.
  std::vector<measured_sample> tighter = spell();
  EXPECT_EQ(leave_out_slow_rows(tighter, 1.4).left_out, 4);
  EXPECT_EQ(tighter.size(), 5u);
  std::vector<measured_sample> all = spell();
  EXPECT_FALSE(leave_out_slow_rows(all, 0).any());
  EXPECT_EQ(all.size(), 9u);
  std::vector<measured_sample> bare = {timed("a.csv:2", 1, 0), timed("a.csv:3", 2, 0)};
  EXPECT_FALSE(leave_out_slow_rows(bare, 1.1).any());
  EXPECT_EQ(bare.size(), 2u);
  // The default limit is the documented 1.35.
  EXPECT_DOUBLE_EQ(k_slow_limit, 1.35);
}

}  // namespace
}  // namespace modsim::sim
