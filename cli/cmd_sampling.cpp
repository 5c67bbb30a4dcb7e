// `modsim sampling MODEL --hardware HW`: the sampling map (analysis/sampling.hpp) — the MoD /
// baseline decode step-time ratio over batch × context for each decode strategy, the component
// that decides each cell, and where MoD reaches the target speed-up (the paper's 1.5×).
#include <fmt/format.h>

#include <boost/json.hpp>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/analysis.hpp"
#include "cli/common.hpp"
#include "profiler/measurements.hpp"
#include "cli/printer.hpp"
#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/model/memory.hpp"

namespace modsim::cli {
namespace {

namespace json = boost::json;

const char* const k_usage =
    "usage: modsim sampling MODEL --hardware HW [--baseline MODEL] [--batches B,..] [--contexts S,..]\n"
    "                       [--pad-capacity C] [--draws N] [--seed N] [--target X] [--dtype fp32|bf16|fp16]\n"
    "                       [--threads N] [--capacity C] [--schedule S] [--attention fused|unfused]\n"
    "                       [--format table|json|csv|markdown]\n"
    "\n"
    "The sampling map: MODEL's decode step time over its baseline's (--baseline MODEL, e.g. dense-220m,\n"
    "the kind of matched-quality dense model the paper's sampling speed-up is against; default MODEL without\n"
    "routing) on HW, over a grid of batch x cached context, for each decode strategy: sync (the routed\n"
    "count read back to the host before each routed block), pad (blocks padded to --pad-capacity of\n"
    "the batch, default the capacity + 3 sigma of the routed count, no sync) and, on a GPU, pad + CUDA\n"
    "graphs. Each step is the discrete-event step of `modsim simulate forward --mode decode`, averaged\n"
    "over --draws routing draws (seeds --seed, --seed + 1, ...). Each cell names the component that\n"
    "decides whether MoD reaches --target (default 1.5x: ratio <= 1/1.5): of KV reads (attention),\n"
    "weight reads (projections, MLP, LM head), predictor/routing, norms/activations, sync round trips\n"
    "and launches/host, the one with the largest model_i - baseline_i/target (the smallest when the\n"
    "target is reached). A cell whose decode step (the model's or the baseline's) does not fit in HW's\n"
    "memory (weights + the cell's KV cache + one step's activations, the check of `modsim predict --mode\n"
    "decode`) is marked and left out of the verdict. Table: ratio and the deciding component's letter per\n"
    "cell, ! = does not fit; CSV: one row per (strategy, batch, context) with both breakdowns, fits and\n"
    "needs_bytes; JSON: the whole map and the verdict.";

// The integers of a comma-separated flag value (comma_list); their range is the request's check.
std::vector<std::int64_t> parse_list(const std::string& text, const char* key) {
  std::vector<std::int64_t> out;
  for (const std::string& item : comma_list(text, key)) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw input_error("", key, "'" + item + "' is not an integer (expected a comma-separated list)");
    }
  }
  return out;
}

char letter(analysis::decode_component c) {
  switch (c) {
    case analysis::decode_component::kv_read:
      return 'K';
    case analysis::decode_component::weight_read:
      return 'W';
    case analysis::decode_component::predictor:
      return 'P';
    case analysis::decode_component::elementwise:
      return 'E';
    case analysis::decode_component::sync:
      return 'S';
    case analysis::decode_component::launch_host:
      return 'L';
  }
  return '?';
}

json::object breakdown_json(const analysis::decode_breakdown& b) {
  json::object o;
  for (analysis::decode_component c : analysis::decode_components) o[analysis::to_string(c)] = part_of(b, c);
  return o;
}

