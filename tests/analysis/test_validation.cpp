// analysis::make_validation (which rows are scored, skipped or refused) and summaries_by_op.
// Expected values are worked by hand.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#include "analysis/validation.hpp"
#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/cost/validation.hpp"
#include "analysis/calibration.hpp"

namespace modsim::analysis {
namespace {

namespace fs = std::filesystem;

std::string config(const std::string& rel) { return std::string(MODSIM_SOURCE_DIR) + "/configs/" + rel; }

sim::measured_sample row(modsim::op op, modsim::backend_kind backend, const std::string& device, const std::string& key,
                         double median_s = 1e-3) {
  sim::measured_sample p;
  p.op = op;
  p.type = sim::dtype::fp32;
  p.batch = 1;
  p.seq_len = 256;
  p.d_model = 256;
  p.n_heads = 8;
  p.d_ff = 1024;
  p.capacity = op == modsim::op::block_dense ? 1.0 : 0.5;
  p.median_s = median_s;
  p.backend = backend;
  p.device = device;
  p.key = key;
  p.where = "rows.csv:" + key;
  return p;
}

sim::validation_point point(modsim::op op, modsim::timing_mode timing, double error_pct) {
  sim::validation_point p;
  p.sample.op = op;
  p.sample.timing = timing;
  p.error_pct = error_pct;
  return p;
}

TEST(Validation, SummariesByOpKeepInBlockTimingApartWhenAsked) {
  const std::vector<sim::validation_point> pts = {point(modsim::op::mlp_up, modsim::timing_mode::isolated, 1),
                                                  point(modsim::op::mlp_up, modsim::timing_mode::isolated, -3),
                                                  point(modsim::op::mlp_up, modsim::timing_mode::isolated, 5),
                                                  point(modsim::op::mlp_up, modsim::timing_mode::in_block, -2),
                                                  point(modsim::op::topk, modsim::timing_mode::isolated, 7)};
  const auto apart = summaries_by_op(pts, true);
  ASSERT_EQ(apart.size(), 3u);
  EXPECT_EQ(apart.at("mlp_up").points, 3);
  EXPECT_DOUBLE_EQ(apart.at("mlp_up").median_abs_pct_error, 3.0);  // |1|, |-3|, |5|
  EXPECT_DOUBLE_EQ(apart.at("mlp_up").mean_pct_error, 1.0);        // (1 - 3 + 5) / 3
  EXPECT_EQ(apart.at("mlp_up (in block)").points, 1);
  EXPECT_DOUBLE_EQ(apart.at("mlp_up (in block)").max_abs_pct_error, 2.0);
  const auto together = summaries_by_op(pts, false);
  ASSERT_EQ(together.size(), 2u);
  EXPECT_EQ(together.at("mlp_up").points, 4);
  EXPECT_DOUBLE_EQ(together.at("mlp_up").max_abs_pct_error, 5.0);
  EXPECT_DOUBLE_EQ(together.at("mlp_up").mean_pct_error, 0.25);  // (1 - 3 + 5 - 2) / 4
}

TEST(Validation, ScoresBlocksAndTheOpRowsOfItsOwnBackendOnly) {
  const sim::hardware_spec cpu = sim::load_hardware(config("hardware/cpu.json"));
  validation_options vo;
  vo.score_ops = true;
  const validation_section v = make_validation({row(modsim::op::block_dense, modsim::backend_kind::cpu, "c", "a", 2e-3),
                                                row(modsim::op::mlp_up, modsim::backend_kind::cpu, "c", "b"),
                                                row(modsim::op::mlp_up, modsim::backend_kind::cuda, "g", "c")},
                                               cpu, vo, "rows.csv");
  ASSERT_EQ(v.points.size(), 1u);
  EXPECT_EQ(v.points[0].sample.op, modsim::op::block_dense);
  EXPECT_NEAR(v.points[0].error_pct, 100 * (v.points[0].predicted_s - 2e-3) / 2e-3, 1e-9);
  ASSERT_EQ(v.op_points.size(), 1u);  // the cuda row is not this hardware's
  EXPECT_EQ(v.op_points[0].sample.op, modsim::op::mlp_up);
  EXPECT_EQ(v.single_op_rows, 1);
  EXPECT_EQ(v.rows, 3);
  EXPECT_FALSE(v.calibrated);
  EXPECT_FALSE(v.ops_only);
}

TEST(Validation, OpRowsStandInForMissingBlocksOnlyWhenAllowed) {
  const sim::hardware_spec cpu = sim::load_hardware(config("hardware/cpu.json"));
  validation_options vo;
  vo.score_ops = true;
  EXPECT_THROW(make_validation({row(modsim::op::mlp_up, modsim::backend_kind::cpu, "c", "b")}, cpu, vo, "rows.csv"),
               modsim::error);
  vo.ops_only_fallback = true;
  const validation_section v =
      make_validation({row(modsim::op::mlp_up, modsim::backend_kind::cpu, "c", "b", 4e-4)}, cpu, vo, "rows.csv");
  EXPECT_TRUE(v.ops_only);
  ASSERT_EQ(v.points.size(), 1u);
  EXPECT_EQ(v.points[0].sample.op, modsim::op::mlp_up);
  EXPECT_NEAR(v.points[0].error_pct, 100 * (v.points[0].predicted_s - 4e-4) / 4e-4, 1e-9);
}

TEST(Validation, ACalibrationIsNeverScoredOnBlocksItUsedOrOnAnotherDevice) {
  const sim::hardware_spec cal = sim::load_hardware(config("hardware/cpu-calibrated.json"));
  const sim::calibration c = sim::parse_calibration(cal.calibration_json, "cpu-calibrated.json");
  ASSERT_FALSE(c.block_keys.empty());
  // A block the calibration's launch fit used: skipped; none left → refused.
  try {
    make_validation({row(modsim::op::block_dense, modsim::backend_kind::cpu, c.device, c.block_keys.front())}, cal, {},
                    "rows.csv");
    FAIL() << "a block the calibration used was scored";
  } catch (const modsim::error& e) {
    EXPECT_NE(std::string(e.what()).find("used by the calibration"), std::string::npos) << e.what();
  }
  // A block from another CPU model: refused, naming the row and the key.
  try {
    make_validation({row(modsim::op::block_dense, modsim::backend_kind::cpu, "Some Other CPU, 1 threads", "x")}, cal,
                    {}, "rows.csv");
    FAIL() << "a block of another device was scored";
  } catch (const modsim::error& e) {
    EXPECT_NE(std::string(e.what()).find("rows.csv:x"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("device"), std::string::npos) << e.what();
  }
  // A held-out block of the calibration's device: scored, and the one used skipped beside it.
  const validation_section v =
      make_validation({row(modsim::op::block_dense, modsim::backend_kind::cpu, c.device, c.block_keys.front()),
                       row(modsim::op::block_dense, modsim::backend_kind::cpu, c.device, "held-out")},
                      cal, {}, "rows.csv");
  EXPECT_TRUE(v.calibrated);
  EXPECT_EQ(v.skipped_blocks, 1);
  ASSERT_EQ(v.points.size(), 1u);
  EXPECT_EQ(v.points[0].sample.key, "held-out");
}

// An mlp_up row of B1 S256 d_model 256 d_ff 1024, fp32, capacity 1 (256 tokens): by hand,
// 2·256·256·1024 = 134,217,728 FLOPs and 4·(256·256 + 256·1024 + 256·1024) = 2,359,296 bytes,
// so cpu.json's datasheet roofline (332.8 GFLOP/s, 20 GB/s) is
// max(134217728 / 332.8e9, 2359296 / 20e9) = 4.0329e-4 s, compute-bound.
sim::measured_sample mlp_up_row(const std::string& device, double median_s, const std::string& key) {
  sim::measured_sample p = row(modsim::op::mlp_up, modsim::backend_kind::cpu, device, key, median_s);
  p.capacity = 1.0;
  return p;
}
constexpr double k_mlp_up_roofline_s = 134217728.0 / 332.8e9;

TEST(Validation, TheDatasheetRooflineIsScoredOnTheSameRowsAsTheCalibration) {
  const sim::hardware_spec cal = sim::load_hardware(config("hardware/cpu-calibrated.json"));
  const sim::calibration c = sim::parse_calibration(cal.calibration_json, "cpu-calibrated.json");
  validation_options vo;
  vo.score_ops = true;
  vo.ops_only_fallback = true;
  // Measured at twice the roofline: the datasheet is off by -50 %, whatever the calibration says.
  const validation_section v =
      make_validation({mlp_up_row(c.device, 2 * k_mlp_up_roofline_s, "a")}, cal, vo, "rows.csv");
  ASSERT_TRUE(v.calibrated);
  ASSERT_EQ(v.datasheet_points.size(), 1u);
  ASSERT_EQ(v.datasheet_op_points.size(), 1u);
  EXPECT_NEAR(v.datasheet_points[0].predicted_s, k_mlp_up_roofline_s, 1e-12);
  EXPECT_NEAR(v.datasheet_points[0].error_pct, -50.0, 1e-6);
  EXPECT_NEAR(v.datasheet_summary.median_abs_pct_error, 50.0, 1e-6);
  EXPECT_EQ(v.datasheet_points[0].sample.key, v.points[0].sample.key);    // the same row
  EXPECT_NE(v.points[0].predicted_s, v.datasheet_points[0].predicted_s);  // by another model

  // Two rows, one measured at the roofline, one at four times it: the datasheet's errors are
  // 0 % and -75 % (median 37.5 %); the comparison rows are "ops" (all) and "mlp_up".
  const validation_section w = make_validation(
      {mlp_up_row(c.device, k_mlp_up_roofline_s, "a"), mlp_up_row(c.device, 4 * k_mlp_up_roofline_s, "b")}, cal, vo,
      "rows.csv");
  EXPECT_NEAR(w.datasheet_op_summary.median_abs_pct_error, 37.5, 1e-6);
  EXPECT_NEAR(w.datasheet_op_summary.max_abs_pct_error, 75.0, 1e-6);
  EXPECT_NEAR(w.datasheet_op_summary.mean_pct_error, -37.5, 1e-6);
  const auto rows = compare_with_datasheet({}, {}, w.op_points, w.datasheet_op_points);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].kind, "ops");
  EXPECT_TRUE(rows[0].all);
  EXPECT_EQ(rows[1].kind, "mlp_up");
  EXPECT_EQ(rows[1].datasheet.points, 2);
}

TEST(Validation, TheVerdictNamesTheKindsWhereCalibrationIsWorse) {
  auto pts = [](std::initializer_list<double> errors) {
    std::vector<sim::validation_point> out;
    for (double e : errors) out.push_back(point(modsim::op::block_mod, modsim::timing_mode::isolated, e));
    return out;
  };
  // Calibrated |errors| 2, 4, 6 (median 4) against the datasheet's 1, 2, 3 (median 2): worse.
  const auto worse = compare_with_datasheet(pts({2, -4, 6}), pts({1, 2, -3}), {}, {});
  ASSERT_EQ(worse.size(), 2u);  // "blocks" and "block_mod"
  EXPECT_TRUE(worse[0].worse());
  const std::string line = datasheet_verdict(worse);
  EXPECT_NE(line.find("worse than the datasheet roofline"), std::string::npos) << line;
  EXPECT_NE(line.find("block_mod (3: median |error| 4.0% vs 2.0%"), std::string::npos) << line;
  // The other way round: no line.
  EXPECT_EQ(datasheet_verdict(compare_with_datasheet(pts({1, 2, -3}), pts({2, -4, 6}), {}, {})), "");
  // Equal to the printed digit: not worse.
  EXPECT_FALSE(sim::calibration_worse(sim::summarize_errors({4.0}), sim::summarize_errors({3.96})));
  EXPECT_TRUE(sim::calibration_worse(sim::summarize_errors({4.0}), sim::summarize_errors({3.9})));
}

// Without a calibration, `modsim report --measurements` (validation_options::calibrate) holds
// something out: the method is cross-validated by shape, so no block is predicted by a fit that
// saw its own op rows.
TEST(Validation, CalibratingHereCrossValidatesByShapeInsteadOfScoringTheFittedRows) {
  const std::string file =
      std::string(MODSIM_SOURCE_DIR) + "/reports/measurements/cpu-xeon-2core-2026-11-24-calibration.csv";
  const std::vector<sim::measured_sample> rows = read_measured_rows({file}).points;
  const sim::hardware_spec cpu = sim::load_hardware(config("hardware/cpu.json"));
  validation_options vo;
  vo.calibrate = true;
  const validation_section v = make_validation(rows, cpu, vo, "calibration.csv");
  EXPECT_EQ(v.folds, 5);
  ASSERT_FALSE(v.notes.empty());
  EXPECT_NE(v.notes.front().find("cross-validated"), std::string::npos) << v.notes.front();
  EXPECT_NE(v.notes.front().find("5 folds by shape"), std::string::npos) << v.notes.front();
  // Every block row is scored (each by the fold that held its shape out), and the folds were
  // dealt over the file's shape groups, counted here.
  std::set<std::string> groups;
  for (const auto& r : rows) groups.insert(sim::shape_group_of(sim::with_costs(r)));
  std::size_t blocks = 0;
  for (const auto& r : rows) blocks += sim::scored_whole(r.op);
  EXPECT_EQ(v.points.size(), blocks);
  EXPECT_EQ(v.groups, static_cast<int>(groups.size()));
}

// A calibration that records the machine speed it was fitted at (an anchor of 1 ms, elasticity
// 1): a row measured while the anchor took 2 ms is scored at half its measured time, the
// as-measured figures beside; with elasticity 0.5 at 1/sqrt(2) of it; without the reference,
// or with hold_speed off, the row is scored as it is.
TEST(Validation, RowsAreHeldToTheCalibrationsMachineSpeed) {
  sim::hardware_spec cal = sim::load_hardware(config("hardware/cpu-calibrated.json"));
  sim::calibration c = sim::parse_calibration(cal.calibration_json, "cpu-calibrated.json");
  ASSERT_EQ(c.anchor_reference_s, 0.0);  // the shipped file: fitted before anchors
  sim::measured_sample slow = row(modsim::op::block_dense, modsim::backend_kind::cpu, c.device, "held-out", 6e-3);
  slow.anchor_s = 2e-3;

  // Without a reference: scored as measured, with a note saying why.
  const validation_section plain = make_validation({slow}, cal, {}, "rows.csv");
  ASSERT_EQ(plain.points.size(), 1u);
  EXPECT_DOUBLE_EQ(plain.points[0].sample.median_s, 6e-3);
  EXPECT_FALSE(plain.speed.any());
  bool noted = false;
  for (const auto& n : plain.notes) noted = noted || n.find("records none") != std::string::npos;
  EXPECT_TRUE(noted);

  c.anchor_reference_s = 1e-3;
  c.anchor_rows = 10;
  c.anchor_elasticity = 1.0;
  cal.calibration_json = sim::calibration_to_json(c);
  const validation_section held = make_validation({slow}, cal, {}, "rows.csv");
  ASSERT_EQ(held.points.size(), 1u);
  EXPECT_DOUBLE_EQ(held.points[0].sample.median_s, 3e-3);  // 6 ms × 1 ms / 2 ms
  const double predicted = held.points[0].predicted_s;
  EXPECT_NEAR(held.points[0].error_pct, 100 * (predicted - 3e-3) / 3e-3, 1e-9);
  EXPECT_EQ(held.speed.held, 1);
  EXPECT_DOUBLE_EQ(held.speed.median_ratio, 2.0);
  ASSERT_TRUE(held.as_measured.has_value());
  EXPECT_NEAR(held.as_measured->median_abs_pct_error, std::abs(100 * (predicted - 6e-3) / 6e-3), 1e-9);

  c.anchor_elasticity = 0.5;
  cal.calibration_json = sim::calibration_to_json(c);
  EXPECT_NEAR(make_validation({slow}, cal, {}, "rows.csv").points[0].sample.median_s, 6e-3 / std::sqrt(2.0), 1e-15);

  validation_options off;
  off.hold_speed = false;
  const validation_section raw = make_validation({slow}, cal, off, "rows.csv");
  EXPECT_DOUBLE_EQ(raw.points[0].sample.median_s, 6e-3);
  EXPECT_FALSE(raw.speed.any());
}

}  // namespace
}  // namespace modsim::analysis
