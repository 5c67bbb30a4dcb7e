// Tests of the serving simulation (sim/des/serving.cpp): KV accounting against hand counts,
// preemption, determinism (with the trace observer), Little's law, the decode routed fraction,
// arrivals and percentiles.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "des_fixtures.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/serving.hpp"
#include "sim/des/step.hpp"
#include "sim/des/trace.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "core/error.hpp"
#include "sim/model/flops.hpp"

namespace modsim::sim::des {
namespace {

using test::small_mod;
using test::toy_device;

serve_options options(double kv_budget_bytes = 1e9) {
  serve_options o;
  o.max_seqs = 64;
  o.max_batched_tokens = 4096;
  o.kv_budget_bytes = kv_budget_bytes;
  o.seed = 7;
  return o;
}

request req(std::int64_t id, double t, std::int64_t prompt, std::int64_t output) { return {id, t, prompt, output}; }

// Counts, per request id, how often it finished, and integrates requests in system.
class counting_observer final : public serve_observer {
 public:
  void on_arrival(const request& r) override {
    area += static_cast<double>(in_system) * (r.arrival_s - last_t);
    last_t = r.arrival_s;
    ++in_system;
  }
  void on_finish(const request_record& r) override {
    area += static_cast<double>(in_system) * (r.finish_s - last_t);
    last_t = r.finish_s;
    --in_system;
    ++finished[r.id];
    latency_sum += r.finish_s - r.arrival_s;
  }
  void on_preempt(std::int64_t, double) override { ++preemptions; }
  void on_step(const step_record& s) override {
    routed += s.routed_decode;
    decisions += s.decode_decisions;
  }
  std::map<std::int64_t, int> finished;
  std::int64_t in_system = 0, preemptions = 0, routed = 0, decisions = 0;
  double area = 0, last_t = 0, latency_sum = 0;
};

// block bytes of small_mod at fp32: 16 tokens x 2 (K and V) x d_kv 64 x 4 bytes = 8192.
constexpr std::int64_t block_bytes = 16 * 2 * 64 * 4;

TEST(DesServing, RoutedLayersCacheOnlyTheTopKOfThePrompt) {
  // One request, prompt 64, one output token (no decode). Layer 0 caches 64 tokens = 4
  // blocks; routed layer 1 caches k = ceil(0.25 x 64) = 16 tokens = 1 block: 5 blocks.
  step_builder b(small_mod(), dtype::fp32, toy_device());
  const serve_result r = simulate_serving(b, {req(0, 0.0, 64, 1)}, options());
  ASSERT_EQ(r.requests.size(), 1u);
  EXPECT_EQ(r.requests[0].kv_tokens, (std::vector<std::int64_t>{64, 16}));
  EXPECT_EQ(r.summary.kv_block_bytes, block_bytes);
  EXPECT_EQ(r.summary.kv_peak_bytes, 5 * block_bytes);
}

TEST(DesServing, TwoPromptsInOneStepCacheByHandCount) {
  // Prompts 64 and 40 in the same step. Layer 0: 64 -> 4 blocks, 40 -> 3 blocks. Layer 1:
  // k = 16 -> 1 block, k = ceil(0.25 x 40) = 10 -> 1 block. Peak 9 blocks.
  step_builder b(small_mod(), dtype::fp32, toy_device());
  const serve_result r = simulate_serving(b, {req(0, 0.0, 64, 1), req(1, 0.0, 40, 1)}, options());
  EXPECT_EQ(r.summary.steps, 1);
  EXPECT_EQ(r.requests[1].kv_tokens, (std::vector<std::int64_t>{40, 10}));
  EXPECT_EQ(r.summary.kv_peak_bytes, 9 * block_bytes);
}

TEST(DesServing, DecodeTokensWriteKvOnlyWhereTheyRoute) {
  // Prompt 32, 41 output tokens: 40 decode steps. Layer 0 caches 32 + 40 = 72 tokens;
  // routed layer 1 caches k = 8 from the prefill plus exactly the decode tokens routed there.
  step_builder b(small_mod(), dtype::fp32, toy_device());
  counting_observer obs;
  serve_observer* list[] = {&obs};
  const serve_result r = simulate_serving(b, {req(0, 0.0, 32, 41)}, options(), list);
  ASSERT_EQ(r.requests.size(), 1u);
  EXPECT_EQ(r.requests[0].kv_tokens[0], 72);
  EXPECT_EQ(obs.decisions, 40);  // one routed layer x 40 decode steps
  EXPECT_EQ(r.requests[0].kv_tokens[1], 8 + obs.routed);
  EXPECT_LT(obs.routed, 40);  // at capacity 0.25, 40 routed of 40 has probability 0.25^40
  EXPECT_EQ(r.summary.steps, 41);
}

TEST(DesServing, EveryRequestCompletesExactlyOnce) {
  step_builder b(small_mod(), dtype::fp32, toy_device());
  const std::vector<request> reqs =
      poisson_arrivals(200.0, 300, parse_length_dist("uniform:8:64", "p"), parse_length_dist("uniform:1:32", "o"), 3);
  counting_observer obs;
  serve_observer* list[] = {&obs};
  const serve_result r = simulate_serving(b, reqs, options(), list);
  EXPECT_EQ(r.summary.completed, 300);
  ASSERT_EQ(obs.finished.size(), 300u);
  for (const auto& [id, n] : obs.finished) EXPECT_EQ(n, 1) << "request " << id;
  for (const request_record& rec : r.requests) {
    EXPECT_GE(rec.first_token_s, rec.arrival_s);
    EXPECT_GE(rec.finish_s, rec.first_token_s);
  }
  EXPECT_EQ(r.summary.preemptions, 0);
}

TEST(DesServing, EveryRequestCompletesExactlyOnceUnderPreemption) {
  // A budget of 12 blocks: 4 prompts of 32 fit after prefill (2 + 1 blocks each), then the
  // first decode token past 32 needs a block at layer 0 that is not there: preemption.
  step_builder b(small_mod(), dtype::fp32, toy_device());
  std::vector<request> reqs;
  for (int i = 0; i < 20; ++i) reqs.push_back(req(i, 0.0, 32, 32));
  for (const std::int64_t chunk : {0, 8}) {
    serve_options o = options(12.0 * block_bytes);
    o.chunked_prefill = chunk;
    counting_observer obs;
    serve_observer* list[] = {&obs};
    const serve_result r = simulate_serving(b, reqs, o, list);
    EXPECT_GT(r.summary.preemptions, 0) << "chunk " << chunk;
    EXPECT_EQ(obs.preemptions, r.summary.preemptions);
    EXPECT_EQ(r.summary.completed, 20);
    ASSERT_EQ(obs.finished.size(), 20u);
    for (const auto& [id, n] : obs.finished) EXPECT_EQ(n, 1) << "request " << id;
    EXPECT_LE(r.summary.kv_peak_bytes, 12 * block_bytes);
    std::int64_t preempted = 0;
    for (const request_record& rec : r.requests) preempted += rec.preemptions;
    EXPECT_EQ(preempted, r.summary.preemptions);
    // A request that was recomputed still finished with all its tokens: layer 0 holds
    // prompt + output - 1 tokens (the last sampled token is never fed back).
    for (const request_record& rec : r.requests) EXPECT_EQ(rec.kv_tokens[0], 32 + 32 - 1);
  }
}

TEST(DesServing, ARequestThatCanNeverFitIsRejected) {
  step_builder b(small_mod(), dtype::fp32, toy_device());
  // 2 layers x ceil(200/16) = 26 blocks > 12.
  EXPECT_THROW(simulate_serving(b, {req(0, 0, 100, 100)}, options(12.0 * block_bytes)), modsim::error);
  serve_options o = options();
  o.max_batched_tokens = 50;
  EXPECT_THROW(simulate_serving(b, {req(0, 0, 100, 1)}, o), modsim::error);
  o.chunked_prefill = 16;  // with chunks it is served
  EXPECT_EQ(simulate_serving(b, {req(0, 0, 100, 1)}, o).summary.completed, 1);
}

TEST(DesServing, TheSameSeedGivesByteIdenticalTraceAndResults) {
  step_builder b(small_mod(), dtype::fp32, toy_device());
  const auto run = [&](std::uint64_t seed) {
    const std::vector<request> reqs =
        poisson_arrivals(300.0, 200, parse_length_dist("exp:30", "p"), parse_length_dist("exp:20", "o"), seed);
    serve_options o = options(40.0 * block_bytes);
    o.seed = seed;
    serve_trace trace("serve");
    serve_observer* list[] = {&trace};
    const serve_result r = simulate_serving(b, reqs, o, list);
    return std::make_pair(trace.json(), r);
  };
  const auto [t1, r1] = run(11);
  const auto [t2, r2] = run(11);
  const auto [t3, r3] = run(12);
  EXPECT_EQ(t1, t2);
  EXPECT_NE(t1, t3);
  EXPECT_EQ(r1.summary.ttft_s.p99, r2.summary.ttft_s.p99);
  EXPECT_EQ(r1.summary.throughput_tok_s, r2.summary.throughput_tok_s);
  EXPECT_EQ(r1.summary.decode_routed, r2.summary.decode_routed);
  EXPECT_EQ(t1.rfind("{\"traceEvents\":[", 0), 0u);
}

TEST(DesServing, LittlesLawHoldsOnALongStableRun) {
  // L = lambda W: the time-averaged number of requests in the system equals the arrival
  // rate times the mean latency. Both sides measured by an observer of this test; lambda is
  // the configured rate.
  // 40,000 Poisson arrivals: the arrival count over the run deviates from rate × duration
  // by about 1/sqrt(40000) = 0.5%, well inside the 2% bound.
  step_builder b(small_mod(0.25, 4), dtype::fp32, toy_device());
  const double rate = 400.0;
  const std::int64_t n = 40000;
  const std::vector<request> reqs =
      poisson_arrivals(rate, n, parse_length_dist("uniform:16:128", "p"), parse_length_dist("uniform:8:64", "o"), 5);
  counting_observer obs;
  serve_observer* list[] = {&obs};
  const serve_result r = simulate_serving(b, reqs, options(), list);
  ASSERT_EQ(r.summary.completed, n);
  const double mean_latency = obs.latency_sum / static_cast<double>(n);
  const double mean_in_system = obs.area / obs.last_t;
  EXPECT_GT(mean_in_system, 1.0);  // a loaded system, not an empty one
  EXPECT_NEAR(mean_in_system / (rate * mean_latency), 1.0, 0.02);
}

TEST(DesServing, RoutedFractionInDecodeConvergesToCapacity) {
  step_builder b(small_mod(0.125, 8), dtype::fp32, toy_device());
  const std::vector<request> reqs =
      poisson_arrivals(500.0, 400, parse_length_dist("32", "p"), parse_length_dist("200", "o"), 9);
  const serve_result r = simulate_serving(b, reqs, options());
  // 4 routed layers x 199 decode steps x 400 requests = 318400 decisions; the standard
  // error of the fraction is sqrt(0.125 x 0.875 / 318400) ~ 0.0006.
  EXPECT_EQ(r.summary.decode_decisions, 4 * 199 * 400);
  EXPECT_NEAR(r.summary.decode_routed_fraction, 0.125, 0.003);
}

TEST(DesServing, ArrivalsCsvIsParsedStrictly) {
  const auto reqs = parse_arrivals_csv("arrival_s,prompt_tokens,output_tokens\n0.5,10,3\n1.25,20,1\n", "t.csv");
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].id, 1);
  EXPECT_DOUBLE_EQ(reqs[1].arrival_s, 1.25);
  EXPECT_EQ(reqs[1].prompt_tokens, 20);
  EXPECT_THROW(parse_arrivals_csv("a,b\n1,2\n", "t.csv"), modsim::error);
  EXPECT_THROW(parse_arrivals_csv("arrival_s,prompt_tokens,output_tokens\n0.5,x,3\n", "t.csv"), modsim::error);
  EXPECT_THROW(parse_length_dist("uniform:5:2", "--prompt-tokens"), modsim::error);
}

