#pragma once
// The predicted time of a whole model under a workload, built op by op from sim/model/flops
// (evaluate_flops) and the cost model (sim/cost/cost.hpp), next to the same workload on the
// dense baseline, and an explanation of why the time saved differs from the FLOPs saved.
//
// Totals: total_s = Σ op time_s (all layers + lm_head) + overhead_s, overhead_s = kernels ×
// launch_s. --mode train: each op is its forward, its backward (sim/model/flops' backward FLOPs and
// bytes, cost_model::backward_time_of) and what workload::recompute runs again, then one AdamW
// step (cost_model::optimizer_time_of); the FLOPs reported are the train FLOPs.
// --mode decode: the decode FLOP model (expected routed counts) of one step.
//
// ---------------------------------------------------------------------------------------
// Where the difference goes (gap_decomposition)
// ---------------------------------------------------------------------------------------
// ρ = F_mod / F_dense (FLOPs = matmul + other, all ops incl. lm_head), τ = T_mod / T_dense.
// The gap τ − ρ (> 0: the time saved is less than the FLOPs saved) is split exactly into
// per-op terms, in units of the dense time T_dense. Ops are paired by layer and name with the
// dense baseline; t = predicted time, F = FLOPs, ρ_o = F_mod,o / F_dense,o:
//   an op the dense model also runs (F_dense,o > 0):
//     efficiency term  (t_mod,o − ρ_o · t_dense,o) / T_dense
//         the time the op takes beyond its own FLOP share at dense efficiency (a routed
//         layer's GEMM on k rows runs below the efficiency it had on S rows; weights are
//         read in full whatever k is);
//     mix term  (t_dense,o / T_dense − F_dense,o / F_dense) · (ρ_o − ρ)
//         the op's share of dense time minus its share of dense FLOPs, weighted by how much
//         more (or less) than average its FLOPs shrink: ops that take more time than their
//         FLOPs suggest (softmax, norms) and shrink with capacity² (attention) pull the time
//         ratio below the FLOP ratio, those that are not routed at all pull it above;
//   an op only the MoD model runs (router, topk, gather, scatter, predictor):
//     t_mod,o / T_dense − F_mod,o / F_dense  (its time share minus its FLOP share);
//   launch: (overhead_mod − ρ · overhead_dense) / T_dense (kernel count does not shrink with
//     capacity; routing adds kernels).
// Σ of all terms = τ − ρ exactly (the algebra is in predict.cpp). Wave quantisation is taken
// out of the efficiency (and unpaired) terms first: with w the op's wave_s (the time its GEMM
// tiles' partial waves add beyond the op at wave factor 1),
//   paired: (w_mod,o − ρ_o · w_dense,o) / T_dense, and the efficiency term keeps
//     ((t_mod,o − w_mod,o) − ρ_o · (t_dense,o − w_dense,o)) / T_dense;
//   unpaired: w_mod,o / T_dense, the op's term keeps the rest;
// so the sum is unchanged. The terms are grouped:
//   routing           the MoD-only ops (router/topk/gather/scatter/predictor);
//   launch            the launch term;
//   attention         attn_scores, attn_softmax, attn_values (both terms): attention FLOPs
//                     shrink with capacity², so the FLOP ratio is dominated by the
//                     projection/MLP savings and attention's time share decides the sign;
//   memory_bound      the other ops whose predicted MoD-side roofline is bandwidth-bound or
//                     that have no matmul (norms, activation; GEMMs at small k whose weight
//                     reads dominate);
//   gemm_efficiency   the other ops (compute-bound matmuls: projections, MLP, lm_head);
//   wave_quantisation the wave terms of every op (a GEMM on k rows fills a fraction of a wave
//                     of tiles that the dense one's rows filled whole).
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cost/cost.hpp"
#include "sim/model/flops.hpp"
#include "sim/model/spec.hpp"
#include "sim/cost/validation.hpp"

