#pragma once
// The explorer's computation: a pure function from an ExplorerConfig to a ComputeResult. The
// numbers come from analysis::analyze (the analysis `modsim` and `modsim report` show too);
// this file only turns an analysis_result into the explorer's plain result structs. No Qt
// objects: the worker runs it on a thread pool, the benchmark and the tests call it directly.
#include <functional>
#include <optional>
#include <string>

#include "gui/core/explorer_config.hpp"
#include "gui/core/results.hpp"
#include "sim/cost/sweep.hpp"

namespace modsim::gui {

// How a running computation is steered: `cancelled` is polled between pieces of work (a
// cancelled computation returns early with ComputeResult::error == "cancelled");
// `progress` receives 0..100. Either may be empty.
struct ComputeControl {
  std::function<bool()> cancelled;
  std::function<void(int)> progress;
};

// Every part of `config` in one go. Never throws: a modsim::error (bad input, an infeasible
// configuration) becomes ComputeResult::error, and the parts that could not be computed say so.
ComputeResult computeAll(const ExplorerConfig& config, const ComputeControl& control = {});

// The parts `parts` of `config` into `result`, whose other parts stay as they are: `parts` join
// result.computed and become result.updated, and computeMs grows by the time taken. The first
// call for a result includes PredictionPart (it sets the model and the workload); a prediction
// that fails sets result.error and marks every part computed. A part that fails says why in its
// `unavailable`. Cancelled: result.error is "cancelled". Never throws.
void computeParts(const ExplorerConfig& config, ResultParts parts, ComputeResult& result,
                  const ComputeControl& control = {});

// What the worker computes next of the parts `remaining`: the headline's part first, then the
// `visible` tab's parts together, then one part at a time (sweep, timeline, sampling, serving,
// parallel, validation: the slowest last). 0 when nothing remains.
ResultParts nextParts(ResultParts remaining, ResultParts visible);

// The parts, for the benchmark and the tests. They throw modsim::error.
PredictionResult computePrediction(const ExplorerConfig& config);
// `space` empty: analysis::default_sweep_space(config.model).
SweepResult computeSweep(const ExplorerConfig& config, const std::optional<sim::sweep_space>& space = {},
                         const ComputeControl& control = {});
TimelineResult computeTimeline(const ExplorerConfig& config);
ServingResult computeServing(const ExplorerConfig& config);
SamplingResult computeSampling(const ExplorerConfig& config);
ParallelResult computeParallel(const ExplorerConfig& config);
ValidationResult computeValidation(const ExplorerConfig& config);

}  // namespace modsim::gui
