// `modsim simulate serve`: a serving run of the model beside its baseline (sim/des/comparison),
// continuous batching, a paged KV cache, causal-predictor routing; over several GPUs with
// --tp/--pp/--ep and replicas with --dp.
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
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

// Progress of a long serving run on stderr (never stdout): requests finished over both runs
// (the dense baseline's, then the model's) and an estimate of the time left, from the rate so
// far. Quiet for the first few seconds: a short run prints nothing. On a terminal one line
// redrawn each second; otherwise a line every 10 s.
class serve_progress : public des::serve_observer {
 public:
  serve_progress(std::int64_t requests, int runs)
      : m_requests(std::max<std::int64_t>(1, requests)), m_runs(runs), m_tty(::isatty(STDERR_FILENO) != 0) {}
  ~serve_progress() override { finish(); }  // also when the run throws: the error starts a line
  // Ends the redrawn line, when one was drawn.
  void finish() {
    if (m_printed && m_tty) std::cerr << "\n" << std::flush;
    m_printed = false;
  }
  void on_step(const des::step_record&) override {
    if ((++m_steps & 255) == 0) show();
  }
  void on_finish(const des::request_record&) override {
    ++m_done;
    if ((m_done & 63) == 0) show();
  }

 private:
  void show() {
    using clock = std::chrono::steady_clock;
    const clock::time_point now = clock::now();
    const double elapsed = std::chrono::duration<double>(now - m_start).count();
    if (elapsed < (m_tty ? 2.0 : 5.0) || now - m_last < std::chrono::seconds(m_tty ? 1 : 10)) return;
    m_last = now;
    const double total = static_cast<double>(m_requests) * m_runs;
    const double frac = std::min(1.0, static_cast<double>(m_done) / total);
    const std::int64_t run = std::min<std::int64_t>(m_done / m_requests, m_runs - 1);
    const std::string left =
        frac > 0 ? fmt::format("~{:.0f} s left", elapsed * (1 - frac) / frac) : std::string("no request finished yet");
    const std::string line =
        fmt::format("simulate serve: {} {}/{} requests finished{}, {:.0f} s elapsed, {}",
                    m_runs > 1 && run == 0 ? "baseline" : "model", m_done - run * m_requests, m_requests,
                    m_runs > 1 ? fmt::format(" (run {} of {})", run + 1, m_runs) : "", elapsed, left);
    std::cerr << (m_tty ? "\r" + line + "   " : line + "\n") << std::flush;
    m_printed = true;
  }

  std::int64_t m_requests;
  int m_runs;
  bool m_tty;
  std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point m_last{};
  std::int64_t m_done = 0;
  std::uint64_t m_steps = 0;
  bool m_printed = false;
};

std::int64_t positive(const po::variables_map& vm, const char* key, std::int64_t min) {
  const std::int64_t v = vm[key].as<std::int64_t>();
  if (v < min) throw input_error("", std::string("--") + key, "must be >= " + std::to_string(min));
  return v;
}

}  // namespace

int simulate_serve(const po::variables_map& vm, output_format format) {
  const sim::hardware_spec hw = sim::load_hardware(sim::resolve_config(vm["hardware"].as<std::string>(), "hardware"));
  const sim::model_spec model = load_model_arg(vm["model"].as<std::string>(), vm);
  sim::workload w;
  w.type = sim::default_dtype(hw);
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
  // Without --decode-routing: serve with sync and with pad, keep the better run (no dropped
  // tokens, lower TPOT p50), as the report and the explorer serve.
  q.fastest_routing = vm["decode-routing"].as<std::string>() == "fastest";
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
    double outputs = 0;
    for (const des::request& r : *q.arrivals) outputs += static_cast<double>(r.output_tokens);
    des::check_serving_size(static_cast<std::int64_t>(q.arrivals->size()), outputs, path);
  } else {
    if (vm.count("rate")) {
      sc.rate_per_s = vm["rate"].as<double>();
      if (!(sc.rate_per_s > 0)) throw input_error("", "--rate", "must be > 0");
    }
    if (vm.count("requests")) sc.requests = vm["requests"].as<std::int64_t>();
    if (sc.requests < 1) throw input_error("", "--requests", "must be >= 1");
    des::check_serving_size(sc);  // before the sampling map and the runs: refuse at once
  }
  if (const auto pr = parallel_from(vm)) sc.split = pr->split;
  des::serve_trace trace(fmt::format("modsim simulate serve: {} on {}", model.name, hw.name));
  if (vm.count("trace")) q.observers.push_back(&trace);
  serve_progress progress(q.arrivals ? static_cast<std::int64_t>(q.arrivals->size()) : sc.requests,
                          (q.dense ? 1 : 0) + (q.fastest_routing && model.routing ? 2 : 1));
  q.progress.push_back(&progress);
  const analysis::configuration config{model, w, hw, baseline_from(vm), attention_from(vm)};
  const analysis::analysis_result a = analysis::analyze(config, scenario);
  progress.finish();
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
  add_attention_json(out.json.as_object(), a);
  out.head.push_back(attention_line(a));
  if (model.sliding_window > 0) {
    out.head.push_back(fmt::format(
        "sliding window {}: a decode or prefill query attends to at most {} keys; NOT modelled here: the paged KV "
        "cache still allocates blocks for every position of a sequence (admission and preemption as without the "
        "window)",
        model.sliding_window, model.sliding_window));
    add_sliding_window_json(out.json.as_object(), model);
  }
  if (a.serving_routing) {
    const analysis::serving_routing_choice& ch = *a.serving_routing;
    json::array tried;
    for (const analysis::serving_routing_trial& t : ch.trials)
      tried.push_back(json::object{{"routing", std::string(modsim::to_string(t.routing))},
                                   {"tpot_p50_s", t.tpot_p50_s},
                                   {"dropped_tokens", t.dropped},
                                   {"mean_decode_batch", t.mean_decode_batch}});
    out.json.as_object()["decode_routing_choice"] =
        json::object{{"chosen", std::string(modsim::to_string(ch.routing))},
                     {"rule", "no dropped tokens, then the lower TPOT p50, over a serving run per routing"},
                     {"why", ch.why},
                     {"tried", std::move(tried)}};
    out.head.push_back("decode routing " + ch.why);
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

}  // namespace modsim::cli
