// Tests of model prediction (sim/cost/predict.cpp): the uncalibrated prediction of a small model
// against a roofline computed by hand, and the exactness of the gap decomposition.
#include "sim/cost/predict.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/cost/calibrate.hpp"
#include "sim/model/config.hpp"
#include "core/error.hpp"
#include "des_fixtures.hpp"
#include "round_cpu.hpp"

namespace modsim::sim {
namespace {

const std::string k_configs = std::string(MODSIM_SOURCE_DIR) + "/configs";

using test::round_cpu;

// d=64, H=4 (dh=16), F=256, V=100, gelu, one layer.
model_spec tiny(int layers = 1) {
  model_spec m;
  m.name = "tiny";
  m.d_model = 64;
  m.n_layers = layers;
  m.n_heads = 4;
  m.n_kv_heads = 4;
  m.d_head = 16;
  m.d_ff = 256;
  m.vocab_size = 100;
  return m;
}

workload load(std::int64_t batch, std::int64_t seq, run_mode mode = run_mode::forward) {
  return des::test::workload_of(batch, seq, mode, dtype::fp32);
}

TEST(Predict, UncalibratedPredictionIsTheHandComputedRoofline) {
  // B=1, S=8 (T = n = L = 8), fp32 (e = 4). Every op is bandwidth-bound at 10 GB/s:
  //   attn_norm    bytes 4·(2·8·64 + 64)            =  4352 -> 4.352e-7 s
  //   qkv_proj     bytes 4·(8·64 + 64·192 + 8·192)  = 57344 -> 5.7344e-6
  //   attn_scores  bytes 4·(8·64 + 8·64 + 4·8·8)    =  5120 -> 5.12e-7
  //   attn_softmax bytes 8·4·8·8 = 2048 -> 2.048e-7 (compute 5·4·64/1e10 = 1.28e-7)
  //   attn_values  5120 -> 5.12e-7
  //   out_proj     bytes 4·(512 + 4096 + 1024)      = 22528 -> 2.2528e-6
  //   mlp_norm     4352 -> 4.352e-7
  //   mlp_up       bytes 4·(512 + 16384 + 2048)     = 75776 -> 7.5776e-6
  //   mlp_act      other 8·8·256 = 16384 -> 1.6384e-6; bytes 8·2048 = 16384 -> 1.6384e-6
  //   mlp_down     bytes 4·(2048 + 16384 + 1024)    = 77824 -> 7.7824e-6
  //   lm_head      bytes 4·(512 + 6400 + 800)       = 30848 -> 3.0848e-6
  const std::vector<std::pair<modsim::op, double>> expected = {
      {modsim::op::attn_norm, 4.352e-7},    {modsim::op::qkv_proj, 5.7344e-6},  {modsim::op::attn_scores, 5.12e-7},
      {modsim::op::attn_softmax, 2.048e-7}, {modsim::op::attn_values, 5.12e-7}, {modsim::op::out_proj, 2.2528e-6},
      {modsim::op::mlp_norm, 4.352e-7},     {modsim::op::mlp_up, 7.5776e-6},    {modsim::op::mlp_act, 1.6384e-6},
      {modsim::op::mlp_down, 7.7824e-6}};
  const cost_model cost(round_cpu());
  const prediction p = predict(tiny(), load(1, 8), cost);
  ASSERT_EQ(p.model.layers.size(), 1u);
  const auto& ops = p.model.layers[0].ops;
  ASSERT_EQ(ops.size(), expected.size());
  double sum = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].op, expected[i].first);
    EXPECT_NEAR(ops[i].time_s, expected[i].second, 1e-18) << modsim::to_string(ops[i].op);
    sum += expected[i].second;
  }
  EXPECT_NEAR(p.model.lm_head.time_s, 3.0848e-6, 1e-18);
  // 10 layer kernels + 2 for the lm_head, 1 µs each.
  EXPECT_EQ(p.model.kernels, 12);
  EXPECT_NEAR(p.overhead_s(), 12e-6, 1e-18);
  EXPECT_NEAR(p.total_s(), sum + 3.0848e-6 + 12e-6, 1e-15);
  // A dense model is its own baseline.
  EXPECT_DOUBLE_EQ(p.dense_total_s(), p.total_s());
  EXPECT_DOUBLE_EQ(p.time_ratio, 1.0);
  EXPECT_DOUBLE_EQ(p.flop_ratio, 1.0);
  EXPECT_NEAR(p.gap.total(), 0.0, 1e-15);
  EXPECT_FALSE(p.calibrated);
  EXPECT_NE(p.cost_label.find("datasheet roofline"), std::string::npos);
}

