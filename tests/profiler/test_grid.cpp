// Grid expansion: the Cartesian product, invalid combinations skipped with a reason, ops
// that do not depend on capacity measured once, and the --grid file's bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "profiler/grid.hpp"
#include "core/error.hpp"

using namespace modsim;
using namespace modsim::profiler;

TEST(Grid, ExpandsTheCartesianProduct) {
  grid g = parse_grid(R"({"ops": ["block_mod", "qkv_proj"], "batch": [1, 2], "seq_len": [64],
                          "d_model": [64, 128], "n_heads": [4], "d_ff": [256], "capacity": [0.25, 0.5, 1.0]})",
                      "g.json");
  expansion e = expand(g);
  // 2 ops × 2 batch × 2 d_model × 3 capacities, all valid.
  EXPECT_EQ(e.points.size(), 24u);
  EXPECT_TRUE(e.skipped.empty());
}

TEST(Grid, BlockDenseAndRouterIgnoreCapacity) {
  grid g = parse_grid(R"({"ops": ["block_dense", "router", "topk"], "seq_len": [64], "d_model": [64],
                          "n_heads": [4], "d_ff": [256], "capacity": [0.125, 0.5, 1.0]})",
                      "g.json");
  expansion e = expand(g);
  auto count = [&](kernels::op o) {
    return std::count_if(e.points.begin(), e.points.end(), [&](const point& p) { return p.op == o; });
  };
  EXPECT_EQ(count(kernels::op::block_dense), 1);
  EXPECT_EQ(count(kernels::op::router), 1);
  EXPECT_EQ(count(kernels::op::topk), 3);
  for (const auto& p : e.points) {
    if (p.op == kernels::op::block_dense) {
      EXPECT_DOUBLE_EQ(p.shape.capacity, 1.0);
    }
  }
}

TEST(Grid, InvalidCombinationsAreSkippedWithAReason) {
  grid g = parse_grid(R"({"ops": ["block_dense", "mlp_gate", "layer_mode"], "seq_len": [64], "d_model": [96],
                          "n_heads": [4, 5], "d_ff": [128], "mlp": "gelu"})",
                      "g.json");
  expansion e = expand(g);
  // n_heads 5 does not divide 96; mlp_gate needs swiglu; layer_mode needs experts.
  ASSERT_EQ(e.points.size(), 1u);
  EXPECT_EQ(e.points[0].op, kernels::op::block_dense);
  EXPECT_EQ(e.points[0].shape.n_heads, 4);
  ASSERT_EQ(e.skipped.size(), 5u);
  bool saw_divisible = false, saw_gate = false, saw_experts = false;
  for (const auto& s : e.skipped) {
    saw_divisible |= s.reason == "d_model 96 is not divisible by n_heads 5";
    saw_gate |= s.reason == "mlp_gate exists only for swiglu";
    saw_experts |= s.reason.find("needs experts") != std::string::npos;
  }
  EXPECT_TRUE(saw_divisible && saw_gate && saw_experts);
}

TEST(Grid, LayerModeCrossesTheMoDEAxes) {
  grid g = parse_grid(R"({"ops": ["layer_mode", "block_dense"], "seq_len": [32], "d_model": [64], "n_heads": [4],
                          "d_ff": [128], "capacity": [0.5], "variant": ["staged", "integrated"],
                          "experts": [4, 8], "noop_experts": [1, 2]})",
                      "g.json");
  expansion e = expand(g);
  // layer_mode: staged × 2 experts (no-op axis collapsed) + integrated × 2 experts × 2 no-op = 6;
  // block_dense once.
  EXPECT_EQ(e.points.size(), 7u);
}

TEST(Grid, PointsSharingAShapeAreAdjacent) {
  grid g = parse_grid(R"({"ops": ["qkv_proj", "out_proj"], "seq_len": [32, 64], "d_model": [64],
                          "n_heads": [4], "d_ff": [128]})",
                      "g.json");
  expansion e = expand(g);
  ASSERT_EQ(e.points.size(), 4u);
  EXPECT_EQ(e.points[0].shape.seq_len, e.points[1].shape.seq_len);
  EXPECT_EQ(e.points[2].shape.seq_len, e.points[3].shape.seq_len);
}

