// sim/cost/decode_fit.cpp and sim/des/decode.cpp: the features of a decode row counted by hand, the
// fit recovering a known law, the executor's step time equal to the fitted sum, the forced
// load and the padded capacity's default.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "core/error.hpp"
#include "sim/cost/calibrate.hpp"
#include "sim/cost/decode_fit.hpp"
#include "sim/des/decode.hpp"
#include "round_cpu.hpp"

namespace modsim::sim {
namespace {

using test::round_cpu;

measured_sample decode_row(modsim::op op, std::int64_t batch, std::int64_t context, int d, double capacity,
                           const std::string& routing, double seconds) {
  measured_sample p;
  p.op = op;
  p.type = dtype::fp32;
  p.batch = batch;
  p.seq_len = context;
  p.d_model = d;
  p.n_heads = 4;
  p.n_kv_heads = 4;
  p.d_ff = 2 * d;
  p.capacity = capacity;
  p.decode_routing = modsim::find_decode_run(routing).value();
  p.pad_capacity = routing == "pad" ? des::default_pad_capacity(capacity, batch) : 0;
  p.predictor_hidden = 8;
  p.median_s = seconds;
  p.backend = modsim::backend_kind::cpu;
  p.device = "test cpu";
  p.key = std::string(modsim::to_string(op)) + std::to_string(batch) + "|" + std::to_string(context) + "|" +
          std::to_string(d) + routing;
  p.where = "t.csv:1";
  return p;
}

TEST(DecodeFit, FeaturesOfADenseLayerCountedByHand) {
  // B = 2 tokens over L = 16 + 1 keys, d 32, 4 heads (d_q = d_kv = 32), d_ff 64, gelu, fp32.
  const measured_sample s = with_costs(decode_row(modsim::op::decode_dense, 2, 16, 32, 1.0, "sync", 1e-3));
  const decode_features f = features_of_decode(s);
  // The FLOP columns are the attention kernels' (a weight kernel's FLOPs are carried by its
  // rows): scores and values 2·2B·(L+1)·d_q = 4·2·17·32.
  EXPECT_EQ(f.matmul_flops, 4.0 * 1088);
  // The K and V caches read by scores and values: 2 · e·B·(L+1)·d_kv, plus what the
  // attention formulas add for q and the output (counted in the kv_bytes column too).
  EXPECT_GE(f.kv_bytes, 2.0 * 4 * 2 * 17 * 32);
  // attn_norm, qkv_proj, attn_scores, attn_softmax, attn_values, out_proj, mlp_norm, mlp_up,
  // mlp_act, mlp_down: ten ops, no read-back.
  EXPECT_EQ(f.kernels, 10.0);
  EXPECT_EQ(f.syncs, 0.0);
  // The weights are read once: at least 4·(d·3d + d·d + 2·d·2d) bytes outside attention.
  EXPECT_GE(f.weight_bytes(), 4.0 * (32 * 96 + 32 * 32 + 2 * 32 * 64));
  for (const auto& [bytes, rows] : f.weight) EXPECT_EQ(rows, 2.0);  // every weight kernel computes B = 2 rows
  // A routed layer in sync mode adds the predictor, the read-back (launched as a kernel),
  // gather and scatter.
  const decode_features r =
      features_of_decode(with_costs(decode_row(modsim::op::decode_mod, 8, 64, 32, 0.25, "sync", 1e-3)));
  EXPECT_EQ(r.kernels, 14.0);
  EXPECT_EQ(r.syncs, 1.0);
  // pad: no read-back.
  EXPECT_EQ(features_of_decode(with_costs(decode_row(modsim::op::decode_mod, 8, 64, 32, 0.25, "pad", 1e-3))).syncs,
            0.0);
}

TEST(DecodeFit, RecoversAKnownLawAndTheExecutorAddsItUp) {
  // Rows whose times follow a known law exactly: weight bytes at w(rows) = 1 ns · (1 + log2 rows / 2)
  // per byte (linear in log2 rows: the knots' hats recover it), 2 ns per KV byte, 5 µs per kernel,
  // 40 µs per read-back, no FLOP terms.
  auto law_w = [](double rows) { return 1e-9 * (1.0 + 0.5 * std::log2(rows)); };
  std::vector<measured_sample> samples;
  for (std::int64_t b : {1, 4, 16})
    for (std::int64_t ctx : {64, 512})
      for (int d : {32, 64})
        for (const modsim::op op : {modsim::op::decode_dense, modsim::op::decode_mod})
          for (const char* routing : {"sync", "pad"}) {
            if (op == modsim::op::decode_dense && std::string(routing) == "pad") continue;
            measured_sample s = with_costs(decode_row(op, b, ctx, d, 0.5, routing, 1.0));
            const decode_features f = features_of_decode(s);
            double w = 0;
            for (const auto& [bytes, rows] : f.weight) w += law_w(rows) * bytes;
            s.median_s = w + 2e-9 * f.kv_bytes + 5e-6 * f.kernels + 40e-6 * f.syncs;
            samples.push_back(s);
          }
  std::vector<std::string> keys;
  const std::vector<decode_fit> fits = fit_decode(samples, keys);
  ASSERT_EQ(fits.size(), 1u);
  const decode_fit& d = fits[0];
  EXPECT_EQ(d.rows, static_cast<int>(samples.size()));
  EXPECT_EQ(keys.size(), samples.size());
  ASSERT_FALSE(d.weight_log2_rows.empty());
  EXPECT_EQ(d.weight_log2_rows.front(), 0.0);  // the smallest kernels compute one row (B = 1)
  for (std::size_t k = 0; k < d.weight_log2_rows.size(); ++k)
    EXPECT_NEAR(d.weight_s_per_byte[k], law_w(std::exp2(d.weight_log2_rows[k])), 1e-12) << k;
  EXPECT_NEAR(calibration::weight_rate(d, 3.0), law_w(3.0), 1e-12);  // between knots
  EXPECT_NEAR(d.kv_s_per_byte, 2e-9, 1e-12);
  EXPECT_NEAR(d.kernel_s, 5e-6, 1e-9);
  EXPECT_NEAR(d.sync_s, 40e-6, 1e-8);
  EXPECT_LT(d.rms_rel_error, 1e-6);

  // The whole calibration carries the fit; a decode row is then predicted by the executor as
  // the same sum (a CPU: no host enqueue cost).
  const calibration c = fit_calibration(round_cpu(), samples, {}, "2026-01-01T00:00:00Z");
  ASSERT_NE(c.decode_for(dtype::fp32), nullptr);
  EXPECT_TRUE(c.curves.empty());
  const cost_model model = with_calibration(round_cpu(), c);
  for (const measured_sample& s : samples) {
    const block_prediction p = predict_sample(s, model);
    EXPECT_NEAR(p.total_s / s.median_s, 1.0, 1e-6) << s.key;
  }
  // The JSON round trip keeps the fit and its row keys.
  const calibration back = parse_calibration(calibration_to_json(c), "c.json");
  ASSERT_NE(back.decode_for(dtype::fp32), nullptr);
  EXPECT_DOUBLE_EQ(back.decode_for(dtype::fp32)->kv_s_per_byte, c.decode_for(dtype::fp32)->kv_s_per_byte);
  EXPECT_EQ(back.decode_keys, c.decode_keys);
}

TEST(DecodeFit, AWholeStepMayStreamFasterThanItsLayersTimedAlone) {
  // Layers timed alone follow w = 1 ns per weight byte at every row count, 2 ns per KV byte,
  // 5 µs per kernel and 40 µs per read-back; whole steps of a two-layer model (one routed)
  // with an LM head stream every byte 0.15 ns faster. The fit recovers the negative term and
  // the executor predicts the steps with it.
  const double w = 1e-9, kv = 2e-9, kernel = 5e-6, sync = 40e-6, whole = -0.15e-9;
  auto law = [&](const measured_sample& s) {
    const decode_features f = features_of_decode(s);
    const double t = w * f.weight_bytes() + kv * f.kv_bytes + kernel * f.kernels + sync * f.syncs;
    return f.whole_model ? t + whole * (f.weight_bytes() + f.kv_bytes) : t;
  };
  model_spec m = des::decode_layer_model(32, 4, 4, 64, mlp_kind::gelu, true, 0.5, 8);
  m.name = "two-layer";
  m.n_layers = 2;
  m.vocab_size = 96;
  m.routing->sched.kind = schedule_kind::every_other;
  const auto model = std::make_shared<const model_spec>(m);
  std::vector<measured_sample> samples;
  for (std::int64_t b : {1, 4, 16})
    for (std::int64_t ctx : {64, 512}) {
      for (const modsim::op op : {modsim::op::decode_dense, modsim::op::decode_mod, modsim::op::decode_step}) {
        measured_sample s = decode_row(op, b, ctx, 32, 0.5, "sync", 1.0);
        if (op == modsim::op::decode_step) {
          s.model_name = m.name;
          s.model = model;
        }
        s = with_costs(s);
        s.median_s = law(s);
        samples.push_back(s);
      }
    }
  std::vector<std::string> keys;
  const std::vector<decode_fit> fits = fit_decode(samples, keys);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_NEAR(fits[0].model_s_per_byte, whole, 1e-12);
  for (double s_per_byte : fits[0].weight_s_per_byte) EXPECT_NEAR(s_per_byte, w, 1e-12);
  const calibration c = fit_calibration(round_cpu(), samples, {}, "2026-01-01T00:00:00Z");
  const cost_model cm = with_calibration(round_cpu(), c);
  for (const measured_sample& s : samples) EXPECT_NEAR(predict_sample(s, cm).total_s / s.median_s, 1.0, 1e-6) << s.key;
  // The JSON keeps the sign; a term that would make weight reads free is refused.
  EXPECT_NEAR(parse_calibration(calibration_to_json(c), "c.json").decode_for(dtype::fp32)->model_s_per_byte, whole,
              1e-15);
  calibration bad = c;
  bad.decode[0].model_s_per_byte = -1.5e-9;
  EXPECT_THROW(parse_calibration(calibration_to_json(bad), "c.json"), modsim::error);
}

TEST(DecodeCase, ForcedLoadAndPadDefaultByHand) {
  // B = 8 at capacity 1/8: expected 1 routed token, sd sqrt(8·(1/8)·(7/8)) = 0.935; three of
  // them above: 1 + 2.806 = 3.8, rounded up to 4 rows, 4/8 of the batch.
  const double pc = des::default_pad_capacity(0.125, 8);
  EXPECT_DOUBLE_EQ(pc, 0.5);
  EXPECT_EQ(routed_tokens(pc, 8), 4);
  // B = 64 at 1/8: 8 + 3·sqrt(7) = 15.9 → 16 rows.
  EXPECT_DOUBLE_EQ(des::default_pad_capacity(0.125, 64), 16.0 / 64.0);
  EXPECT_DOUBLE_EQ(des::default_pad_capacity(1.0, 64), 1.0);
  EXPECT_DOUBLE_EQ(des::default_pad_capacity(0.5, 1), 1.0);  // 0.5 + 1.5 > 1
  // A routed layer at capacity 1/4 over context 100: 25 cached keys; 3 forced tokens of B 8 in
  // pad mode with 2 rows: 2 enter.
  const measured_sample p = decode_row(modsim::op::decode_mod, 8, 100, 32, 0.375, "pad", 1e-3);
  des::decode_case c = des::decode_case_of(p);
  EXPECT_EQ(c.routed, 3);
  c.model.routing->capacity = 0.25;
  c.pad_capacity = 0.25;
  des::device_model zero;
  zero.time_of = [](const op_cost&, const op_shape&) { return op_time{}; };
  const des::step_builder b(c.model, dtype::fp32, zero);
  const des::step_load load = des::forced_decode_load(b, c);
  ASSERT_EQ(load.layers.size(), 1u);
  EXPECT_EQ(load.layers[0].pad_slots, 2);
  EXPECT_EQ(load.layers[0].decode_routed, 2);
  EXPECT_EQ(load.layers[0].decode_keys, 2 * 26);
  EXPECT_EQ(load.sampled, 0);  // no LM head for a single layer
  // graph with sync cannot be captured.
  c.routing = decode_routing::sync;
  c.cuda_graph = true;
  EXPECT_THROW(des::decode_timeline(c, dtype::fp32, zero), error);
}

}  // namespace
}  // namespace modsim::sim
