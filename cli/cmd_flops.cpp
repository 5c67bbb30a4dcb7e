// `modsim flops MODEL`: the exact FLOP/byte model of sim/model/flops.hpp, per op and layer, as a
// table for people or JSON / CSV for programs (the JSON object is the contract of docs/contracts.md).
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "cli/printer.hpp"
#include "analysis/analysis.hpp"
#include "sim/model/flops.hpp"

namespace modsim::cli {
namespace {

namespace json = boost::json;

const char* const k_usage =
    "usage: modsim flops MODEL [--batch B] [--seq S] [--mode forward|train|decode] [--dtype fp32|bf16|fp16]\n"
    "                         [--recompute none|selective|full] [--attention unfused|fused]\n"
    "                         [--capacity C] [--schedule S] [--format table|json|csv|markdown]\n"
    "\n"
    "Exact FLOPs and bytes per op and layer of MODEL (a model JSON, a HuggingFace config.json,\n"
    "or the name of a shipped model under configs/models/). Matmul FLOPs follow the paper's\n"
    "convention (2 FLOPs per multiply-add, full attention square); elementwise work is counted\n"
    "separately as other_flops; bytes are each op's minimum memory traffic at the dtype.\n"
    "--mode train adds each op's backward (its GEMMs' dgrad and wgrad: 2x the forward's matmul\n"
    "FLOPs), what --recompute none|selective|full runs again (--attention fused: the fused kernel\n"
    "recomputes the scores) and the AdamW step; with recompute none and unfused attention (the\n"
    "default here) matmul FLOPs are exactly 3x the forward's. --mode decode is one step of B tokens\n"
    "over S cached tokens (expected values at routed layers).";

double ratio(std::int64_t a, std::int64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b); }

json::object op_json(const sim::op_cost& c) {
  json::object o;
  o["op"] = modsim::to_string(c.op);
  o["class"] = sim::op_class_of(c.op);
  o["matmul_flops"] = c.matmul_flops;
  o["other_flops"] = c.other_flops;
  o["bytes"] = c.bytes;
  return o;
}

json::object cost_json(const sim::op_cost& c) {
  return json::object{{"matmul_flops", c.matmul_flops}, {"other_flops", c.other_flops}, {"bytes", c.bytes}};
}

// A training step's parts (flops_report::train).
json::object train_json(const sim::train_breakdown& t) {
  json::object o;
  o["recompute"] = modsim::to_string(t.recompute);
  o["attention"] = modsim::to_string(t.attention);
  o["forward"] = cost_json(t.forward);
  o["backward"] = cost_json(t.backward);
  o["recompute_cost"] = cost_json(t.recompute_cost);
  o["optimizer"] = json::object{{"params", t.optimizer.params},
                                {"other_flops", t.optimizer.other_flops},
                                {"bytes", t.optimizer.bytes},
                                {"bytes_per_param", t.optimizer_bytes_per_param}};
  o["model_matmul_flops"] = t.model_matmul_flops;
  return o;
}

json::value flops_json(const sim::flops_report& r) {
  json::object root;
  root["model"] = r.model_name;
  root["workload"] = workload_json(r.load);
  root["params"] = r.params;

  json::object totals;
  totals["matmul_flops"] = r.totals.matmul_flops;
  totals["other_flops"] = r.totals.other_flops;
  totals["bytes"] = r.totals.bytes;
  totals["dense_matmul_flops"] = r.totals.dense_matmul_flops;
  totals["dense_other_flops"] = r.totals.dense_other_flops;
  totals["dense_bytes"] = r.totals.dense_bytes;
  totals["matmul_flops_ratio_to_dense"] = ratio(r.totals.matmul_flops, r.totals.dense_matmul_flops);
  root["totals"] = std::move(totals);

  json::array layers;
  for (const sim::layer_flops& l : r.layers) {
    json::object o;
    o["index"] = l.index;
    o["routed"] = l.routed;
    o["capacity"] = l.capacity;
    o["tokens"] = l.tokens;
    o["expected_tokens"] = l.expected_tokens;
    o["matmul_flops"] = l.matmul_flops;
    o["other_flops"] = l.other_flops;
    o["bytes"] = l.bytes;
    json::array ops;
    for (std::size_t i = 0; i < l.ops.size(); ++i) {
      json::object op = op_json(l.ops[i]);
      if (!l.backward.empty()) {
        op["forward"] = cost_json(l.forward[i]);
        op["backward"] = cost_json(l.backward[i]);
        op["recompute"] = cost_json(l.recompute[i]);
      }
      ops.push_back(std::move(op));
    }
    o["ops"] = std::move(ops);
    layers.push_back(std::move(o));
  }
  root["layers"] = std::move(layers);

  json::object head;
  head["matmul_flops"] = r.lm_head.matmul_flops;
  head["other_flops"] = r.lm_head.other_flops;
  head["bytes"] = r.lm_head.bytes;
  if (r.train) {
    head["forward"] = cost_json(r.lm_head_forward);
    head["backward"] = cost_json(r.lm_head_backward);
  }
  root["lm_head"] = std::move(head);
  if (r.train) root["train"] = train_json(*r.train);
  return root;
}

std::string gflop(std::int64_t flops) { return fmt::format("{:.4f}", static_cast<double>(flops) / 1e9); }
std::string mbytes(std::int64_t bytes) { return fmt::format("{:.2f}", static_cast<double>(bytes) / 1e6); }
std::string ratio_text(std::int64_t a, std::int64_t b) { return b == 0 ? "-" : fmt::format("{:.3f}", ratio(a, b)); }

output output_of(const analysis::analysis_result& a) {
  const sim::flops_report& r = a.flops;
  const sim::flops_report& dense = a.dense_flops;
  const bool decode = r.load.run == sim::run_mode::decode;
  output o;
  o.json = flops_json(r);
  o.head.push_back(fmt::format("{}: {}, batch {}, {} {}, {}; {:.1f} M parameters{}",
                               r.model_name.empty() ? "model" : r.model_name, sim::to_string(r.load.run), r.load.batch,
                               decode ? "context" : "seq", r.load.seq_len, sim::to_string(r.load.type),
                               static_cast<double>(r.params) / 1e6,
                               a.config.model.tie_embeddings ? " (the LM head's weight is the embedding's)" : ""));
  o.head.push_back(
      "matmul GFLOP: 2 FLOPs per multiply-add, full attention square; other = elementwise; vs dense = matmul FLOPs / "
      "the same layer without routing");
  if (decode) o.head.push_back("decode: expected values for one step; tokens at routed layers = capacity x batch");
  if (const std::string sw = sliding_window_line(a.config.model, r.load); !sw.empty()) o.head.push_back(sw);
  add_sliding_window_json(o.json.as_object(), a.config.model);

  table layers;
  layers.columns = {"layer", "routed", "capacity", "tokens", "matmul GFLOP", "other GFLOP", "MB", "vs dense"};
  layers.left_columns = 0;
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    const sim::layer_flops& l = r.layers[i];
    const std::int64_t dense_matmul = i < dense.layers.size() ? dense.layers[i].matmul_flops : 0;
    layers.rows.push_back({integer(l.index), l.routed ? "yes" : "no", number(l.capacity, "{:.3f}"),
                           decode ? fmt::format("{:.2f}", l.expected_tokens) : std::to_string(l.tokens),
                           gflop(l.matmul_flops), gflop(l.other_flops), mbytes(l.bytes),
                           ratio_text(l.matmul_flops, dense_matmul)});
  }
  layers.rows.push_back({"lm_head", "", "", "", gflop(r.lm_head.matmul_flops), gflop(r.lm_head.other_flops),
                         mbytes(r.lm_head.bytes), ratio_text(r.lm_head.matmul_flops, dense.lm_head.matmul_flops)});
  layers.rows.push_back({"total", "", "", "", gflop(r.totals.matmul_flops), gflop(r.totals.other_flops),
                         mbytes(r.totals.bytes), ratio_text(r.totals.matmul_flops, r.totals.dense_matmul_flops)});
  o.tables.push_back(std::move(layers));

