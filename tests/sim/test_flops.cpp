// Tests of the FLOP/byte model (sim/model/flops.cpp). Every expected value is computed by hand
// in the comment beside it, from the convention in sim/model/flops.hpp and the paper; none is
// taken from the code's output.
#include "sim/model/flops.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

#include "small_model.hpp"

namespace modsim::sim {
namespace {

// d=64, 2 layers, H=4 (dh=16, dq=dkv=64), F=256, V=100, gelu.
using test::small_dense;

routing_spec routing_of(schedule_kind kind, double capacity, int n = 0, std::vector<int> layers = {}) {
  routing_spec r;
  r.capacity = capacity;
  r.sched.kind = kind;
  r.sched.n = n;
  r.sched.layers = std::move(layers);
  r.inference = inference_routing::router;
  return r;
}

workload load(std::int64_t batch, std::int64_t seq, run_mode mode = run_mode::forward, dtype t = dtype::fp32) {
  workload w;
  w.batch = batch;
  w.seq_len = seq;
  w.run = mode;
  w.type = t;
  return w;
}

// An op_shape of small_dense() at B=1, n=S=2048, e=2 (bf16), unless changed.
op_shape paper_shape(std::int64_t tokens) {
  op_shape s;
  s.batch = 1;
  s.tokens = tokens;
  s.seq_len = 2048;
  s.d_model = 1024;
  s.n_heads = 16;
  s.d_ff = 4096;
  s.vocab_size = 32000;
  s.elem_bytes = 2;
  return s;
}

const op_cost& op_named(const layer_flops& layer, modsim::op o) {
  const auto it = std::find_if(layer.ops.begin(), layer.ops.end(), [&](const op_cost& c) { return c.op == o; });
  if (it == layer.ops.end())
    throw std::runtime_error("no op " + std::string(to_string(o)) + " in layer " + std::to_string(layer.index));
  return *it;
}
const op_cost& op_named(const layer_flops& layer, const std::string& name) { return op_named(layer, parse_op(name)); }

std::vector<std::string> names_of(const layer_flops& layer) {
  std::vector<std::string> names;
  for (const op_cost& c : layer.ops) names.push_back(std::string(to_string(c.op)));
  return names;
}

std::ptrdiff_t count_op(const layer_flops& layer, const std::string& name) {
  return std::count_if(layer.ops.begin(), layer.ops.end(), [&](const op_cost& c) { return to_string(c.op) == name; });
}

std::vector<int> routed_indices(const flops_report& r) {
  std::vector<int> out;
  for (const layer_flops& l : r.layers) {
    if (l.routed) out.push_back(l.index);
  }
  return out;
}

// ---- the paper's facts ----------------------------------------------------------------

TEST(Flops, CapacityOneEighthOf2048IsRoutedTokens256) {
  // 0.125 · 2048 = 256 exactly (the paper's 12.5% capacity).
  EXPECT_EQ(routed_tokens(0.125, 2048), 256);
}

TEST(Flops, RoutedTokensForgiveDecimalRounding) {
  // 0.1 · 30 = 3.0000000000000004 in binary; the user meant 3 tokens.
  EXPECT_EQ(routed_tokens(0.1, 30), 3);
}

TEST(Flops, RoutedAttentionScalesWithCapacitySquared) {
  // Dense, n = 2048: scores + values = 2 · (2 · 2048² · 1024) = 17,179,869,184.
  // Capacity 0.5, n = k = 1024: 2 · (2 · 1024² · 1024) = 4,294,967,296 = 25% of dense.
  const op_shape dense = paper_shape(2048);
  const op_shape routed = paper_shape(routed_tokens(0.5, 2048));
  const std::int64_t dense_attn = ops::attn_scores(dense).matmul_flops + ops::attn_values(dense).matmul_flops;
  const std::int64_t routed_attn = ops::attn_scores(routed).matmul_flops + ops::attn_values(routed).matmul_flops;
  EXPECT_EQ(dense_attn, 17179869184);
  EXPECT_EQ(routed_attn, 4294967296);
  EXPECT_EQ(routed_attn * 4, dense_attn);
}

TEST(Flops, RoutedMlpAtCapacityOneEighthIsOneEighthOfDense) {
  // Dense: up + down = 2 · (2 · 2048 · 1024 · 4096) = 34,359,738,368.
  // k = 256: 2 · (2 · 256 · 1024 · 4096) = 4,294,967,296 = 12.5%.
  const op_shape dense = paper_shape(2048);
  const op_shape routed = paper_shape(routed_tokens(0.125, 2048));
  const std::int64_t dense_mlp = ops::mlp_up(dense).matmul_flops + ops::mlp_down(dense).matmul_flops;
  const std::int64_t routed_mlp = ops::mlp_up(routed).matmul_flops + ops::mlp_down(routed).matmul_flops;
  EXPECT_EQ(dense_mlp, 34359738368);
  EXPECT_EQ(routed_mlp, 4294967296);
  EXPECT_EQ(routed_mlp * 8, dense_mlp);
}

TEST(Flops, CapacityOneRoutedLayerCostsTheDenseLayerPlusRouting) {
  // Every layer routed at capacity 1 (k = S = 16), B = 2, fp32. The extra ops:
  //   router  matmul 2·32·64 = 4096, bytes 4·(32·64 + 64 + 32) = 8576
  //   topk    other 32, bytes 4·32 + 4·32 = 256
  //   gather  bytes 4·32 + 2·4·32·65 = 128 + 16640 = 16768
  //   scatter other 3·32·64 = 6144, bytes 4·32 + 4·(3·32·64 + 32) = 128 + 24704 = 24832
  model_spec routed = small_dense();
  routed.routing = routing_of(schedule_kind::all, 1.0);
  const flops_report dense_r = evaluate_flops(small_dense(), load(2, 16));
  const flops_report routed_r = evaluate_flops(routed, load(2, 16));
  const layer_flops& d = dense_r.layers[0];
  const layer_flops& r = routed_r.layers[0];
  EXPECT_TRUE(r.routed);
  EXPECT_EQ(r.matmul_flops, d.matmul_flops + 4096);
  EXPECT_EQ(r.other_flops, d.other_flops + 32 + 6144);
  EXPECT_EQ(r.bytes, d.bytes + 8576 + 256 + 16768 + 24832);
  for (const op_cost& c : d.ops) {
    EXPECT_EQ(op_named(r, c.op).matmul_flops, c.matmul_flops) << modsim::to_string(c.op);
    EXPECT_EQ(op_named(r, c.op).bytes, c.bytes) << modsim::to_string(c.op);
  }
  EXPECT_EQ(routed_r.totals.dense_matmul_flops, dense_r.totals.matmul_flops);
}

// ---- hand-computed totals ---------------------------------------------------------------

// (a) small_dense at B = 2, S = 16, fp32 (e = 4): T = 32, dq = dkv = 64, P = dq + 2dkv = 192.
//  op          matmul                    other             bytes
//  attn_norm   0                         4·32·64 = 8192     4·(2·32·64 + 64) = 16640
//  qkv_proj    2·32·64·192 = 786432      0                  4·(2048 + 12288 + 6144) = 81920
//  attn_scores 2·2·16²·64 = 65536        0                  4·(2048 + 2048 + 2·4·256) = 24576
//  attn_softmax 0                        5·2·4·256 = 10240  2·4·2048 = 16384
//  attn_values 65536                     0                  24576
//  out_proj    2·32·64·64 = 262144       32·64 = 2048       4·(2048 + 4096 + 4096) = 40960
//  mlp_norm    0                         8192               16640
//  mlp_up      2·32·64·256 = 1048576     0                  4·(2048 + 16384 + 8192) = 106496
//  mlp_act     0                         8·32·256 = 65536   2·4·8192 = 65536
//  mlp_down    1048576                   2048               4·(8192 + 16384 + 4096) = 114688
//  layer       3276800                   96256              508416
//  lm_head     2·32·64·100 = 409600      4·32·64 = 8192     4·(2048 + 6400 + 3200) = 46592
//  total (2 layers + head): matmul 6963200, other 200704, bytes 1063424.
TEST(Flops, SmallDenseGeluModelMatchesHandTotals) {
  const flops_report r = evaluate_flops(small_dense(), load(2, 16));
  ASSERT_EQ(r.layers.size(), 2u);
  const layer_flops& l = r.layers[0];
  EXPECT_EQ(names_of(l),
            (std::vector<std::string>{"attn_norm", "qkv_proj", "attn_scores", "attn_softmax", "attn_values", "out_proj",
                                      "mlp_norm", "mlp_up", "mlp_act", "mlp_down"}));
  EXPECT_FALSE(l.routed);
  EXPECT_EQ(l.tokens, 32);
  EXPECT_EQ(op_named(l, "qkv_proj").matmul_flops, 786432);
  EXPECT_EQ(op_named(l, "qkv_proj").bytes, 81920);
  EXPECT_EQ(op_named(l, "attn_scores").bytes, 24576);
  EXPECT_EQ(op_named(l, "attn_softmax").other_flops, 10240);
  EXPECT_EQ(op_named(l, "out_proj").bytes, 40960);
  EXPECT_EQ(op_named(l, "mlp_act").other_flops, 65536);
  EXPECT_EQ(op_named(l, "mlp_down").bytes, 114688);
  EXPECT_EQ(l.matmul_flops, 3276800);
  EXPECT_EQ(l.other_flops, 96256);
  EXPECT_EQ(l.bytes, 508416);
  EXPECT_EQ(r.lm_head.matmul_flops, 409600);
  EXPECT_EQ(r.lm_head.other_flops, 8192);
  EXPECT_EQ(r.lm_head.bytes, 46592);
  EXPECT_EQ(r.totals.matmul_flops, 6963200);
  EXPECT_EQ(r.totals.other_flops, 200704);
  EXPECT_EQ(r.totals.bytes, 1063424);
  EXPECT_EQ(r.totals.dense_matmul_flops, 6963200);
  EXPECT_EQ(r.totals.dense_bytes, 1063424);
  // Per layer 64·192 + 64·64 + 2·64 + 2·64·256 = 12288 + 4096 + 128 + 32768 = 49280;
  // 2 layers + embedding 6400 + lm head 6400 + final norm 64 = 111424.
  EXPECT_EQ(r.params, 111424);
}

// (b) (a) with MoD every_other at capacity 0.125: layer 1 routed, k = ceil(0.125·16) = 2,
// T = B·k = 4; layer 0 as in (a).
//  router   2·32·64 = 4096 | 0 | 4·(2048 + 64 + 32) = 8576
//  topk     0 | 32 | 4·32 + 4·4 = 144
//  gather   0 | 0 | 4·4 + 2·4·4·65 = 2096
//  attn_norm 0 | 4·4·64 = 1024 | 4·(512 + 64) = 2304
//  qkv_proj 2·4·64·192 = 98304 | 0 | 4·(256 + 12288 + 768) = 53248
//  scores   2·2·2²·64 = 1024 | 0 | 4·(256 + 256 + 2·4·4) = 2176
//  softmax  0 | 5·2·4·4 = 160 | 8·32 = 256
//  values   1024 | 0 | 2176
//  out_proj 2·4·64·64 = 32768 | 256 | 4·(256 + 4096 + 512) = 19456
//  mlp_norm 0 | 1024 | 2304
//  mlp_up   2·4·64·256 = 131072 | 0 | 4·(256 + 16384 + 1024) = 70656
//  mlp_act  0 | 8·4·256 = 8192 | 8·1024 = 8192
//  mlp_down 131072 | 256 | 4·(1024 + 16384 + 512) = 71680
//  scatter  0 | 3·4·64 = 768 | 4·4 + 4·(768 + 4) = 3104
//  layer 1: matmul 399360, other 11712, bytes 246368.
//  total: matmul 3276800 + 399360 + 409600 = 4085760; other 96256 + 11712 + 8192 = 116160;
//  bytes 508416 + 246368 + 46592 = 801376; dense baseline = (a) = 6963200.
TEST(Flops, EveryOtherModAtOneEighthMatchesHandTotals) {
  model_spec m = small_dense();
  m.routing = routing_of(schedule_kind::every_other, 0.125);
  const flops_report r = evaluate_flops(m, load(2, 16));
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_FALSE(r.layers[0].routed);
  const layer_flops& l = r.layers[1];
  EXPECT_TRUE(l.routed);
  EXPECT_DOUBLE_EQ(l.capacity, 0.125);
  EXPECT_EQ(l.tokens, 4);
  EXPECT_EQ(names_of(l), (std::vector<std::string>{"router", "topk", "gather", "attn_norm", "qkv_proj", "attn_scores",
                                                   "attn_softmax", "attn_values", "out_proj", "mlp_norm", "mlp_up",
                                                   "mlp_act", "mlp_down", "scatter"}));
  EXPECT_EQ(op_named(l, "router").bytes, 8576);
  EXPECT_EQ(op_named(l, "topk").bytes, 144);
  EXPECT_EQ(op_named(l, "gather").bytes, 2096);
  EXPECT_EQ(op_named(l, "attn_scores").matmul_flops, 1024);
  EXPECT_EQ(op_named(l, "attn_scores").bytes, 2176);
  EXPECT_EQ(op_named(l, "scatter").bytes, 3104);
  EXPECT_EQ(l.matmul_flops, 399360);
  EXPECT_EQ(l.other_flops, 11712);
  EXPECT_EQ(l.bytes, 246368);
  EXPECT_EQ(r.totals.matmul_flops, 4085760);
  EXPECT_EQ(r.totals.other_flops, 116160);
  EXPECT_EQ(r.totals.bytes, 801376);
  EXPECT_EQ(r.totals.dense_matmul_flops, 6963200);
  EXPECT_EQ(r.totals.dense_other_flops, 200704);
  // (a)'s 111424 + the router's 64 weights (inference = router: no predictor).
  EXPECT_EQ(r.params, 111488);
}

// (b) again with its dense baseline's report given: the dense totals are that report's (by hand,
// (a)'s 6963200 / 200704 / 1063424), and a report whose totals were altered shows it is read, not
// evaluated again.
TEST(Flops, DenseTotalsComeFromAGivenBaselineReport) {
  model_spec m = small_dense();
  m.routing = routing_of(schedule_kind::every_other, 0.125);
  const flops_report dense = evaluate_flops(small_dense(), load(2, 16));
  const flops_report r = evaluate_flops(m, load(2, 16), dense);
  EXPECT_EQ(r.totals.matmul_flops, 4085760);
  EXPECT_EQ(r.totals.dense_matmul_flops, 6963200);
  EXPECT_EQ(r.totals.dense_other_flops, 200704);
  EXPECT_EQ(r.totals.dense_bytes, 1063424);
  flops_report altered = dense;
  altered.totals.matmul_flops = 7;
  altered.totals.other_flops = 8;
  altered.totals.bytes = 9;
  const flops_report a = evaluate_flops(m, load(2, 16), altered);
  EXPECT_EQ(a.totals.dense_matmul_flops, 7);
  EXPECT_EQ(a.totals.dense_other_flops, 8);
  EXPECT_EQ(a.totals.dense_bytes, 9);
  EXPECT_EQ(a.totals.matmul_flops, 4085760);
}

// (c) GQA + SwiGLU: d=64, H=4, n_kv=2 (dh=16, dq=64, dkv=32), F=128, V=100, 1 layer,
// B=1, S=8, bf16 (e=2): T = 8, P = 64 + 64 = 128.
//  attn_norm 0 | 4·8·64 = 2048 | 2·(1024 + 64) = 2176
//  qkv_proj 2·8·64·128 = 131072 | 0 | 2·(512 + 8192 + 1024) = 19456
//  scores   2·8²·64 = 8192 | 0 | 2·(512 + 256 + 4·64) = 2048
//  softmax  0 | 5·4·64 = 1280 | 2·2·256 = 1024
//  values   8192 | 0 | 2·(256 + 256 + 512) = 2048
//  out_proj 2·8·64·64 = 65536 | 512 | 2·(512 + 4096 + 1024) = 11264
//  mlp_norm 0 | 2048 | 2176
//  mlp_up   2·8·64·128 = 131072 | 0 | 2·(512 + 8192 + 1024) = 19456
//  mlp_gate 131072 | 0 | 19456
//  mlp_act  0 | 5·8·128 = 5120 | 3·2·1024 = 6144
//  mlp_down 131072 | 512 | 2·(1024 + 8192 + 1024) = 20480
//  layer: matmul 606208, other 11520, bytes 105728.
//  lm_head 2·8·64·100 = 102400 | 4·8·64 = 2048 | 2·(512 + 6400 + 800) = 15424.
//  total: matmul 708608, other 13568, bytes 121152.
TEST(Flops, GroupedQueryAttentionWithSwigluMatchesHandTotals) {
  model_spec m = small_dense();
  m.n_layers = 1;
  m.n_kv_heads = 2;
  m.d_ff = 128;
  m.mlp = mlp_kind::swiglu;
  const flops_report r = evaluate_flops(m, load(1, 8, run_mode::forward, dtype::bf16));
  const layer_flops& l = r.layers.at(0);
  EXPECT_EQ(names_of(l),
            (std::vector<std::string>{"attn_norm", "qkv_proj", "attn_scores", "attn_softmax", "attn_values", "out_proj",
                                      "mlp_norm", "mlp_up", "mlp_gate", "mlp_act", "mlp_down"}));
  EXPECT_EQ(op_named(l, "qkv_proj").matmul_flops, 131072);
  EXPECT_EQ(op_named(l, "qkv_proj").bytes, 19456);
  EXPECT_EQ(op_named(l, "attn_scores").bytes, 2048);
  EXPECT_EQ(op_named(l, "attn_values").bytes, 2048);
  EXPECT_EQ(op_named(l, "mlp_gate").bytes, 19456);
  EXPECT_EQ(op_named(l, "mlp_act").other_flops, 5120);
  EXPECT_EQ(op_named(l, "mlp_act").bytes, 6144);
  EXPECT_EQ(l.matmul_flops, 606208);
  EXPECT_EQ(l.other_flops, 11520);
  EXPECT_EQ(l.bytes, 105728);
  EXPECT_EQ(r.lm_head.bytes, 15424);
  EXPECT_EQ(r.totals.matmul_flops, 708608);
  EXPECT_EQ(r.totals.other_flops, 13568);
  EXPECT_EQ(r.totals.bytes, 121152);
  // 64·128 + 64·64 + 2·64 + 3·64·128 = 8192 + 4096 + 128 + 24576 = 36992; + 6400·2 + 64.
  EXPECT_EQ(r.params, 49856);
}

TEST(Flops, TrainingCostsThreeTimesTheForwardPassInMatmuls) {
  // (b) × 3: matmul 3·4085760 = 12257280, router 3·4096 = 12288, dense 3·6963200 = 20889600;
  // the forward part is (b): other 116160, bytes 801376 (the backward's other FLOPs and bytes
  // are its own: tests/sim/test_flops_train.cpp).
  model_spec m = small_dense();
  m.routing = routing_of(schedule_kind::every_other, 0.125);
  const flops_report r = evaluate_flops(m, load(2, 16, run_mode::train));
  EXPECT_EQ(r.totals.matmul_flops, 12257280);
  ASSERT_TRUE(r.train);
  EXPECT_EQ(r.train->forward.other_flops, 116160);
  EXPECT_EQ(r.train->forward.bytes, 801376);
  EXPECT_EQ(op_named(r.layers[1], "router").matmul_flops, 12288);
  EXPECT_EQ(r.totals.dense_matmul_flops, 20889600);
  EXPECT_EQ(r.lm_head.matmul_flops, 3 * 409600);
}

// ---- schedules ---------------------------------------------------------------------------

TEST(Flops, PerLayerCapacityListOverridesTheSchedule) {
  // Capacities {0.5, none, 0.25} at S = 16, B = 2: k = 8, 16 (not routed), 4; tokens B·k =
  // 16, 32, 8; scores 2·B·k²·dq = 2·2·64·64 = 16384, 2·2·256·64 = 65536, 2·2·16·64 = 4096.
  model_spec m = small_dense();
  m.n_layers = 3;
  m.routing = routing_of(schedule_kind::every_other, 0.125);
  m.routing->layer_capacities = {0.5, std::nullopt, 0.25};
  const flops_report r = evaluate_flops(m, load(2, 16));
  EXPECT_EQ(routed_indices(r), (std::vector<int>{0, 2}));
  EXPECT_EQ(r.layers[0].tokens, 16);
  EXPECT_EQ(r.layers[1].tokens, 32);
  EXPECT_EQ(r.layers[2].tokens, 8);
  EXPECT_DOUBLE_EQ(r.layers[2].capacity, 0.25);
  EXPECT_EQ(op_named(r.layers[0], "attn_scores").matmul_flops, 16384);
  EXPECT_EQ(op_named(r.layers[1], "attn_scores").matmul_flops, 65536);
  EXPECT_EQ(op_named(r.layers[2], "attn_scores").matmul_flops, 4096);
}

TEST(Flops, EveryThirdLayerScheduleRoutesLayersTwoAndFive) {
  // every_nth:3 routes index % 3 == 2: of 6 layers, 2 and 5.
  model_spec m = small_dense();
  m.n_layers = 6;
  m.routing = routing_of(schedule_kind::every_nth, 0.5, 3);
  EXPECT_EQ(routed_indices(evaluate_flops(m, load(1, 16))), (std::vector<int>{2, 5}));
}

TEST(Flops, ExplicitLayerListRoutesExactlyThoseLayers) {
  model_spec m = small_dense();
  m.n_layers = 5;
  m.routing = routing_of(schedule_kind::list, 0.5, 0, {0, 3});
  const flops_report r = evaluate_flops(m, load(1, 16));
  EXPECT_EQ(routed_indices(r), (std::vector<int>{0, 3}));
  EXPECT_EQ(r.layers[3].ops.front().op, modsim::op::router);
  EXPECT_EQ(r.layers[1].ops.front().op, modsim::op::attn_norm);
}

// ---- decode ------------------------------------------------------------------------------

// (b)'s model, one decode step for B = 2 sequences with S = 16 cached tokens, fp32.
// Layer 0 (not routed): 2 new tokens, each attending to S + 1 = 17 entries:
//   scores 2·2·17·64 = 4352; bytes 4·(2·64 + 2·17·64 + 4·2·17) = 4·(128 + 2176 + 136) = 9760
//   (of which the K cache read is 4·2·17·64 = 8704).
// Layer 1 (routed, capacity 0.125, inference = router): router on 2 tokens 2·2·64 = 256;
//   m = 0.125·2 = 0.25 expected routed tokens; k_ctx = routed_tokens(0.125, 16) = 2, so they
//   attend to k_ctx + 1 = 3 entries: scores 2·0.25·3·64 = 96,
//   bytes 4·(0.25·64 + 0.25·3·64 + 4·0.25·3) = 4·(16 + 48 + 3) = 268.
//   p = 1 − (1 − 0.125)² = 0.234375; qkv_proj 2·0.25·64·192 = 6144,
//   bytes 4·(0.25·64 + 0.234375·64·192 + 0.25·192) = 4·(16 + 2880 + 48) = 11776.
// lm_head: 2 tokens: 2·2·64·100 = 25600.
TEST(Flops, DecodeRoutedLayerAttendsToRoutedKvCacheOnly) {
  model_spec m = small_dense();
  m.routing = routing_of(schedule_kind::every_other, 0.125);
  const flops_report r = evaluate_flops(m, load(2, 16, run_mode::decode));
  const layer_flops& dense = r.layers[0];
  EXPECT_EQ(dense.tokens, 2);
  EXPECT_EQ(op_named(dense, "attn_scores").matmul_flops, 4352);
  EXPECT_EQ(op_named(dense, "attn_scores").bytes, 9760);
  EXPECT_EQ(op_named(dense, "attn_values").bytes, 9760);

  const layer_flops& routed = r.layers[1];
  EXPECT_TRUE(routed.routed);
  EXPECT_DOUBLE_EQ(routed.expected_tokens, 0.25);
  EXPECT_EQ(routed.tokens, 0);  // llround(0.25)
  EXPECT_EQ(names_of(routed).front(), "router");
  EXPECT_EQ(count_op(routed, "topk"), 0);
  EXPECT_EQ(op_named(routed, "router").matmul_flops, 256);
  EXPECT_EQ(op_named(routed, "attn_scores").matmul_flops, 96);
  EXPECT_EQ(op_named(routed, "attn_scores").bytes, 268);
  EXPECT_EQ(op_named(routed, "qkv_proj").matmul_flops, 6144);
  EXPECT_EQ(op_named(routed, "qkv_proj").bytes, 11776);
  EXPECT_EQ(r.lm_head.matmul_flops, 25600);
}

TEST(Flops, PredictorIsAnMlpFromDModelToHiddenToOne) {
  // B = 2 tokens, d = 64, h = 32, bf16: matmul 2·2·(64·32 + 32) = 8320, other 2·(32 + 2) = 68,
  // bytes 2·(2·64 + 64·32 + 2·32 + 2) = 2·2242 = 4484.
  op_shape s;
  s.batch = 2;
  s.tokens = 1;
  s.seq_len = 1;
  s.d_model = 64;
  s.n_heads = 4;
  s.predictor_hidden = 32;
  s.elem_bytes = 2;
  const op_cost c = ops::predictor(s);
  EXPECT_EQ(c.op, modsim::op::predictor);
  EXPECT_EQ(c.matmul_flops, 8320);
  EXPECT_EQ(c.other_flops, 68);
  EXPECT_EQ(c.bytes, 4484);
}

TEST(Flops, DecodeWithPredictorRunsThePredictorNotTheRouter) {
  // Predictor hidden 0 = d = 64, B = 2: matmul 2·2·(64·64 + 64) = 16640.
  // Params: (b)'s 111424 + router 64 + predictor 64·64 + 64 = 4160 → 115648.
  model_spec m = small_dense();
  m.routing = routing_of(schedule_kind::every_other, 0.125);
  m.routing->inference = inference_routing::predictor;
  const flops_report r = evaluate_flops(m, load(2, 16, run_mode::decode));
  EXPECT_EQ(names_of(r.layers[1]).front(), "predictor");
  EXPECT_EQ(count_op(r.layers[1], "router"), 0);
  EXPECT_EQ(op_named(r.layers[1], "predictor").matmul_flops, 16640);
  EXPECT_EQ(r.params, 115648);
  // Forward uses the router's top-k, not the predictor.
  const flops_report fwd = evaluate_flops(m, load(2, 16));
  EXPECT_EQ(names_of(fwd.layers[1]).front(), "router");
}

// ---- MoE / MoDE --------------------------------------------------------------------------

model_spec with_mode(moe_variant variant, int experts, int top_k, double cf, int noop) {
  model_spec m = small_dense();
  moe_spec mode;
  mode.variant = variant;
  mode.experts = experts;
  mode.top_k = top_k;
  mode.capacity_factor = cf;
  mode.noop_experts = noop;
  m.moe = mode;
  return m;
}

TEST(Flops, MoeLayerComputesEveryTokenSlotOnceWhenDropless) {
  // E = 8, top_k = 2, dropless, B = 2, S = 16 (T = 32), fp32: M = T·top_k = 64.
  //  expert_router 2·32·64·8 = 32768 | 5·32·8 = 1280 | 4·(2048 + 512 + 256) = 11264
  //  experts 64·4·64·256 = 4194304 | 64·8·256 + 2·64·64 + 32·64 = 131072 + 8192 + 2048 = 141312
  //          | 4·(8·2·64·256 + 2·64·64 + 2·32·64) = 4·(262144 + 8192 + 4096) = 1097728
  const model_spec m = with_mode(moe_variant::moe, 8, 2, 0.0, 0);
  const flops_report r = evaluate_flops(m, load(2, 16));
  const layer_flops& l = r.layers[0];
  EXPECT_EQ(names_of(l), (std::vector<std::string>{"attn_norm", "qkv_proj", "attn_scores", "attn_softmax",
                                                   "attn_values", "out_proj", "mlp_norm", "expert_router", "experts"}));
  EXPECT_EQ(op_named(l, "expert_router").matmul_flops, 32768);
  EXPECT_EQ(op_named(l, "expert_router").other_flops, 1280);
  EXPECT_EQ(op_named(l, "expert_router").bytes, 11264);
  EXPECT_EQ(op_named(l, "experts").matmul_flops, 4194304);
  EXPECT_EQ(op_named(l, "experts").other_flops, 141312);
  EXPECT_EQ(op_named(l, "experts").bytes, 1097728);
  // Per layer 49280 − 2·64·256 + 64·8 + 8·2·64·256 = 16512 + 512 + 262144 = 279168;
  // 2 layers + 12864 = 571200.
  EXPECT_EQ(r.params, 571200);
}

TEST(Flops, CapacityFactorPadsEachExpertToItsCapacity) {
  // E = 8, top_k = 1, cf = 1.1, T = 32: per expert ceil(1.1·32/8) = ceil(4.4) = 5, M = 40;
  // experts matmul 40·4·64·256 = 2621440.
  op_shape s = shape_of(with_mode(moe_variant::moe, 8, 1, 1.1, 0), load(2, 16));
  EXPECT_EQ(ops::expert_slots(s), 40);
  EXPECT_EQ(ops::experts(s).matmul_flops, 2621440);
  // cf = 1.1, T = 10, E = 11: 1.1·10/11 = 1 exactly (not 1.0000000000000002 → 2): M = 11.
  s.batch = 1;
  s.tokens = 10;
  s.experts = 11;
  EXPECT_EQ(ops::expert_slots(s), 11);
}

TEST(Flops, IntegratedNoopExpertsShrinkTheSlotsAtRoutedLayers) {
  // integrated, E = 8, 1 no-op expert, top_k = 1, every_other: layer 1 has E + N = 9.
  // Dropless: M = ceil(32·1·8/9) = ceil(28.44) = 29 → experts matmul 29·4·64·256 = 1900544;
  // expert_router 2·32·64·9 = 36864. Layer 0 (N = 0): M = 32, router 2·32·64·8 = 32768.
  // Attention still sees all 16 tokens: tokens = 32, no MoD router.
  model_spec m = with_mode(moe_variant::integrated, 8, 1, 0.0, 1);
  m.routing = routing_of(schedule_kind::every_other, 0.125);
  const flops_report r = evaluate_flops(m, load(2, 16));
  const layer_flops& l = r.layers[1];
  EXPECT_TRUE(l.routed);
  EXPECT_EQ(l.tokens, 32);
  EXPECT_EQ(count_op(l, "router"), 0);
  EXPECT_EQ(op_named(l, "experts").matmul_flops, 1900544);
  EXPECT_EQ(op_named(l, "expert_router").matmul_flops, 36864);
  EXPECT_EQ(op_named(r.layers[0], "experts").matmul_flops, 32 * 4 * 64 * 256);
  EXPECT_EQ(op_named(r.layers[0], "expert_router").matmul_flops, 32768);
  // With cf = 1.25: per expert ceil(1.25·32/9) = ceil(4.44) = 5, M = 8·5 = 40.
  m.moe->capacity_factor = 1.25;
  op_shape s = shape_of(m, load(2, 16));
  s.noop_experts = 1;
  EXPECT_EQ(ops::expert_slots(s), 40);
  // The dense baseline drops the no-op experts: per layer attention 786432 + 65536 + 65536 +
  // 262144 = 1179648, expert_router 32768, experts 32·4·64·256 = 2097152 → 3309568;
  // 2 layers + lm_head 409600 = 7028736.
  EXPECT_EQ(r.totals.dense_matmul_flops, 7028736);
}

TEST(Flops, StagedModeRoutesTokensThenRunsExperts) {
  // staged, E = 8, top_k = 1, every_other 0.125, B = 2, S = 16: layer 1 has k = 2, T = 4.
  // Dropless M = 4: experts 4·4·64·256 = 262144. cf = 1.25: ceil(1.25·4/8) = 1 per expert,
  // M = 8: 8·4·64·256 = 524288.
  model_spec m = with_mode(moe_variant::staged, 8, 1, 0.0, 0);
  m.routing = routing_of(schedule_kind::every_other, 0.125);
  const flops_report r = evaluate_flops(m, load(2, 16));
  const layer_flops& l = r.layers[1];
  EXPECT_EQ(l.tokens, 4);
  EXPECT_EQ(names_of(l).front(), "router");
  EXPECT_EQ(names_of(l).back(), "scatter");
  EXPECT_EQ(op_named(l, "experts").matmul_flops, 262144);
  m.moe->capacity_factor = 1.25;
  EXPECT_EQ(op_named(evaluate_flops(m, load(2, 16)).layers[1], "experts").matmul_flops, 524288);
}

TEST(Flops, MoeVariantIgnoresTheRoutingSchedule) {
  model_spec m = with_mode(moe_variant::moe, 8, 1, 0.0, 0);
  m.routing = routing_of(schedule_kind::all, 0.5);
  const flops_report r = evaluate_flops(m, load(2, 16));
  EXPECT_TRUE(routed_indices(r).empty());
  EXPECT_EQ(r.totals.matmul_flops, r.totals.dense_matmul_flops);
}

// ---- the per-op API ----------------------------------------------------------------------

TEST(Flops, CostOfDispatchesByOp) {
  const op_shape s = paper_shape(2048);
  for (const modsim::op o : modsim::model_ops()) EXPECT_EQ(cost_of(o, s).op, o) << to_string(o);
  // lm_head at B = 1, S = 2048: 2·2048·1024·32000 = 134,217,728,000.
  EXPECT_EQ(cost_of(modsim::op::lm_head, s).matmul_flops, 134217728000);
  // Blocks and decode steps are priced from their ops (block_costs, the simulator's step).
  EXPECT_THROW(cost_of(modsim::op::block_mod, s), modsim::error);
  EXPECT_THROW(cost_of(modsim::op::decode_step, s), modsim::error);
}

TEST(Flops, OpClassesGroupTheOps) {
  EXPECT_STREQ(op_class_of(modsim::op::router), "routing");
  EXPECT_STREQ(op_class_of(modsim::op::predictor), "routing");
  EXPECT_STREQ(op_class_of(modsim::op::scatter), "routing");
  EXPECT_STREQ(op_class_of(modsim::op::mlp_norm), "norm");
  EXPECT_STREQ(op_class_of(modsim::op::out_proj), "attn_proj");
  EXPECT_STREQ(op_class_of(modsim::op::attn_softmax), "attn_core");
  EXPECT_STREQ(op_class_of(modsim::op::mlp_gate), "mlp");
  EXPECT_STREQ(op_class_of(modsim::op::experts), "moe");
  EXPECT_STREQ(op_class_of(modsim::op::lm_head), "lm_head");
}

TEST(Flops, BlockModAtCapacityOneIsBlockDensePlusRoutingOps) {
  // At S = 2048, B = 1, d = 1024, bf16: the block_mod list is block_dense's with router,
  // topk, gather in front and scatter behind; router 2·2048·1024 = 4,194,304.
  const op_shape s = paper_shape(7);  // tokens is ignored by block_costs
  const std::vector<op_cost> dense = block_costs(modsim::op::block_dense, s);
  const std::vector<op_cost> mod = block_costs(modsim::op::block_mod, s, 1.0);
  ASSERT_EQ(mod.size(), dense.size() + 4);
  EXPECT_EQ(mod[0].op, modsim::op::router);
  EXPECT_EQ(mod[0].matmul_flops, 4194304);
  EXPECT_EQ(mod.back().op, modsim::op::scatter);
  EXPECT_EQ(sum_costs(mod, modsim::op::block_mod).matmul_flops,
            sum_costs(dense, modsim::op::block_dense).matmul_flops + 4194304);
  EXPECT_EQ(sum_costs(mod, modsim::op::block_mod).op, modsim::op::block_mod);
  // At capacity 0.125 the block's attention scores are 2·256²·1024 = 134,217,728.
  const std::vector<op_cost> mod8 = block_costs(modsim::op::block_mod, s, 0.125);
  EXPECT_EQ(mod8[5].op, modsim::op::attn_scores);
  EXPECT_EQ(mod8[5].matmul_flops, 134217728);
  EXPECT_THROW(block_costs(modsim::op::layer_mode, s), modsim::error);  // no experts in the shape
  EXPECT_THROW(block_costs(modsim::op::attn_norm, s), modsim::error);   // not a block
}

TEST(Flops, LayerModeBlockFollowsItsVariant) {
  // E = 8, top_k = 1, dropless, B = 2, S = 16, fp32 (T = 32).
  op_shape s = shape_of(with_mode(moe_variant::moe, 8, 1, 0.0, 0), load(2, 16));
  // moe: no routing, 9 ops, experts M = 32: 32·4·64·256 = 2097152.
  const std::vector<op_cost> moe = block_costs(modsim::op::layer_mode, s, 0.125, moe_variant::moe);
  ASSERT_EQ(moe.size(), 9u);
  EXPECT_EQ(moe.back().op, modsim::op::experts);
  EXPECT_EQ(moe.back().matmul_flops, 2097152);
  // staged at 0.125: k = 2, T = 4, M = 4: 4·4·64·256 = 262144, between router/topk/gather
  // and scatter.
  const std::vector<op_cost> staged = block_costs(modsim::op::layer_mode, s, 0.125, moe_variant::staged);
  ASSERT_EQ(staged.size(), 13u);
  EXPECT_EQ(staged.front().op, modsim::op::router);
  EXPECT_EQ(staged[11].op, modsim::op::experts);
  EXPECT_EQ(staged[11].matmul_flops, 262144);
  // integrated with 1 no-op expert: expert_router 2·32·64·9 = 36864, M = ceil(256/9) = 29.
  s.noop_experts = 1;
  const std::vector<op_cost> integrated = block_costs(modsim::op::layer_mode, s, 0.125, moe_variant::integrated);
  ASSERT_EQ(integrated.size(), 9u);
  EXPECT_EQ(integrated[7].matmul_flops, 36864);
  EXPECT_EQ(integrated[8].matmul_flops, 29 * 4 * 64 * 256);
}

TEST(Flops, ExpectedShapeRoundsEachFieldOnce) {
  // m = 0.3 tokens, d = 64, bf16: attn_norm other 4·0.3·64 = 76.8 → 77,
  // bytes 2·(2·0.3·64 + 64) = 204.8 → 205.
  expected_op_shape x;
  x.batch = 0.3;
  x.tokens = 1;
  x.d_model = 64;
  x.n_heads = 4;
  x.elem_bytes = 2;
  const op_cost c = ops::attn_norm(x);
  EXPECT_EQ(c.other_flops, 77);
  EXPECT_EQ(c.bytes, 205);
}

TEST(Flops, WorkloadsTooLargeForInt64AreRejected) {
  model_spec m = small_dense();
  m.vocab_size = 2000000000;
  m.d_model = 65536;
  m.n_heads = 512;
  m.d_head = 128;
  // lm_head 2·B·S·d·V = 2·10⁶·10⁶·65536·2·10⁹ ≫ 2⁶³.
  EXPECT_THROW(evaluate_flops(m, load(1000000, 1000000)), modsim::error);
  EXPECT_THROW(evaluate_flops(small_dense(), load(0, 16)), modsim::error);
}

}  // namespace
}  // namespace modsim::sim

