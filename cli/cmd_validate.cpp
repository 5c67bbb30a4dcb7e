// `modsim validate --measurements CSV --hardware HW_CAL`: every measured block
// (block_dense, block_mod, layer_mode) predicted from its ops with the calibrated cost model,
// against the measurement. Blocks the calibration itself used are skipped (and counted).
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "analysis/validation.hpp"
#include "analysis/calibration.hpp"
#include "sim/cost/calibrate.hpp"
#include "cli/common.hpp"
#include "cli/printer.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/cost/repeatability.hpp"
#include "sim/cost/validation.hpp"
#include "sim/cost/validation_fields.hpp"
#include "core/error.hpp"

namespace modsim::cli {
namespace {

namespace json = boost::json;

const char* const k_usage =
    "usage: modsim validate --measurements CSV [CSV...] --hardware HW_CAL [--max-error PCT] [--format "
    "table|json|csv|markdown]\n"
    "       modsim validate --measurements CSV [CSV...] --hardware HW --cv K [--max-error PCT] [--format ...]\n"
    "       modsim validate --measurements CSV [CSV...] --hardware HW --cv-by AXIS [--cv-by AXIS...] [--max-error "
    "PCT]\n"
    "\n"
    "--cv K cross-validates instead: the rows are grouped by shape (a block and every op row of\n"
    "its shape in one group), the groups dealt into K folds, and each fold's blocks and ops are\n"
    "predicted by a calibration fitted on the other folds only (from HW's datasheet numbers; a\n"
    "calibration block in HW is ignored). Per-op errors are printed beside the block errors.\n"
    "\n"
    "--cv-by AXIS leaves one value out along AXIS (d_model, d_ff, n_heads, seq_len, batch,\n"
    "capacity, tokens = batch x tokens per sequence; repeat or separate with commas): for each\n"
    "value, every row with that value (blocks and ops) is predicted by a calibration fitted on\n"
    "the other values' rows only. Values below or above all the others are extrapolations\n"
    "(\"outside\", with how far in factors of two); the rest interpolations (\"inside\").\n"
    "\n"
    "Every scored point carries band_pct, the p90 band the calibration that predicted it prints\n"
    "for it (for --cv and --cv-by, each fold's calibration is itself cross-validated on its\n"
    "training rows for that: --no-bands skips it), and the output says how often |error| stayed\n"
    "within its band and how wide the bands were against the errors.\n"
    "\n"
    "Predicts every measured block (block_dense, block_mod, layer_mode rows) from its ops with the\n"
    "cost model of HW_CAL (a hardware file calibrated by `modsim calibrate`; an uncalibrated one\n"
    "validates the datasheet roofline) and compares with the measured median. Errors are in\n"
    "percent of the measurement. Block rows the calibration used are skipped. Exit code 1 when\n"
    "the median absolute error exceeds --max-error.\n"
    "Training rows (block_dense_train, block_mod_train: one layer's forward + backward) are scored\n"
    "as blocks, each predicted as `predict --mode train` prices a layer (forward + backward +\n"
    "recomputation + launches; the backward fitted where the calibration fitted it on training\n"
    "rows, else the rule); the training rows that fit used are skipped. adamw rows (one AdamW step over\n"
    "a layer's parameters) are scored as the optimizer step predict --mode train prices (the calibration's\n"
    "fitted rate, else the datasheet roofline); those its optimizer fit used are skipped.\n"
    "\n"
    "Every run also scores the datasheet roofline (HW without its calibration block) on the same\n"
    "rows, per kind of row beside the calibrated figures, and says in one line where calibration\n"
    "made predictions worse (its median or p90 |error| above the datasheet's).\n\n"
    "A block measured more than once (the same row in one file or several, same device) is scored\n"
    "each time, and the output says how far its measurements differ from each other (JSON\n"
    "repeatability: median, p90 and max |difference| of the pairs): the floor under any error.\n"
    "It compares the rows as they were scored: held to one machine speed (below) when the errors\n"
    "are, so that two runs at different speeds differ only by what the scores still carry.";

std::string shape_text(const sim::measured_sample& s) {
  // An AdamW step depends on the layer's parameters alone (not the batch or the sequence).
  if (s.op == modsim::op::adamw)
    return fmt::format("d{} h{} kv{} ff{} {}: {:.1f} M parameters", s.shape.d_model, s.shape.n_heads,
                       s.shape.n_kv_heads, s.shape.d_ff, modsim::to_string(s.shape.mlp),
                       double(s.cost.other_flops / sim::k_adamw_flops_per_param) / 1e6);
  std::string t = fmt::format("B{} S{} d{} h{} ff{}", s.shape.batch, s.shape.seq_len, s.shape.d_model, s.shape.n_heads,
                              s.shape.d_ff);
  if (s.op != modsim::op::block_dense && s.op != modsim::op::block_dense_train) t += fmt::format(" c{:g}", s.capacity);
  if (modsim::is_train(s.op) && s.recompute != modsim::recompute::none)
    t += fmt::format(" {}", modsim::to_string(s.recompute));
  return t;
}

void point_json(json::array& out, const sim::validation_point& p, const sim::validation_point* datasheet = nullptr) {
  json::object o;
  o["op"] = modsim::to_string(p.sample.op);
  o["dtype"] = sim::to_string(p.sample.type);
  o["batch"] = p.sample.shape.batch;
  o["seq_len"] = p.sample.shape.seq_len;
  o["d_model"] = p.sample.shape.d_model;
  o["n_heads"] = p.sample.shape.n_heads;
  o["d_ff"] = p.sample.shape.d_ff;
  o["capacity"] = p.sample.capacity;
  o["timing"] = modsim::to_string(p.sample.timing);
  // Training rows: what the forward kept for the backward (none, selective, full).
  if (modsim::is_train(p.sample.op)) o["recompute"] = modsim::to_string(p.sample.recompute);
  o["measured_s"] = p.sample.median_s;
  o["predicted_s"] = p.predicted_s;
  o["overhead_s"] = p.overhead_s;
  o["error_pct"] = p.error_pct;
  // Always present (contract): null where the model that predicted the row prints no band (an
  // uncalibrated or never cross-validated model, or --no-bands).
  if (p.band_pct)
    o["band_pct"] = *p.band_pct;
  else
    o["band_pct"] = nullptr;
  if (!p.band_where.empty()) o["band_where"] = p.band_where;
  o["row"] = p.sample.where;
  if (datasheet) {
    o["datasheet_predicted_s"] = datasheet->predicted_s;
    o["datasheet_error_pct"] = datasheet->error_pct;
  }
  out.push_back(std::move(o));
}

json::object summary_json(const sim::validation_summary& s) {
  json::object o;
  o["points"] = s.points;
  for (const sim::summary_field& f : sim::summary_fields) o[f.key] = s.*f.value;
  return o;
}

// How the bands of the points (validation_point::band_pct) held: the share of points whose
// |error| is within their band, and the median band against the median |error|. Nullopt when
// no point has a band.
struct band_check {
  int points = 0;
  double covered_pct = 0;
  double median_band_pct = 0;
  double median_abs_error_pct = 0;
};
std::optional<band_check> check_bands(const std::vector<const sim::validation_point*>& points) {
  std::vector<double> bands, errors;
  int covered = 0;
  for (const auto* p : points) {
    if (!p->band_pct) continue;
    bands.push_back(*p->band_pct);
    errors.push_back(std::abs(p->error_pct));
    if (std::abs(p->error_pct) <= *p->band_pct) ++covered;
  }
  if (bands.empty()) return std::nullopt;
  band_check b;
  b.points = static_cast<int>(bands.size());
  b.covered_pct = 100.0 * covered / b.points;
  b.median_band_pct = sim::summarize_errors(bands).median_abs_pct_error;
  b.median_abs_error_pct = sim::summarize_errors(errors).median_abs_pct_error;
  return b;
}

std::optional<band_check> check_bands(const std::vector<sim::validation_point>& points) {
  std::vector<const sim::validation_point*> ptrs;
  for (const auto& p : points) ptrs.push_back(&p);
  return check_bands(ptrs);
}

json::value band_json(const std::optional<band_check>& b) {
  if (!b) return nullptr;
  json::object o;
  o["points"] = b->points;
  o["covered_pct"] = b->covered_pct;
  o["median_band_pct"] = b->median_band_pct;
  o["median_abs_pct_error"] = b->median_abs_error_pct;
  return o;
}

std::string band_line(const std::optional<band_check>& b) {
  if (!b) return "error bands: none (the calibration was not cross-validated, or --no-bands)";
  return fmt::format(
      "error bands: |error| within the printed p90 band for {:.0f}% of {} blocks; median band {:.1f}%, {:.1f}x the "
      "median |error| ({:.1f}%)",
      b->covered_pct, b->points, b->median_band_pct,
      b->median_abs_error_pct > 0 ? b->median_band_pct / b->median_abs_error_pct : 0.0, b->median_abs_error_pct);
}

// Repeat measurements among the rows (sim::repeatability_of): JSON null without any.
json::value repeatability_json(const std::optional<sim::repeatability>& r, bool held) {
  if (!r) return nullptr;
  json::object o;
  o["held_to_machine_speed"] = held;
  o["blocks"] = r->blocks;
  o["pairs"] = r->pairs;
  o["median_abs_pct_diff"] = r->median_abs_pct_diff;
  o["p90_abs_pct_diff"] = r->p90_abs_pct_diff;
  o["max_abs_pct_diff"] = r->max_abs_pct_diff;
  return o;
}

std::string repeatability_line(const sim::repeatability& r, bool held) {
  return fmt::format(
      "repeat measurements{}: {} block(s) measured more than once differ by median {:.1f}%, p90 {:.1f}%, max {:.1f}% "
      "({} pairs, in % of each pair's mean): errors and bands at that level are this machine's run-to-run spread, not "
      "the model's",
      held ? " (held to one machine speed, as scored)" : "", r.blocks, r.median_abs_pct_diff, r.p90_abs_pct_diff,
      r.max_abs_pct_diff, r.pairs);
}

// The notes and the --max-error verdict under the tables, the output printed, the verdict on
// stderr, the exit code.
bool fails(const analysis::validation_section& v, std::optional<double> max_error) {
  return max_error && v.summary.median_abs_pct_error > *max_error;
}

int verdict(output& o, const analysis::validation_section& v, std::optional<double> max_error, output_format format) {
  const sim::validation_summary& sum = v.summary;
  const bool failed = fails(v, max_error);
  for (const auto& n : v.notes) o.tail.push_back("note: " + n);
  if (max_error)
    o.tail.push_back(fmt::format("{}: median |error| {:.2f}% {} --max-error {:g}%", failed ? "FAILED" : "passed",
                                 sum.median_abs_pct_error, failed ? ">" : "<=", *max_error));
  print(o, format, std::cout);
  if (failed)
    std::cerr << fmt::format("modsim validate: median absolute error {:.2f}% exceeds --max-error {:g}%\n",
                             sum.median_abs_pct_error, *max_error);
  return failed ? exit_check_failed : exit_ok;
}

// A summary's figures as cells (sim::summary_fields), "-" for each when it has no point.
std::vector<cell> summary_cells(const sim::validation_summary& v) {
  std::vector<cell> out;
  for (const sim::summary_field& f : sim::summary_fields)
    out.push_back(v.points > 0 ? number(v.*f.value, f.format) : cell{"-"});
  return out;
}

// The summary fields' column headers after `leading` columns.
std::vector<std::string> summary_columns(std::vector<std::string> leading) {
  for (const sim::summary_field& f : sim::summary_fields) leading.push_back(f.label);
  return leading;
}

// One row of a summary table: its name, the points and the summary's figures.
std::vector<cell> summary_row(const std::string& name, const sim::validation_summary& v) {
  std::vector<cell> row = {name, integer(v.points)};
  for (cell& c : summary_cells(v)) row.push_back(std::move(c));
  return row;
}

// Measured against predicted, one row per point (the CSV).
table points_table(const std::vector<const std::vector<sim::validation_point>*>& lists, bool people) {
  table t;
  t.columns = {"op",   "timing",   "dtype",      "batch",       "seq_len",    "d_model",  "n_heads",
               "d_ff", "capacity", "measured_s", "predicted_s", "overhead_s", "error_pct"};
  t.people = people;
  t.csv = true;
  for (const auto* list : lists)
    for (const auto& p : *list)
      t.rows.push_back({std::string(modsim::to_string(p.sample.op)), modsim::to_string(p.sample.timing),
                        sim::to_string(p.sample.type), integer(p.sample.shape.batch), integer(p.sample.shape.seq_len),
                        integer(p.sample.shape.d_model), integer(p.sample.shape.n_heads), integer(p.sample.shape.d_ff),
                        number(p.sample.capacity, "{:g}"), number(p.sample.median_s, "{:.9g}"),
                        number(p.predicted_s, "{:.9g}"), number(p.overhead_s, "{:.9g}"),
                        number(p.error_pct, "{:.4f}")});
  return t;
}

table summary_table(const std::string& title) {
  table t;
  t.title = title;
  t.columns = summary_columns({"rows", "points"});
  return t;
}

// The calibrated model and the datasheet roofline on the same rows (parallel lists), per kind
// of row: root["datasheet"] (and root["by_block"] when absent), a table when the model scored
// is calibrated, and the line naming where calibration made predictions worse.
void datasheet_comparison(output& o, json::object& root, bool calibrated,
                          const std::vector<sim::validation_point>& blocks,
                          const std::vector<sim::validation_point>& datasheet_blocks,
                          const std::vector<sim::validation_point>& ops,
                          const std::vector<sim::validation_point>& datasheet_ops) {
  const std::vector<analysis::datasheet_comparison_row> rows =
      analysis::compare_with_datasheet(blocks, datasheet_blocks, ops, datasheet_ops);
  json::object ds = summary_json(sim::summarize(blocks.empty() ? datasheet_ops : datasheet_blocks));
  json::object by_block, by_block_cal, ops_json, by_op;
  json::array worse;
  for (const auto& r : rows) {
    if (r.worse()) worse.emplace_back(r.all ? "all " + r.kind : r.kind);
    if (r.all && r.kind == "ops") {
      json::object s = summary_json(r.datasheet);
      for (auto& kv : s) ops_json[kv.key()] = kv.value();
    } else if (!r.all) {
      const bool is_block = std::any_of(blocks.begin(), blocks.end(), [&](const sim::validation_point& p) {
        return modsim::to_string(p.sample.op) == r.kind;
      });
      if (is_block) {
        by_block[r.kind] = summary_json(r.datasheet);
        by_block_cal[r.kind] = summary_json(r.calibrated);
      } else {
        by_op[r.kind] = summary_json(r.datasheet);
      }
    }
  }
  ds["by_block"] = std::move(by_block);
  ops_json["by_op"] = std::move(by_op);
  ds["ops"] = std::move(ops_json);
  ds["calibration_worse"] = std::move(worse);
  root["datasheet"] = std::move(ds);
  if (!root.contains("by_block")) root["by_block"] = std::move(by_block_cal);
  if (!calibrated || rows.empty()) return;
  table t;
  t.title = "calibrated vs datasheet roofline (the hardware without its calibration block), same rows";
  t.columns = {"rows", "points"};
  for (const sim::summary_field& f : sim::summary_fields) t.columns.push_back(f.label + std::string(" cal. / sheet"));
  for (const auto& r : rows) {
    std::vector<cell> row = {r.all ? r.kind + " (all)" : "  " + r.kind, integer(r.calibrated.points)};
    for (const sim::summary_field& f : sim::summary_fields)
      row.push_back(sim::format_field(f, r.calibrated) + " / " + sim::format_field(f, r.datasheet));
    t.rows.push_back(std::move(row));
  }
  o.tables.push_back(std::move(t));
  if (const std::string line = analysis::datasheet_verdict(rows); !line.empty()) o.tail.push_back(line);
}

// The single-op rows' statistics, all together and per op.
json::object ops_json(const analysis::validation_section& v) {
  json::object o = summary_json(v.op_summary);
  json::object per;
  for (const auto& [name, sum] : analysis::summaries_by_op(v.op_points, true)) per[name] = summary_json(sum);
  o["by_op"] = std::move(per);
  return o;
}

json::array notes_json(const analysis::validation_section& v) {
  json::array ns;
  for (const auto& n : v.notes) ns.emplace_back(n);
  return ns;
}

// How the rows were held to one machine speed (sim/cost/machine_speed.hpp), and the blocks' errors
// as measured where those were scored too.
json::object speed_json(const sim::speed_hold& h, const std::optional<sim::validation_summary>& as_measured) {
  json::object o{{"reference_s", h.reference_s},   {"rows_held", h.held},      {"rows_without", h.without},
                 {"median_ratio", h.median_ratio}, {"p10_ratio", h.p10_ratio}, {"p90_ratio", h.p90_ratio},
                 {"max_ratio", h.max_ratio}};
  if (as_measured) o["as_measured"] = summary_json(*as_measured);
  return o;
}

// The fields both paths print: the summary, the cost model, the --max-error verdict, the scored
// points, the single-op rows' statistics and the notes.
json::object validation_json(const analysis::validation_section& v, std::optional<double> max_error) {
  json::object root = summary_json(v.summary);
  root["cost_model"] = v.cost_label;
  if (max_error) {
    root["max_error"] = *max_error;
    root["passed"] = !fails(v, max_error);
  }
  json::array pts;
  for (std::size_t i = 0; i < v.points.size(); ++i)
    point_json(pts, v.points[i], i < v.datasheet_points.size() ? &v.datasheet_points[i] : nullptr);
  root["per_point"] = std::move(pts);
  root["band"] = band_json(check_bands(v.points));
  root["ops"] = ops_json(v);
  root["notes"] = notes_json(v);
  if (v.speed.any()) root["machine_speed"] = speed_json(v.speed, v.as_measured);
  return root;
}

// Every row of every file, and the files' names joined for messages.
std::vector<sim::measured_sample> read_all(const std::vector<std::string>& files, std::string& label) {
  for (const std::string& file : files) label += (label.empty() ? "" : ", ") + file;
  return analysis::read_measured_rows(files).points;
}

int cross_validate(const std::vector<std::string>& files, const std::string& hw_path, int folds,
                   std::optional<double> max_error, output_format format, bool bands, bool hold_speed) {
  if (folds < 2) throw input_error("", "--cv", "needs at least 2 folds, got " + std::to_string(folds));
  const sim::hardware_spec hw = sim::load_hardware(hw_path);
  std::string label;
  const std::vector<sim::measured_sample> points = read_all(files, label);
  std::cerr << fmt::format("modsim validate: {}-fold cross-validation over {} rows ...\n", folds, points.size());
  const analysis::validation_section v = analysis::make_cv_validation(points, hw, folds, label, bands, hold_speed);

  output o;
  {
    json::object root = validation_json(v, max_error);
    root["folds"] = v.folds;
    root["shape_groups"] = v.groups;
    json::object bb;
    for (const auto& [name, sum] : analysis::summaries_by_op(v.points, false)) bb[name] = summary_json(sum);
    root["by_block"] = std::move(bb);
    json::array opts;
    for (std::size_t i = 0; i < v.op_points.size(); ++i)
      point_json(opts, v.op_points[i], i < v.datasheet_op_points.size() ? &v.datasheet_op_points[i] : nullptr);
    root["per_op_point"] = std::move(opts);
    o.json = std::move(root);
  }
  o.head.push_back(
      fmt::format("{}-fold cross-validation by shape ({} shape groups) on {}", v.folds, v.groups, hw.name));
  table t = summary_table("");
  t.rows.push_back(summary_row("blocks (all)", v.summary));
  for (const auto& [name, sum] : analysis::summaries_by_op(v.points, false))
    t.rows.push_back(summary_row("  " + name, sum));
  t.rows.push_back(summary_row("ops (all)", v.op_summary));
  for (const auto& [name, sum] : analysis::summaries_by_op(v.op_points, true))
    t.rows.push_back(summary_row("  " + name, sum));
  o.tables.push_back(std::move(t));
  datasheet_comparison(o, o.json.as_object(), true, v.points, v.datasheet_points, v.op_points, v.datasheet_op_points);
  o.tables.push_back(points_table({&v.points, &v.op_points}, false));
  o.tail.push_back(band_line(check_bands(v.points)) + " (each fold's band from its own training rows)");
  return verdict(o, v, max_error, format);
}

// "outside ×2" / "inside": where a held-out value lies against the values the fit saw.
std::string placement(const sim::held_out_value& h) {
  return h.extrapolated ? fmt::format("outside x{:.3g}", std::exp2(h.distance)) : std::string("inside");
}

int cross_validate_by(const std::vector<std::string>& files, const std::string& hw_path,
                      const std::vector<sim::cv_axis>& axes, std::optional<double> max_error, output_format format,
                      bool bands, bool hold_speed) {
  const sim::hardware_spec hw = sim::load_hardware(hw_path);
  std::string label;
  const std::vector<sim::measured_sample> points = read_all(files, label);
  std::cerr << fmt::format("modsim validate: leaving one value out along {} axis(es) over {} rows ...\n", axes.size(),
                           points.size());
  const analysis::value_cv_section cv = analysis::make_value_cv(points, hw, axes, label, bands, hold_speed);
  // The datasheet roofline needs no fit: it predicts the same held-out rows as they are.
  const sim::cost_model sheet(sim::datasheet_of(hw));

  // The pooled blocks decide --max-error and the top-level summary.
  analysis::validation_section pooled;
  for (const auto& a : cv.axes) pooled.points.insert(pooled.points.end(), a.blocks.begin(), a.blocks.end());
  pooled.summary = sim::summarize(pooled.points);
  pooled.notes = cv.notes;

  output o;
  json::object root = summary_json(pooled.summary);
  root["cost_model"] = "calibrated (leave one value out)";
  if (max_error) {
    root["max_error"] = *max_error;
    root["passed"] = !fails(pooled, max_error);
  }
  json::array pts;
  json::object by_axis;
  for (const sim::value_cv_result& a : cv.axes) {
    const std::string axis(sim::to_string(a.axis));
    std::vector<sim::validation_point> inside, outside;
    json::array values;
    table t = summary_table(axis + " left out, one value at a time");
    t.columns = summary_columns({"value", "where", "blocks"});
    t.columns.push_back(std::string("ops ") + sim::summary_fields[0].label);
    t.left_columns = 2;
    for (const sim::held_out_value& h : a.values) {
      (h.extrapolated ? outside : inside)
          .insert((h.extrapolated ? outside : inside).end(), h.blocks.begin(), h.blocks.end());
      const sim::validation_summary b = sim::summarize(h.blocks), op = sim::summarize(h.ops);
      json::object jv;
      jv["value"] = h.value;
      jv["extrapolated"] = h.extrapolated;
      jv["distance_log2"] = h.distance;
      jv["blocks"] = summary_json(b);
      jv["ops"] = summary_json(op);
      if (!h.not_fitted.empty()) jv["not_fitted"] = h.not_fitted;
      values.push_back(std::move(jv));
      if (!h.not_fitted.empty()) {
        o.tail.push_back(fmt::format("note: {} = {:g}: no calibration could be fitted without it ({})", axis, h.value,
                                     h.not_fitted));
        continue;
      }
      std::vector<cell> row = {fmt::format("{:g}", h.value), placement(h), integer(b.points)};
      for (cell& c : summary_cells(b)) row.push_back(std::move(c));
      row.push_back(summary_cells(op).front());
      t.rows.push_back(std::move(row));
      for (const auto& p : h.blocks) {
        point_json(pts, p);
        pts.back().as_object()["held_out"] = fmt::format("{}={:g}", axis, h.value);
      }
    }
    const sim::validation_summary all = sim::summarize(a.blocks), in = sim::summarize(inside),
                                  out = sim::summarize(outside), ops = sim::summarize(a.ops);
    auto total = [&](const std::string& name, const sim::validation_summary& v) {
      std::vector<cell> row = {name, "", integer(v.points)};
      for (cell& c : summary_cells(v)) row.push_back(std::move(c));
      row.push_back("");
      t.rows.push_back(std::move(row));
    };
    total("inside", in);
    total("outside", out);
    total("all", all);
    o.tables.push_back(std::move(t));
    json::object ja = summary_json(all);
    ja["inside"] = summary_json(in);
    ja["outside"] = summary_json(out);
    ja["ops"] = summary_json(ops);
    {
      json::object ds = summary_json(sim::summarize(sim::rescore(a.blocks, sheet)));
      ds["ops"] = summary_json(sim::summarize(sim::rescore(a.ops, sheet)));
      ja["datasheet"] = std::move(ds);
    }
    ja["values"] = std::move(values);
    const std::optional<band_check> bc = check_bands(a.blocks);
    ja["band"] = band_json(bc);
    o.tail.push_back(axis + ": " + band_line(bc));
    by_axis[axis] = std::move(ja);
  }
  o.tail.push_back("all axes: " + band_line(check_bands(pooled.points)) +
                   " (each held-out value's band from its fit's own training rows)");
  root["per_point"] = std::move(pts);
  root["cv_by"] = std::move(by_axis);
  root["notes"] = notes_json(pooled);
  if (cv.speed.any()) root["machine_speed"] = speed_json(cv.speed, std::nullopt);
  o.json = std::move(root);
  {
    std::vector<sim::validation_point> pooled_ops;
    for (const auto& a : cv.axes) pooled_ops.insert(pooled_ops.end(), a.ops.begin(), a.ops.end());
    datasheet_comparison(o, o.json.as_object(), true, pooled.points, sim::rescore(pooled.points, sheet), pooled_ops,
                         sim::rescore(pooled_ops, sheet));
  }
  o.head.push_back(
      fmt::format("leave one value out on {} ({} rows): each value predicted by a calibration fitted "
                  "without it, from the datasheet numbers",
                  hw.name, cv.rows));
  return verdict(o, pooled, max_error, format);
}

}  // namespace

int cmd_validate(const std::vector<std::string>& args) {
  po::options_description options("modsim validate options");
  options.add_options()("measurements", po::value<std::vector<std::string>>()->multitoken()->required(),
                        "measurements CSV file(s) with block rows")("hardware", po::value<std::string>()->required(),
                                                                    "calibrated hardware JSON")(
      "max-error", po::value<double>(), "exit 1 when the median absolute error (percent) exceeds this")(
      "cv", po::value<int>(), "K-fold cross-validation grouped by shape (K >= 2)")(
      "cv-by", po::value<std::vector<std::string>>()->composing(),
      "leave one value out along an axis (d_model, d_ff, n_heads, seq_len, batch, capacity, tokens)")(
      "as-measured", po::bool_switch(),
      "score rows as they were measured; by default rows that carry the machine's speed (anchor_s, recorded by "
      "`modsim profile`) are first held to the speed the calibration was fitted at (--cv, --cv-by: to their "
      "median), so that a machine that ran slower or faster than then does not read as the model's error")(
      "no-bands", po::bool_switch(),
      "cross-validating (--cv, --cv-by, or a calibration on its own rows): skip each fold's own band estimate")(
      "format", po::value<std::string>()->default_value("table"), "table | json | csv | markdown");
  po::positional_options_description positional;
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;
  const output_format format = parse_format(vm["format"].as<std::string>());
  std::optional<double> max_error;
  if (vm.count("max-error")) {
    max_error = vm["max-error"].as<double>();
    if (!(*max_error >= 0)) throw input_error("", "--max-error", "must be >= 0");
  }

  const std::string hw_path = sim::resolve_config(vm["hardware"].as<std::string>(), "hardware");
  if (vm.count("cv-by")) {
    if (vm.count("cv")) throw input_error("", "--cv-by", "is a run of its own: give --cv or --cv-by, not both");
    std::vector<sim::cv_axis> axes;
    for (const std::string& arg : vm["cv-by"].as<std::vector<std::string>>()) {
      for (const std::string& name : comma_list(arg, "--cv-by")) {
        const std::optional<sim::cv_axis> a = sim::find_cv_axis(name);
        if (!a) throw input_error("", "--cv-by", "unknown axis '" + name + "' (one of " + sim::cv_axis_names() + ")");
        if (std::find(axes.begin(), axes.end(), *a) == axes.end()) axes.push_back(*a);
      }
    }
    return cross_validate_by(vm["measurements"].as<std::vector<std::string>>(), hw_path, axes, max_error, format,
                             !vm["no-bands"].as<bool>(), !vm["as-measured"].as<bool>());
  }
  if (vm.count("cv"))
    return cross_validate(vm["measurements"].as<std::vector<std::string>>(), hw_path, vm["cv"].as<int>(), max_error,
                          format, !vm["no-bands"].as<bool>(), !vm["as-measured"].as<bool>());
  std::string label;
  const std::vector<sim::measured_sample> points = read_all(vm["measurements"].as<std::vector<std::string>>(), label);
  analysis::validation_options vo;
  vo.score_ops = true;
  vo.ops_only_fallback = true;
  vo.cv_when_all_used = true;
  vo.cv_bands = !vm["no-bands"].as<bool>();
  vo.hold_speed = !vm["as-measured"].as<bool>();
  const analysis::validation_section v = analysis::make_validation(points, sim::load_hardware(hw_path), vo, label);
  // Over the rows as scored: held to one machine speed when the errors are, so that the floor
  // it gives is on the errors' footing (raw, two runs at different machine speeds differ by
  // that speed too, which the scores no longer carry).
  std::vector<sim::measured_sample> scored;
  for (const sim::validation_point& p : v.points) scored.push_back(p.sample);
  const std::optional<sim::repeatability> repeats = sim::repeatability_of(scored);

  output o;
  {
    json::object root = validation_json(v, max_error);
    root["skipped_calibration_rows"] = v.skipped_blocks;
    root["calibrated"] = v.calibrated;
    root["repeatability"] = repeatability_json(repeats, v.speed.any());
    o.json = std::move(root);
  }
  o.head.push_back(fmt::format("cost model: {}", v.cost_label));
  table blocks_t;
  blocks_t.columns = {"block", "shape", "measured ms", "predicted ms", "error", "band"};
  blocks_t.left_columns = 2;
  for (const auto& p : v.points)
    blocks_t.rows.push_back({std::string(modsim::to_string(p.sample.op)), shape_text(p.sample),
                             fmt::format("{:.4f}", p.sample.median_s * 1e3), fmt::format("{:.4f}", p.predicted_s * 1e3),
                             fmt::format("{:+.1f}%", p.error_pct),
                             p.band_pct ? fmt::format("±{:.1f}%", *p.band_pct) : std::string("-")});
  o.tables.push_back(std::move(blocks_t));
  if (!v.ops_only) o.tail.push_back(band_line(check_bands(v.points)));
  if (repeats) o.tail.push_back(repeatability_line(*repeats, v.speed.any()));
  table all = summary_table("");
  all.rows.push_back(summary_row(v.ops_only ? "ops" : "blocks", v.summary));
  if (!v.op_points.empty()) {
    all.rows.push_back(summary_row("single-op rows (all)", v.op_summary));
    for (const auto& [name, sum] : analysis::summaries_by_op(v.op_points, true))
      all.rows.push_back(summary_row("  " + name, sum));
  }
  o.tables.push_back(std::move(all));
  datasheet_comparison(
      o, o.json.as_object(), v.calibrated, v.ops_only ? std::vector<sim::validation_point>{} : v.points,
      v.ops_only ? std::vector<sim::validation_point>{} : v.datasheet_points, v.op_points, v.datasheet_op_points);
  o.tables.push_back(points_table({&v.points}, false));
  return verdict(o, v, max_error, format);
}

}  // namespace modsim::cli