TEST(Predict, TrainPricesEachBackwardFromItsBytesAndAddsTheOptimizer) {
  const cost_model cost(round_cpu());
  const prediction f = predict(tiny(), load(1, 8), cost);
  const prediction t = predict(tiny(), load(1, 8, run_mode::train), cost);
  EXPECT_EQ(t.model.matmul_flops, 3 * f.model.matmul_flops);
  const auto& ops = t.model.layers.at(0).ops;
  auto find = [&](modsim::op o) -> const op_prediction& {
    for (const op_prediction& p : ops)
      if (p.op == o) return p;
    throw std::runtime_error("op missing");
  };
  // B=1, S=8, fp32, 10 GB/s. qkv_proj backward: dgrad and wgrad read and write
  // 2·4·(8·64 + 64·192 + 8·192) = 114688 bytes -> 1.14688e-5 s (compute 4·8·64·192 / 1e11 =
  // 3.9e-6 s is below it).
  EXPECT_NEAR(find(modsim::op::qkv_proj).backward_s, 1.14688e-5, 1e-18);
  EXPECT_NEAR(find(modsim::op::qkv_proj).forward_s, 5.7344e-6, 1e-18);
  // attn_softmax backward: P, dP read and dS written, 3·4·(4·8·8) = 3072 bytes -> 3.072e-7 s
  // (compute 10·4·64 / 1e10 = 2.56e-7): 1.5 x its forward's 2.048e-7, not 2.
  EXPECT_NEAR(find(modsim::op::attn_softmax).backward_s, 3.072e-7, 1e-18);
  // AdamW over P = 64·192 + 64·64 + 2·64 + 2·64·256 (the layer) + 2·100·64 + 64 = 62144
  // parameters, 28 bytes each: 1740032 bytes -> 1.740032e-4 s (compute 16·P / 1e10 below it).
  EXPECT_NEAR(t.model.optimizer.time_s, 1.740032e-4, 1e-16);
  EXPECT_GT(t.total_s(), f.total_s() + t.model.optimizer.time_s);
}

// The LM head's backward begins with the loss, a memory-bound kernel of its own that the
// projection's compute does not hide. tiny() at B=1, S=8 (8 tokens, V = 100, d = 64, fp32) on
// round_cpu with a 1 GFLOP/s matmul: the projection's dgrad and wgrad 4·8·64·100 = 204800
// FLOPs -> 2.048e-4 s, the final norm's 8·8·64 = 4096 at 10 GFLOP/s -> 4.096e-7 s; their bytes
// 4·(2·8·64 + 2·64·100 + 2·8·100) + 4·(4·8·64 + 2·64) = 70400 -> 7.04e-6 s, below: 2.052096e-4 s.
// The loss: 7·800 + 2·8 = 5616 FLOPs (5.616e-7 s), 2·4·800 = 6400 bytes (6.4e-7 s): 6.4e-7 s.
// One roofline over both would have hidden the loss's bytes: 2.057712e-4 s.
TEST(Predict, TheLossIsAKernelOfItsOwnAtTheHeadOfTheLmHeadsBackward) {
  hardware_spec hw = round_cpu();
  hw.peak_matmul_flops = {1e9, 1e9, 1e9};
  const prediction t = predict(tiny(), load(1, 8, run_mode::train), cost_model(hw));
  EXPECT_NEAR(t.model.lm_head.backward_s, 2.052096e-4 + 6.4e-7, 1e-15);
  EXPECT_EQ(t.model.lm_head.bytes, 4 * (8 * 64 + 64 * 100 + 8 * 100) + 70400 + 6400);
}