namespace modsim::sim {
namespace {
// The one op table (core/op_table.hpp): rows in enum order, the kernels' ops, the FLOP model's
// layer order, the stand-ins and the enum values the calibration files' block keys use.
TEST(OpTable, KernelOpsModelOrderAndStandIns) {
  EXPECT_EQ(kernel_ops().size(), 20u);  // 17 kernel ops + 3 blocks; predictor, lm_head are model-only
  const std::vector<std::string_view> layer = {
      "router",       "topk",          "gather",   "predictor", "attn_norm", "qkv_proj", "attn_scores",
      "attn_softmax", "attn_values",   "out_proj", "mlp_norm",  "mlp_up",    "mlp_gate", "mlp_act",
      "mlp_down",     "expert_router", "experts",  "scatter",   "lm_head"};
  EXPECT_EQ(op_names(), layer);
  EXPECT_EQ(info(modsim::op::mlp_gate).stand_in, modsim::op::mlp_up);
  EXPECT_FALSE(info(modsim::op::qkv_proj).stand_in.has_value());
  EXPECT_EQ(info(modsim::op::topk).gpu_kernels, 2);
  EXPECT_EQ(info(modsim::op::topk).cpu_kernels, 1);
  EXPECT_TRUE(is_block(modsim::op::layer_mode));
  EXPECT_EQ(parse_op("block_mod"), modsim::op::block_mod);
  EXPECT_THROW(parse_op("softmax"), modsim::error);
  EXPECT_THROW(cost_of(modsim::op::block_dense, op_shape{}), modsim::error);
  EXPECT_EQ(static_cast<int>(moe_variant::none), 0);
  EXPECT_EQ(static_cast<int>(moe_variant::staged), 1);
  EXPECT_EQ(static_cast<int>(moe_variant::integrated), 2);
  EXPECT_EQ(modsim::find_dtype("bf16"), dtype::bf16);
  EXPECT_FALSE(modsim::find_dtype("int8").has_value());
}

// The GEMM output tiles behind the GPU wave quantisation, counted by hand at 128×128 tiles:
// B = 2 sequences of n = 100 tokens, d = 256, 8 query heads of 32, 2 KV heads, d_ff = 1000.
TEST(Flops, GemmOutputTilesCountEachOpsOutputByHand) {
  op_shape s;
  s.batch = 2;
  s.tokens = 100;
  s.seq_len = 100;
  s.d_model = 256;
  s.n_heads = 8;
  s.n_kv_heads = 2;
  s.d_ff = 1000;
  s.vocab_size = 1000;
  // T = 200 rows → 2 row tiles; Q, K, V columns 256 + 64 + 64 = 384 → 3.
  EXPECT_EQ(gemm_output_tiles(op::qkv_proj, s, 128), 6.0);
  EXPECT_EQ(gemm_output_tiles(op::out_proj, s, 128), 4.0);      // 2 × ceil(256/128)
  EXPECT_EQ(gemm_output_tiles(op::mlp_up, s, 128), 16.0);       // 2 × ceil(1000/128) = 2 × 8
  EXPECT_EQ(gemm_output_tiles(op::attn_scores, s, 128), 16.0);  // B·H = 16 matrices of 100 × 100
  EXPECT_EQ(gemm_output_tiles(op::attn_values, s, 128), 16.0);  // 16 of 100 × 32
  EXPECT_EQ(gemm_output_tiles(op::lm_head, s, 128), 16.0);      // 200 rows × 1000 columns
  EXPECT_EQ(gemm_output_tiles(op::router, s, 128), 0.0);        // one output column
  EXPECT_EQ(gemm_output_tiles(op::mlp_act, s, 128), 0.0);
  EXPECT_EQ(gemm_output_tiles(op::experts, s, 128), 0.0);  // no experts
  // Expected shapes count whole sequences and tokens: 1.5 sequences of 99.2 tokens → 2 × 100.
  expected_op_shape e;
  e.batch = 1.5;
  e.tokens = 99.2;
  e.d_model = 256;
  e.n_heads = 8;
  e.n_kv_heads = 2;
  EXPECT_EQ(gemm_output_tiles(op::qkv_proj, e, 128), 6.0);
}
}  // namespace
}  // namespace modsim::sim

