#pragma once
// The decode step's calibration (sim/cost/cost.hpp decode_fit): fitted on measured decode rows
// (decode_dense, decode_mod, decode_step), used by every decode prediction. A decode step is a
// few rows against every weight and the KV cache: what it costs is bytes read, launches and
// the routed count's read-back, which the per-op curves (fitted on prefill-sized ops) do not
// see. Each row's kernels come from the simulator's decode step (sim/des/decode.hpp); the fit
// is a non-negative least-squares problem on relative errors:
//   1 ≈ (Σ_weight kernels w(rows)·bytes + a_kv·kv_bytes + a_f·attention matmul + a_o·attention other
//        + a_k·kernels + a_s·syncs + [decode_step] a_m·(weight + kv bytes)) / measured
// (a_m of either sign: a step streaming the whole model may cost more or less per byte than
// its layers timed alone)
// with w piecewise linear in log2(rows) between knots at the powers of two the data's row
// counts span (at most 9; clamped beyond): a few rows stream a weight matrix at memory
// speed, more rows add work per byte, and not in proportion.
#include <optional>
#include <utility>
#include <vector>

#include "sim/cost/measured_sample.hpp"
#include "sim/cost/cost.hpp"
#include "sim/des/execution.hpp"

namespace modsim::sim {

// What a decode row's kernels add up to (the fit's columns): the bytes of its weight kernels
// with the rows each computes, its KV (attention) bytes, FLOPs, kernels and read-backs.
struct decode_features {
  std::vector<std::pair<double, double>> weight;  // (bytes, rows) per weight kernel
  double kv_bytes = 0, matmul_flops = 0, other_flops = 0, kernels = 0, syncs = 0;
  bool whole_model = false;  // a decode_step row: the model's layers and its LM head
  double weight_bytes() const;
};
// The features of decode sample `s` (its kernels at zero time). Throws bad_input for a
// sample that is not a decode row.
decode_features features_of_decode(const measured_sample& s);

// Fits one decode_fit per dtype over the decode samples among `samples`; the keys of the rows
// used go to `keys`. Empty when there is no decode sample.
std::vector<decode_fit> fit_decode(const std::vector<measured_sample>& samples, std::vector<std::string>& keys);

// The device model decode steps are timed with: the decode fit of dtype `t` where the
// calibration has one (attention kernels pay kv_s_per_byte, every other kernel w(rows) per
// byte, the launch kernel_s and the read-back sync_s; with `whole_model`, a model's whole
// step, every kernel also model_s_per_byte), else the cost model's own (des::device_model_of).
des::device_model decode_device_model(const cost_model& model, dtype t, bool whole_model = true);

}  // namespace modsim::sim
