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
#include <string>
#include <unistd.h>
#include <vector>

#include "cli/common.hpp"
#include "sim/io.hpp"
#include "sim/config.hpp"
#include "sim/cost.hpp"
#include "sim/des/comparison.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/serving.hpp"
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
    "                               [--seed N] [--trace FILE.json] [--format table|json|csv]\n"
    "       modsim simulate serve MODEL --hardware HW [--rate R --requests N | --arrivals FILE.csv] [--seed N]\n"
    "                               [--prompt-tokens D] [--output-tokens D] [--max-seqs N]\n"
    "                               [--max-batched-tokens N] [--chunked-prefill N] [--kv-budget BYTES]\n"
    "                               [--graph] [--decode-routing sync|pad] [--per-request FILE.csv]\n"
    "                               [--trace FILE.json] [--format table|json|csv]\n"
    "\n"
    "Discrete-event simulation of MODEL on HW with the cost model's op times. `forward` simulates one\n"
    "step as a host thread enqueuing kernels (host_enqueue_s each) and a GPU stream running them\n"
    "(+ kernel_launch_s each): step time, GPU busy %, time the GPU waited on the host, per op class.\n"
    "--graph = CUDA graphs (one launch per step, split at host syncs). --mode decode draws each\n"
    "sequence's routing at each routed layer (probability = capacity, --seed); --decode-routing sync\n"
    "reads the routed count back to the host before sizing the routed block, pad sizes it to\n"
    "--pad-capacity of the batch with no sync (wasted FLOPs). `serve` simulates requests arriving\n"
    "(Poisson --rate/--requests, or --arrivals CSV with arrival_s,prompt_tokens,output_tokens),\n"
    "continuous batching, a paged KV cache of device memory minus weights (or --kv-budget) with\n"
    "preemption by recompute. Token distributions: N, uniform:A:B, exp:MEAN. Same seed, same output.";

std::string num(double x) { return fmt::format("{}", x); }

des::decode_routing parse_routing(const std::string& text) {
  if (text == "sync") return des::decode_routing::sync;
  if (text == "pad") return des::decode_routing::pad;
  throw input_error("", "--decode-routing", "unknown mode '" + text + "' (expected sync or pad)");
}

double pad_capacity_of(const po::variables_map& vm) {
  const double c = vm["pad-capacity"].as<double>();
  if (!(c > 0 && c <= 1)) throw input_error("", "--pad-capacity", "must be in (0, 1]");
  return c;
}

std::uint64_t seed_of(const po::variables_map& vm) {
  const std::int64_t s = vm["seed"].as<std::int64_t>();
  if (s < 0) throw input_error("", "--seed", "must be >= 0");
  return static_cast<std::uint64_t>(s);
}

void add_common_options(po::options_description& o) {
  o.add_options()("what", po::value<std::string>()->required(), "forward | serve")(
      "model", po::value<std::string>()->required(), "model JSON, HF config.json or shipped model name")(
      "hardware", po::value<std::string>()->required(), "hardware JSON (or a shipped name: cpu, h100-sxm, h200)")(
      "graph", po::bool_switch(), "CUDA-graph mode: one launch per step (split at host syncs)")(
      "decode-routing", po::value<std::string>()->default_value("sync"), "MoD decode: sync | pad")(
      "pad-capacity", po::value<double>()->default_value(1.0),
      "pad mode: routed block sized to this fraction of the decode batch (tokens beyond it are dropped)")(
      "seed", po::value<std::int64_t>()->default_value(1), "seed of every random draw")(
      "trace", po::value<std::string>(), "write Chrome trace-event JSON (Perfetto, chrome://tracing) here")(
      "format", po::value<std::string>()->default_value("table"), "table | json | csv");
}

// ---- forward -----------------------------------------------------------------------------

