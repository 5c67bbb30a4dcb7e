#include "gui/core/compute.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <type_traits>

#include "analysis/analysis.hpp"
#include "analysis/calibration.hpp"
#include "core/error.hpp"
#include "sim/des/step.hpp"

namespace modsim::gui {
namespace {

std::vector<std::string> displayClasses() {
  std::vector<std::string> out;
  for (std::string_view c : sim::op_classes())
    if (c != "block") out.emplace_back(c);
  return out;
}

std::vector<double> perClass(const sim::layer_prediction& layer, const std::vector<std::string>& classes) {
  std::vector<double> out(classes.size(), 0.0);
  for (const sim::op_prediction& op : layer.ops) {
    const auto it = std::find(classes.begin(), classes.end(), op.op_class);
    if (it != classes.end()) out[static_cast<std::size_t>(it - classes.begin())] += op.time_s;
  }
  return out;
}

// The one name of the baseline every ratio compares with (analysis::baseline_label): a chosen
// model's name, or "<model> without routing" (for an MoE model the MoE without MoD routing,
// analysis::baseline_of). Every tab shows this name.
std::string baselineNameOf(const analysis::configuration& c) { return analysis::baseline_label(c); }

// Why the baseline is not the model's own, for people; empty when it is.
std::string baselineWhyOf(const ExplorerConfig& config) {
  switch (config.baselineOrigin) {
    case ExplorerConfig::BaselineOrigin::Chosen:
      return "chosen in the Baseline box, not the model's own; it stays until another model is opened";
    case ExplorerConfig::BaselineOrigin::DesignSpace:
      return std::string("kept from the design space the point was adopted from (") +
             (config.keptBaselineMoe ? "an MoE without MoD routing" : "a dense MLP") +
             "), so that the point reads the ratio it read there; the model's own baseline is " +
             analysis::baseline_label(
                 analysis::configuration{config.model, config.load, config.hardware, std::nullopt, config.attention});
    case ExplorerConfig::BaselineOrigin::Model:
      break;
  }
  return {};
}

analysis::configuration configurationOf(const ExplorerConfig& config) {
  return analysis::configuration{config.model, config.load, config.hardware, config.baseline, config.attention};
}

// The explorer's validation: the chosen measurements file (an uncalibrated hardware file is
// first calibrated on its single-op rows, never on the blocks it scores), else the
// measurements behind the hardware's calibration, as `modsim report` does.
analysis::validation_request validationRequestOf(const ExplorerConfig& config) {
  analysis::validation_request v;
  if (config.measurementsPath.isEmpty()) {
    v.from = analysis::validation_request::source::hardware;
  } else {
    v.from = analysis::validation_request::source::measurements;
    v.label = config.measurementsPath.toStdString();
    v.points = analysis::read_measured_rows({v.label}).points;
    v.calibrate = true;
  }
  return v;
}

// How the configuration's decode steps run: the user's strategy (the sampling map's choice), else
// the fastest (analysis::timeline_request::fastest); the routing draws are the map's.
analysis::timeline_request decodeRequestOf(const ExplorerConfig& config) {
  analysis::timeline_request q;
  // Forward and training timelines stay eager: the strategy is a decode step's.
  if (config.decodeStrategy.empty() || config.load.run != sim::run_mode::decode) return q;
  const std::string& n = config.decodeStrategy;
  q.fastest = false;
  q.cuda_graph = n.size() > 7 && n.compare(n.size() - 7, 7, "+graphs") == 0;
  q.routing = n.rfind("pad", 0) == 0 ? decode_routing::pad : decode_routing::sync;
  return q;
}

// "sync 752.8 µs, pad 666.9 µs, pad+graphs 166.6 µs; pad+graphs does not apply: ..."
std::string candidatesText(const analysis::decode_strategy_choice& ch) {
  std::string out;
  for (const analysis::decode_strategy_figure& f : ch.candidates)
    if (f.applies)
      out += fmt::format("{}{} {:.1f} µs (×{:.3f})", out.empty() ? "" : ", ", f.strategy.name(), f.model_s * 1e6,
                         f.baseline_s > 0 ? f.model_s / f.baseline_s : 0.0);
  for (const std::string& n : ch.notes) out += "; " + n;
  return out;
}

PredictionResult predictionOf(const analysis::analysis_result& r) {
  const sim::prediction& p = *r.prediction;
  PredictionResult out;
  out.opClasses = displayClasses();
  out.costLabel = p.cost_label;
  out.hardwareName = r.config.hardware->name;
  // The baseline every ratio compares with (the design space's ratios use the same one).
  out.baselineName = baselineNameOf(r.config);
  out.memoryVerdict = r.memory_verdict;
  out.attention = modsim::to_string(p.attention);
  out.attentionMeasured = p.attention_measured;
  out.calibrated = p.calibrated;
  if (p.expected_error) {
    out.expectedP90Pct = p.band ? p.band->p90_pct : p.expected_error->p90_abs_pct_error;
    out.expectedMedianPct = p.expected_error->median_abs_pct_error;
    if (p.band) out.bandText = p.band->short_text();
  }
  for (std::size_t i = 0; i < p.model.layers.size(); ++i) {
    const sim::layer_prediction& cur = p.model.layers[i];
    LayerTiming l;
    l.index = cur.index;
    l.routed = cur.routed;
    l.capacity = cur.capacity;
    l.currentS = perClass(cur, out.opClasses);
    l.currentTotalS = cur.time_s;
    if (i < p.dense.layers.size()) {
      l.denseS = perClass(p.dense.layers[i], out.opClasses);
      l.denseTotalS = p.dense.layers[i].time_s;
    } else {
      l.denseS.assign(out.opClasses.size(), 0.0);
    }
    out.layers.push_back(std::move(l));
  }
  out.lmHeadS = p.model.lm_head.time_s;
  out.denseLmHeadS = p.dense.lm_head.time_s;
  out.totalS = p.model.total_s;
  out.denseTotalS = p.dense.total_s;
  out.overheadS = p.model.overhead_s;
  out.denseOverheadS = p.dense.overhead_s;
  out.matmulFlops = r.flops.totals.matmul_flops;
  out.denseMatmulFlops = r.dense_flops.totals.matmul_flops;
  out.bytes = p.model.bytes;
  out.denseBytes = p.dense.bytes;
  out.params = r.flops.params;
  out.flopRatio = p.flop_ratio;
  out.timeRatio = p.time_ratio;
  for (const sim::gap_term& t : sim::gap_terms())
    out.gap.push_back({t.key, p.gap.*t.value, t.chart,
                       fmt::format(fmt::runtime(t.why), fmt::arg("launches", p.model.kernels),
                                   fmt::arg("dense_launches", p.dense.kernels))});
  out.notes = p.notes;
  if (r.decode_choice && p.load.run == sim::run_mode::decode) {
    out.decodeStrategy = r.decode_choice->strategy.name();
    out.decodeStrategyLabel = fmt::format("{}; mean of {} routing draw{}", r.decode_choice->rule,
                                          r.decode_choice->draws, r.decode_choice->draws == 1 ? "" : "s");
    out.decodeCandidates = candidatesText(*r.decode_choice);
  }
  return out;
}

SweepResult sweepOf(const analysis::sweep_section& s, const analysis::configuration& c,
                    const std::optional<analysis::decode_strategy_choice>& strategy) {
  SweepResult out;
  out.available = true;
  out.baselineName = baselineNameOf(c);
  out.decode = c.load.run == sim::run_mode::decode;
  if (out.decode && strategy) out.strategy = strategy->strategy.name();
  out.denseTimeS = s.result.dense_time_s;
  out.denseMatmulFlops = s.result.dense_matmul_flops;
  out.points.reserve(s.result.points.size());
  for (std::size_t i = 0; i < s.result.points.size(); ++i) {
    const sim::sweep_point& sp = s.result.points[i];
    if (!sp.feasible) continue;
    SweepPoint p;
    p.capacity = sp.capacity;
    p.schedule = sp.schedule;
    p.variant = sim::display_name(sp.variant);
    p.matmulFlops = sp.matmul_flops;
    p.timeS = sp.time_s;
    p.pareto = sp.pareto;
    p.current = static_cast<int>(i) == s.current;
    p.model = sp.model;
    out.points.push_back(std::move(p));
  }
  return out;
}

TimelineResult timelineOf(const sim::des::timeline& tl) {
  namespace des = sim::des;
  TimelineResult out;
  out.available = true;
  int tracks = 2;
  for (const des::span& s : tl.spans) tracks = std::max(tracks, s.track + 1);
  out.lanes.push_back("host");
  for (int t = 1; t < tracks; ++t) out.lanes.push_back("stream " + std::to_string(t - 1));
  out.spans.reserve(tl.spans.size());
  for (const des::span& s : tl.spans) {
    TimelineSpan ts;
    ts.lane = s.track;
    ts.startS = s.start_s;
    ts.endS = s.start_s + s.dur_s;
    if (s.kernel >= 0 && s.kernel < static_cast<int>(tl.kernels.size())) {
      const des::kernel& k = tl.kernels[static_cast<std::size_t>(s.kernel)];
      const std::string where = k.layer >= 0 ? " L" + std::to_string(k.layer) : std::string();
      const std::string op(des::to_string(k.op));
      switch (s.kind) {
        case des::span_kind::enqueue:
          ts.name = "enqueue " + op + where;
          ts.opClass = "launch";
          break;
        case des::span_kind::sync_wait:
          ts.name = "wait for " + op + where;
          ts.opClass = "sync";
          break;
        case des::span_kind::idle:
          ts.name = "GPU waits on host before " + op + where;
          ts.opClass = "idle";
          break;
        case des::span_kind::run:
          ts.name = op + where + (k.backward ? " (backward)" : "");
          ts.opClass = des::kernel_class(k);
          break;
      }
    }
    out.spans.push_back(std::move(ts));
  }
  std::stable_sort(out.spans.begin(), out.spans.end(),
                   [](const TimelineSpan& a, const TimelineSpan& b) { return a.startS < b.startS; });
  out.makespanS = tl.summary.step_s;
  return out;
}

ServingStats statsOf(const sim::des::serving_run& r) {
  ServingStats s;
  s.summary = r.summary;
  s.ttftSamplesS = r.ttft_s;
  s.tpotSamplesS = r.tpot_s;
  return s;
}

std::string routingText(const analysis::serving_routing_choice& c) { return c.why; }

ServingResult servingOf(const sim::des::serving_comparison& c,
                        const std::optional<analysis::serving_routing_choice>& r) {
  ServingResult out;
  char text[768];
  std::snprintf(text, sizeof text,
                "%lld requests, Poisson arrivals at %.1f req/s (70%% of what the dense model sustains), prompts %s "
                "tokens, outputs %s tokens, seed %llu; continuous batching, paged KV cache, MoD decode routed by the "
                "causal predictor (%s) — as `modsim report` and `modsim simulate serve`.",
                static_cast<long long>(c.scenario.requests), c.scenario.rate_per_s, c.scenario.prompt.c_str(),
                c.scenario.output.c_str(), static_cast<unsigned long long>(c.scenario.seed),
                r ? ("the better of sync and pad served, " + routingText(*r)).c_str()
                  : std::string(modsim::to_string(c.scenario.options.routing)).c_str());
  out.scenario = text;
  out.dense = statsOf(c.dense);
  out.current = statsOf(c.model);
  out.available = true;
  return out;
}

SamplingResult samplingOf(const analysis::analysis_result& r, const ExplorerConfig& config) {
  SamplingResult out;
  // The map opens on the strategy of the headline and the Design space (decode), else the user's.
  out.headlineStrategy = r.decode_choice ? r.decode_choice->strategy.name() : config.decodeStrategy;
  if (!r.sampling) {
    if (!r.sampling_missing.empty())
      out.unavailable = r.sampling_missing;
    else if (r.config.baseline)
      out.unavailable = "The model has no MoD routing: there is no routed decode step to map against the baseline, " +
                        baselineNameOf(r.config) + " (another model; the Layers and Serving figures compare with it).";
    else
      out.unavailable =
          "The model has no MoD routing: its decode step is its baseline's, " + baselineNameOf(r.config) + ".";
    return out;
  }
  out.map = *r.sampling;
  out.map.baseline_name = baselineNameOf(r.config);  // the one name every tab shows
  if (r.serving_routing) out.servingRouting = routingText(*r.serving_routing);
  out.available = true;
  return out;
}

ParallelRow parallelRowOf(const sim::parallel_prediction& p) {
  ParallelRow r;
  r.tp = p.split.tp;
  r.pp = p.split.pp;
  r.dp = p.split.dp;
  r.ep = p.split.ep;
  r.microBatches = p.split.micro_batches;
  r.split = sim::to_string(p.split);
  r.stepS = p.step_s;
  r.computeS = p.compute_s;
  r.commS = p.exposed_comm_s();
  r.bubbleS = p.bubble_s;
  r.memoryBytes = p.memory_per_gpu.total();
  r.fits = p.memory_verdict.empty();
  return r;
}

ParallelResult parallelOf(const analysis::analysis_result& a, const ExplorerConfig& config) {
  ParallelResult out;
  out.gpus = config.gpus;
  if (!a.parallel) {
    out.unavailable = config.gpus > 1 ? (a.parallel_missing.empty() ? std::string("Not computed.")
                                                                    : "Not computed: " + a.parallel_missing)
                                      : std::string("Choose more than one GPU to see the splits.");
    return out;
  }
  const analysis::parallel_section& ps = *a.parallel;
  out.baselineName = baselineNameOf(a.config);
  out.chosen = parallelRowOf(ps.model);
  out.chosen.baselineStepS = ps.baseline.step_s;
  out.chosenBaseline = parallelRowOf(ps.baseline);
  out.stageFirstLayer = ps.model.stages.first_layer;
  out.stageS = ps.model.stages.stage_s;
  out.naiveStageS = ps.model.naive_stages.stage_s;
  out.notes = ps.model.notes;
  if (!ps.model.memory_verdict.empty()) out.notes.push_back("per GPU the step " + ps.model.memory_verdict);
  for (const sim::parallel_prediction& p : ps.best_model) {
    ParallelRow r = parallelRowOf(p);
    r.baselineStepS = ps.baseline_step_s(p.split);
    r.chosen = sim::same_split(p.split, ps.model.split);
    out.rows.push_back(std::move(r));
  }
  out.available = true;
  return out;
}

std::optional<analysis::parallel_request> parallelRequestOf(const ExplorerConfig& config) {
  if (config.gpus < 2 || !sim::is_gpu(config.hardware)) return std::nullopt;
  analysis::parallel_request r;
  r.gpus = config.gpus;
  return r;
}

ValidationResult validationOf(const analysis::analysis_result& r, const ExplorerConfig& config) {
  ValidationResult out;
  if (!r.validation && !config.measurementsPath.isEmpty()) {
    out.unavailable = r.validation_missing;
    return out;
  }
  if (!r.validation) {
    out.unavailable =
        "Choose a measurements CSV (written by `modsim profile`) to compare measured and predicted block times on " +
        config.hardware.name + (r.validation_missing.empty() ? "." : " (" + r.validation_missing + ").");
    return out;
  }
  const analysis::validation_section& section = *r.validation;
  out.file = section.measurements_file;
  out.folds = section.folds;
  out.summary = section.summary;
  out.opSummary = section.op_summary;
  out.costLabel = section.cost_label;
  out.notes = section.notes;
  const std::vector<sim::validation_point>& points = section.points;
  for (const sim::validation_point& v : points) {
    ValidationRow row;
    row.op = modsim::to_string(v.sample.op);
    const sim::op_shape& s = v.sample.shape;
    row.shape = "B=" + std::to_string(s.batch) + " S=" + std::to_string(s.seq_len) + " d=" + std::to_string(s.d_model) +
                " " + sim::to_string(v.sample.type);
    if (v.sample.op == modsim::op::layer_mode)
      row.shape += std::string(" MoDE ") + sim::to_string(v.sample.layer_variant);
    if (v.sample.op != modsim::op::block_dense) {
      char c[32];
      std::snprintf(c, sizeof c, " c=%g", v.sample.capacity);
      row.shape += c;
    }
    row.measuredS = v.sample.median_s;
    row.predictedS = v.predicted_s;
    row.errorPct = v.error_pct;
    out.rows.push_back(std::move(row));
  }
  out.available = true;
  return out;
}

// One part alone (the benchmark and the tests): errors propagate.
analysis::analysis_result analyzeOnly(const ExplorerConfig& config, analysis::scenario s,
                                      const analysis::control& ctl = {}) {
  return analysis::analyze(configurationOf(config), s, ctl);
}

analysis::control controlOf(const ComputeControl& c) {
  analysis::control ctl;
  ctl.cancelled = c.cancelled;
  if (c.progress) ctl.progress = [p = c.progress](int pct, const std::string&) { p(pct); };
  return ctl;
}

}  // namespace

PredictionResult computePrediction(const ExplorerConfig& config) {
  analysis::scenario s;
  s.decode = decodeRequestOf(config);
  PredictionResult out = predictionOf(analyzeOnly(config, s));
  out.baselineWhy = baselineWhyOf(config);
  return out;
}

SweepResult computeSweep(const ExplorerConfig& config, const std::optional<sim::sweep_space>& space,
                         const ComputeControl& control) {
  analysis::scenario s;
  s.prediction = false;
  s.sweep = analysis::sweep_request{};
  s.sweep->space = space;
  s.decode = decodeRequestOf(config);
  const analysis::analysis_result a = analyzeOnly(config, s, controlOf(control));
  return sweepOf(*a.sweep, a.config, a.decode_choice);
}

TimelineResult computeTimeline(const ExplorerConfig& config) {
  analysis::scenario s;
  s.prediction = false;
  s.timeline = decodeRequestOf(config);
  return timelineOf(*analyzeOnly(config, s).timeline);
}

ServingResult computeServing(const ExplorerConfig& config) {
  analysis::scenario s;
  s.prediction = false;
  s.serving = analysis::serving_request{};
  s.serving->fastest_routing = true;
  const analysis::analysis_result a = analyzeOnly(config, s);
  ServingResult out = servingOf(*a.serving, a.serving_routing);
  out.baselineName = baselineNameOf(a.config);
  return out;
}

SamplingResult computeSampling(const ExplorerConfig& config) {
  analysis::scenario s;
  s.prediction = false;
  if (config.model.routing) s.sampling = analysis::sampling_request{};
  s.decode = decodeRequestOf(config);
  return samplingOf(analyzeOnly(config, s), config);
}

ParallelResult computeParallel(const ExplorerConfig& config) {
  analysis::scenario s;
  s.prediction = false;
  s.parallel = parallelRequestOf(config);
  return parallelOf(analyzeOnly(config, s), config);
}

ValidationResult computeValidation(const ExplorerConfig& config) {
  analysis::scenario s;
  s.prediction = false;
  s.validation = validationRequestOf(config);
  return validationOf(analyzeOnly(config, s), config);
}

void computeParts(const ExplorerConfig& config, ResultParts parts, ComputeResult& r, const ComputeControl& control) {
  const auto start = std::chrono::steady_clock::now();
  const bool headline = parts & PredictionPart;
  if (headline) {
    r.model = config.model;
    r.load = config.load;
  }
  try {
    // Each part alone asks analyze for that part only; the decode steps of the prediction, the
    // sweep and the timeline run with the user's strategy and routing draws whether the timeline
    // is asked for or not (scenario::decode), so every part gives the one decode answer.
    analysis::scenario s;
    s.parts_may_fail = true;
    s.prediction = headline;
    // The decode steps (headline, sweep) run as the user chose (the sampling map's strategy).
    s.decode = decodeRequestOf(config);
    if (parts & TimelinePart) s.timeline = decodeRequestOf(config);
    if ((parts & SweepPart) && config.sweepEnabled) s.sweep = analysis::sweep_request{};
    if ((parts & SamplingPart) && config.model.routing) s.sampling = analysis::sampling_request{};
    if (parts & ParallelPart) s.parallel = parallelRequestOf(config);
    if (parts & TrainingPart) s.training = analysis::training_request{config.flopBudget};
    if ((parts & ServingPart) && config.servingEnabled) {
      s.serving = analysis::serving_request{};
      s.serving->fastest_routing = true;
    }
    if (parts & ValidationPart) {
      try {
        s.validation = validationRequestOf(config);
      } catch (const modsim::error& e) {
        s.validation.from = analysis::validation_request::source::none;
        s.validation.missing = e.what();
      }
    }
    const analysis::analysis_result a = analysis::analyze(configurationOf(config), s, controlOf(control));
    if (headline) {
      if (!a.prediction) throw modsim::error(error_kind::bad_input, a.prediction_missing);
      r.prediction = predictionOf(a);
      r.prediction.baselineWhy = baselineWhyOf(config);
    }
    if (parts & TimelinePart) {
      r.timeline = a.timeline ? timelineOf(*a.timeline) : TimelineResult{};
      if (!a.timeline) r.timeline.unavailable = a.timeline_missing;
    }
    if (parts & SweepPart) {
      if (a.sweep) {
        r.sweep = sweepOf(*a.sweep, a.config, a.decode_choice);
      } else {
        r.sweep = SweepResult{};
        r.sweep.unavailable = config.sweepEnabled ? a.sweep_missing : "The design-space sweep is switched off.";
      }
    }
    if (parts & ValidationPart) r.validation = validationOf(a, config);
    if (parts & TrainingPart) {
      r.training = TrainingResult{};
      if (a.training) {
        r.training.training = *a.training;
        r.training.asTrained = config.load.run != sim::run_mode::train;
        r.training.available = true;
      } else {
        r.training.unavailable = a.training_missing.empty() ? "Not computed." : a.training_missing;
      }
    }
    if (parts & SamplingPart) r.sampling = samplingOf(a, config);
    if (parts & ParallelPart) {
      r.parallel = parallelOf(a, config);
      if (!sim::is_gpu(config.hardware))
        r.parallel.unavailable = "The parallelism tab splits a step over GPUs: choose GPU hardware.";
    }
    if (parts & ServingPart) {
      if (a.serving) {
        r.serving = servingOf(*a.serving, a.serving_routing);
        r.serving.baselineName = baselineNameOf(a.config);
      } else {
        r.serving = ServingResult{};
        r.serving.unavailable = config.servingEnabled ? a.serving_missing : "The serving simulation is switched off.";
      }
    }
  } catch (const analysis::cancelled&) {
    r.error = "cancelled";
  } catch (const std::exception& e) {
    const bool ours = dynamic_cast<const modsim::error*>(&e) != nullptr;
    const std::string why = ours ? std::string(e.what()) : std::string("internal error: ") + e.what();
    if (headline) {
      r.error = why;
    } else {  // the headline stands; the parts asked for say why they are missing
      auto missing = [&why](auto& part) {
        part = std::decay_t<decltype(part)>{};
        part.unavailable = why;
      };
      if (parts & TimelinePart) missing(r.timeline);
      if (parts & SweepPart) missing(r.sweep);
      if (parts & ValidationPart) missing(r.validation);
      if (parts & SamplingPart) missing(r.sampling);
      if (parts & ParallelPart) missing(r.parallel);
      if (parts & ServingPart) missing(r.serving);
      if (parts & TrainingPart) missing(r.training);
    }
  }
  r.updated = parts;
  if (!r.error.empty() && r.error != "cancelled") r.updated = kAllParts;  // every part shows the error
  r.computed |= r.updated;
  r.computeMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

ComputeResult computeAll(const ExplorerConfig& config, const ComputeControl& control) {
  ComputeResult r;
  computeParts(config, kAllParts, r, control);
  return r;
}

ResultParts nextParts(ResultParts remaining, ResultParts visible) {
  remaining &= kAllParts;
  if (remaining & PredictionPart) return PredictionPart;
  if (remaining & visible) return remaining & visible;
  for (ResultPart p : {SweepPart, TrainingPart, TimelinePart, SamplingPart, ServingPart, ParallelPart, ValidationPart})
    if (remaining & p) return p;
  return 0;
}

}  // namespace modsim::gui
