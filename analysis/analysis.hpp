#pragma once
// The one analysis every face of modsim shows: `modsim flops/predict/sweep/simulate/validate`,
// `modsim report` and modsim-gui all call analyze(), so one configuration gives one set of
// numbers wherever it is read. A face chooses the parts it needs (scenario) and formats the
// analysis_result; it computes nothing itself.
//
// Parts, each from one library function:
//   flops       sim::evaluate_flops of the model and of its dense baseline, class roll-up;
//   prediction  sim::predict on the hardware's cost model, class roll-up with times;
//   sweep       sim::run_sweep over a space (default: default_sweep_space) with the current
//               configuration marked (added as a point when the space does not hold it);
//   variants    dense, MoD, MoE, MoDE staged/integrated at the model's routing;
//   timeline    one step (forward, train or decode) through the discrete-event executor;
//   sampling    the sampling map: MoD / baseline decode step time over batch × context
//               (analysis/sampling.hpp);
//   serving     the model and its dense baseline under one scenario (sim/des/comparison.hpp);
//   training    one training step of the model and its baseline, at equal FLOPs and at a FLOP
//               budget (analysis/training.hpp), in any mode;
//   validation  measured blocks against the cost model (analysis/validation.hpp).
// Library code: never prints; progress and cancellation go through `control`.
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/sampling.hpp"
#include "analysis/training.hpp"
#include "analysis/validation.hpp"
#include "sim/model/memory.hpp"
#include "sim/parallel/parallel_predict.hpp"
#include "sim/des/comparison.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/serving.hpp"
#include "sim/model/flops.hpp"
#include "sim/cost/predict.hpp"
#include "sim/model/rollup.hpp"
#include "sim/model/spec.hpp"
#include "sim/cost/sweep.hpp"

