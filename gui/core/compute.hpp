#pragma once
// The explorer's computation: a pure function from an ExplorerConfig to a ComputeResult,
// built from modsim's libraries (sim/flops, sim/cost, sim/predict, sim/sweep, sim/des,
// validation). No Qt objects, no GUI: the worker runs it on a thread pool, the benchmark and
// the tests call it directly. This file is the one place that knows those libraries' APIs.
#include <functional>
#include <string>

#include "gui/core/explorer_config.hpp"
#include "gui/core/results.hpp"

namespace modsim::gui {

// How a running computation is steered: `cancelled` is polled between pieces of work (a
// cancelled computation returns early with ComputeResult::error == "cancelled");
// `progress` receives 0..100. Either may be empty.
struct ComputeControl {
  std::function<bool()> cancelled;
  std::function<void(int)> progress;
};

// The sweep around a configuration: the capacities, schedules and variants it spans.
struct SweepAxes {
  std::vector<double> capacities;
  std::vector<std::string> schedules;
  std::vector<std::string> variants;  // sim/sweep names: dense mod moe mode_staged mode_integrated
};
// The default axes around `model`: sim::default_space plus the model's own capacity and
// schedule.
SweepAxes defaultSweepAxes(const sim::model_spec& model);

// Never throws: a modsim::error (bad input, an infeasible configuration) becomes
// ComputeResult::error, and the parts that could not be computed say so.
ComputeResult computeAll(const ExplorerConfig& config, const ComputeControl& control = {});

// The parts, for the benchmark and the tests. They throw modsim::error.
PredictionResult computePrediction(const ExplorerConfig& config);
SweepResult computeSweep(const ExplorerConfig& config, const SweepAxes& axes, const ComputeControl& control = {});
TimelineResult computeTimeline(const ExplorerConfig& config);
ServingResult computeServing(const ExplorerConfig& config);
ValidationResult computeValidation(const ExplorerConfig& config);

// The explorer's name of a configuration's variant: "dense", "MoD", "MoE", "MoDE staged",
// "MoDE integrated".
std::string variantName(const sim::model_spec& model);

}  // namespace modsim::gui