struct forward_run {
  std::string model, hardware, cost_label;
  sim::workload load;
  bool graph = false;
  des::decode_routing routing = des::decode_routing::sync;
  double pad_capacity = 1.0;
  std::uint64_t seed = 0;
  des::timeline tl;
  std::int64_t decisions = 0, routed = 0;  // decode routing draws
};

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

void print_forward_json(const forward_run& r) {
  const des::exec_summary& s = r.tl.summary;
  json::object root;
  root["model"] = r.model;
  root["hardware"] = r.hardware;
  root["cost_model"] = r.cost_label;
  json::object wl;
  wl["batch"] = r.load.batch;
  wl["seq_len"] = r.load.seq_len;
  wl["mode"] = sim::to_string(r.load.mode);
  wl["dtype"] = sim::to_string(r.load.type);
  root["workload"] = std::move(wl);
  root["graph"] = r.graph;
  root["decode_routing"] = des::to_string(r.routing);
  root["seed"] = r.seed;
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
  std::cout << json::serialize(root) << "\n";
}

void print_forward_csv(const forward_run& r) {
  std::cout << "index,layer,op,class,backward,stream,start_s,dur_s,gpu_wait_before_s,launches,tokens,matmul_flops,"
               "other_flops,bytes,wasted_matmul_flops\n";
  std::vector<double> start(r.tl.kernels.size(), 0), dur(r.tl.kernels.size(), 0), wait(r.tl.kernels.size(), 0);
  for (const des::span& sp : r.tl.spans) {
    const auto i = static_cast<std::size_t>(sp.kernel);
    if (sp.kind == des::span_kind::run) {
      start[i] = sp.start_s;
      dur[i] = sp.dur_s;
    } else if (sp.kind == des::span_kind::idle) {
      wait[i] += sp.dur_s;
    }
  }
  for (std::size_t i = 0; i < r.tl.kernels.size(); ++i) {
    const des::kernel& k = r.tl.kernels[i];
    std::cout << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", i,
                             k.layer >= 0 ? std::to_string(k.layer) : "", k.op, des::kernel_class(k),
                             k.backward ? "true" : "false", k.stream, num(start[i]), num(dur[i]), num(wait[i]),
                             k.launches, k.tokens, k.matmul_flops, k.other_flops, k.bytes, k.wasted_matmul_flops);
  }
}

std::string usec(double s) { return fmt::format("{:.2f} us", s * 1e6); }

void print_forward_table(const forward_run& r) {
  const des::exec_summary& s = r.tl.summary;
  const bool decode = r.load.mode == sim::run_mode::decode;
  std::cout << fmt::format(
      "{} on {} ({}): {}, batch {}, {} {}, {}, {}{}\n", r.model, r.hardware, r.cost_label, sim::to_string(r.load.mode),
      r.load.batch, decode ? "context" : "seq", r.load.seq_len, sim::to_string(r.load.type),
      r.graph ? "CUDA graphs" : "eager launches",
      decode ? fmt::format(", decode routing {} (seed {})", des::to_string(r.routing), r.seed) : "");
  std::cout << fmt::format("step time            {}\n", usec(s.step_s));
  std::cout << fmt::format("GPU busy             {} ({:.1f}%)\n", usec(s.gpu_busy_s), 100.0 * s.gpu_busy_fraction());
  std::cout << fmt::format("GPU waited on host   {}\n", usec(s.gpu_wait_host_s));
  std::cout << fmt::format("host enqueuing       {}\n", usec(s.host_busy_s));
  std::cout << fmt::format("host sync waits      {} ({} syncs)\n", usec(s.host_sync_wait_s), s.syncs);
  std::cout << fmt::format("kernels / launches   {} / {}\n", s.kernels, s.launches);
  std::cout << fmt::format("matmul GFLOP         {:.4f} (wasted on padding {:.4f})\n",
                           static_cast<double>(s.matmul_flops) / 1e9, static_cast<double>(s.wasted_matmul_flops) / 1e9);
  if (decode && r.decisions > 0) {
    std::cout << fmt::format("decode routed        {} of {} decisions ({:.3f})\n", r.routed, r.decisions,
                             static_cast<double>(r.routed) / static_cast<double>(r.decisions));
  }
  std::cout << "\n"
            << fmt::format("{:<10}  {:>8}  {:>8}  {:>14}  {:>7}  {:>16}  {:>12}\n", "op class", "kernels", "launches",
                           "device", "share", "GPU waited before", "matmul GFLOP");
  for (const des::class_summary& c : s.by_class) {
    std::cout << fmt::format("{:<10}  {:>8}  {:>8}  {:>14}  {:>6.1f}%  {:>16}  {:>12.4f}\n", c.op_class, c.kernels,
                             c.launches, usec(c.device_s), s.step_s > 0 ? 100.0 * c.device_s / s.step_s : 0.0,
                             usec(c.wait_before_s), static_cast<double>(c.matmul_flops) / 1e9);
  }
}

