#pragma once
// How far repeat measurements of the same block agree: the floor under any prediction's error
// on the machine that measured them. A block (or decode step) measured two or more times (the
// same row key, backend and device, in one file or several) gives one |difference| per pair
// of its measurements, in percent of the pair's mean; `modsim validate` prints their median,
// p90 and max beside the model's errors, so that an error or a band at that level reads as
// the machine's spread, not the model's.
#include <optional>
#include <vector>

#include "sim/cost/measured_sample.hpp"

namespace modsim::sim {

struct repeatability {
  int blocks = 0;  // whole rows (blocks, decode steps) measured more than once
  int pairs = 0;   // pairs of their measurements
  double median_abs_pct_diff = 0;
  double p90_abs_pct_diff = 0;
  double max_abs_pct_diff = 0;
};

// Nullopt when no whole row was measured twice.
std::optional<repeatability> repeatability_of(const std::vector<measured_sample>& samples);

}  // namespace modsim::sim
