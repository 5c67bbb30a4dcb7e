// `modsim simulate forward|serve MODEL --hardware HW`: the discrete-event simulator
// (sim/des). `forward` is one step (forward pass, training step or decode step) as a host
// enqueuing kernels and a GPU stream running them; `serve` is a serving run with continuous
// batching, a paged KV cache and causal-predictor routing. Results to stdout (table, JSON,
// CSV); --trace writes Chrome trace-event JSON, --per-request a CSV (temporary file + rename).
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
#include "cli/common.hpp"
#include "cli/printer.hpp"
#include "sim/io.hpp"
#include "sim/config.hpp"
#include "sim/cost.hpp"
#include "sim/des/comparison.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/serving.hpp"
#include "sim/des/serving_fields.hpp"
#include "sim/des/step.hpp"
#include "sim/des/trace.hpp"
#include "core/error.hpp"
#include "sim/flops.hpp"

namespace modsim::cli {
namespace {

namespace json = boost::json;
namespace des = sim::des;

const char* const k_usage =
    "usage: modsim simulate forward MODEL --hardware HW [--batch B] [--seq S] [--mode forward|train|decode]\n"
    "                               [--dtype D] [--graph] [--decode-routing sync|pad] [--pad-capacity C]\n"
    "                               [--seed N] [--tp N] [--pp N] [--dp N] [--ep N] [--micro-batches M]\n"
    "                               [--trace FILE.json] [--format table|json|csv|markdown]\n"
    "       modsim simulate serve MODEL --hardware HW [--rate R --requests N | --arrivals FILE.csv] [--seed N]\n"
    "                               [--prompt-tokens D] [--output-tokens D] [--max-seqs N]\n"
    "                               [--max-batched-tokens N] [--chunked-prefill N] [--kv-budget BYTES]\n"
    "                               [--graph] [--decode-routing sync|pad] [--pad-capacity C] [--baseline MODEL]\n"
    "                               [--tp N] [--pp N] [--ep N] [--per-request FILE.csv] [--trace FILE.json]\n"
    "                               [--format table|json|csv|markdown]\n"
    "\n"
    "Discrete-event simulation of MODEL on HW with the cost model's op times. `forward` simulates one\n"
    "step as a host thread enqueuing kernels (host_enqueue_s each) and a GPU stream running them\n"
    "(+ kernel_launch_s each): step time, GPU busy %, time the GPU waited on the host, per op class.\n"
    "--graph = CUDA graphs (one launch per step, split at host syncs). --mode decode draws each\n"
    "sequence's routing at each routed layer (probability = capacity, --seed); --decode-routing sync\n"
    "reads the routed count back to the host before sizing the routed block, pad sizes it to\n"
    "--pad-capacity of the batch with no sync (wasted FLOPs; default: the layer's capacity + 3 sigma\n"
    "of the binomial routed count, min(1, c + 3 sqrt(c(1-c)/B)), rounded up to whole rows). The decode\n"
    "step time is the one `modsim predict --mode decode` prints. --tp/--pp/--dp/--ep split the step over\n"
    "GPUs: each pipeline stage is a GPU with its own host, a compute stream and streams for the layers'\n"
    "collectives, the stage sends and the gradient buckets; 1F1B micro-batches; the table splits each\n"
    "GPU's time into compute, exposed communication and idle (bubble). `serve` simulates requests arriving\n"
    "(Poisson --rate/--requests, or --arrivals CSV with arrival_s,prompt_tokens,output_tokens),\n"
    "continuous batching, a paged KV cache of device memory minus weights (or --kv-budget) with\n"
    "preemption by recompute. Token distributions: N, uniform:A:B, exp:MEAN. The dense baseline (--baseline\n"
    "MODEL, default MODEL without routing) serves the same requests beside the model (JSON: \"dense\",\n"
    "\"baseline\"). --tp/--pp/--ep serve on that many GPUs (a step's TP all-reduces and EP all-to-alls on\n"
    "their own stream; with --pp the step passes the stages in turn); --dp N dispatches the requests\n"
    "round-robin to N such replicas. Same seed, same output.";

const char* const k_short_usage =
    "usage: modsim simulate forward|serve MODEL --hardware HW [options]   (modsim simulate --help for the options)";

std::string num(double x) { return fmt::format("{}", x); }

void add_common_options(po::options_description& o) {
  // what, model and hardware are required, checked in that order after parsing (so that a missing
  // subcommand is reported as such, not as a missing --model).
  o.add_options()("what", po::value<std::string>(), "forward | serve")(
      "model", po::value<std::string>(), "model JSON, HF config.json or shipped model name")(
      "hardware", po::value<std::string>(), "hardware JSON (or a shipped name: cpu, h100-sxm, h200)")(
      "trace", po::value<std::string>(), "write Chrome trace-event JSON (Perfetto, chrome://tracing) here")(
      "format", po::value<std::string>()->default_value("table"), "table | json | csv | markdown");
  add_step_options(o);
}

// ---- forward -----------------------------------------------------------------------------

struct forward_run {
  std::string model, hardware, cost_label;
  sim::workload load;
  analysis::timeline_request request;
  const des::timeline* tl = nullptr;
  std::int64_t decisions = 0, routed = 0;                 // decode routing draws
  const analysis::parallel_timeline* parallel = nullptr;  // a step over several GPUs
  int n_layers = 0;
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
  root["workload"] = workload_json(r.load);
  root["graph"] = r.request.cuda_graph;
  root["decode_routing"] = des::to_string(r.request.routing);
  root["seed"] = r.request.seed;
  root["step_s"] = s.step_s;
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
  if (r.load.mode == sim::run_mode::decode) {
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
                      std::string(k.op), des::kernel_class(k), k.backward ? "true" : "false", integer(k.stream),
                      num(start[i]), num(dur[i]), num(wait[i]), integer(k.launches), integer(k.tokens),
                      integer(k.matmul_flops), integer(k.other_flops), integer(k.bytes),
                      integer(k.wasted_matmul_flops)});
    if (devices) t.rows.back().push_back(integer(k.device));
  }
  return t;
}

