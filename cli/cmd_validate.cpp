// `modsim validate --measurements CSV --hardware HW_CAL`: every measured block
// (block_dense, block_mod, layer_mode) predicted from its ops with the calibrated cost model,
// against the measurement. Blocks the calibration itself used are skipped (and counted).
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

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
int verdict(output& o, const sim::validation_summary& sum, std::optional<double> max_error,
            const std::vector<std::string>& notes, output_format format) {
  const bool failed = max_error && sum.median_abs_pct_error > *max_error;
  for (const auto& n : notes) o.tail.push_back("note: " + n);
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
json::object ops_json(const sim::validation_summary& all, const std::map<std::string, std::vector<double>>& by_op) {
  json::object o = summary_json(all);
  json::object per;
  for (const auto& [name, e] : by_op) per[name] = summary_json(sim::summarize_errors(e));
  o["by_op"] = std::move(per);
  return o;
}

int cross_validate(const std::vector<std::string>& files, const std::string& hw_path, int folds,
                   std::optional<double> max_error, output_format format) {
  if (folds < 2) throw input_error("", "--cv", "needs at least 2 folds, got " + std::to_string(folds));
  sim::hardware_spec hw = sim::load_hardware(hw_path);
  const bool had_calibration = !hw.calibration_json.empty();
  hw.calibration_json.clear();
  std::vector<sim::calibration_sample> samples;
  for (const std::string& file : files)
    for (const sim::measured_point& p : profiler::read_measured_points(file)) samples.push_back(sim::sample_of(p));
  std::cerr << fmt::format("modsim validate: {}-fold cross-validation over {} rows ...\n", folds, samples.size());
  const sim::cross_validation_result cv = sim::cross_validate(hw, samples, folds);
  if (cv.blocks.empty())
    throw input_error(files.front(), "op", "no block rows (block_dense, block_mod, layer_mode) to cross-validate");
  const sim::validation_summary sum = sim::summarize(cv.blocks);
  const sim::validation_summary ops = sim::summarize(cv.ops);
  std::map<std::string, std::vector<double>> by_op;
  for (const auto& p : cv.ops)
    by_op[p.sample.op + (p.sample.timing == "in_block" ? " (in block)" : "")].push_back(p.error_pct);
  std::map<std::string, std::vector<double>> by_block;
  for (const auto& p : cv.blocks) by_block[p.sample.op].push_back(p.error_pct);
  const bool failed = max_error && sum.median_abs_pct_error > *max_error;
  std::vector<std::string> notes;
  if (had_calibration)
    notes.push_back("the calibration block of " + hw_path + " was ignored: each fold is fitted anew");

  output o;
  {
    json::object root = summary_json(sum);
    root["folds"] = cv.folds;
    root["shape_groups"] = cv.groups;
    root["cost_model"] =
        "cross-validated calibration of " + hw.name + " (" + std::to_string(folds) + " folds by shape)";
    if (max_error) {
      root["max_error"] = *max_error;
      root["passed"] = !failed;
    }
    json::object bb;
    for (const auto& [name, e] : by_block) bb[name] = summary_json(sim::summarize_errors(e));
    root["by_block"] = std::move(bb);
    root["ops"] = ops_json(ops, by_op);
    json::array pts, opts;
    for (const auto& p : cv.blocks) point_json(pts, p);
    for (const auto& p : cv.ops) point_json(opts, p);
    root["per_point"] = std::move(pts);
    root["per_op_point"] = std::move(opts);
    json::array ns;
    for (const auto& n : notes) ns.emplace_back(n);
    root["notes"] = std::move(ns);
    o.json = std::move(root);
  }
  o.head.push_back(
      fmt::format("{}-fold cross-validation by shape ({} shape groups) on {}", cv.folds, cv.groups, hw.name));
  table t = summary_table("");
  t.rows.push_back(summary_row("blocks (all)", sum));
  for (const auto& [name, e] : by_block) t.rows.push_back(summary_row("  " + name, sim::summarize_errors(e)));
  t.rows.push_back(summary_row("ops (all)", ops));
  for (const auto& [name, e] : by_op) t.rows.push_back(summary_row("  " + name, sim::summarize_errors(e)));
  o.tables.push_back(std::move(t));
  o.tables.push_back(points_table({&cv.blocks, &cv.ops}, false));
  return verdict(o, sum, max_error, notes, format);
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
  const sim::cost_model model(sim::load_hardware(hw_path));
  const sim::calibration* cal = model.calibration();
  const std::set<std::string> used(cal ? cal->block_keys.begin() : std::vector<std::string>::const_iterator{},
                                   cal ? cal->block_keys.end() : std::vector<std::string>::const_iterator{});
  const std::string expected_backend = model.hardware().kind == "gpu" ? "cuda" : "cpu";

  std::vector<sim::calibration_sample> blocks, singles;
  int skipped_used = 0, rows = 0;
  std::set<std::string> uncalibrated_dtypes;
  std::set<std::string> other_devices;  // the calibration's GPU model, another driver, clock or library
  for (const std::string& file : vm["measurements"].as<std::vector<std::string>>()) {
    for (const sim::measured_point& p : profiler::read_measured_points(file)) {
      ++rows;
      if (p.op != "block_dense" && p.op != "block_mod" && p.op != "layer_mode") {
        if (p.backend == expected_backend && (!cal || sim::same_device_model(p.device, cal->device))) {
          singles.push_back(sim::sample_of(p));
          if (cal && p.device != cal->device) other_devices.insert(p.device);
        }
        continue;
      }
      if (p.backend != expected_backend)
        throw input_error(
            p.where, "backend",
            "measured on backend '" + p.backend + "' but " + hw_path + " is " + model.hardware().kind + " hardware");
      if (cal && !sim::same_device_model(p.device, cal->device))
        throw input_error(p.where, "device",
                          "measured on '" + p.device + "' but " + hw_path + " was calibrated on '" + cal->device + "'");
      if (cal && p.device != cal->device) other_devices.insert(p.device);
      if (used.count(p.key)) {
        ++skipped_used;
        continue;
      }
      sim::calibration_sample s = sim::sample_of(p);
      if (cal && !model.kernel_model_dtype(s.type) && !cal->curve("qkv_proj", s.type) && !cal->curve("mlp_up", s.type))
        uncalibrated_dtypes.insert(sim::to_string(s.type));
      blocks.push_back(std::move(s));
    }
  }
  const std::string files_text = [&] {
    std::string t;
    for (const auto& f : vm["measurements"].as<std::vector<std::string>>()) t += (t.empty() ? "" : ", ") + f;
    return t;
  }();
  // Single-op rows are predicted as the profiler measured them (alone, or inside their block).
  std::vector<sim::validation_point> op_points;
  for (const auto& s : singles) op_points.push_back(sim::validate_sample(s, model));
  const bool ops_only = blocks.empty() && !op_points.empty() && skipped_used == 0;
  if (blocks.empty() && !ops_only) {
    if (skipped_used > 0)
      throw input_error(files_text, "op",
                        fmt::format("all {} block rows were used by the calibration of {}; validate on held-out blocks",
                                    skipped_used, hw_path));
    throw input_error(files_text, "op",
                      fmt::format("no block rows (block_dense, block_mod, layer_mode) among {} rows", rows));
  }

  const std::vector<sim::validation_point> points = ops_only ? op_points : sim::validate_blocks(blocks, model);
  const sim::validation_summary sum = sim::summarize(points);
  const sim::validation_summary op_sum = sim::summarize(op_points);
  std::map<std::string, std::vector<double>> by_op;
  for (const auto& p : op_points)
    by_op[p.sample.op + (p.sample.timing == "in_block" ? " (in block)" : "")].push_back(p.error_pct);
  const bool failed = max_error && sum.median_abs_pct_error > *max_error;
  std::vector<std::string> notes;
  if (!model.calibrated()) notes.push_back("uncalibrated: predictions are the datasheet roofline of " + hw_path);
  if (skipped_used > 0)
    notes.push_back(fmt::format("{} block rows skipped: the calibration used them (for the launch fit)", skipped_used));
  for (const auto& d : uncalibrated_dtypes) notes.push_back("no curves for dtype " + d + ": datasheet roofline used");
  for (const auto& d : other_devices)
    notes.push_back("measured on '" + d + "': the calibration's device model, with other clocks, driver or libraries");
  if (ops_only)
    notes.push_back("no block rows: the points are the single-op rows, predicted as the profiler measured them");

  output o;
  {
    json::object root;
    root["points"] = sum.points;
    root["median_abs_pct_error"] = sum.median_abs_pct_error;
    root["p90_abs_pct_error"] = sum.p90_abs_pct_error;
    root["max_abs_pct_error"] = sum.max_abs_pct_error;
    root["mean_pct_error"] = sum.mean_pct_error;
    root["skipped_calibration_rows"] = skipped_used;
    root["cost_model"] = model.label();
    root["calibrated"] = model.calibrated();
    if (max_error) {
      root["max_error"] = *max_error;
      root["passed"] = !failed;
    }
    json::array pts;
    for (const auto& p : points) point_json(pts, p);
    root["per_point"] = std::move(pts);
    root["ops"] = ops_json(op_sum, by_op);
    json::array ns;
    for (const auto& n : notes) ns.emplace_back(n);
    root["notes"] = std::move(ns);
    o.json = std::move(root);
  }
  o.head.push_back(fmt::format("cost model: {}", model.label()));
  table blocks_t;
  blocks_t.columns = {"block", "shape", "measured ms", "predicted ms", "error"};
  blocks_t.left_columns = 2;
  for (const auto& p : points)
    blocks_t.rows.push_back({p.sample.op, shape_text(p.sample), fmt::format("{:.4f}", p.sample.measured_s * 1e3),
                             fmt::format("{:.4f}", p.predicted_s * 1e3), fmt::format("{:+.1f}%", p.error_pct)});
  o.tables.push_back(std::move(blocks_t));
  table all = summary_table("");
  all.rows.push_back(summary_row(ops_only ? "ops" : "blocks", sum));
  if (!op_points.empty()) {
    all.rows.push_back(summary_row("single-op rows (all)", op_sum));
    for (const auto& [name, e] : by_op) all.rows.push_back(summary_row("  " + name, sim::summarize_errors(e)));
  }
  o.tables.push_back(std::move(all));
  o.tables.push_back(points_table({&points}, false));
  return verdict(o, sum, max_error, notes, format);
}

}  // namespace modsim::cli
