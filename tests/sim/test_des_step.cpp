// Tests of the step builder (sim/des/step.cpp): the kernels of one step from its actual
// shapes — FLOPs at routed layers by hand, padding vs synchronising, the decode routed count,
// agreement with the FLOP model.
#include "sim/des/step.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "des_fixtures.hpp"
#include "sim/des/execution.hpp"
#include "sim/model/flops.hpp"

namespace modsim::sim::des {
namespace {

using test::small_mod;
using test::toy_device;

TEST(DesStep, DecodeRoutedCountPerLayerConvergesToCapacity) {
  step_builder b(small_mod(0.3, 4), dtype::fp32, toy_device());
  rng r(1);
  std::vector<std::int64_t> routed;
  decode_load(b, 200000, 100, decode_routing::sync, 1.0, r, &routed);
  EXPECT_EQ(routed[0], 200000);
  EXPECT_NEAR(static_cast<double>(routed[1]) / 200000.0, 0.3, 0.005);
  EXPECT_NEAR(static_cast<double>(routed[3]) / 200000.0, 0.3, 0.005);
}

TEST(DesStep, PaddingSpendsMoreFlopsButNeverSynchronises) {
  step_builder b(small_mod(0.25, 4), dtype::fp32, toy_device());
  rng r1(4), r2(4);
  const step_load sync_load = decode_load(b, 64, 256, decode_routing::sync, 1.0, r1);
  const step_load pad_load = decode_load(b, 64, 256, decode_routing::pad, 1.0, r2);
  const timeline ts = simulate_execution(b.step(sync_load, decode_routing::sync), b.device(), {});
  const timeline tp = simulate_execution(b.step(pad_load, decode_routing::pad), b.device(), {});
  // Synchronising: one device->host read per routed layer (layers 1 and 3), the host waits.
  EXPECT_EQ(ts.summary.syncs, 2);
  EXPECT_GT(ts.summary.host_sync_wait_s, 0.0);
  EXPECT_EQ(ts.summary.wasted_matmul_flops, 0);
  // Padding: kernels sized to all 64 rows, no sync, and the extra rows are wasted FLOPs.
  EXPECT_EQ(tp.summary.syncs, 0);
  EXPECT_EQ(tp.summary.host_sync_wait_s, 0.0);
  EXPECT_GT(tp.summary.matmul_flops, ts.summary.matmul_flops);
  EXPECT_GT(tp.summary.wasted_matmul_flops, 0);
  // The waste is exactly the difference (same draws, nothing dropped at pad capacity 1).
  EXPECT_EQ(tp.summary.matmul_flops - tp.summary.wasted_matmul_flops, ts.summary.matmul_flops);
  // The GPU waits on the host longer when the host syncs.
  EXPECT_GT(ts.summary.gpu_wait_host_s, tp.summary.gpu_wait_host_s);
}

TEST(DesStep, ADecodeQkvProjectionAtARoutedLayerCoversOnlyRoutedTokens) {
  // qkv_proj at T rows: 2 T d (dq + 2 dkv) = 2 T 64 192 = 24576 T FLOPs.
  step_builder b(small_mod(0.25, 2), dtype::fp32, toy_device());
  rng r(2);
  std::vector<std::int64_t> routed;
  const step_load load = decode_load(b, 40, 10, decode_routing::sync, 1.0, r, &routed);
  const std::vector<kernel> ks = b.step(load, decode_routing::sync);
  std::vector<std::int64_t> qkv;
  for (const kernel& k : ks) {
    if (k.op == modsim::op::qkv_proj) qkv.push_back(k.matmul_flops);
  }
  ASSERT_EQ(qkv.size(), routed[1] > 0 ? 2u : 1u);
  EXPECT_EQ(qkv[0], 24576 * 40);
  if (routed[1] > 0) {
    EXPECT_EQ(qkv[1], 24576 * routed[1]);
  }
  // Attention at the routed layer: each routed token attends over k_ctx + 1 = ceil(2.5) + 1 = 4
  // keys: scores 2 x 4 x dq 64 = 512 FLOPs per routed token.
  for (const kernel& k : ks) {
    if (k.op == modsim::op::attn_scores && k.layer == 1) {
      EXPECT_EQ(k.matmul_flops, 512 * routed[1]);
    }
    if (k.op == modsim::op::attn_scores && k.layer == 0) {
      EXPECT_EQ(k.matmul_flops, 2 * 11 * 64 * 40);
    }
  }
}

// A sliding window of 3: a decode query over a cache of 10 (dense layer) attends to 3 keys,
// scores 2 x 3 x dq 64 = 384 FLOPs per token (not 2 x 11 x 64); at the routed layer the
// k_ctx + 1 = 4 routed keys are cut to 3 as well. A prefill of 8 tokens at the dense layer
// counts n x min(n, W) = 8 x 3 pairs: 2 x 8 x 3 x 64 FLOPs per sequence.
TEST(DesStep, ASlidingWindowCapsTheKeysOfDecodeAndPrefillQueries) {
  model_spec m = small_mod(0.25, 2);
  m.sliding_window = 3;
  step_builder b(m, dtype::fp32, toy_device());
  rng r(2);
  std::vector<std::int64_t> routed;
  const step_load load = decode_load(b, 40, 10, decode_routing::sync, 1.0, r, &routed);
  for (const kernel& k : b.step(load, decode_routing::sync)) {
    if (k.op == modsim::op::attn_scores && k.layer == 0) {
      EXPECT_EQ(k.matmul_flops, 2 * 3 * 64 * 40);
    }
    if (k.op == modsim::op::attn_scores && k.layer == 1) {
      EXPECT_EQ(k.matmul_flops, 2 * 3 * 64 * routed[1]);
    }
  }
  workload w;
  w.batch = 2;
  w.seq_len = 8;
  w.type = dtype::fp32;
  bool seen = false;
  for (const kernel& k : b.forward(w))
    if (k.op == modsim::op::attn_scores && k.layer == 0) {
      EXPECT_EQ(k.matmul_flops, 2 * 2 * 8 * 3 * 64);
      seen = true;
    }
  EXPECT_TRUE(seen);
}

TEST(DesStep, ForwardKernelsAddUpToTheFlopModel) {
  const model_spec m = small_mod(0.125, 4);
  step_builder b(m, dtype::bf16, toy_device());
  workload w;
  w.batch = 2;
  w.seq_len = 64;
  w.type = dtype::bf16;
  std::int64_t fwd = 0;
  for (const kernel& k : b.forward(w)) fwd += k.matmul_flops;
  EXPECT_EQ(fwd, evaluate_flops(m, w).totals.matmul_flops);
  w.run = run_mode::train;
  std::int64_t train = 0;
  for (const kernel& k : b.forward(w)) train += k.matmul_flops;
  EXPECT_EQ(train, 3 * fwd);
}

TEST(DesStep, ATrainingStepEndsWithTheOptimizerStepOverEveryParameter) {
  // small_mod(0.25, 2): d 64, F 256, V 100, layer 1 routed with a predictor of hidden 16.
  // Layers: 4·64² + 2·64 + 2·64·256 = 49,280 each; the routed one adds the router (64) and the
  // predictor (64·16 + 16 = 1,040); embedding, LM head and final norm 2·100·64 + 64 = 12,864:
  // 112,528 parameters, 28 bytes each for AdamW in bf16.
  device_model dev = toy_device();
  dev.optimizer_time_of = [](const optimizer_cost& c) {
    op_time t;
    t.time_s = static_cast<double>(c.bytes) / 1e12;
    t.kernels = 1;
    return t;
  };
  const step_builder b(small_mod(0.25, 2), dtype::bf16, dev);
  const std::vector<kernel> ks = b.forward(test::workload_of(1, 64, run_mode::train));
  ASSERT_FALSE(ks.empty());
  EXPECT_EQ(ks.back().op, kernel_op(step_op::optimizer));
  EXPECT_EQ(ks.back().bytes, 28 * 112528);
  EXPECT_DOUBLE_EQ(ks.back().device_s, 28 * 112528 / 1e12);
  EXPECT_STREQ(kernel_class(ks.back()), "optimizer");
  EXPECT_FALSE(is_comm(ks.back()));
  int optimizers = 0;
  for (const kernel& k : ks) optimizers += k.op == kernel_op(step_op::optimizer);
  EXPECT_EQ(optimizers, 1);
  // A forward pass has none, and neither has a device model that prices no optimizer.
  for (const kernel& k : b.forward(test::workload_of(1, 64))) EXPECT_NE(k.op, kernel_op(step_op::optimizer));
  for (const kernel& k :
       step_builder(small_mod(0.25, 2), dtype::bf16, toy_device()).forward(test::workload_of(1, 64, run_mode::train)))
    EXPECT_NE(k.op, kernel_op(step_op::optimizer));
}

TEST(DesStep, GraphModeShortensAHostBoundDecodeStep) {
  step_builder b(small_mod(0.25, 4), dtype::fp32, toy_device());
  rng r(3);
  const step_load load = decode_load(b, 8, 64, decode_routing::pad, 1.0, r);
  exec_options graph;
  graph.cuda_graph = true;
  const timeline eager = simulate_execution(b.step(load, decode_routing::pad), b.device(), {});
  const timeline g = simulate_execution(b.step(load, decode_routing::pad), b.device(), graph);
  // Host 2 us per kernel against ~1 us kernels: eager, the GPU waits on the host much of the step.
  EXPECT_GT(eager.summary.gpu_wait_host_s, 0.3 * eager.summary.step_s);
  EXPECT_LT(g.summary.gpu_wait_host_s, eager.summary.gpu_wait_host_s);
  EXPECT_LT(g.summary.step_s, eager.summary.step_s);
  EXPECT_EQ(g.summary.launches, 1);
}

}  // namespace
}  // namespace modsim::sim::des