output forward_output(const forward_run& r) {
  const des::exec_summary& s = r.tl->summary;
  const bool decode = r.load.mode == sim::run_mode::decode;
  output o;
  o.json = forward_json(r);
  o.head.push_back(fmt::format(
      "{} on {} ({}): {}, batch {}, {} {}, {}, {}{}", r.model, r.hardware, r.cost_label, sim::to_string(r.load.mode),
      r.load.batch, decode ? "context" : "seq", r.load.seq_len, sim::to_string(r.load.type),
      r.request.cuda_graph ? "CUDA graphs" : "eager launches",
      decode ? fmt::format(", decode routing {} (seed {})", des::to_string(r.request.routing), r.request.seed) : ""));
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
    classes.rows.push_back({c.op_class, integer(c.kernels), integer(c.launches), usec(c.device_s),
                            fmt::format("{:.1f}%", s.step_s > 0 ? 100.0 * c.device_s / s.step_s : 0.0),
                            usec(c.wait_before_s), fmt::format("{:.4f}", static_cast<double>(c.matmul_flops) / 1e9)});
  o.tables.push_back(std::move(classes));
  o.tables.push_back(kernel_table(*r.tl));
  return o;
}

int simulate_forward(const po::variables_map& vm, output_format format) {
  const sim::hardware_spec hw = sim::load_hardware(resolve_config(vm["hardware"].as<std::string>(), "hardware"));
  const sim::model_spec model = load_model_arg(vm["model"].as<std::string>(), vm);
  const sim::workload w = workload_from(vm, hw.kind == "gpu" ? sim::dtype::bf16 : sim::dtype::fp32);

  analysis::scenario scenario;
  scenario.prediction = false;
  analysis::timeline_request& q = scenario.timeline.emplace(step_options_from(vm));
  if (const auto pr = parallel_from(vm)) {
    if (vm.count("gpus"))
      throw input_error("", "--gpus", "is a `modsim predict` option (it ranks splits); simulate takes one split");
    q.split = pr->split;
  }
  const analysis::analysis_result a = analysis::analyze({model, w, hw, std::nullopt}, scenario);

  const forward_run r{model.name,
                      hw.name,
                      a.cost_label,
                      w,
                      q,
                      &*a.timeline,
                      a.decode_decisions,
                      a.decode_routed,
                      a.timeline_parallel ? &*a.timeline_parallel : nullptr,
                      model.n_layers};
  if (vm.count("trace")) {
    const std::string title =
        fmt::format("modsim simulate forward: {} on {} ({}, batch {}, {} {})", model.name, hw.name,
                    sim::to_string(w.mode), w.batch, w.mode == sim::run_mode::decode ? "context" : "seq", w.seq_len);
    sim::write_file_atomically(vm["trace"].as<std::string>(), a.timeline_parallel
                                                                  ? des::chrome_trace_parallel(*a.timeline, title)
                                                                  : des::chrome_trace(*a.timeline, title));
  }
  print(forward_output(r), format, std::cout);
  return exit_ok;
}

