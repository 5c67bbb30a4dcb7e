// render_report: report_data -> report.md, report.html (self-contained: CSS and SVG inline,
// no external reference), tables/*.csv and charts/*.svg.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "reports/report.hpp"
#include "reports/views.hpp"
#include "sim/error.hpp"
#include "sim/flops.hpp"
#include "sim/io.hpp"

#if MODSIM_HAVE_QT
#include "reports/charts.hpp"
#endif

namespace modsim::reports {

bool charts_available() { return MODSIM_HAVE_QT != 0; }

namespace {

// --- Formatting -------------------------------------------------------------------------------

std::string gflop(std::int64_t f) { return fmt::format("{:.2f}", static_cast<double>(f) / 1e9); }
std::string ms(double s) { return fmt::format("{:.3f}", s * 1e3); }
std::string times(double r) { return std::isfinite(r) ? fmt::format("{:.3f}×", r) : "–"; }
std::string pct(double r) { return fmt::format("{:.1f}%", 100 * r); }
std::string signed_points(double r) { return fmt::format("{:+.1f}", 100 * r); }
std::string ratio_or_dash(double a, double b) { return b != 0 ? times(a / b) : "–"; }
std::string ratio_or_dash(std::int64_t a, std::int64_t b) {
  return b != 0 ? times(static_cast<double>(a) / static_cast<double>(b)) : "–";
}
// Shortest round-trip text of a double (CSV: exact numbers).
std::string exact(double v) { return fmt::format("{}", v); }

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

using sim::csv_field;

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else
      out += c;
  }
  return out;
}

// Display width of UTF-8 text (code points; good enough for the symbols used here).
std::size_t text_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string pad(const std::string& s, std::size_t width, bool right) {
  const std::size_t w = text_width(s);
  const std::string fill(width > w ? width - w : 0, ' ');
  return right ? fill + s : s + fill;
}

std::string model_label(const sim::model_spec& m) { return m.name.empty() ? std::string("model") : m.name; }

std::string routing_text(const sim::model_spec& m) {
  if (!m.routing) return "none (dense)";
  const auto& r = *m.routing;
  std::string t = r.layer_capacities.empty() ? fmt::format("capacity {:g} ({:g}%), schedule {}", r.capacity,
                                                           100 * r.capacity, sim::to_string(r.sched))
                                             : "per-layer capacities";
  t += std::string(", decode routing by the ") +
       (r.inference == sim::inference_routing::predictor ? "causal predictor" : "router");
  return t;
}

std::string routing_short(const sim::model_spec& m) {
  if (!m.routing) return "dense";
  const auto& r = *m.routing;
  const std::string sched = r.sched.kind == sim::schedule_kind::every_other ? "every-other" : sim::to_string(r.sched);
  return fmt::format("{:g}% {}", 100 * r.capacity, sched);
}

std::string workload_text(const sim::workload& w) {
  return fmt::format("{} pass, batch {}, {} {} tokens, {}", sim::to_string(w.mode), w.batch,
                     w.mode == sim::run_mode::decode ? "context" : "sequence", w.seq_len, sim::to_string(w.type));
}

// --- A table rendered three ways --------------------------------------------------------------

struct table {
  std::vector<std::string> header;
  std::vector<bool> numeric;  // right-aligned columns
  std::vector<std::vector<std::string>> rows;
  std::set<std::size_t> emphasised;  // rows drawn bold (totals, the paper's point)
};

std::string to_markdown(const table& t) {
  std::vector<std::size_t> w(t.header.size(), 3);
  for (std::size_t c = 0; c < t.header.size(); ++c) w[c] = std::max(w[c], text_width(md_cell(t.header[c])));
  for (const auto& r : t.rows)
    for (std::size_t c = 0; c < r.size() && c < w.size(); ++c)
      w[c] = std::max(w[c], text_width(md_cell(r[c])) + (t.emphasised.empty() ? 0 : 4));
  auto right = [&](std::size_t c) { return c < t.numeric.size() && t.numeric[c]; };
  std::string out = "|";
  for (std::size_t c = 0; c < t.header.size(); ++c) out += " " + pad(md_cell(t.header[c]), w[c], right(c)) + " |";
  out += "\n|";
  for (std::size_t c = 0; c < t.header.size(); ++c)
    out += (right(c) ? " " + std::string(w[c] - 1, '-') + ": |" : " :" + std::string(w[c] - 1, '-') + " |");
  out += "\n";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    out += "|";
    for (std::size_t c = 0; c < t.header.size(); ++c) {
      std::string cell = c < t.rows[i].size() ? md_cell(t.rows[i][c]) : "";
      if (t.emphasised.count(i) && !cell.empty()) cell = "**" + cell + "**";
      out += " " + pad(cell, w[c], right(c)) + " |";
    }
    out += "\n";
  }
  return out;
}