TEST(Grid, BadGridFilesAreOneLineErrors) {
  auto message = [](const char* text) {
    try {
      parse_grid(text, "g.json");
    } catch (const error& e) {
      EXPECT_EQ(e.kind(), error_kind::bad_input);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"ops": ["block_fancy"], "seq_len": [1], "d_model": [8], "n_heads": [1], "d_ff": [8]})"),
            "g.json: ops[0]: unknown op 'block_fancy'");
  EXPECT_EQ(message(R"({"ops": ["block_dense"], "seq_len": [], "d_model": [8], "n_heads": [1], "d_ff": [8]})"),
            "g.json: seq_len: empty axis (give at least one value)");
  EXPECT_EQ(message(R"({"ops": ["block_dense"], "d_model": [8], "n_heads": [1], "d_ff": [8]})"),
            "g.json: seq_len: missing required key");
  EXPECT_EQ(
      message(R"({"ops": ["block_dense"], "seq_len": [8], "d_model": [8], "n_heads": [1], "d_ff": [8], "colour": 1})"),
      "g.json: colour: unknown key");
  EXPECT_EQ(
      message(
          R"({"ops": ["block_mod"], "seq_len": [8], "d_model": [8], "n_heads": [1], "d_ff": [8], "capacity": [2]})"),
      "g.json: capacity[0]: capacity must be in (0, 1], got 2");
  EXPECT_EQ(message(R"({"ops": ["block_dense"], "seq_len": [-8], "d_model": [8], "n_heads": [1], "d_ff": [8]})"),
            "g.json: seq_len[0]: expected a positive integer, got -8");
}

TEST(Grid, AShapesListReplacesTheProductOfTheShapeAxes) {
  grid g = parse_grid(R"({"ops": ["block_dense", "block_mod"], "batch": [1, 3], "seq_len": [200],
                          "capacity": [0.3, 0.6],
                          "shapes": [{"d_model": 576, "n_heads": 9, "n_kv_heads": 3, "d_ff": 1536, "mlp": "swiglu",
                                      "from": "a GQA model"},
                                     {"d_model": 768, "n_heads": 12, "d_ff": 3072}]})",
                      "g.json");
  ASSERT_EQ(g.shapes.size(), 2u);
  const expansion ex = expand(g);
  // 2 shapes × 2 batches × (block_dense once + block_mod at 2 capacities), all valid.
  ASSERT_EQ(ex.points.size(), 12u);
  EXPECT_TRUE(ex.skipped.empty());
  int gqa = 0;
  for (const point& p : ex.points) {
    if (p.shape.d_model == 576) {
      ++gqa;
      EXPECT_EQ(p.shape.n_heads, 9);
      EXPECT_EQ(p.shape.n_kv_heads, 3);
      EXPECT_EQ(p.shape.d_head, 64);
      EXPECT_EQ(p.shape.d_ff, 1536);
      EXPECT_EQ(p.shape.mlp, kernels::mlp_kind::swiglu);
    } else {
      EXPECT_EQ(p.shape.d_model, 768);
      EXPECT_EQ(p.shape.n_kv_heads, 12);  // MHA when not given
      EXPECT_EQ(p.shape.mlp, kernels::mlp_kind::gelu);
    }
  }
  EXPECT_EQ(gqa, 6);
  auto message = [](const char* text) {
    try {
      parse_grid(text, "g.json");
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"ops": ["block_dense"], "seq_len": [8], "d_model": [8], "shapes": [{"d_model": 8}]})"),
            "g.json: d_model: give either \"shapes\" or the d_model, n_heads, n_kv_heads, d_ff and mlp axes");
  EXPECT_EQ(message(R"({"ops": ["block_dense"], "seq_len": [8], "shapes": [{"d_model": 8, "n_heads": 1}]})"),
            "g.json: shapes[0].d_ff: missing required key");
  EXPECT_EQ(message(R"({"ops": ["block_dense"], "seq_len": [8], "shapes": [{"d_model": 8, "n_heads": 1, "d_ff": 8,
                                                                              "width": 3}]})"),
            "g.json: shapes[0].width: unknown key (d_model, n_heads, n_kv_heads, d_ff, mlp, from)");
  EXPECT_EQ(message(R"({"ops": ["block_dense"], "seq_len": [8], "shapes": []})"),
            "g.json: shapes: expected a non-empty array of {d_model, n_heads, d_ff, ...} objects");
}