// ---- serve -------------------------------------------------------------------------------

struct serve_context {
  std::string model, hardware, cost_label, source;
  sim::dtype type = sim::dtype::bf16;
  des::serve_options opt;
};

json::value serve_json(const serve_context& c, const des::serving_comparison& cmp) {
  json::object root = des::serve_json(cmp.model.summary);
  root["model"] = c.model;
  root["hardware"] = c.hardware;
  root["cost_model"] = c.cost_label;
  root["dtype"] = sim::to_string(c.type);
  root["arrivals"] = c.source;
  root["seed"] = c.opt.seed;
  root["graph"] = c.opt.cuda_graph;
  root["decode_routing"] = des::to_string(c.opt.routing);
  // The dense baseline served under the same scenario (the report's and the explorer's pair).
  root["dense"] = des::serve_json(cmp.dense.summary);
  return root;
}

// The CSV: metric,value,dense_value (sim/des/serving_fields.hpp's CSV rows).
table serve_csv(const des::serve_summary& s, const des::serve_summary& d) {
  table t;
  t.columns = {"metric", "value", "dense_value"};
  t.people = false;
  t.csv = true;
  for (const des::serve_field& f : des::serve_fields())
    if (f.csv) t.rows.push_back({des::csv_key(f), des::machine_text(f, s), des::machine_text(f, d)});
  return t;
}

output serve_output(const serve_context& c, const des::serving_comparison& cmp) {
  const des::serve_summary& s = cmp.model.summary;
  const des::serve_summary& d = cmp.dense.summary;
  output o;
  o.json = serve_json(c, cmp);
  o.head.push_back(fmt::format("{} on {} ({}), {}; {}; seed {}; {}, decode routing {}", c.model, c.hardware,
                               c.cost_label, sim::to_string(c.type), c.source, c.opt.seed,
                               c.opt.cuda_graph ? "CUDA graphs" : "eager launches", des::to_string(c.opt.routing)));
  o.head.push_back("beside it, its dense baseline served the same requests");
  auto ratio = [](double a, double b) { return b > 0 ? fmt::format("{:.3f}x", a / b) : std::string("-"); };
  table t;
  t.columns = {"", c.model.empty() ? "model" : c.model, "dense", "vs dense"};
  for (const des::serve_field& f : des::serve_fields()) {
    if (!f.format) continue;
    t.rows.push_back({f.label, des::people_text(f, s), des::people_text(f, d),
                      f.compare ? ratio(f.value(s), f.value(d)) : std::string()});
  }
  o.tables.push_back(std::move(t));
  o.tables.push_back(serve_csv(s, d));
  return o;
}

std::string per_request_csv(const std::vector<des::request_record>& requests) {
  std::string out =
      "id,arrival_s,admitted_s,first_token_s,finish_s,prompt_tokens,output_tokens,preemptions,ttft_s,tpot_s,latency_"
      "s\n";
  for (const des::request_record& q : requests) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", q.id, num(q.arrival_s), num(q.admitted_s),
                       num(q.first_token_s), num(q.finish_s), q.prompt_tokens, q.output_tokens, q.preemptions,
                       num(q.ttft_s()), q.output_tokens > 1 ? num(q.tpot_s()) : std::string(), num(q.latency_s()));
  }
  return out;
}

std::int64_t positive(const po::variables_map& vm, const char* key, std::int64_t min) {
  const std::int64_t v = vm[key].as<std::int64_t>();
  if (v < min) throw input_error("", std::string("--") + key, "must be >= " + std::to_string(min));
  return v;
}