std::string to_html(const table& t, const std::string& caption = "") {
  std::string out = "<div class=\"table-wrap\"><table>";
  if (!caption.empty()) out += "<caption>" + html_escape(caption) + "</caption>";
  out += "<thead><tr>";
  for (std::size_t c = 0; c < t.header.size(); ++c)
    out += std::string(c < t.numeric.size() && t.numeric[c] ? "<th class=\"num\">" : "<th>") +
           html_escape(t.header[c]) + "</th>";
  out += "</tr></thead><tbody>";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    out += t.emphasised.count(i) ? "<tr class=\"em\">" : "<tr>";
    for (std::size_t c = 0; c < t.header.size(); ++c) {
      const std::string cell = c < t.rows[i].size() ? t.rows[i][c] : "";
      out += std::string(c < t.numeric.size() && t.numeric[c] ? "<td class=\"num\">" : "<td>") + html_escape(cell) +
             "</td>";
    }
    out += "</tr>";
  }
  out += "</tbody></table></div>\n";
  return out;
}

// --- The document, built once for both formats -------------------------------------------------

// A block of a section: a paragraph, a list, a table, a chart, or a note.
struct block {
  enum class kind { paragraph, bullets, table, chart, note, cards } k = kind::paragraph;
  std::string text;                // paragraph / note
  std::vector<std::string> items;  // bullets; cards as "value\x1Flabel"
  table tab;                       // table
  std::string caption;             // table caption / chart alt text
  std::string chart;               // chart file name under charts/ (no extension)
};

struct section {
  std::string id;
  std::string title;
  std::string toc;  // short title for the table of contents
  std::vector<block> blocks;
};

block paragraph(std::string text) { return block{block::kind::paragraph, std::move(text), {}, {}, {}, {}}; }
block note(std::string text) { return block{block::kind::note, std::move(text), {}, {}, {}, {}}; }
block bullets(std::vector<std::string> items) { return block{block::kind::bullets, {}, std::move(items), {}, {}, {}}; }
block table_block(table t, std::string caption = "") {
  return block{block::kind::table, {}, {}, std::move(t), std::move(caption), {}};
}
block chart_block(std::string name, std::string alt) {
  return block{block::kind::chart, {}, {}, {}, std::move(alt), std::move(name)};
}

// The charts the report draws: file name -> how to build it (with Qt).
struct chart_spec {
  std::string name;
  std::string alt;
#if MODSIM_HAVE_QT
  std::function<QChart*()> build;
#endif
};

struct document {
  std::string title;
  std::string subtitle;
  std::vector<section> sections;
  std::vector<chart_spec> charts;
  std::vector<report_file> csv;
};

#if MODSIM_HAVE_QT
#define MODSIM_CHART(doc, sec, name, alt, expr)                              \
  do {                                                                       \
    (sec).blocks.push_back(chart_block((name), (alt)));                      \
    (doc).charts.push_back(chart_spec{(name), (alt), [=] { return expr; }}); \
  } while (0)
#else
#define MODSIM_CHART(doc, sec, name, alt, expr)         \
  do {                                                  \
    (sec).blocks.push_back(chart_block((name), (alt))); \
    (doc).charts.push_back(chart_spec{(name), (alt)});  \
  } while (0)
#endif

// --- Sections ---------------------------------------------------------------------------------

const model_result& subject(const report_data& d) { return d.models.front(); }

std::string hw_phrase(const report_data& d) { return fmt::format("{} [{}]", d.hardware.name, d.cost_label); }

// "Intel(R) Xeon(R) Processor, 2 threads, OpenBLAS ..." -> its first two parts.
std::string short_device(const std::string& device) {
  const auto first = device.find(", ");
  if (first == std::string::npos) return device;
  const auto second = device.find(", ", first + 2);
  return second == std::string::npos ? device : device.substr(0, second);
}

