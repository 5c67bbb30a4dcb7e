// The step's memory footprint (sim/memory.hpp), worked out by hand for a small model.
#include <gtest/gtest.h>

#include "sim/flops.hpp"
#include "sim/memory.hpp"

using namespace modsim::sim;

namespace {

// d 64, 2 layers, 4 heads (d_head 16, d_kv 64), d_ff 256 (gelu), vocab 100.
model_spec small() {
  model_spec m;
  m.name = "small";
  m.d_model = 64;
  m.n_layers = 2;
  m.n_heads = 4;
  m.n_kv_heads = 4;
  m.d_head = 16;
  m.d_ff = 256;
  m.vocab_size = 100;
  return m;
}

workload load(run_mode mode) {
  workload w;
  w.batch = 2;
  w.seq_len = 8;
  w.run = mode;
  w.type = dtype::fp32;  // 4 bytes
  return w;
}

}  // namespace

TEST(Memory, ForwardKeepsTheLargestLayerAndTheLogits) {
  const memory_footprint fp = footprint_of(small(), load(run_mode::forward));
  const double P = double(parameter_count(small()));
  EXPECT_DOUBLE_EQ(fp.weights, P * 4);
  EXPECT_DOUBLE_EQ(fp.training_state, 0);
  EXPECT_DOUBLE_EQ(fp.kv_cache, 0);
  // Per layer: B·n·(3d + 2·d_kv + F)·e = 2·8·(192 + 128 + 256)·4 = 36,864, scores B·H·n²·e =
  // 2·4·64·4 = 2,048; logits B·S·V·e = 2·8·100·4 = 6,400.
  EXPECT_DOUBLE_EQ(fp.scores, 2048);
  EXPECT_DOUBLE_EQ(fp.logits, 6400);
  EXPECT_DOUBLE_EQ(fp.activations, 36864 + 2048 + 6400);
}

TEST(Memory, TrainingKeepsEveryLayerAndTheOptimizerState) {
  const memory_footprint fp = footprint_of(small(), load(run_mode::train));
  const double P = double(parameter_count(small()));
  EXPECT_DOUBLE_EQ(fp.training_state, P * 4 + 2 * P * 4);
  EXPECT_DOUBLE_EQ(fp.activations, 2 * (36864 + 2048) + 6400);
}

TEST(Memory, DecodeCachesKOfTheContextAtARoutedLayer) {
  model_spec m = small();
  routing_spec r;
  r.capacity = 0.5;
  r.sched.kind = schedule_kind::every_other;  // layer 1 routed: k = 4 of S = 8
  m.routing = r;
  const memory_footprint fp = footprint_of(m, load(run_mode::decode));
  // KV: layer 0 B·(S+1)·2·d_kv·e = 2·9·2·64·4 = 9,216; layer 1 2·5·2·64·4 = 5,120.
  EXPECT_DOUBLE_EQ(fp.kv_cache, 9216 + 5120);
  // One new token: 2·1·576·4 = 4,608 plus scores 2·4·1·9·4 = 288 at layer 0 (the larger);
  // logits 2·100·4 = 800.
  EXPECT_DOUBLE_EQ(fp.scores, 288);
  EXPECT_DOUBLE_EQ(fp.activations, 4608 + 288 + 800);
}

// A sliding window of 3 positions: the decode cache holds min(S + 1, 3) = 3 entries per
// sequence and layer, 2·3·2·64·4 = 3,072 bytes a layer; a query reads 3 keys (scores
// 2·4·1·3·4 = 96). Forward, the scores are B·H·n·min(n, W)·e = 2·4·8·3·4 = 768.
TEST(Memory, ASlidingWindowBoundsTheKvCacheAndTheScores) {
  model_spec m = small();
  m.sliding_window = 3;
  const memory_footprint decode = footprint_of(m, load(run_mode::decode));
  EXPECT_DOUBLE_EQ(decode.kv_cache, 2 * 3072);
  EXPECT_DOUBLE_EQ(decode.scores, 96);
  EXPECT_DOUBLE_EQ(decode.activations, 4608 + 96 + 800);
  const memory_footprint forward = footprint_of(m, load(run_mode::forward));
  EXPECT_DOUBLE_EQ(forward.scores, 768);
  EXPECT_DOUBLE_EQ(forward.activations, 36864 + 768 + 6400);
}

TEST(Memory, TheVerdictNamesTheLargestPartAndIsEmptyWhenItFits) {
  memory_footprint fp;
  fp.weights = 0.5e9;
  fp.scores = 35.2e12;
  fp.logits = 0.1e12;
  fp.activations = 35.3e12;
  EXPECT_EQ(memory_verdict(fp, 80e9),
            "does not fit in 80 GB: needs at least 35.3 TB, of which the attention scores of one layer "
            "(B·H·S² unfused) take 35.2 TB");
  EXPECT_EQ(memory_verdict(fp, 40e12), "");
  EXPECT_EQ(memory_verdict(fp, 0), "");  // unknown memory: nothing said
}

TEST(Memory, BytesPrintInDecimalUnits) {
  EXPECT_EQ(format_bytes(80e9), "80 GB");
  EXPECT_EQ(format_bytes(35.2e12), "35.2 TB");
  EXPECT_EQ(format_bytes(512e6), "512 MB");
  EXPECT_EQ(format_bytes(1500), "1.5 kB");
  EXPECT_EQ(format_bytes(999), "999 B");
}
