#pragma once
// Fitting one efficiency curve of the cost model (sim/cost.hpp) to an op's measured rows:
//   measured_i ≈ fixed_s + roofline_i · g(log10 roofline_i)
// with g piecewise linear between K knots placed at quantiles of log10(roofline) (K ≤ 6,
// fewer when there are fewer distinct shapes); the unknowns enter linearly, so the fit is a
// non-negative least-squares problem on relative errors with a small second-difference
// penalty on g and Huber reweighting (sim/calibrate.hpp says more).
#include <string>
#include <vector>

#include "sim/cost.hpp"
#include "sim/spec.hpp"

namespace modsim::sim {

// The options of a calibration: the curve fit's, and whether the block rows fit the launch
// and in-layer refetch costs (sim/calibrate.hpp).
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
efficiency_curve fit_curve(modsim::op op, dtype type, const std::vector<double>& roofline_s,
                           const std::vector<double>& measured_s, const fit_options& options = {},
                           const std::vector<double>& quantised_s = {});

}  // namespace modsim::sim
