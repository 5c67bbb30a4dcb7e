// The report's cost sections: FLOPs by op class, the capacity × schedule sweep, the MoD/MoE/MoDE
// variants, time per layer and the FLOP-to-time gap (reports/sections.hpp).
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
#include "reports/text.hpp"
#include "reports/views.hpp"
#include "sim/model/flops.hpp"
#include "sim/common/io.hpp"

namespace modsim::reports::detail {

section flops_section(const report_data& d, document& doc) {
  section s{"flops", "FLOPs per " + pass_label(d.load.run) + ", by op class", "FLOPs", {}};
  const model_result& m = subject(d);
  s.blocks.push_back(paragraph(fmt::format(
      "Exact counts (`modsim flops{}`): 2 FLOPs per multiply-add, the full attention square{}. The dense baseline is "
      "the same model with routing removed. Time is the predicted device time of the op class (launch overhead "
      "excluded; it is {} ms for the model, {} ms for dense).",
      d.load.run == sim::run_mode::train ? " --mode train" : "",
      d.load.run == sim::run_mode::train
          ? "; a training step is the forward pass, each op's backward (2× its matmul FLOPs: dgrad and wgrad) and what "
            "recomputation runs again (a fused attention kernel recomputes the scores), then the AdamW step"
          : "",
      ms(m.pred.model.overhead_s), ms(m.pred.dense.overhead_s))));
  table t{{"op class", "dense matmul GFLOP", "model matmul GFLOP", "matmul FLOPs × dense",
           "share of model matmul FLOPs", "dense ms", "model ms", "time × dense"},
          {false, true, true, true, true, true, true, true},
          {},
          {}};
  std::int64_t tm = 0, td = 0, om = 0, od = 0;
  double sm = 0, sd = 0;
  for (const auto& c : m.classes) {
    t.rows.push_back({class_label(c.op_class), gflop(c.dense_matmul_flops), gflop(c.matmul_flops),
                      ratio_or_dash(c.matmul_flops, c.dense_matmul_flops),
                      pct(static_cast<double>(c.matmul_flops) /
                          static_cast<double>(std::max<std::int64_t>(1, m.flops.totals.matmul_flops))),
                      ms(c.dense_time_s), ms(c.time_s), ratio_or_dash(c.time_s, c.dense_time_s)});
    tm += c.matmul_flops;
    td += c.dense_matmul_flops;
    om += c.other_flops;
    od += c.dense_other_flops;
    sm += c.time_s;
    sd += c.dense_time_s;
  }
  t.rows.push_back(
      {"total", gflop(td), gflop(tm), ratio_or_dash(tm, td), "100.0%", ms(sd), ms(sm), ratio_or_dash(sm, sd)});
  t.emphasised.insert(t.rows.size() - 1);
  // The FLOP ratio the rest of the report quotes counts every FLOP (norms, softmax, activations
  // too): it is this row's, not the matmul total's.
  t.rows.push_back({"all FLOPs (matmul + other)", gflop(td + od), gflop(tm + om),
                    ratio_or_dash(static_cast<double>(tm + om), static_cast<double>(td + od)), "", "", "", ""});
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
  table t{{"layer", "routed", "tokens", "dense ms", "model ms", "time × dense", "launches"},
          {true, false, true, true, true, true, true},
          {},
          {}};
  std::string csv = "layer,routed,capacity,tokens,dense_time_s,time_s,launches,dense_launches\n";
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

}  // namespace modsim::reports::detail
