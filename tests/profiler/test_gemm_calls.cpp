// profiler/gemm_calls.hpp: the GEMMs a point makes the CUDA backend call, counted by hand, and
// the metadata that sets the library's choice beside the cost model's.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "profiler/gemm_calls.hpp"

namespace modsim::profiler {
namespace {

// block_mod, bf16, B 2, S 10, capacity 0.5 (k 5: T = 10 routed rows), d 64, 4 heads in 2 KV
// groups (d_head 16, d_q 64, d_kv 32), d_ff 128, gelu.
point routed_block() {
  point p;
  p.op = kernels::op::block_mod;
  p.block = kernels::op::block_mod;
  p.type = kernels::dtype::bf16;
  p.shape.batch = 2;
  p.shape.seq_len = 10;
  p.shape.d_model = 64;
  p.shape.n_heads = 4;
  p.shape.n_kv_heads = 2;
  p.shape.d_head = 16;
  p.shape.d_ff = 128;
  p.shape.capacity = 0.5;
  return p;
}

const gemm_call* find(const std::vector<gemm_call>& calls, std::int64_t m, std::int64_t n, std::int64_t k,
                      std::int64_t batch) {
  const auto it = std::find_if(calls.begin(), calls.end(), [&](const gemm_call& c) {
    return c.query.m == m && c.query.n == n && c.query.k == k && c.query.batch == batch;
  });
  return it == calls.end() ? nullptr : &*it;
}

TEST(GemmCalls, ARoutedBlockCallsTheGemmsOfItsOpsOnItsRoutedRows) {
  const std::vector<gemm_call> calls = gemm_calls(routed_block());
  // Q (10×64 over 64) shared with out_proj (10×64 over d_q 64), K and V (10×32 over 64),
  // scores (8 products of 5×5 over 16, keys transposed), values (8 of 5×16 over 5), up
  // (10×128 over 64), down (10×64 over 128): six shapes.
  ASSERT_EQ(calls.size(), 6u);
  const gemm_call* q = find(calls, 10, 64, 64, 1);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->ops, "qkv_proj,out_proj");
  ASSERT_NE(find(calls, 10, 32, 64, 1), nullptr);
  EXPECT_EQ(find(calls, 10, 32, 64, 1)->ops, "qkv_proj");
  const gemm_call* scores = find(calls, 5, 5, 16, 8);
  ASSERT_NE(scores, nullptr);
  EXPECT_TRUE(scores->query.b_transposed);
  EXPECT_EQ(scores->ops, "attn_scores");
  ASSERT_NE(find(calls, 5, 16, 5, 8), nullptr);
  EXPECT_FALSE(find(calls, 5, 16, 5, 8)->query.b_transposed);
  EXPECT_EQ(find(calls, 10, 128, 64, 1)->ops, "mlp_up");
  EXPECT_EQ(find(calls, 10, 64, 128, 1)->ops, "mlp_down");
  for (const gemm_call& c : calls) EXPECT_EQ(c.query.type, kernels::dtype::bf16);
}

TEST(GemmCalls, DistinctCallsOverPointsAreListedOnce) {
  point up = routed_block();
  up.op = kernels::op::mlp_up;  // a single-op point of the same shape: its one call is the block's
  const std::vector<gemm_call> calls = distinct_gemm_calls({routed_block(), up});
  EXPECT_EQ(calls.size(), 6u);
  point dense = routed_block();
  dense.op = dense.block = kernels::op::block_dense;
  dense.shape.capacity = 1.0;  // 20 rows: six more shapes (the attention over 10 tokens)
  EXPECT_EQ(distinct_gemm_calls({routed_block(), dense}).size(), 12u);
}

TEST(GemmCalls, TheMetadataSetsTheLibrarysTileBesideTheModels) {
  const std::vector<gemm_call> calls = gemm_calls(routed_block());
  std::vector<kernels::backend::gemm_choice> choices(calls.size());
  // The library names a 64×64 tile (cuBLAS's m×n: the call's columns × rows) and no split
  // for the first call; the model, on 132 SMs, takes 64×64 for 10×64 over 64 (one tile, the
  // smallest area) with no split (K = 64 < 256). The others the library could not name.
  choices[0].known = true;
  choices[0].tile_m = 64;
  choices[0].tile_n = 64;
  choices[0].tile_id = 15;
  choices[1].note = "the heuristic found no algorithm";
  const boost::json::object o = gemm_choices_json(calls, choices, 132);
  EXPECT_EQ(o.at("known").as_int64(), 1);
  EXPECT_EQ(o.at("same_tile").as_int64(), 1);
  EXPECT_EQ(o.at("same_split_k").as_int64(), 1);
  const boost::json::array& rows = o.at("calls").as_array();
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[0].at("library").at("tile").as_string(), "64x64");
  EXPECT_EQ(rows[0].at("model").at("tile").as_string(), "64x64");
  EXPECT_EQ(rows[1].at("library").at("note").as_string(), "the heuristic found no algorithm");
  // A tall tile: cuBLAS's 256×128 spans 256 of the call's columns and 128 of its rows.
  choices[0].tile_m = 256;
  choices[0].tile_n = 128;
  const boost::json::object tall = gemm_choices_json(calls, choices, 132);
  EXPECT_EQ(tall.at("calls").as_array()[0].at("library").at("tile").as_string(), "128x256");
  EXPECT_EQ(tall.at("same_tile").as_int64(), 0);
  // Without an SM count there is no model column.
  EXPECT_FALSE(gemm_choices_json(calls, choices, 0).at("calls").as_array()[0].as_object().contains("model"));
}

TEST(GemmCalls, TheSmCountComesFromTheDeviceDescription) {
  EXPECT_EQ(sm_count_of("NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 1980 MHz"), 132);
  EXPECT_EQ(sm_count_of("Intel(R) Xeon(R) Processor, 2 threads"), 0);
}

}  // namespace
}  // namespace modsim::profiler
