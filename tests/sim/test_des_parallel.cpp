// A step over several GPUs in the discrete-event simulator (sim/des/execution.hpp's
// dependencies across streams and GPUs, sim/des/parallel_step.hpp's collectives and 1F1B).
// Timelines are worked out by hand in the comments (times in microseconds); bytes from the
// model's dimensions.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/parallel_step.hpp"
#include "sim/model/flops.hpp"
#include "sim/parallel/parallel_predict.hpp"
#include "des_fixtures.hpp"

namespace modsim::sim::des {
namespace {

constexpr double us = 1e-6;

kernel k(kernel_op op, double device_us, int stream = 0, int device = 0, std::int32_t after = -1) {
  kernel x;
  x.op = op;
  x.layer = 0;
  x.device_s = device_us * us;
  x.stream = stream;
  x.device = device;
  x.after[0] = after;
  return x;
}

device_model free_launches() { return device_model{}; }

exec_options four_streams(int devices = 1) {
  exec_options o;
  o.streams = 4;
  o.devices = devices;
  return o;
}

TEST(DesParallelExecution, ACollectiveOnTheCriticalPathIsExposed) {
  // qkv 0-10; its all-reduce on stream 1 10-15; mlp_up waits for it: 15-25. Nothing overlaps:
  // 10 + 5 + 10 = 25, of which 5 exposed communication.
  const std::vector<kernel> ks = {k(modsim::op::qkv_proj, 10), k(step_op::tp_all_reduce, 5, 1, 0, 0),
                                  k(modsim::op::mlp_up, 10, 0, 0, 1)};
  const timeline t = simulate_execution(ks, free_launches(), four_streams());
  EXPECT_NEAR(t.summary.step_s, 25 * us, 1e-15);
  ASSERT_EQ(t.summary.devices.size(), 1u);
  EXPECT_NEAR(t.summary.devices[0].compute_s, 20 * us, 1e-15);
  EXPECT_NEAR(t.summary.devices[0].comm_s, 5 * us, 1e-15);
  EXPECT_NEAR(t.summary.devices[0].exposed_comm_s, 5 * us, 1e-15);
}

TEST(DesParallelExecution, ACollectiveNobodyWaitsForOverlapsCompute) {
  // qkv 0-10; a gradient bucket on stream 3 10-30; mlp_up (no dependency) 10-20. Step 30; the
  // bucket overlaps mlp_up for 10 and is exposed for the other 10.
  const std::vector<kernel> ks = {k(modsim::op::qkv_proj, 10), k(step_op::dp_all_reduce, 20, 3, 0, 0),
                                  k(modsim::op::mlp_up, 10)};
  const timeline t = simulate_execution(ks, free_launches(), four_streams());
  EXPECT_NEAR(t.summary.step_s, 30 * us, 1e-15);
  EXPECT_NEAR(t.summary.devices[0].comm_s, 20 * us, 1e-15);
  EXPECT_NEAR(t.summary.devices[0].exposed_comm_s, 10 * us, 1e-15);
  EXPECT_NEAR(t.summary.gpu_busy_s, 30 * us, 1e-15);
}

TEST(DesParallelExecution, AStageWaitsForTheSendAndTheWaitIsNotTheHosts) {
  // Host 3 per kernel, no launch cost. GPU 0: out_proj enqueued at 3, runs 3-13; its send
  // enqueued at 6, runs 13-18. GPU 1: qkv enqueued at 3, waits for the send: 18-28.
  // GPU 1 idles 0-18: 3 on its host, 15 on GPU 0. GPU 0 idles 0-3 (host) and 18-28 (drain).
  device_model d;
  d.host_enqueue_s = 3 * us;
  const std::vector<kernel> ks = {k(modsim::op::out_proj, 10), k(step_op::pp_send, 5, 2, 0, 0),
                                  k(modsim::op::qkv_proj, 10, 0, 1, 1)};
  const timeline t = simulate_execution(ks, d, four_streams(2));
  EXPECT_NEAR(t.summary.step_s, 28 * us, 1e-15);
  ASSERT_EQ(t.summary.devices.size(), 2u);
  const device_summary& g0 = t.summary.devices[0];
  const device_summary& g1 = t.summary.devices[1];
  EXPECT_NEAR(g1.wait_host_s, 3 * us, 1e-15);
  EXPECT_NEAR(g1.wait_other_s, 15 * us, 1e-15);
  EXPECT_NEAR(g0.wait_host_s, 3 * us, 1e-15);
  EXPECT_NEAR(g0.wait_other_s, 10 * us, 1e-15);
  EXPECT_NEAR(g0.busy_s + g0.wait_host_s + g0.wait_other_s, t.summary.step_s, 1e-15);
  // Both hosts enqueue in parallel: 3 + 3 + 3 of host time, GPU busy the mean of 15 and 10.
  EXPECT_NEAR(t.summary.host_busy_s, 9 * us, 1e-15);
  EXPECT_NEAR(t.summary.gpu_busy_s, 12.5 * us, 1e-15);
}

TEST(DesParallelExecution, RefusesADependencyCycleAndAnUnknownGpu) {
  std::vector<kernel> ks = {k(modsim::op::qkv_proj, 1, 0, 0, 1), k(step_op::tp_all_reduce, 1, 1, 0, 0)};
  EXPECT_THROW(simulate_execution(ks, free_launches(), four_streams()), modsim::error);
  ks = {k(modsim::op::qkv_proj, 1, 0, 2)};
  EXPECT_THROW(simulate_execution(ks, free_launches(), four_streams(2)), modsim::error);
  ks = {k(modsim::op::qkv_proj, 1, 0, 0, 0)};  // itself
  EXPECT_THROW(simulate_execution(ks, free_launches(), four_streams()), modsim::error);
}

TEST(DesParallel, OneFOneBOrder) {
  using P = std::vector<std::pair<bool, int>>;
  // p = 2, m = 3: the first stage runs one forward ahead; the last alternates from the start.
  EXPECT_EQ(one_f_one_b(0, 2, 3, true), (P{{false, 0}, {false, 1}, {true, 0}, {false, 2}, {true, 1}, {true, 2}}));
  EXPECT_EQ(one_f_one_b(1, 2, 3, true), (P{{false, 0}, {true, 0}, {false, 1}, {true, 1}, {false, 2}, {true, 2}}));
  EXPECT_EQ(one_f_one_b(0, 2, 3, false), (P{{false, 0}, {false, 1}, {false, 2}}));
}

// --- whole steps -------------------------------------------------------------------------

cost_model h100(bool free_links = false) {
  hardware_spec hw = load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json");
  if (free_links) {
    // Links so fast that a send takes ~1e-24 s: the pipeline's own arithmetic shows alone (no
    // fit to nccl-tests either: its floor would be a link cost).
    hw.interconnect->intra_node.bytes_s = 1e30;
    hw.interconnect->intra_node.latency_s = 0;
    hw.interconnect->calibration.clear();
  }
  return cost_model(hw);
}

// h100-sxm's links as the datasheet gives them: the alpha-beta model, without the fits to
// nccl-tests (whose ~24 us floor would make a small send slower than a stage's forward).
cost_model h100_datasheet_links() {
  hardware_spec hw = load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json");
  hw.interconnect->calibration.clear();
  return cost_model(hw);
}

// The toy device of des_fixtures with no host or launch cost and a free LM head (so that
// equal layers make equal stages).
device_model plain_device() {
  device_model d = test::toy_device();
  const auto inner = d.time_of;
  d.time_of = [inner](const op_cost& c, const op_shape& s) {
    op_time t = inner(c, s);
    if (c.op == modsim::op::lm_head) t.time_s = 0;
    return t;
  };
  d.launch_s = 0;
  d.host_enqueue_s = 0;
  return d;
}

model_spec dense(int layers) {
  model_spec m = test::small_mod(1.0, layers);
  m.routing.reset();
  return m;
}

workload load(std::int64_t batch, std::int64_t seq, run_mode mode = run_mode::forward) {
  return test::workload_of(batch, seq, mode);
}

std::vector<std::int64_t> bytes_of(const std::vector<kernel>& ks, kernel_op op) {
  std::vector<std::int64_t> out;
  for (const kernel& x : ks)
    if (x.op == op) out.push_back(x.bytes);
  return out;
}

TEST(DesParallel, TensorParallelAllReducesCarryTheRowsTheBlockComputes) {
  // Layer 0 dense: 64 tokens · d 64 · 2 bytes = 8,192 bytes; layer 1 routed at 0.25: k = 16
  // tokens, 2,048 bytes; each after the attention output and after the MLP.
  parallel_step_request r;
  r.split.tp = 2;
  const parallel_step ps = build_parallel_step(test::small_mod(0.25, 2), load(1, 64), h100(), plain_device(), r);
  EXPECT_EQ(bytes_of(ps.kernels, step_op::tp_all_reduce), (std::vector<std::int64_t>{8192, 8192, 2048, 2048}));
  // Every all-reduce holds up the next compute kernel, and nothing overlaps (no host or
  // launch cost): the step is the sum of every kernel.
  const timeline t = simulate_execution(ps.kernels, plain_device(), ps.options);
  double sum = 0;
  for (const kernel& x : ps.kernels) sum += x.device_s;
  EXPECT_NEAR(t.summary.step_s, sum, 1e-12 * sum);
  const double comm = collective_seconds(h100().hardware(), collective::all_reduce, 8192, 2) * 2 +
                      collective_seconds(h100().hardware(), collective::all_reduce, 2048, 2) * 2;
  EXPECT_NEAR(t.summary.devices[0].exposed_comm_s, comm, 1e-12 * comm);
}

TEST(DesParallel, TrainingAddsTheInputGradientAllReduces) {
  parallel_step_request r;
  r.split.tp = 2;
  const parallel_step ps =
      build_parallel_step(test::small_mod(0.25, 2), load(1, 64, run_mode::train), h100(), plain_device(), r);
  // Forward as above, then backward (layer 1 first) after the up and QKV projections.
  EXPECT_EQ(bytes_of(ps.kernels, step_op::tp_all_reduce),
            (std::vector<std::int64_t>{8192, 8192, 2048, 2048, 2048, 2048, 8192, 8192}));
}

TEST(DesParallel, APipelineOfEqualStagesTakesMPlusPMinusOneSlots) {
  // Four equal dense layers on 2 stages, 4 micro-batches, free links and launches: a forward
  // micro-batch takes f on a stage, its backward 2f; 1F1B takes (m + p − 1)(f + 2f).
  const model_spec m = dense(4);
  parallel_step_request r;
  r.split.pp = 2;
  r.split.micro_batches = 4;
  const parallel_step ps = build_parallel_step(m, load(8, 32, run_mode::train), h100(true), plain_device(), r);
  EXPECT_EQ(ps.first_layer, (std::vector<int>{0, 2}));
  EXPECT_EQ(ps.micro_batch, 2);
  double f = 0;  // one micro-batch's forward on stage 0 (layers 0 and 1)
  const std::vector<kernel> one = step_builder(m, dtype::bf16, plain_device()).forward(load(2, 32));
  for (const kernel& x : one)
    if (x.layer == 0 || x.layer == 1) f += x.device_s;
  const timeline t = simulate_execution(ps.kernels, plain_device(), ps.options);
  EXPECT_NEAR(t.summary.step_s, (4 + 2 - 1) * 3 * f, 1e-9 * t.summary.step_s);
  // Each stage idles (p − 1) slots: bubble fraction (p − 1)/(m + p − 1) = 1/5.
  for (const device_summary& g : t.summary.devices)
    EXPECT_NEAR(g.wait_other_s / t.summary.step_s, bubble_fraction(2, 4), 1e-9);

  // Forward only: the m forwards flow through the p stages, (m + p − 1) f.
  const parallel_step fwd = build_parallel_step(m, load(8, 32), h100(true), plain_device(), r);
  const timeline tf = simulate_execution(fwd.kernels, plain_device(), fwd.options);
  EXPECT_NEAR(tf.summary.step_s, (4 + 2 - 1) * f, 1e-9 * tf.summary.step_s);
}

TEST(DesParallel, ASendOverlapsTheSendersNextMicroBatch) {
  // Two stages, 2 micro-batches, forward only, links as the datasheet: stage 0 runs both
  // forwards back to back (its sends on their own stream); stage 1 starts each when its send
  // has arrived: step = 2 f0 + send + f1 when stage 0 is the slower (the LM head is free).
  const model_spec m = dense(4);
  parallel_step_request r;
  r.split.pp = 2;
  r.split.micro_batches = 2;
  const parallel_step ps = build_parallel_step(m, load(2, 32), h100_datasheet_links(), plain_device(), r);
  double f = 0, send = 0;
  for (const kernel& x : ps.kernels) {
    if (x.device == 0 && !is_comm(x)) f += x.device_s / 2;
    if (x.op == step_op::pp_send) send = x.device_s;
  }
  // 32 tokens · d 64 · 2 bytes per micro-batch.
  EXPECT_EQ(bytes_of(ps.kernels, step_op::pp_send), (std::vector<std::int64_t>{4096, 4096}));
  ASSERT_GT(send, 0);
  const timeline t = simulate_execution(ps.kernels, plain_device(), ps.options);
  EXPECT_NEAR(t.summary.step_s, 2 * f + send + f, 1e-9 * t.summary.step_s);
}

TEST(DesParallel, DataParallelGradientsAllReduceAfterTheBackwardAndTheLastBucketIsExposed) {
  // One 25 MB bucket holds every gradient of the small model: 4 layers of
  // d(dq + 2 dkv) + dq d + 2d + 2 d F = 12,288 + 4,096 + 128 + 32,768 = 49,280 weights, plus
  // the embedding, LM head and final norm 2 · 100 · 64 + 64 = 12,864: 209,984 weights, 419,968
  // bytes in bf16, all-reduced over 2 replicas once the backward pass ends.
  parallel_step_request r;
  r.split.dp = 2;
  const parallel_step ps = build_parallel_step(dense(4), load(2, 32, run_mode::train), h100(), plain_device(), r);
  EXPECT_EQ(bytes_of(ps.kernels, step_op::dp_all_reduce), (std::vector<std::int64_t>{419968}));
  const timeline t = simulate_execution(ps.kernels, plain_device(), ps.options);
  const double ar = dp_allreduce_seconds(h100().hardware(), 419968, 2, 1);
  EXPECT_NEAR(t.summary.devices[0].exposed_comm_s, ar, 1e-12);
}

// plain_device() whose optimizer step moves its bytes at 1 TB/s.
device_model optimizer_at_1tb_s() {
  device_model dev = plain_device();
  dev.optimizer_time_of = [](const optimizer_cost& c) {
    op_time t;
    t.time_s = static_cast<double>(c.bytes) / 1e12;
    t.bytes = c.bytes;
    return t;
  };
  return dev;
}

// Tied embeddings: one stage holds the matrix once; two stages each hold it (the first as the
// embedding, the last as the LM head). dense(4) as above with tie_embeddings: on one stage
// 4 · 49,280 + 6,400 + 64 (final norm) = 203,584 weights (untied: 209,984), every one of them
// in the gradient all-reduces once; on two, 104,960 and 105,024 as untied.
TEST(DesParallel, TiedEmbeddingsAreOneMatrixOnOneStageAndACopyOnTheLast) {
  const device_model dev = optimizer_at_1tb_s();
  model_spec tied = dense(4);
  tied.tie_embeddings = true;
  EXPECT_EQ(parameter_count(tied), 4 * 49280 + 6400 + 64);
  EXPECT_EQ(parameter_count(dense(4)), 4 * 49280 + 2 * 6400 + 64);
  parallel_step_request one;
  one.split.dp = 2;
  const parallel_step a = build_parallel_step(tied, load(8, 32, run_mode::train), h100(true), dev, one);
  EXPECT_EQ(bytes_of(a.kernels, step_op::optimizer), (std::vector<std::int64_t>{28 * (4 * 49280 + 6400 + 64)}));
  std::int64_t reduced = 0;  // bf16 gradients: 2 bytes each
  for (const kernel& x : a.kernels)
    if (x.op == step_op::dp_all_reduce) reduced += x.bytes;
  EXPECT_EQ(reduced, 2 * (4 * 49280 + 6400 + 64));
  parallel_step_request two;
  two.split.pp = 2;
  two.split.dp = 2;
  two.split.micro_batches = 2;
  const parallel_step b = build_parallel_step(tied, load(8, 32, run_mode::train), h100(true), dev, two);
  EXPECT_EQ(bytes_of(b.kernels, step_op::optimizer), (std::vector<std::int64_t>{28 * 104960, 28 * 105024}));
}

TEST(DesParallel, EachStageUpdatesItsOwnParametersOnceItsGradientsAreReduced) {
  // Two stages of two dense layers (49,280 weights each, above), two replicas. Stage 0 holds
  // the embedding (100 · 64 = 6,400), stage 1 the LM head and final norm (6,464): 104,960 and
  // 105,024 weights, 28 bytes each for AdamW in bf16 (weights, gradients, two fp32 moments, an
  // fp32 master copy): 2,938,880 and 2,940,672 bytes, at 1 TB/s in this device's optimizer.
  const device_model dev = optimizer_at_1tb_s();
  parallel_step_request r;
  r.split.pp = 2;
  r.split.dp = 2;
  r.split.micro_batches = 2;
  const parallel_step ps = build_parallel_step(dense(4), load(8, 32, run_mode::train), h100(true), dev, r);
  EXPECT_EQ(bytes_of(ps.kernels, step_op::optimizer), (std::vector<std::int64_t>{2938880, 2940672}));
  const timeline t = simulate_execution(ps.kernels, dev, ps.options);
  for (int stage = 0; stage < 2; ++stage) {
    double reduced = -1, start = -1, end = 0;  // the last gradient all-reduce's end; the optimizer's start
    for (const span& s : t.spans) {
      if (s.kernel < 0 || s.kind != span_kind::run) continue;
      const kernel& x = ps.kernels[static_cast<std::size_t>(s.kernel)];
      if (x.device != stage) continue;
      end = std::max(end, s.start_s + s.dur_s);
      if (x.op == step_op::dp_all_reduce) reduced = std::max(reduced, s.start_s + s.dur_s);
      if (x.op == step_op::optimizer) start = s.start_s;
    }
    ASSERT_GE(reduced, 0) << stage;
    ASSERT_GE(start, 0) << stage;
    EXPECT_GE(start, reduced - 1e-15) << stage;
    // It is the stage's last work: the step ends with it.
    EXPECT_NEAR(end, start + (stage == 0 ? 2938880 : 2940672) / 1e12, 1e-15) << stage;
  }
  // A stage's send of the last micro-batch's gradients waits for its compute, not for the
  // gradient all-reduces flushed after it (they run on their own stream, overlapping the other
  // stage's backward pass).
  int sends = 0;
  for (const kernel& x : ps.kernels) {
    if (x.op != step_op::pp_send) continue;
    ++sends;
    ASSERT_GE(x.after[0], 0);
    EXPECT_FALSE(is_comm(ps.kernels[static_cast<std::size_t>(x.after[0])])) << "a send after a collective";
  }
  EXPECT_EQ(sends, 4);  // two micro-batches forward (stage 0 → 1) and backward (1 → 0)
  // Without an optimizer in the device model, none (the hand-worked timelines above).
  const parallel_step none = build_parallel_step(dense(4), load(8, 32, run_mode::train), h100(true), plain_device(), r);
  EXPECT_TRUE(bytes_of(none.kernels, step_op::optimizer).empty());
}

TEST(DesParallel, ExpertParallelMovesOnlyTheSlotsThatReachExperts) {
  // MoDE staged, 4 experts, top-1: the dense layer dispatches its 64 tokens (64 · 64 · 2 =
  // 8,192 bytes), the routed layer at 0.25 its k = 16 (2,048); combine moves the same.
  model_spec m = test::small_mod(0.25, 2);
  moe_spec mo;
  mo.variant = moe_variant::staged;
  mo.experts = 4;
  mo.top_k = 1;
  m.moe = mo;
  parallel_step_request r;
  r.split.ep = 2;
  r.split.dp = 2;
  const parallel_step ps = build_parallel_step(m, load(2, 64), h100(), plain_device(), r);
  EXPECT_EQ(bytes_of(ps.kernels, step_op::ep_dispatch), (std::vector<std::int64_t>{8192, 2048}));
  EXPECT_EQ(bytes_of(ps.kernels, step_op::ep_combine), (std::vector<std::int64_t>{8192, 2048}));
  // Integrated with 12 no-op experts beside the 4 real ones: a quarter of the routed layer's
  // 64 slots reach real experts (the dense layer has no no-op experts).
  mo.variant = moe_variant::integrated;
  mo.noop_experts = 12;
  m.moe = mo;
  const parallel_step pi = build_parallel_step(m, load(2, 64), h100(), plain_device(), r);
  EXPECT_EQ(bytes_of(pi.kernels, step_op::ep_dispatch), (std::vector<std::int64_t>{8192, 2048}));
}

TEST(DesParallel, AServingStepPassesTheStagesInTurn) {
  // A decode step of 4 sequences over 2 stages (layers 0-1, 2-3 + LM head): one send of
  // 4 tokens · 64 · 2 = 512 bytes between them, and with no host or launch cost the step is
  // every kernel one after the other.
  const model_spec m = dense(4);
  const step_builder b(m, dtype::bf16, plain_device());
  rng draws(1);
  const std::vector<kernel> ks =
      b.step(decode_load(b, 4, 100, decode_routing::pad, std::nullopt, draws), decode_routing::pad);
  parallel_spec sp;
  sp.pp = 2;
  const parallel_serving_step ss(m, dtype::bf16, sp, {0, 2}, h100().hardware());
  exec_options o;
  o.record_spans = false;
  const std::vector<kernel> out = ss.apply(ks, b.layers(), 4, o);
  EXPECT_EQ(o.devices, 2);
  EXPECT_EQ(bytes_of(out, step_op::pp_send), (std::vector<std::int64_t>{512}));
  double sum = 0;
  for (const kernel& x : out) sum += x.device_s;
  const timeline t = simulate_execution(out, plain_device(), o);
  EXPECT_NEAR(t.summary.step_s, sum, 1e-12 * sum);
  for (const kernel& x : out) {
    EXPECT_EQ(x.device, x.layer >= 2 || x.layer < 0 ? 1 : 0) << to_string(x.op) << " layer " << x.layer;
  }
}

TEST(DesParallel, ASplitTheModelCannotTakeIsRefused) {
  parallel_step_request r;
  r.split.tp = 3;  // 4 heads
  EXPECT_THROW(build_parallel_step(dense(4), load(2, 32), h100(), plain_device(), r), modsim::error);
}

}  // namespace
}  // namespace modsim::sim::des