namespace modsim::sim {

struct op_prediction {
  modsim::op op = modsim::op::router;
  std::string_view op_class;  // op_class_of(op): static storage
  double time_s = 0;          // device time, launch excluded
  double roofline_s = 0;
  double wave_s = 0;  // of time_s, what the GEMM tiles' partial waves add (op_time::wave_s)
  std::int64_t matmul_flops = 0;
  std::int64_t other_flops = 0;
  std::int64_t bytes = 0;
  int kernels = 0;
  bool memory_bound = false;
  bool calibrated = false;
  std::optional<modsim::op> calibrated_as;  // the curve used (op_time::calibrated_as; empty = none)
  // Of time_s, a training step's parts (forward_s = time_s outside train): the forward, the
  // backward (cost_model::backward_time_of) and what recomputation runs again.
  double forward_s = 0;
  double backward_s = 0;
  double recompute_s = 0;
  // Train: the backward priced by the calibration's backward fit (op_time::backward_fitted).
  bool backward_fitted = false;
};

struct layer_prediction {
  int index = 0;
  bool routed = false;
  double capacity = 1.0;
  std::int64_t tokens = 0;  // tokens the block sees, whole batch
  std::vector<op_prediction> ops;
  double time_s = 0;  // Σ op time_s
  int kernels = 0;
};

struct gap_decomposition {
  double routing = 0;
  double launch = 0;
  double gemm_efficiency = 0;
  double attention = 0;
  double memory_bound = 0;
  double wave_quantisation = 0;
  // The same terms per op class (routing, norm, attn_proj, attn_core, mlp, moe, lm_head),
  // launch excluded.
  std::map<std::string, double> by_class;
  double total() const { return routing + launch + gemm_efficiency + attention + memory_bound + wave_quantisation; }
};

// The gap's terms, declared once: `modsim predict`'s JSON and lines, the report's waterfall and
// the explorer's read them from here.
struct gap_term {
  const char* key;    // JSON name ("gemm_efficiency")
  const char* label;  // for people ("GEMM efficiency")
  const char* chart;  // a chart's short label ("GEMM eff.")
  // Why, one line for people; {launches} and {dense_launches} name the launch counts.
  const char* why;
  double gap_decomposition::*value;
};
std::span<const gap_term> gap_terms();

// The ops and totals of one model (no comparison).
struct model_time {
  std::vector<layer_prediction> layers;
  op_prediction lm_head;
  // Train: the AdamW step (op_class "optimizer", other_flops and bytes of sim::adamw_cost; op
  // is a placeholder); zero otherwise.
  op_prediction optimizer;
  std::int64_t optimizer_bytes_per_param = 0;
  // Train: Σ of the ops' forward_s, backward_s and recompute_s (lm_head included), and the
  // step's model FLOPs (3 × the forward's matmul FLOPs: MFU's numerator).
  double forward_s = 0, backward_s = 0, recompute_s = 0;
  std::int64_t model_matmul_flops = 0;
  int kernels = 0;
  double ops_s = 0;  // Σ op time_s incl. lm_head and the optimizer
  // Launches: kernels × launch_s; with the GPU kernel-sequence model the gaps between kernels
  // and the stalls where the host enqueues slower than the device runs (cost_model::sequence_s).
  double overhead_s = 0;
  double total_s = 0;  // ops_s + overhead_s
  std::int64_t matmul_flops = 0;
  std::int64_t other_flops = 0;
  std::int64_t bytes = 0;
  // Set when ops were timed by another dtype's calibration (fp16 by bf16's).
  std::optional<dtype> timed_as_dtype;
  // GPU kernel-sequence model: the largest GEMM wave factor of the ops (op_time::wave_factor)
  // and the device time their waves add past what the calibration's rows measured
  // (Σ op_time::unmeasured_wave_s, train scaled as time_s).
  double max_wave_factor = 1;
  double unmeasured_wave_s = 0;
};

struct prediction {
  std::string model_name;
  workload load;
  std::string cost_label;  // cost_model::label()
  bool calibrated = false;
  double launch_s = 0;

  model_time model;  // the model as given
  model_time dense;  // the baseline (dense_baseline(model) unless given), same workload

