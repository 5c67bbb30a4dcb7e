#include "analysis/analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/error.hpp"
#include "sim/config.hpp"
#include "sim/cost.hpp"
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

sweep_section sweep_around(const configuration& c, const sim::cost_model& cost, const sweep_request& r,
                           const control& ctl, int from_pct, int to_pct) {
  const sim::sweep_space space = r.space ? *r.space : default_sweep_space(c.model);
  const sim::time_function inner = sim::predicted_time(cost);
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

  // The configuration's own point: the one of its variant with its FLOPs and time.
  const sim::model_time cur = sim::time_model(c.model, c.load, cost);
  const sim::sweep_variant variant = sim::variant_of(c.model);
  auto& points = out.result.points;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const sim::sweep_point& p = points[i];
    if (p.feasible && p.variant == variant && p.matmul_flops == cur.matmul_flops &&
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

sim::des::timeline step_timeline(const configuration& c, const sim::cost_model& cost, const timeline_request& r,
                                 std::int64_t& decisions, std::int64_t& routed_tokens) {
  namespace des = sim::des;
  const des::step_builder b(c.model, c.load.type, des::device_model_of(cost, c.load.type));
  std::vector<des::kernel> kernels;
  if (c.load.mode == sim::run_mode::decode) {
    des::rng rng(r.seed);
    std::vector<std::int64_t> routed;
    const des::step_load load =
        des::decode_load(b, c.load.batch, c.load.seq_len, r.routing, r.pad_capacity, rng, &routed, &decisions);
    for (std::size_t i = 0; i < routed.size(); ++i)
      if (b.layers()[i].mod_routed) routed_tokens += routed[i];
    kernels = b.step(load, r.routing);
  } else {
    kernels = b.forward(c.load);
  }
  des::exec_options eo;
  eo.cuda_graph = r.cuda_graph;
  return des::simulate_execution(std::move(kernels), b.device(), eo);
}

}  // namespace

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

analysis_result analyze(const configuration& c, const scenario& s, const control& ctl) {
  analysis_result r;
  r.config = c;
  say(ctl, 0, "FLOPs");
  r.flops = sim::evaluate_flops(c.model, c.load);
  r.dense_flops = sim::evaluate_flops(sim::dense_baseline(c.model), c.load);
  r.flop_classes = sim::roll_up(r.flops, r.dense_flops);
  check(ctl);

  std::optional<sim::cost_model> cost;
  if (c.hardware) {
    cost.emplace(*c.hardware);
    r.cost_label = cost->label();
  }
  auto cost_of = [&](const char* what) -> const sim::cost_model& {
    if (!cost) (void)hardware_of(c, what);
    return *cost;
  };

  if (s.prediction) {
    say(ctl, 2, "predicted time");
    part(s, r.prediction_missing, [&] {
      r.prediction = sim::predict(c.model, c.load, cost_of("a prediction"));
      r.time_classes = sim::roll_up(*r.prediction);
    });
    check(ctl);
  }
  if (s.timeline) {
    say(ctl, 5, "step timeline");
    part(s, r.timeline_missing, [&] {
      r.timeline = step_timeline(c, cost_of("a timeline"), *s.timeline, r.decode_decisions, r.decode_routed);
    });
    check(ctl);
  }
  if (s.sweep) {
    say(ctl, 10, "sweeping the design space");
    part(s, r.sweep_missing, [&] { r.sweep = sweep_around(c, cost_of("a sweep"), *s.sweep, ctl, 10, 55); });
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
    part(s, r.validation_missing, [&] {
      if (s.validation.from == validation_request::source::hardware) {
        std::string why;
        r.validation = cached_validation_for_hardware(hardware_of(c, "validation"), &why);
        if (!r.validation)
          r.validation_missing = s.validation.missing.empty() ? why : s.validation.missing + "; " + why;
      } else {
        if (s.validation.points.empty()) throw input_error(s.validation.label, "", "no measurement rows");
        const sim::hardware_spec& hw = s.validation.hardware ? *s.validation.hardware : hardware_of(c, "validation");
        validation_options vo;
        vo.calibrate = s.validation.calibrate;
        r.validation = make_validation(s.validation.points, hw, vo, s.validation.label);
      }
    });
    check(ctl);
  }
  if (s.serving) {
    say(ctl, 65, "serving simulation");
    part(s, r.serving_missing, [&] {
      namespace des = sim::des;
      const sim::cost_model& cm = cost_of("serving");
      const serving_request& q = *s.serving;
      cancel_observer cancel(ctl);
      std::vector<des::serve_observer*> model_observers = q.observers;
      model_observers.push_back(&cancel);
      des::serve_observer* dense_observers[] = {&cancel};
      des::serving_comparison cmp;
      cmp.scenario = q.arrivals ? q.scenario : des::resolve_scenario(c.model, cm, c.load.type, q.scenario);
      if (q.dense) {
        cmp.dense = q.arrivals ? des::serve_model(sim::dense_baseline(c.model), "dense", cm, c.load.type, cmp.scenario,
                                                  *q.arrivals, dense_observers)
                               : des::serve_model(sim::dense_baseline(c.model), "dense", cm, c.load.type, cmp.scenario,
                                                  dense_observers);
        check(ctl);
      }
      const std::string name = c.model.name.empty() ? "MoD" : c.model.name;
      cmp.model = q.arrivals
                      ? des::serve_model(c.model, name, cm, c.load.type, cmp.scenario, *q.arrivals, model_observers)
                      : des::serve_model(c.model, name, cm, c.load.type, cmp.scenario, model_observers);
      r.serving = std::move(cmp);
    });
    check(ctl);
  }
  say(ctl, 100, "done");
  return r;
}

}  // namespace modsim::analysis
