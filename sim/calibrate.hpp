#pragma once
// Calibration: fits the cost model (sim/cost.hpp) to measurements. Input is plain structs —
// sim does not depend on the profiler; the CLI turns measurements-CSV rows into
// measured_point values.
//
// Fit, per (op, dtype), over that op's single-op rows:
//   measured_i ≈ fixed_s + roofline_i · g(log10 roofline_i)
// with g piecewise linear between K knots placed at quantiles of log10(roofline) (K ≤ 6,
// fewer when there are fewer distinct shapes). The unknowns (fixed_s, g_1..g_K) enter
// linearly, so the fit is a least-squares problem on relative errors
//   (fixed_s + roofline_i · Σ_j g_j φ_j(x_i)) / measured_i ≈ 1
// with non-negative unknowns (an active-set solve), a small second-difference penalty on g
// (smoothness; zero for a g linear in log-work, so such a law is recovered exactly) and
// Huber reweighting (a few iterations) so that one sample disturbed by a noisy machine does
// not bend the curve.
//
// Blocks: with block rows among the measurements (block_dense, block_mod, layer_mode), two
// numbers are fitted on them (relative least squares, non-negative):
//   measured block − Σ predicted ops ≈ kernels · launch_s + bytes · in_layer_s_per_byte
// launch_s is the per-kernel cost of chaining ops; in_layer_s_per_byte is the cost of
// fetching an op's bytes (inputs, weights) that a loop of the op alone keeps in cache but
// that the previous ops of a layer evicted. On the CPU the gap between a block and its ops
// grows with the block's size: over six quiet runs of the quick grid the fit gave
// 1/in_layer_s_per_byte = 36–50 GB/s, with launch_s 0–8 µs. With fewer than 3
// blocks launch_s = the median per-kernel gap and in_layer_s_per_byte = 0. The keys of those
// block rows are recorded so that `modsim validate` never scores them. Without block rows
// launch_s stays the hardware file's kernel_launch_s and in_layer_s_per_byte is 0.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/cost.hpp"
#include "sim/flops.hpp"
#include "sim/kernel_fit.hpp"
#include "sim/spec.hpp"

namespace modsim::sim {

// One measured row, profiler-independent (the measurements CSV's columns).
struct measured_point {
  std::string op;  // an op name, or block_dense / block_mod / layer_mode
  dtype type = dtype::fp32;
  std::int64_t batch = 1;
  std::int64_t seq_len = 1;
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;  // 0 = n_heads
  int d_ff = 0;
  mlp_kind mlp = mlp_kind::gelu;
  double capacity = 1.0;
  std::string variant = "none";  // none | staged | integrated (layer_mode, MoE ops)
  int experts = 0;
  int noop_experts = 0;
  double capacity_factor = 0;
  double median_s = 0;
  std::string backend;  // cpu | cuda
  std::string device;
  std::string key;    // a stable identity of the shape (the profiler's point key)
  std::string where;  // "FILE:LINE" for messages
  // isolated (the op alone, cold) | in_block (the op inside its block's run, warm)
  std::string timing = "isolated";
  // unfused | fused: the attention implementation the attention and block rows ran
  std::string attention = "unfused";
};

// A measured op or block with its shape and FLOP/byte costs per sim/flops.
struct calibration_sample {
  std::string op;
  op_shape shape;  // tokens = the block's tokens per sequence (k at a routed op)
  dtype type = dtype::fp32;
  double capacity = 1.0;
  mode_variant variant = mode_variant::staged;  // layer_mode only
  op_cost cost;                                 // the op's cost; for a block, the sum of its ops
  double measured_s = 0;
  std::string backend, device, key, where;
  std::string timing = "isolated";    // as measured_point
  std::string attention = "unfused";  // as measured_point

  bool is_block() const { return op == "block_dense" || op == "block_mod" || op == "layer_mode"; }
};

// The sample of a measured row: its op_shape the way the profiler ran it (tokens = k for
// single ops at capacity < 1 except in an integrated layer), its costs from sim/flops.
// Throws modsim::error(bad_input) naming `p.where` for an unknown op or an invalid shape.
calibration_sample sample_of(const measured_point& p);

// The predicted time of a block sample: its ops (block_costs) timed by `model`, plus
// kernels × launch_s. For a single-op sample, that op (with its own launch).
struct block_prediction {
  double ops_s = 0;  // Σ op times
  int kernels = 0;
  double overhead_s = 0;  // kernels × launch_s
  double total_s = 0;     // ops_s + overhead_s
};
block_prediction predict_sample(const calibration_sample& s, const cost_model& model);

// A sample as the kernel sequence the CUDA backend ran for it (sim/kernel_fit.hpp): an isolated
// or in-block op row, or a block (all its ops' kernels). Throws bad_input naming s.where.
kernel_row kernel_row_of(const calibration_sample& s);

struct fit_options {
  int max_knots = 6;
  double smoothing = 0.05;  // weight of the second-difference penalty on g (relative units)
  int huber_iterations = 4;
  bool launch_from_blocks = true;  // fit launch_s (and in_layer_s_per_byte) on block rows when there are some
  bool fit_in_layer_bytes = true;  // false: launch_s only (median per-kernel gap)
};

// Fits one curve to (roofline_s, measured_s) pairs (both > 0). Throws modsim::error
// (bad_input) when `roofline_s` and `measured_s` differ in size or are empty.
// `quantised_s` (same size, or empty = roofline_s) is the roofline with GEMM wave
// quantisation, the term g multiplies.
efficiency_curve fit_curve(const std::string& op, dtype type, const std::vector<double>& roofline_s,
                           const std::vector<double>& measured_s, const fit_options& options = {},
                           const std::vector<double>& quantised_s = {});

// Fits the calibration of `hw` to `samples`. `sources` (files and row counts) and `date` are
// recorded as given. Throws modsim::error(bad_input) when there is no usable single-op
// sample, when samples come from more than one device, or when their backend does not match
// the hardware's kind (cpu ↔ cpu, cuda ↔ gpu).
calibration fit_calibration(const hardware_spec& hw, const std::vector<calibration_sample>& samples,
                            std::vector<calibration_source> sources, const std::string& date,
                            const fit_options& options = {});

// Writes a copy of the hardware file `hardware_path` with `calibration` set to `c` (and the
// name given a "-calibrated" suffix, a note saying where the block's numbers come from) to
// `out_path`, through a temporary file in the same folder renamed over it: a failure never
// leaves a truncated file. Throws modsim::error (bad_input: unreadable input; runtime: the
// write failed).
void write_calibrated_hardware(const std::string& hardware_path, const calibration& c, const std::string& out_path);

// ------------------------------------------------------------------------------------------
// Validation: measured blocks against their prediction.
// ------------------------------------------------------------------------------------------

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
// One point per block sample (block_dense, block_mod, layer_mode); other samples are ignored.
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

// Whether two measurements' device columns name the same device model: equal strings, or both
// naming one GPU model ("h100" in "NVIDIA H100 80GB HBM3, ..., driver 13.0" and in "NVIDIA H100
// SXM5, ..."): a driver, clock or library version apart is the same machine kind, another model
// is not.
bool same_device_model(std::string_view a, std::string_view b);

// The current UTC time, ISO 8601 ("2025-01-31T12:00:00Z").
std::string utc_now_iso8601();

}  // namespace modsim::sim
