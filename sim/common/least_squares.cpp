// The calibration's dense solvers (sim/common/least_squares.hpp).
#include "sim/common/least_squares.hpp"

#include <cmath>
#include <cstddef>

namespace modsim::sim {

std::vector<double> least_squares(const matrix& A, const std::vector<double>& b, const std::vector<bool>& active) {
  const std::size_t n = active.size();
  const std::size_t rows = A.size();
  std::vector<std::size_t> cols;
  for (std::size_t j = 0; j < n; ++j)
    if (active[j]) cols.push_back(j);
  const std::size_t m = cols.size();
  std::vector<double> x(n, 0.0);
  if (m == 0 || rows == 0) return x;
  // Q·R in place, column-major copy of the active columns.
  std::vector<std::vector<double>> R(m, std::vector<double>(rows));
  std::vector<double> scale(m, 1.0);
  for (std::size_t p = 0; p < m; ++p) {
    double norm = 0;
    for (std::size_t i = 0; i < rows; ++i) norm += A[i][cols[p]] * A[i][cols[p]];
    norm = std::sqrt(norm);
    scale[p] = norm > 0 ? 1.0 / norm : 1.0;
    for (std::size_t i = 0; i < rows; ++i) R[p][i] = A[i][cols[p]] * scale[p];
  }
  std::vector<double> y = b;
  std::vector<double> diag(m, 0.0);
  std::vector<bool> dependent(m, false);
  for (std::size_t p = 0; p < m && p < rows; ++p) {
    double norm = 0;
    for (std::size_t i = p; i < rows; ++i) norm += R[p][i] * R[p][i];
    norm = std::sqrt(norm);
    if (norm < 1e-10) {  // unit-norm columns: this one lies in the span of the previous ones
      dependent[p] = true;
      continue;
    }
    const double alpha = R[p][p] > 0 ? -norm : norm;
    std::vector<double> v(rows, 0.0);
    for (std::size_t i = p; i < rows; ++i) v[i] = R[p][i];
    v[p] -= alpha;
    double vv = 0;
    for (std::size_t i = p; i < rows; ++i) vv += v[i] * v[i];
    if (vv == 0) {
      diag[p] = R[p][p];
      continue;
    }
    for (std::size_t q = p; q < m; ++q) {
      double dot = 0;
      for (std::size_t i = p; i < rows; ++i) dot += v[i] * R[q][i];
      const double f = 2 * dot / vv;
      for (std::size_t i = p; i < rows; ++i) R[q][i] -= f * v[i];
    }
    double dot = 0;
    for (std::size_t i = p; i < rows; ++i) dot += v[i] * y[i];
    const double f = 2 * dot / vv;
    for (std::size_t i = p; i < rows; ++i) y[i] -= f * v[i];
    diag[p] = R[p][p];
  }
  std::vector<double> z(m, 0.0);
  for (std::size_t pp = m; pp-- > 0;) {
    if (dependent[pp] || pp >= rows || diag[pp] == 0) continue;
    double s = y[pp];
    for (std::size_t q = pp + 1; q < m; ++q) s -= R[q][pp] * z[q];
    z[pp] = s / diag[pp];
  }
  for (std::size_t p = 0; p < m; ++p) x[cols[p]] = z[p] * scale[p];
  return x;
}

std::vector<double> nonnegative_least_squares(const matrix& A, const std::vector<double>& b) {
  const std::size_t n = A.empty() ? 0 : A.front().size();
  std::vector<bool> active(n, true);
  for (;;) {
    std::vector<double> x = least_squares(A, b, active);
    std::size_t worst = n;
    for (std::size_t j = 0; j < n; ++j)
      if (active[j] && x[j] < 0 && (worst == n || x[j] < x[worst])) worst = j;
    if (worst == n) return x;
    active[worst] = false;
  }
}

std::vector<double> hats(const std::vector<double>& knots, double x) {
  std::vector<double> phi(knots.size(), 0.0);
  if (knots.size() == 1 || x <= knots.front()) {
    phi.front() = 1;
    return phi;
  }
  if (x >= knots.back()) {
    phi.back() = 1;
    return phi;
  }
  std::size_t j = 1;
  while (j + 1 < knots.size() && x > knots[j]) ++j;
  const double w = (x - knots[j - 1]) / (knots[j] - knots[j - 1]);
  phi[j - 1] = 1 - w;
  phi[j] = w;
  return phi;
}

}  // namespace modsim::sim
