// How a prediction prices attention (--attention fused|unfused; sim/cost/cost.hpp cost_model's
// attention, sim/cost/predict.hpp's attention fields). The datasheet figures are worked by hand
// below from the roofline law max(matmul/peak_matmul + other/peak_vector, bytes/bandwidth).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/model/flops.hpp"
#include "sim/cost/predict.hpp"

namespace modsim::sim {
namespace {

const std::string k_configs = std::string(MODSIM_SOURCE_DIR) + "/configs";

// Round numbers: 100 GFLOP/s matmul, 10 GFLOP/s vector, 10 GB/s, 4 SMs, the fixed 128×128 tile.
hardware_spec round_gpu() {
  hardware_spec h;
  h.name = "round-gpu";
  h.kind = hardware_kind::gpu;
  h.peak_matmul_flops = {100e9, 100e9, 100e9};
  h.peak_vector_flops = {10e9, 10e9, 10e9};
  h.memory_bandwidth_bytes_s = 10e9;
  h.sm_count = 4;
  h.kernel_launch_s = 3e-6;
  h.host_enqueue_s = 1e-6;
  return h;
}

// One sequence of n = 256 tokens, d_model 128, 2 heads of 64, bf16 (2 bytes).
op_shape small_attention() {
  op_shape s;
  s.batch = 1;
  s.tokens = 256;
  s.seq_len = 256;
  s.d_model = 128;
  s.n_heads = 2;
  s.d_ff = 512;
  s.elem_bytes = 2;
  return s;
}

double seconds(const cost_model& m, modsim::op op, const op_shape& s) {
  return m.time_of(cost_of(op, s), s, dtype::bf16).time_s;
}

TEST(AttentionChoice, DatasheetUnfusedIsTheThreeKernelsRooflines) {
  const op_shape s = small_attention();
  // The FLOP model's costs of the three kernels, by hand (n = L = 256, dq = dkv = 128, H = 2):
  //   attn_scores: 2·n·L·dq = 16 777 216 matmul; bytes 2·(n·dq + L·dkv + H·n·L) = 393 216
  //   attn_softmax: 5·H·n·L = 655 360 other; bytes 2·2·H·n·L = 524 288
  //   attn_values: as attn_scores
  EXPECT_EQ(cost_of(modsim::op::attn_scores, s).matmul_flops, 16'777'216);
  EXPECT_EQ(cost_of(modsim::op::attn_scores, s).bytes, 393'216);
  EXPECT_EQ(cost_of(modsim::op::attn_softmax, s).other_flops, 655'360);
  EXPECT_EQ(cost_of(modsim::op::attn_softmax, s).bytes, 524'288);
  EXPECT_EQ(cost_of(modsim::op::attn_values, s).matmul_flops, 16'777'216);
  // Rooflines: scores and values are compute-bound, 16 777 216 / 100e9 = 167.77216 µs (their
  // 8 and 4 output tiles fill the 4 SMs: no wave quantisation); softmax 655 360 / 10e9 =
  // 65.536 µs against 524 288 / 10e9 = 52.4288 µs of memory. Sum 401.08032 µs.
  const cost_model unfused(round_gpu(), attention_impl::unfused);
  EXPECT_EQ(unfused.attention(), attention_impl::unfused);
  EXPECT_FALSE(unfused.attention_measured());  // no calibration
  EXPECT_NEAR(seconds(unfused, modsim::op::attn_scores, s), 167.77216e-6, 1e-15);
  EXPECT_NEAR(seconds(unfused, modsim::op::attn_softmax, s), 65.536e-6, 1e-15);
  EXPECT_NEAR(seconds(unfused, modsim::op::attn_values, s), 167.77216e-6, 1e-15);
  const double sum = seconds(unfused, modsim::op::attn_scores, s) + seconds(unfused, modsim::op::attn_softmax, s) +
                     seconds(unfused, modsim::op::attn_values, s);
  EXPECT_NEAR(sum, 401.08032e-6, 1e-15);
  for (modsim::op op : {modsim::op::attn_scores, modsim::op::attn_softmax, modsim::op::attn_values})
    EXPECT_EQ(unfused.time_of(cost_of(op, s), s, dtype::bf16).kernels, 1) << to_string(op);
}

TEST(AttentionChoice, DatasheetFusedIsOneCausalKernel) {
  const op_shape s = small_attention();
  // The fused kernel: 4·H·dh·(n·L − n(n−1)/2) = 4·2·64·(65 536 − 32 640) = 16 842 752 matmul
  // FLOPs, 5·16 842 752 / (4·64) = 328 960 softmax FLOPs, 2·(2·n·dq + 2·L·dkv) = 262 144 bytes:
  // 168.42752 µs + 32.896 µs = 201.32352 µs of compute (the score GEMM's 8 tiles fill the SMs),
  // all under attn_scores; attn_softmax and attn_values take no time and launch nothing.
  const cost_model fused(round_gpu(), attention_impl::fused);
  const op_time scores = fused.time_of(cost_of(modsim::op::attn_scores, s), s, dtype::bf16);
  EXPECT_NEAR(scores.time_s, 201.32352e-6, 1e-15);
  EXPECT_EQ(scores.kernels, 1);
  for (modsim::op op : {modsim::op::attn_softmax, modsim::op::attn_values}) {
    const op_time t = fused.time_of(cost_of(op, s), s, dtype::bf16);
    EXPECT_EQ(t.time_s, 0.0) << to_string(op);
    EXPECT_EQ(t.kernels, 0) << to_string(op);
  }
  // Nothing said: fused on a GPU, unfused on a CPU (modsim's CPU backend has no fused kernel).
  EXPECT_EQ(cost_model(round_gpu()).attention(), attention_impl::fused);
  hardware_spec cpu = round_gpu();
  cpu.kind = hardware_kind::cpu;
  EXPECT_EQ(cost_model(cpu).attention(), attention_impl::unfused);
  EXPECT_EQ(default_attention(cpu), attention_impl::unfused);
}

// The shipped H100 calibration measured modsim's unfused kernels: asked for fused, only the
// attention ops change, and they become the datasheet roofline of the fused kernel.
TEST(AttentionChoice, CalibratedH100FusedChangesOnlyTheAttentionOps) {
  const hardware_spec cal = load_hardware(k_configs + "/hardware/h100-sxm-calibrated.json");
  hardware_spec plain = cal;
  plain.calibration_json.clear();
  // A calibrated file's datasheet-roofline ops keep the tiling its key names (none: fixed128);
  // the tile chooser is the default of uncalibrated files only.
  plain.roofline_gemm_tiles = cal.gemm_tiles;
  const model_spec m = load_model(k_configs + "/models/mod-220m.json");
  workload w;
  w.batch = 1;
  w.seq_len = 2048;
  w.type = dtype::bf16;
  const cost_model fused(cal, attention_impl::fused), unfused(cal, attention_impl::unfused);
  const cost_model datasheet(plain, attention_impl::fused);
  ASSERT_EQ(cost_model(cal).attention(), attention_impl::unfused);  // what its rows ran
  EXPECT_TRUE(unfused.attention_measured());
  EXPECT_FALSE(fused.attention_measured());

  const prediction f = predict(m, w, fused), u = predict(m, w, unfused), d = predict(m, w, datasheet);
  ASSERT_EQ(f.model.layers.size(), u.model.layers.size());
  int attention_ops = 0;
  for (std::size_t li = 0; li < f.model.layers.size(); ++li) {
    const auto& fl = f.model.layers[li].ops;
    const auto& ul = u.model.layers[li].ops;
    const auto& dl = d.model.layers[li].ops;
    ASSERT_EQ(fl.size(), ul.size());
    for (std::size_t oi = 0; oi < fl.size(); ++oi) {
      ASSERT_EQ(fl[oi].op, ul[oi].op);
      const std::string what = "layer " + std::to_string(li) + " " + std::string(to_string(fl[oi].op));
      if (fl[oi].op_class != "attn_core") {
        EXPECT_EQ(fl[oi].time_s, ul[oi].time_s) << what;
        EXPECT_EQ(fl[oi].kernels, ul[oi].kernels) << what;
        EXPECT_TRUE(fl[oi].calibrated) << what;
        continue;
      }
      ++attention_ops;
      EXPECT_FALSE(fl[oi].calibrated) << what;
      EXPECT_TRUE(ul[oi].calibrated) << what;
      EXPECT_EQ(fl[oi].time_s, dl[oi].time_s) << what;  // the datasheet's fused kernel
      EXPECT_EQ(fl[oi].kernels, fl[oi].op == modsim::op::attn_scores ? 1 : 0) << what;
    }
  }
  EXPECT_EQ(attention_ops, 3 * static_cast<int>(f.model.layers.size()));
  EXPECT_EQ(f.model.lm_head.time_s, u.model.lm_head.time_s);

  // The fields and the band: measured, the band; not measured, none, and a note says why.
  EXPECT_EQ(u.attention, attention_impl::unfused);
  EXPECT_TRUE(u.attention_measured);
  EXPECT_TRUE(u.expected_error.has_value());
  EXPECT_EQ(f.attention, attention_impl::fused);
  EXPECT_FALSE(f.attention_measured);
  EXPECT_FALSE(f.expected_error.has_value());
  EXPECT_FALSE(f.band.has_value());
  bool said = false;
  for (const std::string& n : f.notes) said = said || n.find("never measured by this calibration") != std::string::npos;
  EXPECT_TRUE(said);
  // The share: the attention ops' time over the total.
  double attn = 0;
  for (const auto& l : f.model.layers)
    for (const auto& o : l.ops)
      if (o.op_class == "attn_core") attn += o.time_s;
  EXPECT_NEAR(f.attention_share, attn / f.total_s(), 1e-12);
  EXPECT_GT(u.attention_share, f.attention_share);
}

}  // namespace
}  // namespace modsim::sim
