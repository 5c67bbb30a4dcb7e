#include "gui/core/compute.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "sim/config.hpp"
#include "sim/cost.hpp"
#include "sim/des/comparison.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/serving.hpp"
#include "sim/des/step.hpp"
#include "core/error.hpp"
#include "sim/flops.hpp"
#include "sim/predict.hpp"
#include "sim/sweep.hpp"

#include "profiler/grid.hpp"
#include "profiler/measurements.hpp"
#include "reports/report.hpp"
#include "sim/calibrate.hpp"

namespace modsim::gui {
namespace {

struct Cancelled {};

void checkCancelled(const ComputeControl& c) {
  if (c.cancelled && c.cancelled()) throw Cancelled{};
}
void report(const ComputeControl& c, int pct) {
  if (c.progress) c.progress(std::clamp(pct, 0, 100));
}

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

std::string scheduleOf(const sim::model_spec& m) {
  if (!m.routing) return "none";
  if (m.routing->layer_capacities.empty()) return sim::to_string(m.routing->sched);
  std::vector<bool> routed;
  for (const sim::layer_plan& l : sim::plan_layers(m)) routed.push_back(l.routed);
  const std::string preset = presetOf(routed);
  return preset.empty() ? "custom" : preset;
}

double capacityOf(const sim::model_spec& m) {
  if (!m.routing) return 1.0;
  for (const sim::layer_plan& l : sim::plan_layers(m))
    if (l.routed) return l.capacity;
  return m.routing->capacity;
}

}  // namespace

std::string variantName(const sim::model_spec& m) { return sim::display_name(sim::variant_of(m)); }

SweepAxes defaultSweepAxes(const sim::model_spec& model) {
  const sim::sweep_space space = sim::default_space(model);
  SweepAxes axes;
  std::set<double> caps(space.capacities.begin(), space.capacities.end());
  if (model.routing) caps.insert(capacityOf(model));
  axes.capacities.assign(caps.begin(), caps.end());
  for (const sim::schedule& s : space.schedules) axes.schedules.push_back(sim::to_string(s));
  const std::string current = scheduleOf(model);
  if (current != "custom" && current != "none" &&
      std::find(axes.schedules.begin(), axes.schedules.end(), current) == axes.schedules.end())
    axes.schedules.push_back(current);
  for (sim::sweep_variant v : space.variants) axes.variants.emplace_back(sim::to_string(v));
  return axes;
}

PredictionResult computePrediction(const ExplorerConfig& config) {
  const sim::cost_model cm(config.hardware);
  const sim::prediction p = sim::predict(config.model, config.load, cm);
  PredictionResult out;
  out.opClasses = displayClasses();
  out.costLabel = p.cost_label;
  out.hardwareName = config.hardware.name;
  if (p.expected_error) {
    out.expectedP90Pct = p.expected_error->p90_abs_pct_error;
    out.expectedMedianPct = p.expected_error->median_abs_pct_error;
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
  out.matmulFlops = p.model.matmul_flops;
  out.denseMatmulFlops = p.dense.matmul_flops;
  out.bytes = p.model.bytes;
  out.denseBytes = p.dense.bytes;
  out.params = sim::parameter_count(config.model);
  out.flopRatio = p.flop_ratio;
  out.timeRatio = p.time_ratio;
  out.gap = {{"routing", p.gap.routing},
             {"launch", p.gap.launch},
             {"gemm_efficiency", p.gap.gemm_efficiency},
             {"attention", p.gap.attention},
             {"memory_bound", p.gap.memory_bound}};
  out.notes = p.notes;
  return out;
}

SweepResult computeSweep(const ExplorerConfig& config, const SweepAxes& axes, const ComputeControl& control) {
  const sim::cost_model cm(config.hardware);
  sim::sweep_space space;
  space.capacities = axes.capacities;
  for (const std::string& s : axes.schedules)
    space.schedules.push_back(sim::parse_schedule(s, config.model.n_layers, "", "sweep.schedules"));
  for (const std::string& v : axes.variants) space.variants.push_back(sim::parse_sweep_variant(v, "sweep.variants"));

  // The predicted time, with a cancellation check and a progress count per point.
  const sim::time_function inner = sim::predicted_time(cm);
  const std::size_t expected = std::max<std::size_t>(1, sim::enumerate_space(config.model, space).size());
  std::atomic<std::size_t> done{0};
  const sim::time_function timeOf = [&](const sim::model_spec& m, const sim::workload& w) {
    checkCancelled(control);
    const std::size_t n = ++done;
    if (n % 32 == 0) report(control, static_cast<int>(100 * n / expected));
    return inner(m, w);
  };
  sim::sweep_options options;
  options.load = config.load;
  options.threads = 0;
  const sim::sweep_result r = sim::run_sweep(config.model, space, timeOf, options);

  SweepResult out;
  out.available = true;
  out.denseTimeS = r.dense_time_s;
  out.denseMatmulFlops = r.dense_matmul_flops;
  out.points.reserve(r.points.size() + 1);
  for (const sim::sweep_point& sp : r.points) {
    if (!sp.feasible) continue;
    SweepPoint p;
    p.capacity = sp.capacity;
    p.schedule = sp.schedule;
    p.variant = sim::display_name(sp.variant);
    p.matmulFlops = sp.matmul_flops;
    p.timeS = sp.time_s;
    p.model = sp.model;
    out.points.push_back(std::move(p));
  }
  // The current configuration: the sweep's own point when it is one, else added.
  checkCancelled(control);
  const sim::model_time cur = sim::time_model(config.model, config.load, cm);
  const std::string curVariant = variantName(config.model);
  bool found = false;
  for (SweepPoint& p : out.points) {
    if (p.variant == curVariant && p.matmulFlops == cur.matmul_flops &&
        std::abs(p.timeS - cur.total_s) <= 1e-9 * std::max(1e-30, cur.total_s)) {
      p.current = found = true;
      break;
    }
  }
  if (!found) {
    SweepPoint p;
    p.capacity = capacityOf(config.model);
    p.schedule = scheduleOf(config.model);
    p.variant = curVariant;
    p.matmulFlops = cur.matmul_flops;
    p.timeS = cur.total_s;
    p.current = true;
    p.model = config.model;
    out.points.push_back(std::move(p));
  }
  std::vector<double> xs, ys;
  for (const SweepPoint& p : out.points) {
    xs.push_back(double(p.matmulFlops));
    ys.push_back(p.timeS);
  }
  const std::vector<bool> front = sim::pareto_front(xs, ys);
  for (std::size_t i = 0; i < out.points.size(); ++i) out.points[i].pareto = front[i];
  return out;
}

TimelineResult computeTimeline(const ExplorerConfig& config) {
  namespace des = sim::des;
  TimelineResult out;
  const sim::cost_model cm(config.hardware);
  const des::device_model dev = des::device_model_of(cm, config.load.type);
  const des::step_builder builder(config.model, config.load.type, dev);
  std::vector<des::kernel> kernels;
  if (config.load.mode == sim::run_mode::decode) {
    des::rng r(1);
    const des::step_load load =
        des::decode_load(builder, config.load.batch, config.load.seq_len, des::decode_routing::sync, 1.0, r);
    kernels = builder.step(load, des::decode_routing::sync);
  } else {
    kernels = builder.forward(config.load);
  }
  const des::timeline tl = des::simulate_execution(std::move(kernels), dev, des::exec_options{});
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
      const std::string op(k.op);
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

namespace {

// Stops a serving run when the computation is cancelled.
class CancelObserver : public sim::des::serve_observer {
 public:
  explicit CancelObserver(const ComputeControl& c) : m_control(c) {}
  void on_step(const sim::des::step_record&) override {
    if ((++m_steps & 63) == 0) checkCancelled(m_control);
  }

 private:
  const ComputeControl& m_control;
  std::uint64_t m_steps = 0;
};

ServingStats statsOf(const sim::des::serving_run& r) {
  ServingStats s;
  s.requests = static_cast<int>(r.summary.requests);
  s.completed = static_cast<int>(r.summary.completed);
  s.ttft = {r.summary.ttft_s.p50, r.summary.ttft_s.p90, r.summary.ttft_s.p99};
  s.tpot = {r.summary.tpot_s.p50, r.summary.tpot_s.p90, r.summary.tpot_s.p99};
  s.throughputTokS = r.summary.throughput_tok_s;
  s.kvPeakBytes = r.summary.kv_peak_bytes;
  s.ttftSamplesS = r.ttft_s;
  s.tpotSamplesS = r.tpot_s;
  return s;
}

ServingResult computeServingImpl(const ExplorerConfig& config, const ComputeControl& control) {
  // The comparison `modsim report` and `modsim simulate serve` show (sim/des/comparison.hpp):
  // one scenario, one seed, the rate at 70% of what the dense model sustains.
  const sim::cost_model cm(config.hardware);
  CancelObserver cancel(control);
  sim::des::serve_observer* observers[] = {&cancel};
  const sim::des::serving_comparison c =
      sim::des::compare_serving(config.model, cm, config.load.type, sim::des::serving_scenario{}, observers);
  ServingResult out;
  char text[512];
  std::snprintf(text, sizeof text,
                "%lld requests, Poisson arrivals at %.1f req/s (70%% of what the dense model sustains), prompts %s "
                "tokens, outputs %s tokens, seed %llu; continuous batching, paged KV cache, MoD decode routed by the "
                "causal predictor (synchronising) — as `modsim report` and `modsim simulate serve`.",
                static_cast<long long>(c.scenario.requests), c.scenario.rate_per_s, c.scenario.prompt.c_str(),
                c.scenario.output.c_str(), static_cast<unsigned long long>(c.scenario.seed));
  out.scenario = text;
  out.dense = statsOf(c.dense);
  out.current = statsOf(c.model);
  out.available = true;
  return out;
}

}  // namespace

ServingResult computeServing(const ExplorerConfig& config) { return computeServingImpl(config, {}); }

namespace {
// The cross-validation behind a hardware file takes seconds and depends on the file only: it is
// computed once per hardware file (and calibration) and kept.
std::optional<reports::validation_section> cachedValidationForHardware(const sim::hardware_spec& hw, std::string* why) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<std::optional<reports::validation_section>, std::string>> cache;
  const std::string key = hw.source_file + "\n" + hw.name + "\n" + hw.calibration_json;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) {
      *why = it->second.second;
      return it->second.first;
    }
  }
  std::optional<reports::validation_section> v = reports::validation_for_hardware(hw, why);
  std::lock_guard<std::mutex> lock(mutex);
  cache[key] = {v, *why};
  return v;
}
}  // namespace