// The FLOPs given are the ones timed and reported: none is evaluated again. tiny() at B=1, S=8
// with its qkv_proj's bytes doubled (57344 -> 114688, by hand above) is bandwidth-bound at 10 GB/s:
// 1.14688e-5 s; the lm_head given 61696 bytes: 6.1696e-6 s. The baseline's report is untouched.
TEST(Predict, PredictTimesTheFlopsItIsGiven) {
  const cost_model cost(round_cpu());
  const workload w = load(1, 8);
  flops_report f = evaluate_flops(tiny(), w);
  ASSERT_EQ(f.layers.size(), 1u);
  ASSERT_EQ(f.layers[0].ops[1].op, modsim::op::qkv_proj);
  f.layers[0].ops[1].bytes = 114688;
  f.lm_head.bytes = 61696;
  const prediction p = predict(tiny(), tiny(), f, evaluate_flops(tiny(), w), cost);
  const op_prediction& qkv = p.model.layers[0].ops[1];
  EXPECT_EQ(qkv.bytes, 114688);
  EXPECT_NEAR(qkv.time_s, 1.14688e-5, 1e-18);
  EXPECT_EQ(p.model.lm_head.bytes, 61696);
  EXPECT_NEAR(p.model.lm_head.time_s, 6.1696e-6, 1e-18);
  EXPECT_NEAR(p.dense.layers[0].ops[1].time_s, 5.7344e-6, 1e-18);
  EXPECT_NEAR(p.dense.lm_head.time_s, 3.0848e-6, 1e-18);
  // Without reports predict evaluates them: the unaltered model's times.
  EXPECT_NEAR(predict(tiny(), w, cost).model.layers[0].ops[1].time_s, 5.7344e-6, 1e-18);
}

// A train report (3 × every op's FLOPs and bytes) is reported as given and timed at the forward
// costs × 3: qkv_proj 3 × 5.7344e-6 s (by hand above), FLOPs 3 × the forward's.
TEST(Predict, TrainReportIsTimedAtThreeTimesItsForwardOps) {
  const cost_model cost(round_cpu());
  const flops_report f = evaluate_flops(tiny(), load(1, 8, run_mode::train));
  const prediction p = predict(tiny(), tiny(), f, f, cost);
  const op_prediction& qkv = p.model.layers[0].ops[1];
  EXPECT_NEAR(qkv.time_s, 3 * 5.7344e-6, 1e-18);
  EXPECT_EQ(qkv.bytes, 3 * 57344);
  EXPECT_EQ(qkv.kernels, 3);
}

TEST(Predict, RoutedLayerRunsTheRoutingOpsAndFewerTokens) {
  model_spec m = tiny(2);
  routing_spec r;
  r.capacity = 0.5;
  r.sched.kind = schedule_kind::every_other;
  r.inference = inference_routing::router;
  m.routing = r;
  const cost_model cost(round_cpu());
  const prediction p = predict(m, load(1, 8), cost);
  ASSERT_EQ(p.model.layers.size(), 2u);
  EXPECT_FALSE(p.model.layers[0].routed);
  EXPECT_TRUE(p.model.layers[1].routed);
  EXPECT_EQ(p.model.layers[1].tokens, 4);  // k = ceil(0.5 · 8)
  EXPECT_EQ(p.model.layers[1].ops.front().op, modsim::op::router);
  EXPECT_EQ(p.model.layers[1].ops.back().op, modsim::op::scatter);
  // Routing adds 4 kernels: 10 + 14 + 2 vs the dense 10 + 10 + 2.
  EXPECT_EQ(p.model.kernels, 26);
  EXPECT_EQ(p.dense.kernels, 22);
  EXPECT_LT(p.flop_ratio, 1.0);
  // The non-routed layer is the dense layer.
  EXPECT_DOUBLE_EQ(p.model.layers[0].time_s, p.dense.layers[0].time_s);
}