boost::json::value sampling_json(const analysis::sampling_map& m) {
  json::object root;
  root["model"] = m.model_name;
  root["baseline"] = json::object{{"name", m.baseline_name}, {"routing_removed", m.baseline_is_routing_removed}};
  root["hardware"] = m.hardware_name;
  root["dtype"] = sim::to_string(m.type);
  root["memory_bytes"] = m.memory_bytes;
  root["target_speedup"] = m.target_speedup;
  root["target_ratio"] = 1.0 / m.target_speedup;
  root["draws"] = m.draws;
  if (m.pad_capacity)
    root["pad_capacity"] = *m.pad_capacity;
  else
    root["pad_capacity"] = "default: min(1, c + 3 sqrt(c(1-c)/B)) of the batch, rounded up to whole rows";
  json::array batches, contexts;
  for (auto b : m.batches) batches.emplace_back(b);
  for (auto c : m.contexts) contexts.emplace_back(c);
  root["batches"] = std::move(batches);
  root["contexts"] = std::move(contexts);
  json::array strategies;
  for (const analysis::sampling_strategy_map& s : m.strategies) {
    json::object so;
    so["strategy"] = s.strategy.name();
    so["decode_routing"] = std::string(modsim::to_string(s.strategy.routing));
    so["graph"] = s.strategy.cuda_graph;
    so["cells_reaching_target"] = s.reached;
    so["cells_excluded"] = s.excluded;
    json::array cells;
    for (const analysis::sampling_cell& c : s.cells) {
      json::object co;
      co["batch"] = c.batch;
      co["context"] = c.context;
      co["model_s"] = c.model_s;
      co["baseline_s"] = c.baseline_s;
      co["ratio"] = c.ratio();
      co["speedup"] = c.speedup();
      co["reaches_target"] = c.reaches;
      co["fits"] = c.fits;
      co["needs_bytes"] = c.needs_bytes;
      co["deciding"] = analysis::to_string(c.dominant);
      co["deciding_s"] = c.dominant_s;
      co["model_breakdown_s"] = breakdown_json(c.model);
      co["baseline_breakdown_s"] = breakdown_json(c.baseline);
      cells.push_back(std::move(co));
    }
    so["cells"] = std::move(cells);
    if (s.best >= 0) {
      const analysis::sampling_cell& b = s.cells[static_cast<std::size_t>(s.best)];
      so["best"] = json::object{{"batch", b.batch}, {"context", b.context}, {"speedup", b.speedup()}};
    }
    strategies.push_back(std::move(so));
  }
  root["strategies"] = std::move(strategies);
  json::array verdict;
  for (const std::string& v : m.verdict) verdict.emplace_back(v);
  root["verdict"] = std::move(verdict);
  json::array measured;
  for (const analysis::sampling_measurement& q : m.measured)
    measured.push_back(json::object{{"batch", q.batch},
                                    {"context", q.context},
                                    {"decode_routing", std::string(modsim::to_string(q.routing))},
                                    {"model_s", q.model_s},
                                    {"baseline_s", q.baseline_s}});
  root["measured"] = std::move(measured);
  return root;
}

output sampling_output(const analysis::sampling_map& m, const std::string& cost_label) {
  output o;
  o.json = sampling_json(m);
  o.head.push_back(fmt::format("{} vs {} on {} ({}), {}: decode step time ratio (MoD / baseline; <= {:.3f} is {:g}x)",
                               m.model_name, m.baseline_name, m.hardware_name, cost_label, sim::to_string(m.type),
                               1.0 / m.target_speedup, m.target_speedup));
  o.head.push_back(fmt::format(
      "mean of {} routing draws per cell; * = reaches {:g}x; ! = does not fit in {} (excluded from the verdict); the "
      "letter is the component that decides: K KV reads, W weight reads, P predictor/routing, E norms/activations, S "
      "sync round trips, L launches/host",
      m.draws, m.target_speedup, m.memory_bytes > 0 ? sim::format_bytes(m.memory_bytes) : std::string("memory")));
  for (const analysis::sampling_strategy_map& s : m.strategies) {
    table t;
    t.columns = {s.strategy.name() + " batch \\ context"};
    for (auto c : m.contexts) t.columns.push_back(std::to_string(c));
    t.left_columns = 1;
    for (std::size_t b = 0; b < m.batches.size(); ++b) {
      std::vector<cell> row{integer(m.batches[b])};
      for (std::size_t c = 0; c < m.contexts.size(); ++c) {
        const analysis::sampling_cell& x = s.cells[b * m.contexts.size() + c];
        row.push_back(fmt::format("{:.3f}{}{}", x.ratio(), !x.fits ? "!" : x.reaches ? "*" : " ", letter(x.dominant)));
      }
      t.rows.push_back(std::move(row));
    }
    o.tables.push_back(std::move(t));
  }
  table csv;
  csv.people = false;
  csv.csv = true;
  csv.columns = {"strategy", "batch", "context", "model_s", "baseline_s", "ratio", "reaches_target", "deciding"};
  for (analysis::decode_component c : analysis::decode_components)
    csv.columns.push_back(std::string("model_") + analysis::to_string(c) + "_s");
  for (analysis::decode_component c : analysis::decode_components)
    csv.columns.push_back(std::string("baseline_") + analysis::to_string(c) + "_s");
  csv.columns.push_back("fits");
  csv.columns.push_back("needs_bytes");
  for (const analysis::sampling_strategy_map& s : m.strategies) {
    for (const analysis::sampling_cell& x : s.cells) {
      std::vector<cell> row{s.strategy.name(),
                            integer(x.batch),
                            integer(x.context),
                            number(x.model_s, "{}"),
                            number(x.baseline_s, "{}"),
                            number(x.ratio(), "{}"),
                            x.reaches ? "true" : "false",
                            analysis::to_string(x.dominant)};
      for (analysis::decode_component c : analysis::decode_components) row.push_back(number(part_of(x.model, c), "{}"));
      for (analysis::decode_component c : analysis::decode_components)
        row.push_back(number(part_of(x.baseline, c), "{}"));
      row.push_back(x.fits ? "true" : "false");
      row.push_back(number(x.needs_bytes, "{:.0f}"));
      csv.rows.push_back(std::move(row));
    }
  }
  o.tables.push_back(std::move(csv));
  for (const std::string& v : m.verdict) o.tail.push_back(v);
  return o;
}

}  // namespace

