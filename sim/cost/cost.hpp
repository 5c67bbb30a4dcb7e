#pragma once
// The cost model: the time one op takes on a piece of hardware. A block or a model is
// predicted from its ops (sim/cost/predict.hpp), so any configuration the FLOP model can express
// (another capacity, schedule, d_model, MoDE variant) can be predicted, measured or not.
//
// ---------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------
// Roofline (uncalibrated, the datasheet; also the base of the calibrated model):
//   roofline_s = max(matmul_flops / peak_matmul(dtype) + other_flops / peak_vector(dtype),
//                    bytes / memory_bandwidth)
// with FLOPs and bytes from sim/model/flops (cost_of / layer_costs), nothing else. On a GPU
// (hardware kind "gpu", sm_count > 0) the compute term of a GEMM is multiplied by its wave
// quantisation: with the tile and split-K a cuBLAS-like heuristic picks for its shape
// (sim/cost/gemm_tiles.hpp: q = the chosen tiling's time over that of a perfectly filled
// machine of 128×128 tiles, at least 1: no tiling runs faster than the peak; the datasheet
// roofline of a GPU file without "gemm_tiles", or with "chosen"), or q = ceil(tiles /
// sm_count) · sm_count / tiles ≥ 1 with 128×128 output tiles (a GEMM of 133 tiles on 132 SMs
// runs two waves; "gemm_tiles": "fixed128"). A calibration keeps
// the tiling it was fitted with. See gemm_waves().
//
// Calibrated (the hardware file's `calibration` block, written by `modsim calibrate`), per
// (op, dtype):
//   time_s = fixed_s + q · roofline_s · g(log10(roofline_s))
// where
//   - fixed_s ≥ 0 is a per-call cost that does not scale with the work (thread-pool dispatch
//     on a CPU, a kernel's prologue/epilogue and tail on a GPU), learnt as an intercept;
//   - g = 1 / efficiency is piecewise linear over x = log10(roofline_s) between knots and
//     constant beyond the first and last knot (clamped: a shape larger than any measured one
//     runs at the largest measured shape's efficiency).
// Why this form: (1) the "work" variable is the op's own roofline time, which is its FLOPs
// for compute-bound ops and its bytes for memory-bound ones on one common scale, so one
// curve per op covers every d_model, seq_len, batch and capacity; (2) efficiency rises with
// the size of the problem (GEMM blocking, cache reuse, thread start-up amortised) smoothly in
// log(work), which a few linear pieces follow without the oscillation of a polynomial;
// (3) time is linear in (fixed_s, g at the knots), so the fit is a small non-negative linear
// least-squares problem on relative errors (sim/cost/calibrate.hpp) with a unique solution;
// (4) a fixed per-call cost is what dominates tiny ops (topk, router at small S), where a
// pure efficiency curve would need an efficiency that falls as 1/work.
// Ops that were never measured use the curve of a stand-in op with the same structure
// (mlp_norm ← attn_norm, mlp_gate ← mlp_up, …; see stand_in_of()); with none, the datasheet
// roofline, and op_time::calibrated says so.
//
// The curves are fitted on ops timed in a loop of their own, which keeps the op's inputs and
// weights in cache; inside a layer the previous ops have evicted them. So a calibrated op
// also pays bytes · in_layer_s_per_byte (its bytes fetched again at an effective bandwidth
// that calibration fits on measured blocks, together with launch_s):
//   time_s = fixed_s + q · roofline_s · g(log10 roofline_s) + bytes · in_layer_s_per_byte
//
// Per-kernel launch overhead is separate (launch_s): the simulator places it on its host and
// device timelines and sim/cost/predict adds kernels × launch_s as overhead_s. Calibrated, it is
// fitted on measured blocks: block − Σ ops ≈ kernels · launch_s + bytes · in_layer_s_per_byte.
//
// Times are seconds of device execution.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/model/flops.hpp"
#include "sim/cost/calibration_record.hpp"
#include "sim/cost/kernel_model.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim {

