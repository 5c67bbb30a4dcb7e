// MoD across GPUs (sim/parallel/parallel.hpp): traffic, bubbles and stage splits worked out by hand.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "sim/model/flops.hpp"
#include "sim/parallel/parallel.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/parallel/parallel_predict.hpp"
#include "sim/cost/predict.hpp"

using namespace modsim::sim;

namespace {

// The paper's 220M shape: d 1024, 4 layers, 16 heads, d_ff 4096; every other layer routed at
// c = 0.125 (k = 256 of S = 2048).
model_spec mod_model() {
  model_spec m;
  m.name = "mod";
  m.d_model = 1024;
  m.n_layers = 4;
  m.n_heads = 16;
  m.n_kv_heads = 16;
  m.d_head = 64;
  m.d_ff = 4096;
  m.vocab_size = 32000;
  routing_spec r;
  r.capacity = 0.125;
  r.sched.kind = schedule_kind::every_other;
  m.routing = r;
  return m;
}

workload prefill() {
  workload w;
  w.batch = 1;
  w.seq_len = 2048;
  w.type = dtype::bf16;
  return w;
}

}  // namespace

TEST(Parallel, TensorParallelAllReducesCarryOnlyTheRoutedTokens) {
  const std::vector<layer_traffic> t = layer_traffic_of(mod_model(), prefill());
  ASSERT_EQ(t.size(), 4u);
  // Dense layer 0: 2048 tokens · 1024 · 2 bytes = 4,194,304; routed layer 1: 256 tokens, 524,288.
  EXPECT_FALSE(t[0].routed);
  EXPECT_DOUBLE_EQ(t[0].tp_allreduce_bytes, 4194304);
  EXPECT_TRUE(t[1].routed);
  EXPECT_DOUBLE_EQ(t[1].tp_allreduce_bytes, 524288);
  EXPECT_EQ(t[1].tp_allreduces, 2);
  EXPECT_DOUBLE_EQ(t[1].ep_all_to_all_bytes, 0);  // no MoE
  workload train = prefill();
  train.run = run_mode::train;
  EXPECT_EQ(layer_traffic_of(mod_model(), train)[1].tp_allreduces, 4);  // + the backward pass
  // Full recomputation runs each layer's forward again in its backward, its two all-reduces
  // (after attention, after the MLP) with it; selective recomputes attention inside a shard.
  train.recompute = recompute_mode::full;
  EXPECT_EQ(layer_traffic_of(mod_model(), train)[1].tp_allreduces, 6);
  train.recompute = recompute_mode::selective;
  EXPECT_EQ(layer_traffic_of(mod_model(), train)[1].tp_allreduces, 4);
}

