// kernels/block_timeline.cpp and the CPU backend's timed_block_run: per-op times of one block
// run from boundaries on one timeline.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "kernels/block_timeline.hpp"

namespace modsim::kernels {
namespace {

using test::make_ws;
using test::moe_shape;
using test::small_shape;

std::vector<std::string> names(const std::vector<backend::op_time>& ops) {
  std::vector<std::string> out;
  for (const auto& t : ops) out.emplace_back(to_string(t.o));
  return out;
}

TEST(BlockTimeline, AnOpsTimeIsTheSumOfTheIntervalsEndingAtItsMarks) {
  // Two heads, interleaved: scores 0→10 and 25→40, softmax 10→25 and 40→60 (ns).
  block_timeline t;
  t.mark(op::attn_scores, 10);
  t.mark(op::attn_softmax, 25);
  t.mark(op::attn_scores, 40);
  t.mark(op::attn_softmax, 60);
  std::vector<backend::op_time> ops = {{op::router, 1.0}};  // cleared by fold
  const double total = t.fold(ops);
  ASSERT_EQ(names(ops), (std::vector<std::string>{"attn_scores", "attn_softmax"}));
  EXPECT_DOUBLE_EQ(ops[0].seconds, 25e-9);
  EXPECT_DOUBLE_EQ(ops[1].seconds, 35e-9);
  EXPECT_DOUBLE_EQ(total, 60e-9);
  t.clear();
  EXPECT_EQ(t.fold(ops), 0.0);
  EXPECT_TRUE(ops.empty());
}

// The op lists by hand, in the order the paper's block runs them (= sim/model/flops's block_costs).
const std::vector<std::string> dense_gelu = {"attn_norm", "qkv_proj", "attn_scores", "attn_softmax", "attn_values",
                                             "out_proj",  "mlp_norm", "mlp_up",      "mlp_act",      "mlp_down"};

std::vector<std::string> with(std::vector<std::string> v, const std::string& after, const std::string& name) {
  for (auto it = v.begin(); it != v.end(); ++it)
    if (*it == after) {
      v.insert(it + 1, name);
      return v;
    }
  return v;
}

std::vector<std::string> routed(std::vector<std::string> block) {
  block.insert(block.begin(), {"router", "topk", "gather"});
  block.push_back("scatter");
  return block;
}

std::vector<std::string> moe(std::vector<std::string> block) {
  block.erase(block.begin() + 7, block.end());  // after mlp_norm
  block.push_back("expert_router");
  block.push_back("experts");
  return block;
}

TEST(CpuBackend, TimedBlockRunTimesEveryOpOfTheBlockOnOneTimeline) {
  struct block_case {
    op o;
    block_shape shape;
    std::vector<std::string> ops;
  };
  const std::vector<block_case> cases = {
      {op::block_dense, small_shape(1.0), dense_gelu},
      {op::block_dense, small_shape(1.0, mlp_kind::swiglu), with(dense_gelu, "mlp_up", "mlp_gate")},
      {op::block_mod, small_shape(0.25), routed(dense_gelu)},
      {op::layer_mode, moe_shape(moe_variant::staged), routed(moe(dense_gelu))},
      {op::layer_mode, moe_shape(moe_variant::integrated), moe(dense_gelu)},
  };
  auto be = make_cpu_backend(1);
  std::vector<backend::op_time> ops;
  for (const block_case& c : cases) {
    auto ws = make_ws(*be, c.shape);
    for (int repeat = 0; repeat < 3; ++repeat) {
      const auto before = std::chrono::steady_clock::now();
      const double block = be->timed_block_run(c.o, *ws, ops);
      const double outside = std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
      ASSERT_EQ(names(ops), c.ops) << to_string(c.o);
      double sum = 0;
      for (const auto& t : ops) {
        EXPECT_GE(t.seconds, 0.0) << to_string(t.o);
        sum += t.seconds;
      }
      // The op times partition the block's time: same readings, added in the listed order.
      EXPECT_EQ(sum, block) << to_string(c.o);
      // The boundaries lie inside the call.
      EXPECT_GT(block, 0.0);
      EXPECT_LE(block, outside);
    }
  }
}

TEST(CpuBackend, TimedBlockRunComputesWhatRunComputes) {
  auto be = make_cpu_backend(1);
  for (op o : {op::block_dense, op::block_mod}) {
    auto plain = make_ws(*be, small_shape(0.5));
    auto timed = make_ws(*be, small_shape(0.5));
    be->run(o, *plain);
    std::vector<backend::op_time> ops;
    be->timed_block_run(o, *timed, ops);
    const tensor result = result_tensor(o, plain->shape());
    EXPECT_EQ(timed->download(result), plain->download(result)) << to_string(o);
  }
}

TEST(CpuBackend, TimedBlockRunOfASingleOpIsBadInput) {
  auto be = make_cpu_backend(1);
  auto ws = make_ws(*be, small_shape(0.5));
  std::vector<backend::op_time> ops;
  try {
    be->timed_block_run(op::qkv_proj, *ws, ops);
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_NE(std::string(e.what()).find("qkv_proj is not a block"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace modsim::kernels