int simulate_forward(const po::variables_map& vm, output_format format) {
  const sim::hardware_spec hw = sim::load_hardware(resolve_config(vm["hardware"].as<std::string>(), "hardware"));
  const sim::model_spec model = load_model_arg(vm["model"].as<std::string>(), vm);
  const sim::workload w = workload_from(vm, hw.kind == "gpu" ? sim::dtype::bf16 : sim::dtype::fp32);
  const sim::cost_model cm(hw);
  const des::step_builder b(model, w.type, des::device_model_of(cm, w.type));

  forward_run r;
  r.model = model.name;
  r.hardware = hw.name;
  r.cost_label = cm.label();
  r.load = w;
  r.graph = vm["graph"].as<bool>();
  r.routing = parse_routing(vm["decode-routing"].as<std::string>());
  r.pad_capacity = pad_capacity_of(vm);
  r.seed = seed_of(vm);

  std::vector<des::kernel> kernels;
  if (w.mode == sim::run_mode::decode) {
    des::rng rng(r.seed);
    std::vector<std::int64_t> routed;
    const des::step_load load =
        des::decode_load(b, w.batch, w.seq_len, r.routing, r.pad_capacity, rng, &routed, &r.decisions);
    for (std::size_t i = 0; i < routed.size(); ++i) {
      if (b.layers()[i].mod_routed) r.routed += routed[i];
    }
    kernels = b.step(load, r.routing);
  } else {
    kernels = b.forward(w);
  }
  des::exec_options eo;
  eo.cuda_graph = r.graph;
  r.tl = des::simulate_execution(std::move(kernels), b.device(), eo);

  if (vm.count("trace")) {
    const std::string title =
        fmt::format("modsim simulate forward: {} on {} ({}, batch {}, {} {})", model.name, hw.name,
                    sim::to_string(w.mode), w.batch, w.mode == sim::run_mode::decode ? "context" : "seq", w.seq_len);
    sim::write_file_atomically(vm["trace"].as<std::string>(), des::chrome_trace(r.tl, title));
  }
  switch (format) {
    case output_format::json:
      print_forward_json(r);
      break;
    case output_format::csv:
      print_forward_csv(r);
      break;
    case output_format::table:
      print_forward_table(r);
      break;
  }
  return exit_ok;
}

// ---- serve -------------------------------------------------------------------------------

json::object pct_json(const des::percentiles& p) {
  json::object o;
  o["p50"] = p.p50;
  o["p90"] = p.p90;
  o["p99"] = p.p99;
  o["mean"] = p.mean;
  return o;
}

struct serve_context {
  std::string model, hardware, cost_label, source;
  sim::dtype type = sim::dtype::bf16;
  des::serve_options opt;
};