TEST(DesServing, PercentilesInterpolateBetweenRanks) {
  // 1..11: p50 = 6, p90 = 1 + 0.9 x 10 = 10, p99 = 1 + 0.99 x 10 = 10.9.
  std::vector<double> v;
  for (int i = 11; i >= 1; --i) v.push_back(i);
  const percentiles p = percentiles_of(v);
  EXPECT_DOUBLE_EQ(p.p50, 6.0);
  EXPECT_DOUBLE_EQ(p.p90, 10.0);
  EXPECT_NEAR(p.p99, 10.9, 1e-12);
  EXPECT_DOUBLE_EQ(p.mean, 6.0);
}

// One request at a time (max_seqs 1), identical requests, a dense model (no routing draws):
// every request takes the same service time D, so the server is an M/D/1 queue and the mean
// wait before admission is W = rho / (2 mu (1 - rho)) with mu = 1/D, rho = lambda D.
TEST(DesServing, OneAtATimeIdenticalRequestsQueueAsMD1) {
  model_spec dense = small_mod();
  dense.routing.reset();
  step_builder b(dense, dtype::fp32, toy_device());
  serve_options o = options();
  o.max_seqs = 1;
  // D: the latency of a request alone.
  const serve_result alone = simulate_serving(b, {req(0, 0.0, 48, 4)}, o);
  const double D = alone.requests[0].latency_s();
  ASSERT_GT(D, 0);
  const double rho = 0.5;
  const double lambda = rho / D;
  const std::int64_t n = 200000;
  const std::vector<request> reqs =
      poisson_arrivals(lambda, n, parse_length_dist("48", "p"), parse_length_dist("4", "o"), 21);
  const serve_result r = simulate_serving(b, reqs, o);
  ASSERT_EQ(r.summary.completed, n);
  double wait = 0;
  for (const request_record& rec : r.requests) {
    EXPECT_NEAR(rec.finish_s - rec.admitted_s, D, 1e-12 + 1e-9 * D);  // deterministic service
    wait += rec.admitted_s - rec.arrival_s;
  }
  const double mean_wait = wait / static_cast<double>(n);
  const double expected = rho / (2.0 * (1.0 / D) * (1.0 - rho));  // = D/2 at rho = 0.5
  EXPECT_NEAR(mean_wait / expected, 1.0, 0.03) << "mean wait " << mean_wait << " s, M/D/1 " << expected << " s";
}

