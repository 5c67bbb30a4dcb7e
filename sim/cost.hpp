#pragma once
// The cost model: the time one op takes on a piece of hardware. A block or a model is
// predicted from its ops (sim/predict.hpp), so any configuration the FLOP model can express
// (another capacity, schedule, d_model, MoDE variant) can be predicted, measured or not.
//
// ---------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------
// Roofline (uncalibrated, the datasheet; also the base of the calibrated model):
//   roofline_s = max(matmul_flops / peak_matmul(dtype) + other_flops / peak_vector(dtype),
//                    bytes / memory_bandwidth)
// with FLOPs and bytes from sim/flops (cost_of / layer_costs), nothing else. On a GPU
// (hardware kind "gpu", sm_count > 0) the compute term of a GEMM is multiplied by its wave
// quantisation q = ceil(tiles / sm_count) · sm_count / tiles ≥ 1 with 128×128 output tiles
// (a GEMM of 133 tiles on 132 SMs runs two waves), or, for a hardware file with
// "gemm_tiles": "chosen", with the tile and split-K a cuBLAS-like heuristic picks for its shape
// (sim/gemm_tiles.hpp: q = the chosen tiling's time over that of a perfectly filled machine);
// a calibration keeps the tiling it was fitted with. See gemm_waves().
//
// Calibrated (the hardware file's `calibration` block, written by `modsim calibrate`), per
// (op, dtype):
//   time_s = fixed_s + q · roofline_s · g(log10(roofline_s))
// where
//   - fixed_s ≥ 0 is a per-call cost that does not scale with the work (thread-pool dispatch
//     on a CPU, a kernel's prologue/epilogue and tail on a GPU), learnt as an intercept;
//   - g = 1 / efficiency is piecewise linear over x = log10(roofline_s) between knots and
//     constant beyond the first and last knot (clamped: a shape larger than any measured one
//     runs at the largest measured shape's efficiency).
// Why this form: (1) the "work" variable is the op's own roofline time, which is its FLOPs
// for compute-bound ops and its bytes for memory-bound ones on one common scale, so one
// curve per op covers every d_model, seq_len, batch and capacity; (2) efficiency rises with
// the size of the problem (GEMM blocking, cache reuse, thread start-up amortised) smoothly in
// log(work), which a few linear pieces follow without the oscillation of a polynomial;
// (3) time is linear in (fixed_s, g at the knots), so the fit is a small non-negative linear
// least-squares problem on relative errors (sim/calibrate.hpp) with a unique solution;
// (4) a fixed per-call cost is what dominates tiny ops (topk, router at small S), where a
// pure efficiency curve would need an efficiency that falls as 1/work.
// Ops that were never measured use the curve of a stand-in op with the same structure
// (mlp_norm ← attn_norm, mlp_gate ← mlp_up, …; see stand_in_of()); with none, the datasheet
// roofline, and op_time::calibrated says so.
//
// The curves are fitted on ops timed in a loop of their own, which keeps the op's inputs and
// weights in cache; inside a layer the previous ops have evicted them. So a calibrated op
// also pays bytes · in_layer_s_per_byte (its bytes fetched again at an effective bandwidth
// that calibration fits on measured blocks, together with launch_s):
//   time_s = fixed_s + q · roofline_s · g(log10 roofline_s) + bytes · in_layer_s_per_byte
//
// Per-kernel launch overhead is separate (launch_s): the simulator places it on its host and
// device timelines and sim/predict adds kernels × launch_s as overhead_s. Calibrated, it is
// fitted on measured blocks: block − Σ ops ≈ kernels · launch_s + bytes · in_layer_s_per_byte.
//
// Times are seconds of device execution.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/flops.hpp"
#include "sim/kernel_model.hpp"
#include "sim/spec.hpp"