namespace modsim::analysis {

// What is analysed: one model under one workload, on one piece of hardware (needed by every
// part but `flops`).
struct configuration {
  sim::model_spec model;
  sim::workload load;
  std::optional<sim::hardware_spec> hardware;
  // The baseline every "vs dense" compares with: a matched-quality dense model (--baseline), or
  // empty for the model with its routing removed (sim::dense_baseline).
  std::optional<sim::model_spec> baseline = std::nullopt;
  // How attention runs (--attention fused|unfused): every part prices it so (the validation
  // part excepted: it compares with measured rows, priced as they ran). Empty: the hardware's
  // default (sim::default_attention: fused on a GPU, unfused on a CPU). Where the hardware's
  // calibration measured the other implementation, the attention ops are the datasheet
  // roofline and the prediction has no band (sim::cost_model, sim::predict).
  std::optional<attention_impl> attention = std::nullopt;
};

// The attention implementation `c` is priced with (c.attention, else the hardware's default;
// the GPU default without hardware).
attention_impl attention_of(const configuration& c);

// The configuration's baseline: c.baseline, else sim::dense_baseline(c.model).
sim::model_spec baseline_of(const configuration& c);
// "dense-220m" (a --baseline), or "<model> without routing".
std::string baseline_label(const configuration& c);

// The sweep around the configuration.
struct sweep_request {
  std::optional<sim::sweep_space> space;  // empty = default_sweep_space(model)
  bool add_current = true;                // append the configuration when the space does not hold it
  unsigned threads = 0;                   // 0 = all hardware threads
  sim::sweep_axis x_axis = sim::sweep_axis::matmul_flops;
  sim::sweep_axis y_axis = sim::sweep_axis::time_s;
  // Time every point as one step over these GPUs (sim/parallel/parallel_predict.hpp step_s) instead of
  // one device; a point the split does not fit is infeasible with the reason.
  std::optional<sim::parallel_spec> split;
};

// One step through the discrete-event executor (`modsim simulate forward`, the explorer's
// timeline). In decode mode the same options time the prediction's step (decode_step_time), so
// `modsim predict --mode decode` and `modsim simulate forward --mode decode` give one number.
//
// Decode: the step is the mean over `draws` routing draws (mean_decode_step: seeds seed, seed + 1,
// ...), the sampling map's cell; the timeline shown is the first draw. With `fastest` (the
// default) the decode strategy is the fastest of sync, pad and, on a GPU, pad + graphs for the
// model at the configuration's cell (decode_choice); routing and cuda_graph are then ignored in
// decode mode. Without it, routing and cuda_graph are the strategy (the user's choice).
struct timeline_request {
  bool cuda_graph = false;
  sim::des::decode_routing routing = sim::des::decode_routing::sync;
  std::optional<double> pad_capacity;  // empty: sim::des::pad_rows' default rule
  std::uint64_t seed = 1;              // decode routing draws: the first seed
  int draws = 8;                       // decode routing draws averaged (sampling_request::draws)
  bool fastest = true;                 // decode: choose the fastest strategy (see above)
  // The step over several GPUs (sim/des/parallel_step.hpp): the kernels of one data-parallel
  // replica's pipeline, collectives on streams of their own. Absent or one GPU: one device.
  std::optional<sim::parallel_spec> split;
  decode_step_options decode_options() const;
};

// One decode strategy evaluated at the configuration's cell (decode_choice).
struct decode_strategy_figure {
  decode_strategy strategy;
  double model_s = 0, baseline_s = 0;  // mean steps over the draws (mean_decode_step), seconds
  bool applies = true;                 // false: not evaluated, `why_not` says why
  std::string why_not;
};
// The decode strategy every decode figure of one analysis shows (the prediction, the timeline,
// the Design space; the sampling map shows it among the others), and the candidates beside it.
struct decode_strategy_choice {
  decode_strategy strategy;  // the one shown
  bool fastest = false;      // chosen as the fastest candidate; false: the user's choice
  int draws = 0;             // routing draws averaged (the model's; 1 when it routes nowhere)
  std::uint64_t seed = 1;    // the first draw's seed
  // sync, pad, pad + graphs (not applying on a CPU), plus the user's strategy when it is none of them.
  std::vector<decode_strategy_figure> candidates;
  std::string rule;                // "fastest of sync/pad/pad+graphs" or "the user's choice (...)"
  std::vector<std::string> notes;  // strategies that cannot apply or do not differ, and why
  // "pad+graphs (fastest of sync/pad/pad+graphs; mean of 8 routing draws)": the label faces show.
  std::string label() const;
};

// What a timeline over several GPUs ran (analysis_result::timeline_parallel).
struct parallel_timeline {
  sim::parallel_spec split;      // micro-batches resolved
  std::vector<int> first_layer;  // per stage (device)
  std::int64_t micro_batch = 0;  // sequences per micro-batch
  double predicted_step_s = 0;   // sim::predict_parallel's closed form of the same split
};

// One decode routing the model was served with (serving_request::fastest_routing).
struct serving_routing_trial {
  decode_routing routing = decode_routing::sync;
  double tpot_p50_s = 0;         // the model's TPOT p50, seconds
  std::int64_t dropped = 0;      // routed tokens dropped (pad: over the padded size)
  double mean_decode_batch = 0;  // decode sequences per step, the batches the routing ran at
};
struct serving_routing_choice {
  decode_routing routing = decode_routing::sync;  // the run kept
  std::vector<serving_routing_trial> trials;      // in the order tried
  std::string why;                                // "the lower TPOT p50 with no dropped tokens (…)"
};
// The trial kept: among the trials with no dropped tokens (all trials when every one drops),
// the lowest TPOT p50; a tie keeps the earlier. Throws modsim::error(runtime) when empty.
serving_routing_choice choose_serving_routing(std::vector<serving_routing_trial> trials);

// The serving pair.
struct serving_request {
  sim::des::serving_scenario scenario;
  // Explicit requests (an arrivals trace) instead of the scenario's Poisson draws.
  std::optional<std::vector<sim::des::request>> arrivals;
  bool dense = true;  // also serve the dense baseline (the pair); false: the model only
  // Instead of scenario.options.routing, serve the model with each decode routing (sync, then
  // pad) on the same requests and keep the run with no dropped tokens and the lower TPOT p50
  // (choose_serving_routing); the runs tried and the choice are analysis_result::serving_routing.
  bool fastest_routing = false;
  // Observers of the model's run only (a trace); the dense run is not observed.
  std::vector<sim::des::serve_observer*> observers;
  // Observers of every run (the dense baseline's first when `dense`, then each routing tried with
  // fastest_routing: 1 + 2 runs) (a progress display). Not
  // owned.
  std::vector<sim::des::serve_observer*> progress;
};

// Where the validation's measurements come from.
struct validation_request {
  enum class source {
    none,          // no validation; `missing` says why
    hardware,      // the measurements behind the hardware's calibration (validation_for_hardware)
    measurements,  // `points`, against `hardware` (default: the configuration's)
  };
  source from = source::none;
  std::vector<sim::measured_sample> points;
  std::string label;  // the measurements' file name(s), shown
  std::optional<sim::hardware_spec> hardware;
  bool calibrate = true;  // an uncalibrated hardware is first fitted on the single-op rows
  std::string missing;    // why there is no validation (source::none)
};

// What to compute. `flops` is always computed.
// The model over several GPUs (sim/parallel/parallel_predict.hpp): one split, and with `gpus` > 0 every
// split of that many GPUs ranked; a split of one GPU with `gpus` > 0 details the ranking's first
// (the fastest that fits in memory).
struct parallel_request {
  sim::parallel_spec split;
  int gpus = 0;
  // The split is the question asked (`modsim predict --tp ...`): the memory footprint, its
  // verdict and the prediction's memory note are the split's, per GPU. Otherwise (the report,
  // the explorer: the split is a section beside a one-GPU headline) they stay one GPU's.
  bool headline = false;
};

struct parallel_section {
  sim::parallel_prediction model, baseline;                         // the split, for the model and its baseline
  std::vector<sim::parallel_prediction> best_model, best_baseline;  // with gpus > 0, fastest first
  // The same step on one GPU holding the whole batch (the same accounting: launch overhead,
  // memory), so that a split can be said to be faster or slower than no split at all.
  sim::parallel_prediction one_gpu_model, one_gpu_baseline;
  int gpus = 0;