// The paper's point on a real configuration: a ~1B model on the H100 datasheet, MoD 12.5%
// every other block against its dense baseline. A routed layer caches only routed tokens and
// runs its block on the routed decode tokens only, so both the decode step and the KV peak
// are smaller (CUDA graphs, so the step is device-bound rather than host-bound).
TEST(DesServing, ModDecodeStepAndKvPeakAreBelowDense) {
  const std::string configs = std::string(MODSIM_SOURCE_DIR) + "/configs";
  const model_spec mod = load_model(configs + "/models/mod-1b.json");
  const model_spec dense = dense_baseline(mod);
  const cost_model cost(load_hardware(configs + "/hardware/h100-sxm.json"));
  const device_model dev = device_model_of(cost, dtype::bf16);
  step_builder bm(mod, dtype::bf16, dev), bd(dense, dtype::bf16, dev);
  exec_options graph;
  graph.cuda_graph = true;
  rng r1(5), r2(5);
  const double mod_step =
      simulate_execution(bm.step(decode_load(bm, 32, 2048, decode_routing::pad, 0.25, r1), decode_routing::pad),
                         bm.device(), graph)
          .summary.step_s;
  const double dense_step =
      simulate_execution(bd.step(decode_load(bd, 32, 2048, decode_routing::pad, 0.25, r2), decode_routing::pad),
                         bd.device(), graph)
          .summary.step_s;
  EXPECT_LT(mod_step, dense_step);

  const std::vector<request> reqs =
      poisson_arrivals(20.0, 200, parse_length_dist("exp:512", "p"), parse_length_dist("exp:128", "o"), 4);
  serve_options o = options(40e9);
  o.cuda_graph = true;
  const serve_result rm = simulate_serving(bm, reqs, o);
  const serve_result rd = simulate_serving(bd, reqs, o);
  EXPECT_EQ(rm.summary.completed, 200);
  EXPECT_EQ(rd.summary.completed, 200);
  EXPECT_LT(rm.summary.kv_peak_bytes, rd.summary.kv_peak_bytes);
}

}  // namespace
}  // namespace modsim::sim::des

