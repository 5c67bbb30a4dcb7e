#pragma once
// Measured blocks against the cost model's prediction: the validation the report, the explorer
// and `modsim report` show. Library code: never prints, throws modsim::error.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/cost/calibrate.hpp"
#include "sim/cost/machine_speed.hpp"
#include "sim/model/spec.hpp"

namespace modsim::analysis {

// Measured blocks against their prediction (built by make_validation).
struct validation_section {
  std::string measurements_file;
  std::string device;                         // the rows' device column
  std::string hardware;                       // the hardware file's name
  std::string cost_label;                     // cost_model::label() of the model used
  int rows = 0;                               // rows in the measurements file
  int single_op_rows = 0;                     // rows the calibration may use
  int skipped_blocks = 0;                     // block rows the calibration used (not scored)
  bool calibrated = false;                    // the cost model had (or was given) a calibration
  bool ops_only = false;                      // no block rows: `points` are the single-op rows (validation_options)
  std::vector<sim::validation_point> points;  // the scored blocks (or ops, when ops_only)
  sim::validation_summary summary;
  // The single-op rows, each predicted as the profiler measured it (alone or inside its
  // block): filled by make_validation when validation_options::score_ops, and always by
  // make_cv_validation.
  std::vector<sim::validation_point> op_points;
  sim::validation_summary op_summary;
  // The datasheet roofline (the hardware without its calibration block, sim::datasheet_of) on
  // the same rows: datasheet_points[i] is points[i]'s sample predicted by it, and
  // datasheet_op_points[i] op_points[i]'s. Filled by make_validation and make_cv_validation.
  std::vector<sim::validation_point> datasheet_points, datasheet_op_points;
  sim::validation_summary datasheet_summary, datasheet_op_summary;
  std::vector<std::string> notes;
  // Cross-validated (make_cv_validation): folds > 0 and the shape groups dealt into them.
  int folds = 0;
  int groups = 0;
  // The rows held to one machine speed before scoring (sim/cost/machine_speed.hpp): to the
  // calibration's (make_validation), or to their own median anchor (make_cv_validation);
  // speed.any() false when none was. With a calibration's speed, `as_measured` is the blocks'
  // summary without holding them (the same rows, scored as they were measured).
  sim::speed_hold speed;
  std::optional<sim::validation_summary> as_measured;
};

// The errors of `points` grouped by op name (block_dense, block_mod, ...); with `timing`, an
// op timed inside its block is its own group ("mlp_up (in block)").
std::map<std::string, sim::validation_summary> summaries_by_op(const std::vector<sim::validation_point>& points,
                                                               bool timing);

// One kind of row (all blocks, a block kind, all single-op rows, an op kind) scored by the
// calibrated model and by the datasheet roofline on the same rows.
struct datasheet_comparison_row {
  std::string kind;  // "blocks", "ops" (all of them) or an op name as summaries_by_op gives it
  bool all = false;  // the "blocks" or "ops" row
  sim::validation_summary calibrated, datasheet;
  bool worse() const { return sim::calibration_worse(calibrated, datasheet); }
};
// "blocks" and each block kind, then "ops" and each op kind (timed in its block apart), from
// parallel lists (`datasheet_*` as validation_section holds them); kinds without a point are
// left out.
std::vector<datasheet_comparison_row> compare_with_datasheet(const std::vector<sim::validation_point>& blocks,
                                                             const std::vector<sim::validation_point>& datasheet_blocks,
                                                             const std::vector<sim::validation_point>& ops,
                                                             const std::vector<sim::validation_point>& datasheet_ops);
// One plain line naming the kinds of row where calibration made predictions worse than the
// datasheet roofline (sim::calibration_worse), with both figures; empty when there are none.
std::string datasheet_verdict(const std::vector<datasheet_comparison_row>& rows);

struct validation_options {
  // An uncalibrated `hw`: its calibration method is cross-validated on the rows instead
  // (make_cv_validation, up to 5 folds by shape), so no row is predicted by a fit that saw it
  // or any row of its shape, and a note says so. With fewer than two shapes (or no block row),
  // it is fitted (sim::fit_calibration) on the single-op rows only, and the note says that the
  // blocks' own op rows were in the fit.
  bool calibrate = false;
  // Also predict every single-op row (validation_section::op_points).
  bool score_ops = false;
  // With no block row to score (and none skipped), score the single-op rows instead of
  // failing (needs score_ops).
  bool ops_only_fallback = false;
  // When the calibration of `hw` used every block row given (validating a calibration on its
  // own data), cross-validate its method on those rows instead (make_cv_validation, 5 folds by
  // shape, bands included), with a note, rather than failing.
  bool cv_when_all_used = false;
  bool cv_bands = true;  // ... with each fold's band (make_cv_validation's `bands`)
  // Hold rows that carry an anchor to the machine speed the calibration of `hw` was fitted at
  // (calibration::anchor_reference_s; sim/cost/machine_speed.hpp) before scoring them, with a note
  // and the as-measured summary beside; rows are scored as measured when off, when the
  // calibration has no reference, or when the rows have no anchors. The cross-validations
  // this falls back to hold rows to their own median anchor.
  bool hold_speed = true;
};

// Validates the block rows of `points` (block_dense, block_mod, layer_mode) against the cost
// model of `hw` (calibrated or not; see validation_options). Block rows a given calibration
// used for its launch fit are skipped. Single-op rows of another backend, or of another device
// model than the calibration's, are left out. Throws modsim::error(bad_input), naming the row,
// when a block row was measured on another backend or device model than `hw` describes, and
// naming the file(s) when no block row is left to score.
validation_section make_validation(const std::vector<sim::measured_sample>& points, const sim::hardware_spec& hw,
                                   const validation_options& options, const std::string& measurements_file);

// Cross-validates the calibration method of `hw` (its datasheet numbers; a calibration block
// is ignored) on `points`: `folds` folds by shape (sim::cross_validate), every block predicted
// by a fit that never saw its shape. Throws modsim::error(bad_input) as cross_validate does.
// With `bands`, each point also carries the band its fold's calibration would print
// (sim::cross_validate with bands: about 25 more fits per fold, tens of seconds on the H100
// data); the report and the explorer leave it off.
// With `hold_speed`, rows that carry an anchor are first held to their median anchor (one
// machine speed, sim/cost/machine_speed.hpp), as `modsim calibrate` holds what it fits.
validation_section make_cv_validation(const std::vector<sim::measured_sample>& points, const sim::hardware_spec& hw,
                                      int folds, const std::string& measurements_label, bool bands = false,
                                      bool hold_speed = true);

// Leave-one-value-out along each of `axes` (sim::cross_validate_by), from the datasheet
// numbers of `hw` as make_cv_validation does: for each axis, every value's rows predicted by a
// calibration that never saw that value. Throws modsim::error(bad_input) for rows of another
// backend, no block row, or an axis with fewer than two values.
struct value_cv_section {
  std::string measurements_file;
  std::string device;
  std::string hardware;
  int rows = 0;
  std::vector<sim::value_cv_result> axes;
  std::vector<std::string> notes;
  sim::speed_hold speed;  // as make_cv_validation's
};
value_cv_section make_value_cv(const std::vector<sim::measured_sample>& points, const sim::hardware_spec& hw,
                               const std::vector<sim::cv_axis>& axes, const std::string& measurements_label,
                               bool bands = false, bool hold_speed = true);

// The measurements files behind `hw`'s calibration, or — for an uncalibrated file NAME.json —
// behind NAME-calibrated.json beside it: the files its `calibration.measurements` names,
// found as written or relative to the checkout the hardware file lives in. Empty when there is
// no such calibration or a file is missing (then `why_not` says so, when given).
std::vector<std::string> calibration_measurements(const sim::hardware_spec& hw, std::string* why_not = nullptr);

// The validation a report or the GUI shows for `hw` when no measurements were chosen: the
// data of calibration_measurements(hw); a calibrated `hw` is cross-validated (5 folds by
// shape), an uncalibrated one is its datasheet roofline against the measured blocks. Empty
// (with `why_not`) when there are no such data.
std::optional<validation_section> validation_for_hardware(const sim::hardware_spec& hw, std::string* why_not = nullptr);

// validation_for_hardware, computed once per hardware file (its path, name and calibration)
// and kept for the life of the process: the cross-validation behind a calibrated file takes
// seconds and depends on the file only. Thread-safe: a second caller for the same file while the
// first computes it waits for that computation instead of starting its own.
std::optional<validation_section> cached_validation_for_hardware(const sim::hardware_spec& hw,
                                                                 std::string* why_not = nullptr);

}  // namespace modsim::analysis
