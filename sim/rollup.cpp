#include "sim/rollup.hpp"

#include <map>

namespace modsim::sim {

namespace {

std::vector<class_rollup> ordered(std::map<std::string, class_rollup>& by) {
  std::vector<class_rollup> out;
  for (std::string_view name : op_classes()) {
    auto it = by.find(std::string(name));
    if (it == by.end()) continue;
    it->second.op_class = std::string(name);
    out.push_back(it->second);
  }
  return out;
}

void add_flops(std::map<std::string, class_rollup>& by, const flops_report& r, bool dense) {
  auto add = [&](const op_cost& c) {
    class_rollup& x = by[op_class_of(c.op)];
    (dense ? x.dense_matmul_flops : x.matmul_flops) += c.matmul_flops;
    (dense ? x.dense_other_flops : x.other_flops) += c.other_flops;
    (dense ? x.dense_bytes : x.bytes) += c.bytes;
  };
  for (const layer_flops& l : r.layers)
    for (const op_cost& c : l.ops) add(c);
  add(r.lm_head);
}

void add_predicted(std::map<std::string, class_rollup>& by, const model_time& t, bool dense) {
  auto add = [&](const op_prediction& o) {
    class_rollup& x = by[o.op_class];
    (dense ? x.dense_matmul_flops : x.matmul_flops) += o.matmul_flops;
    (dense ? x.dense_other_flops : x.other_flops) += o.other_flops;
    (dense ? x.dense_bytes : x.bytes) += o.bytes;
    (dense ? x.dense_time_s : x.time_s) += o.time_s;
  };
  for (const layer_prediction& l : t.layers)
    for (const op_prediction& o : l.ops) add(o);
  add(t.lm_head);
}

}  // namespace

std::vector<class_rollup> roll_up(const flops_report& model, const flops_report& dense) {
  std::map<std::string, class_rollup> by;
  add_flops(by, model, false);
  add_flops(by, dense, true);
  return ordered(by);
}

std::vector<class_rollup> roll_up(const prediction& p) {
  std::map<std::string, class_rollup> by;
  add_predicted(by, p.model, false);
  add_predicted(by, p.dense, true);
  return ordered(by);
}

}  // namespace modsim::sim
