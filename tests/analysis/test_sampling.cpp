// analysis/sampling.hpp: the one decode step time and the sampling map. Expected values are
// worked by hand on a device whose every op takes 1 µs (so a step is a count of kernels), from
// the binomial rule of sim::des::pad_rows, or are the other face's number (predict = simulate).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "analysis/analysis.hpp"
#include "analysis/sampling.hpp"
#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/model/flops.hpp"
#include "sim/cost/predict.hpp"
#include "sim/des/step.hpp"

namespace {

using namespace modsim;
using analysis::decode_component;

// Two layers, layer 1 routed (every_other) at `capacity`, GeLU MLP, a causal predictor.
sim::model_spec tiny(double capacity) {
  sim::model_spec m;
  m.name = "tiny";
  m.d_model = 64;
  m.n_layers = 2;
  m.n_heads = 4;
  m.n_kv_heads = 4;
  m.d_head = 16;
  m.d_ff = 256;
  m.vocab_size = 100;
  sim::routing_spec r;
  r.capacity = capacity;
  r.sched.kind = sim::schedule_kind::every_other;
  m.routing = r;
  return m;
}

// Every op 1 µs and one kernel; no launch or host cost; a routed-count round trip 5 µs.
sim::des::device_model unit_device() {
  sim::des::device_model d;
  d.time_of = [](const sim::op_cost&, const sim::op_shape&) {
    sim::op_time t;
    t.time_s = 1e-6;
    t.kernels = 1;
    return t;
  };
  d.launch_s = 0;
  d.host_enqueue_s = 0;
  d.d2h_sync_s = 5e-6;
  return d;
}

// The unit device as the sampling map takes it; `memory_bytes` 0: unknown, every cell fits.
analysis::sampling_device unit(double memory_bytes = 0) {
  analysis::sampling_device d;
  d.model = unit_device();
  d.name = "unit";
  d.memory_bytes = memory_bytes;
  return d;
}

TEST(PadRows, DefaultIsTheExpectedCountPlusThreeSigmaRoundedUp) {
  using sim::des::pad_rows;
  // c = 1/8: B = 8: 1 + 3·sqrt(8·(1/8)·(7/8)) = 1 + 2.806 → 4; B = 64: 8 + 3·sqrt(7) = 15.94 → 16;
  // B = 256: 32 + 3·sqrt(28) = 47.87 → 48; B = 1: 0.125 + 0.99 → 2, at most the batch → 1.
  EXPECT_EQ(pad_rows(std::nullopt, 0.125, 8), 4);
  EXPECT_EQ(pad_rows(std::nullopt, 0.125, 64), 16);
  EXPECT_EQ(pad_rows(std::nullopt, 0.125, 256), 48);
  EXPECT_EQ(pad_rows(std::nullopt, 0.125, 1), 1);
  // c = 1/2, B = 4: 2 + 3 = 5 → the whole batch; c = 1: no spread, the batch.
  EXPECT_EQ(pad_rows(std::nullopt, 0.5, 4), 4);
  EXPECT_EQ(pad_rows(std::nullopt, 1.0, 16), 16);
  // An explicit pad capacity: ⌈0.25 · 8⌉ = 2 whatever the layer's capacity.
  EXPECT_EQ(pad_rows(0.25, 0.125, 8), 2);
  EXPECT_THROW(sim::des::check_pad_capacity(0.0), modsim::error);
  EXPECT_THROW(sim::des::check_pad_capacity(1.5), modsim::error);
}

TEST(DecodeStepTime, CountsKernelsAndTheSyncOnAUnitDevice) {
  // Capacity 1: every token routes. Sync: layer 0 runs attn_norm, qkv, 3 attention, out_proj,
  // mlp_norm, up, act, down (10 µs); layer 1 the predictor, the 5 µs round trip, gather, the same
  // 10 ops and scatter (13 µs + 5 µs); the LM head 1 µs. With no host cost nothing idles:
  // 24 µs of ops + 5 µs of sync = 29 µs.
  const sim::des::step_builder b(tiny(1.0), sim::dtype::bf16, unit_device());
  analysis::decode_step_options o;
  o.routing = decode_routing::sync;
  const analysis::decode_step st = analysis::decode_step_time(b, 4, 64, o);
  EXPECT_NEAR(st.step_s(), 29e-6, 1e-12);
  const analysis::decode_breakdown& br = st.breakdown;
  EXPECT_NEAR(br.kv_read_s, 6e-6, 1e-12);      // 3 attention ops × 2 layers
  EXPECT_NEAR(br.weight_read_s, 9e-6, 1e-12);  // qkv, out, up, down × 2 + the LM head
  EXPECT_NEAR(br.predictor_s, 3e-6, 1e-12);    // predictor, gather, scatter
  EXPECT_NEAR(br.elementwise_s, 6e-6, 1e-12);  // 2 norms + the activation, × 2
  EXPECT_NEAR(br.sync_s, 5e-6, 1e-12);         // the round trip
  EXPECT_NEAR(br.launch_host_s, 0.0, 1e-12);
  EXPECT_EQ(st.decisions, 4);
  EXPECT_EQ(st.routed, 4);

  // Pad: no round trip, the same ops: 24 µs.
  o.routing = decode_routing::pad;
  const analysis::decode_step pad = analysis::decode_step_time(b, 4, 64, o);
  EXPECT_NEAR(pad.step_s(), 24e-6, 1e-12);
  EXPECT_NEAR(pad.breakdown.sync_s, 0.0, 1e-12);
}

TEST(SamplingMap, NamesTheSyncAsWhatKeepsTheTinyModelSlow) {
  // Baseline (routing removed): 2 × 10 + 1 = 21 µs. Sync MoD 29 µs: ratio 29/21, not 1.5×. The
  // excess model_i − baseline_i / 1.5 per component: KV 6 − 4 = 2, weights 9 − 6 = 3,
  // predictor 3 − 0 = 3, norms 6 − 4 = 2, sync 5 − 0 = 5, launches 0: the sync decides.
  analysis::sampling_request r;
  r.batches = {4};
  r.contexts = {64, 128};
  r.strategies = {{decode_routing::sync, false}, {decode_routing::pad, false}};
  r.draws = 2;
  r.threads = 1;
  const sim::model_spec m = tiny(1.0);
  const analysis::sampling_map map =
      analysis::make_sampling_map(m, sim::dense_baseline(m), true, unit(), sim::dtype::bf16, r);
  ASSERT_EQ(map.strategies.size(), 2u);
  const analysis::sampling_cell& c = map.cell(0, 0, 1);
  EXPECT_EQ(c.batch, 4);
  EXPECT_EQ(c.context, 128);
  EXPECT_NEAR(c.model_s, 29e-6, 1e-12);
  EXPECT_NEAR(c.baseline_s, 21e-6, 1e-12);
  EXPECT_FALSE(c.reaches);
  EXPECT_EQ(c.dominant, decode_component::sync);
  EXPECT_NEAR(c.dominant_s, 5e-6, 1e-12);
  EXPECT_EQ(map.strategies[0].reached, 0);
  EXPECT_NEAR(map.cell(1, 0, 0).model_s, 24e-6, 1e-12);
  ASSERT_EQ(map.verdict.size(), 2u);
  EXPECT_NE(map.verdict[0].find("never reaches 1.5x"), std::string::npos) << map.verdict[0];
}

TEST(SamplingMap, CellsThatDoNotFitAreMarkedAndLeftOutOfTheVerdict) {
  // tiny(1) decodes every token at every layer, so its KV cache is the baseline's and its
  // footprint the larger (the predictor's weights). bf16, unfused attention, per sequence:
  // KV 2 layers × (64 + 1) × 2 × d_kv 64 × 2 bytes = 33,280; one step's activations per
  // layer 1·(3·64 + 2·64 + 256)·2 = 1,152 plus scores H·(64 + 1)·2 = 520, logits 100·2 = 200.
  // Batch 4: 133,120 + 4·1,672 + 4·200 = 140,608; batch 8: 266,240 + 8·1,672 + 8·200 = 281,216.
  const sim::model_spec m = tiny(1.0);
  const double weights = 2.0 * double(sim::parameter_count(m));
  analysis::sampling_request r;
  r.batches = {8, 4};  // the larger batch first: without the memory check it would be the best (a tie)
  r.contexts = {64};
  r.strategies = {{decode_routing::sync, false}};
  r.draws = 1;
  r.threads = 1;
  const analysis::sampling_map all =
      analysis::make_sampling_map(m, sim::dense_baseline(m), true, unit(), sim::dtype::bf16, r);
  EXPECT_EQ(all.strategies[0].best, 0);
  EXPECT_EQ(all.strategies[0].excluded, 0);
  EXPECT_TRUE(all.cell(0, 0, 0).fits);
  EXPECT_EQ(all.verdict[0].find("excluded"), std::string::npos) << all.verdict[0];

  const analysis::sampling_map map =
      analysis::make_sampling_map(m, sim::dense_baseline(m), true, unit(weights + 200000), sim::dtype::bf16, r);
  const analysis::sampling_cell& b8 = map.cell(0, 0, 0);
  const analysis::sampling_cell& b4 = map.cell(0, 1, 0);
  EXPECT_DOUBLE_EQ(b8.needs_bytes, weights + 281216);
  EXPECT_DOUBLE_EQ(b4.needs_bytes, weights + 140608);
  EXPECT_FALSE(b8.fits);
  EXPECT_TRUE(b4.fits);
  EXPECT_EQ(map.strategies[0].excluded, 1);
  EXPECT_EQ(map.strategies[0].best, 1);  // batch 4, the one that fits
  EXPECT_NE(map.verdict[0].find("at batch 4, context 64"), std::string::npos) << map.verdict[0];
  EXPECT_NE(map.verdict[0].find("in the 1 cell that fits in memory"), std::string::npos) << map.verdict[0];
  EXPECT_NE(map.verdict[0].find("1 of 2 cells excluded: they do not fit in"), std::string::npos) << map.verdict[0];

  // Nothing fits: no best cell, and the verdict says so.
  const analysis::sampling_map none =
      analysis::make_sampling_map(m, sim::dense_baseline(m), true, unit(weights), sim::dtype::bf16, r);
  EXPECT_EQ(none.strategies[0].best, -1);
  EXPECT_EQ(none.strategies[0].excluded, 2);
  EXPECT_EQ(none.strategies[0].reached, 0);
  EXPECT_NE(none.verdict[0].find("no cell fits in memory; 2 of 2 cells excluded"), std::string::npos)
      << none.verdict[0];
}

TEST(SamplingMap, RefusesEmptyAxesAndTargetsBelowOne) {
  const sim::model_spec m = tiny(0.5);
  analysis::sampling_request r;
  r.batches = {};
  EXPECT_THROW(analysis::make_sampling_map(m, sim::dense_baseline(m), true, unit(), sim::dtype::bf16, r),
               modsim::error);
  r = {};
  r.target_speedup = 1.0;
  EXPECT_THROW(analysis::make_sampling_map(m, sim::dense_baseline(m), true, unit(), sim::dtype::bf16, r),
               modsim::error);
}

TEST(ChooseDecodeRouting, TakesTheFasterPredictedStrategyUnlessBothAreMeasured) {
  // A hand-made 1 × 1 map: sync 2 ms, pad 1 ms at batch 64, context 512.
  analysis::sampling_map m;
  m.batches = {64};
  m.contexts = {512};
  analysis::sampling_strategy_map sync, pad;
  sync.strategy = {decode_routing::sync, false};
  pad.strategy = {decode_routing::pad, false};
  sync.cells.resize(1);
  pad.cells.resize(1);
  sync.cells[0].model_s = 2e-3;
  pad.cells[0].model_s = 1e-3;
  m.strategies = {sync, pad};
  // (40, 700) is nearest (64, 512) on a log scale.
  const analysis::routing_choice p = analysis::choose_decode_routing(m, 40, 700, false, {});
  EXPECT_EQ(p.routing, decode_routing::pad);
  EXPECT_EQ(p.other, decode_routing::sync);
  EXPECT_DOUBLE_EQ(p.step_s, 1e-3);
  EXPECT_DOUBLE_EQ(p.other_step_s, 2e-3);
  EXPECT_FALSE(p.measured);
  // Measured at that cell, sync faster: measurements win.
  const std::vector<analysis::sampling_measurement> measured = {{64, 512, decode_routing::sync, 0.5e-3, 1e-3},
                                                                {64, 512, decode_routing::pad, 0.7e-3, 1e-3}};
  const analysis::routing_choice q = analysis::choose_decode_routing(m, 64, 512, false, measured);
  EXPECT_EQ(q.routing, decode_routing::sync);
  EXPECT_DOUBLE_EQ(q.step_s, 0.5e-3);
  EXPECT_TRUE(q.measured);
  // Only one of them measured: the prediction decides.
  const analysis::routing_choice r = analysis::choose_decode_routing(m, 64, 512, false, {measured[0]});
  EXPECT_EQ(r.routing, decode_routing::pad);
  EXPECT_FALSE(r.measured);
}

TEST(OneDecodePath, PredictTotalIsTheMeanOfTheSimulatedDecodeSteps) {
  // mod-220m on the H100 datasheet, batch 8, context 2048: the prediction's total is the mean of
  // the simulated steps of the 8 routing draws (seeds 1..8, summed here one by one), its dense
  // total the baseline's one step (it routes nothing: nothing is drawn), the timeline the first
  // draw; the op rows and the overhead add up.
  const sim::model_spec m = sim::load_model(std::string(MODSIM_SOURCE_DIR) + "/configs/models/mod-220m.json");
  const sim::hardware_spec hw = sim::load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json");
  sim::workload w;
  w.batch = 8;
  w.seq_len = 2048;
  w.run = sim::run_mode::decode;
  w.type = sim::dtype::bf16;
  const sim::cost_model cost(hw);
  for (const decode_routing routing : {decode_routing::sync, decode_routing::pad}) {
    analysis::scenario s;
    analysis::timeline_request& q = s.timeline.emplace();
    q.routing = routing;
    q.fastest = false;
    const analysis::analysis_result a = analysis::analyze({m, w, hw, std::nullopt}, s);
    ASSERT_TRUE(a.prediction && a.timeline && a.decode_choice);
    EXPECT_EQ(a.decode_choice->strategy.routing, routing);
    EXPECT_FALSE(a.decode_choice->fastest);
    analysis::decode_step_options o;
    o.routing = routing;
    double sum = 0;
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      o.seed = seed;
      sum += analysis::decode_step_time(m, cost, w.type, 8, 2048, o).step_s();
    }
    EXPECT_DOUBLE_EQ(a.prediction->total_s(), sum / 8);
    o.seed = 1;
    EXPECT_DOUBLE_EQ(a.timeline->summary.step_s, analysis::decode_step_time(m, cost, w.type, 8, 2048, o).step_s());
    EXPECT_DOUBLE_EQ(a.prediction->dense_total_s(),
                     analysis::decode_step_time(sim::dense_baseline(m), cost, w.type, 8, 2048, o).step_s());
    double ops = a.prediction->model.lm_head.time_s;
    for (const auto& l : a.prediction->model.layers) ops += l.time_s;
    EXPECT_NEAR(ops + a.prediction->overhead_s(), a.prediction->total_s(), 1e-12);
    ASSERT_TRUE(a.decode);
    EXPECT_NEAR(a.decode->total(), a.timeline->summary.step_s, 1e-12);
  }
}

