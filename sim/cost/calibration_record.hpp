#pragma once
// The calibration record: what `modsim calibrate` writes into a hardware file's `calibration`
// block (the fitted curves, the GPU kernel-sequence model, the decode fits, launch and in-layer
// costs, the sources, the cross-validation, hold-out and coverage summaries that set the error
// bands, the machine speed the rows were held to) and its JSON file format. The cost model
// (sim/cost/cost.hpp) prices ops with it; calibrate (sim/cost/calibrate.hpp) fills it; validation
// (sim/cost/validation.hpp) scores it.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/op_table.hpp"
#include "core/types.hpp"
#include "sim/cost/efficiency_curve.hpp"
#include "sim/cost/kernel_model.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim {

// The axes along which a calibration's rows are held out and its coverage is recorded.
enum class cv_axis { d_model, d_ff, n_heads, seq_len, batch, capacity, tokens };
// Every axis, in that order.
inline constexpr cv_axis k_cv_axes[] = {cv_axis::d_model, cv_axis::d_ff,     cv_axis::n_heads, cv_axis::seq_len,
                                        cv_axis::batch,   cv_axis::capacity, cv_axis::tokens};
std::string_view to_string(cv_axis a);
// Accepts the names to_string gives; nullopt otherwise.
std::optional<cv_axis> find_cv_axis(std::string_view name);
// Every axis's name, for messages ("d_model, d_ff, ...").
std::string cv_axis_names();

// A named measurements file that calibration read.
struct calibration_source {
  std::string file;
  int rows = 0;       // data rows in the file
  int used_rows = 0;  // rows the fit used (single ops of the calibrated dtypes; blocks for launch)
};

// How well a calibration predicts what it did not see: K-fold cross-validation grouped by
// shape (sim/cost/calibrate.hpp cross_validate), recorded by `modsim calibrate` so that every
// prediction made with the calibration can show its expected error band.
struct cross_validation_summary {
  int folds = 0;
  int blocks = 0;  // block rows predicted
  double median_abs_pct_error = 0;
  double p90_abs_pct_error = 0;
  double max_abs_pct_error = 0;
  int ops = 0;  // op rows predicted
  double op_median_abs_pct_error = 0;
  double op_p90_abs_pct_error = 0;
  // p90 |error| by predicted time: the blocks sorted by predicted time and split into
  // terciles (with 30 blocks or more), each (the largest predicted seconds in it, its p90).
  // Short blocks are harder to predict (launches and small kernels dominate). JSON "by_time"
  // [[upper_s, p90], ...]; absent in summaries written before it. The forward blocks' terciles
  // and, apart ("decode_by_time"), the decode rows' (decode_dense, decode_mod, decode_step):
  // the two are predicted by different fits and miss differently. Summaries written before the
  // split hold all rows in by_time.
  std::vector<std::pair<double, double>> p90_by_time;
  std::vector<std::pair<double, double>> decode_p90_by_time;
  // The p90 of the tercile `predicted_s` falls in (the first below it, the last above it) of
  // the decode rows' terciles for a decode prediction where there are some, else of by_time,
  // else the p90 of all blocks.
  double p90_at(double predicted_s, bool decode = false) const;
};

// How the calibration predicts block rows measured to check it and kept out of its fit
// (`modsim calibrate --holdout`; JSON key "holdout"): shapes chosen between the calibration's
// measured values, predicted by the calibration itself (a cross-validation fold fits on a
// fifth less of the data and misses by more), so that their errors are what a prediction
// between measured values misses by. band_for takes its p90, by predicted time, as the band
// inside the measured range and between measured values as far from them as the held-out
// rows lay. Forward blocks and decode rows apart, as in cross_validation_summary.
struct holdout_summary {
  std::vector<std::string> files;  // the measurements files, as given
  int blocks = 0;                  // forward blocks predicted
  double median_abs_pct_error = 0, p90_abs_pct_error = 0, max_abs_pct_error = 0;
  int decode_rows = 0;  // decode rows predicted (JSON "decode_blocks", "decode_median_abs_pct_error", ...)
  double decode_median_abs_pct_error = 0, decode_p90_abs_pct_error = 0, decode_max_abs_pct_error = 0;
  // p90 |error| by predicted time, terciles of 30 rows or more each (90 held out of the kind,
  // k_holdout_tercile_rows; fewer: empty, and p90_at takes the p90 of all of them); JSON
  // "by_time", "decode_by_time".
  std::vector<std::pair<double, double>> p90_by_time, decode_p90_by_time;
  // Per axis (cv_axis name): the farthest the held-out rows lay from the calibration's
  // measured values of their kind, inside its range, log2 (JSON objects "reach",
  // "decode_reach": {"d_model": 0.585, ...}).
  std::vector<std::pair<std::string, double>> reach, decode_reach;