void print_serve_json(const serve_context& c, const des::serve_summary& s) {
  json::object root;
  root["requests"] = s.requests;
  root["completed"] = s.completed;
  root["ttft_s"] = pct_json(s.ttft_s);
  root["tpot_s"] = pct_json(s.tpot_s);
  root["latency_s"] = pct_json(s.latency_s);
  root["throughput_tok_s"] = s.throughput_tok_s;
  root["kv_peak_bytes"] = s.kv_peak_bytes;
  root["kv_budget_bytes"] = s.kv_budget_blocks * s.kv_block_bytes;
  root["kv_block_bytes"] = s.kv_block_bytes;
  root["output_tokens"] = s.output_tokens;
  root["duration_s"] = s.duration_s;
  root["steps"] = s.steps;
  root["preemptions"] = s.preemptions;
  root["mean_in_system"] = s.mean_in_system;
  root["mean_decode_batch"] = s.mean_decode_batch;
  root["decode_routed_fraction"] = s.decode_routed_fraction;
  root["decode_routing_decisions"] = s.decode_decisions;
  root["dropped_tokens"] = s.dropped;
  root["gpu_busy_s"] = s.gpu_busy_s;
  root["gpu_wait_host_s"] = s.gpu_wait_host_s;
  root["host_sync_wait_s"] = s.host_sync_wait_s;
  root["matmul_flops"] = s.matmul_flops;
  root["wasted_matmul_flops"] = s.wasted_matmul_flops;
  root["events"] = s.events;
  root["model"] = c.model;
  root["hardware"] = c.hardware;
  root["cost_model"] = c.cost_label;
  root["dtype"] = sim::to_string(c.type);
  root["arrivals"] = c.source;
  root["seed"] = c.opt.seed;
  root["graph"] = c.opt.cuda_graph;
  root["decode_routing"] = des::to_string(c.opt.routing);
  std::cout << json::serialize(root) << "\n";
}

void print_serve_csv(const des::serve_summary& s) {
  std::cout << "metric,value\n";
  const auto row = [](const char* k, const std::string& v) { std::cout << k << "," << v << "\n"; };
  row("requests", std::to_string(s.requests));
  row("completed", std::to_string(s.completed));
  for (const auto& [name, p] : {std::pair<const char*, const des::percentiles*>{"ttft_s", &s.ttft_s},
                                {"tpot_s", &s.tpot_s},
                                {"latency_s", &s.latency_s}}) {
    std::cout << name << "_p50," << num(p->p50) << "\n"
              << name << "_p90," << num(p->p90) << "\n"
              << name << "_p99," << num(p->p99) << "\n"
              << name << "_mean," << num(p->mean) << "\n";
  }
  row("throughput_tok_s", num(s.throughput_tok_s));
  row("kv_peak_bytes", std::to_string(s.kv_peak_bytes));
  row("kv_budget_bytes", std::to_string(s.kv_budget_blocks * s.kv_block_bytes));
  row("output_tokens", std::to_string(s.output_tokens));
  row("duration_s", num(s.duration_s));
  row("steps", std::to_string(s.steps));
  row("preemptions", std::to_string(s.preemptions));
  row("mean_in_system", num(s.mean_in_system));
  row("mean_decode_batch", num(s.mean_decode_batch));
  row("decode_routed_fraction", num(s.decode_routed_fraction));
  row("dropped_tokens", std::to_string(s.dropped));
  row("gpu_busy_s", num(s.gpu_busy_s));
  row("gpu_wait_host_s", num(s.gpu_wait_host_s));
  row("host_sync_wait_s", num(s.host_sync_wait_s));
  row("matmul_flops", std::to_string(s.matmul_flops));
  row("wasted_matmul_flops", std::to_string(s.wasted_matmul_flops));
}

std::string ms(double s) { return fmt::format("{:.2f} ms", s * 1e3); }