TEST(Grid, PresetsAreValidAndNonEmpty) {
  for (const modsim::backend_kind backend : {modsim::backend_kind::cpu, modsim::backend_kind::cuda})
    for (const char* name : {"quick", "full", "decode"}) {
      expansion e = expand(preset(name, backend));
      EXPECT_GT(e.points.size(), 10u) << name << " " << to_string(backend);
    }
  EXPECT_THROW(preset("medium", modsim::backend_kind::cpu), error);
}

// --preset calibration is the grid files the CPU model's published errors were measured on:
// configs/grids/calibration-5-cpu.json timed in_block, then configs/grids/gemm-rows-cpu.json
// timed alone. Its points, in order, are those two files' (read from the files), whatever
// --timing says; by hand: 6 shapes × 2 batches × 2 sequences × (1 dense + 3 capacities) = 96
// blocks, 4 GEMMs × 2 shapes × (29 + 21 row counts) = 400 GEMMs.
TEST(Grid, TheCalibrationPresetIsCalibration5InBlockThenGemmRowsAlone) {
  const std::string grids = std::string(MODSIM_SOURCE_DIR) + "/configs/grids/";
  std::vector<std::string> want;
  for (const point& p : with_timing(expand(load_grid(grids + "calibration-5-cpu.json")), timing_mode::in_block).points)
    want.push_back(point_key(p));
  ASSERT_EQ(want.size(), 96u);
  for (const point& p : expand(load_grid(grids + "gemm-rows-cpu.json")).points) want.push_back(point_key(p));
  ASSERT_EQ(want.size(), 496u);
  const std::vector<preset_part> parts = preset_parts("calibration", modsim::backend_kind::cpu);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(preset_fixes_timing("calibration"));
  EXPECT_FALSE(preset_fixes_timing("quick"));
  for (const timing_mode asked : {timing_mode::isolated, timing_mode::in_block}) {
    const expansion e = expand_parts(parts, asked);
    EXPECT_TRUE(e.skipped.empty());
    std::vector<std::string> got;
    int blocks = 0, gemms = 0;
    for (const point& p : e.points) {
      got.push_back(point_key(p));
      if (kernels::is_block(p.op)) {
        ++blocks;
        EXPECT_EQ(p.timing, timing_mode::in_block);
        EXPECT_EQ(p.block, p.op);
      } else {
        ++gemms;
        EXPECT_EQ(p.timing, timing_mode::isolated);
      }
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(blocks, 96);
    EXPECT_EQ(gemms, 400);
  }
  // The one-grid presets are their grid, timed as asked.
  EXPECT_EQ(expand_parts(preset_parts("quick", modsim::backend_kind::cpu), timing_mode::isolated).points.size(),
            expand(preset("quick", modsim::backend_kind::cpu)).points.size());
  // The GPU's calibration grids are the full and decode presets: refused, naming them.
  try {
    preset_parts("calibration", modsim::backend_kind::cuda);
    FAIL();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("--preset full and --preset decode"), std::string::npos) << e.what();
  }
  EXPECT_THROW(preset("calibration", modsim::backend_kind::cpu), error);
}

