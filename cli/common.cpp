#include "cli/common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "sim/model/config.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace modsim::cli {

boost::json::object workload_json(const sim::workload& w) {
  boost::json::object o{
      {"batch", w.batch}, {"seq_len", w.seq_len}, {"mode", sim::to_string(w.run)}, {"dtype", sim::to_string(w.type)}};
  if (w.run == sim::run_mode::train) o["recompute"] = modsim::to_string(w.recompute);
  return o;
}

bool parse_args(const std::vector<std::string>& args, const po::options_description& options,
                const po::positional_options_description& positional, po::variables_map& vm, const std::string& usage) {
  po::options_description all = options;
  all.add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    if (vm.count("help")) {
      std::cout << usage << "\n\n" << all << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw input_error("", "", std::string(e.what()) + " (see --help)");
  }
  return true;
}

void add_workload_options(po::options_description& options, const char* default_mode) {
  options.add_options()("batch", po::value<std::int64_t>(), "sequences per batch (default 1)")(
      "seq", po::value<std::int64_t>(), "tokens per sequence; in decode, the cached context length (default 2048)")(
      "mode", po::value<std::string>(),
      (std::string("forward | train | decode (default ") + default_mode + ")").c_str())(
      "dtype", po::value<std::string>(), "fp32 | bf16 | fp16 (element size for bytes)")(
      "recompute", po::value<std::string>(),
      "train: activation recomputation none | selective (attention scores and softmax again in backward) | full "
      "(each layer's forward again in backward) (default none)")(
      "workload", po::value<std::string>(),
      "workload JSON file {batch, seq_len, mode, dtype, recompute}; flags override it");
}

void add_routing_overrides(po::options_description& options) {
  options.add_options()("capacity", po::value<double>(),
                        "override routing.capacity (fraction of tokens routed, in (0,1])")(
      "schedule", po::value<std::string>(),
      "override routing.schedule: none | all | every_other | every_nth:N | i,j,k");
}

sim::workload workload_from(const po::variables_map& vm, sim::dtype default_dtype, bool trains_anyway) {
  sim::workload w;
  w.type = default_dtype;
  if (vm.count("workload"))
    w = sim::load_workload(sim::resolve_config(vm["workload"].as<std::string>(), "workloads"), w);
  if (vm.count("batch")) {
    w.batch = vm["batch"].as<std::int64_t>();
    if (w.batch < 1) throw input_error("", "--batch", "must be >= 1");
  }
  if (vm.count("seq")) {
    w.seq_len = vm["seq"].as<std::int64_t>();
    if (w.seq_len < 1) throw input_error("", "--seq", "must be >= 1");
  }
  if (vm.count("mode")) w.run = sim::parse_run_mode(vm["mode"].as<std::string>(), "", "--mode");
  if (vm.count("dtype")) w.type = sim::parse_dtype(vm["dtype"].as<std::string>(), "", "--dtype");
  if (vm.count("recompute")) {
    w.recompute = sim::parse_recompute_mode(vm["recompute"].as<std::string>(), "", "--recompute");
    if (w.run != sim::run_mode::train && !trains_anyway)
      throw input_error("", "--recompute",
                        "applies to --mode train only (a forward or decode step has no backward pass)");
  }
  return w;
}

const char* const pad_capacity_help =
    "pad mode: the routed block is sized to this fraction of the decode batch (tokens beyond it are dropped); "
    "default: the layer's capacity c plus 3 sigma of the binomial routed count, min(1, c + 3 sqrt(c(1-c)/B)) of "
    "the batch B, rounded up to whole rows";

void add_step_options(po::options_description& options) {
  options.add_options()("graph", po::bool_switch(),
                        "CUDA-graph mode: one launch per step (split at host syncs); in decode, with no "
                        "--decode-routing, the strategy pad + graphs")(
      "decode-routing", po::value<std::string>()->default_value("fastest"),
      "MoD decode strategy: fastest | sync | pad (fastest: the fastest of sync, pad and, on a GPU, pad + CUDA "
      "graphs for the model at the workload's batch and context)")(
      "pad-capacity", po::value<double>(), pad_capacity_help)("seed", po::value<std::int64_t>()->default_value(1),
                                                              "seed of every random draw (decode routing)")(
      "draws", po::value<int>()->default_value(8),
      "decode: routing draws averaged (seeds --seed, --seed + 1, ...), as a `modsim sampling` cell");
}

analysis::timeline_request step_options_from(const po::variables_map& vm) {
  analysis::timeline_request q;
  q.cuda_graph = vm.count("graph") && vm["graph"].as<bool>();
  const std::string text = vm.count("decode-routing") ? vm["decode-routing"].as<std::string>() : "fastest";
  if (text == "fastest") {
    // --graph alone asks for graphs: the graph strategy of the list, pad + graphs.
    q.fastest = !q.cuda_graph;
    if (q.cuda_graph) q.routing = decode_routing::pad;
  } else {
    const auto r = find_decode_routing(text);
    if (!r) throw input_error("", "--decode-routing", "unknown mode '" + text + "' (expected fastest, sync or pad)");
    q.routing = *r;
    q.fastest = false;
  }
  if (vm.count("draws")) {
    q.draws = vm["draws"].as<int>();
    if (q.draws < 1) throw input_error("", "--draws", "must be >= 1");
  }
  if (vm.count("pad-capacity")) {
    const double c = vm["pad-capacity"].as<double>();
    if (!(c > 0 && c <= 1)) throw input_error("", "--pad-capacity", "must be in (0, 1]");
    q.pad_capacity = c;
  }
  if (vm.count("seed")) {
    const std::int64_t s = vm["seed"].as<std::int64_t>();
    if (s < 0) throw input_error("", "--seed", "must be >= 0");
    q.seed = static_cast<std::uint64_t>(s);
  }
  return q;
}