void print_serve_table(const serve_context& c, const des::serve_summary& s) {
  std::cout << fmt::format("{} on {} ({}), {}; {}; seed {}; {}, decode routing {}\n", c.model, c.hardware, c.cost_label,
                           sim::to_string(c.type), c.source, c.opt.seed,
                           c.opt.cuda_graph ? "CUDA graphs" : "eager launches", des::to_string(c.opt.routing));
  std::cout << fmt::format("requests             {} completed of {}, {} output tokens in {:.3f} s\n", s.completed,
                           s.requests, s.output_tokens, s.duration_s);
  std::cout << fmt::format("throughput           {:.1f} tokens/s\n", s.throughput_tok_s);
  std::cout << fmt::format("{:<20} {:>12} {:>12} {:>12} {:>12}\n", "", "p50", "p90", "p99", "mean");
  for (const auto& [name, p] : {std::pair<const char*, const des::percentiles*>{"TTFT", &s.ttft_s},
                                {"TPOT", &s.tpot_s},
                                {"latency", &s.latency_s}}) {
    std::cout << fmt::format("{:<20} {:>12} {:>12} {:>12} {:>12}\n", name, ms(p->p50), ms(p->p90), ms(p->p99),
                             ms(p->mean));
  }
  std::cout << fmt::format("KV cache             peak {:.3f} GB of {:.3f} GB budget ({} blocks of {} bytes)\n",
                           static_cast<double>(s.kv_peak_bytes) / 1e9,
                           static_cast<double>(s.kv_budget_blocks * s.kv_block_bytes) / 1e9, s.kv_budget_blocks,
                           s.kv_block_bytes);
  std::cout << fmt::format("steps                {} (mean decode batch {:.1f}), {} preemptions\n", s.steps,
                           s.mean_decode_batch, s.preemptions);
  std::cout << fmt::format("in system (mean)     {:.2f} requests\n", s.mean_in_system);
  if (s.decode_decisions > 0) {
    std::cout << fmt::format("decode routed        {:.4f} of {} decisions ({} dropped by padding)\n",
                             s.decode_routed_fraction, s.decode_decisions, s.dropped);
  }
  const double busy = s.gpu_busy_s + s.gpu_wait_host_s;
  std::cout << fmt::format(
      "GPU                  busy {:.3f} s, waited on host {:.3f} s ({:.1f}% of step time), host sync waits {:.3f} s\n",
      s.gpu_busy_s, s.gpu_wait_host_s, busy > 0 ? 100.0 * s.gpu_wait_host_s / busy : 0.0, s.host_sync_wait_s);
  std::cout << fmt::format("matmul GFLOP         {:.1f} (wasted on padding {:.1f})\n",
                           static_cast<double>(s.matmul_flops) / 1e9, static_cast<double>(s.wasted_matmul_flops) / 1e9);
}