struct gap_term {
  const char* key;
  const char* label;
  double sim::gap_decomposition::*field;
  const char* why;
};
const std::vector<gap_term>& gap_terms() {
  static const std::vector<gap_term> terms = {
      {"routing", "routing ops", &sim::gap_decomposition::routing,
       "router, top-k, gather, scatter: time MoD adds that the dense model never spends"},
      {"launch", "kernel launches", &sim::gap_decomposition::launch,
       "the kernel count does not shrink with capacity, and routing adds kernels"},
      {"gemm_efficiency", "GEMM efficiency", &sim::gap_decomposition::gemm_efficiency,
       "projections, MLP and LM head on k rows run below the efficiency they had on S rows"},
      {"attention", "attention", &sim::gap_decomposition::attention,
       "attention FLOPs shrink with capacity², its time share decides the sign"},
      {"memory_bound", "memory-bound ops", &sim::gap_decomposition::memory_bound,
       "norms, activations and small GEMMs whose weight reads do not shrink with k"},
  };
  return terms;
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
  if (d.validation)
    cards.items.push_back(fmt::format("{:.1f}%", d.validation->summary.median_abs_pct_error) + "\x1F" +
                          "median |error| vs measured");
  s.blocks.push_back(cards);

  std::vector<std::string> items;
  items.push_back(fmt::format(
      "**{} ({})**: {} the matmul FLOPs and {} the predicted wall-clock of its dense baseline on {}, {} ({} → {} "
      "ms{}).",
      model_label(m.model), routing_short(m.model), times(mm_ratio), times(p.time_ratio), hw_phrase(d),
      workload_text(d.load), ms(p.dense.total_s), ms(p.model.total_s),
      p.expected_error ? fmt::format(", each ±{:.1f}% at p90 by the calibration's cross-validation",
                                     p.expected_error->p90_abs_pct_error)
                       : std::string()));
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
  if (d.validation) {
    const auto& v = *d.validation;
    const bool same = v.hardware == d.hardware.name;
    const std::string other =
        same || (v.folds > 0 && d.hardware.name.find(v.hardware) == 0)
            ? std::string()
            : fmt::format(" — measured on {}, not on {}: this checks the method, not the {} numbers", v.hardware,
                          d.hardware.name, d.hardware.name);
    if (v.folds > 0)
      items.push_back(fmt::format(
          "**Trust**: against {} measured blocks on {} the calibrated cost model is off by {:.1f}% (median |error|), "
          "{:.1f}% at p90 — {}-fold cross-validation by shape: no block was predicted by a calibration that saw it or "
          "any op of its shape{}.",
          v.summary.points, short_device(v.device), v.summary.median_abs_pct_error, v.summary.p90_abs_pct_error,
          v.folds, other));
    else
      items.push_back(
          fmt::format("**Trust**: against {} measured blocks on {} the {} cost model is off by {:.1f}% "
                      "(median |error|), {:.1f}% at p90{}.",
                      v.summary.points, short_device(v.device),
                      v.cost_label.rfind("calibrated", 0) == 0 ? "calibrated" : "uncalibrated",
                      v.summary.median_abs_pct_error, v.summary.p90_abs_pct_error, other));
  } else {
    items.push_back("**Trust**: no measurements in this report — " + d.validation_missing + ".");
  }
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
       fmt::format("d_model {}, {} layers, {} heads ({} KV), d_head {}, d_ff {}, vocab {}, {}", m.d_model, m.n_layers,
                   m.n_heads, m.n_kv_heads, m.d_head, m.d_ff, m.vocab_size, sim::to_string(m.mlp))});
  t.rows.push_back({"parameters", fmt::format("{:.1f} M", static_cast<double>(subject(d).flops.params) / 1e6)});
  t.rows.push_back({"routing", routing_text(m)});
  if (m.mode)
    t.rows.push_back(
        {"MoE", fmt::format("{}: {} experts, top-{}, capacity factor {:g}, {} no-op", sim::to_string(m.mode->variant),
                            m.mode->experts, m.mode->top_k, m.mode->capacity_factor, m.mode->noop_experts)});
  const auto& h = d.hardware;
  t.rows.push_back({"hardware", h.name + (h.source_file.empty() ? "" : " (" + h.source_file + ")")});
  t.rows.push_back({"hardware numbers", h.source.empty() ? "(source not stated)" : h.source});
  const sim::dtype dt = d.load.type;
  t.rows.push_back({"peaks", fmt::format("{:.1f} TFLOP/s matmul, {:.1f} TFLOP/s vector ({}), {:.2f} TB/s memory",
                                         h.peak_matmul_flops.of(dt) / 1e12, h.peak_vector_flops.of(dt) / 1e12,
                                         sim::to_string(dt), h.memory_bandwidth_bytes_s / 1e12)});
  t.rows.push_back({"launch", fmt::format("{:.1f} µs per kernel (device), {:.1f} µs host enqueue",
                                          h.kernel_launch_s * 1e6, h.host_enqueue_s * 1e6)});
  t.rows.push_back({"cost model", d.cost_label});
  t.rows.push_back({"workload", workload_text(d.load)});
  s.blocks.push_back(table_block(t));
  return s;
}

section flops_section(const report_data& d, document& doc) {
  section s{"flops", "FLOPs per forward pass, by op class", "FLOPs", {}};
  const model_result& m = subject(d);
  s.blocks.push_back(paragraph(fmt::format(
      "Exact counts (`modsim flops`): 2 FLOPs per multiply-add, the full attention square. The dense baseline is the "
      "same model with routing removed. Time is the predicted device time of the op class (launch overhead excluded; "
      "it is {} ms for the model, {} ms for dense).",
      ms(m.pred.model.overhead_s), ms(m.pred.dense.overhead_s))));
  table t{{"op class", "dense GFLOP", "model GFLOP", "FLOPs × dense", "share of model FLOPs", "dense ms", "model ms",
           "time × dense"},
          {false, true, true, true, true, true, true, true},
          {},
          {}};
  std::int64_t tm = 0, td = 0;
  double sm = 0, sd = 0;
  for (const auto& c : m.classes) {
    t.rows.push_back({class_label(c.op_class), gflop(c.dense_matmul_flops), gflop(c.matmul_flops),
                      ratio_or_dash(c.matmul_flops, c.dense_matmul_flops),
                      pct(static_cast<double>(c.matmul_flops) /
                          static_cast<double>(std::max<std::int64_t>(1, m.flops.totals.matmul_flops))),
                      ms(c.dense_time_s), ms(c.time_s), ratio_or_dash(c.time_s, c.dense_time_s)});
    tm += c.matmul_flops;
    td += c.dense_matmul_flops;
    sm += c.time_s;
    sd += c.dense_time_s;
  }
  t.rows.push_back(
      {"total", gflop(td), gflop(tm), ratio_or_dash(tm, td), "100.0%", ms(sd), ms(sm), ratio_or_dash(sm, sd)});
  t.emphasised.insert(t.rows.size() - 1);
  s.blocks.push_back(table_block(t));
  MODSIM_CHART(doc, s, "flops_by_class", "matmul FLOPs by op class, dense vs model",
               make_bar_chart(flops_by_class_chart(m)));

  std::string csv = "op_class,dense_matmul_flops,matmul_flops,dense_other_flops,other_flops,dense_time_s,time_s\n";
  for (const auto& c : m.classes)
    csv += fmt::format("{},{},{},{},{},{},{}\n", c.op_class, c.dense_matmul_flops, c.matmul_flops, c.dense_other_flops,
                       c.other_flops, exact(c.dense_time_s), exact(c.time_s));
  csv += fmt::format("total,{},{},{},{},{},{}\n", m.flops.totals.dense_matmul_flops, m.flops.totals.matmul_flops,
                     m.flops.totals.dense_other_flops, m.flops.totals.other_flops, exact(m.pred.dense.total_s),
                     exact(m.pred.model.total_s));
  doc.csv.push_back({"tables/flops_by_class.csv", csv});
  return s;
}

