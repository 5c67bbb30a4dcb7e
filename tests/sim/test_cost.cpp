// Tests of the cost model (sim/cost/cost.cpp). Expected values are computed by hand in the
// comments from the roofline law and the curve definition in sim/cost/cost.hpp.
#include "sim/cost/cost.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.hpp"

namespace modsim::sim {
namespace {

// Round numbers: 100 GFLOP/s matmul, 10 GFLOP/s vector, 10 GB/s.
hardware_spec round_cpu() {
  hardware_spec h;
  h.name = "round";
  h.source_file = "round.json";
  h.kind = hardware_kind::cpu;
  h.peak_matmul_flops = {100e9, 100e9, 100e9};
  h.peak_vector_flops = {10e9, 10e9, 10e9};
  h.memory_bandwidth_bytes_s = 10e9;
  h.sm_count = 2;
  h.kernel_launch_s = 3e-6;
  h.host_enqueue_s = 1e-6;
  return h;
}

op_cost cost(modsim::op op, std::int64_t mm, std::int64_t other, std::int64_t bytes) {
  return op_cost{op, mm, other, bytes};
}

calibration one_curve_calibration(const hardware_spec& h) {
  calibration c;
  c.date = "2025-01-01T00:00:00Z";
  c.device = "test device";
  c.backend = modsim::backend_kind::cpu;
  c.sources.push_back({"m.csv", 10, 8});
  efficiency_curve e;
  e.op = modsim::op::attn_norm;
  e.type = dtype::fp32;
  e.fixed_s = 2e-6;
  e.log10_work = {-6, -4};
  e.inv_efficiency = {4, 2};
  e.samples = 8;
  c.curves.push_back(e);
  c.launch_s = 5e-6;
  c.launch_source = "test";
  c.peak_matmul_fp32 = h.peak_matmul_flops.fp32;
  c.peak_matmul_bf16 = h.peak_matmul_flops.bf16;
  c.peak_matmul_fp16 = h.peak_matmul_flops.fp16;
  c.peak_vector_fp32 = h.peak_vector_flops.fp32;
  c.peak_vector_bf16 = h.peak_vector_flops.bf16;
  c.peak_vector_fp16 = h.peak_vector_flops.fp16;
  c.memory_bandwidth_bytes_s = h.memory_bandwidth_bytes_s;
  return c;
}

TEST(Cost, UncalibratedTimeIsTheDatasheetRoofline) {
  const cost_model m(round_cpu());
  EXPECT_FALSE(m.calibrated());
  EXPECT_NE(m.label().find("datasheet roofline"), std::string::npos);
  const op_shape s;
  // Compute-bound: 2e9/100e9 + 1e8/10e9 = 0.02 + 0.01 = 0.03 s; memory 1e8/10e9 = 0.01 s.
  const op_time a = m.time_of(cost(modsim::op::mlp_up, 2'000'000'000, 100'000'000, 100'000'000), s, dtype::fp32);
  EXPECT_NEAR(a.time_s, 0.03, 1e-15);
  EXPECT_NEAR(a.roofline_s, 0.03, 1e-15);
  EXPECT_FALSE(a.memory_bound());
  EXPECT_FALSE(a.calibrated);
  // Memory-bound: 1e6/10e9 = 1e-4 s of compute vs 4e9/10e9 = 0.4 s of traffic.
  const op_time b = m.time_of(cost(modsim::op::attn_norm, 0, 1'000'000, 4'000'000'000), s, dtype::fp32);
  EXPECT_NEAR(b.time_s, 0.4, 1e-15);
  EXPECT_TRUE(b.memory_bound());
  EXPECT_DOUBLE_EQ(m.launch_s(), 3e-6);
  EXPECT_DOUBLE_EQ(m.host_enqueue_s(), 1e-6);
}

TEST(Cost, RooflineUsesThePeakOfTheDtype) {
  hardware_spec h = round_cpu();
  h.peak_matmul_flops = {50e9, 400e9, 200e9};
  const cost_model m(h);
  const op_shape s;
  // 4e9 matmul FLOPs: fp32 0.08 s, bf16 0.01 s, fp16 0.02 s (memory 0).
  EXPECT_NEAR(m.time_of(cost(modsim::op::qkv_proj, 4'000'000'000, 0, 0), s, dtype::fp32).time_s, 0.08, 1e-15);
  EXPECT_NEAR(m.time_of(cost(modsim::op::qkv_proj, 4'000'000'000, 0, 0), s, dtype::bf16).time_s, 0.01, 1e-15);
  EXPECT_NEAR(m.time_of(cost(modsim::op::qkv_proj, 4'000'000'000, 0, 0), s, dtype::fp16).time_s, 0.02, 1e-15);
}

TEST(Cost, KernelCountsPerOp) {
  hardware_spec cpu = round_cpu();
  hardware_spec gpu = round_cpu();
  gpu.kind = hardware_kind::gpu;
  EXPECT_EQ(kernels_of(modsim::op::router, gpu), 1);
  EXPECT_EQ(kernels_of(modsim::op::topk, gpu), 2);
  EXPECT_EQ(kernels_of(modsim::op::topk, cpu), 1);
  EXPECT_EQ(kernels_of(modsim::op::attn_scores, gpu), 1);
  EXPECT_EQ(kernels_of(modsim::op::lm_head, gpu), 2);
  EXPECT_EQ(kernels_of(modsim::op::predictor, cpu), 2);
}

TEST(Cost, GemmWaveQuantisationOnAGpu) {
  hardware_spec gpu = round_cpu();
  gpu.kind = hardware_kind::gpu;
  gpu.sm_count = 132;
  op_shape s;
  s.batch = 1;
  s.tokens = 133 * 128;  // 133 row tiles
  s.d_model = 128;
  s.n_heads = 1;
  s.d_ff = 128;  // one column tile
  // The fixed 128×128 tile (calibrations fitted before the tile chooser): 133 tiles on 132
  // SMs: 2 waves = 264 tile slots for 133 tiles.
  constexpr gemm_tiling fixed = gemm_tiling::fixed128;
  EXPECT_NEAR(gemm_waves(modsim::op::mlp_up, s, gpu, dtype::bf16, fixed), 264.0 / 133.0, 1e-12);
  s.tokens = 132 * 128;  // exactly one full wave
  EXPECT_NEAR(gemm_waves(modsim::op::mlp_up, s, gpu, dtype::bf16, fixed), 1.0, 1e-12);
  // Not a GEMM, or a CPU: no quantisation.
  EXPECT_EQ(gemm_waves(modsim::op::attn_norm, s, gpu, dtype::bf16, fixed), 1.0);
  EXPECT_EQ(gemm_waves(modsim::op::mlp_up, s, round_cpu(), dtype::bf16, fixed), 1.0);
  EXPECT_EQ(gemm_waves(modsim::op::attn_norm, s, gpu, dtype::bf16, gemm_tiling::chosen), 1.0);
  EXPECT_EQ(gemm_waves(modsim::op::mlp_up, s, round_cpu(), dtype::bf16, gemm_tiling::chosen), 1.0);
  // The datasheet roofline of a spec built in code (roofline_gemm_tiles fixed128) keeps the
  // fixed tile: the compute term, 1e9 FLOPs at 100e9 = 0.01 s, × 264/133.
  s.tokens = 133 * 128;
  const op_cost c = cost(modsim::op::mlp_up, 1'000'000'000, 0, 0);
  EXPECT_NEAR(cost_model(gpu).time_of(c, s, dtype::bf16).time_s, 0.01 * 264.0 / 133.0, 1e-12);
  // One whose roofline says "chosen" (a GPU file without the key) tiles as the chooser does (sim/cost/gemm_tiles.hpp).
  // M 17024, N 128, K 128 (too shallow for split-K), times in SM multiply-accumulates:
  //   128×128: 133 tiles, 2 waves: 2·16384·128 = 4 194 304
  //   128×256: 133 tiles, 2 waves: 2·32768·128/1.05 = 7 989 089
  //   256×128: 67 tiles, 1 wave: 32768·128/1.05 = 3 994 575
  //   128×64 and 64×128: 266 tiles, 3 waves: 3·8192·128/0.9 = 3 495 253
  //   64×64: 532 tiles, 5 waves: 5·4096·128/0.8 = 3 276 800   <- chosen
  // q = 3 276 800 / (17024·128·128 / 132) = 200·132 / 17024 = 825/532.
  // 0.01 s × 825/532.
  gpu.roofline_gemm_tiles = gemm_tiling::chosen;
  const op_time t = cost_model(gpu).time_of(c, s, dtype::bf16);
  EXPECT_NEAR(t.waves, 825.0 / 532.0, 1e-12);
  EXPECT_NEAR(t.time_s, 0.01 * 825.0 / 532.0, 1e-12);
  EXPECT_NEAR(t.roofline_s, 0.01, 1e-15);
}

TEST(Cost, CalibratedTimeIsFixedCostPlusRooflineOverEfficiency) {
  const hardware_spec h = round_cpu();
  const cost_model m = with_calibration(h, one_curve_calibration(h));
  EXPECT_TRUE(m.calibrated());
  EXPECT_NE(m.label().find("calibrated on m.csv"), std::string::npos);
  EXPECT_DOUBLE_EQ(m.launch_s(), 5e-6);
  const op_shape s;
  // roofline 1e-5 s (1e5 bytes / 10e9): x = -5, halfway between the knots: g = 3.
  // time = 2e-6 + 3 * 1e-5 = 3.2e-5 s.
  const op_time t = m.time_of(cost(modsim::op::attn_norm, 0, 0, 100'000), s, dtype::fp32);
  EXPECT_NEAR(t.time_s, 3.2e-5, 1e-15);
  EXPECT_TRUE(t.calibrated);
  EXPECT_EQ(t.calibrated_as, modsim::op::attn_norm);
  // Beyond the last knot g stays 2: roofline 1e-2 s -> 2e-6 + 2e-2.
  EXPECT_NEAR(m.time_of(cost(modsim::op::attn_norm, 0, 0, 100'000'000), s, dtype::fp32).time_s, 2e-6 + 2e-2, 1e-15);
  // Below the first knot g stays 4: roofline 1e-8 s -> 2e-6 + 4e-8.
  EXPECT_NEAR(m.time_of(cost(modsim::op::attn_norm, 0, 0, 100), s, dtype::fp32).time_s, 2e-6 + 4e-8, 1e-18);
  // Inside a layer the op fetches its 1e5 bytes again at 1e-11 s/byte (100 GB/s): + 1e-6 s.
  calibration slow = one_curve_calibration(h);
  slow.in_layer_s_per_byte = 1e-11;
  EXPECT_NEAR(with_calibration(h, slow).time_of(cost(modsim::op::attn_norm, 0, 0, 100'000), s, dtype::fp32).time_s,
              3.3e-5, 1e-15);
  // The roofline fallback of an uncalibrated op is not scaled: 1e9/100e9 = 0.01 s.
  EXPECT_NEAR(with_calibration(h, slow).time_of(cost(modsim::op::mlp_up, 1'000'000'000, 0, 0), s, dtype::fp32).time_s,
              0.01, 1e-15);
}

TEST(Cost, UnmeasuredOpUsesItsStandInOrTheRoofline) {
  const hardware_spec h = round_cpu();
  const cost_model m = with_calibration(h, one_curve_calibration(h));
  const op_shape s;
  // mlp_norm was never measured: attn_norm's curve (same formula) -> 3.2e-5 as above.
  const op_time n = m.time_of(cost(modsim::op::mlp_norm, 0, 0, 100'000), s, dtype::fp32);
  EXPECT_NEAR(n.time_s, 3.2e-5, 1e-15);
  EXPECT_EQ(n.calibrated_as, modsim::op::attn_norm);
  // mlp_up has no curve and its stand-in neither: roofline 1e9/100e9 = 0.01 s.
  const op_time u = m.time_of(cost(modsim::op::mlp_up, 1'000'000'000, 0, 0), s, dtype::fp32);
  EXPECT_NEAR(u.time_s, 0.01, 1e-15);
  EXPECT_FALSE(u.calibrated);
  // Another dtype is not calibrated either.
  EXPECT_FALSE(m.time_of(cost(modsim::op::attn_norm, 0, 0, 100'000), s, dtype::bf16).calibrated);
}

// curve_for names what time_of times an op by, without a shape: attn_norm its own curve,
// mlp_norm attn_norm's (its stand-in), mlp_up (no curve, its stand-in neither) and another dtype
// nothing; uncalibrated, nothing.
TEST(Cost, CurveForNamesTheCurveTimeOfUses) {
  const hardware_spec h = round_cpu();
  const cost_model m = with_calibration(h, one_curve_calibration(h));
  const std::optional<cost_model::curve_choice> own = m.curve_for(modsim::op::attn_norm, dtype::fp32);
  ASSERT_TRUE(own);
  EXPECT_EQ(own->as, modsim::op::attn_norm);
  EXPECT_EQ(own->type, dtype::fp32);
  const std::optional<cost_model::curve_choice> stand_in = m.curve_for(modsim::op::mlp_norm, dtype::fp32);
  ASSERT_TRUE(stand_in);
  EXPECT_EQ(stand_in->as, modsim::op::attn_norm);
  EXPECT_FALSE(m.curve_for(modsim::op::mlp_up, dtype::fp32));
  EXPECT_FALSE(m.curve_for(modsim::op::attn_norm, dtype::bf16));
  EXPECT_FALSE(cost_model(h).curve_for(modsim::op::attn_norm, dtype::fp32));
}

TEST(Cost, CalibrationBlockRoundTripsThroughJson) {
  const hardware_spec h = round_cpu();
  calibration c = one_curve_calibration(h);
  c.block_keys = {"block_dense|fp32|1|256", "block_mod|fp32|1|256"};
  c.launch_blocks = 2;
  const calibration back = parse_calibration(calibration_to_json(c), "x.json");
  EXPECT_EQ(back.date, c.date);
  EXPECT_EQ(back.device, c.device);
  ASSERT_EQ(back.curves.size(), 1u);
  EXPECT_EQ(back.curves[0].op, modsim::op::attn_norm);
  EXPECT_EQ(back.curves[0].inv_efficiency, c.curves[0].inv_efficiency);
  EXPECT_EQ(back.curves[0].log10_work, c.curves[0].log10_work);
  EXPECT_DOUBLE_EQ(back.curves[0].fixed_s, 2e-6);
  EXPECT_EQ(back.block_keys, c.block_keys);
  EXPECT_EQ(back.launch_blocks, 2);
  ASSERT_EQ(back.sources.size(), 1u);
  EXPECT_EQ(back.sources[0].rows, 10);
}

TEST(Cost, MalformedCalibrationBlockNamesFileAndKey) {
  hardware_spec h = round_cpu();
  std::string text = calibration_to_json(one_curve_calibration(h));
  const auto pos = text.find("\"attn_norm\"");
  ASSERT_NE(pos, std::string::npos);
  h.calibration_json = text.replace(pos, 11, "\"warp_drive\"");
  try {
    cost_model m(h);
    FAIL() << "accepted an unknown op";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_EQ(std::string(e.what()), "round.json: calibration.curves[0].op: unknown op 'warp_drive'");
  }
  h.calibration_json = R"({"format": 1})";
  try {
    cost_model m(h);
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()), "round.json: calibration.date: missing required key");
  }
}

TEST(Cost, CalibrationAgainstOtherPeaksIsRejected) {
  hardware_spec h = round_cpu();
  const calibration c = one_curve_calibration(h);
  h.memory_bandwidth_bytes_s = 20e9;  // edited after calibrating
  h.calibration_json = calibration_to_json(c);
  try {
    cost_model m(h);
    FAIL();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("round.json: calibration.roofline.memory_bandwidth_bytes_s"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace modsim::sim