TEST(OneDecodePath, BandAndStandInSharesComeFromThePrintedTimes) {
  // mod-60m on the calibrated CPU, decode batch 4, context 512: the predictor is timed by the
  // router's curve and the lm_head by mlp_up's. Each stand-in's share is summed here from the op
  // rows the prediction prints (the simulated step's), over its printed total, and the band is
  // the calibration's band at that total per layer with those shares.
  const sim::model_spec m = sim::load_model(std::string(MODSIM_SOURCE_DIR) + "/configs/models/mod-60m.json");
  const sim::hardware_spec hw =
      sim::load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/cpu-calibrated.json");
  sim::workload w;
  w.batch = 4;
  w.seq_len = 512;
  w.run = sim::run_mode::decode;
  w.type = sim::dtype::fp32;
  const analysis::analysis_result a = analysis::analyze({m, w, hw, std::nullopt}, analysis::scenario{});
  ASSERT_TRUE(a.prediction && a.prediction->band);
  const sim::prediction& p = *a.prediction;
  std::map<std::pair<std::string, std::string>, double> stand_in_s;
  auto add = [&](const sim::op_prediction& o) {
    if (o.calibrated && o.calibrated_as != o.op)
      stand_in_s[{std::string(modsim::to_string(o.op)), std::string(sim::curve_name(o.calibrated_as))}] += o.time_s;
  };
  for (const auto& l : p.model.layers)
    for (const auto& o : l.ops) add(o);
  add(p.model.lm_head);
  ASSERT_EQ(stand_in_s.size(), 2u);
  EXPECT_TRUE(stand_in_s.count({"predictor", "router"}));
  EXPECT_TRUE(stand_in_s.count({"lm_head", "mlp_up"}));
  ASSERT_EQ(p.band->stand_ins.size(), stand_in_s.size());
  std::vector<sim::stand_in_use> uses;
  for (const auto& x : p.band->stand_ins) {
    const double printed = stand_in_s.at({x.op, x.as}) / p.total_s();
    EXPECT_NEAR(x.share, printed, 1e-12) << x.op;
    uses.push_back({*modsim::find_op(x.op), *modsim::find_op(x.as), printed});
  }
  const sim::cost_model cost(hw);
  const std::optional<sim::error_band> band =
      sim::band_for(*cost.calibration(), sim::values_of(m, w), p.total_s() / double(p.model.layers.size()), true, uses);
  ASSERT_TRUE(band);
  EXPECT_NEAR(p.band->p90_pct, band->p90_pct, 1e-9);
}