  int count(bool decode) const { return decode ? decode_rows : blocks; }
  // The p90 of the tercile `predicted_s` falls in (the first below it, the last above it), or
  // of all rows of the kind where there are no terciles or no time (predicted_s <= 0).
  double p90_at(double predicted_s, bool decode) const;
  // reach (decode_reach) along `axis`; 0 where the held-out rows sat at measured values.
  double reach_along(std::string_view axis, bool decode) const;
};

// Where a calibration's rows lie along one axis (sim/cost/validation.hpp cv_axis), and how the
// model did past the ends of what it saw: leave-one-value-out along the axis
// (cross_validate_by), the blocks of the values below or above all the others. Recorded by
// `modsim calibrate` (JSON key "coverage"), so that a prediction outside the range gets the
// band of that situation (sim/cost/validation.hpp band_for).
struct axis_coverage {
  std::string axis;         // cv_axis name: d_model, d_ff, n_heads, seq_len, batch, capacity, tokens
  double min = 0, max = 0;  // the calibration rows' values along it
  // Held-out block rows at the lowest or highest value that carries blocks, fitted on rows
  // that still hold blocks at two values or more (0: no extrapolation measured along this
  // axis: one or two values carry blocks; a fit left with one value cannot extrapolate as a
  // calibration that measured two does), and the p90 of their |error|.
  int blocks = 0;
  double p90_abs_pct_error = 0;
  // The same for the held-out decode rows apart (then blocks and p90_abs_pct_error count the
  // forward blocks only; JSON "decode_blocks", "decode_p90_abs_pct_error", absent in files
  // written before the split, whose figures hold both).
  int decode_rows = 0;
  double decode_p90_abs_pct_error = 0;
  // Interpolation: the held-out block rows of every value between the lowest and the highest
  // that carry blocks (each predicted by a fit without it), forward and decode apart (JSON
  // "inner_blocks", "inner_p90_abs_pct_error", "decode_inner_blocks",
  // "decode_inner_p90_abs_pct_error"; 0 where the axis has fewer than three such values).
  int inner_blocks = 0;
  double inner_p90_abs_pct_error = 0;
  int decode_inner_blocks = 0;
  double decode_inner_p90_abs_pct_error = 0;
  double max_distance = 0;  // log2 of how far past its neighbour the farthest held-out value lay
  // The forward blocks' ends and inner values apart by predicted time: terciles of 30 held-out
  // blocks or more, each (the largest predicted seconds in it, its p90), as
  // cross_validation_summary's by_time (JSON "by_time", "inner_by_time"; absent with fewer
  // blocks and in calibrations written before them: the p90 of all then). A fit without the
  // lowest value misses its short blocks, whose few-row GEMMs it no longer sees, by far more
  // than its long ones; a prediction takes the figure of blocks about as long as it.
  std::vector<std::pair<double, double>> p90_by_time, inner_p90_by_time;
  // The ends' (inner values') p90 for a forward block predicted to take `predicted_s`: its
  // tercile's, or of all where there are no terciles or no time (predicted_s <= 0).
  double ends_p90_at(double predicted_s) const;
  double inner_p90_at(double predicted_s) const;
  // The values that carry forward block rows, ascending, and apart those that carry decode
  // rows: a prediction at none of its kind's values sits between measured values (JSON keys
  // "values" and "decode_values"; "values" held both kinds, pooled, in calibrations written
  // before "decode_values" (decode_values_recorded false: both kinds then use it), and is
  // absent from older ones).
  std::vector<double> values;
  std::vector<double> decode_values;
  bool decode_values_recorded = false;
  // The measured values a prediction of this kind sits at or between: its kind's, or the
  // other kind's where its own has none (a calibration without decode rows bands decode
  // predictions by the forward blocks, as band_for does with the held-out figures).
  const std::vector<double>& values_of_kind(bool decode) const {
    if (!decode_values_recorded) return values;
    const std::vector<double>& own = decode ? decode_values : values;
    return own.empty() ? (decode ? values : decode_values) : own;
  }
};