namespace modsim::sim {

// The rows a CPU GEMM kernel computes together (OpenBLAS's register tile along the rows of
// the activations; efficiency_curve::leftover_rows).
inline constexpr int k_row_group = 4;

// One learnt efficiency curve (see above).
struct efficiency_curve {
  modsim::op op = modsim::op::router;  // a kernel or model op (op_names())
  dtype type = dtype::fp32;
  double fixed_s = 0;                  // seconds per call, >= 0
  std::vector<double> log10_work;      // knots: log10 of the roofline seconds, ascending
  std::vector<double> inv_efficiency;  // g at each knot: time per roofline second, >= 0
  int samples = 0;                     // measured rows it was fitted on
  double rms_rel_error = 0;            // of the fit on those rows (0.05 = 5%)
  // A GEMM's speed at equal work depends on its row count M (batch × tokens) where a CPU
  // library takes other kernels for a few dozen rows. At each M below 128 rows measured 3
  // times or more (two such M at least), the median of measured / curve; 1 at 128 rows and
  // beyond; interpolated in log2 M and clamped at the ends: it multiplies the curve
  // (sim/efficiency_fit.hpp fit_curve_with_rows; JSON "rows": [{"log2_rows", "factor"}],
  // absent: 1).
  std::vector<double> log2_rows;
  std::vector<double> rows_factor;
  // The CPU library computes a GEMM's rows in groups of k_row_group and takes slower edge
  // kernels for the 1-3 rows left over: a GEMM of M rows costs as much as M + leftover_rows[r - 1]
  // rows would at the curve's speed, r = M mod k_row_group (on the AMD EPYC's OpenBLAS 5.7,
  // 3.4 and 12.2 rows: up to 8 % at 135 rows). Fitted against neighbouring row counts of the same
  // GEMM (sim/efficiency_fit.hpp fit_leftover_rows); JSON "leftover_rows": [r1, r2, r3], absent
  // (empty): none.
  std::vector<double> leftover_rows;

  // g(log10(roofline_s)), clamped at the end knots.
  double inv_efficiency_at(double roofline_s) const;
  // The row-count factor at `rows` (1 without one, or for rows <= 0).
  double rows_factor_at(double rows) const;
  // 1 + leftover_rows[r - 1] / rows for r = rows mod k_row_group > 0; 1 without leftover
  // rows, at a multiple of the group, or for rows < 1.
  double leftover_factor_at(double rows) const;
  // (fixed_s + quantised_roofline_s · g(log10(roofline_s))) · rows_factor_at(rows) · leftover_factor_at(rows).
  double time_s(double roofline_s, double quantised_roofline_s, double rows = 0) const;
};

// A named measurements file that calibration read.
struct calibration_source {
  std::string file;
  int rows = 0;       // data rows in the file
  int used_rows = 0;  // rows the fit used (single ops of the calibrated dtypes; blocks for launch)
};

// How well a calibration predicts what it did not see: K-fold cross-validation grouped by
// shape (sim/calibrate.hpp cross_validate), recorded by `modsim calibrate` so that every
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
  int decode_blocks = 0;  // decode rows predicted (JSON "decode_blocks", "decode_median_abs_pct_error", ...)
  double decode_median_abs_pct_error = 0, decode_p90_abs_pct_error = 0, decode_max_abs_pct_error = 0;
  // p90 |error| by predicted time, terciles of 30 rows or more (as cross_validation_summary's
  // by_time; JSON "by_time", "decode_by_time").
  std::vector<std::pair<double, double>> p90_by_time, decode_p90_by_time;
  // Per axis (cv_axis name): the farthest the held-out rows lay from the calibration's
  // measured values of their kind, inside its range, log2 (JSON objects "reach",
  // "decode_reach": {"d_model": 0.585, ...}).
  std::vector<std::pair<std::string, double>> reach, decode_reach;

  int count(bool decode) const { return decode ? decode_blocks : blocks; }
  // The p90 of the tercile `predicted_s` falls in (the first below it, the last above it), or
  // of all rows of the kind where there are no terciles or no time (predicted_s <= 0).
  double p90_at(double predicted_s, bool decode) const;
  // reach (decode_reach) along `axis`; 0 where the held-out rows sat at measured values.
  double reach_along(std::string_view axis, bool decode) const;
};

// Where a calibration's rows lie along one axis (sim/validation.hpp cv_axis), and how the
// model did past the ends of what it saw: leave-one-value-out along the axis
// (cross_validate_by), the blocks of the values below or above all the others. Recorded by
// `modsim calibrate` (JSON key "coverage"), so that a prediction outside the range gets the
// band of that situation (sim/validation.hpp band_for).
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
  int decode_blocks = 0;
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

// The decode step's own fit (sim/decode_fit.hpp), fitted on decode rows (decode_dense,
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

// An op of a prediction timed with a stand-in's curve (op_time::calibrated_as names another
// op), and its share of the predicted time (0–1).
struct stand_in_use {
  modsim::op op = modsim::op::router;
  modsim::op as = modsim::op::router;
  double share = 0;
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
// (sim/machine_speed.hpp, which says how it was measured).
inline constexpr double k_anchor_elasticity = 0.7;
// Rows measured while the machine ran more than this many times slower than at the fastest
// quarter of the rows (by anchor) are left out of a calibration's fit (sim/machine_speed.hpp
// says why and how it was chosen).
inline constexpr double k_slow_limit = 1.35;

// The `calibration` block of a hardware file.
struct calibration {
  int format = 1;       // 1: per-op curves (CPU); 2: adds the GPU kernel-sequence model
  std::string date;     // ISO 8601, UTC
  std::string device;   // the device column of the rows
  std::string backend;  // cpu | cuda
  std::vector<calibration_source> sources;
  std::vector<efficiency_curve> curves;
  double launch_s = 0;  // per-kernel launch overhead
  // Seconds per byte a calibrated op pays inside a layer for the inputs and weights that a
  // loop of its own kept in cache (1/this = the effective bandwidth of that refetch); fitted
  // on blocks (sim/calibrate.hpp), 0 without.
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