int simulate_serve(const po::variables_map& vm, output_format format) {
  const sim::hardware_spec hw = sim::load_hardware(resolve_config(vm["hardware"].as<std::string>(), "hardware"));
  const sim::model_spec model = load_model_arg(vm["model"].as<std::string>(), vm);
  sim::workload w;
  w.type = hw.kind == "gpu" ? sim::dtype::bf16 : sim::dtype::fp32;
  if (vm.count("dtype")) w.type = sim::parse_dtype(vm["dtype"].as<std::string>(), "", "--dtype");

  serve_context c;
  c.model = model.name;
  c.hardware = hw.name;
  c.type = w.type;
  des::serve_options& o = c.opt;
  const analysis::timeline_request step = step_options_from(vm);
  o.seed = step.seed;
  o.max_seqs = positive(vm, "max-seqs", 1);
  o.max_batched_tokens = positive(vm, "max-batched-tokens", 1);
  o.chunked_prefill = positive(vm, "chunked-prefill", 0);
  o.block_tokens = positive(vm, "block-tokens", 1);
  o.routing = step.routing;
  o.pad_capacity = step.pad_capacity;
  o.cuda_graph = step.cuda_graph;
  if (vm.count("kv-budget")) {
    o.kv_budget_bytes = vm["kv-budget"].as<double>();
    if (!(o.kv_budget_bytes > 0)) throw input_error("", "--kv-budget", "must be > 0 bytes");
  }

  // The scenario of the serving comparison (sim/des/comparison.hpp) — the report's and the
  // explorer's — with the flags given over it: the same inputs give the same TTFT everywhere.
  analysis::scenario scenario;
  scenario.prediction = false;
  analysis::serving_request& q = scenario.serving.emplace();
  // Without --decode-routing: the routing that is faster at the scenario's typical decode cell
  // (the sampling map's), as the report and the explorer serve.
  q.fastest_routing = vm["decode-routing"].defaulted();
  des::serving_scenario& sc = q.scenario;
  sc.seed = o.seed;
  sc.options = o;
  sc.prompt = vm["prompt-tokens"].as<std::string>();
  sc.output = vm["output-tokens"].as<std::string>();
  (void)des::parse_length_dist(sc.prompt, "--prompt-tokens");
  (void)des::parse_length_dist(sc.output, "--output-tokens");
  if (vm.count("arrivals")) {
    if (vm.count("rate") || vm.count("requests"))
      throw input_error("", "--arrivals", "give either --arrivals or --rate/--requests");
    const std::string path = vm["arrivals"].as<std::string>();
    q.arrivals = des::parse_arrivals_csv(sim::read_text_file(path), path);
    c.source = fmt::format("{} requests from {}", q.arrivals->size(), path);
  } else {
    if (vm.count("rate")) {
      sc.rate_per_s = vm["rate"].as<double>();
      if (!(sc.rate_per_s > 0)) throw input_error("", "--rate", "must be > 0");
    }
    if (vm.count("requests")) sc.requests = vm["requests"].as<std::int64_t>();
  }
  if (const auto pr = parallel_from(vm)) sc.split = pr->split;
  des::serve_trace trace(fmt::format("modsim simulate serve: {} on {}", model.name, hw.name));
  if (vm.count("trace")) q.observers.push_back(&trace);
  const analysis::configuration config{model, w, hw, baseline_from(vm)};
  const analysis::analysis_result a = analysis::analyze(config, scenario);
  const des::serving_comparison& cmp = *a.serving;
  c.cost_label = a.cost_label;
  c.opt.routing = cmp.scenario.options.routing;
  if (!q.arrivals)
    c.source = fmt::format(
        "{} Poisson arrivals at {:.2f}/s{}, prompt {}, output {}", cmp.scenario.requests, cmp.scenario.rate_per_s,
        vm.count("rate") ? "" : " (70% of what the dense baseline sustains)", cmp.scenario.prompt, cmp.scenario.output);

  if (vm.count("trace")) sim::write_file_atomically(vm["trace"].as<std::string>(), trace.json());
  if (vm.count("per-request"))
    sim::write_file_atomically(vm["per-request"].as<std::string>(), per_request_csv(cmp.model.requests));
  output out = serve_output(c, cmp);
  out.json.as_object()["baseline"] = baseline_json(config);
  if (a.serving_routing) {
    const analysis::routing_choice& ch = *a.serving_routing;
    out.json.as_object()["decode_routing_choice"] =
        json::object{{"chosen", std::string(modsim::to_string(ch.routing))},
                     {"step_s", ch.step_s},
                     {"other", std::string(modsim::to_string(ch.other))},
                     {"other_step_s", ch.other_step_s},
                     {"batch", ch.batch},
                     {"context", ch.context},
                     {"source", ch.measured ? "measured" : "predicted (sampling map)"}};
    out.head.push_back(
        fmt::format("decode routing {}: the faster at batch {}, context {} ({} step {:.3f} ms vs {} {:.3f} ms, {})",
                    modsim::to_string(ch.routing), ch.batch, ch.context, modsim::to_string(ch.routing), ch.step_s * 1e3,
                    modsim::to_string(ch.other), ch.other_step_s * 1e3, ch.measured ? "measured" : "predicted"));
  }
  if (config.baseline)
    out.head[1] = "beside it, the baseline " + analysis::baseline_label(config) + " served the same requests";
  if (sc.split && (sc.split->gpus() > 1 || sc.split->ep > 1)) {
    out.head.push_back(fmt::format("each served on {} GPUs, {}{}", sc.split->gpus(), sim::to_string(*sc.split),
                                   sc.split->pp > 1 ? " (a step passes the stages in turn: one batch in flight)" : ""));
    out.json.as_object()["parallel"] =
        json::object{{"tp", sc.split->tp}, {"pp", sc.split->pp}, {"dp", sc.split->dp}, {"ep", sc.split->ep}};
  }
  print(out, format, std::cout);
  return exit_ok;
}

}  // namespace

