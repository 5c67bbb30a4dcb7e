#include "analysis/analysis.hpp"

#include "sim/des/parallel_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/error.hpp"
#include "sim/cost/decode_fit.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/des/step.hpp"

namespace modsim::analysis {

namespace {

void check(const control& ctl) {
  if (ctl.cancelled && ctl.cancelled()) throw cancelled{};
}

void say(const control& ctl, int percent, const std::string& what) {
  if (ctl.progress) ctl.progress(std::clamp(percent, 0, 100), what);
}

// Runs one part: a modsim::error becomes its `missing` reason when parts may fail.
template <class F>
void part(const scenario& s, std::string& missing, F&& compute) {
  if (!s.parts_may_fail) {
    compute();
    return;
  }
  try {
    compute();
  } catch (const modsim::error& e) {
    missing = e.what();
  }
}

const sim::hardware_spec& hardware_of(const configuration& c, const char* what) {
  if (!c.hardware) throw input_error("", "--hardware", std::string("required for ") + what);
  return *c.hardware;
}

// Stops a serving run when the analysis is cancelled.
class cancel_observer : public sim::des::serve_observer {
 public:
  explicit cancel_observer(const control& c) : m_control(c) {}
  void on_step(const sim::des::step_record&) override {
    if ((++m_steps & 63) == 0) check(m_control);
  }

