#pragma once
// Plain result structs: what one computation of the explorer produces. The worker builds a
// ComputeResult off the GUI thread and emits it; each item model keeps a copy of its part.
// No Qt types and no behaviour here. Times are seconds, FLOPs are counts.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/sampling.hpp"
#include "analysis/training.hpp"
#include "sim/des/serving.hpp"
#include "sim/model/spec.hpp"
#include "sim/cost/validation.hpp"

namespace modsim::gui {

// The parts of a ComputeResult. The worker computes them one after the other: the headline's
// first, then the visible tab's, then the others (compute.hpp, computeParts).
enum ResultPart : unsigned {
  PredictionPart = 1u << 0,  // PredictionResult: the headline, the Layers tab
  SweepPart = 1u << 1,       // the Design space tab
  TimelinePart = 1u << 2,    // the Timeline tab
  ServingPart = 1u << 3,     // the Serving / sampling tab: the serving simulation
  SamplingPart = 1u << 4,    // ... and the sampling map
  ParallelPart = 1u << 5,    // the Parallelism tab
  ValidationPart = 1u << 6,  // the Validation tab
  TrainingPart = 1u << 7,    // the Training tab
};
using ResultParts = unsigned;  // a set of ResultPart bits
inline constexpr ResultParts kAllParts = (1u << 8) - 1;

// Times of one layer per op class (sim::op_classes() order, see PredictionResult::opClasses).
struct LayerTiming {
  int index = 0;
  bool routed = false;
  double capacity = 1.0;
  std::vector<double> currentS;  // per op class, the current configuration
  std::vector<double> denseS;    // per op class, the dense baseline
  double currentTotalS = 0;
  double denseTotalS = 0;
};

// One named term of the gap between the time ratio and the FLOP ratio (sim/cost/predict.hpp
// gap_decomposition), as a fraction of the dense step time: Σ terms = timeRatio − flopRatio.
struct GapTerm {
  std::string name;  // sim::gap_term::key
  double fraction = 0;
  std::string label;  // its chart label (sim::gap_term::chart)
  std::string why;    // what it is, for people (sim::gap_term::why, launch counts filled in)
};

struct PredictionResult {
  std::vector<std::string> opClasses;  // column order of LayerTiming::currentS / denseS
  std::vector<LayerTiming> layers;
  double lmHeadS = 0;
  double denseLmHeadS = 0;
  double totalS = 0;       // whole step incl. launch overhead
  double denseTotalS = 0;  // the dense baseline, same workload and hardware
  double overheadS = 0;    // launch / enqueue overhead included in totalS
  double denseOverheadS = 0;
  std::int64_t matmulFlops = 0;
  std::int64_t denseMatmulFlops = 0;
  std::int64_t bytes = 0;
  std::int64_t denseBytes = 0;
  std::int64_t params = 0;
  std::string costLabel;  // "datasheet roofline ..." or "calibrated on ..."
  std::string hardwareName;
  std::string baselineName;  // analysis::baseline_label: "dense-220m", or "<model> without routing"
  // Why the baseline is not the model's own (chosen by the user, kept from the design space);
  // empty when it is.
  std::string baselineWhy;
  // The calibration's cross-validated error (percent, p90 and median); 0 = none recorded.
  double expectedP90Pct = 0;
  double expectedMedianPct = 0;
  // The band where this prediction stands (sim::error_band::short_text); empty without one.
  std::string bandText;
  // How attention was priced ("fused" / "unfused") and whether the calibration measured it.
  std::string attention;
  bool attentionMeasured = false;
  bool calibrated = false;
  double flopRatio = 1;            // (matmul + other) FLOPs, current / dense
  double timeRatio = 1;            // totalS / denseTotalS
  std::vector<GapTerm> gap;        // empty when the predictor gives no decomposition
  std::vector<std::string> notes;  // the predictor's remarks (uncalibrated ops, ...)
  // "does not fit in 80 GB: ..." when the step's footprint exceeds the hardware's memory
  // (sim/model/memory.hpp); empty when it fits.
  std::string memoryVerdict;
  // Decode: the strategy the figures are of ("pad+graphs"), how it was chosen and over how many
  // routing draws ("fastest of sync/pad/pad+graphs; mean of 8 routing draws") and the
  // candidates' steps, for people.
  std::string decodeStrategy, decodeStrategyLabel, decodeCandidates;
};

// One configuration of the design-space sweep.
struct SweepPoint {
  double capacity = 1.0;
  std::string schedule;  // "every_other", "every_nth:4", "custom", "none"
  std::string variant;   // "dense", "MoD", "MoE", "MoDE staged", "MoDE integrated"
  std::int64_t matmulFlops = 0;
  double timeS = 0;
  bool pareto = false;    // on the (FLOPs, time) Pareto front
  bool current = false;   // the configuration the explorer shows
  sim::model_spec model;  // the whole configuration, to adopt it
};

struct SweepResult {
  bool available = false;
  std::string unavailable;  // why not, when !available
  std::vector<SweepPoint> points;
  std::int64_t denseMatmulFlops = 0;
  double denseTimeS = 0;
  std::string baselineName;  // the baseline of the ratios (PredictionResult's)
  bool decode = false;       // the points are decode steps
  std::string strategy;      // decode: the strategy of every point (PredictionResult::decodeStrategy)
};

struct TimelineSpan {
  int lane = 0;  // index into TimelineResult::lanes
  std::string name;
  std::string opClass;  // sim::op_class_of, "launch" for host work, or empty
  double startS = 0;
  double endS = 0;
};

struct TimelineResult {
  bool available = false;
  std::string unavailable;
  std::vector<std::string> lanes;  // "host", "stream 0", ...
  std::vector<TimelineSpan> spans;
  double makespanS = 0;
};

// One serving run: its summary (the figures of sim/des/serving_fields.hpp) and the per-request
// samples behind its latency charts.
struct ServingStats {
  sim::des::serve_summary summary;
  std::vector<double> ttftSamplesS;  // one per completed request, when the simulator gives them
  std::vector<double> tpotSamplesS;
};

struct ServingResult {
  bool available = false;
  std::string unavailable;
  std::string scenario;      // the simulated workload, for people
  std::string baselineName;  // PredictionResult's: the model `dense` served
  ServingStats dense;
  ServingStats current;
};

// The sampling map (analysis/sampling.hpp): MoD / baseline decode step time over batch × context
// per decode strategy, and the decode routing the serving simulation chose from it.
struct SamplingResult {
  bool available = false;
  std::string unavailable;
  analysis::sampling_map map;
  std::string servingRouting;  // the serving routing kept and why (serving_routing_choice::why); may be empty
  // The strategy the headline and the Design space show (decode), or the user's choice; the map
  // opens on it. Empty: none (the map opens on the strategy with the most cells at the target).
  std::string headlineStrategy;
};

struct ValidationRow {
  std::string op;     // block_dense, block_mod, layer_mode
  std::string shape;  // "B=1 S=2048 d=1024 c=0.125", for people
  double measuredS = 0;
  double predictedS = 0;
  double errorPct = 0;  // signed, (predicted - measured) / measured * 100
};

struct ValidationResult {
  bool available = false;
  std::string unavailable;
  std::string file;       // the measurements CSV
  std::string costLabel;  // the cost model the predictions come from
  std::vector<std::string> notes;
  std::vector<ValidationRow> rows;
  sim::validation_summary summary;  // of the rows (sim/cost/validation_fields.hpp names its figures)
  // Cross-validated (folds > 0): the op rows' errors, predicted the same way.
  int folds = 0;
  sim::validation_summary opSummary;
};

// One split of the GPUs (sim/parallel/parallel_predict.hpp): its step for the model and its baseline.
struct ParallelRow {
  std::string split;  // "TP 2 × PP 1 × DP 4"
  int tp = 1, pp = 1, dp = 1, ep = 1, microBatches = 1;
  double stepS = 0;
  double baselineStepS = 0;  // 0 when the baseline cannot take the split
  double computeS = 0;
  double commS = 0;  // communication the next op waits for (TP, EP, PP sends, DP exposed)
  double bubbleS = 0;
  double memoryBytes = 0;  // per GPU
  bool fits = true;        // in the hardware's memory
  bool chosen = false;     // the split detailed (the fastest that fits)
};

struct ParallelResult {
  bool available = false;
  std::string unavailable;
  int gpus = 0;
  std::vector<ParallelRow> rows;  // every split of `gpus` GPUs, those that fit first, fastest first
  ParallelRow chosen;             // the model on the split detailed
  ParallelRow chosenBaseline;     // its baseline on the same split
  std::vector<int> stageFirstLayer;
  std::vector<double> stageS, naiveStageS;  // per stage, one micro-batch
  std::string baselineName;
  std::vector<std::string> notes;
};

// The Training tab (analysis/training.hpp): one training step of the model and its baseline
// (in any mode: the workload's batch and sequence trained), at equal FLOPs and at the budget.
struct TrainingResult {
  bool available = false;
  std::string unavailable;
  analysis::training_section training;
  bool asTrained = false;  // the workload is not a training step: its batch and sequence were trained
};

struct ComputeResult {
  std::uint64_t generation = 0;
  std::string error;  // non-empty: the computation failed with this message (modsim::error)
  // The parts that hold this configuration's figures (the others are not computed yet: their
  // structs are empty), and those this result brought over the previous one of its generation.
  // A failed computation has every part computed and updated (each shows `error`).
  ResultParts computed = 0;
  ResultParts updated = 0;
  bool complete() const { return (computed & kAllParts) == kAllParts; }
  sim::model_spec model;
  sim::workload load;
  PredictionResult prediction;
  SweepResult sweep;
  TimelineResult timeline;
  ServingResult serving;
  SamplingResult sampling;
  ParallelResult parallel;
  ValidationResult validation;
  TrainingResult training;
  double computeMs = 0;  // wall-clock of the computation of the parts computed so far
};

using ComputeResultPtr = std::shared_ptr<const ComputeResult>;

}  // namespace modsim::gui