TEST(Grid, InBlockTimingKeepsOnlyBlocksAndSaysWhyTheRestIsSkipped) {
  const expansion e = with_timing(
      expand(parse_grid(R"({"ops": ["block_dense", "block_mod", "attn_norm"], "seq_len": [8], "d_model": [8],
                            "n_heads": [1], "d_ff": [8], "capacity": [0.5]})",
                        "g.json")),
      timing_mode::in_block);
  ASSERT_EQ(e.points.size(), 2u);
  for (const point& p : e.points) {
    EXPECT_EQ(p.timing, timing_mode::in_block);
    EXPECT_EQ(p.block, p.op);
  }
  ASSERT_EQ(e.skipped.size(), 1u);
  EXPECT_EQ(e.skipped[0].p.op, kernels::op::attn_norm);
  EXPECT_EQ(e.skipped[0].reason, "in_block times ops through their block; list block_dense, block_mod or layer_mode");
}

TEST(Grid, InBlockKeysDifferFromIsolatedOnesAndBetweenBlocksOfOneShape) {
  point iso;
  iso.op = kernels::op::attn_norm;
  iso.shape.seq_len = 8;
  iso.shape.d_model = 8;
  iso.shape.n_heads = 1;
  iso.shape.n_kv_heads = 1;
  iso.shape.d_head = 8;
  iso.shape.d_ff = 8;
  // Keys of isolated points are those of files written before timing existed.
  EXPECT_EQ(point_key(iso), "attn_norm|fp32|1|8|8|1|1|8|1|gelu");
  point in_dense = iso;
  in_dense.timing = timing_mode::in_block;
  in_dense.block = kernels::op::block_dense;
  point in_mod = in_dense;
  in_mod.block = kernels::op::block_mod;  // block_mod at capacity 1: the same shape columns
  point dense_row = in_dense;
  dense_row.op = kernels::op::block_dense;
  EXPECT_EQ(point_key(in_dense), "block_dense|fp32|1|8|8|1|1|8|1|gelu|in_block|attn_norm");
  EXPECT_EQ(point_key(dense_row), "block_dense|fp32|1|8|8|1|1|8|1|gelu|in_block");
  EXPECT_NE(point_key(in_mod), point_key(in_dense));
  EXPECT_EQ(parse_timing("in_block"), timing_mode::in_block);
  EXPECT_EQ(parse_timing("isolated"), timing_mode::isolated);
  EXPECT_STREQ(modsim::to_string(timing_mode::in_block), "in_block");
  EXPECT_STREQ(modsim::to_string(timing_mode::isolated), "isolated");
  EXPECT_THROW(parse_timing("warm"), error);
  try {
    parse_timing("warm", "--timing");
  } catch (const error& e) {
    EXPECT_STREQ(e.what(), "--timing: unknown timing 'warm' (expected isolated or in_block)");
  }
}

TEST(Grid, ShardsPartitionThePointsWithoutSplittingAShape) {
  // The quick preset on a CPU: 8 shapes (S 256/512 × d 256/512 × d_ff 1024/2048) of B = 1.
  const expansion all = expand(preset("quick", modsim::backend_kind::cpu));
  const int n = 3;
  std::vector<std::string> seen;
  std::size_t total = 0;
  std::vector<std::vector<std::string>> shapes_of(n);
  for (int i = 1; i <= n; ++i) {
    const expansion part = shard(all, i, n);
    total += part.points.size();
    for (const point& p : part.points) {
      seen.push_back(point_key(p));
      const std::string shape =
          std::to_string(p.shape.seq_len) + "/" + std::to_string(p.shape.d_model) + "/" + std::to_string(p.shape.d_ff);
      if (std::find(shapes_of[i - 1].begin(), shapes_of[i - 1].end(), shape) == shapes_of[i - 1].end())
        shapes_of[i - 1].push_back(shape);
    }
    EXPECT_EQ(part.skipped.size(), i == 1 ? all.skipped.size() : 0u);
  }
  // Every point exactly once.
  EXPECT_EQ(total, all.points.size());
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
  // 8 shapes dealt round-robin to 3 shards: 3, 3 and 2 shapes, none in two shards.
  EXPECT_EQ(shapes_of[0].size(), 3u);
  EXPECT_EQ(shapes_of[1].size(), 3u);
  EXPECT_EQ(shapes_of[2].size(), 2u);
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      for (const auto& s : shapes_of[a])
        EXPECT_EQ(std::find(shapes_of[b].begin(), shapes_of[b].end(), s), shapes_of[b].end()) << s;
}

