#pragma once
// Order statistics shared by modsim's summaries: percentiles by linear interpolation
// between closest ranks (numpy's default) and the median, computed in one place for the
// serving simulator's latency percentiles, the calibration's validation errors and the
// efficiency-curve fit.
#include <span>
#include <vector>

namespace modsim::sim {

// The value at fractional rank `pos` (0 ≤ pos ≤ size − 1) of ascending `sorted`: linear
// interpolation between sorted[floor(pos)] and the next value. `sorted` must not be empty.
double value_at_rank(std::span<const double> sorted, double pos);

// The q-quantile (0 ≤ q ≤ 1) of ascending `sorted` by linear interpolation between closest
// ranks: the value at rank q · (n − 1). `sorted` must not be empty.
double percentile_sorted(std::span<const double> sorted, double q);

// The median: the middle value, or the mean of the two middle values for an even count; 0
// for an empty list.
double median(std::vector<double> values);

// The 50th, 90th and 99th percentiles (percentile_sorted) and the mean; all 0 for an empty
// list.
struct percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
};
percentiles percentiles_of(std::vector<double> values);

}  // namespace modsim::sim
