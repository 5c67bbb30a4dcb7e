// Repeat measurements of one block: the |difference| of each pair in percent of its mean,
// grouped by row key, backend and device; figures worked by hand.
#include <gtest/gtest.h>

#include "sim/cost/repeatability.hpp"

namespace {

using modsim::sim::measured_sample;

measured_sample row(modsim::op op, const char* device, double seconds) {
  measured_sample s;
  s.op = op;
  s.d_model = 64;
  s.n_heads = 4;
  s.d_ff = 256;
  s.seq_len = 32;
  s.backend = modsim::backend_kind::cpu;
  s.device = device;
  s.median_s = seconds;
  s.key = modsim::sim::shape_key(s);
  return s;
}

TEST(Repeatability, PairsOfOneBlockOnOneDevice) {
  using modsim::op;
  std::vector<measured_sample> rows = {
      row(op::block_dense, "x", 1.0), row(op::block_dense, "x", 1.2),  // 200 * 0.2 / 2.2 = 18.18 %
      row(op::block_dense, "y", 1.5),                                  // once on device y: no pair
      row(op::router, "x", 1.0),      row(op::router, "x", 3.0),       // an op row: not a block
  };
  measured_sample b = row(op::block_mod, "x", 2.0);
  b.capacity = 0.5;
  b.key = modsim::sim::shape_key(b);
  for (double t : {2.0, 2.0, 2.1}) {  // pairs: 0, 200 * 0.1 / 4.1 = 4.878 %, 4.878 %
    b.median_s = t;
    rows.push_back(b);
  }
  const auto r = modsim::sim::repeatability_of(rows);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->blocks, 2);
  EXPECT_EQ(r->pairs, 4);
  // Sorted 0, 4.878, 4.878, 18.18: the median at rank 1.5, p90 at rank 2.7 (q (n - 1)).
  const double small = 20.0 / 4.1, large = 40.0 / 2.2;
  EXPECT_NEAR(r->median_abs_pct_diff, small, 1e-9);
  EXPECT_NEAR(r->p90_abs_pct_diff, small + 0.7 * (large - small), 1e-9);
  EXPECT_NEAR(r->max_abs_pct_diff, large, 1e-9);
}

TEST(Repeatability, NoneWithoutARepeat) {
  using modsim::op;
  EXPECT_FALSE(modsim::sim::repeatability_of({row(op::block_dense, "x", 1.0), row(op::block_dense, "y", 1.1),
                                              row(op::router, "x", 1.0), row(op::router, "x", 2.0)}));
}

}  // namespace