TEST(Predict, GapDecompositionOfAHandMadeCase) {
  // Dense: mlp_up 5 s / 60 FLOPs, attn_scores 5 s / 40 FLOPs -> T = 10, F = 100.
  // MoD:   mlp_up 4 s / 30 FLOPs, attn_scores 1 s / 10 FLOPs, router 1 s / 0 FLOPs.
  // ρ = 40/100 = 0.4, τ = 6/10 = 0.6, gap 0.2.
  //   mlp_up:  ρ_o = 0.5, efficiency (4 − 0.5·5)/10 = 0.15, mix (0.5 − 0.6)(0.5 − 0.4) = −0.01
  //   scores:  ρ_o = 0.25, efficiency (1 − 0.25·5)/10 = −0.025, mix (0.5 − 0.4)(0.25 − 0.4) = −0.015
  //   router:  1/10 − 0 = 0.1
  auto op = [](modsim::op name, const char* cls, double t, std::int64_t f) {
    op_prediction o;
    o.op = name;
    o.op_class = cls;
    o.time_s = t;
    o.matmul_flops = f;
    return o;
  };
  model_time dense, mod;
  layer_prediction ld, lm;
  ld.ops = {op(modsim::op::mlp_up, "mlp", 5, 60), op(modsim::op::attn_scores, "attn_core", 5, 40)};
  lm.ops = {op(modsim::op::router, "routing", 1, 0), op(modsim::op::mlp_up, "mlp", 4, 30),
            op(modsim::op::attn_scores, "attn_core", 1, 10)};
  dense.layers = {ld};
  mod.layers = {lm};
  dense.lm_head = op(modsim::op::lm_head, "lm_head", 0, 0);
  mod.lm_head = dense.lm_head;
  dense.matmul_flops = 100;
  mod.matmul_flops = 40;
  dense.total_s = 10;
  mod.total_s = 6;
  const gap_decomposition g = decompose_gap(mod, dense);
  EXPECT_NEAR(g.gemm_efficiency, 0.14, 1e-12);
  EXPECT_NEAR(g.attention, -0.04, 1e-12);
  EXPECT_NEAR(g.routing, 0.1, 1e-12);
  EXPECT_NEAR(g.launch, 0.0, 1e-12);
  EXPECT_NEAR(g.memory_bound, 0.0, 1e-12);
  EXPECT_NEAR(g.total(), 0.2, 1e-12);
  EXPECT_NEAR(g.by_class.at("mlp"), 0.14, 1e-12);
}

// Wave quantisation is its own term. One layer, one op: the mlp_down of
// UncalibratedH100PricesTheRoutedMlpDownWithChosenTiles (test_gemm_tiles.cpp), dense 2048
// rows, MoD 256. With c_d = 2·2048·1024·4096/989.4e12 (17.364 µs), c_m = c_d/8, m_m the MoD
// op's memory term (3.287 µs), q its wave factor (1.866):
//   dense: t_d = c_d·132/128, w_d = c_d·4/128;  MoD: t_m = c_m·q, w_m = c_m·q − m_m
//   T = t_d, ρ = ρ_o = 1/8, mix 0 (the one op has all the time and all the FLOPs)
//   wave_quantisation = (w_m − w_d/8)/T
//   the rest of the efficiency term (the MoD op is bandwidth-bound: memory_bound) =
//     ((t_m − w_m) − (t_d − w_d)/8)/T = (m_m − c_d/8)/T
//   sum = t_m/T − 1/8 = τ − ρ.
TEST(Predict, WaveQuantisationIsItsOwnGapTerm) {
  const double cd = 2.0 * 2048 * 1024 * 4096 / 989.4e12, cm = cd / 8;
  const double mm = 2.0 * (256.0 * 4096 + 4096.0 * 1024 + 256.0 * 1024) / 3.35e12;
  const double r = 2 * 989.4e12 / 3.35e12;
  const double q = (64.0 * 64 * 2048 / 0.8 + 2.0 * 2 * 256 * 1024 / 132 * r) / (256.0 * 1024 * 4096 / 132);
  const double td = cd * 132 / 128, wd = cd * 4 / 128, tm = cm * q, wm = cm * q - mm;
  auto op = [](double t, double w, std::int64_t f, bool memory_bound) {
    op_prediction o;
    o.op = modsim::op::mlp_down;
    o.op_class = "mlp";
    o.time_s = t;
    o.wave_s = w;
    o.matmul_flops = f;
    o.memory_bound = memory_bound;
    return o;
  };
  const std::int64_t fd = std::int64_t{2} * 2048 * 1024 * 4096;
  model_time dense, mod;
  layer_prediction ld, lm;
  ld.ops = {op(td, wd, fd, false)};
  lm.ops = {op(tm, wm, fd / 8, true)};
  dense.layers = {ld};
  mod.layers = {lm};
  dense.lm_head.op = mod.lm_head.op = modsim::op::lm_head;
  dense.lm_head.op_class = mod.lm_head.op_class = "lm_head";
  dense.matmul_flops = fd;
  mod.matmul_flops = fd / 8;
  dense.total_s = dense.ops_s = td;
  mod.total_s = mod.ops_s = tm;
  const gap_decomposition g = decompose_gap(mod, dense);
  EXPECT_NEAR(g.wave_quantisation, (wm - wd / 8) / td, 1e-12);  // (0.763 − 0.068) / 17.906 = 0.039
  EXPECT_NEAR(g.memory_bound, (mm - cd / 8) / td, 1e-12);
  EXPECT_NEAR(g.gemm_efficiency, 0.0, 1e-12);
  EXPECT_NEAR(g.total(), tm / td - 1.0 / 8, 1e-12);
  EXPECT_NEAR(g.by_class.at("mlp"), tm / td - 1.0 / 8, 1e-12);
  bool named = false;
  for (const gap_term& t : gap_terms())
    if (std::string(t.key) == "wave_quantisation") named = t.value == &gap_decomposition::wave_quantisation;
  EXPECT_TRUE(named);
}