 private:
  const control& m_control;
  std::uint64_t m_steps = 0;
};

// The mean decode step of `m` (mean_decode_step), seconds.
double mean_decode_s(const sim::model_spec& m, const sim::cost_model& cost, const sim::workload& w,
                     const decode_step_options& o, int draws) {
  const sim::des::step_builder b(m, w.type, decode_step_device(cost, w.type));
  return mean_decode_step(b, w.batch, w.seq_len, o, draws).step_s;
}

sweep_section sweep_around(const configuration& c, const sim::cost_model& cost, const sweep_request& r,
                           const decode_step_options& decode, int draws, const control& ctl, int from_pct, int to_pct) {
  const sim::sweep_space space = r.space ? *r.space : default_sweep_space(c.model);
  // A decode step is timed as the prediction times it (the discrete-event step, launches and
  // syncs included), so the current point and the headline are one number.
  const sim::time_function inner =
      r.split ? sim::time_function([&cost, split = *r.split](const sim::model_spec& m, const sim::workload& w) {
        return sim::predict_parallel(m, w, cost, split).step_s;
      })
      : c.load.run == sim::run_mode::decode
          ? sim::time_function([&cost, decode, draws](const sim::model_spec& m, const sim::workload& w) {
              return mean_decode_s(m, cost, w, decode, draws);
            })
          : sim::predicted_time(cost);
  const std::size_t expected = std::max<std::size_t>(1, sim::enumerate_space(c.model, space).size());
  std::atomic<std::size_t> done{0};
  const sim::time_function time_of = [&](const sim::model_spec& m, const sim::workload& w) {
    check(ctl);
    const std::size_t n = ++done;
    if (n % 32 == 0)
      say(ctl, from_pct + static_cast<int>((to_pct - from_pct) * n / expected), "sweeping the design space");
    return inner(m, w);
  };
  sim::sweep_options o;
  o.load = c.load;
  o.threads = r.threads;
  o.x_axis = r.x_axis;
  o.y_axis = r.y_axis;
  sweep_section out;
  out.result = sim::run_sweep(c.model, space, time_of, o);
  if (c.baseline || c.model.moe) {
    // Ratios against the baseline every other figure uses (a given one, or for an MoE model
    // the MoE without routing) instead of the space's dense-MLP point.
    const sim::model_spec baseline = baseline_of(c);
    sim::sweep_result& res = out.result;
    res.dense_time_s = inner(baseline, c.load);
    res.dense_matmul_flops = sim::evaluate_flops(baseline, c.load).totals.matmul_flops;
    for (sim::sweep_point& p : res.points) {
      p.flops_ratio = res.dense_matmul_flops > 0 ? double(p.matmul_flops) / double(res.dense_matmul_flops) : 0.0;
      p.time_ratio = res.dense_time_s > 0 ? p.time_s / res.dense_time_s : 0.0;
    }
  }

  // The configuration's own point: the one of its variant with its FLOPs and time.
  sim::model_time cur = sim::time_model(c.model, c.load, cost);
  cur.total_s = inner(c.model, c.load);
  const sim::sweep_variant variant = sim::variant_of(c.model);
  // The sweep counts FLOPs by the convention (a training step's fused-attention recomputation
  // left out); the model's time_model counts what it prices.
  const std::int64_t counted = sim::evaluate_flops(c.model, c.load).totals.matmul_flops;
  auto& points = out.result.points;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const sim::sweep_point& p = points[i];
    if (p.feasible && p.variant == variant && p.matmul_flops == counted &&
        std::abs(p.time_s - cur.total_s) <= 1e-9 * std::max(1e-30, cur.total_s)) {
      out.current = static_cast<int>(i);
      break;
    }
  }
  if (out.current < 0 && r.add_current) {
    const sim::flops_report f = sim::evaluate_flops(c.model, c.load);
    sim::sweep_point p;
    p.variant = variant;
    p.capacity = capacity_of(c.model);
    p.schedule = schedule_of(c.model);
    p.description = std::string("current: ") + sim::display_name(variant) +
                    (c.model.routing ? " c=" + fmt::format("{:g}", p.capacity) + " " + p.schedule : "");
    p.model = c.model;
    p.matmul_flops = f.totals.matmul_flops;
    p.other_flops = f.totals.other_flops;
    p.bytes = f.totals.bytes;
    p.params = sim::parameter_count(c.model);
    p.time_s = cur.total_s;
    const auto& r0 = out.result;
    p.flops_ratio = r0.dense_matmul_flops > 0 ? double(p.matmul_flops) / double(r0.dense_matmul_flops) : 0.0;
    p.time_ratio = r0.dense_time_s > 0 ? p.time_s / r0.dense_time_s : 0.0;
    points.push_back(std::move(p));
    out.current = static_cast<int>(points.size() - 1);
    std::vector<double> xs, ys;
    for (const sim::sweep_point& q : points) {
      xs.push_back(q.feasible ? q.value(r.x_axis) : NAN);
      ys.push_back(q.feasible ? q.value(r.y_axis) : NAN);
    }
    const std::vector<bool> front = sim::pareto_front(xs, ys);
    for (std::size_t i = 0; i < points.size(); ++i) points[i].pareto = front[i];
  }
  return out;
}

// The timeline of one step; in decode mode also where it goes.
sim::des::timeline step_timeline(const configuration& c, const sim::cost_model& cost, const timeline_request& r,
                                 analysis_result& out) {
  namespace des = sim::des;
  if (r.split && (r.split->gpus() > 1 || r.split->ep > 1)) {
    const des::device_model dev = c.load.run == sim::run_mode::decode ? decode_step_device(cost, c.load.type)
                                                                      : des::device_model_of(cost, c.load.type);
    des::parallel_step_request q;
    q.split = *r.split;
    q.cuda_graph = r.cuda_graph;
    q.routing = r.routing;
    q.pad_capacity = r.pad_capacity;
    q.seed = r.seed;
    des::parallel_step ps = des::build_parallel_step(c.model, c.load, cost, dev, q);
    out.timeline_parallel = parallel_timeline{ps.split, ps.first_layer, ps.micro_batch, ps.predicted_step_s};
    return des::simulate_execution(std::move(ps.kernels), dev, ps.options);
  }
  if (c.load.run == sim::run_mode::decode) {
    // A decode step is timed with the calibration's decode fit where it has one; the timeline is
    // the first of the routing draws the figures average.
    const des::step_builder b(c.model, c.load.type, decode_step_device(cost, c.load.type));
    decode_step_options o = r.decode_options();
    o.record_spans = true;
    decode_step st = decode_step_time(b, c.load.batch, c.load.seq_len, o);
    out.decode_decisions = st.decisions;
    out.decode_routed = st.routed;
    out.decode = st.breakdown;
    return std::move(st.timeline);
  }
  const des::step_builder b(c.model, c.load.type, des::device_model_of(cost, c.load.type));
  des::exec_options eo;
  eo.cuda_graph = r.cuda_graph;
  return des::simulate_execution(b.forward(c.load), b.device(), eo);
}

// A model's decode step as a model_time, the mean of `draws` routing draws (mean_decode_step):
// per layer its kernels' mean device times, the lm_head its kernel, overhead_s the rest of the
// mean step (launches, waits on the host, routed-count syncs); total_s is the mean step. The
// curves named (calibrated_as, timed_as_dtype) are those the cost model times each op by
// (cost_model::curve_for).
sim::model_time decode_model_time(const sim::model_spec& m, const sim::cost_model& cost, const sim::workload& w,
                                  const decode_step_options& o, int draws) {
  namespace des = sim::des;
  const des::step_builder b(m, w.type, decode_step_device(cost, w.type));
  const mean_decode mean = mean_decode_step(b, w.batch, w.seq_len, o, draws, true);
  sim::model_time out;
  for (const des::layer_info& info : b.layers()) {
    sim::layer_prediction l;
    l.index = info.index;
    l.routed = info.mod_routed;
    l.capacity = info.capacity;
    out.layers.push_back(std::move(l));
  }
  auto prediction_of = [&](const des::kernel& k) {
    sim::op_prediction p;
    p.op = *k.op.model_op();
    p.op_class = sim::op_class_of(p.op);
    p.time_s = k.device_s;
    p.roofline_s = k.roofline_s;
    p.matmul_flops = k.matmul_flops;
    p.other_flops = k.other_flops;
    p.bytes = k.bytes;
    p.kernels = k.launches;
    p.memory_bound = k.memory_bound;
    p.calibrated = k.calibrated;
    const std::optional<sim::cost_model::curve_choice> curve = cost.curve_for(p.op, w.type);
    if (k.calibrated && curve) p.calibrated_as = curve->as;
    if (k.layer >= 0 && curve && curve->type != w.type) out.timed_as_dtype = curve->type;
    out.matmul_flops += p.matmul_flops;
    out.other_flops += p.other_flops;
    out.bytes += p.bytes;
    out.ops_s += p.time_s;
    out.kernels += p.kernels;
    return p;
  };
  // The i-th model kernel of every draw is the same op of the same layer (the draws change the
  // rows a routed block computes, not the kernels): its mean over the draws.
  std::vector<std::vector<const des::kernel*>> draws_of;  // per draw, its model kernels in order
  for (const decode_step& d : mean.steps) {
    std::vector<const des::kernel*> ks;
    for (const des::kernel& k : d.timeline.kernels)
      if (k.op.model_op()) ks.push_back(&k);
    draws_of.push_back(std::move(ks));
  }
  const double n = static_cast<double>(mean.steps.size());
  for (std::size_t i = 0; i < draws_of.front().size(); ++i) {
    des::kernel k = *draws_of.front()[i];
    double device_s = 0, tokens = 0, roofline_s = 0, matmul = 0, other = 0, bytes = 0;
    for (const auto& ks : draws_of) {
      const des::kernel& x = i < ks.size() && ks[i]->op == k.op && ks[i]->layer == k.layer ? *ks[i] : k;
      device_s += x.device_s;
      roofline_s += x.roofline_s;
      tokens += static_cast<double>(x.tokens);
      matmul += static_cast<double>(x.matmul_flops);
      other += static_cast<double>(x.other_flops);
      bytes += static_cast<double>(x.bytes);
    }
    k.device_s = device_s / n;
    k.roofline_s = roofline_s / n;
    k.tokens = static_cast<std::int64_t>(std::llround(tokens / n));
    k.matmul_flops = static_cast<std::int64_t>(std::llround(matmul / n));
    k.other_flops = static_cast<std::int64_t>(std::llround(other / n));
    k.bytes = static_cast<std::int64_t>(std::llround(bytes / n));
    if (k.layer < 0) {
      out.lm_head = prediction_of(k);
      continue;
    }
    sim::layer_prediction& l = out.layers.at(static_cast<std::size_t>(k.layer));
    sim::op_prediction p = prediction_of(k);
    if (p.op == modsim::op::attn_norm) l.tokens = k.tokens;  // the rows the block computes (routed or padded)
    l.time_s += p.time_s;
    l.kernels += p.kernels;
    l.ops.push_back(std::move(p));
  }
  out.total_s = mean.step_s;
  out.overhead_s = out.total_s - out.ops_s;
  return out;
}

std::string strategy_list(const std::vector<decode_strategy_figure>& c) {
  std::string out;
  for (const decode_strategy_figure& f : c)
    if (f.applies) out += (out.empty() ? "" : "/") + f.strategy.name();
  return out;
}

// The decode strategy of configuration `c` (timeline_request::fastest): every candidate's mean
// step for the model and its baseline at the configuration's cell, and the one kept.
decode_strategy_choice choose_decode_strategy(const configuration& c, const sim::model_spec& baseline,
                                              const sim::cost_model& cost, const timeline_request& r) {
  namespace des = sim::des;
  const bool gpu = sim::is_gpu(cost.hardware());
  const des::device_model dev = decode_step_device(cost, c.load.type);
  const des::step_builder bm(c.model, c.load.type, dev), bb(baseline, c.load.type, dev);
  decode_strategy_choice out;
  out.seed = r.seed;
  std::vector<decode_strategy> tried = {{decode_routing::sync, false}, {decode_routing::pad, false}};
  tried.push_back({decode_routing::pad, true});
  const decode_strategy asked{r.routing, r.cuda_graph};
  if (!r.fastest && std::find(tried.begin(), tried.end(), asked) == tried.end()) tried.push_back(asked);
  for (const decode_strategy& st : tried) {
    decode_strategy_figure f;
    f.strategy = st;
    if (st.cuda_graph && !gpu && (r.fastest || !(st == asked))) {
      f.applies = false;
      f.why_not = cost.hardware().name + " is a CPU: it runs no CUDA graphs";
      out.candidates.push_back(std::move(f));
      continue;
    }
    decode_step_options o = r.decode_options();
    o.routing = st.routing;
    o.cuda_graph = st.cuda_graph;
    const mean_decode m = mean_decode_step(bm, c.load.batch, c.load.seq_len, o, r.draws);
    f.model_s = m.step_s;
    f.baseline_s = mean_decode_step(bb, c.load.batch, c.load.seq_len, o, r.draws).step_s;
    out.draws = m.draws;
    out.candidates.push_back(std::move(f));
  }
  for (const decode_strategy_figure& f : out.candidates)
    if (!f.applies) out.notes.push_back(f.strategy.name() + " does not apply: " + f.why_not);
  const bool routes =
      std::any_of(bm.layers().begin(), bm.layers().end(), [](const des::layer_info& l) { return l.mod_routed; });
  if (!routes)
    out.notes.push_back(
        "the model routes no layer: sync and pad run the same step (no routed count to read back, "
        "nothing to pad)");
  if (r.fastest) {
    const decode_strategy_figure* best = nullptr;
    for (const decode_strategy_figure& f : out.candidates)
      if (f.applies && (!best || f.model_s < best->model_s)) best = &f;  // a tie keeps the earlier
    out.strategy = best->strategy;
    out.fastest = true;
    out.rule = "fastest of " + strategy_list(out.candidates);
  } else {
    out.strategy = asked;
    out.rule = "the user's choice";
    if (asked.cuda_graph && !gpu)
      out.notes.push_back(asked.name() +
                          " on a CPU, which runs no CUDA graphs: priced as asked (one launch per graph)");
  }
  return out;
}

}  // namespace

