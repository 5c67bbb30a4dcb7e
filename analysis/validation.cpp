// make_validation, make_cv_validation, the measurements behind a calibration and their cache.
#include "analysis/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "analysis/calibration.hpp"
#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/cost/validation_fields.hpp"

namespace modsim::analysis {
namespace {

// A note when scored rows come from a file the calibration was checked on (--holdout): their
// errors are out of the fit, their bands were set by them. Files match by name.
void note_holdout_rows(validation_section& v, const sim::holdout_summary& h) {
  namespace fs = std::filesystem;
  std::set<std::string> names;
  for (const auto& f : h.files) names.insert(fs::path(f).filename().string());
  std::map<std::string, int> rows;
  for (const auto& p : v.points) {
    const std::string file = p.sample.where.substr(0, p.sample.where.rfind(':'));
    if (names.count(fs::path(file).filename().string())) ++rows[file];
  }
  for (const auto& [file, n] : rows)
    v.notes.push_back(fmt::format(
        "{} row(s) of {} were the calibration's held-out rows (--holdout): never fitted, so their errors are out of "
        "the fit, but the bands inside the measured range were set by them; check the bands on other rows",
        n, file));
}

// Every row of `points` as a sample; `device` takes the first row's device when empty. Throws
// bad_input naming the row for one measured on another backend than `hw` describes.
std::vector<sim::measured_sample> samples_on_backend(const std::vector<sim::measured_sample>& points,
                                                     const sim::hardware_spec& hw, std::string& device) {
  const backend_kind expected_backend = sim::backend_of(hw.kind);
  std::vector<sim::measured_sample> samples;
  samples.reserve(points.size());
  for (const sim::measured_sample& p : points) {
    if (p.backend != expected_backend)
      throw input_error(p.where, "backend",
                        "measured on backend '" + std::string(to_string(p.backend)) + "' but " + hw.name + " is " +
                            sim::to_string(hw.kind) + " hardware");
    if (device.empty()) device = p.device;
    samples.push_back(sim::with_costs(p));
  }
  return samples;
}

}  // namespace

std::map<std::string, sim::validation_summary> summaries_by_op(const std::vector<sim::validation_point>& points,
                                                               bool timing) {
  std::map<std::string, std::vector<double>> errors;
  for (const auto& p : points)
    errors[std::string(to_string(p.sample.op)) +
           (timing && p.sample.timing == timing_mode::in_block ? " (in block)" : "")]
        .push_back(p.error_pct);
  std::map<std::string, sim::validation_summary> out;
  for (const auto& [name, e] : errors) out[name] = sim::summarize_errors(e);
  return out;
}

std::vector<datasheet_comparison_row> compare_with_datasheet(const std::vector<sim::validation_point>& blocks,
                                                             const std::vector<sim::validation_point>& datasheet_blocks,
                                                             const std::vector<sim::validation_point>& ops,
                                                             const std::vector<sim::validation_point>& datasheet_ops) {
  std::vector<datasheet_comparison_row> rows;
  auto add = [&](const std::string& all_name, const std::vector<sim::validation_point>& cal,
                 const std::vector<sim::validation_point>& sheet, bool timing) {
    if (cal.empty()) return;
    rows.push_back({all_name, true, sim::summarize(cal), sim::summarize(sheet)});
    const auto by_cal = summaries_by_op(cal, timing), by_sheet = summaries_by_op(sheet, timing);
    for (const auto& [kind, s] : by_cal) rows.push_back({kind, false, s, by_sheet.at(kind)});
  };
  add("blocks", blocks, datasheet_blocks, false);
  add("ops", ops, datasheet_ops, true);
  return rows;
}

std::string datasheet_verdict(const std::vector<datasheet_comparison_row>& rows) {
  std::string where;
  for (const datasheet_comparison_row& r : rows) {
    if (!r.worse()) continue;
    std::string figures;
    for (const sim::summary_field& f : sim::summary_fields) {
      if (f.value != &sim::validation_summary::median_abs_pct_error &&
          f.value != &sim::validation_summary::p90_abs_pct_error)
        continue;
      figures += fmt::format("{}{} {} vs {}", figures.empty() ? "" : ", ", f.label, sim::format_field(f, r.calibrated),
                             sim::format_field(f, r.datasheet));
    }
    where += fmt::format("{}{} ({}: {})", where.empty() ? "" : "; ", r.all ? "all " + r.kind : r.kind,
                         r.calibrated.points, figures);
  }
  if (where.empty()) return {};
  return "calibration makes predictions worse than the datasheet roofline on the same rows: " + where +
         " (calibrated vs datasheet)";
}

namespace {

// The summary of `held` (points scored on rows held to a machine speed) against the times the
// rows were measured at, found by their FILE:LINE among `measured`: the same predictions.
sim::validation_summary as_measured_summary(std::vector<sim::validation_point> held,
                                            const std::vector<sim::measured_sample>& measured) {
  std::map<std::string, double> raw;
  for (const sim::measured_sample& m : measured) raw[m.where] = m.median_s;
  for (sim::validation_point& p : held)
    if (const auto it = raw.find(p.sample.where); it != raw.end() && it->second > 0) {
      p.sample.median_s = it->second;
      p.error_pct = 100 * (p.predicted_s - it->second) / it->second;
    }
  return sim::summarize(held);
}

// Holds `samples` to their own median anchor (the cross-validations), with a note.
sim::speed_hold hold_to_own_median(std::vector<sim::measured_sample>& samples, std::vector<std::string>& notes) {
  const sim::speed_hold h = sim::hold_machine_speed(samples, sim::median_anchor(samples));
  if (h.any()) notes.push_back("machine speed: " + h.text() + ", their median (--as-measured: as measured)");
  return h;
}

// `v`'s points and op points predicted by the datasheet roofline of `hw` (datasheet_points...).
void score_datasheet(validation_section& v, const sim::hardware_spec& hw) {
  const sim::cost_model sheet(sim::datasheet_of(hw));
  v.datasheet_points = sim::rescore(v.points, sheet);
  v.datasheet_summary = sim::summarize(v.datasheet_points);
  v.datasheet_op_points = sim::rescore(v.op_points, sheet);
  v.datasheet_op_summary = sim::summarize(v.datasheet_op_points);
}

// After scoring: the machine speed the rows were held to (or why not), each point's band, the
// held-out rows' note, and a shift too uniform across shapes to be the model's.
void note_scores(validation_section& v, const std::vector<sim::measured_sample>& measured, const sim::calibration* cal,
                 bool given_anchored, bool rows_anchored, bool hold_speed) {
  if (v.speed.any()) {
    v.as_measured = as_measured_summary(v.points, measured);
    v.notes.push_back(fmt::format(
        "machine speed: {}, the speed the calibration was fitted at; as measured, the blocks are off by median "
        "{:.1f}%, p90 {:.1f}% (--as-measured scores them so)",
        v.speed.text(), v.as_measured->median_abs_pct_error, v.as_measured->p90_abs_pct_error));
  } else if (rows_anchored && cal && !given_anchored && hold_speed) {
    v.notes.push_back(
        "the rows carry the machine's speed (anchor_s) but the calibration records none (fitted "
        "before anchors, or --as-measured): scored as measured");
  }
  // The band a prediction with this calibration prints for each point (none without a
  // cross-validation in the calibration).
  if (cal)
    for (auto& p : v.points) sim::set_band(p, *cal);
  if (cal && cal->holdout) note_holdout_rows(v, *cal->holdout);
  if (cal) {
    std::vector<double> errors;
    for (const auto& p : v.points) errors.push_back(p.error_pct);
    if (const auto shift = sim::uniform_shift(errors)) {
      const bool over = shift->median_pct > 0;
      v.notes.push_back(fmt::format(
          "{} of {} blocks are {}-predicted, by median {:+.1f}%, and scatter around that by median {:.1f}% (p90 "
          "{:.1f}%): a shift this uniform across shapes is more likely the machine running {} than when the "
          "calibration's rows were measured (a shared machine drifts) than the model, which errs by shape; measure "
          "both back to back, or repeat them, to tell the two apart",
          shift->same_sign, shift->points, over ? "over" : "under", shift->median_pct, shift->residual_median_pct,
          shift->residual_p90_pct, over ? "faster" : "slower"));
    }
  }
}

// The notes on what the scoring left out or priced otherwise: blocks the calibration used, dtypes
// without curves or decode fit, rows of another device of the calibration's kind.
void note_what_was_not_scored(validation_section& v, const std::set<std::string>& uncalibrated_dtypes,
                              const std::set<std::string>& uncalibrated_decode,
                              const std::set<std::string>& other_devices, const std::string& calibrated_on) {
  if (v.skipped_blocks > 0)
    v.notes.push_back(fmt::format(
        "{} block rows skipped: the calibration used them for its launch fit (or, training rows, its backward fit; "
        "adamw rows, its optimizer fit)",
        v.skipped_blocks));
  for (const auto& d : uncalibrated_dtypes) v.notes.push_back("no curves for dtype " + d + ": datasheet roofline used");
  for (const auto& d : uncalibrated_decode)
    v.notes.push_back("no decode fit for dtype " + d +
                      ": decode rows predicted with the op curves (fitted on prefill-sized ops) or the roofline");
  for (const auto& d : other_devices)
    v.notes.push_back("measured on '" + d + "', calibrated on '" + calibrated_on +
                      "': the same kind of device with other clocks, driver, threads or libraries");
}

}  // namespace

validation_section make_validation(const std::vector<sim::measured_sample>& measured, const sim::hardware_spec& hw,
                                   const validation_options& options, const std::string& measurements_file) {
  validation_section v;
  v.measurements_file = measurements_file;
  v.hardware = hw.name;
  v.rows = static_cast<int>(measured.size());
  const backend_kind expected_backend = sim::backend_of(hw.kind);
  const std::string hw_label = hw.source_file.empty() ? hw.name : hw.source_file;
  // The calibration `hw` carries, if any: its device decides which rows may be scored.
  std::optional<sim::calibration> given;
  if (!hw.calibration_json.empty()) given = sim::parse_calibration(hw.calibration_json, hw_label);
  // The rows scored: held to the calibration's machine speed where both sides know it.
  std::vector<sim::measured_sample> points = measured;
  const bool rows_anchored = sim::median_anchor(measured) > 0;
  if (options.hold_speed && given && given->anchor_reference_s > 0 && rows_anchored)
    v.speed = sim::hold_machine_speed(points, given->anchor_reference_s, given->anchor_elasticity);

  std::vector<sim::measured_sample> singles, blocks;
  std::set<std::string> other_devices;  // the calibration's GPU model, another driver, clock or library
  for (const sim::measured_sample& p : points) {
    const bool block = sim::scored_whole(p.op);
    const bool same_model = !given || sim::same_machine_kind(p.device, given->device);
    if (!block) {
      if (p.backend != expected_backend || !same_model) continue;
    } else if (p.backend != expected_backend) {
      throw input_error(p.where, "backend",
                        "measured on backend '" + std::string(to_string(p.backend)) + "' but " + hw_label + " is " +
                            sim::to_string(hw.kind) + " hardware");
    } else if (!same_model) {
      throw input_error(
          p.where, "device",
          "measured on '" + p.device + "' but " + hw_label + " was calibrated on '" + given->device + "'");
    }
    if (given && p.device != given->device) other_devices.insert(p.device);
    if (v.device.empty()) v.device = p.device;
    (block ? blocks : singles).push_back(sim::with_costs(p));
  }
  v.single_op_rows = static_cast<int>(singles.size());

  sim::hardware_spec model_hw = hw;
  const bool decode_only =
      !blocks.empty() && std::all_of(blocks.begin(), blocks.end(), [](const auto& b) { return b.is_decode(); });
  if (options.calibrate && !given && !(singles.empty() && decode_only)) {
    // Hold something out: a fit on these rows' single ops has seen every block's own ops, so
    // its blocks would be scored nearly in sample. Cross-validate by shape instead.
    std::vector<sim::measured_sample> own;
    std::set<std::string> shapes;
    for (const sim::measured_sample& p : measured)
      if (p.backend == expected_backend) {
        own.push_back(p);
        shapes.insert(sim::shape_group_of(sim::with_costs(p)));
      }
    if (!blocks.empty() && shapes.size() >= 2) {
      const int folds = static_cast<int>(std::min<std::size_t>(5, shapes.size()));
      validation_section cv = make_cv_validation(own, hw, folds, measurements_file, false, options.hold_speed);
      cv.notes.insert(cv.notes.begin(),
                      fmt::format("{} is not calibrated and no calibration was given, so one is fitted here; to hold "
                                  "something out, the calibration method is cross-validated on {} ({} folds by "
                                  "shape over {} shapes, as `modsim validate --cv {}` does): every row is predicted "
                                  "by a fit on the other folds, which saw neither it nor any row of its shape",
                                  hw.name, measurements_file, folds, shapes.size(), folds));
      return cv;
    }
    if (singles.empty())
      throw input_error(measurements_file, "op", "no single-op rows to calibrate on (block rows only)");
    calibrate_options co;
    co.fit.launch_from_blocks = false;  // the blocks are what we validate on: the fit must not see them
    const sim::calibration cal =
        calibrate_from(hw, singles, {sim::calibration_source{measurements_file, v.rows, 0}}, co).calibration;
    model_hw.calibration_json = sim::calibration_to_json(cal);
    v.notes.push_back(
        fmt::format("calibrated in this run on the {} single-op rows; the {} block rows were not seen by the fit, "
                    "but the op rows of their shapes were (too few shapes to cross-validate)",
                    v.single_op_rows, blocks.size()));
  }
  const sim::cost_model model(model_hw);
  v.cost_label = model.label();
  v.calibrated = model.calibrated();
  if (!model.calibrated()) v.notes.push_back("uncalibrated: the predictions are the datasheet roofline of " + hw.name);

  const sim::calibration* cal = model.calibration();
  std::set<std::string> used;
  if (cal) used.insert(cal->block_keys.begin(), cal->block_keys.end());
  if (cal) used.insert(cal->decode_keys.begin(), cal->decode_keys.end());
  if (cal && cal->backward) used.insert(cal->backward->keys.begin(), cal->backward->keys.end());
  if (cal && cal->optimizer) used.insert(cal->optimizer->keys.begin(), cal->optimizer->keys.end());
  std::set<std::string> uncalibrated_dtypes, uncalibrated_decode;
  std::vector<sim::measured_sample> scored;
  for (auto& b : blocks) {
    if (used.count(b.key)) {
      ++v.skipped_blocks;
      continue;
    }
    if (b.is_decode() && !(cal && cal->decode_for(b.type))) {
      uncalibrated_decode.insert(sim::to_string(b.type));
    } else if (!b.is_decode() && cal && !model.kernel_model_dtype(b.type) &&
               !cal->curve(modsim::op::qkv_proj, b.type) && !cal->curve(modsim::op::mlp_up, b.type))
      uncalibrated_dtypes.insert(sim::to_string(b.type));
    scored.push_back(std::move(b));
  }
  if (options.score_ops) {
    for (const auto& s : singles) {
      v.op_points.push_back(sim::validate_sample(s, model));
      sim::validation_point& p = v.op_points.back();
      if (cal) sim::set_band(p, *cal);
    }
    v.op_summary = sim::summarize(v.op_points);
  }
  note_what_was_not_scored(v, uncalibrated_dtypes, uncalibrated_decode, other_devices, given ? given->device : "");

  if (scored.empty()) {
    if (options.ops_only_fallback && v.skipped_blocks == 0 && !v.op_points.empty()) {
      v.ops_only = true;
      v.points = v.op_points;
      v.summary = v.op_summary;
      score_datasheet(v, hw);
      v.notes.push_back("no block rows: the points are the single-op rows, predicted as the profiler measured them");
      return v;
    }
    if (v.skipped_blocks > 0 && options.cv_when_all_used) {
      validation_section cv =
          make_cv_validation(measured, hw, 5, measurements_file, options.cv_bands, options.hold_speed);
      cv.notes.insert(cv.notes.begin(),
                      fmt::format("all {} block rows were used by the calibration of {}, so none is held out: "
                                  "its method is cross-validated on them instead (5 folds by shape, each fitted "
                                  "anew); validate on other blocks to check the calibration itself",
                                  v.skipped_blocks, hw_label));
      return cv;
    }
    if (v.skipped_blocks > 0)
      throw input_error(measurements_file, "op",
                        fmt::format("all {} block rows were used by the calibration of {}; validate on held-out blocks",
                                    v.skipped_blocks, hw_label));
    throw input_error(measurements_file, "op",
                      fmt::format("no block rows (block_dense, block_mod, layer_mode) among {} rows", v.rows));
  }
  v.points = sim::validate_blocks(scored, model);
  v.summary = sim::summarize(v.points);
  score_datasheet(v, hw);
  note_scores(v, measured, cal, given && given->anchor_reference_s > 0, rows_anchored, options.hold_speed);
  return v;
}

validation_section make_cv_validation(const std::vector<sim::measured_sample>& points, const sim::hardware_spec& hw,
                                      int folds, const std::string& measurements_label, bool bands, bool hold_speed) {
  validation_section v;
  v.measurements_file = measurements_label;
  v.hardware = hw.name;
  v.rows = static_cast<int>(points.size());
  std::vector<sim::measured_sample> samples = samples_on_backend(points, hw, v.device);
  if (hold_speed) v.speed = hold_to_own_median(samples, v.notes);
  for (const auto& s : samples)
    if (!s.is_whole()) ++v.single_op_rows;
  if (!hw.calibration_json.empty())
    v.notes.push_back("the calibration block of " + hw.name + " was ignored: each fold is fitted anew");
  calibrate_options co;
  co.fit_all = false;
  co.folds = folds;
  co.bands = bands;
  const sim::cross_validation_result cv = *calibrate_from(hw, samples, {}, co).cross_validation;
  if (cv.blocks.empty())
    throw input_error(measurements_label, "op", "no block rows (block_dense, block_mod, layer_mode) to validate on");
  v.folds = folds;
  v.groups = cv.groups;
  v.calibrated = true;
  v.points = cv.blocks;
  v.summary = sim::summarize(cv.blocks);
  v.op_points = cv.ops;
  v.op_summary = sim::summarize(cv.ops);
  score_datasheet(v, hw);
  v.cost_label = fmt::format("calibrated ({}-fold cross-validation by shape over {} shapes)", folds, cv.groups);
  v.notes.push_back(fmt::format(
      "each block was predicted by a calibration fitted on the other folds: it saw neither the block nor any op row "
      "of its shape; the {} op rows, predicted the same way, are off by {:.1f}% (median), {:.1f}% at p90",
      v.op_summary.points, v.op_summary.median_abs_pct_error, v.op_summary.p90_abs_pct_error));
  return v;
}

value_cv_section make_value_cv(const std::vector<sim::measured_sample>& points, const sim::hardware_spec& hw,
                               const std::vector<sim::cv_axis>& axes, const std::string& measurements_label, bool bands,
                               bool hold_speed) {
  value_cv_section v;
  v.measurements_file = measurements_label;
  v.hardware = hw.name;
  v.rows = static_cast<int>(points.size());
  std::vector<sim::measured_sample> samples = samples_on_backend(points, hw, v.device);
  if (hold_speed) v.speed = hold_to_own_median(samples, v.notes);
  if (std::none_of(samples.begin(), samples.end(), [](const auto& s) { return s.is_whole(); }))
    throw input_error(measurements_label, "op", "no block rows (block_dense, block_mod, layer_mode) to validate on");
  if (!hw.calibration_json.empty())
    v.notes.push_back("the calibration block of " + hw.name + " was ignored: each held-out value is fitted anew");
  calibrate_options co;
  co.fit_all = false;
  co.leave_out = axes;
  co.bands = bands;
  v.axes = calibrate_from(hw, samples, {}, co).left_out;
  return v;
}

std::vector<std::string> calibration_measurements(const sim::hardware_spec& hw, std::string* why_not) {
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& why) {
    if (why_not) *why_not = why;
    return std::vector<std::string>{};
  };
  std::string json = hw.calibration_json;
  fs::path file = hw.source_file;
  if (json.empty()) {
    if (hw.source_file.empty()) return fail(hw.name + " is not calibrated");
    const fs::path sibling = file.parent_path() / (file.stem().string() + "-calibrated.json");
    std::error_code ec;
    if (!fs::exists(sibling, ec)) return fail(hw.name + " is not calibrated and there is no " + sibling.string());
    const sim::hardware_spec cal = sim::load_hardware(sibling.string());
    json = cal.calibration_json;
    file = sibling;
    if (json.empty()) return fail(sibling.string() + " has no calibration block");
  }
  const sim::calibration c = sim::parse_calibration(json, file.string());
  // A file calibrated in a checkout names its data relative to the checkout
  // (reports/measurements/...): configs/hardware/X.json → the checkout is three levels up.
  const fs::path checkout = file.parent_path().parent_path().parent_path();
  std::vector<std::string> files;
  for (const auto& src : c.sources) {
    std::error_code ec;
    if (fs::exists(src.file, ec)) {
      files.push_back(src.file);
    } else if (fs::exists(checkout / src.file, ec)) {
      files.push_back((checkout / src.file).string());
    } else {
      return fail("the measurements " + src.file + " behind " + file.string() + " are not here");
    }
  }
  if (files.empty()) return fail(file.string() + " names no measurements");
  return files;
}