section sweep_section(const report_data& d, document& doc) {
  section s{"sweep", "Capacity × schedule: predicted wall-clock against FLOPs", "Sweep", {}};
  const sim::sweep_result& r = d.sweep;
  s.blocks.push_back(paragraph(fmt::format(
      "{} configurations around {} ({} variants), each evaluated with `modsim flops` and `modsim predict` on {}. "
      "Cells are *FLOPs × dense / time × dense* for MoD; the full table with every variant is `tables/sweep.csv`. "
      "The Pareto front minimises {} and {}.",
      r.points.size(), r.base_model.empty() ? "the model" : r.base_model,
      [&] {
        std::set<std::string> v;
        for (const auto& p : r.points) v.insert(sim::to_string(p.variant));
        return v.size();
      }(),
      hw_phrase(d), sim::to_string(r.x_axis), sim::to_string(r.y_axis))));
  // Pivot: capacity rows × schedule columns, MoD only.
  std::vector<double> caps;
  std::vector<std::string> scheds;
  for (const auto& p : r.points) {
    if (p.variant != sim::sweep_variant::mod) continue;
    if (std::find(caps.begin(), caps.end(), p.capacity) == caps.end()) caps.push_back(p.capacity);
    if (std::find(scheds.begin(), scheds.end(), p.schedule) == scheds.end()) scheds.push_back(p.schedule);
  }
  if (!caps.empty()) {
    table t;
    t.header.push_back("capacity");
    t.numeric.push_back(true);
    for (const auto& sc : scheds) {
      t.header.push_back(sc);
      t.numeric.push_back(true);
    }
    const int paper = sim::paper_point_index(r);
    for (double c : caps) {
      std::vector<std::string> row{fmt::format("{:g}%", 100 * c)};
      for (const auto& sc : scheds) {
        std::string cell = "–";
        for (std::size_t i = 0; i < r.points.size(); ++i) {
          const auto& p = r.points[i];
          if (p.variant == sim::sweep_variant::mod && p.capacity == c && p.schedule == sc) {
            cell = p.feasible ? fmt::format("{:.3f} / {:.3f}{}{}", p.flops_ratio, p.time_ratio, p.pareto ? " ◆" : "",
                                            static_cast<int>(i) == paper ? " ★" : "")
                              : "infeasible";
          }
        }
        row.push_back(cell);
      }
      t.rows.push_back(std::move(row));
    }
    s.blocks.push_back(
        table_block(t, "MoD: FLOPs × dense / time × dense (★ the paper's point, ◆ on the Pareto front)"));
  }
  MODSIM_CHART(doc, s, "sweep_pareto", "predicted wall-clock vs FLOPs with the Pareto front",
               make_pareto_chart(sweep_chart(r, d.hardware.name)));
  table front{{"on the Pareto front", "GFLOP", "FLOPs × dense", "time ms", "time × dense"},
              {false, true, true, true, true},
              {},
              {}};
  std::vector<const sim::sweep_point*> fp;
  for (const auto& p : r.points)
    if (p.pareto) fp.push_back(&p);
  std::sort(fp.begin(), fp.end(), [](auto* a, auto* b) { return a->matmul_flops < b->matmul_flops; });
  for (const auto* p : fp)
    front.rows.push_back(
        {p->description, gflop(p->matmul_flops), times(p->flops_ratio), ms(p->time_s), times(p->time_ratio)});
  s.blocks.push_back(table_block(front));
  std::vector<std::string> infeasible;
  for (const auto& p : r.points)
    if (!p.feasible) infeasible.push_back(p.description + ": " + p.reason);
  if (!infeasible.empty()) {
    s.blocks.push_back(note(fmt::format("{} configurations are infeasible:", infeasible.size())));
    s.blocks.push_back(bullets(infeasible));
  }
  doc.csv.push_back({"tables/sweep.csv", sim::sweep_csv(r)});
  return s;
}