namespace modsim::sim::des {
namespace {

// The order of a layer's ops is stated once (sim::layer_ops); the FLOP model and both of the
// simulator's step kinds follow it.
TEST(LayerOps, OneOrderForTheFlopModelAndTheSimulator) {
  using enum modsim::op;
  // Written out from the block's definition (seed 002): routing around attention then MLP.
  const std::vector<modsim::op> routed = {router,      topk,         gather,      attn_norm, qkv_proj,
                                          attn_scores, attn_softmax, attn_values, out_proj,  mlp_norm,
                                          mlp_up,      mlp_act,      mlp_down,    scatter};
  EXPECT_EQ(layer_ops({true, false}, mlp_kind::gelu), routed);
  EXPECT_EQ(layer_ops({false, true}, mlp_kind::swiglu),
            (std::vector<modsim::op>{attn_norm, qkv_proj, attn_scores, attn_softmax, attn_values, out_proj, mlp_norm,
                                     expert_router, experts}));
  // The FLOP model's layer and the simulator's forward pass and serving step list the same ops.
  const model_spec m = small_mod(0.25, 2);
  const step_builder b(m, dtype::fp32, toy_device());
  workload w;
  w.batch = 1;
  w.seq_len = 64;
  w.type = dtype::fp32;
  std::vector<modsim::op> forward, serving;
  for (const kernel& k : b.forward(w))
    if (k.layer == 1) forward.push_back(*k.op.model_op());
  step_load load;
  load.layers.resize(2);
  for (layer_load& l : load.layers) l.prefill = {{64, 16, 16}};
  load.layers[0].prefill = {{64, 64, 64}};
  for (const kernel& k : b.step(load, decode_routing::pad))
    if (k.layer == 1) serving.push_back(*k.op.model_op());
  const std::vector<modsim::op> expected = layer_ops({true, false}, m.mlp);
  EXPECT_EQ(forward, expected);
  EXPECT_EQ(serving, expected);
  std::vector<modsim::op> costs;
  op_shape s = shape_of(m, w);
  for (const op_cost& c : layer_costs(s, {true, false})) costs.push_back(c.op);
  EXPECT_EQ(costs, expected);
}

}  // namespace
}  // namespace modsim::sim::des