// The decode step's own fit (sim/cost/decode_fit.hpp), fitted on decode rows (decode_dense,
// decode_mod, decode_step) of one dtype: a decode kernel takes
//   w(rows) · bytes (projections, MLP, norms, predictor, LM head: weights and activations,
//   w piecewise linear in log2 of the rows the kernel computes, between `weight_log2_rows`
//   knots, clamped beyond; a weight kernel's FLOPs grow with its rows, so w carries them) or
//   kv_s_per_byte · bytes + s_per_matmul_flop · matmul FLOPs + s_per_other_flop · other FLOPs
//   (attention: the KV cache, work growing with the keys),
// plus kernel_s per kernel and sync_s per routed-count read-back; in a whole model's step
// (its layers back to back, then the LM head) every kernel also pays model_s_per_byte · bytes:
// what a step streaming the whole model costs beyond its layers timed alone, of either sign
// (negative: the step streams faster than its layers timed alone), never below minus the
// smallest weight rate.
// How well a stand-in's curve times an op the calibration did measure: the op's own rows
// predicted with the curve of its stand-in (stand_in_of, or another op the same stand-in
// stands in for), as a prediction of an op never measured is timed. Recorded by
// `modsim calibrate` (JSON "stand_in_checks"); a prediction that times ops with a stand-in
// widens its band by each such op's share of the time × the p90 here (band_for).
struct stand_in_check {
  modsim::op op = modsim::op::router;  // the measured op
  modsim::op as = modsim::op::router;  // the stand-in whose curve predicted its rows
  dtype type = dtype::fp32;
  int rows = 0;
  double median_abs_pct_error = 0;
  double p90_abs_pct_error = 0;
};

// The backward pass fitted on measured training rows (block_dense_train, block_mod_train: one
// layer's forward + backward timed whole; JSON key "backward", absent in calibrations without
// such rows, whose backward stays the rule). No row times a backward op alone, so the fit is
// on the rows' totals: each row's measured time minus its calibrated forward, recomputation
// and launches (the same calibration's forward curves) ≈ Σ over its backward ops of
// factor(class) × the rule's time (the forward's calibrated efficiency applied to the
// backward's FLOPs and bytes, cost_model::backward_time_of), relative least squares, factors
// ≥ 0, a weak pull (k_backward_pull: one extra equation k·(factor − 1) = 0 per class beside
// the rows' relative residuals) towards 1 so that a class the rows hardly exercise keeps the
// rule. Three parameters, one per class. At 0.1 the pull bent a memory-bound class carrying a
// few percent of 16 synthetic rows' time from its true 0.7 to 0.89 (and the GEMMs' 1.3 to 1.19
// with it); at 0.02 both stay within 0.02 of the truth (tests/sim/test_calibrate.cpp).
enum class backward_class { gemm, attention, memory };
inline constexpr backward_class k_backward_classes[] = {backward_class::gemm, backward_class::attention,
                                                        backward_class::memory};
std::string_view to_string(backward_class c);
inline constexpr double k_backward_pull = 0.02;

struct backward_fit {
  dtype type = dtype::fp32;
  double factor[3] = {1, 1, 1};  // by backward_class
  int rows = 0;                  // training rows fitted
  double rms_rel_error = 0;      // of those rows' predicted totals, in sample
  // The factors refitted without each shape group (up to 5 folds by shape; the forward curves
  // as fitted): its training rows predicted out of fold (JSON "cv": {"folds", "rows",
  // "median_abs_pct_error", "p90_abs_pct_error"}; folds 0: fewer than two shapes).
  int cv_folds = 0, cv_rows = 0;
  double cv_median_abs_pct_error = 0, cv_p90_abs_pct_error = 0;
  // Training rows of `modsim calibrate --holdout` predicted by the calibration (JSON
  // "holdout": {"rows", "median_abs_pct_error", "p90_abs_pct_error"}; rows 0: none).
  int holdout_rows = 0;
  double holdout_median_abs_pct_error = 0, holdout_p90_abs_pct_error = 0;
  // The keys of the rows fitted: validation does not score them.
  std::vector<std::string> keys;
  double factor_of(backward_class c) const { return factor[static_cast<int>(c)]; }
};