section variants_section(const report_data& d, document& doc) {
  section s{"variants", "MoDE staged vs integrated vs MoE vs dense", "Variants", {}};
  const sim::sweep_result& r = d.variants;
  s.blocks.push_back(paragraph(
      "The same dimensions as five variants (paper §5). MoE: an 8-expert top-1 MLP at every layer (or the model's own "
      "MoE settings). MoDE staged: MoD routing around blocks whose MLP is that MoE. MoDE integrated: no-op experts "
      "join "
      "the real ones at the routed layers, as many as make about `capacity` of the tokens reach a real expert; "
      "attention "
      "still sees every token."));
  table t{{"variant", "configuration", "params M", "GFLOP", "FLOPs × dense", "time ms", "time × dense"},
          {false, false, true, true, true, true, true},
          {},
          {}};
  for (const auto& p : r.points) {
    if (!p.feasible) {
      t.rows.push_back({sim::to_string(p.variant), p.description, "", "", "", "", "infeasible: " + p.reason});
      continue;
    }
    t.rows.push_back({sim::to_string(p.variant), p.description,
                      fmt::format("{:.1f}", static_cast<double>(p.params) / 1e6), gflop(p.matmul_flops),
                      times(p.flops_ratio), ms(p.time_s), times(p.time_ratio)});
  }
  s.blocks.push_back(table_block(t));
  for (const auto& n : d.variant_notes) s.blocks.push_back(note(n));
  MODSIM_CHART(doc, s, "variants", "FLOPs and predicted time of each variant relative to dense",
               make_bar_chart(variants_chart(r)));
  doc.csv.push_back({"tables/variants.csv", sim::sweep_csv(r)});
  return s;
}

section time_section(const report_data& d, document& doc) {
  section s{"time", "Where the time goes, layer by layer", "Time per layer", {}};
  const model_result& m = subject(d);
  s.blocks.push_back(
      paragraph("Predicted device time per layer, stacked by op class: for each layer the dense baseline (left bar) "
                "beside the model "
                "(right bar); routed layers are "
                "where MoD saves, the others cost what they cost in the dense model."));
  MODSIM_CHART(doc, s, "time_per_layer", "predicted time per layer by op class, dense vs model",
               make_layer_time_chart(layer_time_chart(m.pred, model_label(m.model))));
  table t{{"layer", "routed", "tokens", "dense ms", "model ms", "time × dense", "kernels"},
          {true, false, true, true, true, true, true},
          {},
          {}};
  std::string csv = "layer,routed,capacity,tokens,dense_time_s,time_s,kernels,dense_kernels\n";
  for (std::size_t i = 0; i < m.pred.model.layers.size(); ++i) {
    const auto& l = m.pred.model.layers[i];
    const double dense_s = i < m.pred.dense.layers.size() ? m.pred.dense.layers[i].time_s : 0.0;
    const int dense_k = i < m.pred.dense.layers.size() ? m.pred.dense.layers[i].kernels : 0;
    t.rows.push_back({std::to_string(l.index), l.routed ? fmt::format("yes ({:g}%)", 100 * l.capacity) : "no",
                      std::to_string(l.tokens), ms(dense_s), ms(l.time_s), ratio_or_dash(l.time_s, dense_s),
                      std::to_string(l.kernels)});
    csv += fmt::format("{},{},{},{},{},{},{},{}\n", l.index, l.routed ? "true" : "false", l.capacity, l.tokens,
                       exact(dense_s), exact(l.time_s), l.kernels, dense_k);
  }
  t.rows.push_back({"LM head", "", "", ms(m.pred.dense.lm_head.time_s), ms(m.pred.model.lm_head.time_s),
                    ratio_or_dash(m.pred.model.lm_head.time_s, m.pred.dense.lm_head.time_s),
                    std::to_string(m.pred.model.lm_head.kernels)});
  t.rows.push_back({"launches", "", "", ms(m.pred.dense.overhead_s), ms(m.pred.model.overhead_s),
                    ratio_or_dash(m.pred.model.overhead_s, m.pred.dense.overhead_s),
                    std::to_string(m.pred.model.kernels)});
  t.rows.push_back({"total", "", "", ms(m.pred.dense.total_s), ms(m.pred.model.total_s), times(m.pred.time_ratio), ""});
  t.emphasised.insert(t.rows.size() - 1);
  s.blocks.push_back(table_block(t));
  doc.csv.push_back({"tables/time_per_layer.csv", csv});
  return s;
}

