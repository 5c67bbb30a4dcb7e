#pragma once
// The decode step's calibration (sim/cost.hpp decode_fit): fitted on measured decode rows
// (decode_dense, decode_mod, decode_step), used by every decode prediction. A decode step is a
// few rows against every weight and the KV cache: what it costs is bytes read, launches and
// the routed count's read-back, which the per-op curves (fitted on prefill-sized ops) do not
// see. Each row's kernels come from the simulator's decode step (sim/des/decode.hpp); the fit
// is a non-negative least-squares problem on relative errors:
//   1 ≈ (Σ_weight kernels w(rows)·bytes + a_kv·kv_bytes + a_f·matmul_flops + a_o·other_flops
//        + a_k·kernels + a_s·syncs) / measured
// with w piecewise linear in log2(rows) between knots at the distinct row counts of the data
// (at most 6, at quantiles; clamped beyond): a few rows stream a weight matrix at memory
// speed, more rows add work per byte, and not in proportion.
#include <optional>
#include <utility>
#include <vector>

#include "sim/calibration_sample.hpp"
#include "sim/cost.hpp"
#include "sim/des/execution.hpp"

namespace modsim::sim {

// What a decode row's kernels add up to (the fit's columns): the bytes of its weight kernels
// with the rows each computes, its KV (attention) bytes, FLOPs, kernels and read-backs.
struct decode_features {
  std::vector<std::pair<double, double>> weight;  // (bytes, rows) per weight kernel
  double kv_bytes = 0, matmul_flops = 0, other_flops = 0, kernels = 0, syncs = 0;
  double weight_bytes() const;
};
// The features of decode sample `s` (its kernels at zero time). Throws bad_input for a
// sample that is not a decode row.
decode_features features_of_decode(const calibration_sample& s);

// Fits one decode_fit per dtype over the decode samples among `samples`; the keys of the rows
// used go to `keys`. Empty when there is no decode sample.
std::vector<decode_fit> fit_decode(const std::vector<calibration_sample>& samples, std::vector<std::string>& keys);

// The device model decode steps are timed with: the decode fit of dtype `t` where the
// calibration has one (attention kernels pay kv_s_per_byte, every other kernel
// weight_s_per_byte, the launch kernel_s and the read-back sync_s), else the cost model's own
// (des::device_model_of).
des::device_model decode_device_model(const cost_model& model, dtype t);

}  // namespace modsim::sim