ValidationResult computeValidation(const ExplorerConfig& config) {
  ValidationResult out;
  out.file = config.measurementsPath.toStdString();
  reports::validation_section section;
  if (config.measurementsPath.isEmpty()) {
    // No file chosen: the measurements behind the hardware's calibration (a calibrated file is
    // cross-validated by shape; an uncalibrated one with a calibrated sibling shows its
    // datasheet roofline against the same blocks), as `modsim report` does.
    std::string why;
    std::optional<reports::validation_section> backing = cachedValidationForHardware(config.hardware, &why);
    if (!backing) {
      out.unavailable =
          "Choose a measurements CSV (written by `modsim profile`) to compare measured and predicted "
          "block times on " +
          config.hardware.name + " (" + why + ").";
      return out;
    }
    section = std::move(*backing);
    out.file = section.measurements_file;
  } else {
    const std::vector<sim::measured_point> measured = profiler::read_measured_points(out.file);
    // An uncalibrated hardware file is first calibrated on the file's single-op rows (never on
    // the blocks it scores), as `modsim report` does.
    section = reports::make_validation(measured, config.hardware, true, out.file);
  }
  out.folds = section.folds;
  out.opMedianAbsPctError = section.op_summary.median_abs_pct_error;
  out.opP90AbsPctError = section.op_summary.p90_abs_pct_error;
  out.opPoints = section.op_summary.points;
  out.costLabel = section.cost_label;
  out.notes = section.notes;
  const std::vector<sim::validation_point>& points = section.points;
  const sim::validation_summary& sum = section.summary;
  for (const sim::validation_point& v : points) {
    ValidationRow row;
    row.op = v.sample.op;
    const sim::op_shape& s = v.sample.shape;
    row.shape = "B=" + std::to_string(s.batch) + " S=" + std::to_string(s.seq_len) + " d=" + std::to_string(s.d_model) +
                " " + sim::to_string(v.sample.type);
    if (v.sample.op != "block_dense") {
      char c[32];
      std::snprintf(c, sizeof c, " c=%g", v.sample.capacity);
      row.shape += c;
    }
    row.measuredS = v.sample.measured_s;
    row.predictedS = v.predicted_s;
    row.errorPct = v.error_pct;
    out.rows.push_back(std::move(row));
  }
  out.medianAbsPctError = sum.median_abs_pct_error;
  out.p90AbsPctError = sum.p90_abs_pct_error;
  out.maxAbsPctError = sum.max_abs_pct_error;
  out.available = true;
  return out;
}

