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
// A training sample (block_dense_train, block_mod_train) is one layer as `modsim predict --mode
// train` prices it: predict_train_row. An adamw sample is the optimizer step over its bytes
// (cost_model::optimizer_time_of), as predict --mode train prices a model's.
block_prediction predict_sample(const measured_sample& s, const cost_model& model);

// A training row (one layer's forward + backward) priced as `modsim predict --mode train`
// prices a layer: each op of its forward block (block_dense or block_mod at the row's capacity)
// through cost_model::train_time_of with the row's recompute, the whole as cost_model::
// sequence_s of the forward ops in order, then each op's recomputation and backward in reverse.
// Throws bad_input naming s.where for a row that is not a training row.
struct train_row_prediction {
  double total_s = 0;
  double ops_s = 0;       // Σ op times (forward, backward, recomputation)
  double backward_s = 0;  // of ops_s, the backward ops'
  int kernels = 0;
  double backward_by_class[3] = {0, 0, 0};  // backward_s by backward_class
  std::vector<stand_in_use> stand_ins;      // forward ops timed with a stand-in's curve (share: seconds)
};
train_row_prediction predict_train_row(const measured_sample& s, const cost_model& model);

// A sample as the kernel sequence the CUDA backend ran for it (sim/cost/kernel_fit.hpp): an isolated
// or in-block op row, or a block (all its ops' kernels). Throws bad_input naming s.where.
kernel_row kernel_row_of(const measured_sample& s);

}  // namespace modsim::sim
