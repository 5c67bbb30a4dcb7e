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

#include "sim/measured_sample.hpp"

namespace modsim::sim {

// The exponent on the anchor ratio (above) is k_anchor_elasticity, 0.7 (sim/cost.hpp, beside
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

}  // namespace modsim::sim