std::string decode_strategy_choice::label() const {
  return fmt::format("{} ({}; mean of {} routing draw{})", strategy.name(), rule, draws, draws == 1 ? "" : "s");
}

decode_step_options timeline_request::decode_options() const {
  decode_step_options o;
  o.routing = routing;
  o.pad_capacity = pad_capacity;
  o.cuda_graph = cuda_graph;
  o.seed = seed;
  return o;
}

decode_cell serving_decode_cell(const sim::des::serving_scenario& s) {
  auto mean = [](const std::string& text, const char* what) {
    const sim::des::length_dist d = sim::des::parse_length_dist(text, what);
    return d.k == sim::des::length_dist::kind::uniform ? (d.a + d.b) / 2 : d.a;
  };
  decode_cell c;
  c.batch = std::min<std::int64_t>(64, std::max<std::int64_t>(1, s.options.max_seqs));
  const double p = std::max(1.0, mean(s.prompt, "prompt")), o = std::max(1.0, mean(s.output, "output"));
  c.context = static_cast<std::int64_t>(p + o / 2);
  return c;
}

serving_routing_choice choose_serving_routing(std::vector<serving_routing_trial> trials) {
  if (trials.empty()) throw runtime_error("choose_serving_routing: no serving run to choose from");
  const bool any_clean = std::any_of(trials.begin(), trials.end(), [](const auto& t) { return t.dropped == 0; });
  std::size_t best = trials.size();
  for (std::size_t i = 0; i < trials.size(); ++i) {
    if (any_clean && trials[i].dropped != 0) continue;
    if (best == trials.size() || trials[i].tpot_p50_s < trials[best].tpot_p50_s) best = i;
  }
  serving_routing_choice out;
  out.routing = trials[best].routing;
  std::string others;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    if (i == best) continue;
    const serving_routing_trial& t = trials[i];
    others += fmt::format("{}{} {:.3f} ms{}", others.empty() ? "" : ", ", modsim::to_string(t.routing),
                          t.tpot_p50_s * 1e3, t.dropped ? fmt::format(" with {} dropped tokens", t.dropped) : "");
  }
  const serving_routing_trial& w = trials[best];
  out.why = fmt::format("{}: the lower TPOT p50 {} ({:.3f} ms{}; {}) at the workload's mean decode batch {:.1f}",
                        modsim::to_string(w.routing), any_clean ? "with no dropped tokens" : "(every routing drops)",
                        w.tpot_p50_s * 1e3, w.dropped ? fmt::format(", {} dropped tokens", w.dropped) : "", others,
                        w.mean_decode_batch);
  out.trials = std::move(trials);
  return out;
}

