// `modsim validate --measurements CSV --hardware HW_CAL`: every measured block
// (block_dense, block_mod, layer_mode) predicted from its ops with the calibrated cost model,
// against the measurement. Blocks the calibration itself used are skipped (and counted).
#include <fmt/format.h>

#include <boost/json.hpp>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "analysis/validation.hpp"
#include "profiler/measurements.hpp"
#include "sim/calibrate.hpp"
#include "cli/common.hpp"
#include "cli/printer.hpp"
#include "sim/config.hpp"
#include "sim/cost.hpp"
#include "core/error.hpp"

namespace modsim::cli {
namespace {

namespace json = boost::json;

const char* const k_usage =
    "usage: modsim validate --measurements CSV [CSV...] --hardware HW_CAL [--max-error PCT] [--format "
    "table|json|csv|markdown]\n"
    "       modsim validate --measurements CSV [CSV...] --hardware HW --cv K [--max-error PCT] [--format ...]\n"
    "\n"
    "--cv K cross-validates instead: the rows are grouped by shape (a block and every op row of\n"
    "its shape in one group), the groups dealt into K folds, and each fold's blocks and ops are\n"
    "predicted by a calibration fitted on the other folds only (from HW's datasheet numbers; a\n"
    "calibration block in HW is ignored). Per-op errors are printed beside the block errors.\n"
    "\n"
    "Predicts every measured block (block_dense, block_mod, layer_mode rows) from its ops with the\n"
    "cost model of HW_CAL (a hardware file calibrated by `modsim calibrate`; an uncalibrated one\n"
    "validates the datasheet roofline) and compares with the measured median. Errors are in\n"
    "percent of the measurement. Block rows the calibration used are skipped. Exit code 1 when\n"
    "the median absolute error exceeds --max-error.";

std::string shape_text(const sim::calibration_sample& s) {
  std::string t = fmt::format("B{} S{} d{} h{} ff{}", s.shape.batch, s.shape.seq_len, s.shape.d_model, s.shape.n_heads,
                              s.shape.d_ff);
  if (s.op != "block_dense") t += fmt::format(" c{:g}", s.capacity);
  return t;
}

void point_json(json::array& out, const sim::validation_point& p) {
  json::object o;
  o["op"] = p.sample.op;
  o["dtype"] = sim::to_string(p.sample.type);
  o["batch"] = p.sample.shape.batch;
  o["seq_len"] = p.sample.shape.seq_len;
  o["d_model"] = p.sample.shape.d_model;
  o["n_heads"] = p.sample.shape.n_heads;
  o["d_ff"] = p.sample.shape.d_ff;
  o["capacity"] = p.sample.capacity;
  o["timing"] = p.sample.timing;
  o["measured_s"] = p.sample.measured_s;
  o["predicted_s"] = p.predicted_s;
  o["overhead_s"] = p.overhead_s;
  o["error_pct"] = p.error_pct;
  o["row"] = p.sample.where;
  out.push_back(std::move(o));
}

json::object summary_json(const sim::validation_summary& s) {
  json::object o;
  o["points"] = s.points;
  o["median_abs_pct_error"] = s.median_abs_pct_error;
  o["p90_abs_pct_error"] = s.p90_abs_pct_error;
  o["max_abs_pct_error"] = s.max_abs_pct_error;
  o["mean_pct_error"] = s.mean_pct_error;
  return o;
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

// One row of a summary table: points, median, p90, max |error|, mean signed error.
std::vector<cell> summary_row(const std::string& name, const sim::validation_summary& v) {
  return {name,
          integer(v.points),
          number(v.median_abs_pct_error, "{:.1f}%"),
          number(v.p90_abs_pct_error, "{:.1f}%"),
          number(v.max_abs_pct_error, "{:.1f}%"),
          number(v.mean_pct_error, "{:+.1f}%")};
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
      t.rows.push_back(
          {p.sample.op, p.sample.timing, sim::to_string(p.sample.type), integer(p.sample.shape.batch),
           integer(p.sample.shape.seq_len), integer(p.sample.shape.d_model), integer(p.sample.shape.n_heads),
           integer(p.sample.shape.d_ff), number(p.sample.capacity, "{:g}"), number(p.sample.measured_s, "{:.9g}"),
           number(p.predicted_s, "{:.9g}"), number(p.overhead_s, "{:.9g}"), number(p.error_pct, "{:.4f}")});
  return t;
}

table summary_table(const std::string& title) {
  table t;
  t.title = title;
  t.columns = {"rows", "points", "median |e|", "p90 |e|", "max |e|", "mean e"};
  return t;
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
  for (const auto& p : v.points) point_json(pts, p);
  root["per_point"] = std::move(pts);
  root["ops"] = ops_json(v);
  root["notes"] = notes_json(v);
  return root;
}

// Every row of every file, and the files' names joined for messages.
std::vector<sim::measured_point> read_all(const std::vector<std::string>& files, std::string& label) {
  std::vector<sim::measured_point> points;
  for (const std::string& file : files) {
    std::vector<sim::measured_point> p = profiler::read_measured_points(file);
    points.insert(points.end(), std::make_move_iterator(p.begin()), std::make_move_iterator(p.end()));
    label += (label.empty() ? "" : ", ") + file;
  }
  return points;
}

int cross_validate(const std::vector<std::string>& files, const std::string& hw_path, int folds,
                   std::optional<double> max_error, output_format format) {
  if (folds < 2) throw input_error("", "--cv", "needs at least 2 folds, got " + std::to_string(folds));
  const sim::hardware_spec hw = sim::load_hardware(hw_path);
  std::string label;
  const std::vector<sim::measured_point> points = read_all(files, label);
  std::cerr << fmt::format("modsim validate: {}-fold cross-validation over {} rows ...\n", folds, points.size());
  const analysis::validation_section v = analysis::make_cv_validation(points, hw, folds, label);

  output o;
  {
    json::object root = validation_json(v, max_error);
    root["folds"] = v.folds;
    root["shape_groups"] = v.groups;
    json::object bb;
    for (const auto& [name, sum] : analysis::summaries_by_op(v.points, false)) bb[name] = summary_json(sum);
    root["by_block"] = std::move(bb);
    json::array opts;
    for (const auto& p : v.op_points) point_json(opts, p);
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
  o.tables.push_back(points_table({&v.points, &v.op_points}, false));
  return verdict(o, v, max_error, format);
}

}  // namespace

int cmd_validate(const std::vector<std::string>& args) {
  po::options_description options("modsim validate options");
  options.add_options()("measurements", po::value<std::vector<std::string>>()->multitoken()->required(),
                        "measurements CSV file(s) with block rows")("hardware", po::value<std::string>()->required(),
                                                                    "calibrated hardware JSON")(
      "max-error", po::value<double>(), "exit 1 when the median absolute error (percent) exceeds this")(
      "cv", po::value<int>(), "K-fold cross-validation grouped by shape (K >= 2)")(
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

  const std::string hw_path = resolve_config(vm["hardware"].as<std::string>(), "hardware");
  if (vm.count("cv"))
    return cross_validate(vm["measurements"].as<std::vector<std::string>>(), hw_path, vm["cv"].as<int>(), max_error,
                          format);
  std::string label;
  const std::vector<sim::measured_point> points = read_all(vm["measurements"].as<std::vector<std::string>>(), label);
  analysis::validation_options vo;
  vo.score_ops = true;
  vo.ops_only_fallback = true;
  const analysis::validation_section v = analysis::make_validation(points, sim::load_hardware(hw_path), vo, label);

  output o;
  {
    json::object root = validation_json(v, max_error);
    root["skipped_calibration_rows"] = v.skipped_blocks;
    root["calibrated"] = v.calibrated;
    o.json = std::move(root);
  }
  o.head.push_back(fmt::format("cost model: {}", v.cost_label));
  table blocks_t;
  blocks_t.columns = {"block", "shape", "measured ms", "predicted ms", "error"};
  blocks_t.left_columns = 2;
  for (const auto& p : v.points)
    blocks_t.rows.push_back({p.sample.op, shape_text(p.sample), fmt::format("{:.4f}", p.sample.measured_s * 1e3),
                             fmt::format("{:.4f}", p.predicted_s * 1e3), fmt::format("{:+.1f}%", p.error_pct)});
  o.tables.push_back(std::move(blocks_t));
  table all = summary_table("");
  all.rows.push_back(summary_row(v.ops_only ? "ops" : "blocks", v.summary));
  if (!v.op_points.empty()) {
    all.rows.push_back(summary_row("single-op rows (all)", v.op_summary));
    for (const auto& [name, sum] : analysis::summaries_by_op(v.op_points, true))
      all.rows.push_back(summary_row("  " + name, sum));
  }
  o.tables.push_back(std::move(all));
  o.tables.push_back(points_table({&v.points}, false));
  return verdict(o, v, max_error, format);
}

}  // namespace modsim::cli
