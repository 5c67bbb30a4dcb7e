#include "reports/views.hpp"

#include <fmt/format.h>

#include <map>

#include "sim/model/flops.hpp"
#include "sim/model/memory.hpp"

namespace modsim::reports {

std::string pass_label(sim::run_mode mode) {
  switch (mode) {
    case sim::run_mode::train:
      return "training step";
    case sim::run_mode::decode:
      return "decode step";
    case sim::run_mode::forward:
      break;
  }
  return "forward pass";
}

std::string class_label(std::string_view c) {
  static const std::map<std::string, std::string, std::less<>> words = {
      {"routing", "routing"}, {"norm", "norms"}, {"attn_proj", "attention proj."}, {"attn_core", "attention core"},
      {"mlp", "MLP"},         {"moe", "MoE"},    {"lm_head", "LM head"},           {"block", "block"}};
  auto it = words.find(c);
  return it == words.end() ? std::string(c) : it->second;
}

pareto_chart_input sweep_chart(const sim::sweep_result& r, const std::string& hardware) {
  pareto_chart_input in;
  in.title = fmt::format("Predicted wall-clock vs FLOPs, {} configurations on {}", r.points.size(), hardware);
  in.x_label = "matmul FLOPs per " + pass_label(r.load.run) + " (GFLOP)";
  in.y_label = "predicted wall-clock (ms)";
  const int paper = sim::paper_point_index(r);
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    if (!p.feasible) continue;
    scatter_point s;
    s.label = static_cast<int>(i) == paper ? "paper: " + p.description : p.description;
    s.group = sim::display_name(p.variant);
    s.flops = static_cast<double>(p.matmul_flops);
    s.time_s = p.time_s;
    s.pareto = p.pareto;
    s.highlight = static_cast<int>(i) == paper;
    in.points.push_back(std::move(s));
  }
  return in;
}

bar_chart_input flops_by_class_chart(const model_result& m) {
  bar_chart_input in;
  in.title = "Matmul FLOPs per " + pass_label(m.pred.load.run) + " by op class";
  in.x_label = "op class";
  in.y_label = "matmul FLOPs (GFLOP)";
  bar_set dense{"dense baseline", {}, 7};
  bar_set model{m.model.name.empty() ? "model" : m.model.name, {}, 0};
  for (const auto& c : m.classes) {
    in.categories.push_back(class_label(c.op_class));
    dense.values.push_back(static_cast<double>(c.dense_matmul_flops) / 1e9);
    model.values.push_back(static_cast<double>(c.matmul_flops) / 1e9);
  }
  in.sets = {dense, model};
  return in;
}

bar_chart_input variants_chart(const sim::sweep_result& v) {
  bar_chart_input in;
  in.title = "Variants relative to dense: FLOPs and predicted time";
  in.x_label = "variant";
  in.y_label = "× dense";
  bar_set flops{"matmul FLOPs", {}, 4};
  bar_set time{"predicted time", {}, 1};
  for (const auto& p : v.points) {
    if (!p.feasible) continue;
    in.categories.push_back(sim::display_name(p.variant));
    flops.values.push_back(p.flops_ratio);
    time.values.push_back(p.time_ratio);
  }
  in.sets = {flops, time};
  return in;
}

layer_time_input layer_time_chart(const sim::prediction& p, const std::string& model_name) {
  layer_time_input in;
  in.title = "Predicted time per layer by op class (launch overhead excluded)";
  in.y_label = "predicted time (ms)";
  in.dense_name = "dense";
  in.current_name = model_name.empty() ? "MoD" : model_name;
  if (in.current_name.substr(0, 1) == "d") in.current_name = "model " + in.current_name;
  std::vector<std::string> classes;
  for (std::string_view c : sim::op_classes())
    if (c != "lm_head" && c != "block") classes.emplace_back(c);
  for (const auto& c : classes) in.classes.push_back(class_label(c));
  auto per_layer = [&](const sim::model_time& t) {
    std::vector<std::vector<double>> out;
    for (const auto& l : t.layers) {
      std::vector<double> row(classes.size(), 0.0);
      for (const auto& o : l.ops)
        for (std::size_t i = 0; i < classes.size(); ++i)
          if (o.op_class == classes[i]) row[i] += o.time_s;
      out.push_back(std::move(row));
    }
    return out;
  };
  in.dense_s = per_layer(p.dense);
  in.current_s = per_layer(p.model);
  return in;
}

