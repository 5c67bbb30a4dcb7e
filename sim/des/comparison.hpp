#pragma once
// The serving comparison every face of modsim shows (`modsim simulate serve`, `modsim report`,
// modsim-gui): a model and its dense baseline served under one scenario — the same requests
// (Poisson arrivals drawn from the scenario's seed), the same arrival rate (by default 70 % of
// what the dense model sustains) and the same routing seed — so one configuration gives one
// TTFT wherever it is read.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/cost/cost.hpp"
#include "sim/des/serving.hpp"
#include "sim/parallel/parallel.hpp"
#include "sim/des/step.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim::des {

struct serving_scenario {
  std::int64_t requests = 300;
  double rate_per_s = 0;                    // Poisson arrivals; 0 = 70 % of what the dense model sustains
  std::string prompt = "uniform:128:1024";  // length_dist texts
  std::string output = "uniform:16:256";
  std::uint64_t seed = 1;  // arrivals and routing draws
  serve_options options;   // kv_budget_bytes 0 = the contract's default budget for the model
  // Serve with dp data-parallel replicas (simulate_replicas: round-robin dispatch) of tp × pp
  // GPUs each (sim/des/parallel_step.hpp's parallel_serving_step; stages balanced by predicted
  // decode time); the default KV budget is then a replica's memory less its weights.
  std::optional<parallel_spec> split;
};

struct serving_run {
  std::string name;  // "dense" or the model's name
  serve_summary summary;
  std::vector<double> ttft_s, tpot_s;    // per completed request (tpot: requests with > 1 token)
  std::vector<request_record> requests;  // every request, by id
};

struct serving_comparison {
  serving_scenario scenario;  // with the rate actually used
  serving_run dense;          // the model with its routing removed
  serving_run model;
};

// The largest serving run simulated (one model; a comparison serves two): at most
// k_max_serve_requests requests (about 1 kB of memory each and run) and
// k_max_serve_output_tokens output tokens in all. The simulator's time grows with the decode
// tokens (each step visits every running sequence at every layer). Measured with
// `simulate serve` on the h100-sxm (2-core AMD EPYC shared by other jobs, load ~11, Release):
// 0.75-0.82 M output tokens a second at the default rate (mod-220m, mod-1b; mean decode batch
// ~17) and 2.7-3.4 M at --rate 1e9 (batches of 256), so the token bound is about 2.5-11
// minutes per model there; a mean batch near 1 (--rate 0.05, 2,000-token outputs) ran 35 k tokens a
// second: such runs can take hours inside the bound, and the progress line on stderr says so.
inline constexpr std::int64_t k_max_serve_requests = 1'000'000;
inline constexpr double k_max_serve_output_tokens = 5e8;
// Throws modsim::error(bad_input) naming `key` when `requests` requests generating
// `output_tokens` tokens in all are past either bound (the message gives both figures).
void check_serving_size(std::int64_t requests, double output_tokens, const std::string& key);
// The scenario's Poisson requests (s.requests of mean length s.output), checked as above
// against "--requests".
void check_serving_size(const serving_scenario& s);

// Requests per second the dense baseline of `m` sustains under `s`: one request costs its
// prefill plus its share of decode steps at a batch of up to 64 sequences.
double sustainable_rate(const model_spec& m, const cost_model& cost, dtype t, const serving_scenario& s);

// `s` with its rate resolved (0 → 70 % of sustainable_rate) and its requests drawn.
serving_scenario resolve_scenario(const model_spec& m, const cost_model& cost, dtype t, serving_scenario s);
std::vector<request> scenario_requests(const serving_scenario& resolved);

// One model served under a resolved scenario: its Poisson requests, or `requests` when given
// (an arrivals trace). A KV budget of 0 is the contract's default for the model; throws
// modsim::error(bad_input) naming the hardware file when the weights leave no room for it.
serving_run serve_model(const model_spec& m, const std::string& name, const cost_model& cost, dtype t,
                        const serving_scenario& resolved, std::span<serve_observer* const> observers = {});
serving_run serve_model(const model_spec& m, const std::string& name, const cost_model& cost, dtype t,
                        const serving_scenario& resolved, std::vector<request> requests,
                        std::span<serve_observer* const> observers = {});

// The model and its dense baseline under `s`. Throws modsim::error(bad_input) as
// simulate_serving does.
serving_comparison compare_serving(const model_spec& m, const cost_model& cost, dtype t, const serving_scenario& s,
                                   std::span<serve_observer* const> observers = {});

}  // namespace modsim::sim::des
