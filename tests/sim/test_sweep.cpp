// The design-space sweep (sim/cost/sweep.hpp): enumeration, the Pareto front, the paper's point,
// parallel evaluation.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "sim/model/config.hpp"
#include "core/error.hpp"
#include "sim/cost/cost.hpp"
#include "sim/model/flops.hpp"
#include "sim/cost/predict.hpp"
#include "sim/common/io.hpp"
#include "sim/cost/sweep.hpp"

namespace modsim::sim {
namespace {

std::string config(const std::string& rel) { return std::string(MODSIM_SOURCE_DIR) + "/configs/" + rel; }

TEST(Sweep, ParetoFrontOfAHandMadePointSetIsTheUndominatedPoints) {
  //        x  y
  // 0:     1  9   front (smallest x)
  // 1:     2  5   front
  // 2:     3  6   dominated by 1
  // 3:     4  2   front
  // 4:     4  3   dominated by 3 (same x, larger y)
  // 5:     6  2   dominated by 3 (larger x, same y)
  // 6:     7  1   front (smallest y)
  // 7:     2  5   equal to 1: front too
  // 8:   NaN  0   never on the front
  const std::vector<double> x = {1, 2, 3, 4, 4, 6, 7, 2, std::nan("")};
  const std::vector<double> y = {9, 5, 6, 2, 3, 2, 1, 5, 0};
  const std::vector<bool> expected = {true, true, false, true, false, false, true, true, false};
  EXPECT_EQ(pareto_front(x, y), expected);
}

TEST(Sweep, ParetoFrontOfASinglePointIsThatPoint) {
  EXPECT_EQ(pareto_front({3}, {4}), std::vector<bool>{true});
  EXPECT_TRUE(pareto_front({}, {}).empty());
}

TEST(Sweep, DefaultSweepContainsThePapersPointWithItsExactFlops) {
  const model_spec base = load_model(config("models/mod-220m.json"));
  const cost_model cost(load_hardware(config("hardware/h100-sxm.json")));
  sweep_options o;
  o.load.seq_len = 2048;
  const sweep_result r = run_sweep(base, default_space(base), predicted_time(cost), o);
  const int i = paper_point_index(r);
  ASSERT_GE(i, 0);
  const sweep_point& p = r.points[static_cast<std::size_t>(i)];
  EXPECT_EQ(p.variant, sweep_variant::mod);
  EXPECT_DOUBLE_EQ(p.capacity, 0.125);
  EXPECT_EQ(p.schedule, "every_other");
  ASSERT_TRUE(p.feasible) << p.reason;
  // The shipped mod-220m file is exactly this point: its FLOPs and predicted time.
  EXPECT_EQ(p.matmul_flops, evaluate_flops(base, o.load).totals.matmul_flops);
  EXPECT_DOUBLE_EQ(p.time_s, predict(base, o.load, cost).total_s());
  // Ratios are against the dense point (the same model without routing).
  EXPECT_EQ(r.points[0].variant, sweep_variant::dense);
  EXPECT_DOUBLE_EQ(r.points[0].flops_ratio, 1.0);
  EXPECT_DOUBLE_EQ(r.points[0].time_ratio, 1.0);
  EXPECT_EQ(r.dense_matmul_flops, evaluate_flops(dense_baseline(base), o.load).totals.matmul_flops);
  EXPECT_LT(p.flops_ratio, 1.0);
  EXPECT_NEAR(p.flops_ratio, static_cast<double>(p.matmul_flops) / static_cast<double>(r.dense_matmul_flops), 1e-15);
}

TEST(Sweep, EnumeratesVariantsCapacitiesAndSchedulesInAFixedOrder) {
  const model_spec base = load_model(config("models/mod-220m.json"));
  sweep_space s;
  s.capacities = {0.25, 0.5};
  s.schedules = {parse_schedule("every_other", base.n_layers, "", "s"), parse_schedule("all", base.n_layers, "", "s"),
                 parse_schedule("none", base.n_layers, "", "s")};
  s.variants = {sweep_variant::dense, sweep_variant::mod, sweep_variant::moe, sweep_variant::mode_integrated};
  const auto points = enumerate_space(base, s);
  // dense, 2×2 MoD (none skipped), moe, 2×2 integrated.
  ASSERT_EQ(points.size(), 10u);
  EXPECT_EQ(points[0].variant, sweep_variant::dense);
  EXPECT_FALSE(points[0].model.routing.has_value());
  EXPECT_EQ(points[1].description, "MoD c=0.25 every_other");
  EXPECT_EQ(points[2].description, "MoD c=0.25 all");
  EXPECT_EQ(points[3].description, "MoD c=0.5 every_other");
  EXPECT_EQ(points[5].variant, sweep_variant::moe);
  // Integrated: E/(E+N) ≈ capacity with E = 8: N = 24 at 0.25, 8 at 0.5.
  EXPECT_EQ(points[6].noop_experts, 24);
  EXPECT_EQ(points[8].noop_experts, 8);
}

TEST(Sweep, AnInvalidCapacityIsBadInput) {
  const model_spec base = load_model(config("models/mod-220m.json"));
  sweep_space s = default_space(base);
  s.capacities = {0.0};
  EXPECT_THROW(enumerate_space(base, s), modsim::error);
}

TEST(Sweep, ParallelResultEqualsSerial) {
  const model_spec base = load_model(config("models/mod-220m.json"));
  const cost_model cost(load_hardware(config("hardware/h100-sxm.json")));
  sweep_options serial;
  serial.threads = 1;
  sweep_options parallel = serial;
  parallel.threads = 4;
  const sweep_space space = default_space(base);
  const sweep_result a = run_sweep(base, space, predicted_time(cost), serial);
  const sweep_result b = run_sweep(base, space, predicted_time(cost), parallel);
  ASSERT_EQ(a.points.size(), b.points.size());
  for (std::size_t i = 0; i < a.points.size(); ++i) {
    EXPECT_EQ(a.points[i].description, b.points[i].description);
    EXPECT_EQ(a.points[i].matmul_flops, b.points[i].matmul_flops);
    EXPECT_EQ(a.points[i].time_s, b.points[i].time_s);  // bit-identical
    EXPECT_EQ(a.points[i].pareto, b.points[i].pareto);
  }
  EXPECT_EQ(sweep_csv(a), sweep_csv(b));
}

TEST(Sweep, FrontIsMarkedOnTheChosenAxes) {
  const model_spec base = load_model(config("models/mod-220m.json"));
  // A made-up time: FLOPs plus a fixed cost per routed layer, so the front is known.
  auto time_of = [](const model_spec& m, const workload& w) {
    double routed = 0;
    for (const layer_plan& l : plan_layers(m)) routed += l.routed ? 1 : 0;
    return static_cast<double>(evaluate_flops(m, w).totals.matmul_flops) * 1e-15 + routed * 1e-3;
  };
  sweep_space s;
  s.capacities = {0.125, 1.0};
  s.schedules = {parse_schedule("every_other", base.n_layers, "", "s")};
  s.variants = {sweep_variant::dense, sweep_variant::mod};
  const sweep_result r = run_sweep(base, s, time_of);
  ASSERT_EQ(r.points.size(), 3u);
  // dense: most FLOPs, least time; MoD 0.125: fewest FLOPs; MoD 1.0: more FLOPs and time than dense.
  EXPECT_TRUE(r.points[0].pareto);
  EXPECT_TRUE(r.points[1].pareto);
  EXPECT_FALSE(r.points[2].pareto);
}

TEST(Sweep, CsvHasOneRowPerPointAndIsWrittenAtomically) {
  const model_spec base = load_model(config("models/mod-220m.json"));
  const cost_model cost(load_hardware(config("hardware/h100-sxm.json")));
  const sweep_result r = run_sweep(base, default_space(base), predicted_time(cost));
  const std::string csv = sweep_csv(r);
  std::size_t lines = 0;
  for (char c : csv) lines += c == '\n';
  EXPECT_EQ(lines, r.points.size() + 1);
  EXPECT_EQ(csv.rfind("description,variant,capacity,schedule,", 0), 0u);
  const std::string path = ::testing::TempDir() + "/sweep-test.csv";
  write_file_atomically(path, csv);
  EXPECT_EQ(read_text_file(path), csv);
  EXPECT_THROW(write_file_atomically(::testing::TempDir() + "/no/such/dir/x.csv", csv), modsim::error);
}

}  // namespace
}  // namespace modsim::sim