// predict's closed form and the simulator price one training step with full recomputation
// alike: the recomputed forward's all-reduces are in both (before, the closed form left them
// out: mod-1b on h100-sxm-calibrated, TP 2, batch 16 x 2,048, 151.8 vs 160.9 ms). TP 2 on the
// committed hardware: the step's TP time is 3/2 that of recompute none (6 all-reduces a layer
// where there were 4, each of the same bytes).
TEST(Parallel, FullRecomputationRunsTheForwardsAllReducesAgain) {
  const cost_model cost(load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json"));
  workload w = prefill();
  w.run = run_mode::train;
  parallel_spec split;
  split.tp = 2;
  const parallel_prediction none = predict_parallel(mod_model(), w, cost, split);
  w.recompute = recompute_mode::full;
  const parallel_prediction full = predict_parallel(mod_model(), w, cost, split);
  ASSERT_GT(none.tp_comm_s, 0);
  EXPECT_NEAR(full.tp_comm_s, 1.5 * none.tp_comm_s, 1e-12);
  EXPECT_DOUBLE_EQ(full.tp_bytes_per_step, 1.5 * none.tp_bytes_per_step);
}

TEST(Parallel, ExpertParallelAllToAllsMoveOnlyTokensThatReachRealExperts) {
  model_spec staged = mod_model();
  staged.moe = moe_spec{moe_variant::staged, 8, 1, 0.0, 0};
  const std::vector<layer_traffic> s = layer_traffic_of(staged, prefill());
  // Staged: the routed layer's experts see k = 256 tokens: 256 · 1024 · 2 = 524,288 bytes; a
  // dense layer all 2048: 4,194,304.
  EXPECT_DOUBLE_EQ(s[1].ep_all_to_all_bytes, 524288);
  EXPECT_DOUBLE_EQ(s[0].ep_all_to_all_bytes, 4194304);
  EXPECT_EQ(s[1].ep_all_to_alls, 2);

  model_spec integrated = mod_model();
  integrated.moe = moe_spec{moe_variant::integrated, 8, 1, 0.0, 24};
  const std::vector<layer_traffic> i = layer_traffic_of(integrated, prefill());
  // Integrated: attention sees all 2048 tokens (the TP all-reduce is not smaller), and 8 of
  // 8 + 24 experts are real: 2048 · 8/32 = 512 slots · 1024 · 2 = 1,048,576 bytes.
  EXPECT_DOUBLE_EQ(i[1].tp_allreduce_bytes, 4194304);
  EXPECT_DOUBLE_EQ(i[1].ep_all_to_all_bytes, 1048576);
  EXPECT_DOUBLE_EQ(i[0].ep_all_to_all_bytes, 4194304);
}

TEST(Parallel, DataParallelGradientsDoNotShrinkWithRouting) {
  workload train = prefill();
  train.run = run_mode::train;
  parallel_spec p;
  p.tp = 2;
  p.pp = 2;
  const double P = double(parameter_count(mod_model()));
  EXPECT_DOUBLE_EQ(dp_gradient_bytes(mod_model(), train, p), P / 4 * 2);
  model_spec dense = mod_model();
  dense.routing.reset();
  // The dense model has the same weights but the predictor's: MoD saves no gradient bytes
  // beyond that.
  EXPECT_GE(dp_gradient_bytes(mod_model(), train, p), dp_gradient_bytes(dense, train, p));
  EXPECT_DOUBLE_EQ(dp_gradient_bytes(mod_model(), prefill(), p), 0);  // inference: none
}

TEST(Parallel, OneFOneBBubble) {
  EXPECT_DOUBLE_EQ(bubble_fraction(4, 12), 3.0 / 15.0);
  EXPECT_DOUBLE_EQ(bubble_fraction(2, 1), 0.5);
  EXPECT_DOUBLE_EQ(bubble_fraction(1, 8), 0.0);
}

TEST(Parallel, StagesOfAnEveryOtherModelBalancedByTime) {
  // Dense layers 3 ms, routed 1 ms, alternating; the LM head 4 ms on the last stage.
  const std::vector<double> t = {3, 1, 3, 1, 3, 1, 3, 1};
  // By layer count: layers 0-3 (8 ms) and 4-7 + head (12 ms).
  const stage_split naive = naive_split(t, 4, 2);
  EXPECT_EQ(naive.first_layer, (std::vector<int>{0, 4}));
  EXPECT_EQ(naive.stage_s, (std::vector<double>{8, 12}));
  EXPECT_DOUBLE_EQ(naive.imbalance(), 12.0 / 10.0);
  // By time: layers 0-4 (11 ms) and 5-7 + head (9 ms): the slowest stage 11 ms, not 12.
  const stage_split balanced = balanced_split(t, 4, 2);
  EXPECT_EQ(balanced.first_layer, (std::vector<int>{0, 5}));
  EXPECT_EQ(balanced.stage_s, (std::vector<double>{11, 9}));
  // Four stages. By count: 4 | 4 | 4 | 3+1+4 = 8. By time the last stage is layer 7 and the
  // head alone (5: layer 6 would make it 8); layers 0-6 (3,1,3,1,3,1,3) in three stages of at
  // most 6 would need [3,1] [3,1] [3,1,3] = 7, so 6 cannot be met and 7 can:
  // [3,1,3] [1,3] [1,3] [1+4].
  EXPECT_DOUBLE_EQ(balanced_split(t, 4, 4).max_s(), 7);
  EXPECT_DOUBLE_EQ(naive_split(t, 4, 4).max_s(), 8);
}

TEST(Parallel, TensorShardDividesHeadsAndTheMlp) {
  const model_spec s = tp_shard(mod_model(), 4);
  EXPECT_EQ(s.n_heads, 4);
  EXPECT_EQ(s.n_kv_heads, 4);
  EXPECT_EQ(s.d_ff, 1024);
  EXPECT_EQ(s.vocab_size, 8000);
  EXPECT_EQ(s.d_model, 1024);
  EXPECT_EQ(s.d_head, 64);
  parallel_spec p;
  p.tp = 3;
  EXPECT_THROW(validate_parallel(mod_model(), prefill(), p), modsim::error);
  p.tp = 1;
  p.ep = 2;  // no MoE
  EXPECT_THROW(validate_parallel(mod_model(), prefill(), p), modsim::error);
}

// --- one step over several GPUs (sim/parallel/parallel_predict.hpp) ---------------------------------------

namespace {
cost_model h100() {
  return cost_model(load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json"));
}
}  // namespace

TEST(ParallelPredict, OneGpuIsTheSingleDevicePrediction) {
  const parallel_prediction p = predict_parallel(mod_model(), prefill(), h100(), parallel_spec{});
  EXPECT_DOUBLE_EQ(p.step_s, time_model(mod_model(), prefill(), h100()).total_s);
  EXPECT_DOUBLE_EQ(p.tp_comm_s + p.ep_comm_s + p.bubble_s + p.dp_exposed_s + p.pp_send_s, 0);
}

TEST(ParallelPredict, TensorParallelMovesTwoAllReducesPerLayerOfTheTokensItComputes) {
  parallel_spec s;
  s.tp = 4;
  const parallel_prediction p = predict_parallel(mod_model(), prefill(), h100(), s);
  // Two dense layers of 4,194,304 bytes and two routed of 524,288, two all-reduces each:
  // 2 · 2 · (4,194,304 + 524,288) = 18,874,368 bytes per step.
  EXPECT_DOUBLE_EQ(p.tp_bytes_per_step, 18874368);
  EXPECT_GT(p.tp_comm_s, 0);
  // Four ranks each compute a quarter of the heads and of the MLP: less compute per GPU.
  EXPECT_LT(p.compute_s, time_model(mod_model(), prefill(), h100()).total_s);
}

TEST(ParallelPredict, APipelineIdlesForItsBubble) {
  workload w = prefill();
  w.batch = 8;
  parallel_spec s;
  s.pp = 2;
  s.micro_batches = 4;
  const parallel_prediction p = predict_parallel(mod_model(), w, h100(), s);
  // (m + p − 1) micro-batch slots of the slowest stage, p − 1 of them idle.
  EXPECT_NEAR(p.bubble_s / (p.step_s - p.dp_exposed_s), bubble_fraction(2, 4), 1e-12);
  EXPECT_EQ(p.stages.first_layer.size(), 2u);
  // A batch of 8 does not split into 3 micro-batches.
  s.micro_batches = 3;
  EXPECT_THROW(predict_parallel(mod_model(), w, h100(), s), modsim::error);
}

TEST(ParallelPredict, DataParallelGradientsHideBehindTheBackwardPassAsPriced) {
  workload w = prefill();
  w.run = run_mode::train;
  w.batch = 8;
  parallel_spec s;
  s.dp = 8;
  workload replica = w;  // each of the 8 replicas trains on one sequence
  replica.batch = 1;
  const model_time one = time_model(mod_model(), replica, h100());
  const parallel_prediction p = predict_parallel(mod_model(), w, h100(), s);
  ASSERT_GT(p.dp_allreduce_s, 0);
  // One GPU's step: the forward and backward passes, then the gradients' exposed part, then the
  // optimizer step (every weight's AdamW update, 28 bytes each in bf16 at the datasheet's
  // 3.35 TB/s), which nothing overlaps.
  // Two dense layers (4d² + 2d + 2dF) and two routed ones, which add the router (d) and the
  // causal predictor (a hidden layer of d: d² + d), the embedding, LM head and final norm.
  const double layer = 4.0 * 1024 * 1024 + 2 * 1024 + 2.0 * 1024 * 4096;
  const double params = 2 * layer + 2 * (layer + 1024 + 1024.0 * 1024 + 1024) + 2.0 * 32000 * 1024 + 1024;
  EXPECT_NEAR(p.optimizer_s, 28 * params / 3.35e12, 1e-9 * p.optimizer_s);
  const double window = p.step_s - p.dp_exposed_s - p.optimizer_s;  // one stage, one replica: the passes
  // The backward and recomputation are the window the buckets hide behind: the share of the
  // passes' time the per-op pricing gives them (about 2/3 at a forward-to-backward ratio of 1:2).
  const double share = (one.backward_s + one.recompute_s) / (one.ops_s - one.optimizer.time_s);
  ASSERT_GT(share, 0.5);
  ASSERT_LT(share, 0.8);
  // The last bucket holds the embedding (32,000 · 1,024 weights, 2 bytes each): its gradient is
  // complete only at the end of the backward pass.
  const double bucket = p.dp_allreduce_s * (32000.0 * 1024 * 2) / p.dp_bytes_per_step;
  EXPECT_NEAR(p.dp_exposed_s, std::max(bucket, p.dp_allreduce_s - window * share), 1e-12 * p.step_s);
}

TEST(ParallelPredict, MicroBatchesAccumulateGradientsThatOnlyTheLastBackwardPassHides) {
  // PP 2 × DP 2, 4 micro-batches of one sequence, links of 45 GB/s (no fit to nccl-tests): the
  // gradients reduce as the last micro-batch's backward fills the buckets, so they hide behind
  // one slot's backward share, not the whole pipeline's.
  hardware_spec hw = load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json");
  hw.interconnect->intra_node.bytes_s = 45e9;
  hw.interconnect->calibration.clear();
  const cost_model slow(hw);
  workload w = prefill();
  w.run = run_mode::train;
  w.batch = 8;
  parallel_spec s;
  s.pp = 2;
  s.dp = 2;
  s.micro_batches = 4;
  const parallel_prediction p = predict_parallel(mod_model(), w, slow, s);
  workload mb = w;
  mb.batch = 1;
  const model_time one = time_model(mod_model(), mb, slow);
  const double share = (one.backward_s + one.recompute_s) / (one.ops_s - one.optimizer.time_s);
  const double slot = (p.step_s - p.dp_exposed_s - p.optimizer_s) / (4 + 2 - 1);        // (m + p − 1) slots
  const double bucket = p.dp_allreduce_s * (32000.0 * 1024 * 2) / p.dp_bytes_per_step;  // the embedding's
  ASSERT_GT(p.dp_allreduce_s - slot * share, bucket);       // this split exposes more than the last bucket
  ASSERT_LT(p.dp_allreduce_s, (4 + 2 - 1) * slot * share);  // which the whole pipeline's backward would hide
  EXPECT_NEAR(p.dp_exposed_s, p.dp_allreduce_s - slot * share, 1e-9 * p.step_s);
}

TEST(ParallelPredict, ATrainingStepOnOneGpuIsTheOneGpuPredictionOptimizerIncluded) {
  workload w = prefill();
  w.run = run_mode::train;
  w.batch = 2;
  const model_time one = time_model(mod_model(), w, h100());
  const parallel_prediction p = predict_parallel(mod_model(), w, h100(), parallel_spec{});
  ASSERT_GT(one.optimizer.time_s, 0);
  EXPECT_NEAR(p.optimizer_s, one.optimizer.time_s, 1e-12 * one.total_s);
  EXPECT_NEAR(p.step_s, one.total_s, 1e-12 * one.total_s);
  EXPECT_NEAR(p.compute_s, one.total_s, 1e-12 * one.total_s);
}
