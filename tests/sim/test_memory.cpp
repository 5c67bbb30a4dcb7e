// The step's memory footprint (sim/model/memory.hpp), worked out by hand for a small model.
#include <gtest/gtest.h>

#include "sim/model/flops.hpp"
#include "sim/model/memory.hpp"
#include "small_model.hpp"

using namespace modsim::sim;
using modsim::attention_impl;

namespace {

// d 64, 2 layers, 4 heads (d_head 16, d_kv 64), d_ff 256 (gelu), vocab 100.
model_spec small() { return test::small_dense(); }

workload load(run_mode mode) {
  workload w;
  w.batch = 2;
  w.seq_len = 8;
  w.run = mode;
  w.type = dtype::fp32;  // 4 bytes
  return w;
}

}  // namespace

TEST(Memory, UnfusedForwardKeepsTheLargestLayerItsScoresAndTheLogits) {
  const memory_footprint fp = footprint_of(small(), load(run_mode::forward), attention_impl::unfused);
  const double P = double(parameter_count(small()));
  EXPECT_DOUBLE_EQ(fp.weights, P * 4);
  EXPECT_DOUBLE_EQ(fp.gradients, 0);
  EXPECT_DOUBLE_EQ(fp.optimizer_state, 0);
  EXPECT_DOUBLE_EQ(fp.kv_cache, 0);
  // Per layer: B·n·(3d + 2·d_kv + F)·e = 2·8·(192 + 128 + 256)·4 = 36,864, scores B·H·n²·e =
  // 2·4·64·4 = 2,048; logits B·S·V·e = 2·8·100·4 = 6,400.
  EXPECT_DOUBLE_EQ(fp.attention_buffers, 2048);
  EXPECT_DOUBLE_EQ(fp.logits, 6400);
  EXPECT_DOUBLE_EQ(fp.activations, 36864 + 2048 + 6400);
}

TEST(Memory, TrainingKeepsEveryLayerAndTheOptimizerState) {
  const memory_footprint fp = footprint_of(small(), load(run_mode::train), attention_impl::unfused);
  const double P = double(parameter_count(small()));
  EXPECT_DOUBLE_EQ(fp.gradients, P * 4);
  EXPECT_DOUBLE_EQ(fp.optimizer_state, 2 * P * 4);
  EXPECT_DOUBLE_EQ(fp.training_state(), P * 4 + 2 * P * 4);
  // What each layer's forward keeps for its backward (activations_kept): its input T·d = 16·64 =
  // 1,024 elements; per row (16) the normed input, q, k, v, the attention output, the residual
  // sum and the normed MLP input 3·64 + 2·64 + 2·64 = 448, the MLP's pre-activation and
  // activation 2·256 = 512: 15,360; the probabilities B·H·n² = 2·4·64 = 512. 16,896 elements,
  // 67,584 bytes a layer, two layers, and the logits 6,400.
  EXPECT_DOUBLE_EQ(fp.activations, 2 * 67584 + 6400);
  // bf16 weights add an fp32 master copy: 2·P gradients + 8·P moments + 4·P master.
  workload bf16 = load(run_mode::train);
  bf16.type = dtype::bf16;
  const memory_footprint half = footprint_of(small(), bf16, attention_impl::unfused);
  EXPECT_DOUBLE_EQ(half.gradients, 2 * P);
  EXPECT_DOUBLE_EQ(half.optimizer_state, 12 * P);
}

TEST(Memory, RecomputationKeepsLessForTheBackwardPass) {
  workload w = load(run_mode::train);
  // Selective: no layer keeps its probabilities (2,048 bytes of the 67,584 a layer keeps: see
  // TrainingKeepsEveryLayerAndTheOptimizerState), one layer's are rebuilt at a time.
  w.recompute = recompute_mode::selective;
  EXPECT_DOUBLE_EQ(footprint_of(small(), w, attention_impl::unfused).activations, 2 * (67584 - 2048) + 2048 + 6400);
  // Full: each layer's input B·S·d·e = 2·8·64·4 = 4,096, and one layer's activations rebuilt.
  w.recompute = recompute_mode::full;
  EXPECT_DOUBLE_EQ(footprint_of(small(), w, attention_impl::unfused).activations, 2 * 4096 + 67584 + 6400);
}

