#pragma once
// Calibration: fits the cost model (sim/cost/cost.hpp) to measurements. Input is plain structs —
// sim does not depend on the profiler; profiler::read_measured_samples turns measurements-CSV
// rows into measured_sample values.
//
// The parts: measured rows as samples (sim/cost/measured_sample), the solvers
// (sim/common/least_squares), one efficiency curve (sim/cost/efficiency_fit), the whole calibration
// (here), validation and cross-validation (sim/cost/validation) and the calibrated hardware file
// (sim/cost/calibrated_hardware). This header includes them all.
//
// Fit, per (op, dtype), over that op's single-op rows:
//   measured_i ≈ fixed_s + roofline_i · g(log10 roofline_i)
// with g piecewise linear between K knots placed at quantiles of log10(roofline) (K ≤ 6,
// fewer when there are fewer distinct shapes). The unknowns (fixed_s, g_1..g_K) enter
// linearly, so the fit is a least-squares problem on relative errors
//   (fixed_s + roofline_i · Σ_j g_j φ_j(x_i)) / measured_i ≈ 1
// with non-negative unknowns (an active-set solve), a small second-difference penalty on g
// (smoothness; zero for a g linear in log-work, so such a law is recovered exactly) and
// Huber reweighting (a few iterations) so that one sample disturbed by a noisy machine does
// not bend the curve.
//
// Blocks: with block rows among the measurements (block_dense, block_mod, layer_mode), two
// numbers are fitted on them (relative least squares, non-negative):
//   measured block − Σ predicted ops ≈ kernels · launch_s + bytes · in_layer_s_per_byte
// launch_s is the per-kernel cost of chaining ops; in_layer_s_per_byte is the cost of
// fetching an op's bytes (inputs, weights) that a loop of the op alone keeps in cache but
// that the previous ops of a layer evicted. On the CPU the gap between a block and its ops
// grows with the block's size: over six quiet runs of the quick grid the fit gave
// 1/in_layer_s_per_byte = 36–50 GB/s, with launch_s 0–8 µs. With fewer than 3
// blocks launch_s = the median per-kernel gap and in_layer_s_per_byte = 0. The keys of those
// block rows are recorded so that `modsim validate` never scores them. Without block rows
// launch_s stays the hardware file's kernel_launch_s and in_layer_s_per_byte is 0.
#include <string>
#include <string_view>
#include <vector>

#include "sim/cost/calibrated_hardware.hpp"
#include "sim/cost/measured_sample.hpp"
#include "sim/cost/sample_costs.hpp"
#include "sim/cost/cost.hpp"
#include "sim/cost/efficiency_fit.hpp"
#include "sim/model/spec.hpp"
#include "sim/cost/validation.hpp"

namespace modsim::sim {

// Fits the calibration of `hw` to `samples`. `sources` (files and row counts) and `date` are
// recorded as given. Throws modsim::error(bad_input) when there is no usable single-op
// sample, when samples come from more than one device, or when their backend does not match
// the hardware's kind (cpu ↔ cpu, cuda ↔ gpu).
calibration fit_calibration(const hardware_spec& hw, const std::vector<measured_sample>& samples,
                            std::vector<calibration_source> sources, const std::string& date,
                            const fit_options& options = {});

// Whether two measurements' device columns name the same device model: equal strings, or both
// naming one GPU model ("h100" in "NVIDIA H100 80GB HBM3, ..., driver 13.0" and in "NVIDIA H100
// SXM5, ..."): a driver, clock or library version apart is the same machine kind, another model
// is not.
bool same_device_model(std::string_view a, std::string_view b);
// The same machine kind, for validation: same_device_model, or two CPU device columns (no GPU
// model in either) naming one processor before their first comma ("Intel(R) Xeon(R)
// Processor, 1 threads, OpenBLAS ... Prescott" and "..., 2 threads, OpenBLAS ... SkylakeX"):
// another thread count or BLAS build on the same kind of CPU, which a calibration may be
// checked against with a note, never fitted together with.
bool same_machine_kind(std::string_view a, std::string_view b);

// The current UTC time, ISO 8601 ("2025-01-31T12:00:00Z").
std::string utc_now_iso8601();

}  // namespace modsim::sim
