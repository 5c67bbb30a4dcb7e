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

#include "sim/cost.hpp"
#include "sim/des/serving.hpp"
#include "sim/parallel.hpp"
#include "sim/des/step.hpp"
#include "sim/spec.hpp"

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