// The decode strategies tried and the one kept (`modsim predict` and `modsim simulate forward`).
boost::json::object decode_choice_json(const analysis::decode_strategy_choice& ch) {
  boost::json::array candidates;
  for (const analysis::decode_strategy_figure& f : ch.candidates) {
    boost::json::object c{{"strategy", f.strategy.name()}, {"applies", f.applies}};
    if (f.applies) {
      c["step_s"] = f.model_s;
      c["baseline_step_s"] = f.baseline_s;
      c["time_ratio"] = f.baseline_s > 0 ? f.model_s / f.baseline_s : 0.0;
    } else {
      c["why_not"] = f.why_not;
    }
    candidates.push_back(std::move(c));
  }
  boost::json::array notes;
  for (const std::string& n : ch.notes) notes.emplace_back(n);
  return boost::json::object{{"chosen", ch.strategy.name()},
                             {"rule", ch.rule},
                             {"fastest", ch.fastest},
                             {"draws", ch.draws},
                             {"seed", ch.seed},
                             {"candidates", std::move(candidates)},
                             {"notes", std::move(notes)}};
}

// "sync 0.9120 ms (x1.010), pad 0.8800 ms (x0.975), pad+graphs 0.6100 ms (x0.912) <- shown; ..."
std::string decode_candidates_text(const analysis::decode_strategy_choice& ch) {
  std::string out;
  for (const analysis::decode_strategy_figure& f : ch.candidates) {
    if (!out.empty()) out += ", ";
    if (!f.applies) {
      out += f.strategy.name() + " does not apply (" + f.why_not + ")";
      continue;
    }
    out += fmt::format("{} {} ms (x{:.3f} the baseline's){}", f.strategy.name(), text::ms(f.model_s, 4),
                       f.baseline_s > 0 ? f.model_s / f.baseline_s : 0.0, f.strategy == ch.strategy ? " <- shown" : "");
  }
  for (const std::string& n : ch.notes)
    if (n.find("does not apply") == std::string::npos) out += "; " + n;
  return out;
}

void add_baseline_option(po::options_description& options) {
  options.add_options()("baseline", po::value<std::string>(),
                        "the dense baseline to compare with (a model file or shipped name, e.g. dense-220m: the "
                        "paper's matched-quality baseline); default: MODEL with its routing removed");
}

std::optional<sim::model_spec> baseline_from(const po::variables_map& vm) {
  if (!vm.count("baseline")) return std::nullopt;
  return sim::load_model(sim::resolve_config(vm["baseline"].as<std::string>(), "models"));
}

void add_flop_budget_option(po::options_description& options) {
  options.add_options()("flop-budget", po::value<double>(),
                        "a training budget in model FLOPs (e.g. the paper's 6e18; 3 x the forward's matmul FLOPs per "
                        "step, docs/flops.md): steps, tokens and wall-clock of the model and its baseline at it");
}

std::optional<double> flop_budget_from(const po::variables_map& vm) {
  if (!vm.count("flop-budget")) return std::nullopt;
  return analysis::checked_flop_budget(vm["flop-budget"].as<double>(), "--flop-budget");
}

void add_attention_option(po::options_description& options) {
  options.add_options()("attention", po::value<std::string>(),
                        "fused | unfused: how attention runs (default: fused on GPU hardware, what training and "
                        "serving stacks run; unfused on a CPU, modsim's CPU kernels). Where the calibration measured "
                        "the other, attention is the datasheet roofline and the prediction has no error band");
}

std::optional<attention_impl> attention_from(const po::variables_map& vm) {
  if (!vm.count("attention")) return std::nullopt;
  return parse_attention_impl(vm["attention"].as<std::string>(), "--attention");
}

std::string attention_line(const analysis::analysis_result& a) {
  const char* impl = modsim::to_string(a.attention);
  const char* how = a.attention == attention_impl::fused
                        ? "one causal attention kernel; attn_softmax and attn_values run inside attn_scores'"
                        : "attn_scores, attn_softmax and attn_values as separate kernels, the scores in memory";
  const sim::hardware_spec* hw = a.config.hardware ? &*a.config.hardware : nullptr;
  std::string where;
  if (!hw || hw->calibration_json.empty()) {
    where = "datasheet roofline";
  } else if (a.attention_measured) {
    where = "measured by the calibration";
  } else {
    const attention_impl other = a.attention == attention_impl::fused ? attention_impl::unfused : attention_impl::fused;
    where = fmt::format("NOT MEASURED: the calibration ran {} attention; the attention ops are the datasheet roofline",
                        modsim::to_string(other));
  }
  return fmt::format("attention: {} ({}) - {}", impl, how, where);
}