// The optimizer fit: the measured AdamW steps (op adamw, one layer's parameters each) fitted as
// time = bytes × s_per_byte, bytes from the FLOP model (ops::adamw: 28 a parameter), one
// parameter by least squares on the seconds (s_per_byte = Σ bᵢtᵢ / Σ bᵢ²: the largest rows,
// nearest a model's step and past the caches, weigh most). An optimizer step streams its state
// once, so one rate prices a model's step (cost_model::optimizer_time_of) from its bytes, in any
// dtype (28 bytes a parameter in each). JSON key "optimizer"
// {"dtype", "source", "bytes_per_s", "rows", "rms_rel_error", "cv", "holdout", "keys"}; absent without adamw rows (and
// in calibrations written before it).
struct optimizer_fit {
  dtype type = dtype::fp32;
  double s_per_byte = 0;     // 1 / the fitted streaming rate
  int rows = 0;              // adamw rows fitted
  double rms_rel_error = 0;  // of those rows, in sample
  // Each shape's rows predicted by the rate fitted on the other shapes' (JSON "cv": {"folds",
  // "rows", "median_abs_pct_error", "p90_abs_pct_error"}; folds 0: fewer than two shapes).
  int cv_folds = 0, cv_rows = 0;
  double cv_median_abs_pct_error = 0, cv_p90_abs_pct_error = 0;
  // adamw rows of `modsim calibrate --holdout` predicted by the fit (rows 0: none).
  int holdout_rows = 0;
  double holdout_median_abs_pct_error = 0, holdout_p90_abs_pct_error = 0;
  // The keys of the rows fitted: validation does not score them.
  std::vector<std::string> keys;
  double bytes_per_s() const { return s_per_byte > 0 ? 1.0 / s_per_byte : 0.0; }
};

struct decode_fit {
  dtype type = dtype::fp32;
  std::vector<double> weight_log2_rows;   // knots, ascending
  std::vector<double> weight_s_per_byte;  // w at each knot
  double kv_s_per_byte = 0;
  double s_per_matmul_flop = 0;
  double s_per_other_flop = 0;
  double kernel_s = 0;
  double sync_s = 0;
  double model_s_per_byte = 0;
  int rows = 0;
  double rms_rel_error = 0;
};

// The exponent on the anchor ratio when rows are held to one machine speed
// (sim/cost/machine_speed.hpp, which says how it was measured).
inline constexpr double k_anchor_elasticity = 0.7;
// Rows measured while the machine ran more than this many times slower than at the fastest
// quarter of the rows (by anchor) are left out of a calibration's fit (sim/cost/machine_speed.hpp
// says why and how it was chosen).
inline constexpr double k_slow_limit = 1.35;

// The `calibration` block of a hardware file.
struct calibration {
  int format = 1;                       // 1: per-op curves (CPU); 2: adds the GPU kernel-sequence model
  std::string date;                     // ISO 8601, UTC
  std::string device;                   // the device column of the rows
  std::optional<backend_kind> backend;  // the rows' backend; empty: they named none
  std::vector<calibration_source> sources;
  std::vector<efficiency_curve> curves;
  double launch_s = 0;  // per-kernel launch overhead
  // Seconds per byte a calibrated op pays inside a layer for the inputs and weights that a
  // loop of its own kept in cache (1/this = the effective bandwidth of that refetch); fitted
  // on blocks (sim/cost/calibrate.hpp), 0 without.
  double in_layer_s_per_byte = 0.0;
  std::string launch_source;  // how launch_s was obtained (in words)
  int launch_blocks = 0;      // block rows launch_s was fitted on
  // Point keys (profiler point_key) of the block rows calibration used: validation must not
  // score them.
  std::vector<std::string> block_keys;
  // The hardware numbers the roofline had when the curves were fitted; a hardware file whose
  // peaks differ from these makes the curves meaningless and is rejected.
  double peak_matmul_fp32 = 0, peak_matmul_bf16 = 0, peak_matmul_fp16 = 0;
  double peak_vector_fp32 = 0, peak_vector_bf16 = 0, peak_vector_fp16 = 0;
  double memory_bandwidth_bytes_s = 0;