  // The GPU kernel-sequence model (sim/kernel_model.hpp), fitted on rows of `kernel_dtypes`;
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
  // (sim/machine_speed.hpp): the median anchor_s of the rows, and how many carried one (JSON
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

// Parses a calibration block (JSON text) strictly; throws modsim::error(bad_input)
// "FILE: calibration.KEY: reason".
calibration parse_calibration(std::string_view json_text, const std::string& file);
// The block as JSON text (what parse_calibration reads).
std::string calibration_to_json(const calibration& c);

// The op whose curve stands in for `op` when `op` itself was not measured (mlp_norm →
// attn_norm, mlp_gate → mlp_up, predictor/expert_router → router, experts/lm_head → mlp_up);
// empty when there is none.
std::optional<modsim::op> stand_in_of(modsim::op op);

// Kernel launches an op takes (router 1, topk 2 on a GPU (select + sort of the indices) and 1
// on a CPU, predictor 2, expert_router 2, lm_head 2 (final norm + projection), others 1).
int kernels_of(modsim::op op, const hardware_spec& hw);

// Wave quantisation q of op `op` at shape `s` with dtype `t` on `hw` (1 for non-GEMM ops and
// CPUs): fixed128, ceil(tiles / SMs) · SMs / tiles ≥ 1 of 128×128 tiles; chosen, the q of
// choose_gemm_tile (sim/gemm_tiles.hpp) for the op's GEMM (op_gemm).
double gemm_waves(modsim::op op, const op_shape& s, const hardware_spec& hw, dtype t, gemm_tiling mode);
double gemm_waves(modsim::op op, const expected_op_shape& s, const hardware_spec& hw, dtype t, gemm_tiling mode);

struct op_time {
  modsim::op op = modsim::op::router;
  double time_s = 0;      // predicted device time (launch overhead excluded)
  double roofline_s = 0;  // the datasheet roofline time of the same op (no wave quantisation)
  double compute_s = 0;   // roofline compute term (matmul/peak + other/peak)
  double memory_s = 0;    // roofline memory term (bytes/bandwidth)
  double waves = 1;       // GEMM wave quantisation factor (GPU)
  // Of time_s, what the partial waves of the GEMMs' tiles add beyond the same op at wave
  // factor 1 (the roofline at the op's efficiency): datasheet, time_s − max(compute_s·min(q, 1),
  // memory_s); kernel model, Σ over its GEMM kernels of the warm time at q minus at min(q, 1).
  // 0 for a curve-calibrated op (the curve takes q in; its share is not separable).
  double wave_s = 0;
  std::int64_t matmul_flops = 0;
  std::int64_t other_flops = 0;
  std::int64_t bytes = 0;
  int kernels = 1;            // kernel launches the op takes (0: inside the fused attention kernel)
  bool calibrated = false;    // a learnt curve was used
  std::string calibrated_as;  // the curve's op (== op, or its stand-in); empty when not
  // The dtype whose calibration timed the op: the op's own, or bf16 for fp16 on hardware whose
  // tensor cores run both at one rate; empty when not calibrated.
  dtype calibrated_dtype = dtype::fp32;
  bool from_other_dtype = false;
  // Kernel-sequence model only: the device time of each kernel (warm, inside a sequence), and
  // the op as the profiler's isolated mode measures it (cold, with host and event costs).
  std::vector<double> kernel_s;
  double isolated_s = 0;
  // Kernel-sequence model only: the largest wave factor of the op's GEMM kernels
  // (gemm_wave_factor), and the device time its kernels' waves add past the largest factor
  // the calibration's rows had (kernel_params::max_wave_factor; 0 when none went past it or
  // the calibration did not record it): padding the tiling model assumes and no row measured.
  double wave_factor = 1;
  double unmeasured_wave_s = 0;

