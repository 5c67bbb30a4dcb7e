#include "sim/cost/sweep.hpp"

#include "sim/common/io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "core/error.hpp"
#include "sim/model/flops.hpp"
#include "sim/cost/predict.hpp"

namespace modsim::sim {

const char* to_string(sweep_variant v) {
  switch (v) {
    case sweep_variant::dense:
      return "dense";
    case sweep_variant::mod:
      return "mod";
    case sweep_variant::moe:
      return "moe";
    case sweep_variant::mode_staged:
      return "mode_staged";
    case sweep_variant::mode_integrated:
      return "mode_integrated";
  }
  return "?";
}

const char* display_name(sweep_variant v) {
  switch (v) {
    case sweep_variant::dense:
      return "dense";
    case sweep_variant::mod:
      return "MoD";
    case sweep_variant::moe:
      return "MoE";
    case sweep_variant::mode_staged:
      return "MoDE staged";
    case sweep_variant::mode_integrated:
      return "MoDE integrated";
  }
  return "?";
}

int noop_experts_for(int experts, double capacity) {
  return std::max(1, static_cast<int>(std::lround(double(experts) * (1.0 - capacity) / capacity)));
}

sweep_variant variant_of(const model_spec& model) {
  if (!model.moe) return model.routing ? sweep_variant::mod : sweep_variant::dense;
  switch (model.moe->variant) {
    case moe_variant::staged:
      return sweep_variant::mode_staged;
    case moe_variant::integrated:
      return sweep_variant::mode_integrated;
    case moe_variant::moe:
    case moe_variant::none:
      break;
  }
  return sweep_variant::moe;
}

sweep_variant parse_sweep_variant(std::string_view text, const std::string& key) {
  if (text == "dense") return sweep_variant::dense;
  if (text == "mod") return sweep_variant::mod;
  if (text == "moe") return sweep_variant::moe;
  if (text == "mode_staged" || text == "staged") return sweep_variant::mode_staged;
  if (text == "mode_integrated" || text == "integrated") return sweep_variant::mode_integrated;
  throw input_error(
      "", key,
      "unknown variant '" + std::string(text) + "' (expected dense, mod, moe, mode_staged or mode_integrated)");
}

const char* to_string(sweep_axis a) {
  switch (a) {
    case sweep_axis::time_s:
      return "time_s";
    case sweep_axis::matmul_flops:
      return "matmul_flops";
    case sweep_axis::other_flops:
      return "other_flops";
    case sweep_axis::bytes:
      return "bytes";
    case sweep_axis::params:
      return "params";
  }
  return "?";
}

sweep_axis parse_sweep_axis(std::string_view text, const std::string& key) {
  for (sweep_axis a :
       {sweep_axis::time_s, sweep_axis::matmul_flops, sweep_axis::other_flops, sweep_axis::bytes, sweep_axis::params})
    if (text == to_string(a)) return a;
  throw input_error(
      "", key,
      "unknown axis '" + std::string(text) + "' (expected time_s, matmul_flops, other_flops, bytes or params)");
}

double sweep_point::value(sweep_axis a) const {
  switch (a) {
    case sweep_axis::time_s:
      return time_s;
    case sweep_axis::matmul_flops:
      return static_cast<double>(matmul_flops);
    case sweep_axis::other_flops:
      return static_cast<double>(other_flops);
    case sweep_axis::bytes:
      return static_cast<double>(bytes);
    case sweep_axis::params:
      return static_cast<double>(params);
  }
  return 0;
}

sweep_space default_space(const model_spec& model) {
  sweep_space s;
  s.capacities = {0.0625, 0.125, 0.25, 0.5, 0.75, 1.0};
  s.schedules.push_back(schedule{schedule_kind::every_other, 0, {}});
  s.schedules.push_back(schedule{schedule_kind::all, 0, {}});
  if (model.n_layers >= 4) s.schedules.push_back(schedule{schedule_kind::every_nth, 4, {}});
  s.variants = {sweep_variant::dense, sweep_variant::mod, sweep_variant::moe, sweep_variant::mode_staged,
                sweep_variant::mode_integrated};
  return s;
}

namespace {

// The base model's dimensions with neither routing nor MoE.
model_spec plain_dense(const model_spec& base) {
  model_spec m = base;
  m.routing.reset();
  m.moe.reset();
  return m;
}

moe_spec moe_settings(const model_spec& base) {
  moe_spec mo;
  if (base.moe) {
    mo = *base.moe;
  } else {
    mo.experts = 8;
    mo.top_k = 1;
    mo.capacity_factor = 0.0;
  }
  mo.noop_experts = 0;
  mo.variant = moe_variant::moe;
  return mo;
}

routing_spec routing_at(const model_spec& base, double capacity, const schedule& sched) {
  routing_spec r = base.routing ? *base.routing : routing_spec{};
  r.capacity = capacity;
  r.sched = sched;
  r.layer_capacities.clear();
  return r;
}

std::string capacity_text(double c) { return fmt::format("{:g}", c); }

}  // namespace

std::vector<sweep_point> enumerate_space(const model_spec& base, const sweep_space& space) {
  if (space.variants.empty()) throw input_error("", "--variants", "the design space has no variant");
  for (double c : space.capacities)
    if (!(c > 0 && c <= 1)) throw input_error("", "--capacities", fmt::format("{:g} is not in (0, 1]", c));
  std::vector<sweep_point> out;
  const model_spec dense = plain_dense(base);
  for (sweep_variant v : space.variants) {
    if (v == sweep_variant::dense || v == sweep_variant::moe) {
      sweep_point p;
      p.variant = v;
      p.model = dense;
      if (v == sweep_variant::moe) {
        p.model.moe = moe_settings(base);
        p.description = fmt::format("MoE E={} top-{}", p.model.moe->experts, p.model.moe->top_k);
      } else {
        p.description = "dense";
      }
      out.push_back(std::move(p));
      continue;
    }
    for (double c : space.capacities) {
      for (const schedule& sched : space.schedules) {
        if (sched.kind == schedule_kind::none) continue;
        sweep_point p;
        p.variant = v;
        p.capacity = c;
        p.schedule = to_string(sched);
        p.model = dense;
        p.model.routing = routing_at(base, c, sched);
        switch (v) {
          case sweep_variant::mod:
            p.description = fmt::format("MoD c={} {}", capacity_text(c), p.schedule);
            break;
          case sweep_variant::mode_staged:
            p.model.moe = moe_settings(base);
            p.model.moe->variant = moe_variant::staged;
            p.description = fmt::format("MoDE staged c={} {}", capacity_text(c), p.schedule);
            break;
          case sweep_variant::mode_integrated: {
            p.model.moe = moe_settings(base);
            p.model.moe->variant = moe_variant::integrated;
            p.noop_experts = noop_experts_for(p.model.moe->experts, c);
            p.model.moe->noop_experts = p.noop_experts;
            p.description = fmt::format("MoDE integrated c={} {} ({}+{} no-op)", capacity_text(c), p.schedule,
                                        p.model.moe->experts, p.noop_experts);
            break;
          }
          default:
            break;
        }
        out.push_back(std::move(p));
      }
    }
  }
  for (sweep_point& p : out) {
    if (!base.name.empty()) p.model.name = base.name + " [" + p.description + "]";
  }
  return out;
}

std::vector<bool> pareto_front(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw runtime_error("pareto_front: x and y differ in size");
  const std::size_t n = x.size();
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(x[i]) && std::isfinite(y[i])) order.push_back(i);
  // By x, then y: a point is on the front when its y is below every y seen at a smaller x,
  // or equal to the best (same x and y: a tie, kept).
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return x[a] != x[b] ? x[a] < x[b] : (y[a] != y[b] ? y[a] < y[b] : a < b);
  });
  std::vector<bool> front(n, false);
  double best_y = std::numeric_limits<double>::infinity();
  double best_x = std::numeric_limits<double>::infinity();
  for (std::size_t i : order) {
    if (y[i] < best_y) {
      front[i] = true;
      best_y = y[i];
      best_x = x[i];
    } else if (y[i] == best_y && x[i] == best_x) {
      front[i] = true;  // identical to a front point
    }
  }
  return front;
}

