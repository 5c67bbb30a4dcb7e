// `modsim flops MODEL`: the exact FLOP/byte model of sim/flops.hpp, per op and layer, as a
// table for people or JSON / CSV for programs (the JSON object is DESIGN.md's contract).
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "sim/flops.hpp"
#include "sim/rollup.hpp"

namespace modsim::cli {
namespace {

namespace json = boost::json;

const char* const k_usage =
    "usage: modsim flops MODEL [--batch B] [--seq S] [--mode forward|train|decode] [--dtype fp32|bf16|fp16]\n"
    "                         [--capacity C] [--schedule S] [--format table|json|csv]\n"
    "\n"
    "Exact FLOPs and bytes per op and layer of MODEL (a model JSON, a HuggingFace config.json,\n"
    "or the name of a shipped model under configs/models/). Matmul FLOPs follow the paper's\n"
    "convention (2 FLOPs per multiply-add, full attention square); elementwise work is counted\n"
    "separately as other_flops; bytes are each op's minimum memory traffic at the dtype.\n"
    "--mode train is 3x forward; --mode decode is one step of B tokens over S cached tokens\n"
    "(expected values at routed layers).";

double ratio(std::int64_t a, std::int64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b); }

json::object op_json(const sim::op_cost& c) {
  json::object o;
  o["op"] = c.op;
  o["class"] = sim::op_class_of(c.op);
  o["matmul_flops"] = c.matmul_flops;
  o["other_flops"] = c.other_flops;
  o["bytes"] = c.bytes;
  return o;
}

void print_json(const sim::flops_report& r) {
  json::object root;
  root["model"] = r.model_name;
  json::object wl;
  wl["batch"] = r.load.batch;
  wl["seq_len"] = r.load.seq_len;
  wl["mode"] = sim::to_string(r.load.mode);
  wl["dtype"] = sim::to_string(r.load.type);
  root["workload"] = std::move(wl);
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
    for (const sim::op_cost& c : l.ops) ops.push_back(op_json(c));
    o["ops"] = std::move(ops);
    layers.push_back(std::move(o));
  }
  root["layers"] = std::move(layers);

  json::object head;
  head["matmul_flops"] = r.lm_head.matmul_flops;
  head["other_flops"] = r.lm_head.other_flops;
  head["bytes"] = r.lm_head.bytes;
  root["lm_head"] = std::move(head);
  std::cout << json::serialize(root) << "\n";
}

void print_csv(const sim::flops_report& r) {
  std::cout << "layer,routed,capacity,tokens,op,class,matmul_flops,other_flops,bytes\n";
  for (const sim::layer_flops& l : r.layers) {
    for (const sim::op_cost& c : l.ops) {
      std::cout << fmt::format("{},{},{},{},{},{},{},{},{}\n", l.index, l.routed ? "true" : "false", l.capacity,
                               l.tokens, c.op, sim::op_class_of(c.op), c.matmul_flops, c.other_flops, c.bytes);
    }
  }
  // The lm_head row belongs to no layer.
  const std::int64_t head_tokens = r.load.batch * (r.load.mode == sim::run_mode::decode ? 1 : r.load.seq_len);
  std::cout << fmt::format(",false,,{},lm_head,lm_head,{},{},{}\n", head_tokens, r.lm_head.matmul_flops,
                           r.lm_head.other_flops, r.lm_head.bytes);
}

std::string gflop(std::int64_t flops) { return fmt::format("{:.4f}", static_cast<double>(flops) / 1e9); }
std::string mbytes(std::int64_t bytes) { return fmt::format("{:.2f}", static_cast<double>(bytes) / 1e6); }
std::string ratio_text(std::int64_t a, std::int64_t b) { return b == 0 ? "-" : fmt::format("{:.3f}", ratio(a, b)); }

