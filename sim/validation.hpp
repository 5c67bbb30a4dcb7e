#pragma once
// Validation of a calibrated cost model: measured samples (blocks, ops) against their
// prediction, the statistics of the percentage errors, cross-validation grouped by shape, and
// leave-one-value-out along one axis (how the model does outside the values it saw).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/calibration_sample.hpp"
#include "sim/cost.hpp"
#include "sim/efficiency_fit.hpp"
#include "sim/spec.hpp"

namespace modsim::sim {

struct validation_point {
  calibration_sample sample;
  double predicted_s = 0;
  double ops_s = 0;       // Σ predicted op times (without launch overhead)
  double overhead_s = 0;  // kernels × launch_s
  double error_pct = 0;   // 100 · (predicted − measured) / measured
};

struct validation_summary {
  int points = 0;
  double median_abs_pct_error = 0;
  double p90_abs_pct_error = 0;  // linear interpolation between closest ranks, q·(n−1)
  double max_abs_pct_error = 0;
  double mean_pct_error = 0;  // signed: > 0 = the model predicts too slow on average
};

// A sample against its prediction (predict_sample: a block, or an op as the profiler measured it).
validation_point validate_sample(const calibration_sample& s, const cost_model& model);
// One point per block or decode sample (block_dense, block_mod, layer_mode, decode_*); other
// samples are ignored.
std::vector<validation_point> validate_blocks(const std::vector<calibration_sample>& samples, const cost_model& model);
// Statistics of the points' absolute percentage errors (zeros when there are none).
validation_summary summarize(const std::vector<validation_point>& points);
// The same from plain signed percentage errors.
validation_summary summarize_errors(const std::vector<double>& error_pct);

// ------------------------------------------------------------------------------------------
// Cross-validation grouped by shape.
// ------------------------------------------------------------------------------------------
// The rows are grouped by shape (batch, seq_len, d_model, n_heads, n_kv_heads, d_ff, mlp: a
// block and every op row measured at its shape, whatever the capacity or variant, share a
// group); the sorted groups are dealt round-robin into K folds; each fold's rows are
// predicted by a calibration fitted on the other folds only. So a block is never predicted
// by a fit that saw it or any op of its shape.

// The group of a sample ("B8 S2048 d2048 h16 kv16 ff8192 gelu").
std::string shape_group_of(const calibration_sample& s);

struct cross_validation_result {
  int folds = 0;
  int groups = 0;
  std::vector<validation_point> blocks;  // every block row, predicted out of fold
  std::vector<validation_point> ops;     // every single-op row, predicted out of fold
  cross_validation_summary summary() const;
};

// Throws modsim::error(bad_input) when folds < 2 or there are fewer shape groups than folds,
// and whatever fit_calibration throws for a fold.
cross_validation_result cross_validate(const hardware_spec& hw, const std::vector<calibration_sample>& samples,
                                       int folds, const fit_options& options = {});

// ------------------------------------------------------------------------------------------
// Leave one value out along an axis.
// ------------------------------------------------------------------------------------------
// For each distinct value v of the axis among the rows, every row whose value is v (blocks
// and ops alike) is predicted by a calibration fitted on the rows whose value is not v. A
// value below the smallest or above the largest of the others is an extrapolation; one
// between them an interpolation. So the errors say how the model does at a width, a context,
// a capacity... it never saw, and whether it was asked to reach past what it saw.

enum class cv_axis { d_model, d_ff, n_heads, seq_len, batch, capacity, tokens };
std::string_view to_string(cv_axis a);
// Accepts the names to_string gives; nullopt otherwise.
std::optional<cv_axis> find_cv_axis(std::string_view name);
// Every axis's name, for messages ("d_model, d_ff, ...").
std::string cv_axis_names();
// The sample's value along `a`: its shape's field; capacity as measured (1 for dense rows);
// tokens = batch × the tokens per sequence the row processes (shape.tokens: k at a routed op).
double axis_value(const calibration_sample& s, cv_axis a);

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

// Throws modsim::error(bad_input) when the rows hold fewer than two values of the axis.
value_cv_result cross_validate_by(const hardware_spec& hw, const std::vector<calibration_sample>& samples, cv_axis axis,
                                  const fit_options& options = {});

}  // namespace modsim::sim
