#pragma once
// The design space around a model: capacities × schedules × variants (dense, MoD, MoE, MoDE
// staged, MoDE integrated). Each point is a model_spec evaluated for FLOPs (sim/model/flops) and
// predicted time (sim/cost/predict) on one hardware; the points are evaluated in parallel and
// returned in a fixed order (the order of enumerate_space), and the Pareto front over two
// chosen axes (default: time and matmul FLOPs, both minimised) is marked.
//
// Variants of a point, built from the base model's dimensions:
//  - dense: no routing, no MoE (the reference every ratio is taken against);
//  - mod: MoD routing at `capacity` on `schedule`, dense MLP;
//  - moe: an MoE MLP at every layer, no routing (the model's `mode` settings when it has
//    them, else 8 experts, top-1, dropless);
//  - mode_staged: MoD routing at `capacity` on `schedule` around blocks whose MLP is an MoE;
//  - mode_integrated: an MoE MLP at every layer, and at the routed layers of `schedule`
//    N no-op experts join the E real ones, N = max(1, round(E·(1 − capacity)/capacity)), so
//    that about `capacity` of the tokens reach a real expert.
// dense and moe do not depend on capacity or schedule and appear once.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/model/spec.hpp"

namespace modsim::sim {

class cost_model;

enum class sweep_variant { dense, mod, moe, mode_staged, mode_integrated };
const char* to_string(sweep_variant v);
// The name people read in tables and legends: "dense", "MoD", "MoE", "MoDE staged", "MoDE integrated".
const char* display_name(sweep_variant v);
// The variant a configuration is: dense, MoD (routing, no MoE), or its MoE / MoDE variant.
sweep_variant variant_of(const model_spec& model);

// The no-op experts that give MoDE integrated a capacity c with `experts` real ones: a token
// reaches a real expert with probability E/(E+N), so N = round(E·(1−c)/c), at least 1.
int noop_experts_for(int experts, double capacity);
// "dense", "mod", "moe", "mode_staged" (or "staged"), "mode_integrated" (or "integrated").
// Throws modsim::error(bad_input) naming `key` otherwise.
sweep_variant parse_sweep_variant(std::string_view text, const std::string& key);

struct sweep_space {
  std::vector<double> capacities;   // each in (0, 1]
  std::vector<schedule> schedules;  // `none` is skipped for routed variants
  std::vector<sweep_variant> variants;
};

// The default space: capacities {0.0625, 0.125, 0.25, 0.5, 0.75, 1}, schedules
// {every_other, all, every_nth:4} (every_nth:4 only when n_layers >= 4), all five variants.
// It contains the paper's point (MoD, 12.5%, every_other).
sweep_space default_space(const model_spec& model);

// The quantities a point can be ranked on (Pareto axes). All are minimised.
enum class sweep_axis { time_s, matmul_flops, other_flops, bytes, params };
const char* to_string(sweep_axis a);
sweep_axis parse_sweep_axis(std::string_view text, const std::string& key);

struct sweep_point {
  std::string description;  // e.g. "MoD c=0.125 every_other"
  sweep_variant variant = sweep_variant::dense;
  double capacity = 1.0;          // 1 for dense and moe
  std::string schedule = "none";  // to_string(schedule); "none" for dense and moe
  int noop_experts = 0;           // mode_integrated only
  model_spec model;               // the configuration evaluated
  // Results (valid when `feasible`).
  bool feasible = true;
  std::string reason;             // why not, when !feasible (e.g. a validation message)
  std::int64_t matmul_flops = 0;  // per forward pass (or the workload's mode), FLOPs
  std::int64_t other_flops = 0;
  std::int64_t bytes = 0;
  std::int64_t params = 0;
  double time_s = 0;       // predicted, seconds
  double flops_ratio = 0;  // matmul_flops / the dense point's
  double time_ratio = 0;   // time_s / the dense point's
  bool pareto = false;     // on the front of the chosen axes (feasible points only)

  double value(sweep_axis a) const;
};

// The predicted time of a model under a workload, seconds. Must be callable from several
// threads at once.
using time_function = std::function<double(const model_spec&, const workload&)>;

// time_model(model, w, cost).total_s (sim/cost/predict.hpp): ops + launch overhead, the same
// total_s as predict(). The cost model is copied.
time_function predicted_time(const cost_model& cost);

struct sweep_options {
  workload load;
  unsigned threads = 0;  // 0 = std::thread::hardware_concurrency(); 1 = serial
  sweep_axis x_axis = sweep_axis::matmul_flops;
  sweep_axis y_axis = sweep_axis::time_s;
};

struct sweep_result {
  std::string base_model;
  workload load;
  sweep_axis x_axis = sweep_axis::matmul_flops;
  sweep_axis y_axis = sweep_axis::time_s;
  std::vector<sweep_point> points;  // in enumerate_space order; points[0] is dense when swept
  double dense_time_s = 0;
  std::int64_t dense_matmul_flops = 0;
};

// The configurations of `space` around `base`, in a fixed order: variants in the order given,
// and for each routed variant capacities (outer) × schedules (inner). Results are not filled.
// Throws modsim::error(bad_input) for a capacity outside (0, 1] or an empty space.
std::vector<sweep_point> enumerate_space(const model_spec& base, const sweep_space& space);

// Evaluates every point (FLOPs via evaluate_flops, time via `time_of`) on `options.threads`
// threads, computes the ratios against the dense configuration of `base` (evaluated too when
// the space has no dense variant) and marks the Pareto front. A point whose model is invalid
// is returned infeasible with the reason; other exceptions propagate.
sweep_result run_sweep(const model_spec& base, const sweep_space& space, const time_function& time_of,
                       const sweep_options& options = {});

// pareto[i] is true when no point j is at least as good on both axes and better on one
// (minimising x and y). Points with a non-finite coordinate are never on the front. Equal
// points are all on the front.
std::vector<bool> pareto_front(const std::vector<double>& x, const std::vector<double>& y);

// Index of the paper's point (MoD, capacity 0.125, every_other) in `r.points`; -1 when absent.
int paper_point_index(const sweep_result& r);

// The CSV (header + one row per point): description, variant, capacity, schedule,
// noop_experts, feasible, matmul_flops, other_flops, bytes, params, flops_ratio, time_s,
// time_ratio, pareto, reason. Numbers are exact (shortest round-trip text).
std::string sweep_csv(const sweep_result& r);

}  // namespace modsim::sim