  // The GPU kernel-sequence model (sim/cost/kernel_model.hpp), fitted on rows of `kernel_dtypes`;
  // absent for a CPU calibration (which uses the curves).
  std::optional<kernel_params> kernels;
  std::vector<dtype> kernel_dtypes;
  // The attention implementation the calibrated attention and block rows ran (their
  // `attention` column); the kernel model prices attention as it. JSON key "attention",
  // absent in calibrations written before it: unfused.
  attention_impl attention = attention_impl::unfused;
  std::optional<cross_validation_summary> cross_validation;
  std::vector<axis_coverage> coverage;     // empty in calibrations written before it
  std::optional<holdout_summary> holdout;  // absent: calibrated without --holdout
  // The machine speed the fit's rows (and the held-out rows) were held to
  // (sim/cost/machine_speed.hpp): the median anchor_s of the rows, and how many carried one (JSON
  // "anchor": {"reference_s", "rows", "elasticity"}). 0: fitted as measured (no anchors, or
  // --as-measured); validate holds rows with anchors to reference_s, with the same elasticity,
  // before scoring them.
  double anchor_reference_s = 0;
  int anchor_rows = 0;
  double anchor_elasticity = k_anchor_elasticity;
  // The rows left out of the fit as measured in a slow spell (sim::leave_out_slow_rows): the
  // limit on the anchor ratio to the fastest quarter, and how many (JSON "anchor": {...,
  // "slow_limit", "slow_left_out"}; absent: none left out, or a calibration written before).
  double anchor_slow_limit = 0;
  int anchor_slow_left_out = 0;
  // The decode fits (JSON key "decode"), one per dtype, and the keys of the decode rows they
  // used (validation must not score them); absent in calibrations written before them.
  std::vector<decode_fit> decode;
  std::vector<std::string> decode_keys;
  // The stand-in checks (above), one per measured op with a measured stand-in; empty in
  // calibrations written before them, and for a GPU calibration (its kernel model times
  // every op from its kernels).
  std::vector<stand_in_check> stand_in_checks;
  // The backward fit (above); absent without training rows (and in calibrations written before).
  std::optional<backward_fit> backward;
  // The optimizer fit (above); absent without adamw rows (and in calibrations written before).
  std::optional<optimizer_fit> optimizer;

  const efficiency_curve* curve(modsim::op op, dtype t) const;
  // The check that speaks for `op` timed as `as`: its own (op measured, the calibration timed
  // it with `as` to check), else the widest check of another op `as` stood in for (the same
  // curve on another op of its kind); nullptr when no row checked `as` as a stand-in.
  const stand_in_check* stand_in_check_for(modsim::op op, modsim::op as) const;
  const decode_fit* decode_for(dtype t) const;
  // w(rows) of a decode fit (seconds per weight byte at `rows` rows).
  static double weight_rate(const decode_fit& d, double rows);
  bool kernel_model_fitted_on(dtype t) const;
};

// The error figures of a summary, declared once (JSON key, member; percent): the calibration
// file reads and writes them from these lists, and `modsim predict` shows them from the same.
template <class S>
struct error_field {
  const char* key;
  double S::*value;
};
inline constexpr error_field<cross_validation_summary> k_cv_block_errors[] = {
    {"median_abs_pct_error", &cross_validation_summary::median_abs_pct_error},
    {"p90_abs_pct_error", &cross_validation_summary::p90_abs_pct_error},
    {"max_abs_pct_error", &cross_validation_summary::max_abs_pct_error}};
inline constexpr error_field<cross_validation_summary> k_cv_op_errors[] = {
    {"op_median_abs_pct_error", &cross_validation_summary::op_median_abs_pct_error},
    {"op_p90_abs_pct_error", &cross_validation_summary::op_p90_abs_pct_error}};
inline constexpr error_field<holdout_summary> k_holdout_block_errors[] = {
    {"median_abs_pct_error", &holdout_summary::median_abs_pct_error},
    {"p90_abs_pct_error", &holdout_summary::p90_abs_pct_error},
    {"max_abs_pct_error", &holdout_summary::max_abs_pct_error}};
inline constexpr error_field<holdout_summary> k_holdout_decode_errors[] = {
    {"decode_median_abs_pct_error", &holdout_summary::decode_median_abs_pct_error},
    {"decode_p90_abs_pct_error", &holdout_summary::decode_p90_abs_pct_error},
    {"decode_max_abs_pct_error", &holdout_summary::decode_max_abs_pct_error}};

// Parses a calibration block (JSON text) strictly; throws modsim::error(bad_input)
// "FILE: calibration.KEY: reason".
calibration parse_calibration(std::string_view json_text, const std::string& file);
// The block as JSON text (what parse_calibration reads).
std::string calibration_to_json(const calibration& c);

}  // namespace modsim::sim
