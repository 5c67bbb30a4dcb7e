#include "sim/des/comparison.hpp"
#include "sim/model/flops.hpp"
#include "sim/parallel/parallel_predict.hpp"
#include "sim/des/parallel_step.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "sim/des/execution.hpp"
#include "sim/cost/sweep.hpp"

namespace modsim::sim::des {

namespace {

double mean_of(const length_dist& d) {
  switch (d.k) {
    case length_dist::kind::fixed:
      return d.a;
    case length_dist::kind::uniform:
      return (d.a + d.b) / 2;
    case length_dist::kind::exponential:
      return d.a;
  }
  return d.a;
}

}  // namespace

double sustainable_rate(const model_spec& m, const cost_model& cost, dtype t, const serving_scenario& s) {
  const step_builder b(dense_baseline(m), t, device_model_of(cost, t));
  const length_dist prompt = parse_length_dist(s.prompt, "prompt");
  const length_dist output = parse_length_dist(s.output, "output");
  const double p = std::max(1.0, mean_of(prompt));
  const double o = std::max(1.0, mean_of(output));
  const std::int64_t batch = std::min<std::int64_t>(64, std::max<std::int64_t>(1, s.options.max_seqs));
  exec_options eo;
  eo.cuda_graph = s.options.cuda_graph;
  eo.record_spans = false;
  workload w;
  w.batch = 1;
  w.seq_len = static_cast<std::int64_t>(p);
  w.type = t;
  const double prefill_s = simulate_execution(b.forward(w), b.device(), eo).summary.step_s;
  rng r(s.seed);
  const auto load = decode_load(b, batch, static_cast<std::int64_t>(p + o / 2), decode_routing::sync, 1.0, r);
  const double step_s = simulate_execution(b.step(load, decode_routing::sync), b.device(), eo).summary.step_s;
  const double per_request_s = prefill_s + o * step_s / static_cast<double>(batch);
  return per_request_s > 0 ? 1.0 / per_request_s : 1.0;
}

serving_scenario resolve_scenario(const model_spec& m, const cost_model& cost, dtype t, serving_scenario s) {
  if (s.rate_per_s <= 0) s.rate_per_s = 0.7 * sustainable_rate(m, cost, t, s);
  return s;
}

void check_serving_size(std::int64_t requests, double output_tokens, const std::string& key) {
  if (requests > k_max_serve_requests || output_tokens > k_max_serve_output_tokens)
    throw input_error(
        "", key,
        fmt::format("{} requests generating ~{:.3g} output tokens cannot finish: a serving run simulates at most {} "
                    "requests and {:.3g} output tokens (up to about 11 minutes per model on a 2-core machine; see "
                    "modsim simulate --help)",
                    requests, output_tokens, k_max_serve_requests, k_max_serve_output_tokens));
}

void check_serving_size(const serving_scenario& s) {
  const double mean_output = mean_of(parse_length_dist(s.output, "--output-tokens"));
  check_serving_size(s.requests, static_cast<double>(s.requests) * mean_output, "--requests");
}

std::vector<request> scenario_requests(const serving_scenario& s) {
  check_serving_size(s);
  return poisson_arrivals(s.rate_per_s, s.requests, parse_length_dist(s.prompt, "serving prompt"),
                          parse_length_dist(s.output, "serving output"), s.seed);
}

serving_run serve_model(const model_spec& m, const std::string& name, const cost_model& cost, dtype t,
                        const serving_scenario& s, std::span<serve_observer* const> observers) {
  return serve_model(m, name, cost, t, s, scenario_requests(s), observers);
}

serving_run serve_model(const model_spec& m, const std::string& name, const cost_model& cost, dtype t,
                        const serving_scenario& s, std::vector<request> requests,
                        std::span<serve_observer* const> observers) {
  serve_options o = s.options;
  std::optional<parallel_serving_step> split;
  model_spec shard = m;
  const int replicas = s.split ? s.split->dp : 1;
  if (s.split && (s.split->tp > 1 || s.split->pp > 1 || s.split->ep > 1)) {
    const parallel_spec& p = *s.split;
    // Stages balanced by the predicted time of a typical decode step.
    workload typical;
    typical.run = run_mode::decode;
    typical.type = t;
    typical.batch = p.dp * std::min<std::int64_t>(64, std::max<std::int64_t>(1, o.max_seqs));
    typical.seq_len = 512;
    parallel_spec one = p;
    one.micro_batches = 1;
    const parallel_prediction pred = predict_parallel(m, typical, cost, one);
    shard = tp_shard(m, p.tp);
    split.emplace(m, t, p, pred.stages.first_layer, cost.hardware());
    o.split = &*split;
  } else if (s.split) {
    workload typical;
    typical.batch = s.split->dp;
    typical.seq_len = 1;
    validate_parallel(m, typical, *s.split);
  }
  const step_builder b(shard, t, device_model_of(cost, t));
  if (o.kv_budget_bytes <= 0) {
    // One GPU's memory less its weights, for each of the replica's GPUs (a pool of the shard's
    // KV heads over every layer: pp GPUs each hold 1/pp of the layers).
    const int pp = s.split ? s.split->pp : 1;
    o.kv_budget_bytes = split ? std::max(0.0, pp * cost.hardware().memory_bytes -
                                                  static_cast<double>(parameter_count(shard)) * dtype_bytes(t))
                              : default_kv_budget_bytes(m, cost.hardware(), t);
    if (!(o.kv_budget_bytes > 0))
      throw input_error(cost.hardware().source_file, "memory_bytes",
                        "the weights of " + m.name + " do not leave room for a KV cache");
  }
  o.seed = s.seed;
  serve_result res = simulate_replicas(b, std::move(requests), o, replicas, observers);
  serving_run run;
  run.name = name;
  run.summary = res.summary;
  for (const auto& r : res.requests) {
    if (r.finish_s < 0) continue;
    run.ttft_s.push_back(r.ttft_s());
    if (r.tpot_s() >= 0) run.tpot_s.push_back(r.tpot_s());
  }
  run.requests = std::move(res.requests);
  return run;
}

serving_comparison compare_serving(const model_spec& m, const cost_model& cost, dtype t, const serving_scenario& s,
                                   std::span<serve_observer* const> observers) {
  serving_comparison c;
  c.scenario = resolve_scenario(m, cost, t, s);
  c.dense = serve_model(dense_baseline(m), "dense", cost, t, c.scenario, observers);
  c.model = serve_model(m, m.name.empty() ? "MoD" : m.name, cost, t, c.scenario, observers);
  return c;
}

}  // namespace modsim::sim::des
