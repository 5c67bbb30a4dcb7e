#pragma once
// Validation of a calibrated cost model: measured samples (blocks, ops) against their
// prediction, the statistics of the percentage errors, cross-validation grouped by shape, and
// leave-one-value-out along one axis (how the model does outside the values it saw).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cost/measured_sample.hpp"
#include "sim/cost/sample_costs.hpp"
#include "sim/cost/calibration_record.hpp"
#include "sim/cost/cost.hpp"
#include "sim/cost/efficiency_fit.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim {

struct validation_point {
  measured_sample sample;
  double predicted_s = 0;
  double ops_s = 0;       // Σ predicted op times (without launch overhead)
  double overhead_s = 0;  // kernels × launch_s
  double error_pct = 0;   // 100 · (predicted − measured) / measured
  // The p90 band the calibration that predicted it gives this point (band_for), when known.
  std::optional<double> band_pct;
  // Where that band comes from, in a few words (error_band::short_text): inside the measured
  // range, between measured values, or outside it along which axes and how far.
  std::string band_where;
  // Its ops timed with a stand-in's curve, and their shares of predicted_s (set_band widens
  // the band for them).
  std::vector<stand_in_use> stand_ins;
};

struct validation_summary {
  int points = 0;
  double median_abs_pct_error = 0;
  double p90_abs_pct_error = 0;  // linear interpolation between closest ranks, q·(n−1)
  double max_abs_pct_error = 0;
  double mean_pct_error = 0;  // signed: > 0 = the model predicts too slow on average
};

// A sample against its prediction (predict_sample: a block, or an op as the profiler measured it).
validation_point validate_sample(const measured_sample& s, const cost_model& model);
// One point per block or decode sample (block_dense, block_mod, layer_mode, decode_*); other
// samples are ignored.
std::vector<validation_point> validate_blocks(const std::vector<measured_sample>& samples, const cost_model& model);
// The datasheet roofline of `hw`: its hardware numbers without the calibration block (what
// h100-sxm.json is to h100-sxm-calibrated.json).
hardware_spec datasheet_of(const hardware_spec& hw);
// The samples of `points` predicted again by `model`, in the same order: another model scored on
// the same rows (the datasheet roofline beside a calibration).
std::vector<validation_point> rescore(const std::vector<validation_point>& points, const cost_model& model);
// Whether a calibration made predictions worse than the datasheet roofline on the same rows:
// its median or its p90 |error| above the datasheet's by more than 0.05 percentage points (what
// the one-decimal figures printed can show).
bool calibration_worse(const validation_summary& calibrated, const validation_summary& datasheet);
// Statistics of the points' absolute percentage errors (zeros when there are none).
validation_summary summarize(const std::vector<validation_point>& points);
// The same from plain signed percentage errors.
validation_summary summarize_errors(const std::vector<double>& error_pct);

// A shift shared by (nearly) every row: what a machine that drifted between the calibration's
// measurements and these rows leaves, rather than the model, which errs by shape. Present when
// there are at least 8 errors, at least 90 % of them have the sign of their median, and that
// median is at least 2 % and at least twice the median distance of the errors from it.
struct error_shift {
  int points = 0;
  int same_sign = 0;               // errors with the median's sign
  double median_pct = 0;           // the median signed error: the shift
  double residual_median_pct = 0;  // median |error − shift|: the scatter around it
  double residual_p90_pct = 0;     // p90 of the same
};
std::optional<error_shift> uniform_shift(const std::vector<double>& error_pct);

// ------------------------------------------------------------------------------------------
// Cross-validation grouped by shape.
// ------------------------------------------------------------------------------------------
// The rows are grouped by shape (batch, seq_len, d_model, n_heads, n_kv_heads, d_ff, mlp: a
// block and every op row measured at its shape, whatever the capacity or variant, share a
// group); the sorted groups are dealt round-robin into K folds; each fold's rows are
// predicted by a calibration fitted on the other folds only. So a block is never predicted
// by a fit that saw it or any op of its shape.

// The group of a sample ("B8 S2048 d2048 h16 kv16 ff8192 gelu").
std::string shape_group_of(const measured_sample& s);

struct cross_validation_result {
  int folds = 0;
  int groups = 0;
  std::vector<validation_point> blocks;  // every block row, predicted out of fold
  std::vector<validation_point> ops;     // every single-op row, predicted out of fold
  cross_validation_summary summary() const;
};

// Throws modsim::error(bad_input) when folds < 2 or there are fewer shape groups than folds,
// and whatever fit_calibration throws for a fold.
// With `bands`, each fold's calibration is itself cross-validated by shape (up to 5 folds) and
// given its coverage (estimate_coverage) on its own training rows, so every held-out point
// carries the band that calibration would print for it (validation_point::band_pct): the
// band is checked against errors it never saw. Costs about 25 more fits per fold.
cross_validation_result cross_validate(const hardware_spec& hw, const std::vector<measured_sample>& samples, int folds,
                                       const fit_options& options = {}, bool bands = false);

