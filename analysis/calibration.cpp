// The calibration pipeline (analysis/calibration.hpp): read, sample, fit, cross-validate.
#include "analysis/calibration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "core/error.hpp"
#include "core/op_table.hpp"
#include "sim/cost/measurements.hpp"

namespace modsim::analysis {
namespace {

void say(const calibrate_options& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

// Whether the fit of `c` used sample `s`: a decode row of a dtype with a decode fit; any other
// row under the kernel-sequence model; else a block when blocks fitted the launch cost, a
// single op when its (op, dtype) has a curve.
bool used_by(const sim::calibration& c, const sim::measured_sample& s) {
  if (s.is_decode()) return c.decode_for(s.type) != nullptr;
  if (modsim::is_train(s.op))
    return c.backward && std::binary_search(c.backward->keys.begin(), c.backward->keys.end(), s.key);
  if (modsim::is_optimizer(s.op))
    return c.optimizer && std::binary_search(c.optimizer->keys.begin(), c.optimizer->keys.end(), s.key);
  if (c.kernels) return true;
  return s.is_block() ? c.launch_blocks > 0 : c.curve(s.op, s.type) != nullptr;
}

// Each source's used rows: the used samples whose FILE:LINE names its file; a lone source
// (perhaps one label for several files) counts every used sample.
void count_used_rows(sim::calibration& c, const std::vector<sim::measured_sample>& samples) {
  for (auto& src : c.sources) {
    int used = 0;
    for (const auto& s : samples) {
      if (c.sources.size() > 1 && s.where.rfind(src.file + ":", 0) != 0) continue;
      if (used_by(c, s)) ++used;
    }
    src.used_rows = used;
  }
}

// A fit's holdout figures (backward_fit, optimizer_fit): `rows` of its dtype predicted by
// `model`; nothing without such rows.
template <class Fit>
void check_fit_on(Fit& fit, const std::vector<sim::measured_sample>& rows, const sim::cost_model& model) {
  std::vector<double> errors;
  for (const auto& s : rows)
    if (s.type == fit.type) errors.push_back(sim::validate_sample(s, model).error_pct);
  if (errors.empty()) return;
  const sim::validation_summary v = sim::summarize_errors(errors);
  fit.holdout_rows = v.points;
  fit.holdout_median_abs_pct_error = v.median_abs_pct_error;
  fit.holdout_p90_abs_pct_error = v.p90_abs_pct_error;
}

// Records how calibration `c` of `hw` predicts the held-out rows (calibration::holdout).
// Throws bad_input for a row of another device or backend, or rows without a block.
void check_on_holdout(const sim::hardware_spec& hw, sim::calibration& c, const measured_rows& held) {
  std::vector<sim::measured_sample> samples, train, optimizer;
  std::vector<std::string> files;
  for (const auto& src : held.sources) files.push_back(src.file);
  for (const auto& p : held.points) {
    if (p.backend != c.backend || !sim::same_device_model(p.device, c.device))
      throw error(error_kind::bad_input,
                  fmt::format("{}: --holdout row measured on {} ({}), the calibration on {} ({}): a holdout checks "
                              "the calibration on its own machine",
                              p.where, p.device, to_string(p.backend), c.device, to_string(c.backend)));
    if (p.is_block() || p.is_decode()) samples.push_back(sim::with_costs(p));
    if (modsim::is_train(p.op)) train.push_back(sim::with_costs(p));
    if (modsim::is_optimizer(p.op)) optimizer.push_back(sim::with_costs(p));
  }
  const sim::cost_model model = sim::with_calibration(hw, c);
  // Training rows: the backward fit's own check, adamw rows the optimizer fit's (the forward
  // blocks' summary and bands stay those of the forward rows).
  if (c.backward) check_fit_on(*c.backward, train, model);
  if (c.optimizer) check_fit_on(*c.optimizer, optimizer, model);
  const std::vector<sim::validation_point> points = sim::validate_blocks(samples, model);
  if (points.empty()) {
    // Training or optimizer rows only: checked above, no forward band to set.
    if (!train.empty() || !optimizer.empty()) return;
    throw error(error_kind::bad_input, fmt::format("{}: --holdout holds no block, decode, training or adamw row to "
                                                   "check the calibration on",
                                                   files.front()));
  }
  c.holdout = sim::summarize_holdout(c, points, std::move(files));
}

}  // namespace

measured_rows read_measured_rows(const std::vector<std::string>& files) {
  measured_rows out;
  for (const std::string& file : files) {
    std::vector<sim::measured_sample> p = sim::read_measured_samples(file);
    out.sources.push_back(sim::calibration_source{file, static_cast<int>(p.size()), 0});
    out.points.insert(out.points.end(), std::make_move_iterator(p.begin()), std::make_move_iterator(p.end()));
  }
  return out;
}

calibrated calibrate_from(const sim::hardware_spec& hw, const std::vector<sim::measured_sample>& samples,
                          std::vector<sim::calibration_source> sources, const calibrate_options& options) {
  calibrated out;
  if (options.fit_all) {
    out.calibration = sim::fit_calibration(hw, samples, std::move(sources),
                                           options.date.empty() ? sim::utc_now_iso8601() : options.date, options.fit);
    count_used_rows(out.calibration, samples);
  }
  // The calibration's bands are the forward blocks' and decode rows': its training and adamw rows
  // have their own checks (backward_fit's and optimizer_fit's cv and holdout), so they stay out of the cross-validation
  // and the coverage it records. A cross-validation alone (`modsim validate --cv`) scores them too.
  std::vector<sim::measured_sample> forward;
  if (options.fit_all)
    for (const auto& s : samples)
      if (!modsim::needs_training_state(s.op)) forward.push_back(s);
  const std::vector<sim::measured_sample>& banded = options.fit_all ? forward : samples;
  if (options.folds != 0) {
    say(options, fmt::format("{}-fold cross-validation by shape for the expected error ...", options.folds));
    try {
      out.cross_validation = sim::cross_validate(hw, banded, options.folds, options.fit, options.bands);
      if (options.fit_all) {
        out.calibration.cross_validation = out.cross_validation->summary();
        if (options.coverage) {
          say(options, "leaving one value out along each axis for the bands outside the measured range ...");
          out.calibration.coverage = sim::estimate_coverage(hw, banded, options.fit);
        }
      }
    } catch (const error& e) {
      if (!options.cross_validation_optional) throw;
      // Too few shapes to hold some out: the calibration stands, without an error band.
      out.no_cross_validation = e.what();
    }
  }
  // After the cross-validation, outside its try: a bad holdout row is the user's error, not a
  // band that could not be estimated.
  if (options.fit_all && out.calibration.cross_validation && !options.holdout.points.empty()) {
    say(options, "checking the calibration on the held-out rows ...");
    check_on_holdout(hw, out.calibration, options.holdout);
  }
  for (const sim::cv_axis a : options.leave_out)
    out.left_out.push_back(sim::cross_validate_by(hw, samples, a, options.fit, options.bands));
  return out;
}

calibrated calibrate_from(const sim::hardware_spec& hw, const measured_rows& rows, const calibrate_options& options) {
  std::vector<sim::measured_sample> samples;
  samples.reserve(rows.points.size());
  for (const auto& p : rows.points) samples.push_back(sim::with_costs(p));
  if (!options.hold_speed) return calibrate_from(hw, samples, rows.sources, options);
  sim::speed_hold speed = sim::hold_machine_speed(samples, sim::median_anchor(samples));
  const sim::slow_cut slow = speed.any() ? sim::leave_out_slow_rows(samples, options.slow_limit) : sim::slow_cut{};
  calibrate_options held = options;
  sim::speed_hold holdout_speed = sim::hold_machine_speed(held.holdout.points, speed.reference_s);
  calibrated out = calibrate_from(hw, samples, rows.sources, held);
  if (options.fit_all && speed.any()) {
    out.calibration.anchor_reference_s = speed.reference_s;
    out.calibration.anchor_rows = speed.held;
    out.calibration.anchor_elasticity = speed.elasticity;
    out.calibration.anchor_slow_limit = slow.limit;
    out.calibration.anchor_slow_left_out = slow.left_out;
  }
  out.speed = speed;
  out.holdout_speed = holdout_speed;
  out.slow = slow;
  return out;
}

}  // namespace modsim::analysis
