#pragma once
// The calibration pipeline: measured rows → samples → fit → cross-validation. `modsim
// calibrate`, the validation `modsim validate`, the report and the explorer show, and the CPU
// held-out check all calibrate through calibrate_from; none fits or cross-validates on its own.
// Library code: never prints (progress goes through a callback), throws modsim::error.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/cost/calibrate.hpp"
#include "sim/cost/machine_speed.hpp"
#include "sim/model/spec.hpp"

namespace modsim::analysis {

// Measured rows as read, in file order, and the files they came from.
struct measured_rows {
  std::vector<sim::measured_sample> points;
  std::vector<sim::calibration_source> sources;  // one per file: its name and its rows
};

// Every row of `files` (sim::read_measured_samples), in order. Throws bad_input as that
// reader does (a bad row, a file with no rows).
measured_rows read_measured_rows(const std::vector<std::string>& files);

struct calibrate_options {
  sim::fit_options fit;
  // Fit one calibration on all the samples. Off: the cross-validation alone (the calibration
  // method checked on the rows, as `modsim validate --cv` and a calibrated file's validation do).
  bool fit_all = true;
  // Cross-validation by shape (sim::cross_validate): 0 = none, else the folds (>= 2). With
  // fit_all its summary is recorded in the calibration (calibration::cross_validation).
  int folds = 0;
  bool bands = false;  // each fold's band as well (sim::cross_validate's `bands`)
  // With a cross-validation and fit_all: also the coverage (sim::estimate_coverage) that
  // widens the bands outside the measured range, recorded in the calibration.
  bool coverage = false;
  // Leave one value out along each of these axes (sim::cross_validate_by).
  std::vector<sim::cv_axis> leave_out;
  // A cross-validation that cannot run (fewer shapes than folds, a fold that cannot be fitted)
  // leaves the calibration without a band (calibrated::no_cross_validation says why) instead
  // of throwing.
  bool cross_validation_optional = false;
  // With fit_all and a cross-validation: rows measured to check the calibration (shapes
  // between its measured values), never fitted; the calibration predicts their blocks and
  // decode rows and records how it did (calibration::holdout), which its bands then use.
  // Must come from the calibration's device and backend and hold block rows.
  measured_rows holdout;
  // Hold the rows (and the held-out rows) to one machine speed before fitting
  // (sim/cost/machine_speed.hpp): the median anchor of the rows given, recorded in the calibration
  // (calibration::anchor_reference_s) so that validate holds what it scores to the same speed.
  // Only calibrate_from(hw, measured_rows, ...) does; rows without an anchor stay as measured.
  bool hold_speed = true;
  // With hold_speed: rows measured while the machine ran more than this many times slower than
  // at the fastest quarter of the rows are left out of the fit (sim::leave_out_slow_rows,
  // recorded in the calibration); 0 keeps them all. The held-out rows are never left out: they
  // set the band, which has to carry what a single measurement meets.
  double slow_limit = sim::k_slow_limit;
  std::string date;                                  // recorded in the calibration; empty: now (sim::utc_now_iso8601)
  std::function<void(const std::string&)> progress;  // one line before each long step; may be empty
};

struct calibrated {
  // fit_all: the calibration, each source's used_rows counted, with the cross-validation's
  // summary and the coverage when they ran.
  sim::calibration calibration;
  std::optional<sim::cross_validation_result> cross_validation;  // its points, when it ran
  std::string no_cross_validation;                               // why it did not run (cross_validation_optional)
  std::vector<sim::value_cv_result> left_out;                    // one per calibrate_options::leave_out axis
  // What holding the rows to one machine speed did (calibrate_options::hold_speed), to the
  // fitted rows and to the held-out ones.
  sim::speed_hold speed, holdout_speed;
  sim::slow_cut slow;  // the rows left out of the fit as measured in a slow spell
};

// Fits `hw` (its datasheet numbers) to `samples`, which came from `sources`, and
// cross-validates as `options` ask. Throws what sim::fit_calibration, sim::cross_validate
// and sim::cross_validate_by throw.
calibrated calibrate_from(const sim::hardware_spec& hw, const std::vector<sim::measured_sample>& samples,
                          std::vector<sim::calibration_source> sources, const calibrate_options& options);
// The same on every row of `rows` (sim::with_costs each; throws bad_input naming a bad row).
calibrated calibrate_from(const sim::hardware_spec& hw, const measured_rows& rows, const calibrate_options& options);

}  // namespace modsim::analysis
