#pragma once
// The held-out check of the cost model on this CPU (what `modsim report` shows with no model
// given, and scripts/validate-cpu.sh runs by hand): a quick profile calibrates the CPU cost
// model, the blocks of a held-out grid — shapes the calibration never saw — score it.
// It measures this machine, so it lives with the command line, not in analysis/ (which
// neither measures nor links the kernels). Never prints (progress goes through a callback),
// throws modsim::error.
#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "analysis/analysis.hpp"
#include "profiler/grid.hpp"
#include "sim/model/spec.hpp"

namespace modsim::cli {

struct cpu_holdout_check {
  // Where the measurements go: DIR/measurements-cpu.csv (the calibration's, ops timed inside
  // their blocks) and DIR/measurements-cpu-holdout.csv (the held-out blocks, isolated). A file
  // measured on this CPU with the same timing is reused unless `fresh`; an interrupted run
  // leaves FILE.partial, which the next run resumes.
  std::string dir;
  bool fresh = false;
  profiler::grid calibration_grid;                   // e.g. profiler::preset("quick", backend_kind::cpu)
  profiler::grid holdout_grid;                       // e.g. configs/grids/holdout-cpu.json
  sim::hardware_spec cpu;                            // the uncalibrated CPU hardware file
  const std::atomic<bool>* stop = nullptr;           // set (e.g. by SIGINT) to stop after the current point
  std::function<void(const std::string&)> progress;  // one line at a time; may be empty
};

// Profiles (or reuses) both files on one thread (OpenBLAS's threads and the kernel pool share
// cores badly), calibrates `cpu` on the first and returns the request that validates that
// calibration on the held-out blocks. std::nullopt when `stop` was set while profiling.
std::optional<analysis::validation_request> cpu_holdout_validation(const cpu_holdout_check& check);

}  // namespace modsim::cli
