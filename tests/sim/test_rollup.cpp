// Tests of the per-class roll-up (sim/model/rollup.cpp): the classes partition the model's FLOPs,
// bytes and device time, and the routing class exists only where routing runs.
#include "sim/model/rollup.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sim/model/config.hpp"

namespace modsim::sim {
namespace {

const std::string k_configs = std::string(MODSIM_SOURCE_DIR) + "/configs";

TEST(Rollup, ClassesPartitionTheTotalsOfModelAndDense) {
  const model_spec m = load_model(k_configs + "/models/mod-220m.json");
  const cost_model cost(load_hardware(k_configs + "/hardware/h100-sxm.json"));
  workload w;
  w.batch = 2;
  w.seq_len = 1024;
  w.type = dtype::bf16;
  const flops_report f = evaluate_flops(m, w);
  const flops_report df = evaluate_flops(dense_baseline(m), w);
  const prediction p = predict(m, w, cost);
  for (const auto& classes : {roll_up(f, df), roll_up(p)}) {
    std::int64_t matmul = 0, dense_matmul = 0, other = 0, bytes = 0;
    for (const class_rollup& c : classes) {
      matmul += c.matmul_flops;
      dense_matmul += c.dense_matmul_flops;
      other += c.other_flops;
      bytes += c.bytes;
    }
    EXPECT_EQ(matmul, f.totals.matmul_flops);
    EXPECT_EQ(dense_matmul, f.totals.dense_matmul_flops);
    EXPECT_EQ(other, f.totals.other_flops);
    EXPECT_EQ(bytes, f.totals.bytes);
  }
  double time = 0, dense_time = 0;
  bool routing = false;
  for (const class_rollup& c : roll_up(p)) {
    time += c.time_s;
    dense_time += c.dense_time_s;
    if (c.op_class == "routing") {
      routing = true;
      EXPECT_GT(c.matmul_flops, 0);        // the router runs at the routed layers
      EXPECT_EQ(c.dense_matmul_flops, 0);  // and not in the dense baseline
    }
  }
  EXPECT_TRUE(routing);
  EXPECT_NEAR(time, p.model.ops_s, 1e-12 * p.model.ops_s);
  EXPECT_NEAR(dense_time, p.dense.ops_s, 1e-12 * p.dense.ops_s);
}

}  // namespace
}  // namespace modsim::sim