section gap_section(const report_data& d, document& doc) {
  section s{"gap", "Where the FLOP-to-time gap goes", "The gap", {}};
  const sim::prediction& p = subject(d).pred;
  s.blocks.push_back(paragraph(fmt::format(
      "The model does {} of the dense FLOPs (matmul + elementwise) but takes {} of its time. The difference, {} points "
      "of the dense time, splits exactly into the terms below (`modsim predict`; positive = time not saved).",
      pct(p.flop_ratio), pct(p.time_ratio), signed_points(p.time_ratio - p.flop_ratio))));
  MODSIM_CHART(doc, s, "gap_waterfall", "waterfall from the FLOP ratio to the time ratio",
               make_waterfall_chart(gap_chart(p)));
  table t{{"term", "points of dense time", "why"}, {false, true, false}, {}, {}};
  std::string csv = "term,value\n";
  t.rows.push_back(
      {"FLOP ratio", fmt::format("{:.1f}", 100 * p.flop_ratio), "where the time would be if it followed the FLOPs"});
  for (const auto& term : gap_terms()) {
    t.rows.push_back({term.label, signed_points(p.gap.*(term.field)), term.why});
    csv += fmt::format("{},{}\n", term.key, exact(p.gap.*(term.field)));
  }
  t.rows.push_back({"time ratio", fmt::format("{:.1f}", 100 * p.time_ratio), "the predicted time, % of dense"});
  t.emphasised.insert(0);
  t.emphasised.insert(t.rows.size() - 1);
  s.blocks.push_back(table_block(t));
  csv = fmt::format("flop_ratio,{}\n", exact(p.flop_ratio)) + csv.substr(csv.find('\n') + 1);
  csv = "term,value\n" + csv + fmt::format("time_ratio,{}\ngap_total,{}\n", exact(p.time_ratio), exact(p.gap.total()));
  if (!p.gap.by_class.empty()) {
    table c{{"op class", "points of dense time"}, {false, true}, {}, {}};
    for (std::string_view name : sim::op_classes()) {
      auto it = p.gap.by_class.find(std::string(name));
      if (it == p.gap.by_class.end()) continue;
      c.rows.push_back({class_label(it->first), signed_points(it->second)});
      csv += fmt::format("class:{},{}\n", it->first, exact(it->second));
    }
    s.blocks.push_back(table_block(c, "the same gap by op class (launches excluded)"));
  }
  for (const auto& n : p.notes) s.blocks.push_back(note(n));
  doc.csv.push_back({"tables/gap.csv", csv});
  return s;
}

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
  {
    std::map<std::string, std::vector<double>> by;
    for (const auto& p : v.points) by[p.sample.op].push_back(p.error_pct);
    if (by.size() > 1)
      for (const auto& [op, e] : by) sum.rows.push_back(summary_row("  " + op, sim::summarize_errors(e)));
  }
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
      "FLOPs: exact per-op formulas (`sim/flops.hpp`): a matmul (m×k)(k×n) is 2mnk FLOPs, attention counts the full "
      "n×n "
      "square, elementwise work is counted apart. Ratios in this report are of matmul FLOPs unless they say otherwise; "
      "the gap uses matmul + elementwise FLOPs.",
      "Time: uncalibrated, each op's roofline time on the hardware (max of compute and memory time) plus one launch "
      "per kernel. Calibrated on a GPU, each op is the kernels the CUDA backend launches for it, each a floor plus a "
      "wave-quantised compute bound or a bandwidth bound with fitted efficiencies, run through a host queue and a "
      "device queue (`sim/kernel_model.hpp`); on a CPU, per-op efficiency curves (`sim/cost.hpp`). A prediction, not "
      "a measurement: the calibration's cross-validated error is its expected error band.",
      "Serving: the discrete-event simulator (`sim/des/`) runs every step's kernels on a host queue and a GPU stream.",
      "Generated " + d.generated + (d.command_line.empty() ? std::string() : " by `" + d.command_line + "`") + ".",
  }));
  return s;
}

document build_document(const report_data& d) {
  document doc;
  const model_result& m = subject(d);
  doc.title = fmt::format("MoD cost report: {}", model_label(m.model));
  doc.subtitle = fmt::format("{} on {} · {}", routing_short(m.model), hw_phrase(d), workload_text(d.load));
  doc.sections.push_back(verdict_section(d));
  doc.sections.push_back(configuration_section(d));
  doc.sections.push_back(flops_section(d, doc));
  doc.sections.push_back(sweep_section(d, doc));
  doc.sections.push_back(variants_section(d, doc));
  doc.sections.push_back(time_section(d, doc));
  doc.sections.push_back(gap_section(d, doc));
  doc.sections.push_back(serving_section_of(d, doc));
  doc.sections.push_back(validation_section_of(d, doc));
  doc.sections.push_back(models_section(d));
  doc.sections.push_back(method_section(d));
  return doc;
}

// --- Markdown -------------------------------------------------------------------------------

std::string render_markdown(const document& doc, bool charts) {
  std::string out = "# " + doc.title + "\n\n_" + doc.subtitle + "_\n\n";
  if (!charts)
    out += "> Charts need Qt 6 (Charts + Svg); this build has none, so the report carries the tables only.\n\n";
  for (const section& s : doc.sections) {
    out += "## " + s.title + " {#" + s.id + "}\n\n";
    for (const block& b : s.blocks) {
      switch (b.k) {
        case block::kind::paragraph:
          out += b.text + "\n\n";
          break;
        case block::kind::note:
          out += "> " + b.text + "\n\n";
          break;
        case block::kind::bullets:
          for (const auto& i : b.items) out += "- " + i + "\n";
          out += "\n";
          break;
        case block::kind::cards: {
          std::vector<std::string> parts;
          for (const auto& i : b.items) {
            const auto sep = i.find('\x1F');
            parts.push_back("**" + i.substr(0, sep) + "** " + i.substr(sep + 1));
          }
          std::string line;
          for (const auto& p : parts) line += (line.empty() ? "" : " · ") + p;
          out += line + "\n\n";
          break;
        }
        case block::kind::table:
          if (!b.caption.empty()) out += "_" + b.caption + "_\n\n";
          out += to_markdown(b.tab) + "\n";
          break;
        case block::kind::chart:
          if (charts) out += "![" + b.caption + "](charts/" + b.chart + ".svg)\n\n";
          break;
      }
    }
  }
  return out;
}

