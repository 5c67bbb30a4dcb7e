// summary.json: the figures of report_data under their stable keys (reports/summary.hpp), and
// reading a summary back.
#include "reports/summary.hpp"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "sim/des/serving_fields.hpp"

namespace modsim::reports {

namespace {

// The serving fields people's tables compare with the baseline (sim/des/serving_fields.hpp):
// latencies in seconds, the throughput, the KV cache peak.
struct serving_key {
  std::string key, unit;
  bool higher;
};
serving_key serving_key_of(const sim::des::serve_field& f) {
  const std::string k = f.key;
  if (k == "throughput_tok_s") return {"serving." + k, "tok/s", true};
  if (k.ends_with("_bytes")) return {"serving." + k, "bytes", false};
  if (k.ends_with("_flops")) return {"serving." + k, "FLOP", false};
  return {"serving." + k, "s", false};
}

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = {"forward", "train"};
  return names;
}
const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"sync", "pad", "sync+graphs", "pad+graphs"};
  return names;
}

class figure_list {
 public:
  void add(const std::string& key, const std::string& model, double value, const char* unit, bool higher = false) {
    if (std::isfinite(value)) m_figures.push_back({key, model, value, unit, higher});
  }
  std::vector<summary_figure> take() { return std::move(m_figures); }

 private:
  std::vector<summary_figure> m_figures;
};

double ratio(double a, double b) { return b != 0 ? a / b : NAN; }

}  // namespace

std::vector<summary_figure> summary_figures(const report_data& d) {
  figure_list f;
  const std::string pass = sim::to_string(d.load.run);
  for (std::size_t i = 0; i < d.models.size(); ++i) {
    const model_result& m = d.models[i];
    const std::string& name = m.model.name;
    const sim::prediction& p = m.pred;
    f.add("flops.matmul", name, static_cast<double>(m.flops.totals.matmul_flops), "FLOP");
    f.add(
        "flops.matmul_ratio", name,
        ratio(static_cast<double>(m.flops.totals.matmul_flops), static_cast<double>(m.flops.totals.dense_matmul_flops)),
        "x");
    f.add("flops.ratio", name, p.flop_ratio, "x");
    f.add("time." + pass, name, p.model.total_s, "s");
    f.add("time." + pass + "_ratio", name, p.time_ratio, "x");
    if (m.memory) f.add("memory.per_gpu", name, m.memory->total(), "bytes");
    if (i != 0) continue;
    if (p.band) f.add("time." + pass + "_band_p90", name, p.band->p90_pct, "%");
    if (d.validation) {
      f.add("trust.median_abs_error", name, d.validation->summary.median_abs_pct_error, "%");
      f.add("trust.p90_abs_error", name, d.validation->summary.p90_abs_pct_error, "%");
    }
    const sim::sweep_point* best = nullptr;
    for (const auto& pt : d.sweep.points)
      if (pt.feasible && (!best || pt.time_s < best->time_s)) best = &pt;
    if (best) f.add("sweep.best_time_ratio", name, best->time_ratio, "x");
    if (d.serving && d.serving->runs.size() == 2) {
      const sim::des::serve_summary& base = d.serving->runs[0].summary;
      const sim::des::serve_summary& mod = d.serving->runs[1].summary;
      for (const sim::des::serve_field& field : sim::des::serve_fields()) {
        if (!field.compare) continue;
        const serving_key k = serving_key_of(field);
        f.add(k.key, name, field.value(mod), k.unit.c_str(), k.higher);
      }
      f.add("serving.tpot_p50_ratio", name, ratio(mod.tpot_s.p50, base.tpot_s.p50), "x");
      f.add("serving.kv_peak_ratio", name,
            ratio(static_cast<double>(mod.kv_peak_bytes), static_cast<double>(base.kv_peak_bytes)), "x");
    }
    if (d.serving_routing) {
      for (const analysis::serving_routing_trial& t : d.serving_routing->trials)
        f.add(std::string("serving.") + modsim::to_string(t.routing) + ".tpot_p50", name, t.tpot_p50_s, "s");
    }
    if (d.sampling)
      for (const analysis::sampling_strategy_map& sm : d.sampling->strategies) {
        const std::string k = "sampling." + sm.strategy.name();
        if (sm.best >= 0)
          f.add(k + ".best_speedup", name, sm.cells[static_cast<std::size_t>(sm.best)].speedup(), "x", true);
        f.add(k + ".cells_reached", name, sm.reached, "cells", true);
      }
    if (d.parallel) {
      const sim::parallel_prediction& pm = d.parallel->model;
      f.add("parallel.step", name, pm.step_s, "s");
      f.add("parallel.step_ratio", name, ratio(pm.step_s, d.parallel->baseline.step_s), "x");
      f.add("parallel.memory_per_gpu", name, pm.memory_per_gpu.total(), "bytes");
    }
  }
  return f.take();
}

std::vector<std::string> summary_keys() {
  std::vector<std::string> keys = {"flops.matmul", "flops.matmul_ratio", "flops.ratio", "memory.per_gpu"};
  for (const std::string& pass : pass_names())
    for (const char* suffix : {"", "_ratio", "_band_p90"}) keys.push_back("time." + pass + suffix);
  for (const char* k : {"trust.median_abs_error", "trust.p90_abs_error", "sweep.best_time_ratio",
                        "serving.tpot_p50_ratio", "serving.kv_peak_ratio", "decode.sync.step", "decode.pad.step",
                        "parallel.step", "parallel.step_ratio", "parallel.memory_per_gpu"})
    keys.push_back(k);
  for (const sim::des::serve_field& field : sim::des::serve_fields())
    if (field.compare) keys.push_back(serving_key_of(field).key);
  for (const std::string& s : strategy_names()) {
    keys.push_back("sampling." + s + ".best_speedup");
    keys.push_back("sampling." + s + ".cells_reached");
  }
  return keys;
}