int cmd_simulate(const std::vector<std::string>& args) {
  po::options_description options("modsim simulate options");
  add_common_options(options);
  options.add_options()("dtype", po::value<std::string>(),
                        "fp32 | bf16 | fp16 (default bf16 on GPU hardware, fp32 on a CPU)");
  po::options_description fwd("forward");
  fwd.add_options()("batch", po::value<std::int64_t>(), "sequences per batch (default 1)")(
      "seq", po::value<std::int64_t>(), "tokens per sequence; in decode, the cached context length (default 2048)")(
      "mode", po::value<std::string>(), "forward | train | decode (default forward)")(
      "workload", po::value<std::string>(), "workload JSON file {batch, seq_len, mode, dtype}; flags override it");
  po::options_description serve("serve");
  const des::serving_scenario defaults;
  serve.add_options()(
      "rate", po::value<double>(),
      "Poisson arrival rate, requests/s (default: 70% of what the dense baseline sustains, as the report)")(
      "requests", po::value<std::int64_t>(), "requests to simulate (default 300, as the report)")(
      "arrivals", po::value<std::string>(), "CSV trace: arrival_s,prompt_tokens,output_tokens (instead of --rate)")(
      "prompt-tokens", po::value<std::string>()->default_value(defaults.prompt),
      "prompt length: N | uniform:A:B | exp:MEAN")("output-tokens",
                                                   po::value<std::string>()->default_value(defaults.output),
                                                   "output length: N | uniform:A:B | exp:MEAN")(
      "max-seqs", po::value<std::int64_t>()->default_value(256), "most sequences in a step")(
      "max-batched-tokens", po::value<std::int64_t>()->default_value(8192), "most tokens in a step")(
      "chunked-prefill", po::value<std::int64_t>()->default_value(0), "prefill chunk per sequence and step (0 = off)")(
      "block-tokens", po::value<std::int64_t>()->default_value(16), "tokens per paged KV block")(
      "kv-budget", po::value<double>(), "KV cache budget in bytes (default: device memory - weights)")(
      "per-request", po::value<std::string>(), "write one CSV row per request here");
  add_baseline_option(serve);
  options.add(fwd).add(serve);
  add_routing_overrides(options);
  po::options_description split("GPUs");
  add_parallel_options(split);
  options.add(split);
  po::positional_options_description positional;
  positional.add("what", 1).add("model", 1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;

  const std::string what = vm.count("what") ? vm["what"].as<std::string>() : std::string();
  if (what != "forward" && what != "serve")
    throw input_error("", "",
                      (what.empty() ? std::string("simulate needs a subcommand")
                                    : "simulate needs a subcommand before the model (got '" + what + "')") +
                          ": forward or serve\n" + k_short_usage);
  if (!vm.count("model")) throw input_error("", "", "simulate " + what + " needs a MODEL\n" + k_short_usage);
  if (!vm.count("hardware")) throw input_error("", "--hardware", std::string("is required\n") + k_short_usage);
  const output_format format = parse_format(vm["format"].as<std::string>());
  if (what == "forward") {
    for (const char* k : {"rate", "requests", "arrivals", "per-request", "kv-budget", "baseline"}) {
      if (vm.count(k)) throw input_error("", std::string("--") + k, "is a `simulate serve` option");
    }
    return simulate_forward(vm, format);
  }
  if (what == "serve") {
    for (const char* k : {"batch", "seq", "mode", "workload", "micro-batches", "gpus"}) {
      if (vm.count(k)) throw input_error("", std::string("--") + k, "is a `simulate forward` option");
    }
    return simulate_serve(vm, format);
  }
  return exit_bad_input;  // unreachable: `what` was checked above
}

}  // namespace modsim::cli