  table classes;
  classes.columns = {"op class", "matmul GFLOP", "share", "vs dense", "other GFLOP", "MB"};
  for (const sim::class_rollup& c : a.flop_classes)
    classes.rows.push_back({std::string(c.op_class), gflop(c.matmul_flops),
                            fmt::format("{:.1f}%", 100.0 * ratio(c.matmul_flops, r.totals.matmul_flops)),
                            ratio_text(c.matmul_flops, c.dense_matmul_flops), gflop(c.other_flops), mbytes(c.bytes)});
  classes.rows.push_back({"total", gflop(r.totals.matmul_flops), "100.0%",
                          ratio_text(r.totals.matmul_flops, r.totals.dense_matmul_flops), gflop(r.totals.other_flops),
                          mbytes(r.totals.bytes)});
  o.tables.push_back(std::move(classes));

  // The CSV: one row per (layer, op); the lm_head row belongs to no layer.
  table ops;
  ops.columns = {"layer", "routed", "capacity", "tokens", "op", "class", "matmul_flops", "other_flops", "bytes"};
  ops.people = false;
  ops.csv = true;
  for (const sim::layer_flops& l : r.layers)
    for (const sim::op_cost& c : l.ops)
      ops.rows.push_back({integer(l.index), l.routed ? "true" : "false", number(l.capacity, "{}"), integer(l.tokens),
                          std::string(modsim::to_string(c.op)), sim::op_class_of(c.op), integer(c.matmul_flops),
                          integer(c.other_flops), integer(c.bytes)});
  const std::int64_t head_tokens = r.load.batch * (decode ? 1 : r.load.seq_len);
  ops.rows.push_back({"", "false", "", integer(head_tokens), "lm_head", "lm_head", integer(r.lm_head.matmul_flops),
                      integer(r.lm_head.other_flops), integer(r.lm_head.bytes)});
  o.tables.push_back(std::move(ops));