ComputeResult computeAll(const ExplorerConfig& config, const ComputeControl& control) {
  const auto start = std::chrono::steady_clock::now();
  ComputeResult r;
  r.model = config.model;
  r.load = config.load;
  auto part = [](auto&& compute, std::string& unavailable) {
    try {
      compute();
    } catch (const modsim::error& e) {
      unavailable = e.what();
    }
  };
  try {
    report(control, 0);
    r.prediction = computePrediction(config);
    checkCancelled(control);
    report(control, 5);
    part([&] { r.timeline = computeTimeline(config); }, r.timeline.unavailable);
    checkCancelled(control);
    report(control, 10);
    if (config.sweepEnabled) {
      ComputeControl inner;
      inner.cancelled = control.cancelled;
      inner.progress = [&](int pct) { report(control, 10 + pct * 50 / 100); };
      part([&] { r.sweep = computeSweep(config, defaultSweepAxes(config.model), inner); }, r.sweep.unavailable);
    } else {
      r.sweep.unavailable = "The design-space sweep is switched off.";
    }
    checkCancelled(control);
    report(control, 60);
    part([&] { r.validation = computeValidation(config); }, r.validation.unavailable);
    checkCancelled(control);
    report(control, 65);
    if (config.servingEnabled)
      part([&] { r.serving = computeServingImpl(config, control); }, r.serving.unavailable);
    else
      r.serving.unavailable = "The serving simulation is switched off.";
    report(control, 100);
  } catch (const Cancelled&) {
    r.error = "cancelled";
  } catch (const modsim::error& e) {
    r.error = e.what();
  } catch (const std::exception& e) {
    r.error = std::string("internal error: ") + e.what();
  }
  r.computeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace modsim::gui