// --- HTML -----------------------------------------------------------------------------------

const char* const k_css = R"css(
:root { --ink:#1d2330; --muted:#5b6475; --line:#e3e6ec; --bg:#ffffff; --soft:#f6f7f9; --accent:#0b63b6; --bad:#b8460b; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "DejaVu Sans", sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 28px 28px 64px; }
header.top { border-bottom: 1px solid var(--line); padding-bottom: 14px; margin-bottom: 8px; }
h1 { font-size: 26px; line-height: 1.25; margin: 0 0 4px; letter-spacing: -0.01em; }
.subtitle { color: var(--muted); margin: 0; }
nav.toc { margin: 12px 0 0; font-size: 13.5px; }
nav.toc a { color: var(--accent); text-decoration: none; margin-right: 14px; white-space: nowrap; }
nav.toc a:hover { text-decoration: underline; }
h2 { font-size: 19px; margin: 38px 0 10px; padding-top: 6px; border-top: 1px solid var(--line); }
section#verdict h2 { border-top: 0; }
p { margin: 8px 0 12px; max-width: 78ch; }
code { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
  background: var(--soft); padding: 1px 4px; border-radius: 3px; }
ul { padding-left: 20px; max-width: 90ch; }
li { margin: 5px 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 12px; margin: 14px 0 16px; }
.card { background: var(--soft); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.card .value { font-size: 28px; font-weight: 650; font-variant-numeric: tabular-nums; letter-spacing: -0.02em; }
.card .label { color: var(--muted); font-size: 13px; }
.table-wrap { overflow-x: auto; margin: 10px 0 16px; }
table { border-collapse: collapse; font-size: 13.5px; font-variant-numeric: tabular-nums; }
caption { caption-side: top; text-align: left; color: var(--muted); font-size: 13px; padding: 0 0 6px; }
th, td { padding: 5px 12px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-weight: 600; border-bottom: 2px solid #c9ced8; white-space: nowrap; }
td.num, th.num { text-align: right; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafbfc; }
tr.em td { font-weight: 650; border-top: 1.5px solid #c9ced8; }
figure { margin: 14px 0 20px; }
figure svg { width: 100%; max-width: 900px; height: auto; display: block; border: 1px solid var(--line); border-radius: 6px; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 4px; }
.note { border-left: 3px solid #d0a200; background: #fffaeb; padding: 8px 12px; margin: 10px 0; max-width: 90ch; font-size: 14px; }
.warn { border-left-color: var(--bad); background: #fff3ec; }
footer { color: var(--muted); font-size: 12.5px; margin-top: 40px; border-top: 1px solid var(--line); padding-top: 10px; }
@media print { main { max-width: none; } h2 { break-after: avoid; } figure, table { break-inside: avoid; } }
)css";

// Minimal Markdown for inline text: **bold**, *italic*, `code` (after escaping).
std::string inline_html(const std::string& text) {
  const std::string s = html_escape(text);
  std::string out;
  bool bold = false, ital = false, code = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '`') {
      out += code ? "</code>" : "<code>";
      code = !code;
    } else if (!code && s.compare(i, 2, "**") == 0) {
      out += bold ? "</strong>" : "<strong>";
      bold = !bold;
      ++i;
    } else if (!code && s[i] == '*' && (ital || (i + 1 < s.size() && s[i + 1] != ' '))) {
      out += ital ? "</em>" : "<em>";
      ital = !ital;
    } else {
      out += s[i];
    }
  }
  if (code) out += "</code>";
  if (bold) out += "</strong>";
  if (ital) out += "</em>";
  return out;
}

// QSvgGenerator's output made smaller and portable: empty groups (one per state change of
// the painter) removed, Qt's generic "Sans Serif" family given real fallbacks.
[[maybe_unused]] std::string tidy_svg(std::string s) {
  for (bool changed = true; changed;) {
    changed = false;
    std::string out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i < s.size()) {
      const std::size_t at = s.find("<g", i);
      if (at == std::string::npos) {
        out.append(s, i, std::string::npos);
        break;
      }
      const std::size_t close = s.find('>', at);
      std::size_t j = close == std::string::npos ? close : close + 1;
      while (j != std::string::npos && j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j != std::string::npos && (s[at + 2] == ' ' || s[at + 2] == '\n' || s[at + 2] == '>') &&
          s.compare(j, 4, "</g>") == 0) {
        out.append(s, i, at - i);
        i = j + 4;
        changed = true;
      } else {
        out.append(s, i, at + 2 - i);
        i = at + 2;
      }
    }
    s = std::move(out);
  }
  const std::string from = "font-family=\"Sans Serif\"";
  const std::string to = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

// An SVG document (QSvgGenerator's output) made fit to sit inside HTML: no XML prolog or
// DOCTYPE, no namespace URLs (HTML parses inline <svg> without them), ids made unique, and
// scaled by CSS through its viewBox.
std::string inline_svg(const std::string& svg, const std::string& id_prefix, const std::string& alt) {
  std::string s = svg;
  const auto start = s.find("<svg");
  if (start == std::string::npos) return "";
  s = s.substr(start);
  auto erase_attr = [&](const std::string& name) {
    const std::string::size_type tag_end = s.find('>');
    const auto at = s.find(" " + name + "=\"");
    if (at == std::string::npos || at > tag_end) return;
    const auto q = s.find('"', at + name.size() + 3);
    s.erase(at, q + 1 - at);
  };
  for (const char* a : {"xmlns", "xmlns:xlink", "width", "height", "version", "baseProfile"}) erase_attr(a);
  s.insert(4, " role=\"img\" aria-label=\"" + html_escape(alt) + "\"");
  // Unique ids per chart (gradients, clip paths).
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
      s.replace(pos, from.size(), to);
  };
  replace_all("id=\"", "id=\"" + id_prefix + "-");
  replace_all("url(#", "url(#" + id_prefix + "-");
  replace_all("xlink:href=\"#", "xlink:href=\"#" + id_prefix + "-");
  // Namespace URL text anywhere else (none expected) would be an external-looking reference.
  return s;
}

std::string render_html(const document& doc, const std::map<std::string, std::string>& svgs, bool charts) {
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + html_escape(doc.title) + "</title>\n<style>" + std::string(k_css) +
         "</style>\n</head>\n<body>\n<main>\n";
  out += "<header class=\"top\"><h1>" + html_escape(doc.title) + "</h1><p class=\"subtitle\">" +
         html_escape(doc.subtitle) + "</p>";
  out += "<nav class=\"toc\">";
  for (const section& s : doc.sections) out += "<a href=\"#" + s.id + "\">" + html_escape(s.toc) + "</a>\n";
  out += "</nav></header>\n";
  if (!charts)
    out +=
        "<div class=\"note warn\">Charts need Qt 6 (Charts + Svg); this build has none, so the report carries the "
        "tables only.</div>\n";
  for (const section& s : doc.sections) {
    out += "<section id=\"" + s.id + "\">\n<h2>" + html_escape(s.title) + "</h2>\n";
    for (const block& b : s.blocks) {
      switch (b.k) {
        case block::kind::paragraph:
          out += "<p>" + inline_html(b.text) + "</p>\n";
          break;
        case block::kind::note:
          out += "<div class=\"note\">" + inline_html(b.text) + "</div>\n";
          break;
        case block::kind::bullets:
          out += "<ul>";
          for (const auto& i : b.items) out += "<li>" + inline_html(i) + "</li>";
          out += "</ul>\n";
          break;
        case block::kind::cards:
          out += "<div class=\"cards\">";
          for (const auto& i : b.items) {
            const auto sep = i.find('\x1F');
            out += "<div class=\"card\"><div class=\"value\">" + html_escape(i.substr(0, sep)) +
                   "</div><div class=\"label\">" + html_escape(i.substr(sep + 1)) + "</div></div>";
          }
          out += "</div>\n";
          break;
        case block::kind::table:
          out += to_html(b.tab, b.caption);
          break;
        case block::kind::chart: {
          auto it = svgs.find(b.chart);
          if (it == svgs.end()) break;
          out += "<figure id=\"chart-" + b.chart + "\">" + inline_svg(it->second, b.chart, b.caption) + "<figcaption>" +
                 html_escape(b.caption) + " (also charts/" + b.chart + ".svg)</figcaption></figure>\n";
          break;
        }
      }
    }
    out += "</section>\n";
  }
  out +=
      "<footer>modsim — measure, predict and explain Mixture-of-Depths. This page is self-contained: no network, "
      "no scripts, no external fonts.</footer>\n</main>\n</body>\n</html>\n";
  return out;
}

}  // namespace

std::vector<report_file> render_report(const report_data& data, const render_options& options,
                                       const progress_fn& progress) {
  if (data.models.empty()) throw input_error("", "", "render_report: the report has no model");
  document doc = build_document(data);
  const bool charts = options.charts && charts_available();
  std::map<std::string, std::string> svgs;
  std::vector<report_file> files;
#if MODSIM_HAVE_QT
  if (charts) {
    if (!ensure_application()) throw runtime_error("report: cannot create a Qt application to draw the charts");
    for (const chart_spec& c : doc.charts) {
      if (progress) progress("report: drawing chart " + c.name);
      std::unique_ptr<QChart> chart(c.build());
      const QByteArray svg = render_svg(chart.get(), QSize(900, 500));
      svgs[c.name] = tidy_svg(std::string(svg.constData(), static_cast<std::size_t>(svg.size())));
      files.push_back({"charts/" + c.name + ".svg", svgs[c.name]});
    }
  }
#else
  (void)progress;
#endif
  files.push_back({"report.md", render_markdown(doc, charts)});
  files.push_back({"report.html", render_html(doc, svgs, charts)});
  for (auto& f : doc.csv) files.push_back(std::move(f));
  return files;
}

}  // namespace modsim::reports