  bool memory_bound() const { return memory_s > compute_s; }
};

// The fused attention kernel's backward at shape `s` (a FlashAttention-style kernel): it
// recomputes the scores over the causal keys, then dV, dP, dQ and dK, 5 matmuls of the
// forward kernel's 2 (matmul FLOPs 2.5 × fused_attention_kernel's); reads Q, K, V, O, dO and
// the fp32 row statistics (log-sum-exp, rowsum(dO∘O)), writes dQ, dK, dV; other FLOPs twice
// the forward kernel's softmax work.
op_cost fused_attention_backward(const op_shape& s);

// How a prediction on `hw` runs attention when nobody says: fused on a GPU (what training and
// serving stacks run: one FlashAttention/cuDNN kernel), unfused on a CPU (modsim's CPU backend,
// the only one its CPU calibrations measure, has no fused attention).
attention_impl default_attention(const hardware_spec& hw);

class cost_model {
 public:
  // Reads hw.calibration_json when present; throws modsim::error(bad_input) naming the
  // hardware file and key when the calibration block is malformed or does not match the
  // hardware's peaks. Attention is priced as the calibration's rows ran it, uncalibrated as
  // default_attention(hw) (what validation, which compares with those rows, needs).
  explicit cost_model(hardware_spec hw);
  // The same with attention run `attention` (a prediction's --attention). Where the
  // calibration measured the other implementation, the attention ops (attn_scores,
  // attn_softmax, attn_values) are priced by the datasheet roofline of this one, uncalibrated
  // (attention_measured() false); every other op as calibrated.
  cost_model(hardware_spec hw, attention_impl attention);

  const hardware_spec& hardware() const { return m_hw; }
  bool calibrated() const;
  // "datasheet roofline (uncalibrated)" or "calibrated on <files> (<date>, <device>)".
  std::string label() const;
  // The calibration in use; null when uncalibrated.
  const sim::calibration* calibration() const { return m_cal.get(); }
  // How attention is priced: fused, attn_scores is the one causal attention kernel
  // (sim/kernel_model.hpp fused_attention_kernel) and attn_softmax / attn_values take no time
  // and no launch; unfused, the three kernels with their own FLOPs and bytes.
  attention_impl attention() const { return m_attention; }
  // True when a calibration is in use and its rows ran attention() (its `attention`); false
  // uncalibrated, and where the attention ops fall back to the datasheet roofline.
  bool attention_measured() const;

  // Device time of op `c` (an sim/flops op_cost) run at shape `s` with dtype `t`.
  op_time time_of(const op_cost& c, const op_shape& s, dtype t) const;
  op_time time_of(const op_cost& c, const expected_op_shape& s, dtype t) const;
  // Device time of the backward `backward` (ops::backward_of) of the forward op `forward` at
  // shape `s` (a training step). Attention fused: attn_scores is the one backward kernel
  // (fused_attention_backward: it recomputes the scores), attn_softmax and attn_values take no
  // time and launch nothing. Datasheet: the roofline of the backward's FLOPs and bytes, the
  // GEMMs quantised in waves as the forward's. Calibrated (no row measures a backward): the
  // forward's calibrated time × the backward's roofline / the forward's, i.e. the forward's
  // fitted efficiency applied to the backward's FLOPs and bytes (op_time::calibrated_as names
  // the forward op's curve). Launches: twice the forward's for a GEMM op (dgrad and wgrad), the
  // forward's for the others, none for an op without backward work (topk).
  op_time backward_time_of(const op_cost& forward, const op_cost& backward, const op_shape& s, dtype t) const;
  // Device time of the optimizer step (one fused AdamW kernel over every parameter):
  // memory-bound, the datasheet roofline max(other_flops / peak_vector, bytes / bandwidth)
  // whether calibrated or not (no row measures it).
  op_time optimizer_time_of(const optimizer_cost& c, dtype t) const;

  double launch_s() const;        // device-side cost of one kernel launch
  double host_enqueue_s() const;  // host-side cost of enqueuing one kernel
  // The GPU kernel-sequence model in use; null for the curves or the datasheet.
  const kernel_params* kernel_model() const;
  // The dtype whose kernel-model calibration times dtype `t` (t itself, or bf16 for fp16 on
  // tensor-core hardware); empty when the kernel model does not cover `t`.
  std::optional<dtype> kernel_model_dtype(dtype t) const;
  // Seconds from the first enqueue to the end of the last kernel of `ops` run in this order on
  // one stream: with the kernel model the host/device queue over their kernels; otherwise
  // Σ time_s + kernels · launch_s.
  double sequence_s(const std::vector<op_time>& ops) const;

 private:
  template <class Shape>
  op_time time_impl(const op_cost& c, const Shape& s, dtype t) const;

  hardware_spec m_hw;
  std::shared_ptr<const sim::calibration> m_cal;  // null when uncalibrated
  attention_impl m_attention = attention_impl::unfused;
};

// A cost model with the calibration replaced (used by calibrate to evaluate a fit).
cost_model with_calibration(const hardware_spec& hw, const calibration& c);

}  // namespace modsim::sim
