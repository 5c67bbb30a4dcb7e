#pragma once
// The paper's training claim ("match baseline performance for equivalent FLOPs and wall-clock
// times to train") answered for a model, its baseline and a piece of hardware: one training step
// of each (time, tokens/s, MFU, memory per GPU), the wall-clock the model takes for the FLOPs its
// baseline takes, where the difference comes from, and for a training FLOP budget the steps,
// tokens and wall-clock of each. `modsim predict --mode train`, the report's Training section and
// the explorer's Training tab show this one answer (analysis::analyze, scenario::training).
//
// FLOPs: the budget and MFU count model FLOPs, docs/flops.md's convention: 3 × the forward pass's
// matmul FLOPs (2 per multiply-add, the full attention square, the router and the LM head
// included), whatever recomputation runs again; not 6·N·tokens, which counts parameters and so
// gives MoD and its baseline the same FLOPs per token.
//
// Where the difference comes from: with τ = T_model / T_baseline (step times), ρ the ratio of the
// FLOPs the steps run (matmul + other: elementwise, recomputation, the optimizer) and ρ_m the
// ratio of model FLOPs, the wall-clock ratio at equal model FLOPs is τ / ρ_m, and
//   τ / ρ_m − 1 = Σ_terms (term of sim::decompose_gap on the training steps) / ρ_m + (ρ − ρ_m) / ρ_m
// exactly: each term of the step's gap (τ − ρ, sim/cost/predict.hpp), the optimizer's taken out of
// memory-bound ops, divided by ρ_m, and the last term for the FLOPs the budget does not count.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/cost/predict.hpp"
#include "sim/model/memory.hpp"
#include "sim/model/spec.hpp"

namespace modsim::analysis {

struct training_request {
  // A training budget in model FLOPs (the convention above); empty: no budget answer.
  std::optional<double> flop_budget;
};

// `flops` when it is a finite number > 0; else modsim::error(bad_input) naming `key`
// ("--flop-budget").
double checked_flop_budget(double flops, const std::string& key);

// One model's training step on one GPU holding the whole batch.
struct training_step {
  std::string name;   // the model's name (the baseline's label for the baseline)
  double step_s = 0;  // predicted step time, seconds (launch overhead included)
  // Of step_s: the ops' forward, backward and recomputation, the optimizer step, launches.
  double forward_s = 0, backward_s = 0, recompute_s = 0, optimizer_s = 0, overhead_s = 0;
  std::int64_t tokens = 0;         // tokens per step: batch × sequence
  double tokens_per_s = 0;         // tokens / step_s
  std::int64_t model_flops = 0;    // model FLOPs per step (the convention above)
  std::int64_t counted_flops = 0;  // matmul + other FLOPs the step runs (what its time prices)
  double mfu = 0;                  // model_flops / (step_s × the dtype's peak matmul FLOP/s); 0 without a peak
  sim::memory_footprint memory;    // what the step keeps on the GPU (sim/model/memory.hpp)
  std::string memory_verdict;      // empty when it fits in the hardware's memory
};

// One source of the wall-clock difference at equal model FLOPs (see above).
struct training_source {
  std::string key;    // routing, launch, gemm_efficiency, attention, memory_bound, optimizer,
                      // wave_quantisation, flop_count
  std::string label;  // for people
  double value = 0;   // a fraction of the baseline's wall-clock
  std::string why;    // one line for people
};

// The budget answer: budget / model FLOPs per step steps of each (not rounded).
struct training_budget {
  double flops = 0;  // model FLOPs
  double model_steps = 0, baseline_steps = 0;
  double model_tokens = 0, baseline_tokens = 0;  // steps × tokens per step
  double model_wall_s = 0, baseline_wall_s = 0;  // steps × step time, seconds
};

struct training_section {
  sim::workload load;  // the training step's workload (run = train)
  training_step model, baseline;
  bool calibrated = false;
  double time_ratio = 1;        // step time, model / baseline (τ)
  double flop_ratio = 1;        // FLOPs the steps run, model / baseline (ρ)
  double model_flop_ratio = 1;  // model FLOPs per step, model / baseline (ρ_m)
  // Wall-clock for equal model FLOPs, model / baseline: τ / ρ_m (1: the claim holds).
  double wall_ratio = 1;
  // Σ value = wall_ratio − 1.
  std::vector<training_source> sources;
  std::optional<training_budget> budget;
  // How the step was priced, for people: the FLOP convention, the backward, attention's
  // backward, the optimizer, the memory's scope.
  std::string flop_convention, backward, attention_backward, optimizer, memory_scope;
  // The backward priced by the calibration's backward fit (sim::prediction::backward), not the rule.
  bool backward_fitted = false;
  // The AdamW step priced by the calibration's optimizer fit (sim::prediction::fitted_optimizer).
  bool optimizer_fitted = false;
};

// The training section of `model` against `baseline` from their training steps' prediction
// (`p`, sim::predict with p.load.run == train), and the memory of each under p.load with
// `attention` on `hardware`. Throws modsim::error(bad_input) for a bad budget.
training_section make_training(const sim::prediction& p, const sim::model_spec& model, const sim::model_spec& baseline,
                               const std::string& baseline_name, const sim::hardware_spec& hardware,
                               attention_impl attention, const training_request& request);

}  // namespace modsim::analysis