// An op of a prediction timed with a stand-in's curve (op_time::calibrated_as names another
// op), and its share of the predicted time (0–1).
struct stand_in_use {
  modsim::op op = modsim::op::router;
  modsim::op as = modsim::op::router;
  double share = 0;
};

// The name of the curve an op was timed by (op_time::calibrated_as): the op's name, "" for none.
std::string_view curve_name(const std::optional<modsim::op>& calibrated_as);

// The op whose curve stands in for `op` when `op` itself was not measured (mlp_norm →
// attn_norm, mlp_gate → mlp_up, predictor/expert_router → router, experts/lm_head → mlp_up);
// empty when there is none.
std::optional<modsim::op> stand_in_of(modsim::op op);

// Kernel launches an op takes (router 1, topk 2 on a GPU (select + sort of the indices) and 1
// on a CPU, predictor 2, expert_router 2, lm_head 2 (final norm + projection), others 1).
int kernels_of(modsim::op op, const hardware_spec& hw);

// Wave quantisation q of op `op` at shape `s` with dtype `t` on `hw` (1 for non-GEMM ops and
// CPUs): fixed128, ceil(tiles / SMs) · SMs / tiles ≥ 1 of 128×128 tiles; chosen, the q of
// choose_gemm_tile (sim/cost/gemm_tiles.hpp) for the op's GEMM (op_gemm).
double gemm_waves(modsim::op op, const op_shape& s, const hardware_spec& hw, dtype t, gemm_tiling tiling);
double gemm_waves(modsim::op op, const expected_op_shape& s, const hardware_spec& hw, dtype t, gemm_tiling tiling);

struct op_time {
  modsim::op op = modsim::op::router;
  double time_s = 0;      // predicted device time (launch overhead excluded)
  double roofline_s = 0;  // the datasheet roofline time of the same op (no wave quantisation)
  double compute_s = 0;   // roofline compute term (matmul/peak + other/peak)
  double memory_s = 0;    // roofline memory term (bytes/bandwidth)
  double waves = 1;       // GEMM wave quantisation factor (GPU)
  // Of time_s, what the partial waves of the GEMMs' tiles add beyond the same op at wave
  // factor 1 (the roofline at the op's efficiency): datasheet, time_s − max(compute_s·min(q, 1),
  // memory_s); kernel model, Σ over its GEMM kernels of the warm time at q minus at min(q, 1).
  // 0 for a curve-calibrated op (the curve takes q in; its share is not separable).
  double wave_s = 0;
  std::int64_t matmul_flops = 0;
  std::int64_t other_flops = 0;
  std::int64_t bytes = 0;
  int kernels = 1;          // kernel launches the op takes (0: inside the fused attention kernel)
  bool calibrated = false;  // a learnt curve was used
  // The op whose curve timed it (op, or its stand-in); empty when not calibrated, and when the
  // decode fit (sim/cost/decode_fit.hpp) timed it: one fit for every op of a step, no op's curve.
  std::optional<modsim::op> calibrated_as;
  // The dtype whose calibration timed the op: the op's own, or bf16 for fp16 on hardware whose
  // tensor cores run both at one rate; empty when not calibrated.
  dtype calibrated_dtype = dtype::fp32;
  bool from_other_dtype = false;
  // Kernel-sequence model only: the device time of each kernel (warm, inside a sequence), and
  // the op as the profiler's isolated mode measures it (cold, with host and event costs).
  std::vector<double> kernel_s;
  double isolated_s = 0;
  // Kernel-sequence model only: the largest wave factor of the op's GEMM kernels
  // (gemm_wave_factor), and the device time its kernels' waves add past the largest factor
  // the calibration's rows had (kernel_params::max_wave_factor; 0 when none went past it or
  // the calibration did not record it): padding the tiling model assumes and no row measured.
  double wave_factor = 1;
  double unmeasured_wave_s = 0;
  // A backward (backward_time_of) priced by the calibration's backward fit (calibration::backward:
  // fitted on measured training rows); false where the rule priced it or for a forward op.
  bool backward_fitted = false;