sim::model_spec baseline_of(const configuration& c) { return c.baseline ? *c.baseline : sim::dense_baseline(c.model); }

std::string baseline_label(const configuration& c) {
  if (c.baseline) return c.baseline->name.empty() ? "baseline" : c.baseline->name;
  return (c.model.name.empty() ? std::string("the model") : c.model.name) + " without routing";
}

double capacity_of(const sim::model_spec& m) {
  if (!m.routing) return 1.0;
  for (const sim::layer_plan& l : sim::plan_layers(m))
    if (l.routed) return l.capacity;
  return m.routing->capacity;
}

std::string schedule_of(const sim::model_spec& m) {
  if (!m.routing) return "none";
  if (m.routing->layer_capacities.empty()) return sim::to_string(m.routing->sched);
  std::vector<bool> routed;
  for (const sim::layer_plan& l : sim::plan_layers(m)) routed.push_back(l.routed);
  const std::string preset = sim::schedule_preset(routed);
  return preset.empty() ? "custom" : preset;
}

sim::sweep_space default_sweep_space(const sim::model_spec& model) {
  sim::sweep_space space = sim::default_space(model);
  if (!model.routing) return space;
  const double cap = capacity_of(model);
  if (std::find(space.capacities.begin(), space.capacities.end(), cap) == space.capacities.end()) {
    space.capacities.push_back(cap);
    std::sort(space.capacities.begin(), space.capacities.end());
  }
  const std::string current = schedule_of(model);
  if (current != "custom" && current != "none") {
    const bool present = std::any_of(space.schedules.begin(), space.schedules.end(),
                                     [&](const sim::schedule& s) { return sim::to_string(s) == current; });
    if (!present) space.schedules.push_back(sim::parse_schedule(current, model.n_layers, "", "schedule"));
  }
  return space;
}