std::string sliding_window_line(const sim::model_spec& m, const sim::workload& w, const std::string& what_else) {
  if (m.sliding_window <= 0) return {};
  const std::int64_t keys = w.run == sim::run_mode::decode ? w.seq_len + 1 : w.seq_len;
  std::string line = fmt::format(
      "sliding window {}: each query attends to at most {} keys (attention FLOPs and bytes), a sequence's KV cache "
      "holds at most {} positions per layer",
      m.sliding_window, m.sliding_window, m.sliding_window);
  if (keys <= m.sliding_window)
    line += fmt::format(" - no effect here ({} keys per query)", keys);
  else if (m.routing)
    line += "; at a routed layer the window caps its routed keys (an upper bound)";
  if (!what_else.empty()) line += "; " + what_else;
  return line;
}

void add_sliding_window_json(boost::json::object& o, const sim::model_spec& m) {
  if (m.sliding_window > 0) o["sliding_window"] = m.sliding_window;
}

void add_attention_json(boost::json::object& o, const analysis::analysis_result& a) {
  o["attention"] = modsim::to_string(a.attention);
  o["attention_measured"] = a.attention_measured;
}

void add_parallel_options(po::options_description& options) {
  options.add_options()("tp", po::value<int>(), "tensor-parallel GPUs")("pp", po::value<int>(), "pipeline stages")(
      "dp", po::value<int>(), "data-parallel replicas")("ep", po::value<int>(), "expert-parallel GPUs (MoE, MoDE)")(
      "micro-batches", po::value<int>(), "micro-batches per step with --pp (default 4 x pp)")(
      "gpus", po::value<int>(), "rank every split of this many GPUs (and detail the fastest that fits)");
}

std::optional<analysis::parallel_request> parallel_from(const po::variables_map& vm, int default_gpus) {
  const bool split = vm.count("tp") || vm.count("pp") || vm.count("dp") || vm.count("ep");
  if (!split && !vm.count("gpus") && default_gpus <= 0) {
    if (vm.count("micro-batches")) throw input_error("", "--micro-batches", "applies with --pp only");
    return std::nullopt;
  }
  analysis::parallel_request pr;
  if (vm.count("tp")) pr.split.tp = vm["tp"].as<int>();
  if (vm.count("pp")) pr.split.pp = vm["pp"].as<int>();
  if (vm.count("dp")) pr.split.dp = vm["dp"].as<int>();
  if (vm.count("ep")) pr.split.ep = vm["ep"].as<int>();
  if (vm.count("micro-batches")) pr.split.micro_batches = vm["micro-batches"].as<int>();
  pr.gpus = vm.count("gpus") ? vm["gpus"].as<int>() : split ? 0 : default_gpus;
  if (vm.count("gpus") && pr.gpus < 1) throw input_error("", "--gpus", "must be >= 1");
  return pr;
}

boost::json::object baseline_json(const analysis::configuration& c) {
  return {{"name", analysis::baseline_label(c)}, {"routing_removed", !c.baseline.has_value()}};
}

sim::model_spec load_model_arg(const std::string& model, const po::variables_map& vm) {
  sim::model_spec m = sim::load_model(sim::resolve_config(model, "models"));
  bool changed = false;
  // An MoE model without MoD routing ignores a schedule: say so rather than route nothing.
  if (m.moe && m.moe->variant == sim::moe_variant::moe)
    for (const char* flag : {"schedule", "capacity"})
      if (vm.count(flag))
        throw input_error("", std::string("--") + flag,
                          m.name +
                              " is an MoE model without MoD routing (mode.variant moe), which routes no "
                              "tokens past blocks; give a MoDE model (mode.variant staged or integrated, e.g. "
                              "mode-staged-220m) to route it");
  if (vm.count("schedule")) {
    if (!m.routing) m.routing = sim::routing_spec{};
    m.routing->layer_capacities.clear();
    m.routing->sched = sim::parse_schedule(vm["schedule"].as<std::string>(), m.n_layers, "", "--schedule");
    if (m.routing->sched.kind == sim::schedule_kind::none) m.routing.reset();
    changed = true;
  }
  if (vm.count("capacity")) {
    double c = vm["capacity"].as<double>();
    if (!(c > 0 && c <= 1)) throw input_error("", "--capacity", "must be in (0, 1]");
    if (!m.routing) {
      m.routing = sim::routing_spec{};
      m.routing->sched.kind = sim::schedule_kind::every_other;
    }
    m.routing->capacity = c;
    m.routing->layer_capacities.clear();
    changed = true;
  }
  if (changed) sim::validate_model(m, m.source_file);
  return m;
}

std::vector<std::string> comma_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t b = item.find_first_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, item.find_last_not_of(" \t") - b + 1));
    start = comma + 1;
  }
  if (out.empty()) throw input_error("", flag, "needs at least one value (a comma-separated list)");
  return out;
}

}  // namespace modsim::cli