  double flop_ratio = 1;         // (matmul + other) model / dense
  double matmul_flop_ratio = 1;  // matmul only (the paper's count)
  double time_ratio = 1;         // total_s / dense total_s
  gap_decomposition gap;         // of time_ratio − flop_ratio
  // The calibration's cross-validated error (sim/cost/calibrate.hpp cross_validate): how far a
  // prediction of a block it never saw was from the measurement. Absent when uncalibrated or
  // not cross-validated.
  std::optional<cross_validation_summary> expected_error;
  // How the calibration did on rows it was checked on and never fitted (calibrate --holdout);
  // present with expected_error where the calibration has them.
  std::optional<holdout_summary> holdout;
  // Train with a calibration whose backward fit (calibration::backward) covers the dtype: that
  // fit, which priced the backward ops (op_prediction::backward_fitted).
  std::optional<backward_fit> backward;
  // Train with a calibration whose optimizer fit (calibration::optimizer) covers the dtype: that
  // fit, which priced the AdamW step (model_time::optimizer is then calibrated); keys cleared.
  std::optional<optimizer_fit> fitted_optimizer;
  // The band of this prediction (sim/cost/validation.hpp band_for): from where its shapes stand
  // against the calibration's rows, inside their range or outside along some axes. Absent with
  // expected_error, and when some op fell back to the datasheet roofline (the calibration's
  // validation says nothing of those).
  std::optional<error_band> band;
  // How attention was priced (cost_model::attention): fused, attn_scores is the one causal
  // attention kernel and attn_softmax / attn_values take no time and launch nothing (their
  // FLOPs are still shown: the model's); unfused, the three kernels.
  attention_impl attention = attention_impl::unfused;
  // Whether the calibration's rows ran that implementation (cost_model::attention_measured);
  // false uncalibrated. Calibrated and false: the attention ops are the datasheet roofline, and
  // there is no band (expected_error and band absent; notes say why).
  bool attention_measured = false;
  // The attention ops' (attn_core) share of the model's total time.
  double attention_share = 0;
  // Ops predicted with the datasheet roofline although the model is calibrated (never
  // measured, no stand-in), and other remarks.
  std::vector<std::string> notes;

  double total_s() const { return model.total_s; }
  double dense_total_s() const { return dense.total_s; }
  double overhead_s() const { return model.overhead_s; }
};

// Times `m` under `w` with `cost` (no dense comparison). Throws modsim::error(bad_input) for
// an invalid workload (see evaluate_flops).
model_time time_model(const model_spec& m, const workload& w, const cost_model& cost);
// The same from the FLOPs of `m` already evaluated (`flops` = evaluate_flops(m, flops.load,
// cost.attention())): each op is timed at the op_cost and shape `flops` holds. In train mode each
// op's forward, backward and recomputation are timed from the report's train breakdown (counted
// again only when `flops` was counted for another attention kernel than cost.attention()).
model_time time_model(const model_spec& m, const flops_report& flops, const cost_model& cost);

// The prediction of `m` under `w` and its comparison with the dense baseline (dense_baseline(m),
// or `baseline`: a matched-quality dense model).
// How the AdamW step was priced, for people: "at X GB/s, the rate fitted on N measured adamw
// rows (its check)" with the calibration's optimizer fit `f`, else "on the datasheet roofline".
std::string optimizer_pricing(const optimizer_fit* f);

prediction predict(const model_spec& m, const workload& w, const cost_model& cost);
prediction predict(const model_spec& m, const model_spec& baseline, const workload& w, const cost_model& cost);
// The same from the FLOPs already evaluated (`flops` = evaluate_flops(m, w, cost.attention()),
// `baseline_flops` the same of `baseline`; w = flops.load): the FLOPs are not evaluated again.
prediction predict(const model_spec& m, const model_spec& baseline, const flops_report& flops,
                   const flops_report& baseline_flops, const cost_model& cost);
// The prediction made from times already taken: `model` of `m` and `dense` of its baseline
// under `w` (time_model, or a decode step's discrete-event simulation). The ratios, the gap, the
// attention share, the notes, the expected error and the band (its stand-in shares included)
// all come from these times.
prediction predict_from_times(const model_spec& m, const workload& w, const cost_model& cost, model_time model,
                              model_time dense);

// Fills the ratios, the gap decomposition and attention's share of the model's time from p.model
// and p.dense (after either changed).
void compare_with_baseline(prediction& p);

// The decomposition of (T_mod/T_dense − F_mod/F_dense) (see above); exposed for tests.
gap_decomposition decompose_gap(const model_time& mod, const model_time& dense);

// The values of a model under a workload along the band's axes (sim/cost/validation.hpp): its
// width, FFN, heads, sequence (context in decode) and batch, each layer's capacity and the
// tokens it processes (batch × routed or all tokens per sequence; batch in decode).
axis_values values_of(const model_spec& m, const workload& w);

}  // namespace modsim::sim