summary summary_of(const report_data& d) { return {summary_schema, d.build, d.inputs, summary_figures(d)}; }

std::string summary_text(const summary& s) {
  const auto quoted = [](const std::string& x) { return boost::json::serialize(boost::json::value(x)); };
  std::string t = "{\n";
  t += "  \"schema\": " + quoted(s.schema) + ",\n";
  t += fmt::format("  \"modsim\": {{\"version\": {}, \"commit\": {}}},\n", quoted(s.build.version),
                   quoted(s.build.commit));
  t += "  \"inputs\": [";
  for (std::size_t i = 0; i < s.inputs.size(); ++i)
    t += std::string(i ? "," : "") + "\n    " +
         fmt::format(R"({{"path": {}, "sha256": {}}})", quoted(s.inputs[i].path), quoted(s.inputs[i].sha256));
  t += s.inputs.empty() ? "],\n" : "\n  ],\n";
  t += "  \"figures\": [";
  for (std::size_t i = 0; i < s.figures.size(); ++i) {
    const summary_figure& f = s.figures[i];
    // The value in its shortest form that reads back exactly ("229661212672", "0.00079751").
    t += std::string(i ? "," : "") + "\n    " +
         fmt::format(R"({{"key": {}, "model": {}, "value": {}, "unit": {}, "better": "{}"}})", quoted(f.key),
                     quoted(f.model), f.value, quoted(f.unit), f.higher_is_better ? "higher" : "lower");
  }
  t += s.figures.empty() ? "]\n" : "\n  ]\n";
  return t + "}\n";
}

namespace {

const boost::json::value& member(const boost::json::object& o, const char* key, const std::string& path,
                                 const std::string& where) {
  const boost::json::value* v = o.if_contains(key);
  if (!v) throw input_error(path, where + key, "missing (not a modsim report summary)");
  return *v;
}

std::string string_member(const boost::json::object& o, const char* key, const std::string& path,
                          const std::string& where) {
  const boost::json::value& v = member(o, key, path, where);
  if (!v.is_string()) throw input_error(path, where + key, "must be a string");
  return std::string(v.as_string());
}

const boost::json::object& object_of(const boost::json::value& v, const std::string& path, const std::string& where) {
  if (!v.is_object()) throw input_error(path, where, "must be an object");
  return v.as_object();
}

const boost::json::array& array_member(const boost::json::object& o, const char* key, const std::string& path) {
  const boost::json::value& v = member(o, key, path, "");
  if (!v.is_array()) throw input_error(path, key, "must be an array");
  return v.as_array();
}

}  // namespace

summary parse_summary(const std::string& text, const std::string& path) {
  boost::system::error_code ec;
  const boost::json::value root = boost::json::parse(text, ec);
  if (ec) throw input_error(path, "", "not valid JSON (" + ec.message() + "): not a modsim report summary");
  const boost::json::object& o = object_of(root, path, "");
  summary s;
  s.schema = string_member(o, "schema", path, "");
  if (s.schema != summary_schema) {
    const std::string family = "modsim-report-summary/";
    throw input_error(path, "schema",
                      s.schema.rfind(family, 0) == 0
                          ? "'" + s.schema + "' cannot be compared by this modsim, which reads " + summary_schema
                          : "'" + s.schema + "' is not a modsim report summary (expected " + summary_schema + ")");
  }
  const boost::json::object& m = object_of(member(o, "modsim", path, ""), path, "modsim");
  s.build.version = string_member(m, "version", path, "modsim.");
  s.build.commit = string_member(m, "commit", path, "modsim.");
  const boost::json::array& inputs = array_member(o, "inputs", path);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string where = fmt::format("inputs[{}].", i);
    const boost::json::object& x = object_of(inputs[i], path, where.substr(0, where.size() - 1));
    s.inputs.push_back({string_member(x, "path", path, where), string_member(x, "sha256", path, where)});
  }
  const boost::json::array& figures = array_member(o, "figures", path);
  for (std::size_t i = 0; i < figures.size(); ++i) {
    const std::string where = fmt::format("figures[{}].", i);
    const boost::json::object& x = object_of(figures[i], path, where.substr(0, where.size() - 1));
    summary_figure f;
    f.key = string_member(x, "key", path, where);
    f.model = string_member(x, "model", path, where);
    f.unit = string_member(x, "unit", path, where);
    const boost::json::value& v = member(x, "value", path, where);
    if (!v.is_number()) throw input_error(path, where + "value", "must be a number");
    f.value = v.to_number<double>();
    const std::string better = string_member(x, "better", path, where);
    if (better != "lower" && better != "higher")
      throw input_error(path, where + "better", "must be \"lower\" or \"higher\", not '" + better + "'");
    f.higher_is_better = better == "higher";
    for (const summary_figure& g : s.figures)
      if (g.key == f.key && g.model == f.model)
        throw input_error(path, where + "key", "'" + f.key + "' of model '" + f.model + "' appears twice");
    s.figures.push_back(std::move(f));
  }
  return s;
}

summary load_summary(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string file = path;
  if (fs::is_directory(path, ec)) {
    file = (fs::path(path) / "summary.json").string();
    if (!fs::exists(file, ec))
      throw input_error(path, "", "a folder without summary.json (not a modsim report folder)");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw input_error(file, "", "cannot open file");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_summary(text, file);
}

}  // namespace modsim::reports
