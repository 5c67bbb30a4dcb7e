#include "sim/model/rollup.hpp"

#include <map>

namespace modsim::sim {

namespace {

std::vector<class_rollup> ordered(std::map<std::string, class_rollup>& by) {
  std::vector<class_rollup> out;
  for (std::string_view name : op_classes()) {
    auto it = by.find(std::string(name));
    if (it == by.end()) continue;
    it->second.op_class = name;
    out.push_back(it->second);
  }
  return out;
}

// Adds one op (an op_cost or an op_prediction: FLOPs and bytes, and time when it has one).
template <class Op>
void add(std::map<std::string, class_rollup>& by, const Op& o, bool dense) {
  class_rollup& x = by[op_class_of(o.op)];
  (dense ? x.dense_matmul_flops : x.matmul_flops) += o.matmul_flops;
  (dense ? x.dense_other_flops : x.other_flops) += o.other_flops;
  (dense ? x.dense_bytes : x.bytes) += o.bytes;
  if constexpr (requires { o.time_s; }) (dense ? x.dense_time_s : x.time_s) += o.time_s;
}

// Every op of a FLOP report or a model timing, the LM head included.
template <class Model>
void add_all(std::map<std::string, class_rollup>& by, const Model& m, bool dense) {
  for (const auto& l : m.layers)
    for (const auto& o : l.ops) add(by, o, dense);
  add(by, m.lm_head, dense);
}

}  // namespace

std::vector<class_rollup> roll_up(const flops_report& model, const flops_report& dense) {
  std::map<std::string, class_rollup> by;
  add_all(by, model, false);
  add_all(by, dense, true);
  return ordered(by);
}

std::vector<class_rollup> roll_up(const prediction& p) {
  std::map<std::string, class_rollup> by;
  add_all(by, p.model, false);
  add_all(by, p.dense, true);
  return ordered(by);
}

}  // namespace modsim::sim