TEST(Predict, GapDecompositionSumsToTheGapForShippedModels) {
  const cost_model h100(load_hardware(k_configs + "/hardware/h100-sxm.json"));
  const cost_model cpu(load_hardware(k_configs + "/hardware/cpu.json"));
  for (const char* name : {"mod-220m", "mod-1b", "mode-staged-220m", "mode-integrated-220m", "mod-gqa-swiglu-1b"}) {
    const model_spec m = load_model(k_configs + "/models/" + name + ".json");
    for (run_mode mode : {run_mode::forward, run_mode::train, run_mode::decode}) {
      for (const cost_model* c : {&h100, &cpu}) {
        workload w = load(4, 1024, mode);
        w.type = dtype::bf16;
        const prediction p = predict(m, w, *c);
        EXPECT_GT(p.total_s(), 0);
        EXPECT_NEAR(p.gap.total(), p.time_ratio - p.flop_ratio, 1e-12) << name << " " << to_string(mode);
        // The declared terms (what every face prints) cover the gap: none is left out.
        double terms = 0;
        for (const gap_term& t : gap_terms()) terms += p.gap.*t.value;
        EXPECT_NEAR(terms, p.time_ratio - p.flop_ratio, 1e-12) << name;
        double by_class = p.gap.launch;
        for (const auto& [k, v] : p.gap.by_class) by_class += v;
        EXPECT_NEAR(by_class, p.time_ratio - p.flop_ratio, 1e-12) << name;
      }
    }
  }
}

TEST(Predict, CalibratedModelPredictsAnUnmeasuredCapacity) {
  // A calibration with one curve per block op: g = 2 everywhere, no fixed cost, launch 0.
  const hardware_spec h = round_cpu();
  calibration c;
  c.date = "d";
  c.device = "x";
  c.backend = modsim::backend_kind::cpu;
  for (const modsim::op op : modsim::model_ops()) {
    efficiency_curve e;
    e.op = op;
    e.log10_work = {-9};
    e.inv_efficiency = {2};
    c.curves.push_back(e);
  }
  c.peak_matmul_fp32 = c.peak_matmul_bf16 = c.peak_matmul_fp16 = 100e9;
  c.peak_vector_fp32 = c.peak_vector_bf16 = c.peak_vector_fp16 = 10e9;
  c.memory_bandwidth_bytes_s = 10e9;
  const cost_model cal = with_calibration(h, c);
  hardware_spec no_launch = h;
  no_launch.kernel_launch_s = 0;
  const cost_model roof(no_launch);
  model_spec m = tiny(2);
  routing_spec r;
  r.capacity = 0.3;  // never "measured"
  r.sched.kind = schedule_kind::all;
  r.inference = inference_routing::router;
  m.routing = r;
  // Efficiency 1/2 everywhere: every op takes twice its roofline, launch 0.
  const prediction pc = predict(m, load(2, 16), cal);
  const prediction pr = predict(m, load(2, 16), roof);
  EXPECT_NEAR(pc.total_s(), 2 * pr.total_s(), 1e-15);
  EXPECT_TRUE(pc.calibrated);
  EXPECT_TRUE(pc.notes.empty());
  // A calibration whose rows were held to a machine speed predicts the same times and says at
  // which speed they are.
  c.anchor_reference_s = 1.5e-3;
  c.anchor_rows = 64;
  const prediction held = predict(m, load(2, 16), with_calibration(h, c));
  EXPECT_NEAR(held.total_s(), 2 * pr.total_s(), 1e-15);
  ASSERT_EQ(held.notes.size(), 1u);
  EXPECT_NE(held.notes[0].find("an anchor of 1.500 ms"), std::string::npos) << held.notes[0];
}

