// The report's simulated and measured sections: serving dense vs MoD, and predicted vs
// measured blocks (reports/sections.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "sim/des/serving_fields.hpp"
#include "reports/document.hpp"
#include "reports/sections.hpp"
#include "reports/text.hpp"
#include "reports/views.hpp"
#include "sim/model/flops.hpp"
#include "sim/common/io.hpp"
#include "sim/cost/validation_fields.hpp"

namespace modsim::reports::detail {

using sim::csv_field;

section serving_section_of(const report_data& d, document& doc) {
  section s{"serving", "Serving: dense vs MoD (simulated)", "Serving", {}};
  if (!d.serving) {
    s.blocks.push_back(note("No serving simulation: " + d.serving_missing + "."));
    return s;
  }
  const serving_section& sv = *d.serving;
  const auto& o = sv.scenario.options;
  s.blocks.push_back(paragraph(fmt::format(
      "`modsim simulate serve`'s engine: {} requests, Poisson arrivals at {:.2f}/s (70% of what the dense model "
      "sustains unless set), prompts {} tokens, outputs {} tokens, continuous batching (≤ {} sequences, ≤ {} batched "
      "tokens{}), paged KV cache ({}-token blocks), decode routing by the causal predictor ({} mode{}), seed {}.",
      sv.scenario.requests, sv.scenario.rate_per_s, sv.scenario.prompt, sv.scenario.output, o.max_seqs,
      o.max_batched_tokens, o.chunked_prefill > 0 ? fmt::format(", chunked prefill {}", o.chunked_prefill) : "",
      o.block_tokens, sim::des::to_string(o.routing),
      d.serving_routing ? "; the better of a run per routing, " + d.serving_routing->why : "", sv.scenario.seed)));
  if (sv.runs.size() != 2) return s;
  const auto& a = sv.runs[0].summary;
  const auto& b = sv.runs[1].summary;
  table t{{"metric", sv.runs[0].name, sv.runs[1].name, "× dense"}, {false, true, true, true}, {}, {}};
  // The figures `modsim simulate serve` prints, in its words and formats (sim/des/serving_fields.hpp).
  for (const sim::des::serve_field& f : sim::des::serve_fields()) {
    if (!f.format) continue;
    t.rows.push_back({f.label, sim::des::people_text(f, a), sim::des::people_text(f, b),
                      f.compare ? ratio_or_dash(f.value(b), f.value(a)) : std::string()});
  }
  s.blocks.push_back(table_block(t));
  MODSIM_CHART(doc, s, "serving_ttft", "time to first token CDF, dense vs MoD",
               make_latency_chart(latency_chart(sv, true)));
  MODSIM_CHART(doc, s, "serving_tpot", "time per output token CDF, dense vs MoD",
               make_latency_chart(latency_chart(sv, false)));
  std::string csv = "run";
  for (const sim::des::serve_field& f : sim::des::serve_fields())
    if (f.csv) csv += "," + sim::des::csv_key(f);
  csv += "\n";
  for (const auto& r : sv.runs) {
    csv += csv_field(r.name);
    for (const sim::des::serve_field& f : sim::des::serve_fields())
      if (f.csv) csv += "," + sim::des::machine_text(f, r.summary);
    csv += "\n";
  }
  doc.csv.push_back({"tables/serving.csv", csv});
  return s;
}

section sampling_section_of(const report_data& d, document& doc) {
  section s{"sampling", "Sampling: is a MoD decode step 1.5x faster? (simulated)", "Sampling", {}};
  if (!d.sampling) {
    s.blocks.push_back(note("No sampling map: " + d.sampling_missing + "."));
    return s;
  }
  const analysis::sampling_map& m = *d.sampling;
  s.blocks.push_back(paragraph(fmt::format(
      "The paper reports MoD models that are faster to step during sampling than their matched-quality dense "
      "baselines; the figure tested here is 66%, read as a step of at most 2/3 of the baseline's (1.5x). `modsim "
      "sampling` predicts one decode step of **{}** and of the baseline **{}**{} on {} "
      "over batch × cached context: the discrete-event step of `modsim simulate forward --mode decode` (each token's "
      "routing drawn, the mean of {} draws), for each decode strategy — *sync* reads the routed count back to the "
      "host before each routed block, *pad* sizes the block to {} with no sync{}. A cell reaches the target when "
      "the MoD step takes at most 1/{:g} of the baseline's; the letter names what decides it.",
      m.model_name, m.baseline_name, m.baseline_is_routing_removed ? " (the model with its routing removed)" : "",
      m.hardware_name, m.draws,
      m.pad_capacity ? fmt::format("{:g} of the batch", *m.pad_capacity)
                     : std::string("the capacity plus 3 sigma of the routed count"),
      std::any_of(m.strategies.begin(), m.strategies.end(),
                  [](const analysis::sampling_strategy_map& x) { return x.strategy.cuda_graph; })
          ? ", *pad+graphs* runs the padded step as one CUDA graph"
          : "",
      m.target_speedup)));
  std::vector<std::string> verdict;
  for (const std::string& v : m.verdict) verdict.push_back(v);
  s.blocks.push_back(bullets(verdict));
  if (d.serving_routing) {
    s.blocks.push_back(paragraph(fmt::format(
        "The serving section decodes with **{}**, the better of a serving run per routing (no dropped tokens, then "
        "the lower TPOT p50): {}.",
        sim::des::to_string(d.serving_routing->routing), d.serving_routing->why)));
  }
  const char* letters = "KWPESL";
  for (std::size_t i = 0; i < m.strategies.size(); ++i) {
    const analysis::sampling_strategy_map& sm = m.strategies[i];
    table t{{"batch ↓ context →"}, {false}, {}, {}};
    for (auto c : m.contexts) {
      t.header.push_back(std::to_string(c));
      t.numeric.push_back(true);
    }
    for (std::size_t b = 0; b < m.batches.size(); ++b) {
      std::vector<std::string> row{std::to_string(m.batches[b])};
      for (std::size_t c = 0; c < m.contexts.size(); ++c) {
        const analysis::sampling_cell& x = sm.cells[b * m.contexts.size() + c];
        const std::string v = fmt::format("{:.3f} {}", x.ratio(), letters[static_cast<int>(x.dominant)]);
        row.push_back(!x.fits ? v + " ✗" : x.reaches ? v + " ✓" : v);
      }
      t.rows.push_back(std::move(row));
    }
    s.blocks.push_back(
        table_block(t, fmt::format("{}: MoD / baseline decode step time (✓: {:g}x reached; ✗: does not fit in {}, "
                                   "excluded from the verdict). K KV reads, W weight reads, P predictor/routing, E "
                                   "norms/activations, S sync round trips, L launches/host",
                                   sm.strategy.name(), m.target_speedup, sampling_memory_name(m))));
    std::string chart = "sampling_" + sm.strategy.name();
    std::replace(chart.begin(), chart.end(), '+', '_');  // "sampling_pad_graphs": a plain file name and id
    MODSIM_CHART(doc, s, chart,
                 "MoD / baseline decode step time by batch, one line per context (" + sm.strategy.name() + ")",
                 make_ratio_chart(sampling_chart(m, i)));
  }
  std::string csv = "strategy,batch,context,model_s,baseline_s,ratio,reaches_target,deciding";
  for (analysis::decode_component c : analysis::decode_components) csv += std::string(",model_") + to_string(c) + "_s";
  for (analysis::decode_component c : analysis::decode_components)
    csv += std::string(",baseline_") + to_string(c) + "_s";
  csv += ",fits,needs_bytes\n";
  for (const analysis::sampling_strategy_map& sm : m.strategies) {
    for (const analysis::sampling_cell& x : sm.cells) {
      csv += fmt::format("{},{},{},{},{},{},{},{}", sm.strategy.name(), x.batch, x.context, exact(x.model_s),
                         exact(x.baseline_s), exact(x.ratio()), x.reaches ? "true" : "false", to_string(x.dominant));
      for (analysis::decode_component c : analysis::decode_components) csv += "," + exact(part_of(x.model, c));
      for (analysis::decode_component c : analysis::decode_components) csv += "," + exact(part_of(x.baseline, c));
      csv += fmt::format(",{},{:.0f}\n", x.fits ? "true" : "false", x.needs_bytes);
    }
  }
  doc.csv.push_back({"tables/sampling.csv", csv});
  return s;
}

section validation_section_of(const report_data& d, document& doc) {
  section s{"validation", "Predicted vs measured", "Validation", {}};
  if (!d.validation) {
    s.blocks.push_back(note("No measurements: " + d.validation_missing + "."));
    return s;
  }
  const validation_section& v = *d.validation;
  s.blocks.push_back(paragraph(
      v.folds > 0
          ? fmt::format("{} rows measured on **{}** ({}): {} single-op rows, the rest whole blocks. The cost model is "
                        "cross-validated (`modsim validate --cv {}`): the rows are grouped by shape, the groups dealt "
                        "into {} folds, and each fold's blocks and ops are predicted by a calibration fitted on the "
                        "other folds only — *{}*.",
                        v.rows, v.device, v.measurements_file, v.single_op_rows, v.folds, v.folds, v.cost_label)
          : fmt::format("{} rows measured on **{}** ({}): {} single-op rows, the rest whole blocks. Each block is "
                        "predicted from its ops with the cost model *{}* and compared with its measured median "
                        "(`modsim validate`).",
                        v.rows, v.device, v.measurements_file, v.single_op_rows, v.cost_label)));
  auto summary_row = [](const std::string& what, const sim::validation_summary& x) {
    std::vector<std::string> row = {what + " (" + std::to_string(x.points) + ")"};
    for (const sim::summary_field& f : sim::summary_fields) row.push_back(sim::format_field(f, x));
    return row;
  };
  table sum{{"rows"}, {false}, {summary_row("blocks", v.summary)}, {}};
  for (const sim::summary_field& f : sim::summary_fields) {
    sum.header.push_back(f.label);
    sum.numeric.push_back(true);
  }
  if (const auto by = analysis::summaries_by_op(v.points, false); by.size() > 1)
    for (const auto& [op, x] : by) sum.rows.push_back(summary_row("  " + op, x));
  if (v.folds > 0 && v.op_summary.points > 0) sum.rows.push_back(summary_row("single ops", v.op_summary));
  // The datasheet roofline (the hardware without its calibration block) on the same blocks.
  if (v.calibrated && v.datasheet_summary.points > 0)
    sum.rows.push_back(summary_row("blocks, datasheet roofline", v.datasheet_summary));
  s.blocks.push_back(table_block(sum));
  if (v.calibrated)
    if (const std::string line = analysis::datasheet_verdict(
            analysis::compare_with_datasheet(v.ops_only ? std::vector<sim::validation_point>{} : v.points,
                                             v.ops_only ? std::vector<sim::validation_point>{} : v.datasheet_points,
                                             v.op_points, v.datasheet_op_points));
        !line.empty())
      s.blocks.push_back(note(line));
  MODSIM_CHART(doc, s, "validation", "measured vs predicted blocks on log-log axes",
               make_diagonal_chart(validation_chart(v)));
  table t{{"block", "shape", "measured ms", "predicted ms", "error"}, {false, false, true, true, true}, {}, {}};
  std::string csv =
      "op,dtype,batch,seq_len,d_model,n_heads,d_ff,capacity,measured_s,predicted_s,overhead_s,error_pct\n";
  // Many points: the table lists the largest errors, the CSV all of them.
  constexpr std::size_t k_table_rows = 24;
  std::vector<const sim::validation_point*> shown;
  for (const auto& p : v.points) shown.push_back(&p);
  if (shown.size() > k_table_rows) {
    std::stable_sort(shown.begin(), shown.end(),
                     [](const auto* a, const auto* b) { return std::abs(a->error_pct) > std::abs(b->error_pct); });
    shown.resize(k_table_rows);
  }
  for (const auto& p : v.points) {
    const auto& sh = p.sample.shape;
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", modsim::to_string(p.sample.op),
                       sim::to_string(p.sample.type), sh.batch, sh.seq_len, sh.d_model, sh.n_heads, sh.d_ff,
                       p.sample.capacity, exact(p.sample.median_s), exact(p.predicted_s), exact(p.overhead_s),
                       exact(p.error_pct));
  }
  for (const auto* pp : shown) {
    const auto& p = *pp;
    const auto& sh = p.sample.shape;
    t.rows.push_back(
        {std::string(modsim::to_string(p.sample.op)),
         fmt::format("B{} S{} d{} h{} ff{}{}", sh.batch, sh.seq_len, sh.d_model, sh.n_heads, sh.d_ff,
                     p.sample.op == modsim::op::block_dense ? std::string() : fmt::format(" c{:g}", p.sample.capacity)),
         ms(p.sample.median_s), ms(p.predicted_s), fmt::format("{:+.1f}%", p.error_pct)});
  }
  if (shown.size() < v.points.size())
    s.blocks.push_back(paragraph(fmt::format(
        "The {} largest errors of the {} blocks (all in tables/validation.csv):", shown.size(), v.points.size())));
  s.blocks.push_back(table_block(t));
  for (const auto& n : v.notes) s.blocks.push_back(note(n));
  doc.csv.push_back({"tables/validation.csv", csv});
  return s;
}

}  // namespace modsim::reports::detail