namespace modsim::sim::des {
namespace {

TEST(DesServingReplicas, TwoReplicasServeTwoSimultaneousRequestsAsIfEachWereAlone) {
  // A dense model routes nothing, so a replica's run does not depend on its seed. Two requests
  // at t = 0: on one GPU they share every step; on two replicas each is alone, as request 0
  // is when served by itself.
  model_spec m = test::small_mod(1.0, 2);
  m.routing.reset();
  const step_builder b(m, dtype::fp32, test::toy_device());
  const std::vector<request> two = {{0, 0.0, 64, 8}, {1, 0.0, 64, 8}};
  const serve_result alone = simulate_serving(b, {two[0]}, options());
  const serve_result shared = simulate_serving(b, two, options());
  const serve_result split = simulate_replicas(b, two, options(), 2);
  ASSERT_EQ(split.requests.size(), 2u);
  for (const request_record& r : split.requests) {
    EXPECT_DOUBLE_EQ(r.first_token_s, alone.requests[0].first_token_s) << r.id;
    EXPECT_DOUBLE_EQ(r.finish_s, alone.requests[0].finish_s) << r.id;
  }
  // Sharing one GPU is slower than having one each.
  EXPECT_GT(shared.requests[1].finish_s, alone.requests[0].finish_s);
  // The summary is over both: 2 completed, 16 tokens, each replica's steps counted.
  EXPECT_EQ(split.summary.completed, 2);
  EXPECT_EQ(split.summary.output_tokens, 16);
  EXPECT_EQ(split.summary.steps, 2 * alone.summary.steps);
  EXPECT_DOUBLE_EQ(split.summary.ttft_s.p50, alone.requests[0].ttft_s());
  // Both requests are in the system from 0 to the common finish: a mean of 2.
  EXPECT_NEAR(split.summary.mean_in_system, 2.0, 1e-12);
  EXPECT_THROW(simulate_replicas(b, two, options(), 0), modsim::error);
}

TEST(DesServingReplicas, RequestsGoRoundRobinInArrivalOrder) {
  // Four requests 100 s apart (each finishes long before the next arrives): replica 0 takes
  // the 1st and 3rd, replica 1 the 2nd and 4th; a recorder sees the steps of both, in time order.
  model_spec m = test::small_mod(1.0, 2);
  m.routing.reset();
  const step_builder b(m, dtype::fp32, test::toy_device());
  struct steps final : serve_observer {
    std::vector<std::pair<double, int>> seen;
    void on_step(const step_record& s) override { seen.emplace_back(s.start_s, s.replica); }
  } rec;
  serve_observer* obs[] = {&rec};
  const std::vector<request> four = {{3, 300.0, 16, 2}, {0, 0.0, 16, 2}, {2, 200.0, 16, 2}, {1, 100.0, 16, 2}};
  (void)simulate_replicas(b, four, options(), 2, obs);
  ASSERT_FALSE(rec.seen.empty());
  for (std::size_t i = 1; i < rec.seen.size(); ++i) EXPECT_LE(rec.seen[i - 1].first, rec.seen[i].first);
  for (const auto& [t, replica] : rec.seen) EXPECT_EQ(replica, static_cast<int>(t / 100.0 + 0.5) % 2) << t;
}

}  // namespace
}  // namespace modsim::sim::des