TEST(Grid, AShardSpecIsIOfN) {
  EXPECT_EQ(parse_shard("2/4"), std::make_pair(2, 4));
  EXPECT_EQ(parse_shard("1/1"), std::make_pair(1, 1));
  for (const char* bad : {"0/4", "5/4", "2", "a/b", "2/0", "-1/3", "1/", "/3"})
    EXPECT_THROW(parse_shard(bad), modsim::error) << bad;
}

// Decode ops (docs/contracts.md "Decode measurements"): counted by hand from the axes.
TEST(Grid, DecodeOpsCrossRoutingAndSkipWhatHasNoRoutedLayer) {
  const grid g = parse_grid(
      R"({"ops": ["decode_dense", "decode_mod"], "batch": [1, 8], "seq_len": [512], "d_model": [256],
          "n_heads": [4], "d_ff": [1024], "capacity": [0.125, 0.5], "decode_routing": ["sync", "pad"]})",
      "g.json");
  const expansion e = expand(g);
  // decode_dense: 2 batches × sync (pad skipped); decode_mod: 2 batches × 2 capacities × 2 routings.
  std::size_t dense = 0, mod = 0;
  for (const point& p : e.points) {
    if (p.op == kernels::op::decode_dense) {
      ++dense;
      EXPECT_EQ(p.decode_routing, modsim::decode_run::sync);
      EXPECT_DOUBLE_EQ(p.shape.capacity, 1.0);
    } else {
      ++mod;
      EXPECT_EQ(p.predictor_hidden, 256);  // the default, capped at d_model = 256
      if (p.decode_routing == modsim::decode_run::pad) {
        // Three standard deviations over capacity·B, in whole rows.
        if (p.shape.batch == 8 && p.shape.capacity == 0.125) {
          EXPECT_DOUBLE_EQ(p.pad_capacity, 4.0 / 8.0);  // 1 + 3·sqrt(7/8) = 3.8 → 4 rows of 8
        }
        // B = 1: the padded block is the whole batch.
        if (p.shape.batch == 1) {
          EXPECT_DOUBLE_EQ(p.pad_capacity, 1.0);
        }
      } else {
        EXPECT_EQ(p.pad_capacity, 0.0);
      }
    }
  }
  EXPECT_EQ(dense, 2u);
  EXPECT_EQ(mod, 8u);
  ASSERT_EQ(e.skipped.size(), 2u);
  EXPECT_NE(e.skipped[0].reason.find("pad is the same step as sync"), std::string::npos);
  // The forced routed count is round(capacity·batch).
  point p = e.points.front();
  p.shape.batch = 8;
  p.shape.capacity = 0.125;
  EXPECT_EQ(decode_routed_count(p), 1);
  p.shape.capacity = 0.5;
  EXPECT_EQ(decode_routed_count(p), 4);
  p.shape.batch = 1;
  p.shape.capacity = 0.125;
  EXPECT_EQ(decode_routed_count(p), 0);
}

TEST(Grid, DecodeStepTakesItsModelsShapeAndNeedsOne) {
  grid g = parse_grid(R"({"ops": ["decode_step"], "batch": [2], "seq_len": [128, 256], "model": "tiny"})", "g.json");
  EXPECT_EQ(g.model_names, std::vector<std::string>{"tiny"});
  // No model loaded: every decode_step point is skipped, saying why.
  expansion none = expand(g);
  EXPECT_TRUE(none.points.empty());
  ASSERT_FALSE(none.skipped.empty());
  EXPECT_NE(none.skipped[0].reason.find("needs a model"), std::string::npos);
  auto m = std::make_shared<sim::model_spec>();
  m->name = "tiny";
  m->d_model = 64;
  m->n_layers = 4;
  m->n_heads = 4;
  m->n_kv_heads = 2;
  m->d_head = 16;
  m->d_ff = 256;
  m->vocab_size = 100;
  sim::routing_spec r;
  r.capacity = 0.25;
  r.sched.kind = sim::schedule_kind::every_other;
  r.predictor_hidden = 32;
  m->routing = r;
  g.models.push_back(m);
  const expansion e = expand(g);
  ASSERT_EQ(e.points.size(), 2u);
  for (const point& p : e.points) {
    EXPECT_EQ(p.shape.d_model, 64);
    EXPECT_EQ(p.shape.n_kv_heads, 2);
    EXPECT_DOUBLE_EQ(p.shape.capacity, 0.25);
    EXPECT_EQ(p.predictor_hidden, 32);
    EXPECT_EQ(p.model_name, "tiny");
  }
  EXPECT_NE(point_key(e.points[0]), point_key(e.points[1]));
  EXPECT_NE(point_key(e.points[0]).find("|tiny"), std::string::npos);
  // Bad routing names are refused where they are written.
  EXPECT_THROW(parse_grid(R"({"ops": ["decode_mod"], "seq_len": [1], "d_model": [8], "n_heads": [2], "d_ff": [8],
                              "decode_routing": ["eager"]})",
                          "g.json"),
               error);
}