  bool memory_bound() const { return memory_s > compute_s; }
};

// One op of a training step as `modsim predict --mode train` prices it (cost_model::train_time_of):
// its forward, its backward and what recomputation runs again (recompute.kernels 0: nothing).
struct train_op_time {
  op_time forward, backward, recompute;
};

// The fused attention kernel's backward at shape `s` (a FlashAttention-style kernel): it
// recomputes the scores over the causal keys, then dV, dP, dQ and dK, 5 matmuls of the
// forward kernel's 2 (matmul FLOPs 2.5 × fused_attention_kernel's); reads Q, K, V, O, dO and
// the fp32 row statistics (log-sum-exp, rowsum(dO∘O)), writes dQ, dK, dV; other FLOPs twice
// the forward kernel's softmax work.
op_cost fused_attention_backward(const op_shape& s);

// The class a backward op's fitted factor belongs to (calibration::backward): the attention
// core (attn_scores, attn_softmax, attn_values), the memory-bound ops (norms, the activation,
// router, top-k, gather, scatter, the predictor) and the GEMMs (projections, MLP, experts,
// LM head).
backward_class backward_class_of(modsim::op o);

// How a prediction on `hw` runs attention when nobody says: fused on a GPU (what training and
// serving stacks run: one FlashAttention/cuDNN kernel), unfused on a CPU (modsim's CPU backend,
// the only one its CPU calibrations measure, has no fused attention).
attention_impl default_attention(const hardware_spec& hw);

class cost_model {
 public:
  // Reads hw.calibration_json when present; throws modsim::error(bad_input) naming the
  // hardware file and key when the calibration block is malformed or does not match the
  // hardware's peaks. Attention is priced as the calibration's rows ran it, uncalibrated as
  // default_attention(hw) (what validation, which compares with those rows, needs).
  explicit cost_model(hardware_spec hw);
  // The same with attention run `attention` (a prediction's --attention). Where the
  // calibration measured the other implementation, the attention ops (attn_scores,
  // attn_softmax, attn_values) are priced by the datasheet roofline of this one, uncalibrated
  // (attention_measured() false); every other op as calibrated.
  cost_model(hardware_spec hw, attention_impl attention);

  const hardware_spec& hardware() const { return m_hw; }
  bool calibrated() const;
  // "datasheet roofline (uncalibrated)" or "calibrated on <files> (<date>, <device>)".
  std::string label() const;
  // The calibration in use; null when uncalibrated.
  const sim::calibration* calibration() const { return m_cal.get(); }
  // How attention is priced: fused, attn_scores is the one causal attention kernel
  // (sim/cost/kernel_model.hpp fused_attention_kernel) and attn_softmax / attn_values take no time
  // and no launch; unfused, the three kernels with their own FLOPs and bytes.
  attention_impl attention() const { return m_attention; }
  // True when a calibration is in use and its rows ran attention() (its `attention`); false
  // uncalibrated, and where the attention ops fall back to the datasheet roofline.
  bool attention_measured() const;

