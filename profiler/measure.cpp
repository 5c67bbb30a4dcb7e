#include "profiler/measure.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.hpp"
#include "sim/common/stats.hpp"

namespace modsim::profiler {

sample_stats summarize(std::vector<double> samples) {
  if (samples.empty()) throw runtime_error("summary of no samples");
  using sim::percentile_sorted;
  sample_stats s;
  std::sort(samples.begin(), samples.end());
  s.samples = static_cast<int>(samples.size());
  s.median_s = percentile_sorted(samples, 0.5);
  s.p10_s = percentile_sorted(samples, 0.1);
  s.p90_s = percentile_sorted(samples, 0.9);
  const double n = static_cast<double>(samples.size());
  s.mean_s = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  if (samples.size() > 1 && s.mean_s > 0) {
    double var = 0;
    for (double x : samples) var += (x - s.mean_s) * (x - s.mean_s);
    var /= n - 1;
    s.rel_error = std::sqrt(var / n) / s.mean_s;
  }
  return s;
}

sample_stats combine_passes(const std::vector<sample_stats>& passes) {
  if (passes.empty()) throw runtime_error("combining no passes");
  if (passes.size() == 1) return passes.front();
  std::vector<double> medians;
  sample_stats s = passes.front();
  double weighted = 0;
  s.samples = 0;
  s.converged = true;
  s.extended = false;
  for (const sample_stats& p : passes) {
    medians.push_back(p.median_s);
    s.p10_s = std::min(s.p10_s, p.p10_s);
    s.p90_s = std::max(s.p90_s, p.p90_s);
    s.rel_error = std::max(s.rel_error, p.rel_error);
    weighted += p.mean_s * p.samples;
    s.samples += p.samples;
    s.converged = s.converged && p.converged;
    s.extended = s.extended || p.extended;
  }
  std::sort(medians.begin(), medians.end());
  s.median_s = sim::percentile_sorted(medians, 0.5);
  s.mean_s = s.samples > 0 ? weighted / s.samples : 0.0;
  return s;
}

double pass_spread_pct(const std::vector<sample_stats>& passes) {
  if (passes.size() < 2) return 0;
  double lo = passes.front().median_s, hi = lo;
  for (const sample_stats& p : passes) {
    lo = std::min(lo, p.median_s);
    hi = std::max(hi, p.median_s);
  }
  const double mid = combine_passes(passes).median_s;
  return mid > 0 ? 100 * (hi - lo) / mid : 0;
}

sample_stats measure(const std::function<double()>& sample, const stop_rule& rule) {
  for (int i = 0; i < rule.warmup; ++i) sample();
  std::vector<double> samples;
  double total = 0;
  bool converged = false, extended = false;
  while (static_cast<int>(samples.size()) < rule.max_samples) {
    const double t = sample();
    samples.push_back(t);
    total += t;
    if (static_cast<int>(samples.size()) >= rule.min_samples && total >= rule.min_time_s) {
      if (summarize(samples).rel_error <= rule.target_rel_error) {
        converged = true;
        break;
      }
    }
    if (total >= rule.max_time_s && static_cast<int>(samples.size()) >= std::min(rule.min_samples, rule.max_samples)) {
      // Past the cap and not precise (the test above would have stopped it): a noisy point
      // goes on to the longer cap, in time and in samples, where there is one.
      const bool noisy_cap = rule.noisy_max_time_s > rule.max_time_s;
      if (!noisy_cap || (total >= rule.noisy_max_time_s && static_cast<int>(samples.size()) >= rule.noisy_min_samples))
        break;
      extended = true;
    }
  }
  sample_stats s = summarize(samples);
  s.converged = converged;
  s.extended = extended;
  return s;
}

}  // namespace modsim::profiler
