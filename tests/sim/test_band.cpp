// sim/validation.hpp band_for: the band a prediction carries, from hand-built calibrations
// whose cross-validation and coverage are given, so every band below is worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/cost.hpp"
#include "sim/validation.hpp"

namespace modsim::sim {
namespace {

// Cross-validated at p90 6 % overall; by predicted time: up to 1 ms 10 %, up to 10 ms 5 %,
// beyond 2 %. Widths 512–1024 seen, their two ends held out missed by 12 % at p90 (twice the
// cross-validation), one factor of two from their neighbour; heads 8–16 seen with no
// extrapolation measured.
calibration hand_made() {
  calibration c;
  cross_validation_summary cv;
  cv.folds = 5;
  cv.blocks = 40;
  cv.median_abs_pct_error = 2;
  cv.p90_abs_pct_error = 6;
  cv.p90_by_time = {{1e-3, 10}, {1e-2, 5}, {1.0, 2}};
  c.cross_validation = cv;
  c.coverage = {{"d_model", 512, 1024, 20, 12.0, 1.0}, {"n_heads", 8, 16, 0, 0.0, 0.0}};
  return c;
}

TEST(ErrorBand, InsideTheRangeIsTheCrossValidationOfBlocksOfThatDuration) {
  const calibration c = hand_made();
  const axis_values inside = {{cv_axis::d_model, 768}, {cv_axis::n_heads, 12}};
  EXPECT_DOUBLE_EQ(band_for(c, inside, 5e-4)->p90_pct, 10.0);
  EXPECT_DOUBLE_EQ(band_for(c, inside, 5e-3)->p90_pct, 5.0);
  EXPECT_DOUBLE_EQ(band_for(c, inside, 3.0)->p90_pct, 2.0);  // above the last tercile: the last
  EXPECT_DOUBLE_EQ(band_for(c, inside, 0.0)->p90_pct, 6.0);  // no time: all blocks
  EXPECT_TRUE(band_for(c, inside, 5e-3)->inside());
  // Within 1 % of the range counts as inside.
  EXPECT_TRUE(band_for(c, {{cv_axis::d_model, 1030}}, 5e-3)->inside());
}

TEST(ErrorBand, OutsideGrowsByTheAxisExtrapolationAndTheDistance) {
  const calibration c = hand_made();
  // 2048 is one factor of two past 1024, as far as the held-out ends were: 5 % × 12/6.
  std::optional<error_band> b = band_for(c, {{cv_axis::d_model, 2048}}, 5e-3);
  ASSERT_TRUE(b);
  EXPECT_DOUBLE_EQ(b->p90_pct, 10.0);
  ASSERT_EQ(b->outside.size(), 1u);
  EXPECT_EQ(b->outside[0].axis, "d_model");
  EXPECT_DOUBLE_EQ(b->outside[0].distance, 1.0);
  // 4096 is twice as far as the held-out ends reached: 5 % × 2 × 2.
  EXPECT_DOUBLE_EQ(band_for(c, {{cv_axis::d_model, 4096}}, 5e-3)->p90_pct, 20.0);
  // Below the range the same: 128 is two factors of two under 512.
  EXPECT_DOUBLE_EQ(band_for(c, {{cv_axis::d_model, 128}}, 5e-3)->p90_pct, 20.0);
  // Heads outside, with no extrapolation measured along them: named, and widened by the
  // distance alone (64 is two factors of two past 16: 5 % × 2).
  b = band_for(c, {{cv_axis::n_heads, 64}}, 5e-3);
  ASSERT_EQ(b->outside.size(), 1u);
  EXPECT_FALSE(b->outside[0].measured);
  EXPECT_DOUBLE_EQ(b->p90_pct, 10.0);
  EXPECT_NE(b->text().find("no extrapolation along it was measured"), std::string::npos) << b->text();
  // Several values along one axis (a model's layers): the farthest decides; several axes: the widest.
  b = band_for(c, {{cv_axis::d_model, 2048}, {cv_axis::d_model, 4096}, {cv_axis::n_heads, 64}}, 5e-3);
  EXPECT_DOUBLE_EQ(b->p90_pct, 20.0);
  EXPECT_EQ(b->outside.size(), 2u);
}

TEST(ErrorBand, NoneWithoutACrossValidation) {
  calibration c = hand_made();
  c.cross_validation.reset();
  EXPECT_FALSE(band_for(c, {{cv_axis::d_model, 768}}, 5e-3).has_value());
}

TEST(ErrorBand, CoverageAndTimeTercilesSurviveTheCalibrationJson) {
  calibration c = hand_made();
  c.date = "2026-11-24T00:00:00Z";
  c.device = "d";
  c.backend = "cpu";
  efficiency_curve curve;  // a calibration needs one fitted op to be read back
  curve.op = modsim::op::mlp_up;
  curve.log10_work = {-5.0, -3.0};
  curve.inv_efficiency = {2.0, 1.5};
  curve.samples = 4;
  c.curves.push_back(curve);
  const calibration back = parse_calibration(calibration_to_json(c), "test.json");
  ASSERT_TRUE(back.cross_validation);
  ASSERT_EQ(back.cross_validation->p90_by_time.size(), 3u);
  EXPECT_DOUBLE_EQ(back.cross_validation->p90_by_time[1].first, 1e-2);
  EXPECT_DOUBLE_EQ(back.cross_validation->p90_by_time[1].second, 5.0);
  ASSERT_EQ(back.coverage.size(), 2u);
  EXPECT_EQ(back.coverage[0].axis, "d_model");
  EXPECT_DOUBLE_EQ(back.coverage[0].p90_abs_pct_error, 12.0);
  EXPECT_EQ(back.coverage[1].blocks, 0);
  // The same band from the parsed calibration.
  EXPECT_DOUBLE_EQ(band_for(back, {{cv_axis::d_model, 4096}}, 5e-3)->p90_pct, 20.0);
}

}  // namespace
}  // namespace modsim::sim