TEST(Sampling, ServingKeepsTheRunWithNoDropsThenTheLowerTpot) {
  using analysis::serving_routing_trial;
  // pad is faster but drops tokens: sync, which drops none, is kept.
  analysis::serving_routing_choice c = analysis::choose_serving_routing(
      {{decode_routing::sync, 2.0e-3, 0, 4.6}, {decode_routing::pad, 1.5e-3, 18, 4.6}});
  EXPECT_EQ(c.routing, decode_routing::sync);
  ASSERT_EQ(c.trials.size(), 2u);
  EXPECT_NE(c.why.find("18 dropped"), std::string::npos) << c.why;
  // Neither drops: the lower TPOT p50.
  c = analysis::choose_serving_routing({{decode_routing::sync, 2.0e-3, 0, 16}, {decode_routing::pad, 1.5e-3, 0, 16}});
  EXPECT_EQ(c.routing, decode_routing::pad);
  // Both drop: still the lower TPOT p50.
  c = analysis::choose_serving_routing({{decode_routing::sync, 1.0e-3, 3, 16}, {decode_routing::pad, 1.5e-3, 1, 16}});
  EXPECT_EQ(c.routing, decode_routing::sync);
  EXPECT_THROW(analysis::choose_serving_routing({}), modsim::error);
}

}  // namespace