  // The baseline's step on `split` among best_baseline; 0 when the baseline cannot take it.
  double baseline_step_s(const sim::parallel_spec& split) const {
    for (const sim::parallel_prediction& q : best_baseline)
      if (sim::same_split(q.split, split)) return q.step_s;
    return 0;
  }
};

struct scenario {
  bool prediction = true;
  std::optional<parallel_request> parallel;
  std::optional<sweep_request> sweep;
  bool variants = false;
  // The timeline; in decode mode also how the prediction's step runs (absent: `decode`).
  std::optional<timeline_request> timeline;
  // Decode mode without a timeline: how the prediction's and the sweep's steps run (the strategy
  // and the routing draws); absent: timeline_request's defaults (the fastest strategy).
  std::optional<timeline_request> decode;
  std::optional<sampling_request> sampling;
  std::optional<serving_request> serving;
  // The training answer (analysis/training.hpp): in train mode of the prediction's step, in
  // another mode of a training step at the workload's batch and sequence (context in decode).
  std::optional<training_request> training;
  validation_request validation;
  // When true, a part that fails with modsim::error records why in its `*_missing` and the
  // others go on (the explorer); when false the error propagates (the command line).
  bool parts_may_fail = false;
};

// Steering a long analysis. Either may be empty.
struct control {
  std::function<bool()> cancelled;                                // polled between and inside parts
  std::function<void(int percent, const std::string&)> progress;  // 0..100, what runs now
};

// Thrown by analyze() when control.cancelled() returned true.
struct cancelled : std::exception {
  const char* what() const noexcept override { return "cancelled"; }
};

struct sweep_section {
  sim::sweep_result result;  // the space, plus the current configuration when added
  int current = -1;          // index of the configuration's point in result.points
};

struct variants_section {
  sim::sweep_result result;  // dense, MoD, MoE, MoDE staged, MoDE integrated
  std::vector<std::string> notes;
};

struct analysis_result {
  configuration config;
  std::string cost_label;  // cost_model::label() (empty without hardware)
  // How attention was priced (attention_of(config)) and whether the hardware's calibration
  // measured it (cost_model::attention_measured; false uncalibrated or without hardware).
  attention_impl attention = attention_impl::fused;
  bool attention_measured = false;
  // flops: the model and its dense baseline, and their class roll-up.
  sim::flops_report flops, dense_flops;
  std::vector<sim::class_rollup> flop_classes;
  // What the step keeps in device memory (with hardware), and the sentence saying it does not
  // fit in the hardware's memory_bytes (empty when it fits). With a parallel split asked as the
  // headline (parallel_request::headline) these are the split's, per GPU; memory_scope says which.
  std::optional<sim::memory_footprint> memory;
  std::string memory_verdict;
  std::string memory_scope = "one GPU";
  // prediction (with its class roll-up, times included).
  std::optional<sim::prediction> prediction;
  std::vector<sim::class_rollup> time_classes;
  std::string prediction_missing;
  std::optional<sweep_section> sweep;
  std::string sweep_missing;
  std::optional<variants_section> variants;
  std::string variants_missing;
  std::optional<sim::des::timeline> timeline;
  std::int64_t decode_decisions = 0, decode_routed = 0;  // decode timeline: routing draws
  std::optional<decode_breakdown> decode;                // decode timeline: where the step goes
  // Decode mode with a prediction, timeline, sweep or sampling map: the strategy the first three
  // show (the map shows every strategy) and the candidates.
  std::optional<decode_strategy_choice> decode_choice;
  std::optional<parallel_timeline> timeline_parallel;  // a timeline over several GPUs
  std::string timeline_missing;
  std::optional<sampling_map> sampling;
  std::string sampling_missing;
  std::optional<parallel_section> parallel;
  std::string parallel_missing;
  // serving: the scenario (rate resolved), the dense baseline's run (when asked for) and the
  // model's, each with its per-request records.
  std::optional<sim::des::serving_comparison> serving;
  std::optional<serving_routing_choice> serving_routing;  // serving_request::fastest_routing: the runs, the choice
  std::string serving_missing;
  std::optional<validation_section> validation;
  std::string validation_missing;
  std::optional<training_section> training;
  std::string training_missing;
};

// In decode mode `prediction.model` and `prediction.dense` (the baseline) are the discrete-event
// decode step (decode_step_time with the scenario's timeline options): per layer the kernels'
// device times, lm_head its kernel, overhead_s the rest of the step (launches, the GPU waiting on
// the host, routed-count syncs), total_s the step time.
//
// Computes the parts `s` asks for. Throws modsim::error(bad_input) for an invalid
// configuration (or a failing part unless s.parts_may_fail), `cancelled` when asked to stop.
analysis_result analyze(const configuration& c, const scenario& s, const control& ctl = {});

// The sweep space the faces show by default: sim::default_space(model) plus the model's own
// capacity and schedule, so that the configuration is one of its points.
sim::sweep_space default_sweep_space(const sim::model_spec& model);

// The variant comparison's space: the five variants at the model's capacity and schedule (the
// paper's 12.5 % every other layer, with a note, when the model has no routing).
sim::sweep_space variant_space(const sim::model_spec& model, std::vector<std::string>* notes = nullptr);

// The decode cell that stands for a serving scenario, as des::sustainable_rate sizes it: a batch of
// min(64, max_seqs) sequences over the mean prompt plus half the mean output.
struct decode_cell {
  std::int64_t batch = 1, context = 1;
};
decode_cell serving_decode_cell(const sim::des::serving_scenario& s);

// The capacity and schedule a configuration is shown with: the first routed layer's capacity
// (1 without routing) and its schedule's name ("none", a preset, or "custom").
double capacity_of(const sim::model_spec& model);
std::string schedule_of(const sim::model_spec& model);

}  // namespace modsim::analysis