TEST(Memory, DecodeCachesKOfTheContextAtARoutedLayer) {
  model_spec m = small();
  routing_spec r;
  r.capacity = 0.5;
  r.sched.kind = schedule_kind::every_other;  // layer 1 routed: k = 4 of S = 8
  m.routing = r;
  const memory_footprint fp = footprint_of(m, load(run_mode::decode), attention_impl::unfused);
  // KV: layer 0 B·(S+1)·2·d_kv·e = 2·9·2·64·4 = 9,216; layer 1 2·5·2·64·4 = 5,120.
  EXPECT_DOUBLE_EQ(fp.kv_cache, 9216 + 5120);
  // One new token: 2·1·576·4 = 4,608 plus scores 2·4·1·9·4 = 288 at layer 0 (the larger);
  // logits 2·100·4 = 800.
  EXPECT_DOUBLE_EQ(fp.attention_buffers, 288);
  EXPECT_DOUBLE_EQ(fp.activations, 4608 + 288 + 800);
}

TEST(Memory, FusedForwardKeepsRowStatisticsAndTheOutputInsteadOfScores) {
  const memory_footprint fp = footprint_of(small(), load(run_mode::forward), attention_impl::fused);
  // No n x n scores: per-row statistics B·H·n·4 = 2·4·8·4 = 256 and the output B·n·H·d_head·e =
  // 2·8·4·16·4 = 4,096; the rest of the layer as unfused (36,864), logits 6,400.
  EXPECT_DOUBLE_EQ(fp.attention_buffers, 256 + 4096);
  EXPECT_DOUBLE_EQ(fp.activations, 36864 + 4352 + 6400);
  EXPECT_EQ(fp.attention, attention_impl::fused);
}

TEST(Memory, FusedDecodeKeepsOneQueryRowPerSequence) {
  model_spec m = small();
  routing_spec r;
  r.capacity = 0.5;
  r.sched.kind = schedule_kind::every_other;
  m.routing = r;
  const memory_footprint fp = footprint_of(m, load(run_mode::decode), attention_impl::fused);
  EXPECT_DOUBLE_EQ(fp.kv_cache, 9216 + 5120);  // the cache does not depend on the kernel
  // One query per sequence: statistics 2·4·1·4 = 32, output 2·1·64·4 = 512.
  EXPECT_DOUBLE_EQ(fp.attention_buffers, 32 + 512);
  EXPECT_DOUBLE_EQ(fp.activations, 4608 + 544 + 800);
}

TEST(Memory, AFusedPrefillOf64kTokensFitsWhereTheUnfusedOneDoesNot) {
  // dense-220m's shape (d 1024, 16 layers, 16 heads of 64, d_ff 4096, vocab 32,000), bf16,
  // one sequence of 65,536 tokens on 80 GB.
  model_spec m;
  m.name = "dense-220m";
  m.d_model = 1024;
  m.n_layers = 16;
  m.n_heads = 16;
  m.n_kv_heads = 16;
  m.d_head = 64;
  m.d_ff = 4096;
  m.vocab_size = 32000;
  workload w;
  w.batch = 1;
  w.seq_len = 65536;
  w.type = dtype::bf16;
  const memory_footprint unfused = footprint_of(m, w, attention_impl::unfused);
  const memory_footprint fused = footprint_of(m, w, attention_impl::fused);
  // Unfused: B·H·S²·e = 16·65,536²·2 = 137,438,953,472 bytes of scores.
  EXPECT_DOUBLE_EQ(unfused.attention_buffers, 137438953472.0);
  EXPECT_FALSE(fits_in(unfused, 80e9));
  EXPECT_NE(memory_verdict(unfused, 80e9).find("the attention scores of one layer (B·H·S² unfused) take 137 GB"),
            std::string::npos);
  // Fused: 16·65,536·4 = 4,194,304 of statistics + 65,536·1,024·2 = 134,217,728 of output.
  EXPECT_DOUBLE_EQ(fused.attention_buffers, 4194304.0 + 134217728.0);
  // Weights ~0.5 GB, the layer 65,536·(3·1,024 + 2·1,024 + 4,096)·2 = 1.21 GB, logits
  // 65,536·32,000·2 = 4.19 GB: about 6 GB.
  EXPECT_TRUE(fits_in(fused, 80e9));
  EXPECT_EQ(memory_verdict(fused, 80e9), "");
}

