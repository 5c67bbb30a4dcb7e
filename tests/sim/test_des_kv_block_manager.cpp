// The serving simulator's paged KV cache (sim/des/kv_block_manager.hpp): block counts,
// allocation, the admission watermark, shrinking, freeing and preemption, counted by hand.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/des/kv_block_manager.hpp"

namespace modsim::sim::des {
namespace {

TEST(DesKvBlockManager, BlockBytesAndPool) {
  // 16 tokens x 2 (K and V) x d_kv 64 x 4 bytes (fp32) = 8192 bytes.
  EXPECT_EQ(kv_block_bytes(16, 64, dtype::fp32), 8192);
  // A budget of 10.5 blocks holds 10; a watermark of 0.25 keeps floor(2.5) = 2 free.
  const kv_block_manager kv(16, 8192, 10.5 * 8192, 0.25, 1);
  EXPECT_EQ(kv.total_blocks(), 10);
  EXPECT_EQ(kv.free_blocks(), 10);
  EXPECT_EQ(kv.used_blocks(), 0);
  EXPECT_EQ(kv.watermark_blocks(), 2);
  EXPECT_EQ(kv.blocks_for(0), 0);
  EXPECT_EQ(kv.blocks_for(1), 1);
  EXPECT_EQ(kv.blocks_for(16), 1);
  EXPECT_EQ(kv.blocks_for(17), 2);
}

TEST(DesKvBlockManager, AllocateAdmitShrinkReleaseAndPreempt) {
  // One non-routed layer and one routed layer; 10 blocks of 16 tokens, 2 kept free at admission.
  kv_block_manager kv(16, 1, 10, 0.25, 1);
  seq_kv a, b;
  a.routed = {0};
  b.routed = {0};

  // a: a prompt of 40 tokens, 10 of them routed: ceil(40/16) = 3 + ceil(10/16) = 1 -> 4 blocks.
  const std::vector<std::int64_t> a_routed{10};
  EXPECT_EQ(kv.blocks_after(a, 40, a_routed), 4);
  EXPECT_TRUE(kv.can_admit(4, true));  // 4 <= 10 - 2
  kv.allocate(a, 4);
  kv_block_manager::append(a, 40, a_routed);
  EXPECT_EQ(a.blocks, 4);
  EXPECT_EQ(a.cached, 40);
  EXPECT_EQ(a.routed, (std::vector<std::int64_t>{10}));
  EXPECT_EQ(kv.free_blocks(), 6);

  // b: 64 tokens, 16 routed: 4 + 1 = 5 blocks. With a running the watermark stays free
  // (5 > 6 - 2); with nothing running it may be taken.
  const std::vector<std::int64_t> b_routed{16};
  EXPECT_EQ(kv.blocks_after(b, 64, b_routed), 5);
  EXPECT_FALSE(kv.can_admit(5, true));
  EXPECT_TRUE(kv.can_admit(5, false));
  kv.allocate(b, 5);
  kv_block_manager::append(b, 64, b_routed);
  EXPECT_EQ(kv.free_blocks(), 1);
  EXPECT_EQ(kv.used_blocks(), 9);

  // a decodes one token routed at the routed layer: 41 and 11 tokens still fit 3 + 1 blocks.
  const std::vector<std::int64_t> one{1}, none{0};
  EXPECT_EQ(kv.blocks_after(a, 1, one) - a.blocks, 0);
  // Nine more tokens at the non-routed layer: ceil(49/16) = 4 + 1 = 5 blocks, one more.
  EXPECT_EQ(kv.blocks_after(a, 9, none) - a.blocks, 1);
  EXPECT_TRUE(kv.can_allocate(1));
  EXPECT_FALSE(kv.can_allocate(2));

  // Preempting b returns its 5 blocks and forgets its cached tokens.
  kv.preempt(b);
  EXPECT_EQ(b.blocks, 0);
  EXPECT_EQ(b.cached, 0);
  EXPECT_EQ(b.routed, (std::vector<std::int64_t>{0}));
  EXPECT_EQ(kv.free_blocks(), 6);

  // Shrinking a to 3 blocks returns one.
  kv.shrink(a, 3);
  EXPECT_EQ(a.blocks, 3);
  EXPECT_EQ(kv.free_blocks(), 7);

  // a finishes: all its blocks come back, its token counts stay for its record.
  kv.release(a);
  EXPECT_EQ(a.blocks, 0);
  EXPECT_EQ(a.cached, 40);
  EXPECT_EQ(kv.free_blocks(), 10);
  EXPECT_EQ(kv.used_blocks(), 0);
}

}  // namespace
}  // namespace modsim::sim::des
