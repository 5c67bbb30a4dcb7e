// The efficiency curve's evaluation (sim/cost/efficiency_curve.hpp).
#include "sim/cost/efficiency_curve.hpp"

#include <algorithm>
#include <cmath>

namespace modsim::sim {

double efficiency_curve::inv_efficiency_at(double roofline_s) const {
  if (inv_efficiency.empty()) return 1.0;
  if (inv_efficiency.size() == 1 || roofline_s <= 0) return inv_efficiency.front();
  const double x = std::log10(roofline_s);
  if (x <= log10_work.front()) return inv_efficiency.front();
  if (x >= log10_work.back()) return inv_efficiency.back();
  std::size_t j = 1;
  while (j + 1 < log10_work.size() && x > log10_work[j]) ++j;
  const double x0 = log10_work[j - 1], x1 = log10_work[j];
  const double w = (x - x0) / (x1 - x0);
  return inv_efficiency[j - 1] * (1 - w) + inv_efficiency[j] * w;
}

double efficiency_curve::rows_factor_at(double rows) const {
  if (rows_factor.empty() || !(rows > 0)) return 1.0;
  const double x = std::log2(rows);
  if (rows_factor.size() == 1 || x <= log2_rows.front()) return rows_factor.front();
  if (x >= log2_rows.back()) return rows_factor.back();
  std::size_t j = 1;
  while (j + 1 < log2_rows.size() && x > log2_rows[j]) ++j;
  const double w = (x - log2_rows[j - 1]) / (log2_rows[j] - log2_rows[j - 1]);
  return rows_factor[j - 1] * (1 - w) + rows_factor[j] * w;
}

double efficiency_curve::leftover_factor_at(double rows) const {
  if (leftover_rows.size() != k_row_group - 1 || !(rows >= 1)) return 1.0;
  const long long m = std::llround(rows);
  const int r = static_cast<int>(m % k_row_group);
  return r == 0 ? 1.0 : 1.0 + leftover_rows[static_cast<std::size_t>(r - 1)] / static_cast<double>(m);
}

double efficiency_curve::time_s(double roofline_s, double quantised_roofline_s, double rows) const {
  return (fixed_s + quantised_roofline_s * inv_efficiency_at(roofline_s)) * rows_factor_at(rows) *
         leftover_factor_at(rows);
}

}  // namespace modsim::sim
