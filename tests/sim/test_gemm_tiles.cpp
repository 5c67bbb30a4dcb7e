// Tests of the GEMM tile chooser (sim/cost/gemm_tiles.cpp) and of the wave quantisation that follows
// it in the cost model and the kernel model. Every expected tiling, count and factor is worked
// by hand in the comments from the rule in sim/cost/gemm_tiles.hpp:
//   time(tile, s) = waves · tm·tn·(K/s) / eff + (s > 1 ? 2·s·M·N·batch / SMs · r : 0)
//   eff: 128×128 1, 128×256 and 256×128 1.05, 128×64 and 64×128 0.9, 64×64 0.8
//   split-K only when tiles < SMs and K/s ≥ 256; ties keep the earlier candidate.
#include "sim/cost/gemm_tiles.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/cost/kernel_model.hpp"

namespace modsim::sim {
namespace {

constexpr int h100_sms = 132;
constexpr double r512 = 512;  // split-K element cost r used by the hand-worked cases

// An H100-sized GPU with round numbers: 132 SMs, 100 TFLOP/s bf16, 1 TB/s (r = 2·100e12/1e12
// = 200).
hardware_spec gpu132() {
  hardware_spec h;
  h.name = "gpu132";
  h.source_file = "gpu132.json";
  h.kind = hardware_kind::gpu;
  h.peak_matmul_flops = {10e12, 100e12, 100e12};
  h.peak_vector_flops = {10e12, 20e12, 20e12};
  h.memory_bandwidth_bytes_s = 1e12;
  h.sm_count = h100_sms;
  h.kernel_launch_s = 2e-6;
  h.host_enqueue_s = 4e-6;
  return h;
}

TEST(GemmTiles, TileEfficienciesAndSplitKElementCost) {
  EXPECT_DOUBLE_EQ(gemm_tile_efficiency(128, 128), 1.0);
  EXPECT_DOUBLE_EQ(gemm_tile_efficiency(256, 128), 1.05);
  EXPECT_DOUBLE_EQ(gemm_tile_efficiency(64, 128), 0.9);
  EXPECT_DOUBLE_EQ(gemm_tile_efficiency(64, 64), 0.8);
  EXPECT_DOUBLE_EQ(gemm_tile_efficiency(32, 32), 0.0);                   // not a candidate
  EXPECT_DOUBLE_EQ(split_k_element_cost(gpu132(), dtype::bf16), 200.0);  // 2 · 100e12 / 1e12
  EXPECT_DOUBLE_EQ(split_k_element_cost(gpu132(), dtype::fp32), 20.0);   // 2 · 10e12 / 1e12
  hardware_spec bare = gpu132();
  bare.memory_bandwidth_bytes_s = 0;
  EXPECT_DOUBLE_EQ(split_k_element_cost(bare, dtype::bf16), 512.0);
}

// 200 tokens × d_ff 2816 × d_model 1024 (mlp_up of 200 tokens), 132 SMs:
//   128×128: ⌈200/128⌉·⌈2816/128⌉ = 2·22 = 44 tiles, 1 wave: 16384·1024 = 16 777 216;
//            s = 2: 88 CTAs, 16384·512 + 2·2·200·2816/132·512 = 8 388 608 + 8 738 133 (worse);
//            s = 4: 176 CTAs, 2 waves, 8 388 608 + 17 476 267 (worse)
//   128×256: 2·11 = 22 tiles: 32768·1024/1.05 = 31 956 358 (splits: 15 978 179 + 8 738 133 and
//            7 989 089 + 17 476 267, worse); 256×128: 1·22 = 22 tiles, the same times
//   128×64:  2·44 = 88 tiles, 1 wave: 8192·1024/0.9 = 9 320 676 (s = 2: 176 CTAs, 2 waves,
//            9 320 676 + 8 738 133, worse)
//   64×128:  4·22 = 88 tiles, the same 9 320 676: a tie, 128×64 stays
//   64×64:   4·44 = 176 tiles ≥ 132 (no split), 2 waves: 2·4096·1024/0.8 = 10 485 760
// Chosen: 128×64, no split, 88 tiles in 1 wave, wave efficiency 200·2816 / (132·128·64)
// = 563 200 / 1 081 344 = 25/48, q = 1 / (25/48 · 0.9) = 32/15.
TEST(GemmTiles, TwoHundredTokensByD_ff2816PicksNarrowTilesWithoutSplitK) {
  const gemm_tile_choice c = choose_gemm_tile({200, 2816, 1024, 1}, h100_sms, r512);
  EXPECT_EQ(c.tile_m, 128);
  EXPECT_EQ(c.tile_n, 64);
  EXPECT_EQ(c.split_k, 1);
  EXPECT_DOUBLE_EQ(c.tiles, 88.0);
  EXPECT_DOUBLE_EQ(c.waves, 1.0);
  EXPECT_NEAR(c.wave_efficiency, 25.0 / 48.0, 1e-12);
  EXPECT_NEAR(c.q, 32.0 / 15.0, 1e-12);
}

// 200 × 1365 × K 4096 (N not a multiple of any tile: ⌈1365/128⌉ = 11, ⌈1365/64⌉ = 22,
// ⌈1365/256⌉ = 6); reduction per split factor s: 2·s·200·1365/132·512 = s · 2 117 818.2
//   128×128: 2·11 = 22 tiles; s = 1: 16384·4096 = 67 108 864; s = 2 (44 CTAs): 33 554 432 +
//            4 235 636; s = 4 (88): 16 777 216 + 8 471 273 = 25 248 489; s = 8 (176, 2 waves):
//            16 777 216 + 16 942 545; s = 16 (352, 3 waves): 12 582 912 + 33 885 091
//   128×256: 2·6 = 12 tiles, best s = 8 (96 CTAs): 32768·512/1.05 + 16 942 545 = 32 920 724
//   256×128: 1·11 = 11 tiles, best s = 8 (88): the same 32 920 724
//   128×64:  2·22 = 44 tiles, best s = 2 (88): 8192·2048/0.9 + 4 235 636 = 22 876 987
//   64×128:  4·11 = 44 tiles: the same (a tie)
//   64×64:   4·22 = 88 tiles, s = 1, 1 wave: 4096·4096/0.8 = 20 971 520 (s = 2: 176 CTAs,
//            2 waves, 20 971 520 + 4 235 636)
// Chosen: 64×64, no split, 88 tiles, 1 wave, wave efficiency 200·1365/(132·64·64)
// = 273 000 / 540 672; q = 20 971 520 / (200·1365·4096/132) = 20 971 520·132 / 1 118 208 000.
TEST(GemmTiles, NonPowerOfTwoColumnsAndADeepK) {
  const gemm_tile_choice c = choose_gemm_tile({200, 1365, 4096, 1}, h100_sms, r512);
  EXPECT_EQ(c.tile_m, 64);
  EXPECT_EQ(c.tile_n, 64);
  EXPECT_EQ(c.split_k, 1);
  EXPECT_DOUBLE_EQ(c.tiles, 88.0);
  EXPECT_DOUBLE_EQ(c.waves, 1.0);
  EXPECT_NEAR(c.wave_efficiency, 273000.0 / 540672.0, 1e-12);
  EXPECT_NEAR(c.q, 20971520.0 * 132.0 / 1118208000.0, 1e-12);
  EXPECT_NEAR(c.time, 20971520.0, 1e-3);
}

// 64 rows × 1024 × K 8192 (a small-token down projection): every tiling leaves SMs idle, so
// split-K pays; reduction 2·s·64·1024/132·512 = s · 508 400.5
//   128×128: 8 tiles; s = 16 (128 CTAs, 1 wave): 16384·512 + 8 134 408 = 16 523 016 (best of
//            its splits: s = 8 gives 16 777 216 + 4 067 204)
//   128×256: 4 tiles, s = 16: 32768·512/1.05 + 8 134 408 = 24 112 587
//   256×128: 8 tiles, s = 16: the same 24 112 587
//   128×64:  16 tiles, s = 8 (128 CTAs): 8192·1024/0.9 + 4 067 204 = 13 387 880
//   64×128:  8 tiles, s = 16 (128 CTAs): 8192·512/0.9 + 8 134 408 = 12 794 746
//   64×64:   16 tiles, s = 8 (128 CTAs): 4096·1024/0.8 + 4 067 204 = 9 310 084; s = 16 (256,
//            2 waves): 5 242 880 + 8 134 408; s = 4 (64): 10 485 760 + 2 033 602
// Chosen: 64×64, split-K 8, 16 tiles, 1 wave, wave efficiency 64·1024·8/(132·64·64) = 32/33.
TEST(GemmTiles, SmallMLargeKSplitsK) {
  const gemm_tile_choice c = choose_gemm_tile({64, 1024, 8192, 1}, h100_sms, r512);
  EXPECT_EQ(c.tile_m, 64);
  EXPECT_EQ(c.tile_n, 64);
  EXPECT_EQ(c.split_k, 8);
  EXPECT_DOUBLE_EQ(c.tiles, 16.0);
  EXPECT_DOUBLE_EQ(c.waves, 1.0);
  EXPECT_NEAR(c.wave_efficiency, 32.0 / 33.0, 1e-12);
  EXPECT_NEAR(c.time, 4096.0 * 1024 / 0.8 + 2.0 * 8 * 64 * 1024 / 132 * 512, 1e-3);
}

// 4096 tokens × 2816 × 1024 (batch 8 × 512): every tiling fills the machine, no split:
//   128×128: 32·22 = 704 tiles, ⌈704/132⌉ = 6 waves: 6·16384·1024 = 100 663 296
//   128×256: 32·11 = 352 tiles, 3 waves: 3·32768·1024/1.05 = 95 869 074
//   256×128: 16·22 = 352 tiles, the same (a tie)
//   128×64 and 64×128: 1408 tiles, 11 waves: 11·8192·1024/0.9 = 102 527 431
//   64×64:   64·44 = 2816 tiles, 22 waves: 22·4096·1024/0.8 = 115 343 360
// Chosen: 128×256, 352 tiles, 3 waves, wave efficiency 4096·2816/(3·132·128·256) = 8/9,
// q = 1/(8/9 · 1.05) = 15/14.
TEST(GemmTiles, LargeGemmTakesTheLargeTileAndNoSplit) {
  const gemm_tile_choice c = choose_gemm_tile({4096, 2816, 1024, 1}, h100_sms, r512);
  EXPECT_EQ(c.tile_m, 128);
  EXPECT_EQ(c.tile_n, 256);
  EXPECT_EQ(c.split_k, 1);
  EXPECT_DOUBLE_EQ(c.tiles, 352.0);
  EXPECT_DOUBLE_EQ(c.waves, 3.0);
  EXPECT_NEAR(c.wave_efficiency, 8.0 / 9.0, 1e-12);
  EXPECT_NEAR(c.q, 15.0 / 14.0, 1e-12);
}

// Attention scores of one sequence of 200 tokens over 16 heads: 16 products of 200 × 200,
// K = d_head 64 (too shallow for split-K: 64/2 < 256)
//   128×128: 16·2·2 = 64 tiles: 16384·64 = 1 048 576
//   128×256 and 256×128: 16·2·1 = 32 tiles: 32768·64/1.05 = 1 997 288
//   128×64: 16·2·4 = 128 tiles, 1 wave: 8192·64/0.9 = 582 542; 64×128 the same (a tie)
//   64×64: 16·4·4 = 256 tiles, 2 waves: 2·4096·64/0.8 = 655 360
// Chosen: 128×64, 128 tiles, 1 wave, wave efficiency 16·200·200/(132·128·64) = 640 000/1 081 344.
TEST(GemmTiles, BatchedAttentionProductsCountTilesPerProduct) {
  const gemm_tile_choice c = choose_gemm_tile({200, 200, 64, 16}, h100_sms, r512);
  EXPECT_EQ(c.tile_m, 128);
  EXPECT_EQ(c.tile_n, 64);
  EXPECT_EQ(c.split_k, 1);
  EXPECT_DOUBLE_EQ(c.tiles, 128.0);
  EXPECT_DOUBLE_EQ(c.waves, 1.0);
  EXPECT_NEAR(c.wave_efficiency, 640000.0 / 1081344.0, 1e-12);
}

TEST(GemmTiles, NoWorkOrNoSmsIsTheNeutralChoice) {
  const gemm_tile_choice a = choose_gemm_tile({0, 1024, 1024, 1}, h100_sms, r512);
  EXPECT_DOUBLE_EQ(a.q, 1.0);
  EXPECT_DOUBLE_EQ(a.tiles, 0.0);
  const gemm_tile_choice b = choose_gemm_tile({128, 128, 128, 1}, 0, r512);
  EXPECT_DOUBLE_EQ(b.q, 1.0);
}

TEST(GemmTiles, OpGemmDimensions) {
  op_shape s;
  s.batch = 2;
  s.seq_len = 100;
  s.tokens = 100;
  s.d_model = 256;
  s.n_heads = 8;  // d_head 32
  s.d_ff = 1000;
  s.vocab_size = 1000;
  const auto up = op_gemm(modsim::op::mlp_up, s);
  ASSERT_TRUE(up.has_value());
  EXPECT_DOUBLE_EQ(up->m, 200.0);  // 2 · 100 tokens
  EXPECT_DOUBLE_EQ(up->n, 1000.0);
  EXPECT_DOUBLE_EQ(up->k, 256.0);
  const auto down = op_gemm(modsim::op::mlp_down, s);
  EXPECT_DOUBLE_EQ(down->n, 256.0);
  EXPECT_DOUBLE_EQ(down->k, 1000.0);
  const auto scores = op_gemm(modsim::op::attn_scores, s);
  EXPECT_DOUBLE_EQ(scores->batch, 16.0);  // 2 sequences · 8 heads
  EXPECT_DOUBLE_EQ(scores->n, 100.0);
  EXPECT_DOUBLE_EQ(scores->k, 32.0);
  const auto values = op_gemm(modsim::op::attn_values, s);
  EXPECT_DOUBLE_EQ(values->n, 32.0);
  EXPECT_DOUBLE_EQ(values->k, 100.0);
  EXPECT_FALSE(op_gemm(modsim::op::attn_norm, s).has_value());
  EXPECT_FALSE(op_gemm(modsim::op::router, s).has_value());
}

// The datasheet roofline on a GPU tiles as its hardware file says: chosen, as the chooser does;
// fixed128 (the default), the old 128×128 rule.
// mlp_up of 200 tokens × d_ff 2816 × d_model 1024 on gpu132 (r = 200): the 128×128 splits cost
// 8 388 608 + 2·2·200·2816/132·200 = 11 801 600 (s = 2) and 8 388 608 + 6 826 667 (s = 4,
// 2 waves), both above 128×64's 9 320 676, so the choice is that of the 200 × 2816 case above:
// q = 32/15. fixed128: 44 tiles on 132 SMs, ⌈44/132⌉·132/44 = 3.
TEST(GemmTiles, RooflineWavesFollowTheChosenTiling) {
  op_shape s;
  s.batch = 1;
  s.seq_len = 200;
  s.tokens = 200;
  s.d_model = 1024;
  s.n_heads = 16;
  s.d_ff = 2816;
  hardware_spec hw = gpu132();
  EXPECT_NEAR(gemm_waves(modsim::op::mlp_up, s, hw, dtype::bf16, gemm_tiling::chosen), 32.0 / 15.0, 1e-12);
  EXPECT_NEAR(gemm_waves(modsim::op::mlp_up, s, hw, dtype::bf16, gemm_tiling::fixed128), 3.0, 1e-12);
  // The uncalibrated model prices the compute term × q: 1e9 FLOPs at 100e12 = 10 µs.
  const op_cost c{modsim::op::mlp_up, 1'000'000'000, 0, 0};
  EXPECT_EQ(hw.roofline_gemm_tiles, gemm_tiling::fixed128);
  EXPECT_NEAR(cost_model(hw).time_of(c, s, dtype::bf16).time_s, 1e-5 * 3.0, 1e-15);
  hw.roofline_gemm_tiles = gemm_tiling::chosen;
  const op_time t = cost_model(hw).time_of(c, s, dtype::bf16);
  EXPECT_NEAR(t.waves, 32.0 / 15.0, 1e-12);
  EXPECT_NEAR(t.time_s, 1e-5 * 32.0 / 15.0, 1e-15);
}

// The kernel model's GEMM: floor + compute · q with q of the mode. 4096 × 2816 × 1024
// (flops 2·4096·2816·1024 = 23 622 320 128): chosen q = 15/14 (above); fixed128: 704 tiles,
// ⌈704/132⌉ = 6 waves, q = 6·132/704 = 9/8. ε_c 0.5 of 100 TFLOP/s; no bytes.
TEST(GemmTiles, KernelModelQuantisesWithTheCalibrationsTiling) {
  hardware_spec hw = gpu132();
  EXPECT_EQ(default_kernel_params(hw).gemm_tiles, gemm_tiling::fixed128);  // the hardware's
  hw.gemm_tiles = gemm_tiling::chosen;
  kernel_params p = default_kernel_params(hw);
  EXPECT_EQ(p.gemm_tiles, gemm_tiling::chosen);  // what calibrate fits with
  p.of(kernel_kind::gemm).floor_s = 1e-6;
  p.of(kernel_kind::gemm).compute_efficiency = 0.5;
  kernel_work k;
  k.kind = kernel_kind::gemm;
  k.flops = 2.0 * 4096 * 2816 * 1024;
  k.tiles = 704;
  k.gemm = gemm_problem{4096, 2816, 1024, 1};
  const double compute = k.flops / 50e12;
  EXPECT_NEAR(kernel_device_s(k, dtype::bf16, p, hw, false), 1e-6 + compute * 15.0 / 14.0, 1e-15);
  p.gemm_tiles = gemm_tiling::fixed128;
  EXPECT_NEAR(kernel_device_s(k, dtype::bf16, p, hw, false), 1e-6 + compute * 9.0 / 8.0, 1e-15);
  // A kernel without GEMM dimensions (the fused attention kernel) keeps its 128-query tiles.
  p.gemm_tiles = gemm_tiling::chosen;
  k.gemm = gemm_problem{0, 0, 0, 0};
  EXPECT_NEAR(kernel_device_s(k, dtype::bf16, p, hw, false), 1e-6 + compute * 9.0 / 8.0, 1e-15);
}

TEST(GemmTiles, GpuKernelsCarryTheirGemmDimensions) {
  op_shape s;
  s.batch = 8;
  s.seq_len = 512;
  s.tokens = 512;
  s.d_model = 1024;
  s.n_heads = 16;
  s.d_ff = 2816;
  s.elem_bytes = 2;
  const std::vector<kernel_work> k = gpu_kernels(modsim::op::mlp_down, s);
  ASSERT_EQ(k.size(), 2u);  // residual copy, GEMM
  EXPECT_DOUBLE_EQ(k[0].gemm.m, 0.0);
  EXPECT_DOUBLE_EQ(k[1].gemm.m, 4096.0);  // 8 · 512 tokens
  EXPECT_DOUBLE_EQ(k[1].gemm.n, 1024.0);
  EXPECT_DOUBLE_EQ(k[1].gemm.k, 2816.0);
  EXPECT_DOUBLE_EQ(k[1].gemm.batch, 1.0);
}

// A calibration records its tiling under "gemm_tiles"; without the key (files written before
// the chooser) it is the fixed 128×128 tile, and a fixed128 calibration writes no key.
TEST(GemmTiles, CalibrationRecordsItsTiling) {
  const hardware_spec hw = gpu132();
  calibration c;
  c.format = 2;
  c.date = "2026-01-01T00:00:00Z";
  c.device = "test gpu";
  c.backend = modsim::backend_kind::cuda;
  c.sources.push_back({"m.csv", 10, 10});
  c.kernels = default_kernel_params(hw);
  c.kernels->gemm_tiles = gemm_tiling::chosen;
  c.kernel_dtypes = {dtype::bf16};
  c.peak_matmul_fp32 = hw.peak_matmul_flops.fp32;
  c.peak_matmul_bf16 = hw.peak_matmul_flops.bf16;
  c.peak_matmul_fp16 = hw.peak_matmul_flops.fp16;
  c.peak_vector_fp32 = hw.peak_vector_flops.fp32;
  c.peak_vector_bf16 = hw.peak_vector_flops.bf16;
  c.peak_vector_fp16 = hw.peak_vector_flops.fp16;
  c.memory_bandwidth_bytes_s = hw.memory_bandwidth_bytes_s;
  const std::string chosen = calibration_to_json(c);
  EXPECT_NE(chosen.find("\"gemm_tiles\":\"chosen\""), std::string::npos);
  EXPECT_EQ(parse_calibration(chosen, "c.json").kernels->gemm_tiles, gemm_tiling::chosen);
  c.kernels->gemm_tiles = gemm_tiling::fixed128;
  const std::string old = calibration_to_json(c);
  EXPECT_EQ(old.find("gemm_tiles"), std::string::npos);
  EXPECT_EQ(parse_calibration(old, "c.json").kernels->gemm_tiles, gemm_tiling::fixed128);
  std::string bad = chosen;
  bad.replace(bad.find("\"chosen\""), 8, "\"best\"");
  try {
    parse_calibration(bad, "c.json");
    FAIL() << "accepted gemm_tiles \"best\"";
  } catch (const modsim::error& e) {
    EXPECT_NE(std::string(e.what()).find("calibration.gemm_tiles"), std::string::npos) << e.what();
  }
}

// A hardware file names the tiling of its roofline and of what calibrate fits ("gemm_tiles");
// the shipped files do not (fixed128).
TEST(GemmTiles, HardwareFileNamesItsTiling) {
  const std::string path = std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json";
  EXPECT_EQ(load_hardware(path).gemm_tiles, gemm_tiling::fixed128);
  std::string text = R"({"name": "g", "kind": "gpu", "source": "test",
    "peak_matmul_flops": {"fp32": 1e12, "bf16": 1e13, "fp16": 1e13},
    "peak_vector_flops": {"fp32": 1e12, "bf16": 1e12, "fp16": 1e12},
    "memory_bandwidth_bytes_s": 1e12, "memory_bytes": 1e10, "l2_bytes": 1e6, "sm_count": 132)";
  EXPECT_EQ(parse_hardware(text + "}", "g.json").gemm_tiles, gemm_tiling::fixed128);
  EXPECT_EQ(parse_hardware(text + R"(, "gemm_tiles": "chosen"})", "g.json").gemm_tiles, gemm_tiling::chosen);
  // The uncalibrated roofline: the chooser on a GPU file without the key, the key where given,
  // the fixed tile on a CPU (no waves); what calibrate fits stays the key's (absent: fixed128).
  EXPECT_EQ(load_hardware(path).roofline_gemm_tiles, gemm_tiling::chosen);
  EXPECT_EQ(parse_hardware(text + "}", "g.json").roofline_gemm_tiles, gemm_tiling::chosen);
  EXPECT_EQ(parse_hardware(text + R"(, "gemm_tiles": "fixed128"})", "g.json").roofline_gemm_tiles,
            gemm_tiling::fixed128);
  const std::string cpu = std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/cpu.json";
  EXPECT_EQ(load_hardware(cpu).roofline_gemm_tiles, gemm_tiling::fixed128);
  try {
    parse_hardware(text + R"(, "gemm_tiles": "best"})", "g.json");
    FAIL() << "accepted gemm_tiles \"best\"";
  } catch (const modsim::error& e) {
    EXPECT_NE(std::string(e.what()).find("gemm_tiles"), std::string::npos) << e.what();
  }
}

// Issue 45: the routed layer's mlp_down of mod-220m (256 × 1024 × 4096, bf16) on the shipped
// h100-sxm (132 SMs, 989.4 TFLOP/s, 3.35 TB/s), uncalibrated. r = 2·989.4e12/3.35e12 = 590.69;
// ideal = 256·1024·4096/132 = 8 134 038 SM multiply-accumulates. Candidates (best split each):
//   128×128: 16 tiles; s=4: 64 CTAs, 1 wave: 128·128·1024 + 8·262144/132·r = 26 161 000
//   128×256, 256×128: 8 tiles; s=8: 1 wave: 128·256·512/1.05 + 16·1985.9·r = 34 753 000
//   128×64 (and 64×128, a tie): 32 tiles; s=4: 128 CTAs, 1 wave: 128·64·1024/0.9 + 8·1985.9·r
//       = 18 705 000
//   64×64: 64 tiles; s=2: 128 CTAs, 1 wave: 64·64·2048/0.8 + 4·1985.9·r = 15 178 100  <- chosen
// q = 15 178 100 / 8 134 038 = 1.866. Compute 2·256·1024·4096/989.4e12 = 2.170 µs, × q =
// 4.050 µs; memory 2·(256·4096 + 4096·1024 + 256·1024)/3.35e12 = 3.287 µs (the roofline). So
// 4.05 µs, 1.23× the roofline (within 1.25×), where the fixed tile gave 16 tiles a whole
// wave: × 132/16 = 17.9 µs. The dense layer's 2048 rows: 128×128, 128 tiles in one wave, q =
// 132/128 (no candidate beats it: 256×128 64 tiles 1 wave 128·256·4096/1.05 is 1.9× longer);
// 17.364 µs × 1.03125 = 17.906 µs.
TEST(GemmTiles, UncalibratedH100PricesTheRoutedMlpDownWithChosenTiles) {
  const hardware_spec hw = load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json");
  const double r = 2 * 989.4e12 / 3.35e12;
  const double chosen = 64.0 * 64 * 2048 / 0.8 + 2.0 * 2 * 256 * 1024 / 132 * r;
  const double q = chosen / (256.0 * 1024 * 4096 / 132);
  const gemm_tile_choice t = choose_gemm_tile(gemm_problem{256, 1024, 4096, 1}, hw, dtype::bf16);
  EXPECT_EQ(t.tile_m, 64);
  EXPECT_EQ(t.tile_n, 64);
  EXPECT_EQ(t.split_k, 2);
  EXPECT_DOUBLE_EQ(t.waves, 1.0);
  EXPECT_NEAR(t.q, q, 1e-9);

  op_shape s;
  s.batch = 1;
  s.seq_len = 2048;
  s.d_model = 1024;
  s.n_heads = 16;
  s.d_ff = 4096;
  s.elem_bytes = 2;
  auto mlp_down = [](double rows) {
    return op_cost{modsim::op::mlp_down, static_cast<std::int64_t>(2 * rows * 1024 * 4096), 0,
                   static_cast<std::int64_t>(2 * (rows * 4096 + 4096.0 * 1024 + rows * 1024))};
  };
  const cost_model cost(hw);
  s.tokens = 256;
  const op_time routed = cost.time_of(mlp_down(256), s, dtype::bf16);
  const double compute = 2.0 * 256 * 1024 * 4096 / 989.4e12;
  const double memory = 2.0 * (256.0 * 4096 + 4096.0 * 1024 + 256.0 * 1024) / 3.35e12;
  EXPECT_NEAR(routed.waves, q, 1e-9);
  EXPECT_NEAR(routed.roofline_s, memory, 1e-15);
  EXPECT_NEAR(routed.time_s, compute * q, 1e-13);
  EXPECT_LT(routed.time_s, 1.25 * routed.roofline_s);
  // The wave term: what the partial wave adds beyond the roofline (memory: at q = 1 the
  // compute term 2.17 µs is below it).
  EXPECT_NEAR(routed.wave_s, compute * q - memory, 1e-13);
  s.tokens = 2048;
  const op_time dense = cost.time_of(mlp_down(2048), s, dtype::bf16);
  const double dense_compute = 2.0 * 2048 * 1024 * 4096 / 989.4e12;
  EXPECT_NEAR(dense.time_s, dense_compute * 132 / 128, 1e-13);
  EXPECT_NEAR(dense.wave_s, dense_compute * (132.0 / 128 - 1), 1e-13);
  EXPECT_LT(routed.time_s, dense.time_s / 4);
  // A file that keeps the fixed tile: 16 tiles fill one wave of 132, q = 8.25 (the issue's
  // 17.9 µs).
  hardware_spec fixed = hw;
  fixed.roofline_gemm_tiles = gemm_tiling::fixed128;
  s.tokens = 256;
  EXPECT_NEAR(cost_model(fixed).time_of(mlp_down(256), s, dtype::bf16).time_s, compute * 132 / 16, 1e-13);
}

// No tiling beats the datasheet's peak. mlp_up of 16 384 tokens × d_ff 32 000 × d_model 2 048
// (dense-1b's LM head shape, batch 8 × 2 048) on the shipped h100-sxm: 128×256 tiles
// (128 · 125 = 16 000 tiles, ⌈16 000/132⌉ = 122 waves) take 122·128·256·2048/1.05 SM
// multiply-accumulates, 0.9586 of the ideal 16 384·32 000·2 048/132 of 128×128 tiles (a 128×128
// tiling needs 128·250 = 32 000 tiles, 243 waves: 1.0025). The chooser keeps the large tile,
// but the roofline prices it at the peak: q = 1, the compute term 2·16 384·32 000·2 048/989.4e12
// = 2.1706 ms (before, 2.0808 ms: 4 % faster than the peak, as predict printed for dense-1b's
// LM head).
TEST(GemmTiles, NoTilingRunsFasterThanTheDatasheetPeak) {
  const hardware_spec hw = load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json");
  const gemm_tile_choice t = choose_gemm_tile(gemm_problem{16384, 32000, 2048, 1}, hw, dtype::bf16);
  EXPECT_EQ(t.tile_m * t.tile_n, 128 * 256);
  EXPECT_DOUBLE_EQ(t.waves, 122.0);
  EXPECT_NEAR(t.q, 122.0 * 128 * 256 * 2048 / 1.05 / (16384.0 * 32000 * 2048 / 132), 1e-12);
  EXPECT_LT(t.q, 1.0);

  op_shape s;
  s.batch = 8;
  s.seq_len = 2048;
  s.tokens = 2048;
  s.d_model = 2048;
  s.n_heads = 16;
  s.d_ff = 32000;
  s.elem_bytes = 2;
  const double rows = 16384, d = 2048, f = 32000;
  const op_cost up{modsim::op::mlp_up, static_cast<std::int64_t>(2 * rows * d * f), 0,
                   static_cast<std::int64_t>(2 * (rows * d + d * f + rows * f))};
  const op_time time = cost_model(hw).time_of(up, s, dtype::bf16);
  const double compute = 2 * rows * d * f / 989.4e12;
  EXPECT_DOUBLE_EQ(time.waves, 1.0);
  EXPECT_NEAR(time.time_s, compute, 1e-15);
  EXPECT_NEAR(time.roofline_s, compute, 1e-15);
  EXPECT_DOUBLE_EQ(time.wave_s, 0.0);
}

}  // namespace
}  // namespace modsim::sim
