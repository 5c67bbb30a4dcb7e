// Tests of the host/stream execution model (sim/des/execution.cpp). Every timeline is worked
// out by hand in the comments (times in microseconds).
#include "sim/des/execution.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace modsim::sim::des {
namespace {

constexpr double us = 1e-6;

kernel k(kernel_op op, double device_us, bool host_waits = false) {
  kernel x;
  x.op = op;
  x.layer = 0;
  x.device_s = device_us * us;
  x.host_waits = host_waits;
  return x;
}

device_model dev(double enqueue_us, double launch_us) {
  device_model d;
  d.launch_s = launch_us * us;
  d.host_enqueue_s = enqueue_us * us;
  return d;
}

std::vector<kernel> three() {
  return {k(modsim::op::qkv_proj, 10), k(modsim::op::attn_scores, 20), k(modsim::op::mlp_up, 5)};
}

TEST(DesExecution, FastHostKeepsTheStreamBusyAfterTheFirstKernel) {
  // Host 4 per kernel, launch 1: enqueued at 4, 8, 12. Stream: 4-15, 15-36, 36-42.
  const timeline t = simulate_execution(three(), dev(4, 1), {});
  EXPECT_NEAR(t.summary.step_s, 42 * us, 1e-12);
  EXPECT_NEAR(t.summary.gpu_wait_host_s, 4 * us, 1e-12);
  EXPECT_NEAR(t.summary.gpu_busy_s, 38 * us, 1e-12);
  EXPECT_NEAR(t.summary.host_busy_s, 12 * us, 1e-12);
  EXPECT_EQ(t.summary.launches, 3);
}

TEST(DesExecution, SlowHostLeavesTheGpuIdleByTheHandComputedAmount) {
  // Host 30 per kernel: enqueued at 30, 60, 90. Stream: 30-41, 60-81, 90-96.
  // Idle: 30 (before the first) + 19 + 9 = 58; busy 11 + 21 + 6 = 38.
  const timeline t = simulate_execution(three(), dev(30, 1), {});
  EXPECT_NEAR(t.summary.step_s, 96 * us, 1e-12);
  EXPECT_NEAR(t.summary.gpu_wait_host_s, 58 * us, 1e-12);
  EXPECT_NEAR(t.summary.gpu_busy_s, 38 * us, 1e-12);
  EXPECT_NEAR(t.summary.gpu_busy_fraction(), 38.0 / 96.0, 1e-12);
  // The idle spans on the stream: [0,30) before kernel 0, [41,60) before 1, [81,90) before 2.
  std::vector<span> idle;
  for (const span& s : t.spans) {
    if (s.kind == span_kind::idle) idle.push_back(s);
  }
  ASSERT_EQ(idle.size(), 3u);
  EXPECT_NEAR(idle[0].start_s, 0, 1e-12);
  EXPECT_NEAR(idle[0].dur_s, 30 * us, 1e-12);
  EXPECT_NEAR(idle[1].start_s, 41 * us, 1e-12);
  EXPECT_NEAR(idle[1].dur_s, 19 * us, 1e-12);
  EXPECT_EQ(idle[1].kernel, 1);
  EXPECT_NEAR(idle[2].start_s, 81 * us, 1e-12);
  EXPECT_NEAR(idle[2].dur_s, 9 * us, 1e-12);
  EXPECT_EQ(idle[2].track, 1);
}

TEST(DesExecution, CudaGraphModeDoesNotIdleBetweenKernels) {
  // One graph: the host spends 30 once, all three are enqueued at 30; the first pays one
  // launch: 30-41, 41-61, 61-66. The only idle time is the graph launch itself.
  exec_options o;
  o.cuda_graph = true;
  const timeline t = simulate_execution(three(), dev(30, 1), o);
  EXPECT_NEAR(t.summary.step_s, 66 * us, 1e-12);
  EXPECT_NEAR(t.summary.gpu_wait_host_s, 30 * us, 1e-12);
  EXPECT_NEAR(t.summary.gpu_busy_s, 36 * us, 1e-12);
  EXPECT_EQ(t.summary.launches, 1);
}

TEST(DesExecution, ASyncMakesTheHostWaitAndTheStreamDrain) {
  // predictor 10, d2h 2 (host waits), block 20; host 4, launch 1.
  // predictor: enq 0-4, run 4-15. d2h: enq 4-8, run 15-18; host blocked 8-18.
  // block: enq 18-22, run 22-43. Idle: 4 + (22-18) = 8; sync wait 10.
  const std::vector<kernel> ks = {k(modsim::op::predictor, 10), k(step_op::d2h_sync, 2, true),
                                  k(modsim::op::qkv_proj, 20)};
  const timeline t = simulate_execution(ks, dev(4, 1), {});
  EXPECT_NEAR(t.summary.step_s, 43 * us, 1e-12);
  EXPECT_NEAR(t.summary.gpu_wait_host_s, 8 * us, 1e-12);
  EXPECT_NEAR(t.summary.host_sync_wait_s, 10 * us, 1e-12);
  EXPECT_EQ(t.summary.syncs, 1);
  // By class: the 4 us gap before the block is charged to attn_proj, the first 4 to routing.
  for (const class_summary& c : t.summary.by_class) {
    if (c.op_class == "attn_proj") {
      EXPECT_NEAR(c.wait_before_s, 4 * us, 1e-12);
    }
    if (c.op_class == "routing") {
      EXPECT_NEAR(c.wait_before_s, 4 * us, 1e-12);
    }
    if (c.op_class == "sync") {
      EXPECT_NEAR(c.device_s, 3 * us, 1e-12);
    }
  }
}

TEST(DesExecution, ASyncSplitsTheCudaGraph) {
  // Graph 1 = {predictor, d2h}: host 0-4, run 4-15 (launch 1 + 10), 15-17; host blocked 4-17.
  // Graph 2 = {block}: host 17-21, run 21-42. Idle 4 + 4 = 8.
  exec_options o;
  o.cuda_graph = true;
  const std::vector<kernel> ks = {k(modsim::op::predictor, 10), k(step_op::d2h_sync, 2, true),
                                  k(modsim::op::qkv_proj, 20)};
  const timeline t = simulate_execution(ks, dev(4, 1), o);
  EXPECT_NEAR(t.summary.step_s, 42 * us, 1e-12);
  EXPECT_NEAR(t.summary.gpu_wait_host_s, 8 * us, 1e-12);
  EXPECT_NEAR(t.summary.host_sync_wait_s, 13 * us, 1e-12);
  EXPECT_EQ(t.summary.launches, 2);
}

TEST(DesExecution, StreamsRunIndependently) {
  // Two streams, host 1, launch 0: a (stream 0, 10) enq at 1 runs 1-11; b (stream 1, 3) enq
  // at 2 runs 2-5; c (stream 0, 1) enq at 3 waits for a: 11-12. Step 12, GPU never idle
  // after 1.
  exec_options o;
  o.streams = 2;
  std::vector<kernel> ks = {k(modsim::op::mlp_up, 10), k(modsim::op::attn_scores, 3), k(modsim::op::mlp_down, 1)};
  ks[1].stream = 1;
  const timeline t = simulate_execution(ks, dev(1, 0), o);
  EXPECT_NEAR(t.summary.step_s, 12 * us, 1e-12);
  EXPECT_NEAR(t.summary.gpu_wait_host_s, 1 * us, 1e-12);
}

TEST(DesExecution, SpansAreOptional) {
  exec_options o;
  o.record_spans = false;
  const timeline t = simulate_execution(three(), dev(30, 1), o);
  EXPECT_TRUE(t.spans.empty());
  EXPECT_NEAR(t.summary.step_s, 96 * us, 1e-12);
}

TEST(DesExecution, TheRecurrencePathGivesTheEngineTimeline) {
  // Without spans, one stream is computed by its recurrence: it must match the engine's
  // timeline on arbitrary kernel lists (durations, launches and syncs from a fixed LCG).
  std::uint64_t x = 12345;
  const auto next = [&x] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(x >> 33) / 2147483648.0;
  };
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<kernel> ks;
    const int n = 1 + static_cast<int>(next() * 40);
    for (int i = 0; i < n; ++i) {
      kernel a = k(next() < 0.1 ? kernel_op(step_op::d2h_sync) : kernel_op(modsim::op::mlp_up), next() * 20, false);
      a.host_waits = a.op == step_op::d2h_sync;
      a.launches = next() < 0.2 ? 2 : 1;
      ks.push_back(a);
    }
    for (const bool graph : {false, true}) {
      exec_options with;
      with.cuda_graph = graph;
      exec_options without = with;
      without.record_spans = false;
      const device_model d = dev(next() * 10, next() * 3);
      const timeline a = simulate_execution(ks, d, with);
      const timeline b = simulate_execution(ks, d, without);
      EXPECT_GT(a.events, 0u);
      EXPECT_EQ(b.events, 0u);
      EXPECT_NEAR(a.summary.step_s, b.summary.step_s, 1e-15);
      EXPECT_NEAR(a.summary.gpu_wait_host_s, b.summary.gpu_wait_host_s, 1e-15);
      EXPECT_NEAR(a.summary.host_busy_s, b.summary.host_busy_s, 1e-15);
      EXPECT_NEAR(a.summary.host_sync_wait_s, b.summary.host_sync_wait_s, 1e-15);
      EXPECT_EQ(a.summary.launches, b.summary.launches);
      EXPECT_EQ(a.summary.syncs, b.summary.syncs);
      ASSERT_EQ(a.summary.by_class.size(), b.summary.by_class.size());
      for (std::size_t c = 0; c < a.summary.by_class.size(); ++c) {
        EXPECT_NEAR(a.summary.by_class[c].wait_before_s, b.summary.by_class[c].wait_before_s, 1e-15);
      }
    }
  }
}

}  // namespace
}  // namespace modsim::sim::des