TEST(Predict, SaysWhenGemmWavesGoPastWhatTheCalibrationMeasured) {
  // Phi-2's layer at B 6, S 384, capacity 0.4 on h100-sxm-calibrated: the routed layer's
  // mlp_down is 6·154 = 924 rows × 2,560 columns, ⌈924/128⌉·⌈2560/128⌉ = 8·20 = 160 tiles
  // on 132 SMs: two waves, q = 264/160 = 1.65, above the largest factor the calibration's
  // rows had (its own max_wave_factor, recorded below 1.65).
  const hardware_spec hw = load_hardware(k_configs + "/hardware/h100-sxm-calibrated.json");
  const cost_model cost(hw, attention_impl::unfused);
  const model_spec m = parse_model(
      R"({"name": "phi-2-layer", "d_model": 2560, "n_layers": 2, "n_heads": 32, "n_kv_heads": 32, "d_ff": 10240,
          "vocab_size": 32000, "mlp": "gelu", "routing": {"capacity": 0.4, "schedule": "every_other"}})",
      "phi-2-layer.json");
  workload w;
  w.batch = 6;
  w.seq_len = 384;
  w.type = dtype::bf16;
  const prediction p = predict(m, dense_baseline(m), w, cost);
  ASSERT_TRUE(cost.calibration() && cost.calibration()->kernels);
  const double measured = cost.calibration()->kernels->max_wave_factor;
  ASSERT_GT(measured, 1.0);
  ASSERT_LT(measured, 1.65);
  EXPECT_NEAR(p.model.max_wave_factor, 264.0 / 160.0, 1e-12);
  EXPECT_GT(p.model.unmeasured_wave_s, 0.0);
  EXPECT_LT(p.model.unmeasured_wave_s, p.model.total_s);
  bool said = false;
  for (const std::string& n : p.notes) said = said || n.find("GEMM waves past what the calibration measured") == 0;
  EXPECT_TRUE(said);
  // At the calibration's own shapes (powers of two) nothing goes past it.
  workload at = w;
  at.batch = 8;
  at.seq_len = 512;
  EXPECT_DOUBLE_EQ(predict(load_model(k_configs + "/models/mod-220m.json"),
                           dense_baseline(load_model(k_configs + "/models/mod-220m.json")), at, cost)
                       .model.unmeasured_wave_s,
                   0.0);
}

TEST(Predict, DecodeUsesTheDecodeFlopModel) {
  const model_spec m = load_model(k_configs + "/models/mod-220m.json");
  const cost_model cost(load_hardware(k_configs + "/hardware/h100-sxm.json"));
  workload w = load(8, 2048, run_mode::decode);
  w.type = dtype::bf16;
  const prediction p = predict(m, w, cost);
  const flops_report f = evaluate_flops(m, w);
  EXPECT_EQ(p.model.matmul_flops, f.totals.matmul_flops);
  ASSERT_EQ(p.model.layers.size(), f.layers.size());
  EXPECT_EQ(p.model.layers[1].ops.front().op, modsim::op::predictor);  // routed layer (every_other)
  // One decode step is far cheaper than a 2048-token forward pass.
  EXPECT_LT(p.total_s(), predict(m, load(8, 2048), cost).total_s());
}

}  // namespace
}  // namespace modsim::sim
