#include "sim/cost/repeatability.hpp"

#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "sim/cost/validation.hpp"

namespace modsim::sim {

std::optional<repeatability> repeatability_of(const std::vector<measured_sample>& samples) {
  std::map<std::tuple<std::string, std::optional<backend_kind>, std::string>, std::vector<double>> times;
  for (const measured_sample& s : samples)
    if (s.is_whole() && s.median_s > 0) times[{s.key, s.backend, s.device}].push_back(s.median_s);
  repeatability r;
  std::vector<double> diffs;
  for (const auto& [key, t] : times) {
    if (t.size() < 2) continue;
    ++r.blocks;
    for (std::size_t i = 0; i < t.size(); ++i)
      for (std::size_t j = i + 1; j < t.size(); ++j) diffs.push_back(200.0 * std::abs(t[i] - t[j]) / (t[i] + t[j]));
  }
  if (diffs.empty()) return std::nullopt;
  const validation_summary v = summarize_errors(diffs);
  r.pairs = v.points;
  r.median_abs_pct_diff = v.median_abs_pct_error;
  r.p90_abs_pct_diff = v.p90_abs_pct_error;
  r.max_abs_pct_diff = v.max_abs_pct_error;
  return r;
}

}  // namespace modsim::sim