namespace modsim::sim {

TEST(Flops, TrainingBlocksAreThreeForwardsPlusWhatRecomputationRunsAgain) {
  // B = 2, S = 64, d = 64, H = 4 (dh = 16, dq = 64), 2 kv heads (dkv = 32), F = 128, gelu.
  // Forward matmuls of a block over n tokens per sequence, T = 2n: qkv 2·T·64·(64 + 2·32),
  // out 2·T·64·64, up and down 2·T·64·128 each, scores and values 2·B·n²·64 each.
  op_shape s;
  s.batch = 2;
  s.seq_len = 64;
  s.d_model = 64;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.d_head = 16;
  s.d_ff = 128;
  s.mlp = mlp_kind::gelu;
  s.elem_bytes = 4;
  auto block_matmul = [](std::int64_t n) {
    const std::int64_t T = 2 * n;
    const std::int64_t scores = 2 * 2 * n * n * 64;
    return 2 * T * 64 * 128 + 2 * T * 64 * 64 + 2 * (2 * T * 64 * 128) + 2 * scores;
  };
  const std::int64_t dense = block_matmul(64);                  // 9,437,184
  const std::int64_t mod = 2 * 2 * 64 * 64 + block_matmul(16);  // router 2·B·S·d + the block on k = 16
  ASSERT_EQ(dense, 9437184);
  ASSERT_EQ(mod, 1982464);
  using modsim::recompute;
  const op_cost dn = train_block_cost(modsim::op::block_dense_train, s, 1.0, recompute::none);
  EXPECT_EQ(dn.op, modsim::op::block_dense_train);
  EXPECT_EQ(dn.matmul_flops, 3 * dense);
  EXPECT_EQ(train_block_cost(modsim::op::block_mod_train, s, 0.25, recompute::none).matmul_flops, 3 * mod);
  // full: the forward once more; selective: the attention scores (2·B·n²·dq) once more.
  EXPECT_EQ(train_block_cost(modsim::op::block_dense_train, s, 1.0, recompute::full).matmul_flops, 4 * dense);
  EXPECT_EQ(train_block_cost(modsim::op::block_mod_train, s, 0.25, recompute::full).matmul_flops, 4 * mod);
  EXPECT_EQ(train_block_cost(modsim::op::block_dense_train, s, 1.0, recompute::selective).matmul_flops,
            3 * dense + 2 * 2 * 64 * 64 * 64);
  // Elementwise work: the softmax (5·B·H·n²) once more under selective.
  EXPECT_EQ(train_block_cost(modsim::op::block_dense_train, s, 1.0, recompute::selective).other_flops,
            dn.other_flops + 5 * 2 * 4 * 64 * 64);
  EXPECT_THROW(train_block_cost(modsim::op::block_dense, s, 1.0, recompute::none), modsim::error);
}

TEST(Flops, TheAdamwOpIsTheOptimizerStepOverOneDenseLayer) {
  // d = 32, H = 4 (dh = 8, dq = 32), 2 kv heads (dkv = 16), F = 64: swiglu 32·(32 + 32) + 32·32
  // + 2·32 + 3·32·64 = 9,280 parameters, gelu 32·64 fewer = 7,232; 16 FLOPs and 28 bytes each
  // (fp32, and bf16 with its fp32 master copy), whatever the batch and the tokens.
  op_shape s;
  s.batch = 4;
  s.tokens = 3;
  s.seq_len = 16;
  s.d_model = 32;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.d_head = 8;
  s.d_ff = 64;
  s.mlp = mlp_kind::swiglu;
  s.elem_bytes = 4;
  const op_cost c = cost_of(modsim::op::adamw, s);
  EXPECT_EQ(c.op, modsim::op::adamw);
  EXPECT_EQ(c.matmul_flops, 0);
  EXPECT_EQ(c.other_flops, 16 * 9280);
  EXPECT_EQ(c.bytes, 28 * 9280);
  s.mlp = mlp_kind::gelu;
  s.elem_bytes = 2;
  s.batch = 1;
  EXPECT_EQ(cost_of(modsim::op::adamw, s).bytes, 28 * 7232);
  // The model's step over the same parameters costs the same (adamw_cost).
  EXPECT_EQ(adamw_cost(7232, 2).bytes, 28 * 7232);
  EXPECT_THROW(ops::backward_of(modsim::op::adamw, s), modsim::error);
}

}  // namespace modsim::sim