// ------------------------------------------------------------------------------------------
// Leave one value out along an axis.
// ------------------------------------------------------------------------------------------
// For each distinct value v of the axis among the rows, every row whose value is v (blocks
// and ops alike) is predicted by a calibration fitted on the rows whose value is not v. A
// value below the smallest or above the largest of the others is an extrapolation; one
// between them an interpolation. So the errors say how the model does at a width, a context,
// a capacity... it never saw, and whether it was asked to reach past what it saw. (The axes,
// cv_axis, are the calibration record's: sim/cost/calibration_record.hpp.)

// The sample's value along `a`: its shape's field; capacity as measured (1 for dense rows);
// tokens = batch × the tokens per sequence the row processes (shape.tokens: k at a routed op).
double axis_value(const measured_sample& s, cv_axis a);

struct held_out_value {
  double value = 0;
  bool extrapolated = false;  // outside [min, max] of the other values
  double distance = 0;        // |log2(value / nearest other value)|: how far (0 when interpolated)
  std::string not_fitted;     // why no calibration could be fitted without it (rows unscored)
  std::vector<validation_point> blocks, ops;
};

struct value_cv_result {
  cv_axis axis = cv_axis::d_model;
  std::vector<held_out_value> values;         // ascending
  std::vector<validation_point> blocks, ops;  // all values' points together
};

// The p90 |error| of `points` of one kind (decode rows or forward blocks) by predicted time:
// terciles (upper predicted seconds, p90), none below `min_points` points.
std::vector<std::pair<double, double>> p90_terciles(const std::vector<validation_point>& points, bool decode,
                                                    std::size_t min_points = 30);

// The fewest held-out rows of a kind whose p90 summarize_holdout splits into terciles of
// predicted time: 30 a tercile. Below it the p90 of a tercile is one of its two largest
// errors, which one row of a slow spell moves: on the 2-core EPYC's twelve sessions of
// configs/grids/holdout-cpu.json (48 blocks each) the terciles' p90s ranged 2.7-11.8 % in no
// order by time from session to session, while the 576 rows together show no trend with time
// (5.5, 5.5, 5.2 %); the pooled p90 of the 48 covered the sessions' holdout-2 blocks 85.7 %
// of the time at 2.4x the median error, the terciles 82.8 % at 2.3x.
inline constexpr std::size_t k_holdout_tercile_rows = 90;

// Throws modsim::error(bad_input) when the rows hold fewer than two values of the axis.
// `bands` as for cross_validate.
value_cv_result cross_validate_by(const hardware_spec& hw, const std::vector<measured_sample>& samples, cv_axis axis,
                                  const fit_options& options = {}, bool bands = false);

// ------------------------------------------------------------------------------------------
// The band a prediction carries, from where it stands against the calibration's rows.
// ------------------------------------------------------------------------------------------
// Inside the calibration's measured range on every axis, the band is the p90 of the rows
// the calibration was checked on and never fitted (`modsim calibrate --holdout`, shapes
// between its measured values, predicted by the calibration itself) among rows predicted to
// take about as long (terciles of predicted time: short blocks, where launches and small
// kernels weigh, miss by more); without such rows, the p90 of the shape cross-validation
// (blocks of shapes the fit never saw, predicted by fits on the other four fifths: wider, as
// those fits saw less). Between measured values no farther from them than the held-out rows
// lay, the same; farther, at least the p90 of the inner values held out by a leave-one-value-
// out (the ends' where there are none). Outside the range along an axis: the fits that had to
// reach past their data along it (the lowest and the highest block-bearing value, each held
// out) missed by their p90 at the distance they lay out; a prediction nearer the range gets
// the band in proportion between the inside one (at the edge) and theirs, one farther out
// theirs stretched in proportion to its distance, in factors of two. The held-out values'
// p90s, like the inside band, are those of held-out blocks predicted to take about as long as
// the prediction (terciles, where 30 or more were held out): a fit without the lowest width or
// sequence misses the short blocks, whose few-row GEMMs it no longer sees, by several times
// what it misses the long ones by. An axis where no such extrapolation could be measured
// widens the band by the distance alone (as if one factor of two had been measured at no
// loss), and the band says it was not measured. Several axes: the widest.
// On GPU hardware (a CUDA calibration) a d_model, d_ff or n_heads at none of the measured
// values, inside or past the range, gets at least the leave-one-value-out p90 of that axis
// (the inner values' where some were held out, else the ends'), whatever the held-out rows'
// reach: tiles and waves make it a new shape. An axis with no such figure (one value carries
// blocks) takes the widest of the other two's, and the band says so.