TEST(Grid, RecomputeCrossesTrainingOpsOnlyAndDenseTrainIgnoresCapacity) {
  grid g = parse_grid(R"({"ops": ["block_dense_train", "block_mod_train", "block_mod"], "batch": [1, 2],
                          "seq_len": [64], "d_model": [64], "n_heads": [4], "d_ff": [256],
                          "capacity": [0.25, 0.5], "recompute": ["none", "selective", "full"]})",
                      "g.json");
  const expansion e = expand(g);
  auto count = [&](kernels::op o, modsim::recompute r) {
    return std::count_if(e.points.begin(), e.points.end(),
                         [&](const point& p) { return p.op == o && p.recompute == r; });
  };
  // Per batch (2): block_dense_train once per recompute (3), block_mod_train per capacity and
  // recompute (2 x 3), block_mod per capacity (2), which has no recompute axis.
  EXPECT_EQ(e.points.size(), 2u * (3 + 6 + 2));
  for (const auto r : {modsim::recompute::none, modsim::recompute::selective, modsim::recompute::full}) {
    EXPECT_EQ(count(kernels::op::block_dense_train, r), 2);
    EXPECT_EQ(count(kernels::op::block_mod_train, r), 4);
  }
  EXPECT_EQ(count(kernels::op::block_mod, modsim::recompute::none), 4);
  for (const point& p : e.points) {
    if (p.op == kernels::op::block_dense_train) {
      EXPECT_DOUBLE_EQ(p.shape.capacity, 1.0);
    }
  }
  // Without the key every training point is recompute none.
  const expansion plain = expand(parse_grid(R"({"ops": ["block_mod_train"], "seq_len": [64], "d_model": [64],
                                                "n_heads": [4], "d_ff": [256], "capacity": [0.5]})",
                                            "g.json"));
  ASSERT_EQ(plain.points.size(), 1u);
  EXPECT_EQ(plain.points[0].recompute, modsim::recompute::none);
}

TEST(Grid, RecomputeKeysOnlyWhenNotNone) {
  grid g = parse_grid(R"({"ops": ["block_mod_train"], "seq_len": [64], "d_model": [64], "n_heads": [4],
                          "d_ff": [256], "capacity": [0.5], "recompute": ["none", "full"]})",
                      "g.json");
  const expansion e = expand(g);
  ASSERT_EQ(e.points.size(), 2u);
  EXPECT_EQ(point_key(e.points[0]), "block_mod_train|fp32|1|64|64|4|4|256|0.5|gelu");
  EXPECT_EQ(point_key(e.points[1]), "block_mod_train|fp32|1|64|64|4|4|256|0.5|gelu|full");
}

TEST(Grid, ABadRecomputeIsAOneLineError) {
  try {
    parse_grid(R"({"ops": ["block_dense_train"], "seq_len": [8], "d_model": [8], "n_heads": [1], "d_ff": [8],
                   "recompute": ["none", "some"]})",
               "g.json");
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_EQ(std::string(e.what()),
              "g.json: recompute[1]: unknown recompute 'some' (expected none, selective or full)");
  }
}

