// The training answer (analysis/training.hpp): per step, at equal FLOPs and at a FLOP budget.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "analysis/analysis.hpp"
#include "analysis/training.hpp"
#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/model/flops.hpp"
#include "../sim/small_model.hpp"

using namespace modsim;

namespace {

sim::hardware_spec h100() {
  return sim::load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json");
}

sim::workload train_load(std::int64_t batch, std::int64_t seq) {
  sim::workload w;
  w.batch = batch;
  w.seq_len = seq;
  w.run = sim::run_mode::train;
  w.type = sim::dtype::bf16;
  return w;
}

analysis::training_section training_of(const sim::model_spec& m, const sim::workload& w,
                                       std::optional<double> budget = std::nullopt) {
  analysis::scenario s;
  s.training = analysis::training_request{budget};
  const analysis::analysis_result r = analysis::analyze({m, w, h100()}, s);
  EXPECT_TRUE(r.training.has_value()) << r.training_missing;
  return *r.training;
}

}  // namespace

TEST(Training, ModelFlopsPerStepAreThreeForwardPassesOfMatmulCountedByHand) {
  // small_dense at B = 2, S = 8 (T = 16 tokens): per layer Q, K, V, O 4·2·16·64·64 = 524,288, the
  // scores and values 2·(2·2·8²·64) = 32,768, the MLP 2·(2·16·64·256) = 1,048,576: 1,605,632;
  // two layers 3,211,264, the LM head 2·16·64·100 = 204,800: a forward 3,416,064, × 3 = 10,248,192.
  const analysis::training_section t = training_of(sim::test::small_dense(), train_load(2, 8), 6e18);
  EXPECT_EQ(t.model.model_flops, 10'248'192);
  EXPECT_EQ(t.model.tokens, 16);
  // The budget by hand: 6e18 / 10,248,192 steps of 16 tokens, each step_s long.
  ASSERT_TRUE(t.budget.has_value());
  const double steps = 6e18 / 10'248'192.0;
  EXPECT_DOUBLE_EQ(t.budget->flops, 6e18);
  EXPECT_DOUBLE_EQ(t.budget->model_steps, steps);
  EXPECT_DOUBLE_EQ(t.budget->model_tokens, steps * 16);
  EXPECT_DOUBLE_EQ(t.budget->model_wall_s, steps * t.model.step_s);
  // MFU: model FLOPs over the step at the H100's bf16 peak, 989.4 TFLOP/s (its hardware file).
  EXPECT_DOUBLE_EQ(t.model.mfu, 10'248'192.0 / (t.model.step_s * 989.4e12));
  EXPECT_DOUBLE_EQ(t.model.tokens_per_s, 16 / t.model.step_s);
}

TEST(Training, ADenseModelIsItsOwnBaselineAtEqualWallClock) {
  const analysis::training_section t = training_of(sim::test::small_dense(), train_load(2, 8));
  EXPECT_DOUBLE_EQ(t.wall_ratio, 1.0);
  for (const analysis::training_source& s : t.sources) EXPECT_DOUBLE_EQ(s.value, 0.0) << s.key;
  EXPECT_FALSE(t.budget.has_value());
}

TEST(Training, MemorySplitsWeightsGradientsAndOptimizerStateByHand) {
  // bf16: weights and gradients 2 bytes per parameter, two fp32 moments and an fp32 master copy
  // 12 (P: the model's parameter count).
  const sim::model_spec m = sim::test::small_dense();
  const double P = static_cast<double>(sim::parameter_count(m));
  const analysis::training_section t = training_of(m, train_load(2, 8));
  EXPECT_DOUBLE_EQ(t.model.memory.weights, 2 * P);
  EXPECT_DOUBLE_EQ(t.model.memory.gradients, 2 * P);
  EXPECT_DOUBLE_EQ(t.model.memory.optimizer_state, 12 * P);
  EXPECT_GT(t.model.memory.activations, 0);
}

TEST(Training, TheWallClockAtEqualFlopsIsTheStepRatioOverTheFlopRatioAndItsSourcesSumToIt) {
  const sim::model_spec m = sim::load_model(std::string(MODSIM_SOURCE_DIR) + "/configs/models/mod-220m.json");
  const analysis::training_section t = training_of(m, train_load(8, 2048), 6e18);
  EXPECT_NEAR(t.wall_ratio, t.time_ratio / t.model_flop_ratio, 1e-12);
  EXPECT_NEAR(t.model_flop_ratio, double(t.model.model_flops) / double(t.baseline.model_flops), 1e-12);
  double sum = 0;
  for (const analysis::training_source& s : t.sources) sum += s.value;
  EXPECT_NEAR(sum, t.wall_ratio - 1, 1e-9);
  // MoD routes tokens, not weights: its routing ops cost time its model FLOPs do not pay for, and
  // its optimizer step is the baseline's (the same parameters but the router's).
  bool routing = false, optimizer = false;
  for (const analysis::training_source& s : t.sources) {
    if (s.key == "routing") routing = s.value > 0;
    if (s.key == "optimizer") optimizer = s.value > 0;
  }
  EXPECT_TRUE(routing);
  EXPECT_TRUE(optimizer);
  // At the budget the wall-clocks are in the same ratio, and the model takes more steps.
  ASSERT_TRUE(t.budget.has_value());
  EXPECT_NEAR(t.budget->model_wall_s / t.budget->baseline_wall_s, t.wall_ratio, 1e-9);
  EXPECT_GT(t.budget->model_steps, t.budget->baseline_steps);
}

TEST(Training, AForwardWorkloadIsAnsweredAsTheSameBatchTrained) {
  sim::workload fwd = train_load(2, 8);
  fwd.run = sim::run_mode::forward;
  const analysis::training_section a = training_of(sim::test::small_dense(), fwd);
  const analysis::training_section b = training_of(sim::test::small_dense(), train_load(2, 8));
  EXPECT_EQ(a.load.run, sim::run_mode::train);
  EXPECT_DOUBLE_EQ(a.model.step_s, b.model.step_s);
  EXPECT_EQ(a.model.model_flops, b.model.model_flops);
}

TEST(Training, ABudgetThatIsNotAPositiveNumberIsBadInputNamingTheFlag) {
  for (double bad : {0.0, -6e18, std::nan(""), std::numeric_limits<double>::infinity()}) {
    try {
      (void)analysis::checked_flop_budget(bad, "--flop-budget");
      ADD_FAILURE() << bad << " accepted";
    } catch (const modsim::error& e) {
      EXPECT_EQ(e.kind(), error_kind::bad_input);
      EXPECT_NE(std::string(e.what()).find("--flop-budget"), std::string::npos) << e.what();
    }
  }
  EXPECT_DOUBLE_EQ(analysis::checked_flop_budget(6e18, "--flop-budget"), 6e18);
  // Through analyze as well: the part fails, the command line's error.
  analysis::scenario s;
  s.training = analysis::training_request{-1.0};
  EXPECT_THROW((void)analysis::analyze({sim::test::small_dense(), train_load(2, 8), h100()}, s), modsim::error);
}
