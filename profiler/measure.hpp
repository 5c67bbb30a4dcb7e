#pragma once
// The measuring method (after NVIDIA nvbench): warm up, then take samples until the estimate
// is precise enough (relative standard error of the mean below a target, with at least a
// minimum number of samples and a minimum total time) or a cap is hit; report the median and
// the 10th/90th percentiles. A point still imprecise at the time cap (a neighbour on a shared
// machine slowed some of its samples) may keep sampling to a second, longer cap: more samples
// move its median back to the undisturbed time. Timing itself is the caller's: a sample
// function returns the seconds of one repeat (CPU: steady clock around run + synchronize; GPU:
// events), so the stopping rule can be tested with synthetic timers.
#include <functional>
#include <vector>

namespace modsim::profiler {

struct stop_rule {
  int warmup = 2;  // repeats run and discarded first
  int min_samples = 5;
  int max_samples = 1000;
  double min_time_s = 0.02;        // sampled time before the precision test may stop
  double max_time_s = 1.0;         // sampled time after which sampling stops regardless
  double target_rel_error = 0.01;  // stop when stderr(mean)/mean falls below this
  // Sampled time a point still above target_rel_error at max_time_s may go on to (0 or not
  // above max_time_s: none; the precision test still stops it as soon as it holds).
  double noisy_max_time_s = 0;
  // ... and takes at least this many samples before that cap stops it (a block of seconds
  // reaches any time cap in its first few samples).
  int noisy_min_samples = 0;
};

struct sample_stats {
  double median_s = 0;
  double p10_s = 0;
  double p90_s = 0;
  double mean_s = 0;
  double rel_error = 0;  // standard error of the mean / mean
  int samples = 0;
  bool converged = false;  // stopped by the precision test, not by a cap
  bool extended = false;   // sampled past max_time_s because still imprecise there (noisy_max_time_s)
};

// Summary statistics of samples (any order; must be non-empty). The percentiles are
// sim::percentile_sorted's (linear interpolation between closest ranks, q·(n−1)).
sample_stats summarize(std::vector<double> samples);

// One point measured in several passes over the grid (profile --passes N): a machine that
// slows down for seconds at a time (another tenant on a shared VM) slows every sample of the
// point it falls on, so the point's own samples cannot see it; passes minutes apart can.
// median_s is the median of the passes' medians (a slow pass is outvoted), p10_s the lowest
// and p90_s the highest of their p10/p90 (the spread across passes shows in the row), mean_s
// the sample-weighted mean, samples the total, rel_error the largest, converged when every
// pass converged, extended when any was. Throws runtime_error on an empty list.
sample_stats combine_passes(const std::vector<sample_stats>& passes);
// How far the passes of one point disagree: (highest − lowest of their medians) / the median
// of their medians, in percent; 0 for fewer than two passes.
double pass_spread_pct(const std::vector<sample_stats>& passes);

// Runs `rule.warmup` discarded samples, then samples until the rule stops.
sample_stats measure(const std::function<double()>& sample, const stop_rule& rule);

}  // namespace modsim::profiler