TEST(Grid, TheTrainPresetEndsWithTheAdamwStepsOfLayersPastTheCaches) {
  // The layer grid's 72 points, then adamw once per layer shape, of layers past the CPU's
  // caches: d 1024 / d_ff 4096, d 2048 / 8192 and d 2048 / 5632 swiglu GQA, and on a GPU
  // d 4096 / 16384: 3 and 4 points, batch 1, capacity 1, recompute none.
  for (const modsim::backend_kind backend : {modsim::backend_kind::cpu, modsim::backend_kind::cuda}) {
    SCOPED_TRACE(to_string(backend));
    const bool gpu = backend == modsim::backend_kind::cuda;
    const std::vector<preset_part> parts = preset_parts("train", backend);
    ASSERT_EQ(parts.size(), 2u);
    const expansion e = expand_parts(parts, timing_mode::isolated);
    ASSERT_EQ(e.points.size(), gpu ? 76u : 75u);
    std::vector<std::int64_t> widths;
    for (std::size_t i = 0; i < e.points.size(); ++i) {
      const point& p = e.points[i];
      EXPECT_EQ(p.op == kernels::op::adamw, i >= 72) << i;
      if (p.op != kernels::op::adamw) continue;
      EXPECT_EQ(p.shape.batch, 1);
      EXPECT_EQ(p.shape.capacity, 1.0);
      EXPECT_EQ(p.recompute, modsim::recompute::none);
      EXPECT_EQ(p.type, gpu ? kernels::dtype::bf16 : kernels::dtype::fp32);
      widths.push_back(p.shape.d_model);
    }
    const std::vector<std::int64_t> want =
        gpu ? std::vector<std::int64_t>{1024, 2048, 2048, 4096} : std::vector<std::int64_t>{1024, 2048, 2048};
    EXPECT_EQ(widths, want);
  }
  // On a CPU the adamw part is configs/grids/adamw-cpu.json, point for point.
  const std::string grids = std::string(MODSIM_SOURCE_DIR) + "/configs/grids/";
  std::vector<std::string> file, part;
  for (const point& p : expand(load_grid(grids + "adamw-cpu.json")).points) file.push_back(point_key(p));
  for (const point& p : expand(preset_parts("train", modsim::backend_kind::cpu).at(1).g).points)
    part.push_back(point_key(p));
  EXPECT_EQ(file, part);
  EXPECT_EQ(file.size(), 3u);
  // In a grid of its own, adamw is measured once per layer shape whatever the batches,
  // sequences and capacities.
  const grid g = parse_grid(R"({"ops": ["adamw"], "batch": [1, 2], "seq_len": [8, 16], "capacity": [0.5, 1],
                                "d_model": [8], "n_heads": [1], "d_ff": [8, 16]})",
                            "g.json");
  EXPECT_EQ(expand(g).points.size(), 2u);
}

TEST(Grid, TheTrainPresetCountsItsPointsOnEitherBackend) {
  // 3 layer shapes x 2 batches x 2 sequence lengths, each with block_dense_train once and
  // block_mod_train at 2 capacities, under 2 recomputations: 3 * 2 * 2 * (1 + 2) * 2 = 72,
  // on the CPU in fp32 and on a GPU in bf16 (sequences up to 2048 tokens, batches up to 4).
  for (const modsim::backend_kind backend : {modsim::backend_kind::cpu, modsim::backend_kind::cuda}) {
    SCOPED_TRACE(to_string(backend));
    const expansion e = expand(preset("train", backend));
    EXPECT_EQ(e.points.size(), 72u);
    EXPECT_TRUE(e.skipped.empty());
    const bool gpu = backend == modsim::backend_kind::cuda;
    for (const point& p : e.points) {
      EXPECT_TRUE(kernels::is_train(p.op));
      EXPECT_EQ(p.type, gpu ? kernels::dtype::bf16 : kernels::dtype::fp32);
      EXPECT_LE(p.shape.seq_len, gpu ? 2048 : 512);
      EXPECT_LE(p.shape.batch, gpu ? 4 : 2);
    }
  }
}
