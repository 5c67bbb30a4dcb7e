#pragma once
// Per op class roll-ups of a model against its dense baseline: FLOPs, bytes and predicted
// time summed over the layers and the LM head by sim::op_class_of. One function, read by
// `modsim flops`, `modsim predict`, the report and the explorer alike.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/model/flops.hpp"
#include "sim/cost/predict.hpp"

namespace modsim::sim {

struct class_rollup {
  std::string_view op_class;  // an op_classes() entry (static storage)
  std::int64_t matmul_flops = 0, dense_matmul_flops = 0;
  std::int64_t other_flops = 0, dense_other_flops = 0;
  std::int64_t bytes = 0, dense_bytes = 0;
  double time_s = 0, dense_time_s = 0;  // device time, launch excluded (0 without a prediction)
};

// FLOPs and bytes by class of `model` and `dense`, in op_classes() order, the classes either
// runs.
std::vector<class_rollup> roll_up(const flops_report& model, const flops_report& dense);
// The same, with the predicted device times, from a prediction (its ops carry their FLOPs and
// bytes as `modsim flops` counts them, train mode included).
std::vector<class_rollup> roll_up(const prediction& p);

}  // namespace modsim::sim
