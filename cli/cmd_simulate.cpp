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

const char* const k_usage =
    "usage: modsim simulate forward MODEL --hardware HW [--batch B] [--seq S] [--mode forward|train|decode]\n"
    "                               [--dtype D] [--graph] [--decode-routing fastest|sync|pad] [--pad-capacity C]\n"
    "                               [--seed N] [--draws N] [--tp N] [--pp N] [--dp N] [--ep N] [--micro-batches M]\n"
    "                               [--attention fused|unfused] [--trace FILE.json] [--format "
    "table|json|csv|markdown]\n"
    "       modsim simulate serve MODEL --hardware HW [--rate R --requests N | --arrivals FILE.csv] [--seed N]\n"
    "                               [--prompt-tokens D] [--output-tokens D] [--max-seqs N]\n"
    "                               [--max-batched-tokens N] [--chunked-prefill N] [--kv-budget BYTES]\n"
    "                               [--graph] [--decode-routing fastest|sync|pad] [--pad-capacity C] [--baseline "
    "MODEL]\n"
    "                               [--tp N] [--pp N] [--ep N] [--attention fused|unfused] [--per-request FILE.csv]\n"
    "                               [--trace FILE.json] [--format table|json|csv|markdown]\n"
    "\n"
    "Discrete-event simulation of MODEL on HW with the cost model's op times. `forward` simulates one\n"
    "step as a host thread enqueuing kernels (host_enqueue_s each) and a GPU stream running them\n"
    "(+ kernel_launch_s each): step time, GPU busy %, time the GPU waited on the host, per op class.\n"
    "--graph = CUDA graphs (one launch per step, split at host syncs). --mode decode draws each\n"
    "sequence's routing at each routed layer (probability = capacity, --seed); --decode-routing sync\n"
    "reads the routed count back to the host before sizing the routed block, pad sizes it to\n"
    "--pad-capacity of the batch with no sync (wasted FLOPs; default: the layer's capacity + 3 sigma\n"
    "of the binomial routed count, min(1, c + 3 sqrt(c(1-c)/B)), rounded up to whole rows). Without\n"
    "--decode-routing (or with fastest) the decode strategy is the fastest of sync, pad and, on a GPU, pad +\n"
    "graphs for the model at the workload's batch and context (--graph alone: pad + graphs); the output names\n"
    "it with the others' steps beside it (JSON decode_routing_choice). The decode step time (JSON step_s) is\n"
    "the mean over --draws routing draws (default 8, seeds --seed, --seed + 1, ...): the step `modsim predict\n"
    "--mode decode` prints and the `modsim sampling` cell of that strategy; the kernels and the timeline shown\n"
    "are the first draw's (JSON timeline_step_s). --tp/--pp/--dp/--ep split the step over\n"
    "GPUs: each pipeline stage is a GPU with its own host, a compute stream and streams for the layers'\n"
    "collectives, the stage sends and the gradient buckets; 1F1B micro-batches; the table splits each\n"
    "GPU's time into compute, exposed communication and idle (bubble). `serve` simulates requests arriving\n"
    "(Poisson --rate/--requests, or --arrivals CSV with arrival_s,prompt_tokens,output_tokens),\n"
    "continuous batching, a paged KV cache of device memory minus weights (or --kv-budget) with\n"
    "preemption by recompute. Token distributions: N, uniform:A:B, exp:MEAN. The dense baseline (--baseline\n"
    "MODEL, default MODEL without routing) serves the same requests beside the model (JSON: \"dense\",\n"
    "\"baseline\"). Without --decode-routing (or with fastest), serve runs the model with sync and with pad and keeps "
    "the run\n"
    "with no dropped tokens and the lower TPOT p50 (JSON decode_routing_choice: the runs tried). --tp/--pp/\n"
    "--ep serve on that many GPUs (a step's TP all-reduces and EP all-to-alls on their own stream; with\n"
    "--pp the step passes the stages in turn); --dp N dispatches the requests round-robin to N such\n"
    "replicas. Same seed, same output. A run is bounded: at most 1,000,000 requests\n"
    "and 5e8 output tokens (requests x mean --output-tokens, or the trace's sum), refused past that (exit 2):\n"
    "the simulator advanced 0.75-3.4 M output tokens a second on a busy 2-core machine, up to ~11 minutes\n"
    "per model at the bound (the dense baseline runs too); 35 k a second at a mean decode batch near 1,\n"
    "so a low --rate with long outputs can take hours. A run longer than a few seconds shows its progress\n"
    "(requests finished, time left) on stderr, never on stdout. --attention fused|unfused: how attention runs\n"
    "(default fused on GPU hardware, unfused on a CPU; as modsim predict --attention).";

const char* const k_short_usage =
    "usage: modsim simulate forward|serve MODEL --hardware HW [options]   (modsim simulate --help for the options)";

void add_common_options(po::options_description& o) {
  // what, model and hardware are required, checked in that order after parsing (so that a missing
  // subcommand is reported as such, not as a missing --model).
  o.add_options()("what", po::value<std::string>(), "forward | serve")(
      "model", po::value<std::string>(), "model JSON, HF config.json or shipped model name")(
      "hardware", po::value<std::string>(), "hardware JSON (or a shipped name: cpu, h100-sxm, h200)")(
      "trace", po::value<std::string>(), "write Chrome trace-event JSON (Perfetto, chrome://tracing) here")(
      "format", po::value<std::string>()->default_value("table"), "table | json | csv | markdown");
  add_step_options(o);
  add_attention_option(o);
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
      "recompute", po::value<std::string>(), "train: activation recomputation none | selective | full (default none)")(
      "workload", po::value<std::string>(),
      "workload JSON file {batch, seq_len, mode, dtype, recompute}; flags override it");
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
    for (const char* k : {"batch", "seq", "mode", "recompute", "workload", "micro-batches", "gpus"}) {
      if (vm.count(k)) throw input_error("", std::string("--") + k, "is a `simulate forward` option");
    }
    if (!vm["draws"].defaulted()) throw input_error("", "--draws", "is a `simulate forward` option");
    return simulate_serve(vm, format);
  }
  return exit_bad_input;  // unreachable: `what` was checked above
}

}  // namespace modsim::cli