sim::sweep_space variant_space(const sim::model_spec& subject, std::vector<std::string>* notes) {
  sim::sweep_space s;
  if (subject.routing && subject.routing->sched.kind != sim::schedule_kind::none) {
    s.capacities = {subject.routing->capacity};
    s.schedules = {subject.routing->sched};
  } else {
    s.capacities = {0.125};
    s.schedules = {sim::schedule{sim::schedule_kind::every_other, 0, {}}};
    if (notes)
      notes->push_back("the model has no routing: MoD and MoDE are shown at the paper's 12.5%, every other layer");
  }
  s.variants = {sim::sweep_variant::dense, sim::sweep_variant::mod, sim::sweep_variant::moe,
                sim::sweep_variant::mode_staged, sim::sweep_variant::mode_integrated};
  return s;
}

attention_impl attention_of(const configuration& c) {
  if (c.attention) return *c.attention;
  return c.hardware ? sim::default_attention(*c.hardware) : sim::default_gpu_attention;
}

namespace {

// The validation section asked for: the hardware's cached one (absent: `missing` says why) or the
// rows given, scored against the hardware given with them or the configuration's.
std::optional<validation_section> validation_of(const configuration& c, const validation_request& q,
                                                std::string& missing) {
  if (q.from == validation_request::source::hardware) {
    std::string why;
    std::optional<validation_section> v = cached_validation_for_hardware(hardware_of(c, "validation"), &why);
    if (!v) missing = q.missing.empty() ? why : q.missing + "; " + why;
    return v;
  }
  if (q.points.empty()) throw input_error(q.label, "", "no measurement rows");
  const sim::hardware_spec& hw = q.hardware ? *q.hardware : hardware_of(c, "validation");
  validation_options vo;
  vo.calibrate = q.calibrate;
  return make_validation(q.points, hw, vo, q.label);
}

// The parallel section: the fastest splits over `q.gpus` GPUs (when given) and the split asked
// for (none given: the ranking's first), each beside the one-GPU step, for the model and its
// baseline.
parallel_section parallel_split(const sim::model_spec& model, const sim::model_spec& baseline,
                                const sim::workload& load, const sim::cost_model& cm, const parallel_request& q) {
  parallel_section ps;
  ps.gpus = q.gpus;
  sim::parallel_spec split = q.split;
  if (ps.gpus > 0) {
    ps.best_model = sim::best_splits(model, load, cm, ps.gpus);
    ps.best_baseline = sim::best_splits(baseline, load, cm, ps.gpus);
    // No split given: the ranking's first (the fastest that fits) is the one detailed.
    if (split.gpus() == 1 && split.ep == 1 && !ps.best_model.empty()) {
      const int m = split.micro_batches;
      split = ps.best_model.front().split;
      split.micro_batches = m;
    }
  }
  ps.model = sim::predict_parallel(model, load, cm, split);
  ps.baseline = sim::predict_parallel(baseline, load, cm, split);
  ps.one_gpu_model = sim::predict_parallel(model, load, cm, sim::parallel_spec{});
  ps.one_gpu_baseline = sim::predict_parallel(baseline, load, cm, sim::parallel_spec{});
  return ps;
}

// The serving comparison: the baseline served (when asked) and the model served; with
// q.fastest_routing and a routed model, served with each decode routing and the better kept
// (`chosen` receives the runs tried and the choice).
sim::des::serving_comparison serve_both(const configuration& c, const sim::model_spec& baseline,
                                        const sim::cost_model& cm, const serving_request& q, const control& ctl,
                                        std::optional<serving_routing_choice>& chosen) {
  namespace des = sim::des;
  const bool try_both = q.fastest_routing && c.model.routing;
  cancel_observer cancel(ctl);
  std::vector<des::serve_observer*> model_observers = q.observers;
  model_observers.push_back(&cancel);
  model_observers.insert(model_observers.end(), q.progress.begin(), q.progress.end());
  std::vector<des::serve_observer*> dense_observers = {&cancel};
  dense_observers.insert(dense_observers.end(), q.progress.begin(), q.progress.end());
  des::serving_comparison cmp;
  cmp.scenario = q.arrivals ? q.scenario : des::resolve_scenario(baseline, cm, c.load.type, q.scenario);
  if (q.dense) {
    cmp.dense = q.arrivals
                    ? des::serve_model(baseline, "dense", cm, c.load.type, cmp.scenario, *q.arrivals, dense_observers)
                    : des::serve_model(baseline, "dense", cm, c.load.type, cmp.scenario, dense_observers);
    check(ctl);
  }
  const std::string name = c.model.name.empty() ? "MoD" : c.model.name;
  auto serve = [&](const des::serving_scenario& sc, const std::vector<des::serve_observer*>& obs) {
    return q.arrivals ? des::serve_model(c.model, name, cm, c.load.type, sc, *q.arrivals, obs)
                      : des::serve_model(c.model, name, cm, c.load.type, sc, obs);
  };
  if (!try_both) {
    cmp.model = serve(cmp.scenario, model_observers);
  } else {
    // The workload's own decode batches decide: serve with each routing, keep the better run.
    std::vector<des::serve_observer*> trial_observers = {&cancel};
    trial_observers.insert(trial_observers.end(), q.progress.begin(), q.progress.end());
    std::vector<des::serving_run> runs;
    std::vector<serving_routing_trial> trials;
    for (decode_routing routing : {decode_routing::sync, decode_routing::pad}) {
      des::serving_scenario sc = cmp.scenario;
      sc.options.routing = routing;
      runs.push_back(serve(sc, trial_observers));
      const sim::des::serve_summary& sm = runs.back().summary;
      trials.push_back({routing, sm.tpot_s.p50, sm.dropped, sm.mean_decode_batch});
      check(ctl);
    }
    chosen = choose_serving_routing(std::move(trials));
    cmp.scenario.options.routing = chosen->routing;
    const std::size_t kept = chosen->routing == decode_routing::sync ? 0 : 1;
    if (q.observers.empty()) {
      cmp.model = std::move(runs[kept]);
    } else {  // the observers (a trace) see the kept run: serve it again, the same draws
      std::vector<des::serve_observer*> obs = q.observers;
      obs.push_back(&cancel);
      cmp.model = serve(cmp.scenario, obs);
    }
  }
  return cmp;
}

}  // namespace