waterfall_input gap_chart(const sim::prediction& p) {
  waterfall_input in;
  in.title = fmt::format("Where the FLOP saving goes: {:.1f}% of the FLOPs → {:.1f}% of the time", 100 * p.flop_ratio,
                         100 * p.time_ratio);
  in.y_label = "% of the dense " + pass_label(p.load.run);
  in.steps.push_back({"FLOPs", 100 * p.flop_ratio, true});
  for (const sim::gap_term& t : sim::gap_terms()) in.steps.push_back({t.chart, 100 * (p.gap.*t.value), false});
  in.steps.push_back({"time", 100 * p.time_ratio, true});
  return in;
}

latency_chart_input latency_chart(const serving_section& s, bool ttft) {
  latency_chart_input in;
  in.title = ttft ? "Time to first token, CDF over requests" : "Time per output token, CDF over requests";
  in.x_label = ttft ? "TTFT (ms)" : "TPOT (ms)";
  for (const auto& r : s.runs) in.series.push_back({r.name, ttft ? r.ttft_s : r.tpot_s, {}});
  return in;
}

diagonal_input validation_chart(const validation_section& v) {
  diagonal_input in;
  in.title = fmt::format("Measured vs predicted, {} blocks on {}: median |error| {:.1f}%, p90 {:.1f}%, max {:.1f}%",
                         v.summary.points, v.device.empty() ? v.hardware : v.device, v.summary.median_abs_pct_error,
                         v.summary.p90_abs_pct_error, v.summary.max_abs_pct_error);
  for (const auto& p : v.points) {
    const std::string op(modsim::to_string(p.sample.op));
    in.points.push_back({op, op, p.sample.median_s, p.predicted_s});
  }
  return in;
}

std::string sampling_memory_name(const analysis::sampling_map& m) {
  return m.memory_bytes > 0 ? sim::format_bytes(m.memory_bytes) : std::string("memory");
}

ratio_chart_input sampling_chart(const analysis::sampling_map& m, std::size_t strategy) {
  ratio_chart_input in;
  if (strategy >= m.strategies.size()) return in;
  const analysis::sampling_strategy_map& sm = m.strategies[strategy];
  in.title = fmt::format("{} decode step: {} / {}", sm.strategy.name(), m.model_name, m.baseline_name);
  in.target_ratio = 1.0 / m.target_speedup;
  in.target_name = fmt::format("{:g}x faster (ratio {:.3f})", m.target_speedup, in.target_ratio);
  const std::size_t nc = m.contexts.size();
  const std::size_t stride = nc > 5 ? 2 : 1;
  for (std::size_t c = (nc - 1) % stride; c < nc; c += stride) {
    ratio_line line;
    line.name = fmt::format("context {}", m.contexts[c]);
    for (std::size_t b = 0; b < m.batches.size(); ++b) {
      const analysis::sampling_cell& x = sm.cells[b * nc + c];
      line.points.emplace_back(static_cast<double>(m.batches[b]), x.ratio());
      if (!x.fits) in.excluded.emplace_back(static_cast<double>(m.batches[b]), x.ratio());
    }
    in.lines.push_back(std::move(line));
  }
  if (!in.excluded.empty()) in.excluded_name = "does not fit in " + sampling_memory_name(m) + " (excluded)";
  ratio_line measured;
  measured.name = "measured";
  for (const analysis::sampling_measurement& q : m.measured)
    if (q.routing == sm.strategy.routing && q.baseline_s > 0)
      measured.points.emplace_back(static_cast<double>(q.batch), q.model_s / q.baseline_s);
  if (!measured.points.empty()) in.measured.push_back(std::move(measured));
  return in;
}

}  // namespace modsim::reports