  if (r.train) {
    const sim::train_breakdown& t = *r.train;
    o.head.push_back(fmt::format(
        "train: recompute {}, {} attention; the optimizer (AdamW, {} bytes per parameter) is in the totals, not in a "
        "layer",
        modsim::to_string(t.recompute), modsim::to_string(t.attention), t.optimizer_bytes_per_param));
    table parts;
    parts.title = "training step";
    parts.columns = {"part", "matmul GFLOP", "x forward", "other GFLOP", "MB"};
    const auto row = [&](const char* name, std::int64_t m, std::int64_t other, std::int64_t bytes) {
      parts.rows.push_back({name, gflop(m), ratio_text(m, t.forward.matmul_flops), gflop(other), mbytes(bytes)});
    };
    row("forward", t.forward.matmul_flops, t.forward.other_flops, t.forward.bytes);
    row("backward", t.backward.matmul_flops, t.backward.other_flops, t.backward.bytes);
    row("recompute", t.recompute_cost.matmul_flops, t.recompute_cost.other_flops, t.recompute_cost.bytes);
    row("optimizer", 0, t.optimizer.other_flops, t.optimizer.bytes);
    row("total", r.totals.matmul_flops, r.totals.other_flops, r.totals.bytes);
    parts.rows.push_back({"model FLOPs (MFU)", gflop(t.model_matmul_flops),
                          ratio_text(t.model_matmul_flops, t.forward.matmul_flops), "", ""});
    o.tables.push_back(std::move(parts));
  }
  o.tail.push_back(fmt::format("vs dense baseline: matmul FLOPs {:.1f}%, other FLOPs {:.1f}%, bytes {:.1f}%",
                               100.0 * ratio(r.totals.matmul_flops, r.totals.dense_matmul_flops),
                               100.0 * ratio(r.totals.other_flops, r.totals.dense_other_flops),
                               100.0 * ratio(r.totals.bytes, r.totals.dense_bytes)));
  return o;
}

}  // namespace

int cmd_flops(const std::vector<std::string>& args) {
  po::options_description options("modsim flops options");
  options.add_options()("model", po::value<std::string>()->required(),
                        "model JSON, HF config.json or shipped model name")(
      "format", po::value<std::string>()->default_value("table"), "table | json | csv | markdown");
  add_workload_options(options);
  add_routing_overrides(options);
  add_attention_option(options);
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;

  const output_format format = parse_format(vm["format"].as<std::string>());
  const sim::model_spec model = load_model_arg(vm["model"].as<std::string>(), vm);
  analysis::scenario scenario;
  scenario.prediction = false;
  const analysis::analysis_result a = analysis::analyze(
      {model, workload_from(vm), std::nullopt, std::nullopt, attention_from(vm).value_or(attention_impl::unfused)},
      scenario);
  print(output_of(a), format, std::cout);
  return exit_ok;
}

}  // namespace modsim::cli
