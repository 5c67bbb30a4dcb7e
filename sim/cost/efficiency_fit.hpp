#pragma once
// Fitting one efficiency curve of the cost model (sim/cost/cost.hpp) to an op's measured rows:
//   measured_i ≈ fixed_s + roofline_i · g(log10 roofline_i)
// with g piecewise linear between K knots placed at quantiles of log10(roofline) (K ≤ 6,
// fewer when there are fewer distinct shapes); the unknowns enter linearly, so the fit is a
// non-negative least-squares problem on relative errors with a small second-difference
// penalty on g and Huber reweighting (sim/cost/calibrate.hpp says more).
#include <string>
#include <vector>

#include "sim/cost/cost.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim {

// The options of a calibration: the curve fit's, and whether the block rows fit the launch
// and in-layer refetch costs (sim/cost/calibrate.hpp).
struct fit_options {
  int max_knots = 6;
  double smoothing = 0.05;  // weight of the second-difference penalty on g (relative units)
  int huber_iterations = 4;
  bool launch_from_blocks = true;  // fit launch_s (and in_layer_s_per_byte) on block rows when there are some
  bool fit_in_layer_bytes = true;  // false: launch_s only (median per-kernel gap)
  bool rows_factor = true;         // the dense GEMMs' row-count factor (fit_curve_with_rows)
};

// Fits one curve to (roofline_s, measured_s) pairs (both > 0). Throws modsim::error
// (bad_input) when `roofline_s` and `measured_s` differ in size or are empty.
// `quantised_s` (same size, or empty = roofline_s) is the roofline with GEMM wave
// quantisation, the term g multiplies.
efficiency_curve fit_curve(modsim::op op, dtype type, const std::vector<double>& roofline_s,
                           const std::vector<double>& measured_s, const fit_options& options = {},
                           const std::vector<double>& quantised_s = {});

// The ops whose curve takes a row-count factor (efficiency_curve::rows_factor): the dense
// GEMMs over the block's tokens (qkv_proj, out_proj, mlp_up, mlp_gate, mlp_down).
bool row_gemm(modsim::op op);

// A GEMM of fewer rows than this runs other kernels of the CPU library: at equal work this
// machine's OpenBLAS took 3-15 % less time at 32 rows and 2-4 % more at 64 than the work curve
// says, and agreed with it within 1.1 % from 128 rows to 2,048
// (reports/measurements/cpu-xeon-2core-2026-11-24c-calibration-2.csv, 5-fold CV per op).
inline constexpr double k_rows_factor_below = 128;

// fit_curve with the row-count factor: `rows` (same size) is each row's M. The factor at an M
// below k_rows_factor_below is the median of measured / curve over the rows at that M (3 or
// more of them; fewer than two such M: no factor), 1 at k_rows_factor_below and beyond, interpolated in
// log2 M between, the smallest measured M's below it; the curve is then fitted again on
// measured / factor and the factors taken again against it (two rounds).
efficiency_curve fit_curve_with_rows(modsim::op op, dtype type, const std::vector<double>& roofline_s,
                                     const std::vector<double>& measured_s, const std::vector<double>& rows,
                                     const fit_options& options = {}, const std::vector<double>& quantised_s = {});

// One GEMM measured at several row counts, all else equal: (rows, measured seconds) pairs.
using row_series = std::vector<std::pair<double, double>>;

// What the rows left over past a multiple of k_row_group cost (efficiency_curve::
// leftover_rows): for each row count M of a series with r = M mod k_row_group > 0 whose two
// neighbouring multiples, M − r and M − r + k_row_group, the series also measured, the time t_b
// interpolated linearly between theirs gives M · (t / t_b − 1) rows; per r, the median of
// those, or 0 where it is below (noise: the rows left over never cost less than their share).
// Empty unless every r has 3 or more (a calibration without such series: no term).
std::vector<double> fit_leftover_rows(const std::vector<row_series>& series);

}  // namespace modsim::sim
