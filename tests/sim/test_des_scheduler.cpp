// The serving simulator's continuous-batching scheduler (sim/des/scheduler.hpp): admission,
// a preemption of the last admitted sequence, its recompute and the observer events, step by
// step against a hand-worked schedule.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sim/des/scheduler.hpp"

namespace modsim::sim::des {
namespace {

class event_log final : public serve_observer {
 public:
  void on_admit(std::int64_t id, double t, bool recompute) override {
    add("admit", id, t, recompute ? " recompute" : "");
  }
  void on_first_token(std::int64_t id, double t) override { add("first", id, t); }
  void on_resume(std::int64_t id, double t) override { add("resume", id, t); }
  void on_preempt(std::int64_t id, double t) override { add("preempt", id, t); }
  void on_finish(const request_record& r) override { add("finish", r.id, r.finish_s); }
  std::vector<std::string> events;

 private:
  void add(const char* what, std::int64_t id, double t, const char* extra = "") {
    events.push_back(std::string(what) + " " + std::to_string(id) + " @" + std::to_string(static_cast<int>(t)) + extra);
  }
};

std::vector<std::size_t> batch(std::initializer_list<std::size_t> b) { return b; }

// One dense layer, blocks of 16 tokens, a pool of 5 blocks, no watermark. Requests 0 and 1:
// prompts of 32 tokens (2 blocks each), 3 output tokens.
TEST(DesScheduler, PreemptsTheLastAdmittedAndRecomputesIt) {
  const std::vector<layer_info> layers{layer_info{}};
  serve_options o;
  o.max_batched_tokens = 100;
  o.watermark = 0;
  event_log log;
  scheduler s({{0, 0.0, 32, 3}, {1, 0.0, 32, 3}}, layers, o, kv_block_manager(16, 1, 5, 0, 1), {&log});
  s.enqueue(0);
  s.enqueue(1);

  // Step 1: both prompts admitted (2 + 2 blocks, 1 free); both sample their first token.
  ASSERT_TRUE(s.schedule_step(1));
  EXPECT_EQ(s.batch(), batch({0, 1}));
  EXPECT_EQ(s.decode_seqs(), 0);
  EXPECT_EQ(s.kv().free_blocks(), 1);
  s.complete_step(1);

  // Step 2: 0 decodes its 33rd token (a third block, the last free one); 1 needs one too,
  // none is free: 1, the last admitted, preempts itself (its 2 blocks come back) and goes
  // back to the queue to recompute 32 + 1 tokens.
  ASSERT_TRUE(s.schedule_step(2));
  EXPECT_EQ(s.batch(), batch({0}));
  EXPECT_EQ(s.decode_seqs(), 1);
  EXPECT_EQ(s.running(), 1);
  EXPECT_EQ(s.waiting(), 1);
  EXPECT_EQ(s.kv().free_blocks(), 2);
  EXPECT_EQ(s.sequences()[1].prefill_target, 33);
  s.complete_step(2);

  // Step 3: 0's 34th token fits its 3 blocks; 1's recompute needs ceil(33/16) = 3 blocks, 2
  // are free: it waits. 0 has its 3 tokens and finishes, freeing its 3 blocks.
  ASSERT_TRUE(s.schedule_step(3));
  EXPECT_EQ(s.batch(), batch({0}));
  EXPECT_EQ(s.kv().free_blocks(), 2);
  s.complete_step(3);
  EXPECT_EQ(s.kv().free_blocks(), 5);
  EXPECT_EQ(s.running(), 0);

  // Step 4: 1 is readmitted (3 blocks) and its recompute resumes decoding; step 5 its last token.
  ASSERT_TRUE(s.schedule_step(4));
  EXPECT_EQ(s.batch(), batch({1}));
  EXPECT_EQ(s.kv().free_blocks(), 2);
  s.complete_step(4);
  ASSERT_TRUE(s.schedule_step(5));
  EXPECT_EQ(s.batch(), batch({1}));
  s.complete_step(5);
  EXPECT_FALSE(s.schedule_step(6));
  EXPECT_EQ(s.kv().free_blocks(), 5);

  EXPECT_EQ(log.events,
            (std::vector<std::string>{"admit 0 @1", "admit 1 @1", "first 0 @1", "first 1 @1", "preempt 1 @2",
                                      "finish 0 @3", "admit 1 @4 recompute", "resume 1 @4", "finish 1 @5"}));
  const std::vector<request_record> done = s.take_finished();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].id, 0);
  EXPECT_EQ(done[0].kv_tokens, (std::vector<std::int64_t>{34}));
  EXPECT_EQ(done[0].preemptions, 0);
  EXPECT_EQ(done[1].id, 1);
  EXPECT_EQ(done[1].admitted_s, 1);
  EXPECT_EQ(done[1].first_token_s, 1);
  EXPECT_EQ(done[1].kv_tokens, (std::vector<std::int64_t>{34}));
  EXPECT_EQ(done[1].preemptions, 1);
}

// A routed layer of capacity 0.25 caches ceil(0.25 n) of a prefill chunk's n tokens; without
// chunked prefill a prompt over the remaining token budget waits for the next step.
TEST(DesScheduler, PrefillPlansTopKAtRoutedLayersAndAdmitsWholePrompts) {
  layer_info dense, routed;
  routed.index = 1;
  routed.mod_routed = true;
  routed.capacity = 0.25;
  serve_options o;
  o.max_batched_tokens = 100;
  o.watermark = 0;
  scheduler s({{0, 0.0, 64, 1}, {1, 0.0, 40, 1}}, {dense, routed}, o, kv_block_manager(16, 1, 100, 0, 1), {});
  s.enqueue(0);
  s.enqueue(1);
  // 64 tokens fit the budget of 100; 40 more do not (36 left): only request 0 runs.
  ASSERT_TRUE(s.schedule_step(0));
  EXPECT_EQ(s.batch(), batch({0}));
  EXPECT_EQ(s.sequences()[0].nr_add, 64);
  EXPECT_EQ(s.sequences()[0].add, (std::vector<std::int64_t>{16}));
  // 4 blocks at the dense layer, 1 at the routed one.
  EXPECT_EQ(s.kv().used_blocks(), 5);
  s.complete_step(0);  // one output token: request 0 finishes
  ASSERT_TRUE(s.schedule_step(1));
  EXPECT_EQ(s.batch(), batch({1}));
  EXPECT_EQ(s.sequences()[1].add, (std::vector<std::int64_t>{10}));  // ceil(0.25 x 40)
  EXPECT_EQ(s.kv().used_blocks(), 3 + 1);
}

}  // namespace
}  // namespace modsim::sim::des
