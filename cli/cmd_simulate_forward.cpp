// `modsim simulate forward`: one step (a forward pass, a training step or a decode step; over
// several GPUs with --tp/--pp/--dp/--ep) through the discrete-event executor (sim/des).
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

#include "analysis/analysis.hpp"
#include "cli/cmd_simulate.hpp"
#include "cli/common.hpp"
#include "cli/printer.hpp"
#include "sim/common/io.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/des/comparison.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/serving.hpp"
#include "sim/des/serving_fields.hpp"
#include "sim/des/step.hpp"
#include "sim/des/trace.hpp"
#include "core/error.hpp"
#include "sim/model/flops.hpp"

namespace modsim::cli {
namespace {

namespace json = boost::json;
namespace des = sim::des;

// ---- forward -----------------------------------------------------------------------------

struct forward_run {
  std::string model, hardware, cost_label;
  sim::workload load;
  analysis::timeline_request request;
  const des::timeline* tl = nullptr;
  std::int64_t decisions = 0, routed = 0;                 // decode routing draws
  const analysis::parallel_timeline* parallel = nullptr;  // a step over several GPUs
  int n_layers = 0;
  const analysis::analysis_result* analysis = nullptr;
};

json::object device_json(const des::device_summary& d) {
  return {{"device", d.device},           {"end_s", d.end_s},
          {"busy_s", d.busy_s},           {"compute_s", d.compute_s},
          {"comm_s", d.comm_s},           {"exposed_comm_s", d.exposed_comm_s},
          {"wait_host_s", d.wait_host_s}, {"wait_other_s", d.wait_other_s},
          {"kernels", d.kernels}};
}

// "layers 0-7" of stage s.
std::string stage_layers(const analysis::parallel_timeline& p, std::size_t s, int n_layers) {
  const int first = p.first_layer[s];
  const int last = s + 1 < p.first_layer.size() ? p.first_layer[s + 1] - 1 : n_layers - 1;
  std::string out = first == last ? fmt::format("layer {}", first) : fmt::format("layers {}-{}", first, last);
  if (s + 1 == p.first_layer.size()) out += " + LM head";
  return out;
}

// A one-GPU decode step: the strategy's mean step over the routing draws (the timeline is the
// first draw); null otherwise.
const analysis::decode_strategy_figure* mean_step(const forward_run& r) {
  if (r.load.run != sim::run_mode::decode || r.parallel || !r.analysis->decode_choice) return nullptr;
  for (const analysis::decode_strategy_figure& f : r.analysis->decode_choice->candidates)
    if (f.applies && f.strategy == r.analysis->decode_choice->strategy) return &f;
  return nullptr;
}

json::object class_json(const des::class_summary& c, double step_s) {
  json::object o;
  o["class"] = c.op_class;
  o["kernels"] = c.kernels;
  o["launches"] = c.launches;
  o["device_s"] = c.device_s;
  o["share_of_step"] = step_s > 0 ? c.device_s / step_s : 0.0;
  o["gpu_wait_before_s"] = c.wait_before_s;
  o["matmul_flops"] = c.matmul_flops;
  o["wasted_matmul_flops"] = c.wasted_matmul_flops;
  return o;
}

json::value forward_json(const forward_run& r) {
  const des::exec_summary& s = r.tl->summary;
  json::object root;
  root["model"] = r.model;
  root["hardware"] = r.hardware;
  root["cost_model"] = r.cost_label;
  add_attention_json(root, *r.analysis);
  root["workload"] = workload_json(r.load);
  root["graph"] = r.request.cuda_graph;
  root["decode_routing"] = des::to_string(r.request.routing);
  root["seed"] = r.request.seed;
  root["step_s"] = s.step_s;
  if (const auto& t = r.analysis->training)
    root["train_pricing"] = json::object{
        {"backward", t->backward}, {"attention_backward", t->attention_backward}, {"optimizer", t->optimizer}};
  if (const analysis::decode_strategy_figure* f = mean_step(r)) {
    // The decode step: the mean over the routing draws; the timeline below is the first draw.
    const analysis::decode_strategy_choice& ch = *r.analysis->decode_choice;
    root["strategy"] = ch.strategy.name();
    root["draws"] = ch.draws;
    root["step_s"] = f->model_s;
    root["timeline_step_s"] = s.step_s;
    root["decode_routing_choice"] = decode_choice_json(ch);
  }
  root["gpu_busy_s"] = s.gpu_busy_s;
  root["gpu_busy_pct"] = 100.0 * s.gpu_busy_fraction();
  root["gpu_wait_host_s"] = s.gpu_wait_host_s;
  root["host_busy_s"] = s.host_busy_s;
  root["host_sync_wait_s"] = s.host_sync_wait_s;
  root["kernels"] = s.kernels;
  root["launches"] = s.launches;
  root["syncs"] = s.syncs;
  root["matmul_flops"] = s.matmul_flops;
  root["wasted_matmul_flops"] = s.wasted_matmul_flops;
  if (r.load.run == sim::run_mode::decode) {
    root["decode_routing_decisions"] = r.decisions;
    root["decode_routed_tokens"] = r.routed;
  }
  json::array classes;
  for (const des::class_summary& c : s.by_class) classes.push_back(class_json(c, s.step_s));
  root["by_class"] = std::move(classes);
  if (r.parallel) {
    const analysis::parallel_timeline& p = *r.parallel;
    json::array first;
    for (const int f : p.first_layer) first.push_back(f);
    root["parallel"] = json::object{{"tp", p.split.tp},
                                    {"pp", p.split.pp},
                                    {"dp", p.split.dp},
                                    {"ep", p.split.ep},
                                    {"micro_batches", p.split.micro_batches},
                                    {"micro_batch", p.micro_batch},
                                    {"stage_first_layer", std::move(first)},
                                    {"predicted_step_s", p.predicted_step_s}};
  }
  if (!s.devices.empty()) {
    json::array devices;
    for (const des::device_summary& d : s.devices) devices.push_back(device_json(d));
    root["devices"] = std::move(devices);
  }
  return root;
}

std::string usec(double s) { return fmt::format("{:.2f} us", s * 1e6); }

// The CSV: one row per kernel, in launch order.
table kernel_table(const des::timeline& tl) {
  table t;
  t.columns = {"index",       "layer",    "op",
               "class",       "backward", "stream",
               "start_s",     "dur_s",    "gpu_wait_before_s",
               "launches",    "tokens",   "matmul_flops",
               "other_flops", "bytes",    "wasted_matmul_flops"};
  const bool devices = !tl.summary.devices.empty();
  if (devices) t.columns.push_back("device");
  t.people = false;
  t.csv = true;
  std::vector<double> start(tl.kernels.size(), 0), dur(tl.kernels.size(), 0), wait(tl.kernels.size(), 0);
  for (const des::span& sp : tl.spans) {
    const auto i = static_cast<std::size_t>(sp.kernel);
    if (sp.kind == des::span_kind::run) {
      start[i] = sp.start_s;
      dur[i] = sp.dur_s;
    } else if (sp.kind == des::span_kind::idle) {
      wait[i] += sp.dur_s;
    }
  }
  for (std::size_t i = 0; i < tl.kernels.size(); ++i) {
    const des::kernel& k = tl.kernels[i];
    t.rows.push_back({integer(static_cast<std::int64_t>(i)), k.layer >= 0 ? std::to_string(k.layer) : "",
                      std::string(des::to_string(k.op)), des::kernel_class(k), k.backward ? "true" : "false",
                      integer(k.stream), num(start[i]), num(dur[i]), num(wait[i]), integer(k.launches),
                      integer(k.tokens), integer(k.matmul_flops), integer(k.other_flops), integer(k.bytes),
                      integer(k.wasted_matmul_flops)});
    if (devices) t.rows.back().push_back(integer(k.device));
  }
  return t;
}

output forward_output(const forward_run& r) {
  const des::exec_summary& s = r.tl->summary;
  const bool decode = r.load.run == sim::run_mode::decode;
  output o;
  o.json = forward_json(r);
  o.head.push_back(
      fmt::format("{} on {} ({}): {}, batch {}, {} {}, {}, {}{}", r.model, r.hardware, r.cost_label,
                  sim::to_string(r.load.run), r.load.batch, decode ? "context" : "seq", r.load.seq_len,
                  sim::to_string(r.load.type), r.request.cuda_graph ? "CUDA graphs" : "eager launches",
                  decode && r.analysis->decode_choice
                      ? fmt::format(", decode strategy {}, seed {}", r.analysis->decode_choice->label(), r.request.seed)
                      : ""));
  o.head.push_back(attention_line(*r.analysis));
  if (const auto& t = r.analysis->training)
    o.head.push_back(fmt::format(
        "training step: each op's forward, recomputation ({}) and backward, then one optimizer kernel, priced as "
        "modsim predict --mode train prices them: backward = {}; attention backward = {}; optimizer = {}",
        modsim::to_string(r.load.recompute), t->backward, t->attention_backward, t->optimizer));
  const analysis::decode_strategy_figure* mean = mean_step(r);
  if (mean) o.head.push_back("decode strategies at this cell: " + decode_candidates_text(*r.analysis->decode_choice));
  table summary;
  summary.columns = {"", ""};
  summary.left_columns = 2;
  summary.rows = {
      {"step time", usec(s.step_s)},
      {"GPU busy", fmt::format("{} ({:.1f}%)", usec(s.gpu_busy_s), 100.0 * s.gpu_busy_fraction())},
      {"GPU waited on host", usec(s.gpu_wait_host_s)},
      {"host enqueuing", usec(s.host_busy_s)},
      {"host sync waits", fmt::format("{} ({} syncs)", usec(s.host_sync_wait_s), s.syncs)},
      {"kernels / launches", fmt::format("{} / {}", s.kernels, s.launches)},
      {"matmul GFLOP", fmt::format("{:.4f} (wasted on padding {:.4f})", static_cast<double>(s.matmul_flops) / 1e9,
                                   static_cast<double>(s.wasted_matmul_flops) / 1e9)}};
  if (mean) {
    // The step every face prints: the mean over the draws; the rows below are the first draw's.
    summary.rows[0] = {fmt::format("step time (mean of {} routing draws)", r.analysis->decode_choice->draws),
                       usec(mean->model_s)};
    summary.rows.insert(summary.rows.begin() + 1,
                        {fmt::format("this draw's step (seed {}, the rows below)", r.request.seed), usec(s.step_s)});
  }
  if (decode && r.decisions > 0)
    summary.rows.push_back(
        {"decode routed", fmt::format("{} of {} decisions ({:.3f})", r.routed, r.decisions,
                                      static_cast<double>(r.routed) / static_cast<double>(r.decisions))});
  if (r.parallel) {
    const analysis::parallel_timeline& p = *r.parallel;
    o.head.push_back(fmt::format(
        "{} GPUs as {}{}; one replica simulated, {} GPU{} (one per stage, each standing for its {} TP rank{})",
        p.split.gpus(), sim::to_string(p.split),
        p.split.pp > 1 ? fmt::format(", {} micro-batches of {} (1F1B)", p.split.micro_batches, p.micro_batch)
                       : std::string(),
        p.split.pp, p.split.pp > 1 ? "s" : "", p.split.tp, p.split.tp > 1 ? "s" : ""));
    if (p.split.pp > 1) {
      summary.rows[1][0] = fmt::format("GPU busy (mean of {})", p.split.pp);
      summary.rows[2][0] = fmt::format("GPU waited on host (mean of {})", p.split.pp);
      summary.rows[6][0] = fmt::format("matmul GFLOP ({} GPUs)", p.split.pp);
    }
    summary.rows.push_back({"closed form (modsim predict)", usec(p.predicted_step_s)});
  }
  o.tables.push_back(std::move(summary));
  if (!s.devices.empty()) {
    table g;
    g.columns = {"GPU",        "runs", "compute", "communication", "exposed comm", "idle: bubble, collectives",
                 "idle: host", "busy"};
    for (const des::device_summary& d : s.devices)
      g.rows.push_back({integer(d.device),
                        r.parallel ? stage_layers(*r.parallel, static_cast<std::size_t>(d.device), r.n_layers) : "all",
                        usec(d.compute_s), usec(d.comm_s), usec(d.exposed_comm_s), usec(d.wait_other_s),
                        usec(d.wait_host_s), fmt::format("{:.1f}%", s.step_s > 0 ? 100.0 * d.busy_s / s.step_s : 0.0)});
    o.tables.push_back(std::move(g));
  }
  table classes;
  classes.columns = {"op class", "kernels", "launches", "device", "share", "GPU waited before", "matmul GFLOP"};
  for (const des::class_summary& c : s.by_class)
    classes.rows.push_back({std::string(c.op_class), integer(c.kernels), integer(c.launches), usec(c.device_s),
                            fmt::format("{:.1f}%", s.step_s > 0 ? 100.0 * c.device_s / s.step_s : 0.0),
                            usec(c.wait_before_s), fmt::format("{:.4f}", static_cast<double>(c.matmul_flops) / 1e9)});
  o.tables.push_back(std::move(classes));
  o.tables.push_back(kernel_table(*r.tl));
  return o;
}

}  // namespace

int simulate_forward(const po::variables_map& vm, output_format format) {
  const sim::hardware_spec hw = sim::load_hardware(sim::resolve_config(vm["hardware"].as<std::string>(), "hardware"));
  const sim::model_spec model = load_model_arg(vm["model"].as<std::string>(), vm);
  const sim::workload w = workload_from(vm, sim::default_dtype(hw));

  analysis::scenario scenario;
  scenario.prediction = false;
  analysis::timeline_request& q = scenario.timeline.emplace(step_options_from(vm));
  if (w.run == sim::run_mode::train) scenario.training.emplace();  // for how the step is priced
  if (const auto pr = parallel_from(vm)) {
    if (vm.count("gpus"))
      throw input_error("", "--gpus", "is a `modsim predict` option (it ranks splits); simulate takes one split");
    q.split = pr->split;
  }
  const analysis::analysis_result a = analysis::analyze({model, w, hw, std::nullopt, attention_from(vm)}, scenario);
  if (a.decode_choice) {  // the strategy the step ran with (the fastest, unless the user chose)
    q.routing = a.decode_choice->strategy.routing;
    q.cuda_graph = a.decode_choice->strategy.cuda_graph;
  }

  const forward_run r{model.name,
                      hw.name,
                      a.cost_label,
                      w,
                      q,
                      &*a.timeline,
                      a.decode_decisions,
                      a.decode_routed,
                      a.timeline_parallel ? &*a.timeline_parallel : nullptr,
                      model.n_layers,
                      &a};
  if (vm.count("trace")) {
    const std::string title =
        fmt::format("modsim simulate forward: {} on {} ({}, batch {}, {} {})", model.name, hw.name,
                    sim::to_string(w.run), w.batch, w.run == sim::run_mode::decode ? "context" : "seq", w.seq_len);
    sim::write_file_atomically(vm["trace"].as<std::string>(), a.timeline_parallel
                                                                  ? des::chrome_trace_parallel(*a.timeline, title)
                                                                  : des::chrome_trace(*a.timeline, title));
  }
  print(forward_output(r), format, std::cout);
  return exit_ok;
}

}  // namespace modsim::cli
