#include "sim/cost/predict.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "core/error.hpp"
#include "sim/cost/gemm_tiles.hpp"

namespace modsim::sim {

namespace {

op_prediction to_prediction(const op_time& t, const op_cost& reported, double time_scale, int kernel_scale) {
  op_prediction p;
  p.op = reported.op;
  p.op_class = op_class_of(reported.op);
  p.time_s = t.time_s * time_scale;
  p.roofline_s = t.roofline_s * time_scale;
  p.wave_s = t.wave_s * time_scale;
  p.matmul_flops = reported.matmul_flops;
  p.other_flops = reported.other_flops;
  p.bytes = reported.bytes;
  p.kernels = t.kernels * kernel_scale;
  p.memory_bound = t.memory_bound() || reported.matmul_flops == 0;
  p.calibrated = t.calibrated;
  p.calibrated_as = t.calibrated_as;
  return p;
}

}  // namespace

namespace {

// The parts of one op in a training step combined into one prediction: forward, backward and
// recomputation (`parts` in that order; `reported` is the op's train cost).
op_prediction combined(const std::vector<op_time>& parts, const op_cost& reported) {
  op_prediction p;
  p.op = reported.op;
  p.op_class = op_class_of(reported.op);
  p.matmul_flops = reported.matmul_flops;
  p.other_flops = reported.other_flops;
  p.bytes = reported.bytes;
  double compute = 0, memory = 0;
  for (const op_time& t : parts) {
    p.time_s += t.time_s;
    p.roofline_s += t.roofline_s;
    p.wave_s += t.wave_s;
    p.kernels += t.kernels;
    compute += t.compute_s;
    memory += t.memory_s;
  }
  p.forward_s = parts.at(0).time_s;
  p.backward_s = parts.at(1).time_s;
  p.recompute_s = parts.at(2).time_s;
  p.backward_fitted = parts.at(1).backward_fitted;
  p.memory_bound = memory > compute || reported.matmul_flops == 0;
  p.calibrated = parts[0].calibrated;
  p.calibrated_as = parts[0].calibrated_as;
  return p;
}

}  // namespace

model_time time_model(const model_spec& model, const workload& w, const cost_model& cost) {
  return time_model(model, evaluate_flops(model, w, cost.attention()), cost);
}

model_time time_model(const model_spec& model, const flops_report& reported, const cost_model& cost) {
  // Train: each op's forward, its backward (cost_model::backward_time_of) and what
  // recomputation runs again, then the optimizer step; the FLOPs reported are the train ones.
  const workload& w = reported.load;
  const bool train = w.run == run_mode::train;
  // What a training step recomputes depends on the attention kernel: FLOPs counted for another
  // kernel than the cost model's are counted again (forward and decode counts are the same).
  std::optional<flops_report> recounted;
  if (train && reported.train && reported.train->attention != cost.attention())
    recounted = evaluate_flops(model, w, cost.attention());
  const flops_report& flops = recounted ? *recounted : reported;

  const op_shape base = shape_of(model, w);
  const bool decode = w.run == run_mode::decode;

  model_time out;
  std::vector<op_time> sequence;  // every op in launch order, for the host/device queue
  std::vector<op_time> backward;  // train: the backward pass's ops in forward order
  auto account = [&](const op_time& t) {
    if (t.from_other_dtype) out.timed_as_dtype = t.calibrated_dtype;
    out.max_wave_factor = std::max(out.max_wave_factor, t.wave_factor);
    out.unmeasured_wave_s += t.unmeasured_wave_s;
  };
  for (const layer_flops& lf : flops.layers) {
    const op_shape& s = lf.shape;  // the shapes sim/model/flops evaluated the ops at
    const expected_op_shape& x = lf.expected;
    const bool expected = lf.has_expected;
    layer_prediction lp;
    lp.index = lf.index;
    lp.routed = lf.routed;
    lp.capacity = lf.capacity;
    lp.tokens = lf.tokens;
    for (std::size_t oi = 0; oi < lf.ops.size(); ++oi) {
      op_prediction p;
      if (!train) {
        const op_cost& c = lf.ops[oi];
        // In a routed decode layer the first op (router or predictor) sees all B tokens.
        const op_time t = (expected && oi > 0) ? cost.time_of(c, x, w.type) : cost.time_of(c, s, w.type);
        account(t);
        sequence.push_back(t);
        p = to_prediction(t, c, 1.0, 1);
        p.forward_s = p.time_s;
      } else {
        const train_op_time parts = cost.train_time_of(lf.forward[oi], lf.backward[oi], s, w.type, w.recompute);
        const op_time &tf = parts.forward, &tb = parts.backward, &tr = parts.recompute;
        for (const op_time& t : {tf, tb, tr}) account(t);
        sequence.push_back(tf);
        if (tr.kernels > 0) backward.push_back(tr);
        backward.push_back(tb);
        p = combined({tf, tb, tr}, lf.ops[oi]);
      }
      lp.time_s += p.time_s;
      lp.kernels += p.kernels;
      out.matmul_flops += p.matmul_flops;
      out.other_flops += p.other_flops;
      out.bytes += p.bytes;
      lp.ops.push_back(std::move(p));
    }
    out.ops_s += lp.time_s;
    out.kernels += lp.kernels;
    out.layers.push_back(std::move(lp));
  }
  op_shape head = base;
  if (decode) head.seq_len = 1;
  if (!train) {
    const op_time head_time = cost.time_of(flops.lm_head, head, w.type);
    account(head_time);
    sequence.push_back(head_time);
    out.lm_head = to_prediction(head_time, flops.lm_head, 1.0, 1);
    out.lm_head.forward_s = out.lm_head.time_s;
  } else {
    const op_time tf = cost.time_of(flops.lm_head_forward, head, w.type);
    const op_time tb = cost.backward_time_of(flops.lm_head_forward, flops.lm_head_backward, head, w.type);
    op_time tr;
    tr.kernels = 0;
    account(tf);
    account(tb);
    sequence.push_back(tf);
    sequence.push_back(tb);
    out.lm_head = combined({tf, tb, tr}, flops.lm_head);
    // The backward pass runs the layers in reverse (each op's recomputation before its backward).
    for (std::size_t i = backward.size(); i-- > 0;) sequence.push_back(backward[i]);
    const optimizer_cost& oc = flops.train->optimizer;
    const op_time to = cost.optimizer_time_of(oc, w.type);
    sequence.push_back(to);
    out.optimizer.op = modsim::op::lm_head;  // no op of its own; op_class says what it is
    out.optimizer.op_class = "optimizer";
    out.optimizer.time_s = to.time_s;
    out.optimizer.roofline_s = to.roofline_s;
    out.optimizer.other_flops = oc.other_flops;
    out.optimizer.bytes = oc.bytes;
    out.optimizer.kernels = to.kernels;
    out.optimizer.memory_bound = true;
    out.optimizer.calibrated = to.calibrated;
    if (to.calibrated) out.optimizer.calibrated_as = to.calibrated_as;
    out.optimizer.forward_s = 0;
    out.optimizer_bytes_per_param = flops.train->optimizer_bytes_per_param;
  }
  out.ops_s += out.lm_head.time_s + out.optimizer.time_s;
  out.kernels += out.lm_head.kernels + out.optimizer.kernels;
  for (const op_prediction* o : {&out.lm_head, &out.optimizer}) {
    out.matmul_flops += o->matmul_flops;
    out.other_flops += o->other_flops;
    out.bytes += o->bytes;
  }
  if (train) {
    out.model_matmul_flops = flops.train->model_matmul_flops;
    for (const layer_prediction& l : out.layers)
      for (const op_prediction& o : l.ops) {
        out.forward_s += o.forward_s;
        out.backward_s += o.backward_s;
        out.recompute_s += o.recompute_s;
      }
    out.forward_s += out.lm_head.forward_s;
    out.backward_s += out.lm_head.backward_s;
  }
  // Launch gaps and host-bound stalls: the queue over the step's kernels, less the device time
  // of the ops themselves.
  out.total_s = std::max(out.ops_s, cost.sequence_s(sequence));
  out.overhead_s = out.total_s - out.ops_s;
  return out;
}

// The algebra. Write T = T_dense, F = F_dense, ρ = F_mod/F, and for an op paired with the
// dense model ρ_o = F_mod,o/F_dense,o. Then
//   Σ_paired [ (t_mod,o − ρ_o t_dense,o)/T + (t_dense,o/T − F_dense,o/F)(ρ_o − ρ) ]
//     = Σ_paired (t_mod,o/T − F_mod,o/F) − ρ Σ_paired t_dense,o/T + ρ Σ_paired F_dense,o/F
//     = Σ_paired (t_mod,o/T − F_mod,o/F) − ρ (T − O_dense)/T + ρ
// (every dense op is paired, so Σ_paired t_dense,o = T − O_dense and Σ_paired F_dense,o = F);
// adding the unpaired terms Σ (t_mod,o/T − F_mod,o/F) and the launch term (O_mod − ρ O_dense)/T
// gives (T_mod − O_mod)/T − ρ + O_mod/T = T_mod/T − ρ.
gap_decomposition decompose_gap(const model_time& mod, const model_time& dense) {
  gap_decomposition g;
  const double T = dense.total_s;
  const double F = double(dense.matmul_flops) + double(dense.other_flops);
  if (!(T > 0) || !(F > 0)) return g;
  const double rho = (double(mod.matmul_flops) + double(mod.other_flops)) / F;

  auto flops = [](const op_prediction& p) { return double(p.matmul_flops) + double(p.other_flops); };
  auto add = [&](const op_prediction& ref, std::string_view cls, double v) {
    g.by_class[std::string(cls)] += v;
    if (ref.op_class == "routing")
      g.routing += v;
    else if (ref.op_class == "attn_core")
      g.attention += v;
    else if (ref.memory_bound)
      g.memory_bound += v;
    else
      g.gemm_efficiency += v;
  };
  // Wave quantisation: its own term, and in by_class with the op's other terms.
  auto waves = [&](std::string_view cls, double v) {
    g.by_class[std::string(cls)] += v;
    g.wave_quantisation += v;
  };
  auto paired = [&](const op_prediction* m, const op_prediction& d) {
    const double fd = flops(d);
    const double fm = m ? flops(*m) : 0.0;
    const double tm = m ? m->time_s : 0.0;
    const double wm = m ? m->wave_s : 0.0;
    if (fd > 0) {
      const double rho_o = fm / fd;
      const double wave = (wm - rho_o * d.wave_s) / T;
      const double eff = (tm - rho_o * d.time_s) / T - wave;
      waves(d.op_class, wave);
      const double mix = (d.time_s / T - fd / F) * (rho_o - rho);
      // Efficiency is judged on the MoD side (a GEMM at small k may turn bandwidth-bound),
      // the mix on the dense side (how the op's time share compares with its FLOP share).
      add(m ? *m : d, d.op_class, eff);
      add(d, d.op_class, mix);
    } else {
      // A dense op without FLOPs (none in the FLOP model today): all of it is excess time.
      add(m ? *m : d, d.op_class, (tm - rho * d.time_s) / T);
    }
  };
  auto unpaired = [&](const op_prediction& m) {
    waves(m.op_class, m.wave_s / T);
    add(m, m.op_class, (m.time_s - m.wave_s) / T - flops(m) / F);
  };

  const std::size_t n = std::max(mod.layers.size(), dense.layers.size());
  for (std::size_t li = 0; li < n; ++li) {
    static const layer_prediction empty;
    const layer_prediction& lm = li < mod.layers.size() ? mod.layers[li] : empty;
    const layer_prediction& ld = li < dense.layers.size() ? dense.layers[li] : empty;
    std::vector<bool> used(lm.ops.size(), false);
    for (const op_prediction& d : ld.ops) {
      const op_prediction* match = nullptr;
      for (std::size_t k = 0; k < lm.ops.size(); ++k)
        if (!used[k] && lm.ops[k].op == d.op) {
          used[k] = true;
          match = &lm.ops[k];
          break;
        }
      paired(match, d);
    }
    for (std::size_t k = 0; k < lm.ops.size(); ++k)
      if (!used[k]) unpaired(lm.ops[k]);
  }
  paired(&mod.lm_head, dense.lm_head);
  if (dense.optimizer.time_s > 0 || mod.optimizer.time_s > 0) paired(&mod.optimizer, dense.optimizer);
  g.launch = (mod.overhead_s - rho * dense.overhead_s) / T;
  return g;
}

std::span<const gap_term> gap_terms() {
  static const gap_term terms[] = {
      {"routing", "routing ops", "routing", "router/topk/gather/scatter/predictor time beyond their FLOP share",
       &gap_decomposition::routing},
      {"launch", "launch overhead", "launch",
       "{launches} launches vs {dense_launches} dense: the launch count does not shrink with capacity",
       &gap_decomposition::launch},
      {"gemm_efficiency", "GEMM efficiency", "GEMM eff.", "matmuls on fewer rows run below their dense efficiency",
       &gap_decomposition::gemm_efficiency},
      {"attention", "attention (capacity^2)", "attention",
       "attention FLOPs shrink with capacity^2; its time share decides", &gap_decomposition::attention},
      {"memory_bound", "memory-bound ops", "mem-bound", "weights read whatever k is; norms and activations",
       &gap_decomposition::memory_bound},
      {"wave_quantisation", "wave quantisation", "waves",
       "GEMMs on fewer rows fill part of a wave of tiles; the idle SMs' time", &gap_decomposition::wave_quantisation},
  };
  return terms;
}

void compare_with_baseline(prediction& p) {
  const double fm = double(p.model.matmul_flops) + double(p.model.other_flops);
  const double fd = double(p.dense.matmul_flops) + double(p.dense.other_flops);
  p.flop_ratio = fd > 0 ? fm / fd : 1.0;
  p.matmul_flop_ratio = p.dense.matmul_flops > 0 ? double(p.model.matmul_flops) / double(p.dense.matmul_flops) : 1.0;
  p.time_ratio = p.dense.total_s > 0 ? p.model.total_s / p.dense.total_s : 1.0;
  p.gap = decompose_gap(p.model, p.dense);
  double attention_s = 0;
  for (const layer_prediction& l : p.model.layers)
    for (const op_prediction& o : l.ops)
      if (o.op_class == "attn_core") attention_s += o.time_s;
  p.attention_share = p.model.total_s > 0 ? attention_s / p.model.total_s : 0.0;
}

std::string optimizer_pricing(const optimizer_fit* f) {
  if (f == nullptr) return "on the datasheet roofline";
  std::string checked;
  if (f->holdout_rows > 0)
    checked = fmt::format(" (held-out rows: median {:.1f}%, p90 {:.1f}%, {} rows)", f->holdout_median_abs_pct_error,
                          f->holdout_p90_abs_pct_error, f->holdout_rows);
  else if (f->cv_folds > 0)
    checked = fmt::format(" (cross-validated by shape: median {:.1f}%, p90 {:.1f}%, {} rows)",
                          f->cv_median_abs_pct_error, f->cv_p90_abs_pct_error, f->cv_rows);
  return fmt::format("at {:.1f} GB/s, the rate fitted on {} measured {} adamw row{}{}", f->bytes_per_s() / 1e9, f->rows,
                     to_string(f->type), f->rows == 1 ? "" : "s", checked);
}

prediction predict(const model_spec& model, const workload& w, const cost_model& cost) {
  return predict(model, dense_baseline(model), w, cost);
}

prediction predict(const model_spec& model, const model_spec& baseline, const workload& w, const cost_model& cost) {
  return predict(model, baseline, evaluate_flops(model, w, cost.attention()),
                 evaluate_flops(baseline, w, cost.attention()), cost);
}

prediction predict(const model_spec& model, const model_spec& baseline, const flops_report& flops,
                   const flops_report& baseline_flops, const cost_model& cost) {
  return predict_from_times(model, flops.load, cost, time_model(model, flops, cost),
                            time_model(baseline, baseline_flops, cost));
}

prediction predict_from_times(const model_spec& model, const workload& w, const cost_model& cost, model_time times,
                              model_time dense) {
  prediction p;
  p.model_name = model.name;
  p.load = w;
  p.cost_label = cost.label();
  p.calibrated = cost.calibrated();
  p.launch_s = cost.launch_s();
  p.model = std::move(times);
  p.dense = std::move(dense);
  compare_with_baseline(p);
  p.attention = cost.attention();
  p.attention_measured = cost.attention_measured();
  if (const calibration* cal = cost.calibration(); cal && cal->cross_validation) {
    p.expected_error = *cal->cross_validation;
    p.holdout = cal->holdout;
  }
  if (p.model.timed_as_dtype || p.dense.timed_as_dtype)
    p.notes.push_back(std::string(to_string(w.type)) + " timed by the " +
                      to_string(p.model.timed_as_dtype ? *p.model.timed_as_dtype : *p.dense.timed_as_dtype) +
                      " calibration: on " + cost.hardware().name +
                      " the tensor cores run both at one rate and the elements have one size");

  const backward_fit* fitted_backward = nullptr;
  if (const calibration* cal = cost.calibration(); cal && cal->backward && cal->backward->type == w.type)
    fitted_backward = &*cal->backward;
  const optimizer_fit* fitted_optimizer = w.run == run_mode::train ? cost.fitted_optimizer() : nullptr;
  if (fitted_optimizer) {
    p.fitted_optimizer = *fitted_optimizer;
    p.fitted_optimizer->keys.clear();
  }
  const std::string adamw_priced = "the AdamW step " + optimizer_pricing(fitted_optimizer);
  if (w.run == run_mode::train && cost.calibrated() && !fitted_backward) {
    // No training row measured a backward pass for this dtype: say which rule priced it, and
    // give no band (the calibration's validation covers forward blocks only).
    p.notes.push_back(
        "training step: no row of this calibration measures a backward pass; each op's backward is the forward's "
        "calibrated efficiency applied to the backward's FLOPs and bytes; " +
        adamw_priced);
  } else if (w.run == run_mode::train && fitted_backward) {
    const backward_fit& b = *fitted_backward;
    p.backward = b;
    p.backward->keys.clear();
    std::string checked;
    if (b.holdout_rows > 0)
      checked = fmt::format("; its held-out training rows: median {:.1f}%, p90 {:.1f}% ({} rows)",
                            b.holdout_median_abs_pct_error, b.holdout_p90_abs_pct_error, b.holdout_rows);
    else if (b.cv_folds > 0)
      checked = fmt::format("; cross-validated by shape: median {:.1f}%, p90 {:.1f}% ({} rows)",
                            b.cv_median_abs_pct_error, b.cv_p90_abs_pct_error, b.cv_rows);
    p.notes.push_back(fmt::format(
        "training step: the backward fitted on {} measured training rows (one layer's forward + backward): the "
        "forward's calibrated efficiency applied to the backward's FLOPs and bytes, x {:.3f} for GEMMs, {:.3f} for "
        "attention, {:.3f} for memory-bound ops{}; {}",
        b.rows, b.factor_of(backward_class::gemm), b.factor_of(backward_class::attention),
        b.factor_of(backward_class::memory), checked, adamw_priced));
  }
  if (!cost.calibrated()) {
    p.notes.push_back("uncalibrated: every time is the datasheet roofline of " + cost.hardware().name +
                      " (run modsim calibrate for measured efficiencies)");
  } else {
    std::set<std::string> roofline_ops, stand_ins;  // by name, so the notes list them alphabetically
    const bool attention_roofline = !p.attention_measured;
    auto scan = [&](const op_prediction& o) {
      if (attention_roofline && o.op_class == "attn_core") return;  // said below
      if (!o.calibrated)
        roofline_ops.insert(std::string(to_string(o.op)));
      else if (o.calibrated_as != o.op)
        stand_ins.insert(std::string(to_string(o.op)) + " (as " + std::string(curve_name(o.calibrated_as)) + ")");
    };
    for (const auto* mt : {&p.model, &p.dense}) {
      for (const auto& l : mt->layers)
        for (const auto& o : l.ops) scan(o);
      scan(mt->lm_head);
    }
    if (!roofline_ops.empty()) {
      std::string s;
      for (const auto& o : roofline_ops) s += (s.empty() ? "" : ", ") + o;
      p.notes.push_back("not calibrated for " + std::string(to_string(w.type)) + ", datasheet roofline used: " + s);
    }
    if (!stand_ins.empty()) {
      std::string s;
      for (const auto& o : stand_ins) s += (s.empty() ? "" : ", ") + o;
      p.notes.push_back("never measured, timed with a stand-in op's curve: " + s);
    }
    const calibration& cal = *cost.calibration();
    if (cal.anchor_reference_s > 0)
      p.notes.push_back(fmt::format(
          "times at the machine speed the calibration's rows were held to (an anchor of {:.3f} ms, the median over "
          "its {} rows): a shared machine running slower or faster now takes as much longer or shorter",
          cal.anchor_reference_s * 1e3, cal.anchor_rows));
    if (cal.kernels && cal.kernels->max_wave_factor > 0 && p.model.unmeasured_wave_s > 0.005 * p.model.total_s)
      p.notes.push_back(fmt::format(
          "GEMM waves past what the calibration measured: wave factor up to {:.2f} (its rows reached {:.2f}); "
          "{:.1f}% of this prediction is the padding of those waves as the {} tiling assumes it, which no row "
          "measured (the band does not cover it)",
          p.model.max_wave_factor, cal.kernels->max_wave_factor, 100 * p.model.unmeasured_wave_s / p.model.total_s,
          to_string(cal.kernels->gemm_tiles)));
    if (attention_roofline) {
      const attention_impl measured = cost.calibration()->attention;
      p.notes.push_back(fmt::format(
          "attention {}: never measured by this calibration (its rows ran {} attention); attn_scores, attn_softmax "
          "and attn_values are the datasheet roofline of {} attention (--attention {} uses the measured kernels)",
          to_string(p.attention), to_string(measured), to_string(p.attention), to_string(measured)));
    }
    if (p.expected_error && w.run == run_mode::train) {
      p.expected_error.reset();
      p.holdout.reset();
      const std::string optimizer_by = fitted_optimizer ? "measured adamw rows" : "rule";
      p.notes.push_back(
          fitted_backward
              ? "no error band: the calibration's bands cover forward blocks; its training rows were checked as the "
                "figures above say, not banded (the optimizer step is priced by " +
                    optimizer_by + ")"
              : "no error band: the calibration's validation covers forward blocks it measured, not the backward "
                "pass priced by rule and the optimizer step priced by " +
                    optimizer_by);
    } else if (p.expected_error && (!roofline_ops.empty() || attention_roofline)) {
      const double p90 = p.expected_error->p90_abs_pct_error;
      p.expected_error.reset();
      p.holdout.reset();
      if (!roofline_ops.empty())
        p.notes.push_back(
            "no error band: the calibration's cross-validation covers its calibrated ops, not the datasheet "
            "roofline the ops above fell back to");
      if (attention_roofline)
        p.notes.push_back(fmt::format(
            "no error band: the calibration's cross-validation (p90 {:.1f}%) covers the attention it measured, not "
            "the datasheet roofline of {} attention, which is a lower bound: a fused kernel runs below the peaks",
            p90, to_string(p.attention)));
    } else if (p.expected_error) {
      // The model's ops timed with a stand-in's curve, with their shares of its time.
      std::map<std::pair<modsim::op, modsim::op>, double> stand_in_s;
      auto add = [&](const op_prediction& o) {
        if (!o.calibrated || !o.calibrated_as || *o.calibrated_as == o.op) return;
        stand_in_s[{o.op, *o.calibrated_as}] += o.time_s;
      };
      for (const auto& l : p.model.layers)
        for (const auto& o : l.ops) add(o);
      add(p.model.lm_head);
      std::vector<stand_in_use> uses;
      for (const auto& [ops, t] : stand_in_s)
        uses.push_back({ops.first, ops.second, p.total_s() > 0 ? t / p.total_s() : 0.0});
      p.band = band_for(*cost.calibration(), values_of(model, w),
                        p.model.layers.empty() ? p.total_s() : p.total_s() / double(p.model.layers.size()),
                        w.run == run_mode::decode, uses);
    }
  }
  return p;
}

axis_values values_of(const model_spec& m, const workload& w) {
  const bool decode = w.run == run_mode::decode;
  axis_values v = {{cv_axis::d_model, double(m.d_model)},
                   {cv_axis::d_ff, double(m.d_ff)},
                   {cv_axis::n_heads, double(m.n_heads)},
                   {cv_axis::seq_len, double(w.seq_len)},
                   {cv_axis::batch, double(w.batch)}};
  for (const layer_routing& l : route_layers(m)) {
    v.emplace_back(cv_axis::capacity, l.capacity);
    const std::int64_t per_sequence = decode ? 1 : l.mod_routed ? routed_tokens(l.capacity, w.seq_len) : w.seq_len;
    v.emplace_back(cv_axis::tokens, double(w.batch) * double(per_sequence));
  }
  return v;
}

}  // namespace modsim::sim
