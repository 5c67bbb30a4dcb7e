#pragma once
// Rows measured at different machine speeds, held to one: a measurements row's anchor_s is
// the time of a fixed small block (profiler/anchor.hpp) taken around the row's point, so the
// ratio of two rows' anchors says how much slower the machine ran for one than for the other.
// A shared machine drifts by several percent over minutes and slows by tens of percent for
// seconds at a time; holding rows to one speed takes most of that out of the fit and out of
// the comparison with a calibration measured at another time, and leaves what the model
// itself misses.
//
// Two things measured on the 2-core EPYC VM (two runs of the four CPU grids back to back,
// reports/measurements/cpu-epyc-2core-2026-11-25d/e-*.csv) set how: one anchor is noisy
// (three samples before and three after a point, a few ms each), while a slow spell lasts
// several points, so a row's speed is the median anchor of its point and the points measured
// just before and after it (in file order); and blocks slow down less than the small anchor
// does (the slope of log(block ratio) on log(anchor ratio) between the two runs was 0.66–1.06
// per grid with that smoothing, 0.34–0.72 without), so a row is rescaled by the anchor ratio
// to the power k_anchor_elasticity.
#include <string>
#include <vector>

#include "sim/cost/measured_sample.hpp"

namespace modsim::sim {

// The exponent on the anchor ratio (above) is k_anchor_elasticity, 0.7 (sim/cost/cost.hpp, beside
// the calibration that records the one it was fitted with).

// Each row's machine speed: the median of the anchors of its point and of the points just
// before and after it in its file (rows of one file, in the order given, consecutive rows with
// the same anchor_s being one point: an in_block block and its ops); 0 for a row without an
// anchor. Rows of different files (the FILE part of `where`) are never neighbours.
std::vector<double> smoothed_anchors(const std::vector<measured_sample>& rows);

// The median of smoothed_anchors over the rows that carry one; 0 when none does.
double median_anchor(const std::vector<measured_sample>& rows);

// What hold_machine_speed did.
struct speed_hold {
  double reference_s = 0;  // the anchor seconds the rows were held to (0: none)
  double elasticity = k_anchor_elasticity;
  int held = 0;     // rows rescaled
  int without = 0;  // rows without an anchor, left as measured
  // Smoothed anchor / reference_s over the held rows: how much slower (> 1) the machine ran
  // for them than at the reference.
  double median_ratio = 1, p10_ratio = 1, p90_ratio = 1, max_ratio = 1;
  bool any() const { return held > 0; }
  // "412 rows held to the machine speed of an anchor of 2.085 ms: measured at median +3.1 %
  // (p10 −1.0 %, p90 +12.0 %, slowest +30 %) of it; 4 rows without an anchor left as measured"
  std::string text() const;
};

// Rescales the measured time of every row with an anchor to the machine speed at
// `reference_s`: median_s × (reference_s / smoothed anchor)^elasticity (with elasticity 1, a
// row measured while the anchor took 10 % longer than the reference is taken as 1/1.1 of what
// it measured). Rows without an anchor are left as they are and counted. reference_s <= 0:
// nothing is changed.
speed_hold hold_machine_speed(std::vector<measured_sample>& rows, double reference_s,
                              double elasticity = k_anchor_elasticity);

// Rows measured in a slow spell too deep for the hold to take out. Within one grid the
// exponent 0.7 fits (each point's median op residual regressed on its log anchor ratio: slopes
// -0.40 to +0.12 on five Xeon grids, -0.09 to +0.26 on twelve EPYC ones), but those ratios are
// mostly within 20 %; the points of a spell 40-100 % deep are held by an exponent fitted on
// smaller ratios, and they sit on the few shapes measured in it. Leaving them out of the fit
// with k_slow_limit 1.35 (chosen on the committed runs: limits of 35-50 % meet the issue's
// figures on both machines, 10-30 % starve the EPYC's fits; reports/measurements/README.md,
// "Leaving deep slow spells out of the fit") takes the Xeon's twenty-five calibration/realistic
// pairs from p90 8.09 % to 7.57 % and the EPYC's 144 from 6.99 % to 6.93 %.
struct slow_cut {
  double limit = 0;          // the ratio to fast_s above which a row is left out; 0: none left out
  double fast_s = 0;         // the fastest quarter's anchor: the 25th percentile of the rows' smoothed anchors
  int rows = 0;              // the rows looked at
  int left_out = 0;          // left out
  double slowest_ratio = 1;  // the slowest row's smoothed anchor / fast_s
  bool any() const { return left_out > 0; }
  // "31 of 1776 rows left out of the fit: measured while the machine ran more than 35% slower
  // than at its fastest quarter (a smoothed anchor above 4.118 ms against 3.050 ms; the slowest
  // +108%)"
  std::string text() const;
};

// Removes from `rows` those whose smoothed anchor (smoothed_anchors, over the rows as given) is
// more than `limit` times the 25th percentile of the smoothed anchors of the rows that carry
// one; rows without an anchor stay. limit <= 0, or no row with an anchor: nothing is removed.
// The rows left keep their order.
slow_cut leave_out_slow_rows(std::vector<measured_sample>& rows, double limit = k_slow_limit);

}  // namespace modsim::sim