void print_table(const sim::flops_report& r, const sim::flops_report& dense) {
  const bool decode = r.load.mode == sim::run_mode::decode;
  std::cout << fmt::format("{}: {}, batch {}, {} {}, {}; {:.1f} M parameters\n",
                           r.model_name.empty() ? "model" : r.model_name, sim::to_string(r.load.mode), r.load.batch,
                           decode ? "context" : "seq", r.load.seq_len, sim::to_string(r.load.type),
                           static_cast<double>(r.params) / 1e6);
  std::cout << "matmul GFLOP: 2 FLOPs per multiply-add, full attention square; other = elementwise; "
               "vs dense = matmul FLOPs / the same layer without routing\n";
  if (decode) std::cout << "decode: expected values for one step; tokens at routed layers = capacity x batch\n";
  std::cout << "\n";

  std::cout << fmt::format("{:>7}  {:>6}  {:>8}  {:>10}  {:>14}  {:>12}  {:>12}  {:>9}\n", "layer", "routed",
                           "capacity", "tokens", "matmul GFLOP", "other GFLOP", "MB", "vs dense");
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    const sim::layer_flops& l = r.layers[i];
    const std::int64_t dense_matmul = i < dense.layers.size() ? dense.layers[i].matmul_flops : 0;
    const std::string tokens = decode ? fmt::format("{:.2f}", l.expected_tokens) : std::to_string(l.tokens);
    std::cout << fmt::format("{:>7}  {:>6}  {:>8.3f}  {:>10}  {:>14}  {:>12}  {:>12}  {:>9}\n", l.index,
                             l.routed ? "yes" : "no", l.capacity, tokens, gflop(l.matmul_flops), gflop(l.other_flops),
                             mbytes(l.bytes), ratio_text(l.matmul_flops, dense_matmul));
  }
  std::cout << fmt::format("{:>7}  {:>6}  {:>8}  {:>10}  {:>14}  {:>12}  {:>12}  {:>9}\n", "lm_head", "", "", "",
                           gflop(r.lm_head.matmul_flops), gflop(r.lm_head.other_flops), mbytes(r.lm_head.bytes),
                           ratio_text(r.lm_head.matmul_flops, dense.lm_head.matmul_flops));
  std::cout << fmt::format("{:>7}  {:>6}  {:>8}  {:>10}  {:>14}  {:>12}  {:>12}  {:>9}\n\n", "total", "", "", "",
                           gflop(r.totals.matmul_flops), gflop(r.totals.other_flops), mbytes(r.totals.bytes),
                           ratio_text(r.totals.matmul_flops, r.totals.dense_matmul_flops));

  std::cout << fmt::format("{:<10}  {:>14}  {:>7}  {:>9}  {:>12}  {:>12}\n", "op class", "matmul GFLOP", "share",
                           "vs dense", "other GFLOP", "MB");
  for (const sim::class_rollup& c : sim::roll_up(r, dense))
    std::cout << fmt::format("{:<10}  {:>14}  {:>6.1f}%  {:>9}  {:>12}  {:>12}\n", c.op_class, gflop(c.matmul_flops),
                             100.0 * ratio(c.matmul_flops, r.totals.matmul_flops),
                             ratio_text(c.matmul_flops, c.dense_matmul_flops), gflop(c.other_flops), mbytes(c.bytes));
  std::cout << fmt::format("{:<10}  {:>14}  {:>6.1f}%  {:>9}  {:>12}  {:>12}\n\n", "total",
                           gflop(r.totals.matmul_flops), 100.0,
                           ratio_text(r.totals.matmul_flops, r.totals.dense_matmul_flops), gflop(r.totals.other_flops),
                           mbytes(r.totals.bytes));

  std::cout << fmt::format("vs dense baseline: matmul FLOPs {:.1f}%, other FLOPs {:.1f}%, bytes {:.1f}%\n",
                           100.0 * ratio(r.totals.matmul_flops, r.totals.dense_matmul_flops),
                           100.0 * ratio(r.totals.other_flops, r.totals.dense_other_flops),
                           100.0 * ratio(r.totals.bytes, r.totals.dense_bytes));
}

}  // namespace

int cmd_flops(const std::vector<std::string>& args) {
  po::options_description options("modsim flops options");
  options.add_options()("model", po::value<std::string>()->required(),
                        "model JSON, HF config.json or shipped model name")(
      "format", po::value<std::string>()->default_value("table"), "table | json | csv");
  add_workload_options(options);
  add_routing_overrides(options);
  po::positional_options_description positional;
  positional.add("model", 1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;

  const output_format format = parse_format(vm["format"].as<std::string>());
  const sim::model_spec model = load_model_arg(vm["model"].as<std::string>(), vm);
  const sim::workload w = workload_from(vm);
  const sim::flops_report report = sim::evaluate_flops(model, w);

  switch (format) {
    case output_format::json:
      print_json(report);
      break;
    case output_format::csv:
      print_csv(report);
      break;
    case output_format::table:
      print_table(report, sim::evaluate_flops(sim::dense_baseline(model), w));
      break;
  }
  return exit_ok;
}

}  // namespace modsim::cli
