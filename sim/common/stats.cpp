// Order statistics (sim/common/stats.hpp): percentiles, the median, the serving percentile summary.
#include "sim/common/stats.hpp"

#include <algorithm>
#include <cmath>

namespace modsim::sim {

double value_at_rank(std::span<const double> sorted, double pos) {
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

double percentile_sorted(std::span<const double> sorted, double q) {
  return value_at_rank(sorted, q * static_cast<double>(sorted.size() - 1));
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

percentiles percentiles_of(std::vector<double> values) {
  percentiles p;
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  p.p50 = percentile_sorted(values, 0.50);
  p.p90 = percentile_sorted(values, 0.90);
  p.p99 = percentile_sorted(values, 0.99);
  double sum = 0;
  for (double x : values) sum += x;
  p.mean = sum / static_cast<double>(values.size());
  return p;
}

}  // namespace modsim::sim