// The calibration rows' range along every axis, the values that carry forward blocks and
// decode rows, and, where two or more values carry them, the errors of the values held out:
// the two ends (extrapolations) and up to three inner values (interpolations; none along
// tokens), each predicted by a fit without it, forward and decode rows apart.
std::vector<axis_coverage> estimate_coverage(const hardware_spec& hw, const std::vector<measured_sample>& samples,
                                             const fit_options& options = {});

struct error_band {
  double p90_pct = 0;  // |predicted − measured| / measured at p90, percent
  struct outside_axis {
    std::string axis;
    double value = 0, min = 0, max = 0;  // the prediction's value and the calibration's range
    double distance = 0;                 // log2 factor past the range
    double band_pct = 0;                 // the band this axis alone gives
    bool measured = true;                // an extrapolation along this axis was measured
    // On a GPU, a width, FFN size or head count at none of the measured values is a new
    // tile/wave shape, not a point on a smooth curve: the band is at least the p90 the leave-
    // one-value-out of that axis measured (`shape_lovo_axis`: the axis whose figure it is;
    // another GPU shape axis, the widest, where this one has no such figure). Empty elsewhere.
    std::string shape_lovo_axis;
    double shape_lovo_pct = 0;
  };
  std::vector<outside_axis> outside;  // empty: inside the measured range on every axis
  // Axes along which the prediction's value lies inside the range but at none of the values
  // the calibration measured blocks at (min, max: the measured values on either side;
  // distance: log2 factor to the nearer of them).
  std::vector<outside_axis> between;
  // The calibration's held-out rows of the prediction's kind its inside band came from (0:
  // from the shape cross-validation).
  int holdout_blocks = 0;
  // Ops the prediction timed with a stand-in's curve: each adds its share of the predicted
  // time × the p90 of the calibration's check of that stand-in (calibration::stand_in_check_for;
  // `checked_on`: the op the check measured) to the band; `stand_in_pct` is what they added.
  // One no check speaks for (`checked_on` empty) adds nothing, and the band does not cover it.
  struct stand_in {
    std::string op, as, checked_on;
    double share = 0, p90_pct = 0;
  };
  std::vector<stand_in> stand_ins;
  double stand_in_pct = 0;
  bool inside() const { return outside.empty(); }
  // "±6.4 % at p90 (inside the calibration's measured range)",
  // "±7.1 % at p90 (inside the measured range, between measured values: capacity 0.3 (0.125–0.5))" or
  // "±14 % at p90 (outside the measured range: d_model 8192 > 4096 (×2))".
  std::string text() const;
  // The same in a few words for a headline: "±6.4 % p90, inside the measured range" or
  // "±14 % p90, outside the measured range (d_model ×2)".
  std::string short_text() const;
};

// The values of a prediction or a row along the axes, each axis as many values as it has
// (a model's routed and dense layers, say).
using axis_values = std::vector<std::pair<cv_axis, double>>;
axis_values values_of(const measured_sample& s);

// The band of a prediction at `values` with calibration `c`, for a block (or a layer)
// predicted to take `predicted_s` (0: the p90 of all blocks); nullopt when `c` was not
// cross-validated (no band to give). At the measured values of every axis: the p90 of the
// held-out rows (calibration::holdout) of the prediction's kind predicted to take about as
// long, else the shape cross-validation's. Off them along an axis whose held-out values were
// predicted (coverage): between measured values, the held-out rows' band as far as they lay
// from measured values (holdout_summary::reach), else the inner values' p90 (interpolations;
// the ends' where the axis has no inner value; not along tokens, the product of batch and
// sequence, which speak for it); past the range, from the inside band at the edge to the
// ends' p90 (extrapolations) at the distance they lay out, in proportion, and stretched
// beyond. Past the range of an axis with no such measurement: the inside band times the
// distance in factors of two.
// `decode`: a decode step (or one of its layers), banded by the calibration's decode rows
// where it held some out.
// `stand_ins`: the prediction's ops timed with a stand-in's curve, which widen the band by
// their share × the p90 of the check that speaks for each (error_band::stand_ins).
std::optional<error_band> band_for(const calibration& c, const axis_values& values, double predicted_s,
                                   bool decode = false, const std::vector<stand_in_use>& stand_ins = {});

// The holdout summary (calibration::holdout) of `points`: the held-out rows of `files`,
// predicted by calibration `c` (validate_blocks), whose coverage gives the measured values
// each kind's reach is taken from.
holdout_summary summarize_holdout(const calibration& c, const std::vector<validation_point>& points,
                                  std::vector<std::string> files);

// Sets `p.band_pct` to the band `c` gives the point (band_for at its row's values, predicted
// time and kind); leaves it unset where `c` has no band to give.
void set_band(validation_point& p, const calibration& c);

}  // namespace modsim::sim