// A sliding window of 3 positions: the decode cache holds min(S + 1, 3) = 3 entries per
// sequence and layer, 2·3·2·64·4 = 3,072 bytes a layer; a query reads 3 keys (scores
// 2·4·1·3·4 = 96). Forward, the scores are B·H·n·min(n, W)·e = 2·4·8·3·4 = 768.
TEST(Memory, ASlidingWindowBoundsTheKvCacheAndTheScores) {
  model_spec m = small();
  m.sliding_window = 3;
  const memory_footprint decode = footprint_of(m, load(run_mode::decode), attention_impl::unfused);
  EXPECT_DOUBLE_EQ(decode.kv_cache, 2 * 3072);
  EXPECT_DOUBLE_EQ(decode.attention_buffers, 96);
  EXPECT_DOUBLE_EQ(decode.activations, 4608 + 96 + 800);
  const memory_footprint forward = footprint_of(m, load(run_mode::forward), attention_impl::unfused);
  EXPECT_DOUBLE_EQ(forward.attention_buffers, 768);
  EXPECT_DOUBLE_EQ(forward.activations, 36864 + 768 + 6400);
}

TEST(Memory, TheVerdictNamesTheLargestPartAndIsEmptyWhenItFits) {
  memory_footprint fp;
  fp.weights = 0.5e9;
  fp.attention_buffers = 35.2e12;
  fp.logits = 0.1e12;
  fp.activations = 35.3e12;
  EXPECT_EQ(memory_verdict(fp, 80e9),
            "does not fit in 80 GB: needs at least 35.3 TB, of which the attention scores of one layer "
            "(B·H·S² unfused) take 35.2 TB");
  EXPECT_EQ(memory_verdict(fp, 40e12), "");
  EXPECT_EQ(memory_verdict(fp, 0), "");  // unknown memory: nothing said
  EXPECT_TRUE(fits_in(fp, 0));
  EXPECT_TRUE(fits_in(fp, fp.total()));
  EXPECT_FALSE(fits_in(fp, fp.total() - 1));
  fp.attention = attention_impl::fused;
  EXPECT_EQ(memory_verdict(fp, 80e9),
            "does not fit in 80 GB: needs at least 35.3 TB, of which the fused attention's row statistics and output "
            "of one layer take 35.2 TB");
}

TEST(Memory, BytesPrintInDecimalUnits) {
  EXPECT_EQ(format_bytes(80e9), "80 GB");
  EXPECT_EQ(format_bytes(35.2e12), "35.2 TB");
  EXPECT_EQ(format_bytes(512e6), "512 MB");
  EXPECT_EQ(format_bytes(1500), "1.5 kB");
  EXPECT_EQ(format_bytes(999), "999 B");
}

// A layer of d 2, one head of width 2, d_ff 3, B 1, S 4 (fp32), its elements counted by hand.
// Dense: input 8, per row (4 rows) normed input 2, q 2, k 2, v 2, attention output 2, residual
// sum 2, normed MLP input 2, up 3, activation 3 = 20 → 80, probabilities 1·1·4·4 = 16:
// 104 elements, 416 bytes. MoD at c = 1/2 (k 2): input 8, positions 2 and weights 2, 2 rows of
// 20 plus the block's output 2 each = 44, probabilities 1·1·2·2 = 4: 60 elements, 240 bytes.
TEST(TrainMemory, WhatOneLayerKeepsForItsBackwardCountedByHand) {
  model_spec m;
  m.d_model = 2;
  m.n_layers = 1;
  m.n_heads = 1;
  m.n_kv_heads = 1;
  m.d_head = 2;
  m.d_ff = 3;
  workload w;
  w.run = run_mode::train;
  w.batch = 1;
  w.seq_len = 4;
  w.type = modsim::dtype::fp32;
  layer_routing dense;
  const kept_activations kd = activations_kept(m, dense, w, attention_impl::unfused);
  EXPECT_DOUBLE_EQ(kd.total(), 416);
  EXPECT_DOUBLE_EQ(kd.scores, 64);
  EXPECT_DOUBLE_EQ(kd.input, 32);
  layer_routing routed;
  routed.routed = routed.mod_routed = true;
  routed.capacity = 0.5;
  const kept_activations kr = activations_kept(m, routed, w, attention_impl::unfused);
  EXPECT_DOUBLE_EQ(kr.total(), 240);
  EXPECT_DOUBLE_EQ(kr.total() - kr.scores, 224);  // selective: the probabilities rebuilt
  EXPECT_DOUBLE_EQ(kr.input, 32);                 // full: the input alone
  // Fused attention keeps each row's softmax statistics (fp32) instead: 1·1·2 rows · 4 bytes.
  EXPECT_DOUBLE_EQ(activations_kept(m, routed, w, attention_impl::fused).scores, 8);
}
