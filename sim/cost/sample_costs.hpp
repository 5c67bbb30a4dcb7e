#pragma once
// A measured sample priced: the op_shape the profiler ran and its FLOP/byte costs
// (with_costs), the kernel sequence the CUDA backend ran for it (kernel_row_of) and its
// predicted time under a cost model (predict_sample). Apart from sim/cost/measured_sample.hpp
// because a decode row is priced by the simulator's decode step (sim/des/decode.hpp,
// sim/cost/decode_fit.hpp), which itself reads measured samples.
#include "sim/cost/cost.hpp"
#include "sim/cost/kernel_fit.hpp"
#include "sim/cost/measured_sample.hpp"

namespace modsim::sim {

// `s` with its op_shape the way the profiler ran it (tokens = k for single ops at capacity
// < 1 except in an integrated layer), its layer_variant and its costs from sim/model/flops.
// Throws modsim::error(bad_input) naming `s.where` for an unknown op or an invalid shape.
measured_sample with_costs(measured_sample s);

// The predicted time of a block sample: its ops (block_costs) timed by `model`, plus
// kernels × launch_s. For a single-op sample, that op (with its own launch). For a decode
// sample, the simulator's decode step (sim/des/decode.hpp decode_timeline) timed with
// decode_device_model (sim/cost/decode_fit.hpp): the code behind `modsim simulate forward --mode
// decode`.
struct block_prediction {
  double ops_s = 0;  // Σ op times
  int kernels = 0;
  double overhead_s = 0;  // kernels × launch_s
  double total_s = 0;     // ops_s + overhead_s
  // The ops timed with a stand-in's curve (a calibration that never measured them), with their
  // shares of total_s.
  std::vector<stand_in_use> stand_ins;
};
block_prediction predict_sample(const measured_sample& s, const cost_model& model);

// A sample as the kernel sequence the CUDA backend ran for it (sim/cost/kernel_fit.hpp): an isolated
// or in-block op row, or a block (all its ops' kernels). Throws bad_input naming s.where.
kernel_row kernel_row_of(const measured_sample& s);

}  // namespace modsim::sim
