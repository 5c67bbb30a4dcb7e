#pragma once
// Measures a list of points on one backend and appends one row per point to a measurements
// file as soon as it is measured.
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "profiler/grid.hpp"
#include "profiler/measure.hpp"
#include "profiler/measurements.hpp"

namespace modsim::profiler {

struct run_progress {
  std::size_t done = 0;  // points finished (measured or already present)
  std::size_t total = 0;
  double elapsed_s = 0;
  const point* current = nullptr;  // the point about to be measured; null at the end
};

struct run_options {
  stop_rule rule;
  int input_copies = 4;  // rotated between samples so a repeat does not time a warm cache
  std::uint64_t seed = 1;
  const std::atomic<bool>* stop = nullptr;               // set (e.g. by SIGINT) to stop after the current point
  std::function<void(const run_progress&)> on_progress;  // may be empty
};

struct run_result {
  std::size_t measured = 0;
  std::size_t already_present = 0;  // skipped because --resume found them in the file
  bool interrupted = false;
  std::size_t dropped_throttled = 0;  // samples retaken because the device was throttled
  std::vector<measurement_row> rows;  // the rows written by this run
};

// One timed repeat of `o` in seconds: rotate the inputs, flush the device cache, time with the
// backend's clock (CUDA events on a GPU); samples taken while the device reports throttling
// are retaken and counted in `dropped` (may be null).
double time_once(kernels::backend& be, kernels::op o, kernels::workspace& ws, std::size_t* dropped = nullptr);

run_result run_points(kernels::backend& be, const std::vector<point>& points, measurement_writer& out,
                      const run_options& options);

}  // namespace modsim::profiler