time_function predicted_time(const cost_model& cost) {
  return [cost](const model_spec& m, const workload& w) { return time_model(m, w, cost).total_s; };
}

namespace {

void evaluate_point(sweep_point& p, const workload& w, const time_function& time_of) {
  try {
    validate_model(p.model, p.model.source_file);
    const flops_report f = evaluate_flops(p.model, w);
    p.matmul_flops = f.totals.matmul_flops;
    p.other_flops = f.totals.other_flops;
    p.bytes = f.totals.bytes;
    p.params = f.params;
    p.time_s = time_of(p.model, w);
    p.feasible = true;
  } catch (const modsim::error& e) {
    if (e.kind() != error_kind::bad_input) throw;
    p.feasible = false;
    p.reason = e.what();
  }
}

}  // namespace

sweep_result run_sweep(const model_spec& base, const sweep_space& space, const time_function& time_of,
                       const sweep_options& options) {
  if (!time_of) throw runtime_error("run_sweep: no time function");
  sweep_result r;
  r.base_model = base.name;
  r.load = options.load;
  r.x_axis = options.x_axis;
  r.y_axis = options.y_axis;
  r.points = enumerate_space(base, space);

  // The dense reference: the swept dense point, or one evaluated on the side.
  sweep_point reference;
  reference.model = plain_dense(base);
  const bool has_dense = std::any_of(r.points.begin(), r.points.end(),
                                     [](const sweep_point& p) { return p.variant == sweep_variant::dense; });

  std::vector<sweep_point*> work;
  for (sweep_point& p : r.points) work.push_back(&p);
  if (!has_dense) work.push_back(&reference);

  unsigned threads = options.threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : options.threads;
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, work.size()));
  if (threads <= 1) {
    for (sweep_point* p : work) evaluate_point(*p, options.load, time_of);
  } else {
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto worker = [&] {
      for (;;) {
        const std::size_t i = next.fetch_add(1);
        if (i >= work.size()) return;
        try {
          evaluate_point(*work[i], options.load, time_of);
        } catch (...) {
          std::lock_guard<std::mutex> lock(failure_mutex);
          if (!failure) failure = std::current_exception();
          next.store(work.size());
          return;
        }
      }
    };
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (std::thread& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
  }

  const sweep_point* dense = &reference;
  for (const sweep_point& p : r.points)
    if (p.variant == sweep_variant::dense) {
      dense = &p;
      break;
    }
  if (!dense->feasible) throw input_error(base.source_file, "", "the dense configuration is invalid: " + dense->reason);
  r.dense_time_s = dense->time_s;
  r.dense_matmul_flops = dense->matmul_flops;

  std::vector<double> xs, ys;
  for (sweep_point& p : r.points) {
    if (p.feasible) {
      p.flops_ratio = r.dense_matmul_flops > 0
                          ? static_cast<double>(p.matmul_flops) / static_cast<double>(r.dense_matmul_flops)
                          : 0.0;
      p.time_ratio = r.dense_time_s > 0 ? p.time_s / r.dense_time_s : 0.0;
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    xs.push_back(p.feasible ? p.value(options.x_axis) : nan);
    ys.push_back(p.feasible ? p.value(options.y_axis) : nan);
  }
  const std::vector<bool> front = pareto_front(xs, ys);
  for (std::size_t i = 0; i < r.points.size(); ++i) r.points[i].pareto = front[i];
  return r;
}

int paper_point_index(const sweep_result& r) {
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const sweep_point& p = r.points[i];
    if (p.variant == sweep_variant::mod && std::abs(p.capacity - 0.125) < 1e-12 && p.schedule == "every_other")
      return static_cast<int>(i);
  }
  return -1;
}

std::string sweep_csv(const sweep_result& r) {
  std::string out =
      "description,variant,capacity,schedule,noop_experts,feasible,matmul_flops,other_flops,bytes,params,"
      "flops_ratio,time_s,time_ratio,pareto,reason\n";
  for (const sweep_point& p : r.points) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(p.description), to_string(p.variant),
                       p.capacity, csv_field(p.schedule), p.noop_experts, p.feasible ? "true" : "false", p.matmul_flops,
                       p.other_flops, p.bytes, p.params, p.flops_ratio, p.time_s, p.time_ratio,
                       p.pareto ? "true" : "false", csv_field(p.reason));
  }
  return out;
}

}  // namespace modsim::sim
