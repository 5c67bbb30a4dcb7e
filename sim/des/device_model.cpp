// The adapter from sim::cost_model to the simulator's device_model. A file of its own so the
// engine and its tests link without the cost model.
#include "sim/des/execution.hpp"

namespace modsim::sim::des {

device_model device_model_of(const cost_model& model, dtype t) {
  device_model dev;
  dev.time_of = [model, t](const op_cost& c, const op_shape& s) { return model.time_of(c, s, t); };
  dev.backward_time_of = [model, t](const op_cost& f, const op_cost& b, const op_shape& s) {
    return model.backward_time_of(f, b, s, t);
  };
  dev.optimizer_time_of = [model, t](const optimizer_cost& c) { return model.optimizer_time_of(c, t); };
  dev.attention = model.attention();
  dev.launch_s = model.launch_s();
  dev.host_enqueue_s = model.host_enqueue_s();
  return dev;
}

}  // namespace modsim::sim::des
