// `modsim sweep MODEL --hardware HW --out CSV`: the design space around MODEL (capacities ×
// schedules × variants), each point's FLOPs and predicted time, evaluated in parallel, with
// the Pareto front marked; the CSV to --out (temporary file + rename), a table or JSON on stdout.
#include <fmt/format.h>

#include <boost/json.hpp>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/analysis.hpp"
#include "cli/common.hpp"
#include "cli/printer.hpp"
#include "sim/common/io.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "core/error.hpp"
#include "sim/cost/sweep.hpp"

namespace modsim::cli {
namespace {

const char* const k_usage =
    "usage: modsim sweep MODEL --hardware HW [--capacities C,..] [--schedules S,..] [--variants V,..]\n"
    "                         [--pareto-axes X,Y] [--threads N] [--batch B] [--seq S] [--mode M] [--dtype T]\n"
    "                         [--tp N --pp N --dp N --ep N --micro-batches M] [--attention fused|unfused]\n"
    "                         --out CSV [--format table|json|csv|markdown]\n"
    "\n"
    "The design space around MODEL: every variant (dense, mod, moe, mode_staged, mode_integrated)\n"
    "at every capacity and schedule, its exact matmul FLOPs (modsim flops) and predicted time\n"
    "(modsim predict; in --mode decode the discrete-event decode step) on HW, evaluated in parallel.\n"
    "Ratios are against the baseline modsim predict uses: the dense point (MODEL without routing or\n"
    "MoE), for an MoE model the MoE without MoD, or --baseline MODEL (a matched-quality dense\n"
    "model). The Pareto front minimises --pareto-axes (default matmul_flops,time_s;\n"
    "also other_flops, bytes, params). Schedules: every_other, all, every_nth:N, none, or a layer\n"
    "list written with '+' (1+3+5). One CSV row per point goes to --out; stdout gets a table\n"
    "(or JSON / the CSV). With --tp/--pp/--dp/--ep every point is one step over that split of GPUs\n"
    "(modsim predict --tp ...: TP shards, collectives, 1F1B stages); a point the split does not fit\n"
    "(heads not divisible, no MoE for --ep) is infeasible with the reason.";

sim::sweep_space space_from(const po::variables_map& vm, const sim::model_spec& model) {
  sim::sweep_space space = sim::default_space(model);
  if (vm.count("capacities")) {
    space.capacities.clear();
    for (const std::string& s : comma_list(vm["capacities"].as<std::string>(), "--capacities")) {
      std::size_t used = 0;
      double c = 0;
      try {
        c = std::stod(s, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != s.size() || !(c > 0 && c <= 1))
        throw input_error("", "--capacities", "'" + s + "' is not a capacity in (0, 1]");
      space.capacities.push_back(c);
    }
  }
  if (vm.count("schedules")) {
    space.schedules.clear();
    for (std::string s : comma_list(vm["schedules"].as<std::string>(), "--schedules")) {
      for (char& ch : s)
        if (ch == '+') ch = ',';
      space.schedules.push_back(sim::parse_schedule(s, model.n_layers, "", "--schedules"));
    }
  }
  if (vm.count("variants")) {
    space.variants.clear();
    for (const std::string& s : comma_list(vm["variants"].as<std::string>(), "--variants"))
      space.variants.push_back(sim::parse_sweep_variant(s, "--variants"));
  }
  return space;
}

std::string gflop(double f) { return fmt::format("{:.2f}", f / 1e9); }

boost::json::value sweep_json(const analysis::sweep_section& s, const std::string& hw_label,
                              const std::string& out_path) {
  const sim::sweep_result& r = s.result;
  boost::json::array points;
  for (const auto& p : r.points) {
    boost::json::object o;
    o["description"] = p.description;
    o["variant"] = sim::to_string(p.variant);
    o["capacity"] = p.capacity;
    o["schedule"] = p.schedule;
    o["noop_experts"] = p.noop_experts;
    o["feasible"] = p.feasible;
    if (!p.feasible) o["reason"] = p.reason;
    o["matmul_flops"] = p.matmul_flops;
    o["other_flops"] = p.other_flops;
    o["bytes"] = p.bytes;
    o["params"] = p.params;
    o["flops_ratio"] = p.flops_ratio;
    o["time_s"] = p.time_s;
    o["time_ratio"] = p.time_ratio;
    o["pareto"] = p.pareto;
    points.push_back(std::move(o));
  }
  boost::json::object root;
  root["model"] = r.base_model;
  root["hardware"] = hw_label;
  root["workload"] = workload_json(r.load);
  root["pareto_axes"] = {sim::to_string(r.x_axis), sim::to_string(r.y_axis)};
  root["dense_time_s"] = r.dense_time_s;
  root["dense_matmul_flops"] = r.dense_matmul_flops;
  root["paper_point"] = sim::paper_point_index(r);
  root["current_point"] = s.current;
  root["csv"] = out_path;
  root["points"] = std::move(points);
  return root;
}

output output_of(const analysis::sweep_section& s, const std::string& hw_label, const std::string& out_path,
                 std::string csv) {
  const sim::sweep_result& r = s.result;
  output o;
  o.json = sweep_json(s, hw_label, out_path);
  o.csv = std::move(csv);
  o.head.push_back(fmt::format("{}: {} points on {}; {}, batch {}, seq {}, {}", r.base_model, r.points.size(), hw_label,
                               sim::to_string(r.load.run), r.load.batch, r.load.seq_len, sim::to_string(r.load.type)));
  o.head.push_back(fmt::format("Pareto front (*) minimises {} and {}; ratios vs dense ({} GFLOP, {:.4f} ms)",
                               sim::to_string(r.x_axis), sim::to_string(r.y_axis),
                               gflop(static_cast<double>(r.dense_matmul_flops)), r.dense_time_s * 1e3));
  table t;
  t.columns = {"configuration", "matmul GFLOP", "FLOPs", "time ms", "time", "front", ""};
  t.left_columns = 1;
  const int paper = sim::paper_point_index(r);
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    const bool current = static_cast<int>(i) == s.current, paper_point = static_cast<int>(i) == paper;
    const std::string mark = current && paper_point ? "<- MODEL (the paper's point)"
                             : current              ? "<- MODEL"
                             : paper_point          ? "<- the paper's point"
                                                    : "";
    if (!p.feasible) {
      t.rows.push_back({p.description, "infeasible: " + p.reason, "", "", "", "", mark});
      continue;
    }
    t.rows.push_back({p.description, gflop(static_cast<double>(p.matmul_flops)), fmt::format("{:.3f}x", p.flops_ratio),
                      fmt::format("{:.4f}", p.time_s * 1e3), fmt::format("{:.3f}x", p.time_ratio), p.pareto ? "*" : "",
                      mark});
  }
  o.tables.push_back(std::move(t));
  return o;
}

}  // namespace

int cmd_sweep(const std::vector<std::string>& args) {
  po::options_description options("modsim sweep options");
  options.add_options()("model", po::value<std::string>()->required(),
                        "model JSON, HF config.json or shipped model name")(
      "hardware", po::value<std::string>(), "hardware JSON or shipped name (h100-sxm, h200, cpu); required")(
      "capacities", po::value<std::string>(), "comma-separated capacities (default 0.0625,0.125,0.25,0.5,0.75,1)")(
      "schedules", po::value<std::string>(), "comma-separated schedules (default every_other,all,every_nth:4)")(
      "variants", po::value<std::string>(),
      "comma-separated variants (default dense,mod,moe,mode_staged,mode_integrated)")(
      "pareto-axes", po::value<std::string>()->default_value("matmul_flops,time_s"), "the two minimised axes X,Y")(
      "threads", po::value<unsigned>()->default_value(0), "worker threads (0 = all hardware threads)")(
      "out", po::value<std::string>(), "the CSV to write (required)")(
      "format", po::value<std::string>()->default_value("table"), "stdout: table | json | csv | markdown");
  add_workload_options(options);
  add_baseline_option(options);
  add_parallel_options(options);
  add_attention_option(options);
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;

  const output_format format = parse_format(vm["format"].as<std::string>());
  if (!vm.count("hardware")) throw input_error("", "--hardware", "required (a hardware JSON or h100-sxm, h200, cpu)");
  if (!vm.count("out")) throw input_error("", "--out", "required (the CSV to write)");
  const std::vector<std::string> axes = comma_list(vm["pareto-axes"].as<std::string>(), "--pareto-axes");
  if (axes.size() != 2) throw input_error("", "--pareto-axes", "expected two axes X,Y");

  const sim::model_spec model = load_model_arg(vm["model"].as<std::string>(), vm);
  const sim::hardware_spec hw = sim::load_hardware(sim::resolve_config(vm["hardware"].as<std::string>(), "hardware"));
  analysis::scenario scenario;
  scenario.prediction = false;
  scenario.sweep = analysis::sweep_request{};
  scenario.sweep->space = space_from(vm, model);
  scenario.sweep->add_current = false;  // the CSV holds exactly the space asked for
  scenario.sweep->threads = vm["threads"].as<unsigned>();
  scenario.sweep->x_axis = sim::parse_sweep_axis(axes[0], "--pareto-axes");
  scenario.sweep->y_axis = sim::parse_sweep_axis(axes[1], "--pareto-axes");
  if (const auto pr = parallel_from(vm)) {
    if (pr->gpus > 0) throw input_error("", "--gpus", "sweep times one split: give --tp/--pp/--dp/--ep");
    scenario.sweep->split = pr->split;
  }
  const sim::workload w = workload_from(vm, sim::default_dtype(hw));
  const analysis::configuration config{model, w, hw, baseline_from(vm), attention_from(vm)};
  const analysis::analysis_result a = analysis::analyze(config, scenario);
  const sim::sweep_result& r = a.sweep->result;
  std::string csv = sim::sweep_csv(r);
  const std::string out_path = vm["out"].as<std::string>();
  sim::write_file_atomically(out_path, csv);

  output out = output_of(*a.sweep, fmt::format("{} ({})", hw.name, a.cost_label), out_path, std::move(csv));
  out.json.as_object()["baseline"] = baseline_json(config);
  add_attention_json(out.json.as_object(), a);
  out.head.push_back("baseline (\"dense\" in the ratios): " + analysis::baseline_label(config));
  out.head.push_back(attention_line(a));
  if (a.decode_choice && !a.sweep->result.points.empty() && !scenario.sweep->split) {
    // Every decode point is a step of the strategy chosen at the configuration's cell.
    out.head.push_back("decode: every point is one decode step, strategy " + a.decode_choice->label() +
                       " at the configuration's cell; " + decode_candidates_text(*a.decode_choice));
    out.json.as_object()["decode_routing_choice"] = decode_choice_json(*a.decode_choice);
  }
  print(out, format, std::cout);
  std::cerr << fmt::format("sweep: {} points, {} on the Pareto front, written to {}\n", r.points.size(),
                           std::count_if(r.points.begin(), r.points.end(), [](const auto& p) { return p.pareto; }),
                           out_path);
  return exit_ok;
}

}  // namespace modsim::cli