std::string per_request_csv(const des::serve_result& r) {
  std::string out =
      "id,arrival_s,admitted_s,first_token_s,finish_s,prompt_tokens,output_tokens,preemptions,ttft_s,tpot_s,latency_"
      "s\n";
  for (const des::request_record& q : r.requests) {
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
  sim::dtype t = hw.kind == "gpu" ? sim::dtype::bf16 : sim::dtype::fp32;
  if (vm.count("dtype")) t = sim::parse_dtype(vm["dtype"].as<std::string>(), "", "--dtype");
  const sim::cost_model cm(hw);
  const des::step_builder b(model, t, des::device_model_of(cm, t));

  serve_context c;
  c.model = model.name;
  c.hardware = hw.name;
  c.cost_label = cm.label();
  c.type = t;
  des::serve_options& o = c.opt;
  o.seed = seed_of(vm);
  o.max_seqs = positive(vm, "max-seqs", 1);
  o.max_batched_tokens = positive(vm, "max-batched-tokens", 1);
  o.chunked_prefill = positive(vm, "chunked-prefill", 0);
  o.block_tokens = positive(vm, "block-tokens", 1);
  o.routing = parse_routing(vm["decode-routing"].as<std::string>());
  o.pad_capacity = pad_capacity_of(vm);
  o.cuda_graph = vm["graph"].as<bool>();
  if (vm.count("kv-budget")) {
    o.kv_budget_bytes = vm["kv-budget"].as<double>();
    if (!(o.kv_budget_bytes > 0)) throw input_error("", "--kv-budget", "must be > 0 bytes");
  } else {
    o.kv_budget_bytes = des::default_kv_budget_bytes(model, hw, t);
    if (!(o.kv_budget_bytes > 0)) {
      throw input_error(hw.source_file, "memory_bytes",
                        "the weights of " + model.name + " do not leave room for a KV cache");
    }
  }

  std::vector<des::request> reqs;
  if (vm.count("arrivals")) {
    if (vm.count("rate") || vm.count("requests"))
      throw input_error("", "--arrivals", "give either --arrivals or --rate/--requests");
    const std::string path = vm["arrivals"].as<std::string>();
    reqs = des::parse_arrivals_csv(sim::read_text_file(path), path);
    c.source = fmt::format("{} requests from {}", reqs.size(), path);
  } else {
    // The scenario of the serving comparison (sim/des/comparison.hpp) — the report's and the
    // GUI's — with the flags given over it: the same inputs give the same TTFT everywhere.
    des::serving_scenario sc;
    if (vm.count("rate")) {
      sc.rate_per_s = vm["rate"].as<double>();
      if (!(sc.rate_per_s > 0)) throw input_error("", "--rate", "must be > 0");
    }
    if (vm.count("requests")) sc.requests = vm["requests"].as<std::int64_t>();
    sc.prompt = vm["prompt-tokens"].as<std::string>();
    sc.output = vm["output-tokens"].as<std::string>();
    (void)des::parse_length_dist(sc.prompt, "--prompt-tokens");
    (void)des::parse_length_dist(sc.output, "--output-tokens");
    sc.seed = o.seed;
    sc.options = o;
    sc = des::resolve_scenario(model, cm, t, sc);
    reqs = des::scenario_requests(sc);
    c.source = fmt::format("{} Poisson arrivals at {}/s{}, prompt {}, output {}", sc.requests, num(sc.rate_per_s),
                           vm.count("rate") ? "" : " (70% of what the dense baseline sustains)", sc.prompt, sc.output);
  }
  des::serve_options run_opt = o;

  des::serve_trace trace(fmt::format("modsim simulate serve: {} on {}", model.name, hw.name));
  std::vector<des::serve_observer*> observers;
  if (vm.count("trace")) observers.push_back(&trace);
  const des::serve_result r = des::simulate_serving(b, std::move(reqs), run_opt, observers);

  if (vm.count("trace")) sim::write_file_atomically(vm["trace"].as<std::string>(), trace.json());
  if (vm.count("per-request")) sim::write_file_atomically(vm["per-request"].as<std::string>(), per_request_csv(r));
  switch (format) {
    case output_format::json:
      print_serve_json(c, r.summary);
      break;
    case output_format::csv:
      print_serve_csv(r.summary);
      break;
    case output_format::table:
      print_serve_table(c, r.summary);
      break;
  }
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
  options.add(fwd).add(serve);
  add_routing_overrides(options);
  po::positional_options_description positional;
  positional.add("what", 1).add("model", 1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;

  const output_format format = parse_format(vm["format"].as<std::string>());
  const std::string what = vm["what"].as<std::string>();
  if (what == "forward") {
    for (const char* k : {"rate", "requests", "arrivals", "per-request", "kv-budget"}) {
      if (vm.count(k)) throw input_error("", std::string("--") + k, "is a `simulate serve` option");
    }
    return simulate_forward(vm, format);
  }
  if (what == "serve") {
    for (const char* k : {"batch", "seq", "mode", "workload"}) {
      if (vm.count(k)) throw input_error("", std::string("--") + k, "is a `simulate forward` option");
    }
    return simulate_serve(vm, format);
  }
  throw input_error("", "simulate", "unknown simulation '" + what + "' (expected forward or serve)");
}

}  // namespace modsim::cli