  // Device time of op `c` (an sim/model/flops op_cost) run at shape `s` with dtype `t`.
  op_time time_of(const op_cost& c, const op_shape& s, dtype t) const;
  op_time time_of(const op_cost& c, const expected_op_shape& s, dtype t) const;
  // Device time of the backward `backward` (ops::backward_of) of the forward op `forward` at
  // shape `s` (a training step). Attention fused: attn_scores is the one backward kernel
  // (fused_attention_backward: it recomputes the scores), attn_softmax and attn_values take no
  // time and launch nothing. Datasheet: the roofline of the backward's FLOPs and bytes, the
  // GEMMs quantised in waves as the forward's. Calibrated (no row measures a backward): the
  // forward's calibrated time × the backward's roofline / the forward's, i.e. the forward's
  // fitted efficiency applied to the backward's FLOPs and bytes (op_time::calibrated_as names
  // the forward op's curve). Launches: twice the forward's for a GEMM op (dgrad and wgrad), the
  // forward's for the others, none for an op without backward work (topk).
  // With a backward fit in the calibration (calibration::backward, fitted by `modsim calibrate` on
  // measured training rows) for dtype `t`, a calibrated backward is that rule's time × the fitted
  // factor of its class (backward_class_of) and op_time::backward_fitted says so.
  // The LM head's backward begins with the cross-entropy loss (ops::lm_head_loss), a kernel of
  // its own: its datasheet roofline, calibrated or not (no row measures it), and one launch,
  // added to the projection's and final norm's backward priced as above.
  op_time backward_time_of(const op_cost& forward, const op_cost& backward, const op_shape& s, dtype t) const;
  // The forward `forward` (an op of a layer at shape `s`), its backward `backward` and what
  // recomputation `r` runs again: the forward once more under `full`, attn_scores and
  // attn_softmax once more under `selective` with unfused attention (the fused kernel's own
  // recomputation of the scores is inside its backward). The one pricing of a training op:
  // predict --mode train and the training rows' validation and fit read it.
  train_op_time train_time_of(const op_cost& forward, const op_cost& backward, const op_shape& s, dtype t,
                              recompute_mode r) const;
  // Device time of the optimizer step (one fused AdamW kernel over every parameter):
  // memory-bound; bytes at the rate the calibration fitted on measured adamw rows
  // (fitted_optimizer; calibrated), else the datasheet roofline max(other_flops /
  // peak_vector, bytes / bandwidth).
  op_time optimizer_time_of(const optimizer_cost& c, dtype t) const;
  // The calibration's optimizer fit, for every dtype (the step streams 28 bytes a parameter
  // whatever the weights' dtype: the fitted rate prices them all; optimizer_time_of then prices
  // the step from its bytes at that rate, calibrated); null without one (the datasheet roofline).
  const optimizer_fit* fitted_optimizer() const;

  // What time_of times op `o` of dtype `t` by, whatever the shape (its op_time::calibrated_as
  // and calibrated_dtype): `as` the op itself under the kernel model, else the op whose curve is
  // used (its own or its stand-in's); `type` the dtype whose calibration it is (t, or bf16 for
  // fp16 where the tensor cores run both at one rate). Empty where time_of uses the datasheet
  // roofline (uncalibrated, never measured and no stand-in, or attention not measured).
  struct curve_choice {
    modsim::op as = modsim::op::router;
    dtype type = dtype::fp32;
  };
  std::optional<curve_choice> curve_for(modsim::op o, dtype t) const;

  double launch_s() const;        // device-side cost of one kernel launch
  double host_enqueue_s() const;  // host-side cost of enqueuing one kernel
  // The GPU kernel-sequence model in use; null for the curves or the datasheet.
  const kernel_params* kernel_model() const;
  // The dtype whose kernel-model calibration times dtype `t` (t itself, or bf16 for fp16 on
  // tensor-core hardware); empty when the kernel model does not cover `t`.
  std::optional<dtype> kernel_model_dtype(dtype t) const;
  // Seconds from the first enqueue to the end of the last kernel of `ops` run in this order on
  // one stream: with the kernel model the host/device queue over their kernels; otherwise
  // Σ time_s + kernels · launch_s.
  double sequence_s(const std::vector<op_time>& ops) const;

 private:
  template <class Shape>
  op_time time_impl(const op_cost& c, const Shape& s, dtype t) const;
  // The datasheet roofline of `c` without wave quantisation (a memory-bound kernel).
  op_time roofline_of(const op_cost& c, dtype t) const;
  op_time backward_impl(const op_cost& forward, const op_cost& backward, const op_shape& s, dtype t) const;

  hardware_spec m_hw;
  std::shared_ptr<const sim::calibration> m_cal;  // null when uncalibrated
  attention_impl m_attention = attention_impl::unfused;
};

// A cost model with the calibration replaced (used by calibrate to evaluate a fit).
cost_model with_calibration(const hardware_spec& hw, const calibration& c);

}  // namespace modsim::sim