std::optional<validation_section> validation_for_hardware(const sim::hardware_spec& hw, std::string* why_not) {
  const std::vector<std::string> files = calibration_measurements(hw, why_not);
  if (files.empty()) return std::nullopt;
  const std::vector<sim::measured_sample> points = read_measured_rows(files).points;
  std::string label;
  for (const auto& f : files) label += (label.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();
  if (!hw.calibration_json.empty()) return make_cv_validation(points, hw, 5, label);
  std::vector<sim::measured_sample> blocks;
  for (const auto& p : points)
    if (sim::scored_whole(p.op)) blocks.push_back(p);
  return make_validation(blocks, hw, validation_options{}, label);
}

std::optional<validation_section> cached_validation_for_hardware(const sim::hardware_spec& hw, std::string* why_not) {
  using entry = std::pair<std::optional<validation_section>, std::string>;  // the section, or why not
  static std::mutex mutex;
  // One computation per key: a caller that finds it under way waits for it (the explorer's
  // computation of an edit may reach it while an earlier one still computes it).
  static std::map<std::string, std::shared_future<entry>> cache;
  const std::string key = hw.source_file + "\n" + hw.name + "\n" + hw.calibration_json;
  std::promise<entry> promise;
  std::shared_future<entry> result;
  bool compute = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) {
      result = it->second;
    } else {
      result = promise.get_future().share();
      cache.emplace(key, result);
      compute = true;
    }
  }
  if (compute) {
    try {
      std::string why;
      std::optional<validation_section> v = validation_for_hardware(hw, &why);
      promise.set_value({std::move(v), std::move(why)});
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        cache.erase(key);  // not kept: the next caller tries again
      }
      promise.set_exception(std::current_exception());
    }
  }
  const entry& e = result.get();  // rethrows the computation's error
  if (why_not) *why_not = e.second;
  return e.first;
}

}  // namespace modsim::analysis
