#include "analysis/training.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"

namespace modsim::analysis {

namespace {

training_step step_of(const sim::model_time& t, const sim::model_spec& m, const std::string& name,
                      const sim::workload& w, const sim::hardware_spec& hw, attention_impl attention) {
  training_step s;
  s.name = name;
  s.step_s = t.total_s;
  s.forward_s = t.forward_s;
  s.backward_s = t.backward_s;
  s.recompute_s = t.recompute_s;
  s.optimizer_s = t.optimizer.time_s;
  s.overhead_s = t.overhead_s;
  s.tokens = w.batch * w.seq_len;
  s.tokens_per_s = s.step_s > 0 ? static_cast<double>(s.tokens) / s.step_s : 0.0;
  s.model_flops = t.model_matmul_flops;
  s.counted_flops = t.matmul_flops + t.other_flops;
  const double peak = hw.peak_matmul_flops.of(w.type);
  s.mfu = peak > 0 && s.step_s > 0 ? static_cast<double>(s.model_flops) / (s.step_s * peak) : 0.0;
  s.memory = sim::footprint_of(m, w, attention);
  s.memory_verdict = sim::memory_verdict(s.memory, hw.memory_bytes);
  return s;
}

double ratio(double a, double b) { return b > 0 ? a / b : 1.0; }

}  // namespace

double checked_flop_budget(double flops, const std::string& key) {
  if (!std::isfinite(flops) || !(flops > 0))
    throw input_error("", key, fmt::format("must be a number of FLOPs > 0 (e.g. 6e18), got {}", flops));
  return flops;
}

training_section make_training(const sim::prediction& p, const sim::model_spec& model, const sim::model_spec& baseline,
                               const std::string& baseline_name, const sim::hardware_spec& hw, attention_impl attention,
                               const training_request& request) {
  if (p.load.run != sim::run_mode::train)
    throw runtime_error("make_training: the prediction is not of a training step");
  training_section t;
  t.load = p.load;
  t.calibrated = p.calibrated;
  t.model = step_of(p.model, model, model.name.empty() ? "model" : model.name, p.load, hw, attention);
  t.baseline = step_of(p.dense, baseline, baseline_name, p.load, hw, attention);
  t.time_ratio = p.time_ratio;
  t.flop_ratio = p.flop_ratio;
  t.model_flop_ratio = ratio(static_cast<double>(t.model.model_flops), static_cast<double>(t.baseline.model_flops));
  t.wall_ratio = t.model_flop_ratio > 0 ? t.time_ratio / t.model_flop_ratio : 1.0;

  // τ/ρ_m − 1 = Σ gap terms / ρ_m + (ρ − ρ_m)/ρ_m (training.hpp); the optimizer's share of the
  // gap (its op class) out of the group decompose_gap put it in (memory-bound: it always is).
  const double rm = t.model_flop_ratio > 0 ? t.model_flop_ratio : 1.0;
  const auto it = p.gap.by_class.find("optimizer");
  const double optimizer = it == p.gap.by_class.end() ? 0.0 : it->second;
  for (const sim::gap_term& g : sim::gap_terms()) {
    double v = p.gap.*g.value;
    if (std::string(g.key) == "memory_bound") v -= optimizer;
    t.sources.push_back({g.key, g.label, v / rm,
                         fmt::format(fmt::runtime(g.why), fmt::arg("launches", p.model.kernels),
                                     fmt::arg("dense_launches", p.dense.kernels))});
    if (std::string(g.key) == "memory_bound")
      t.sources.push_back({"optimizer", "optimizer step", optimizer / rm,
                           "the AdamW step reads and writes every parameter's state, the same bytes for both: its "
                           "time does not shrink with the FLOPs"});
  }
  t.sources.push_back({"flop_count", "FLOPs outside the budget", (t.flop_ratio - t.model_flop_ratio) / rm,
                       "the step also runs elementwise FLOPs, recomputation and the optimizer's, which the budget's "
                       "model FLOPs do not count and which shrink at another rate"});

  if (request.flop_budget) {
    training_budget b;
    b.flops = checked_flop_budget(*request.flop_budget, "--flop-budget");
    if (t.model.model_flops > 0 && t.baseline.model_flops > 0) {
      b.model_steps = b.flops / static_cast<double>(t.model.model_flops);
      b.baseline_steps = b.flops / static_cast<double>(t.baseline.model_flops);
    }
    b.model_tokens = b.model_steps * static_cast<double>(t.model.tokens);
    b.baseline_tokens = b.baseline_steps * static_cast<double>(t.baseline.tokens);
    b.model_wall_s = b.model_steps * t.model.step_s;
    b.baseline_wall_s = b.baseline_steps * t.baseline.step_s;
    t.budget = b;
  }

  t.flop_convention =
      "model FLOPs = 3 x the forward pass's matmul FLOPs (2 per multiply-add, the full attention square, router and LM "
      "head included; recomputation not counted; docs/flops.md), not 6 x parameters x tokens (which gives MoD and its "
      "baseline the same FLOPs per token); MFU = model FLOPs / (step time x the peak matmul FLOP/s of " +
      std::string(sim::to_string(p.load.type)) + ")" +
      (p.calibrated ? "" : "; on the datasheet roofline every GEMM runs at the peak, so the MFU is an upper bound");
  // Whether the calibration's backward fit (measured training rows) priced the backward ops.
  for (const auto& l : p.model.layers)
    for (const auto& o : l.ops) t.backward_fitted = t.backward_fitted || o.backward_fitted;
  t.backward_fitted = t.backward_fitted && p.backward.has_value();
  t.backward = t.backward_fitted
                   ? fmt::format(
                         "each op's backward FLOPs and bytes at the forward's calibrated efficiency x the "
                         "factor fitted on {} measured training rows (GEMMs {:.3f}, attention {:.3f}, "
                         "memory-bound {:.3f})",
                         p.backward->rows, p.backward->factor_of(sim::backward_class::gemm),
                         p.backward->factor_of(sim::backward_class::attention),
                         p.backward->factor_of(sim::backward_class::memory))
               : p.calibrated ? "each op's backward FLOPs and bytes at the forward's calibrated efficiency (no row of "
                                "the calibration measures a backward pass: no error band)"
                              : "each op's backward FLOPs and bytes on the datasheet roofline";
  t.backward += "; the loss (cross-entropy and its gradient: one pass over the logits) on the datasheet roofline";
  t.attention_backward = p.attention == attention_impl::fused
                             ? "one fused kernel that recomputes the scores: 5 matmuls where the forward kernel runs 2 "
                               "(2.5 x)"
                             : "4 matmuls reading the stored probabilities, and the softmax backward";
  t.optimizer_fitted = p.fitted_optimizer.has_value();
  t.optimizer =
      fmt::format("AdamW, {} bytes per parameter (weights, gradients, two fp32 moments{}), memory-bound {}",
                  p.model.optimizer_bytes_per_param, p.load.type == sim::dtype::fp32 ? "" : ", an fp32 master copy",
                  sim::optimizer_pricing(p.fitted_optimizer ? &*p.fitted_optimizer : nullptr));
  t.memory_scope = "one GPU holding the whole batch (a lower bound)";
  return t;
}

}  // namespace modsim::analysis
