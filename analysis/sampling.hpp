#pragma once
// Sampling (decode) speed: the one decode step time every face shows, and the sampling map.
//
// decode_step_time is the step time of `modsim predict --mode decode`, `modsim simulate forward
// --mode decode`, `modsim sampling` and the explorer: the discrete-event step (sim/des/step.hpp:
// decode_load draws each token's routing at each routed layer, step_builder lists the kernels,
// simulate_execution runs them as a host enqueuing and a stream running), so it includes the
// routed-count round trips (sync), the launches and the GPU waiting on the host.
//
// The sampling map answers the paper's claim that MoD models step faster at sampling than their
// matched-quality dense baselines (the figure tested: 66 %, read as 1.5×): the MoD / baseline decode step-time ratio
// over a grid of batch × context, for each decode strategy (sync, pad, and pad + CUDA graphs on a GPU), with the step
// split into what it spends (decode_breakdown) and, per cell, the component that decides whether MoD reaches the target
// speed-up (1.5×: ratio ≤ 1/1.5). A cell whose step does not fit in the device's memory (the
// check of `modsim predict --mode decode`: sim::fits_in of sim::footprint_of — weights, the
// cell's KV cache and one decode step's activations) is marked and left out of the verdict.
//
// Library code: never prints.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.hpp"
#include "sim/cost/measured_sample.hpp"
#include "sim/cost/cost.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/step.hpp"
#include "sim/model/spec.hpp"

