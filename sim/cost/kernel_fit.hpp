#pragma once
// Fitting the kernel-sequence model (sim/cost/kernel_model.hpp) to measured rows.
//
// Every measured row is a timed sequence of kernels:
//   - an isolated op row (the profiler's default: one op alone, L2 flushed): its kernels, cold,
//     event_s + the host/device queue over them;
//   - a block row (block_dense, block_mod, layer_mode timed in one piece): all its ops' kernels,
//     the first cold and the rest warm, event_s + the queue;
//   - an in-block op row (timed between the kernels of a running block, warm): its kernels
//     back to back, Σ (gap_s + warm device time).
// The unknowns (event_s, host_s, gap_s, warm_fraction and per kernel class a floor, the
// compute and bandwidth efficiencies or a per-item cost) are fitted by Levenberg–Marquardt on
// the log-ratios log(predicted / measured), which weigh a 10 µs and a 10 ms row alike; a
// soft-L1 reweighting keeps one disturbed sample from bending the fit; efficiencies are
// logistic (0 < ε < 1: never above the datasheet roofline) and times exponential (> 0); a weak
// pull towards default_kernel_params() keeps the classes that the rows never exercise (e.g.
// the MoE rank kernel without layer_mode rows) at their defaults. Two starting points (host-
// bound and device-bound small kernels) are fitted and the better kept.
#include <string>
#include <vector>

#include "core/types.hpp"
#include "sim/cost/kernel_model.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim {

// One measured row as a kernel sequence.
struct kernel_row {
  std::vector<kernel_work> kernels;  // launch order
  dtype type = dtype::bf16;
  // An op row timed isolated (its kernels, cold) or in_block (back to back, warm), or a whole
  // block row (whole_block: its ops' kernels, the first cold and the rest warm).
  timing_mode timing = timing_mode::isolated;
  bool whole_block = false;
  double measured_s = 0;
  double weight = 1;  // blocks count more: they are what users predict
};

// The predicted seconds of a measured row (what the profiler would report for it).
double predict_row(const kernel_row& r, const kernel_params& p, const hardware_spec& hw);

struct kernel_fit_result {
  kernel_params params;
  int rows = 0;
  int iterations = 0;
  double rms_log_error = 0;  // of the fit on its rows (0.05 ≈ 5 %)
};

// Fits the model to `rows` (all of one device). Throws modsim::error(bad_input) when `rows`
// is empty.
kernel_fit_result fit_kernel_params(const hardware_spec& hw, const std::vector<kernel_row>& rows);

}  // namespace modsim::sim
