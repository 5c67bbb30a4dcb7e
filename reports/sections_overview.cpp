// The report's summary sections: the verdict (headline cards and the findings in a few
// lines), the configuration, the models compared and the method (reports/sections.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "reports/document.hpp"
#include "reports/sections.hpp"
#include "sim/cost/cost.hpp"
#include "sim/cost/kernel_model.hpp"
#include "reports/text.hpp"
#include "reports/views.hpp"
#include "sim/model/flops.hpp"
#include "sim/common/io.hpp"

namespace modsim::reports::detail {

// A validation of a calibration (cross-validated, or a calibrated model scored), not of the
// datasheet roofline.
static bool v_calibrated(const analysis::validation_section& v) {
  return v.folds > 0 || v.cost_label.rfind("calibrated", 0) == 0;
}

// How the predictions price attention (sim::prediction::attention) and whether the calibration
// measured it; `headline`: as a verdict bullet.
static std::string attention_text(const sim::prediction& p, bool headline = true) {
  const bool fused = p.attention == attention_impl::fused;
  std::string t = fused ? "fused (one causal attention kernel; attn_softmax and attn_values run inside it)"
                        : "unfused (scores, softmax and values as separate kernels, the scores in memory)";
  if (!p.calibrated)
    t += ", priced by the datasheet roofline";
  else if (p.attention_measured)
    t += ", as the calibration measured it";
  else
    t += fmt::format(
        ", which the calibration never measured (it ran {} attention): the attention ops are the datasheet "
        "roofline and the prediction has no error band (`--attention {}` predicts with the measured kernels)",
        fused ? "unfused" : "fused", fused ? "unfused" : "fused");
  t += fmt::format("; attention is {:.1f}% of the predicted time", 100 * p.attention_share);
  return headline ? "**Attention**: " + t + "." : t;
}

// The verdict's sampling line: each strategy's cells reaching the target, the best, the excluded.
std::string sampling_line(const report_data& d) {
  const analysis::sampling_map& map = *d.sampling;
  std::string line =
      fmt::format("**Sampling** (decode step vs {}, simulated; the paper claims 1.5x): ", map.baseline_name);
  for (std::size_t i = 0; i < map.strategies.size(); ++i) {
    const analysis::sampling_strategy_map& sm = map.strategies[i];
    const std::size_t fitting = sm.cells.size() - static_cast<std::size_t>(sm.excluded);
    const std::string excluded =
        sm.excluded > 0 ? fmt::format("; {} excluded: they do not fit in {}", sm.excluded, sampling_memory_name(map))
                        : std::string();
    if (sm.best < 0) {
      line += fmt::format("{}{}: no cell fits in memory{}", i ? "; " : "", sm.strategy.name(), excluded);
      continue;
    }
    const analysis::sampling_cell& top = sm.cells[static_cast<std::size_t>(sm.best)];
    line += fmt::format("{}{} reaches {:g}x in {} of {} cells{} (best {:.2f}x at batch {}, context {}{})",
                        i ? "; " : "", sm.strategy.name(), map.target_speedup, sm.reached, fitting,
                        sm.excluded > 0 ? " that fit" : "", top.speedup(), top.batch, top.context, excluded);
  }
  if (d.serving_routing)
    line += fmt::format("; serving decodes with {}", sim::des::to_string(d.serving_routing->routing));
  return line + " (see Sampling).";
}

// The verdict's trust line: the measured error that belongs to these predictions, and whose it is.
std::string trust_line(const report_data& d, const sim::prediction& p) {
  if (d.validation && !p.calibrated && v_calibrated(*d.validation)) {
    // The prediction is the datasheet roofline; the validation found belongs to the
    // calibration beside the hardware file, which this report does not predict with.
    const auto& v = *d.validation;
    const std::string roofline =
        v.datasheet_summary.points > 0
            ? fmt::format(", which is off by {:.1f}% (median |error|), {:.1f}% at p90 on the same blocks",
                          v.datasheet_summary.median_abs_pct_error, v.datasheet_summary.p90_abs_pct_error)
            : std::string(", which no measurement here checks");
    return fmt::format(
        "**Trust**: this report predicts with the uncalibrated datasheet roofline of {}{}; the calibration beside it "
        "({}), which it does not use, is off by {:.1f}% (median |error|), {:.1f}% at p90 on {} measured blocks. "
        "Choose the calibrated hardware file to predict with it.",
        d.hardware.name, roofline, v.hardware, v.summary.median_abs_pct_error, v.summary.p90_abs_pct_error,
        v.summary.points);
  }
  if (d.validation) {
    const auto& v = *d.validation;
    const bool same = v.hardware == d.hardware.name;
    const std::string other =
        same || (v.folds > 0 && d.hardware.name.find(v.hardware) == 0)
            ? std::string()
            : fmt::format(" — measured on {}, not on {}: this checks the method, not the {} numbers", v.hardware,
                          d.hardware.name, d.hardware.name);
    // The calibration itself on rows it was checked on and never fitted (calibrate --holdout).
    const std::string held =
        p.holdout && p.holdout->blocks > 0
            ? fmt::format(
                  "; the calibration itself, on {} held-out blocks it never fitted: {:.1f}% median, {:.1f}% at "
                  "p90 (its bands come from these)",
                  p.holdout->blocks, p.holdout->median_abs_pct_error, p.holdout->p90_abs_pct_error)
            : std::string();
    if (v.folds > 0)
      return fmt::format(
          "**Trust**: against {} measured blocks on {} the calibrated cost model is off by {:.1f}% (median |error|), "
          "{:.1f}% at p90 — {}-fold cross-validation by shape: no block was predicted by a calibration that saw it or "
          "any op of its shape{}{}.",
          v.summary.points, short_device(v.device), v.summary.median_abs_pct_error, v.summary.p90_abs_pct_error,
          v.folds, other, held);
    return fmt::format(
        "**Trust**: against {} measured blocks on {} the {} cost model is off by {:.1f}% "
        "(median |error|), {:.1f}% at p90{}.",
        v.summary.points, short_device(v.device),
        v.cost_label.rfind("calibrated", 0) == 0 ? "calibrated" : "uncalibrated", v.summary.median_abs_pct_error,
        v.summary.p90_abs_pct_error, other);
  }
  return "**Trust**: no measurements in this report — " + d.validation_missing + ".";
}

section verdict_section(const report_data& d) {
  section s{"verdict", "Verdict", "Verdict", {}};
  const model_result& m = subject(d);
  const sim::prediction& p = m.pred;
  const double mm_ratio = static_cast<double>(m.flops.totals.matmul_flops) /
                          static_cast<double>(std::max<std::int64_t>(1, m.flops.totals.dense_matmul_flops));
  block cards{block::kind::cards, {}, {}, {}, {}, {}};
  cards.items.push_back(times(mm_ratio) + "\x1F" + "matmul FLOPs vs dense");
  cards.items.push_back(times(p.time_ratio) + "\x1F" + "predicted time vs dense");
  if (d.serving && d.serving->runs.size() == 2) {
    const auto& a = d.serving->runs[0].summary;
    const auto& b = d.serving->runs[1].summary;
    cards.items.push_back(ratio_or_dash(b.tpot_s.p50, a.tpot_s.p50) + "\x1F" + "serving TPOT p50 vs dense");
    cards.items.push_back(ratio_or_dash(b.kv_peak_bytes, a.kv_peak_bytes) + "\x1F" + "KV cache peak vs dense");
  }
  // A trust figure stands only beside numbers it belongs to: a calibrated prediction whose
  // attention the calibration never measured has no band, and the validation's error is not its.
  const bool unmeasured_attention = p.calibrated && !p.attention_measured;
  if (d.validation && unmeasured_attention)
    cards.items.push_back(std::string("no band") + "\x1F" +
                          fmt::format("{} attention never measured: no measured error for these predictions",
                                      modsim::to_string(p.attention)));
  else if (d.validation && (p.calibrated || !v_calibrated(*d.validation)))
    cards.items.push_back(fmt::format("{:.1f}%", d.validation->summary.median_abs_pct_error) + "\x1F" +
                          "median |error| vs measured");
  else if (d.validation)
    cards.items.push_back(std::string("uncalibrated") + "\x1F" + "datasheet roofline: no measured error");
  s.blocks.push_back(cards);

  std::vector<std::string> items;
  items.push_back(fmt::format(
      "**{} ({})**: {} the matmul FLOPs and {} the predicted wall-clock of its dense baseline on {}, {} ({} → {} "
      "ms{}).",
      model_label(m.model), routing_short(m.model), times(mm_ratio), times(p.time_ratio), hw_phrase(d),
      workload_text(d.load), ms(p.dense.total_s), ms(p.model.total_s), p.band ? ", " + p.band->text() : std::string()));
  items.push_back(attention_text(p));
  // The gap in words: the two largest terms.
  std::vector<std::pair<double, std::string>> terms;
  for (const auto& t : gap_terms()) terms.emplace_back(p.gap.*(t.field), t.label);
  std::sort(terms.begin(), terms.end(),
            [](const auto& a, const auto& b) { return std::abs(a.first) > std::abs(b.first); });
  std::string parts;
  for (const auto& [v, label] : terms) parts += (parts.empty() ? "" : ", ") + label + " " + signed_points(v);
  items.push_back(
      fmt::format("**The gap**: FLOPs (matmul + elementwise) fall to {}, time to {}: {} points of dense time "
                  "are not saved — {}.",
                  pct(p.flop_ratio), pct(p.time_ratio), signed_points(p.time_ratio - p.flop_ratio), parts));
  // The sweep.
  const sim::sweep_point* best = nullptr;
  for (const auto& pt : d.sweep.points)
    if (pt.feasible && (!best || pt.time_s < best->time_s)) best = &pt;
  const int paper = sim::paper_point_index(d.sweep);
  if (best) {
    std::string line =
        fmt::format("**Design space**: {} configurations; the fastest is {} at {} the time ({} the FLOPs)",
                    d.sweep.points.size(), best->description, times(best->time_ratio), times(best->flops_ratio));
    if (paper >= 0) {
      const auto& pp = d.sweep.points[static_cast<std::size_t>(paper)];
      line += fmt::format("; the paper's 12.5% every-other point: {} FLOPs, {} time{}", times(pp.flops_ratio),
                          times(pp.time_ratio), pp.pareto ? ", on the Pareto front" : "");
    }
    items.push_back(line + ".");
  }
  if (d.serving && d.serving->runs.size() == 2) {
    const auto& a = d.serving->runs[0].summary;
    const auto& b = d.serving->runs[1].summary;
    items.push_back(fmt::format(
        "**Serving** ({} requests at {:.1f}/s, simulated): TTFT p50 {} → {} ms ({}), TPOT p50 {} → {} ms ({}), "
        "throughput {:.0f} → {:.0f} tok/s, KV cache peak {:.1f} → {:.1f} MB ({}).",
        d.serving->scenario.requests, d.serving->scenario.rate_per_s, ms(a.ttft_s.p50), ms(b.ttft_s.p50),
        ratio_or_dash(b.ttft_s.p50, a.ttft_s.p50), ms(a.tpot_s.p50), ms(b.tpot_s.p50),
        ratio_or_dash(b.tpot_s.p50, a.tpot_s.p50), a.throughput_tok_s, b.throughput_tok_s,
        static_cast<double>(a.kv_peak_bytes) / 1e6, static_cast<double>(b.kv_peak_bytes) / 1e6,
        ratio_or_dash(b.kv_peak_bytes, a.kv_peak_bytes)));
  }
  if (d.sampling) items.push_back(sampling_line(d));
  items.push_back(trust_line(d, p));
  if (d.validation && unmeasured_attention)
    items.back().insert(
        items.back().size() - 1,
        fmt::format(". These figures are the measured blocks' ({} attention); the predictions above "
                    "price {} attention by the datasheet roofline, which no measurement here checks, "
                    "so they carry no band",
                    p.attention == attention_impl::fused ? "unfused" : "fused", modsim::to_string(p.attention)));
  s.blocks.push_back(bullets(items));
  return s;
}

section configuration_section(const report_data& d) {
  section s{"configuration", "Configuration", "Configuration", {}};
  const auto& m = subject(d).model;
  table t{{"", ""}, {false, false}, {}, {}};
  t.rows.push_back({"model", model_label(m) + (m.source_file.empty() ? "" : " (" + m.source_file + ")")});
  t.rows.push_back(
      {"dimensions",
       fmt::format("d_model {}, {} layers, {} heads ({} KV), d_head {}, d_ff {}, vocab {}, {}{}", m.d_model, m.n_layers,
                   m.n_heads, m.n_kv_heads, m.d_head, m.d_ff, m.vocab_size, sim::to_string(m.mlp),
                   m.sliding_window > 0 ? fmt::format(", sliding window {}", m.sliding_window) : std::string())});
  if (m.sliding_window > 0)
    t.rows.push_back({"sliding window",
                      fmt::format("{} positions: each query attends to at most {} keys, and a sequence's KV cache "
                                  "holds at most {} positions per layer (HF sliding_window; priced in attention FLOPs, "
                                  "bytes and KV memory)",
                                  m.sliding_window, m.sliding_window, m.sliding_window)});
  t.rows.push_back({"parameters", fmt::format("{:.1f} M", static_cast<double>(subject(d).flops.params) / 1e6)});
  t.rows.push_back({"routing", routing_text(m)});
  if (m.moe)
    t.rows.push_back(
        {"MoE", fmt::format("{}: {} experts, top-{}, capacity factor {:g}, {} no-op", sim::to_string(m.moe->variant),
                            m.moe->experts, m.moe->top_k, m.moe->capacity_factor, m.moe->noop_experts)});
  const auto& h = d.hardware;
  t.rows.push_back({"hardware", h.name + (h.source_file.empty() ? "" : " (" + h.source_file + ")")});
  t.rows.push_back({"hardware numbers", h.source.empty() ? "(source not stated)" : h.source});
  const sim::dtype dt = d.load.type;
  t.rows.push_back({"peaks", fmt::format("{:.1f} TFLOP/s matmul, {:.1f} TFLOP/s vector ({}), {:.2f} TB/s memory",
                                         h.peak_matmul_flops.of(dt) / 1e12, h.peak_vector_flops.of(dt) / 1e12,
                                         sim::to_string(dt), h.memory_bandwidth_bytes_s / 1e12)});
  // The launch costs the predictions use: the fitted kernel-sequence model's when calibrated,
  // else the hardware file's.
  const sim::cost_model cm(h);
  if (const sim::kernel_params* k = cm.kernel_model())
    t.rows.push_back(
        {"launch", fmt::format("{:.2f} µs host enqueue per kernel, {:.2f} µs device gap between kernels "
                               "(fitted; the file's datasheet values: {:.1f} µs and {:.1f} µs)",
                               k->host_s * 1e6, k->gap_s * 1e6, h.host_enqueue_s * 1e6, h.kernel_launch_s * 1e6)});
  else
    t.rows.push_back(
        {"launch", fmt::format("{:.2f} µs per kernel (device), {:.2f} µs host enqueue{}", cm.launch_s() * 1e6,
                               cm.host_enqueue_s() * 1e6, cm.calibration() ? " (fitted)" : "")});
  t.rows.push_back({"cost model", d.cost_label});
  if (!d.models.empty()) t.rows.push_back({"attention", attention_text(d.models.front().pred, false)});
  t.rows.push_back({"workload", workload_text(d.load)});
  s.blocks.push_back(table_block(t));
  return s;
}

section models_section(const report_data& d) {
  section s{"models", "Models", "Models", {}};
  s.blocks.push_back(paragraph("Every model given, each against its own dense baseline, same hardware and workload."));
  table t{{"model", "routing", "params M", "GFLOP", "FLOPs × dense", "time ms", "time × dense"},
          {false, false, true, true, true, true, true},
          {},
          {}};
  for (const auto& m : d.models) {
    t.rows.push_back({model_label(m.model), routing_short(m.model),
                      fmt::format("{:.1f}", static_cast<double>(m.flops.params) / 1e6),
                      gflop(m.flops.totals.matmul_flops),
                      ratio_or_dash(m.flops.totals.matmul_flops, m.flops.totals.dense_matmul_flops),
                      ms(m.pred.model.total_s), times(m.pred.time_ratio)});
  }
  s.blocks.push_back(table_block(t));
  return s;
}

section method_section(const report_data& d) {
  section s{"method", "Method and reproduction", "Method", {}};
  s.blocks.push_back(bullets({
      "FLOPs: exact per-op formulas (`sim/model/flops.hpp`): a matmul (m×k)(k×n) is 2mnk FLOPs, attention counts the "
      "full "
      "n×n "
      "square, elementwise work is counted apart. Ratios in this report are of matmul FLOPs unless they say otherwise; "
      "the gap uses matmul + elementwise FLOPs.",
      "Time: uncalibrated, each op's roofline time on the hardware (max of compute and memory time) plus one launch "
      "per kernel. Calibrated on a GPU, each op is the kernels the CUDA backend launches for it, each a floor plus a "
      "wave-quantised compute bound or a bandwidth bound with fitted efficiencies, run through a host queue and a "
      "device queue (`sim/cost/kernel_model.hpp`); on a CPU, per-op efficiency curves (`sim/cost/cost.hpp`). A "
      "prediction, not "
      "a measurement: the calibration's cross-validated error is its expected error band.",
      "Serving: the discrete-event simulator (`sim/des/`) runs every step's kernels on a host queue and a GPU stream.",
      "Sampling: each cell is one decode step through the same simulator (`analysis::decode_step_time`, the step of "
      "`modsim predict --mode decode` and `modsim simulate forward --mode decode`), averaged over routing draws; "
      "reproduce it with `modsim sampling MODEL --hardware HW [--baseline MODEL]`.",
      "Generated " + d.generated + (d.command_line.empty() ? std::string() : " by `" + d.command_line + "`") +
          (d.build.version.empty() ? std::string()
                                   : " with modsim " + d.build.version + " (commit " + d.build.commit + ")") +
          "; `summary.json` beside this report holds its headline figures for `modsim compare`.",
  }));
  return s;
}

}  // namespace modsim::reports::detail
