// The report's simulated and measured sections: serving dense vs MoD, and predicted vs
// measured blocks (reports/sections.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "reports/document.hpp"
#include "reports/sections.hpp"
#include "reports/text.hpp"
#include "reports/views.hpp"
#include "sim/flops.hpp"
#include "sim/io.hpp"

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
      "tokens{}), paged KV cache ({}-token blocks), decode routing by the causal predictor ({} mode), seed {}.",
      sv.scenario.requests, sv.scenario.rate_per_s, sv.scenario.prompt, sv.scenario.output, o.max_seqs,
      o.max_batched_tokens, o.chunked_prefill > 0 ? fmt::format(", chunked prefill {}", o.chunked_prefill) : "",
      o.block_tokens, sim::des::to_string(o.routing), sv.scenario.seed)));
  if (sv.runs.size() != 2) return s;
  const auto& a = sv.runs[0].summary;
  const auto& b = sv.runs[1].summary;
  table t{{"metric", sv.runs[0].name, sv.runs[1].name, "× dense"}, {false, true, true, true}, {}, {}};
  auto row = [&](const std::string& name, double x, double y, const std::string& xs, const std::string& ys) {
    t.rows.push_back({name, xs, ys, ratio_or_dash(y, x)});
  };
  auto lat = [&](const std::string& name, double x, double y) { row(name + " (ms)", x, y, ms(x), ms(y)); };
  lat("TTFT p50", a.ttft_s.p50, b.ttft_s.p50);
  lat("TTFT p90", a.ttft_s.p90, b.ttft_s.p90);
  lat("TTFT p99", a.ttft_s.p99, b.ttft_s.p99);
  lat("TPOT p50", a.tpot_s.p50, b.tpot_s.p50);
  lat("TPOT p90", a.tpot_s.p90, b.tpot_s.p90);
  lat("TPOT p99", a.tpot_s.p99, b.tpot_s.p99);
  lat("latency p50", a.latency_s.p50, b.latency_s.p50);
  row("throughput (tok/s)", a.throughput_tok_s, b.throughput_tok_s, fmt::format("{:.0f}", a.throughput_tok_s),
      fmt::format("{:.0f}", b.throughput_tok_s));
  row("KV cache peak (MB)", static_cast<double>(a.kv_peak_bytes), static_cast<double>(b.kv_peak_bytes),
      fmt::format("{:.1f}", static_cast<double>(a.kv_peak_bytes) / 1e6),
      fmt::format("{:.1f}", static_cast<double>(b.kv_peak_bytes) / 1e6));
  row("mean decode batch", a.mean_decode_batch, b.mean_decode_batch, fmt::format("{:.1f}", a.mean_decode_batch),
      fmt::format("{:.1f}", b.mean_decode_batch));
  row("GPU busy", a.gpu_busy_s / std::max(1e-30, a.duration_s), b.gpu_busy_s / std::max(1e-30, b.duration_s),
      pct(a.gpu_busy_s / std::max(1e-30, a.duration_s)), pct(b.gpu_busy_s / std::max(1e-30, b.duration_s)));
  row("GPU waiting on the host (s)", a.gpu_wait_host_s, b.gpu_wait_host_s, fmt::format("{:.3f}", a.gpu_wait_host_s),
      fmt::format("{:.3f}", b.gpu_wait_host_s));
  t.rows.push_back({"completed / preempted", fmt::format("{} / {}", a.completed, a.preemptions),
                    fmt::format("{} / {}", b.completed, b.preemptions), ""});
  t.rows.push_back({"decode tokens routed", "", pct(b.decode_routed_fraction), ""});
  s.blocks.push_back(table_block(t));
  MODSIM_CHART(doc, s, "serving_ttft", "time to first token CDF, dense vs MoD",
               make_latency_chart(latency_chart(sv, true)));
  MODSIM_CHART(doc, s, "serving_tpot", "time per output token CDF, dense vs MoD",
               make_latency_chart(latency_chart(sv, false)));
  std::string csv =
      "run,requests,completed,ttft_p50_s,ttft_p90_s,ttft_p99_s,tpot_p50_s,tpot_p90_s,tpot_p99_s,throughput_tok_s,"
      "kv_peak_bytes,preemptions,duration_s\n";
  for (const auto& r : sv.runs) {
    const auto& x = r.summary;
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.name), x.requests, x.completed,
                       exact(x.ttft_s.p50), exact(x.ttft_s.p90), exact(x.ttft_s.p99), exact(x.tpot_s.p50),
                       exact(x.tpot_s.p90), exact(x.tpot_s.p99), exact(x.throughput_tok_s), x.kv_peak_bytes,
                       x.preemptions, exact(x.duration_s));
  }
  doc.csv.push_back({"tables/serving.csv", csv});
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
    return std::vector<std::string>{
        what + " (" + std::to_string(x.points) + ")", fmt::format("{:.1f}%", x.median_abs_pct_error),
        fmt::format("{:.1f}%", x.p90_abs_pct_error), fmt::format("{:.1f}%", x.max_abs_pct_error),
        fmt::format("{:+.1f}%", x.mean_pct_error)};
  };
  table sum{{"rows", "median |error|", "p90 |error|", "max |error|", "mean error (signed)"},
            {false, true, true, true, true},
            {summary_row("blocks", v.summary)},
            {}};
  if (const auto by = analysis::summaries_by_op(v.points, false); by.size() > 1)
    for (const auto& [op, x] : by) sum.rows.push_back(summary_row("  " + op, x));
  if (v.folds > 0 && v.op_summary.points > 0) sum.rows.push_back(summary_row("single ops", v.op_summary));
  s.blocks.push_back(table_block(sum));
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
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", p.sample.op, sim::to_string(p.sample.type), sh.batch,
                       sh.seq_len, sh.d_model, sh.n_heads, sh.d_ff, p.sample.capacity, exact(p.sample.measured_s),
                       exact(p.predicted_s), exact(p.overhead_s), exact(p.error_pct));
  }
  for (const auto* pp : shown) {
    const auto& p = *pp;
    const auto& sh = p.sample.shape;
    t.rows.push_back(
        {p.sample.op,
         fmt::format("B{} S{} d{} h{} ff{}{}", sh.batch, sh.seq_len, sh.d_model, sh.n_heads, sh.d_ff,
                     p.sample.op == "block_dense" ? std::string() : fmt::format(" c{:g}", p.sample.capacity)),
         ms(p.sample.measured_s), ms(p.predicted_s), fmt::format("{:+.1f}%", p.error_pct)});
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
