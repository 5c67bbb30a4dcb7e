#pragma once
// The small dense solvers the calibration fits with: least squares by column-scaled
// Householder QR over a chosen set of columns, non-negative least squares for a handful of
// unknowns (active set), and the hat functions of a piecewise-linear curve.
#include <vector>

namespace modsim::sim {

using matrix = std::vector<std::vector<double>>;  // rows

// Solves min ||A x − b||² over the columns in `active` (others fixed at 0): columns scaled
// to unit norm (the intercept and the g columns differ by orders of magnitude), then
// Householder QR; a column dependent on the previous ones gets 0.
std::vector<double> least_squares(const matrix& A, const std::vector<double>& b, const std::vector<bool>& active);

// Non-negative least squares for a handful of unknowns: solve, drop the most negative
// unknown (fix it at 0), repeat.
std::vector<double> nonnegative_least_squares(const matrix& A, const std::vector<double>& b);

// Hat functions of the (ascending) knots at x, clamped beyond the ends: the weights of the
// knots in the piecewise-linear interpolation at x.
std::vector<double> hats(const std::vector<double>& knots, double x);

}  // namespace modsim::sim