int cmd_sampling(const std::vector<std::string>& args) {
  po::options_description options("modsim sampling options");
  const analysis::sampling_request defaults;
  auto list_text = [](const std::vector<std::int64_t>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s;
  };
  options.add_options()("model", po::value<std::string>()->required(),
                        "model JSON, HF config.json or shipped model name")(
      "hardware", po::value<std::string>()->required(), "hardware JSON (or a shipped name: cpu, h100-sxm, h200)")(
      "batches", po::value<std::string>()->default_value(list_text(defaults.batches)), "decode batches (sequences)")(
      "contexts", po::value<std::string>()->default_value(list_text(defaults.contexts)),
      "cached context lengths (tokens per sequence)")("pad-capacity", po::value<double>(), pad_capacity_help)(
      "draws", po::value<int>()->default_value(defaults.draws), "routing draws averaged per cell")(
      "seed", po::value<std::int64_t>()->default_value(1), "seed of the first draw")(
      "target", po::value<double>()->default_value(defaults.target_speedup), "the speed-up to reach (> 1)")(
      "dtype", po::value<std::string>(), "fp32 | bf16 | fp16 (default bf16 on GPU hardware, fp32 on a CPU)")(
      "threads", po::value<int>()->default_value(0), "worker threads (0 = all)")(
      "measurements", po::value<std::vector<std::string>>()->composing(),
      "measurements CSV(s) (modsim profile): decode_step rows of MODEL and of its baseline at one batch, context "
      "and routing are overlaid as measured cells")("format", po::value<std::string>()->default_value("table"),
                                                    "table | json | csv | markdown");
  add_baseline_option(options);
  add_routing_overrides(options);
  add_attention_option(options);
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;

  const output_format format = parse_format(vm["format"].as<std::string>());
  const sim::hardware_spec hw = sim::load_hardware(sim::resolve_config(vm["hardware"].as<std::string>(), "hardware"));
  const sim::model_spec model = load_model_arg(vm["model"].as<std::string>(), vm);
  sim::workload w;
  w.run = sim::run_mode::decode;
  w.type = sim::default_dtype(hw);
  if (vm.count("dtype")) w.type = sim::parse_dtype(vm["dtype"].as<std::string>(), "", "--dtype");

  analysis::sampling_request r;
  r.batches = parse_list(vm["batches"].as<std::string>(), "--batches");
  r.contexts = parse_list(vm["contexts"].as<std::string>(), "--contexts");
  const analysis::timeline_request step = step_options_from(vm);
  r.pad_capacity = step.pad_capacity;
  r.seed = step.seed;
  r.draws = vm["draws"].as<int>();
  r.target_speedup = vm["target"].as<double>();
  const int threads = vm["threads"].as<int>();
  if (threads < 0) throw input_error("", "--threads", "must be >= 0");
  r.threads = static_cast<unsigned>(threads);

  const std::optional<sim::model_spec> baseline = baseline_from(vm);
  if (vm.count("measurements")) {
    std::vector<sim::measured_sample> rows;
    for (const std::string& f : vm["measurements"].as<std::vector<std::string>>()) {
      const std::vector<sim::measured_sample> p = profiler::read_measured_samples(f);
      rows.insert(rows.end(), p.begin(), p.end());
    }
    r.measured = analysis::measured_cells(rows, model, baseline ? *baseline : sim::dense_baseline(model));
    if (r.measured.empty())
      std::cerr << "sampling: no decode_step rows of " << model.name << " and its baseline at a common batch, "
                << "context and routing in the measurements\n";
  }

  analysis::scenario scenario;
  scenario.prediction = false;
  scenario.sampling = r;
  const analysis::analysis_result a = analysis::analyze({model, w, hw, baseline, attention_from(vm)}, scenario);
  output o = sampling_output(*a.sampling, a.cost_label);
  add_attention_json(o.json.as_object(), a);
  o.head.push_back(attention_line(a));
  print(o, format, std::cout);
  return exit_ok;
}

}  // namespace modsim::cli