namespace modsim::analysis {

// Where a decode step's time goes, seconds; the parts sum to the step time exactly.
struct decode_breakdown {
  double kv_read_s = 0;      // attention over the KV cache: attn_scores, attn_softmax, attn_values
  double weight_read_s = 0;  // projections, MLP (up/gate/down), MoE experts, LM head: weight reads
  double predictor_s = 0;    // routing: the causal predictor (or router), top-k, gather, scatter
  double elementwise_s = 0;  // norms and the MLP activation
  double sync_s = 0;         // routed-count round trips: step − the same kernels without them
  double launch_host_s = 0;  // launches and the GPU waiting on the host: (step without syncs) − device time
  double total() const { return kv_read_s + weight_read_s + predictor_s + elementwise_s + sync_s + launch_host_s; }
};

enum class decode_component { kv_read, weight_read, predictor, elementwise, sync, launch_host };
inline constexpr decode_component decode_components[] = {decode_component::kv_read,   decode_component::weight_read,
                                                         decode_component::predictor, decode_component::elementwise,
                                                         decode_component::sync,      decode_component::launch_host};
// "kv_read", "weight_read", "predictor", "elementwise", "sync", "launch_host".
const char* to_string(decode_component c);
// "KV reads (attention)", "weight reads (projections, MLP, LM head)", ... for people.
const char* describe(decode_component c);
double part_of(const decode_breakdown& b, decode_component c);

struct decode_step_options {
  decode_routing routing = decode_routing::sync;
  std::optional<double> pad_capacity;  // empty: sim::des::pad_rows' default rule
  bool cuda_graph = false;
  std::uint64_t seed = 1;     // the routing draws
  bool record_spans = false;  // keep the timeline's spans (the explorer's and --trace's Gantt)
};

struct decode_step {
  sim::des::timeline timeline;  // the kernels and, with record_spans, the spans
  decode_breakdown breakdown;
  std::int64_t decisions = 0;  // routing decisions drawn
  std::int64_t routed = 0;     // tokens routed at routed layers (after padding drops)
  double step_s() const { return timeline.summary.step_s; }
};

// The device model decode steps are timed with: the calibration's decode fit where it has one
// (sim::decode_device_model), except that where `cost` prices attention as the calibration
// never measured it (cost_model::attention_measured false) the attention ops are `cost`'s own
// (the datasheet roofline of that implementation): the fit's attention rate is the measured
// kernels'.
sim::des::device_model decode_step_device(const sim::cost_model& cost, sim::dtype t);

// One decode step of `batch` sequences over `context` cached tokens. Throws
// modsim::error(bad_input) for batch < 1, context < 0 or a pad capacity outside (0, 1].
decode_step decode_step_time(const sim::des::step_builder& b, std::int64_t batch, std::int64_t context,
                             const decode_step_options& o);
decode_step decode_step_time(const sim::model_spec& model, const sim::cost_model& cost, sim::dtype t,
                             std::int64_t batch, std::int64_t context, const decode_step_options& o);

// The decode figure every face shows for one strategy: the mean step over `draws` routing draws
// (seeds o.seed, o.seed + 1, ...; a decode step is random), one draw when the model routes
// nowhere (nothing is drawn). The sampling map's cells, `modsim predict --mode decode`, `modsim
// simulate forward --mode decode` and the explorer's headline and Design space are this figure.
// Throws modsim::error(bad_input) as decode_step_time, and for draws < 1.
struct mean_decode {
  double step_s = 0;  // Σ step / draws, the draws summed in order
  decode_breakdown breakdown;
  int draws = 0;                   // the draws made
  std::vector<decode_step> steps;  // each draw's step, with keep_steps (else empty)
};
mean_decode mean_decode_step(const sim::des::step_builder& b, std::int64_t batch, std::int64_t context,
                             const decode_step_options& o, int draws, bool keep_steps = false);

// ---- the sampling map ----------------------------------------------------------------------

// A decode strategy: how the routed block is sized, and whether the step is a CUDA graph.
struct decode_strategy {
  decode_routing routing = decode_routing::sync;
  bool cuda_graph = false;
  std::string name() const;  // "sync", "pad", "pad+graphs", "sync+graphs"
  bool operator==(const decode_strategy&) const = default;
};

// A measured decode step (the lead fills these from measured CSV rows): the model's and the
// baseline's step time at one cell, seconds.
struct sampling_measurement {
  std::int64_t batch = 0, context = 0;
  decode_routing routing = decode_routing::sync;
  double model_s = 0, baseline_s = 0;
};

// The measured cells of `model` against `baseline` among measured rows: decode_step rows at one
// (batch, seq_len = context, routing) of a model shaped as `model` and of one shaped as
// `baseline` (the same dimensions, layers, vocabulary, MLP and routing; names are not compared,
// so a measured dense-60m stands for mod-60m with its routing removed). A baseline without
// routed layers pairs with every routing of the model's rows (it routes nothing); a graph row
// counts as pad. Rows of other ops or models are ignored; a cell measured twice keeps the
// first row.
std::vector<sampling_measurement> measured_cells(const std::vector<sim::measured_sample>& rows,
                                                 const sim::model_spec& model, const sim::model_spec& baseline);

struct sampling_request {
  std::vector<std::int64_t> batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  std::vector<std::int64_t> contexts = {256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
  // Empty: sync and pad, plus pad + graphs when the hardware is a GPU.
  std::vector<decode_strategy> strategies;
  std::optional<double> pad_capacity;  // empty: the default rule (pad_rows)
  std::uint64_t seed = 1;              // draws d use seed + d
  int draws = 8;                       // routing draws averaged per cell (a decode step is random)
  // "66 % faster" read as the MoD step taking at most 2/3 of the baseline's: 1.5×.
  double target_speedup = 1.5;
  unsigned threads = 0;                        // 0 = all hardware threads
  std::vector<sampling_measurement> measured;  // carried to the faces, may be empty
};

struct sampling_cell {
  std::int64_t batch = 0, context = 0;
  double model_s = 0, baseline_s = 0;  // mean step times over the draws, seconds
  decode_breakdown model, baseline;    // mean breakdowns
  double ratio() const { return baseline_s > 0 ? model_s / baseline_s : 0.0; }
  double speedup() const { return model_s > 0 ? baseline_s / model_s : 0.0; }
  bool reaches = false;  // ratio ≤ 1 / target
  // Whether both decode steps (the model's and the baseline's: the comparison needs both to run)
  // fit in the device's memory (sim::fits_in); needs_bytes is the larger of the two footprints.
  // A cell that does not fit is excluded from reached, best and the verdict.
  bool fits = true;
  double needs_bytes = 0;
  // The component that decides: not reached, the largest of model_i − baseline_i / target (what
  // keeps MoD above the target); reached, the smallest (where the saving comes from). Σ over the
  // components = model_s − baseline_s / target.
  decode_component dominant = decode_component::weight_read;
  double dominant_s = 0;  // its model_i − baseline_i / target, seconds
};

struct sampling_strategy_map {
  decode_strategy strategy;
  std::vector<sampling_cell> cells;  // batch-major: cells[b * contexts.size() + c]
  int reached = 0;                   // cells that fit and reach the target
  int excluded = 0;                  // cells that do not fit in memory
  int best = -1;                     // index of the largest speed-up among the cells that fit; -1: none fits
};

struct sampling_map {
  std::string model_name, baseline_name, hardware_name;
  bool baseline_is_routing_removed = true;  // the default baseline: the model with routing removed
  sim::dtype type = sim::dtype::bf16;
  double memory_bytes = 0;  // the device's memory the cells are checked against; 0: unknown (all fit)
  double target_speedup = 1.5;
  int draws = 0;
  std::optional<double> pad_capacity;  // as requested (empty: the default rule)
  std::vector<std::int64_t> batches, contexts;
  std::vector<sampling_strategy_map> strategies;
  std::vector<sampling_measurement> measured;
  std::vector<std::string> verdict;  // "where MoD reaches the target and why", one line per strategy
  const sampling_cell& cell(std::size_t strategy, std::size_t b, std::size_t c) const {
    return strategies[strategy].cells[b * contexts.size() + c];
  }
};

// The map of `model` against `baseline` on `cost` at dtype `t`, the cells checked against the
// hardware's memory_bytes with the attention `cost` prices. Throws modsim::error(bad_input)
// for an empty or non-positive axis, draws < 1 or a target ≤ 1.
sampling_map make_sampling_map(const sim::model_spec& model, const sim::model_spec& baseline, bool routing_removed,
                               const sim::cost_model& cost, sim::dtype t, const sampling_request& r);
// The device the map is made on: its step-time model, name, whether it is a GPU (pad + graphs
// join the default strategies), its memory (bytes; 0: unknown, every cell fits) and the
// attention the footprints are of.
struct sampling_device {
  sim::des::device_model model;
  std::string name;
  bool gpu = false;
  double memory_bytes = 0;
  attention_impl attention = attention_impl::unfused;
};
// The same on any device.
sampling_map make_sampling_map(const sim::model_spec& model, const sim::model_spec& baseline, bool routing_removed,
                               const sampling_device& dev, sim::dtype t, const sampling_request& r);

// The decode routing a serving scenario uses: the faster of sync and pad (eager, or with graphs
// when `cuda_graph`) at the cell nearest (batch, context), by measured step time when
// `measured` holds that cell for both, else by the map's prediction.
struct routing_choice {
  decode_routing routing = decode_routing::sync;
  decode_routing other = decode_routing::pad;
  double step_s = 0, other_step_s = 0;  // the chosen and the other strategy's step time, seconds
  std::int64_t batch = 0, context = 0;  // the cell it was decided at
  bool measured = false;                // decided by measurements
};
routing_choice choose_decode_routing(const sampling_map& map, std::int64_t batch, std::int64_t context, bool cuda_graph,
                                     const std::vector<sampling_measurement>& measured);

}  // namespace modsim::analysis
