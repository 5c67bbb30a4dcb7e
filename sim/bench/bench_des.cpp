// Benchmark of the discrete-event simulator (prints figures; asserts nothing):
//  1. events per second of the bare engine (des::engine) on a self-rescheduling workload;
//  2. events per second of the host/stream execution model on one decode step;
//  3. wall time to simulate serving 10,000 requests on a 24-layer MoD model (H100 datasheet
//     roofline), eager + sync and CUDA graphs + pad.
// Goals (the GitHub issue): >= 1M engine events/s; < 2 s for 10,000 requests.
#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "sim/cost/cost.hpp"
#include "sim/des/engine.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/serving.hpp"
#include "sim/des/step.hpp"

namespace des = modsim::sim::des;
namespace sim = modsim::sim;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// 1000 processes, each rescheduling itself after a pseudo-random delay, until `total` events.
void bench_engine(std::uint64_t total) {
  des::engine e;
  std::uint64_t state = 88172645463325252ull;
  std::uint64_t left = total;
  std::function<void()> tick = [&] {
    if (left == 0) return;
    --left;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    e.schedule(static_cast<double>(state % 1000) * 1e-6, tick);
  };
  for (int p = 0; p < 1000; ++p) e.schedule(0.0, tick);
  const auto t0 = std::chrono::steady_clock::now();
  e.run();
  const double wall = seconds_since(t0);
  fmt::print("engine:    {:>10} events in {:.3f} s = {:.2f} M events/s (1000 processes, heap of ~1000)\n",
             e.events_run(), wall, static_cast<double>(e.events_run()) / wall / 1e6);
}

sim::hardware_spec h100() {
  // configs/hardware/h100-sxm.json (datasheet).
  sim::hardware_spec hw;
  hw.name = "h100-sxm";
  hw.kind = sim::hardware_kind::gpu;
  hw.source = "datasheet";
  hw.peak_matmul_flops = {66.9e12, 989.4e12, 989.4e12};
  hw.peak_vector_flops = {66.9e12, 133.8e12, 133.8e12};
  hw.memory_bandwidth_bytes_s = 3.35e12;
  hw.memory_bytes = 80e9;
  hw.l2_bytes = 52428800;
  hw.sm_count = 132;
  hw.kernel_launch_s = 2.5e-6;
  hw.host_enqueue_s = 4.0e-6;
  return hw;
}

sim::model_spec mod_24_layers() {
  sim::model_spec m;
  m.name = "mod-24l (d 2048, 24 layers, capacity 0.125 every other)";
  m.d_model = 2048;
  m.n_layers = 24;
  m.n_heads = 16;
  m.n_kv_heads = 16;
  m.d_head = 128;
  m.d_ff = 8192;
  m.vocab_size = 32000;
  sim::routing_spec r;
  r.capacity = 0.125;
  r.sched.kind = sim::schedule_kind::every_other;
  r.predictor_hidden = 256;
  m.routing = r;
  return m;
}

void bench_step(const des::step_builder& b) {
  des::rng r(1);
  const des::step_load load = des::decode_load(b, 64, 1024, des::decode_routing::sync, 1.0, r);
  const std::vector<des::kernel> ks = b.step(load, des::decode_routing::sync);
  const int reps = 2000;
  // On the engine, with spans (what `simulate forward` runs).
  des::exec_options o;
  std::uint64_t events = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) events += des::simulate_execution(ks, b.device(), o).events;
  double wall = seconds_since(t0);
  fmt::print(
      "execution: {:>10} events in {:.3f} s = {:.2f} M events/s (engine + spans; {} kernels per decode step, {} "
      "steps)\n",
      events, wall, static_cast<double>(events) / wall / 1e6, ks.size(), reps);
  // The recurrence without spans (what serving runs every step).
  o.record_spans = false;
  o.by_class = false;
  t0 = std::chrono::steady_clock::now();
  double sum = 0;
  for (int i = 0; i < reps; ++i) sum += des::simulate_execution(ks, b.device(), o).summary.step_s;
  wall = seconds_since(t0);
  fmt::print("execution: {:.2f} us per step on the recurrence path (no spans; step {:.1f} us simulated)\n",
             wall / reps * 1e6, sum / reps * 1e6);
  // Building the step's kernel list from its shapes.
  t0 = std::chrono::steady_clock::now();
  std::size_t n = 0;
  for (int i = 0; i < reps; ++i) n += b.step(load, des::decode_routing::sync).size();
  wall = seconds_since(t0);
  fmt::print("step:      {:.2f} us to build a {}-kernel decode step from its shapes\n", wall / reps * 1e6, n / reps);
}

void bench_serve(const des::step_builder& b, const sim::model_spec& m, const sim::hardware_spec& hw, bool graph,
                 des::decode_routing routing) {
  const std::vector<des::request> reqs = des::poisson_arrivals(40.0, 10000, des::parse_length_dist("exp:512", "p"),
                                                               des::parse_length_dist("exp:128", "o"), 1);
  des::serve_options o;
  o.kv_budget_bytes = des::default_kv_budget_bytes(m, hw, sim::dtype::bf16);
  o.cuda_graph = graph;
  o.routing = routing;
  o.seed = 2;
  const auto t0 = std::chrono::steady_clock::now();
  const des::serve_result r = des::simulate_serving(b, reqs, o);
  const double wall = seconds_since(t0);
  const des::serve_summary& s = r.summary;
  fmt::print("serve ({}, {}): 10,000 requests (Poisson 40/s, prompt exp:512, output exp:128) in {:.3f} s wall\n",
             graph ? "CUDA graphs" : "eager", des::to_string(routing), wall);
  fmt::print(
      "           simulated {:.1f} s, {} steps, mean decode batch {:.1f}, {} events ({:.2f} M events/s), "
      "throughput {:.0f} tok/s, TTFT p50 {:.1f} ms, TPOT p50 {:.2f} ms\n",
      s.duration_s, s.steps, s.mean_decode_batch, s.events, static_cast<double>(s.events) / wall / 1e6,
      s.throughput_tok_s, s.ttft_s.p50 * 1e3, s.tpot_s.p50 * 1e3);
}

}  // namespace

int main() {
  bench_engine(10'000'000);
  const sim::hardware_spec hw = h100();
  const sim::model_spec m = mod_24_layers();
  const sim::cost_model cm(hw);
  const des::step_builder b(m, sim::dtype::bf16, des::device_model_of(cm, sim::dtype::bf16));
  bench_step(b);
  bench_serve(b, m, hw, false, des::decode_routing::sync);
  bench_serve(b, m, hw, true, des::decode_routing::pad);
  return 0;
}