analysis_result analyze(const configuration& c, const scenario& s, const control& ctl) {
  analysis_result r;
  r.config = c;
  say(ctl, 0, "FLOPs");
  // A training step's recomputation depends on the attention kernel (a fused one recomputes the
  // scores): as priced with hardware, unfused (the FLOP convention's count) without unless told.
  const attention_impl counted =
      c.attention ? *c.attention : (c.hardware ? sim::default_attention(*c.hardware) : attention_impl::unfused);
  // Each model's FLOPs once: the prediction times these, and without a given baseline the
  // model's dense totals are the baseline's.
  const sim::model_spec baseline = baseline_of(c);
  r.dense_flops = sim::evaluate_flops(baseline, c.load, counted);
  r.flops = c.baseline ? sim::evaluate_flops(c.model, c.load, counted)
                       : sim::evaluate_flops(c.model, c.load, r.dense_flops, counted);
  r.flop_classes = sim::roll_up(r.flops, r.dense_flops);
  check(ctl);

  std::optional<sim::cost_model> cost;
  r.attention = attention_of(c);
  if (c.hardware) {
    cost.emplace(*c.hardware, r.attention);
    r.cost_label = cost->label();
    r.attention_measured = cost->attention_measured();
    r.memory = sim::footprint_of(c.model, c.load, r.attention);
    r.memory_verdict = sim::memory_verdict(*r.memory, c.hardware->memory_bytes);
  }
  auto cost_of = [&](const char* what) -> const sim::cost_model& {
    if (!cost) (void)hardware_of(c, what);
    return *cost;
  };

  // Decode: one strategy and one set of routing draws for the prediction, the timeline and the
  // sweep (timeline_request; absent: its defaults, the fastest strategy).
  timeline_request decode_request = s.timeline ? *s.timeline : s.decode ? *s.decode : timeline_request{};
  if (c.load.run == sim::run_mode::decode && cost && (s.prediction || s.timeline || s.sweep || s.sampling)) {
    part(s, r.prediction_missing, [&] {
      r.decode_choice = choose_decode_strategy(c, baseline, *cost, decode_request);
      decode_request.routing = r.decode_choice->strategy.routing;
      decode_request.cuda_graph = r.decode_choice->strategy.cuda_graph;
    });
    check(ctl);
  }
  const decode_step_options decode_options = decode_request.decode_options();

  if (s.prediction) {
    say(ctl, 2, "predicted time");
    part(s, r.prediction_missing, [&] {
      const sim::cost_model& cm = cost_of("a prediction");
      // Each model timed once, then one prediction from those times: the FLOPs above op by op, or
      // in decode the discrete-event step (syncs and launches included), its band and stand-in
      // shares taken from the times it prints.
      auto times_of = [&](const sim::model_spec& m, const sim::flops_report& f) {
        return c.load.run == sim::run_mode::decode
                   ? decode_model_time(m, cm, c.load, decode_options, decode_request.draws)
                   : sim::time_model(m, f, cm);
      };
      r.prediction =
          sim::predict_from_times(c.model, c.load, cm, times_of(c.model, r.flops), times_of(baseline, r.dense_flops));
      r.time_classes = sim::roll_up(*r.prediction);
    });
    check(ctl);
  }
  if (s.training) {
    say(ctl, 3, "training step");
    part(s, r.training_missing, [&] {
      const sim::cost_model& cm = cost_of("a training step");
      if (s.training->flop_budget) (void)checked_flop_budget(*s.training->flop_budget, "--flop-budget");
      std::optional<sim::prediction> own;
      if (c.load.run != sim::run_mode::train || !r.prediction) {
        sim::workload w = c.load;
        w.run = sim::run_mode::train;
        own = sim::predict(c.model, baseline, w, cm);
      }
      r.training = make_training(own ? *own : *r.prediction, c.model, baseline, baseline_label(c), *c.hardware,
                                 r.attention, *s.training);
    });
    check(ctl);
  }
  if (s.parallel) {
    say(ctl, 4, "parallel split");
    part(s, r.parallel_missing, [&] {
      parallel_section ps = parallel_split(c.model, baseline, c.load, cost_of("a parallel split"), *s.parallel);
      if (s.parallel->headline) {  // the memory verdict is the split's, per GPU
        r.memory = ps.model.memory_per_gpu;
        r.memory_verdict = ps.model.memory_verdict;
        r.memory_scope = "per GPU of " + sim::to_string(ps.model.split);
      }
      r.parallel = std::move(ps);
    });
    check(ctl);
  }
  if (r.prediction && !r.memory_verdict.empty())
    r.prediction->notes.push_back("memory (" + r.memory_scope + "): " + r.memory_verdict);
  if (s.timeline) {
    say(ctl, 5, "step timeline");
    part(s, r.timeline_missing, [&] { r.timeline = step_timeline(c, cost_of("a timeline"), decode_request, r); });
    check(ctl);
  }
  if (s.sampling) {
    say(ctl, 8, "sampling map");
    part(s, r.sampling_missing, [&] {
      r.sampling =
          make_sampling_map(c.model, baseline, !c.baseline, cost_of("the sampling map"), c.load.type, *s.sampling);
    });
    check(ctl);
  }
  if (s.sweep) {
    say(ctl, 10, "sweeping the design space");
    part(s, r.sweep_missing, [&] {
      r.sweep = sweep_around(c, cost_of("a sweep"), *s.sweep, decode_options, decode_request.draws, ctl, 10, 55);
    });
    check(ctl);
  }
  if (s.variants) {
    say(ctl, 55, "MoD, MoE and MoDE variants");
    part(s, r.variants_missing, [&] {
      variants_section v;
      sim::sweep_options o;
      o.load = c.load;
      o.threads = s.sweep ? s.sweep->threads : 0;
      v.result = sim::run_sweep(c.model, variant_space(c.model, &v.notes), sim::predicted_time(cost_of("variants")), o);
      r.variants = std::move(v);
    });
    check(ctl);
  }
  if (s.validation.from == validation_request::source::none) {
    r.validation_missing = s.validation.missing;
  } else {
    say(ctl, 60, "validation");
    part(s, r.validation_missing, [&] { r.validation = validation_of(c, s.validation, r.validation_missing); });
    check(ctl);
  }
  if (s.serving) {
    say(ctl, 65, "serving simulation");
    part(s, r.serving_missing, [&] {
      sim::des::serving_comparison cmp =
          serve_both(c, baseline, cost_of("serving"), *s.serving, ctl, r.serving_routing);
      r.serving = std::move(cmp);
    });
    check(ctl);
  }
  say(ctl, 100, "done");
  return r;
}

}  // namespace modsim::analysis
