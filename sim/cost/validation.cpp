// Validation and cross-validation of a calibrated cost model (sim/cost/validation.hpp).
#include "sim/cost/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "sim/cost/calibrate.hpp"
#include "sim/common/stats.hpp"

namespace modsim::sim {

validation_point validate_sample(const measured_sample& s, const cost_model& model) {
  const block_prediction b = predict_sample(s, model);
  validation_point p;
  p.sample = s;
  p.predicted_s = b.total_s;
  p.ops_s = b.ops_s;
  p.overhead_s = b.overhead_s;
  p.error_pct = 100.0 * (b.total_s - s.median_s) / s.median_s;
  p.stand_ins = b.stand_ins;
  return p;
}

std::vector<validation_point> validate_blocks(const std::vector<measured_sample>& samples, const cost_model& model) {
  std::vector<validation_point> out;
  for (const auto& s : samples)
    if (s.is_whole()) out.push_back(validate_sample(s, model));
  return out;
}

hardware_spec datasheet_of(const hardware_spec& hw) {
  hardware_spec plain = hw;
  plain.calibration_json.clear();
  return plain;
}

std::vector<validation_point> rescore(const std::vector<validation_point>& points, const cost_model& model) {
  std::vector<validation_point> out;
  out.reserve(points.size());
  for (const auto& p : points) out.push_back(validate_sample(p.sample, model));
  return out;
}

bool calibration_worse(const validation_summary& calibrated, const validation_summary& datasheet) {
  constexpr double shown = 0.05;  // percentage points: half the last digit printed
  return calibrated.points > 0 && datasheet.points > 0 &&
         (calibrated.median_abs_pct_error > datasheet.median_abs_pct_error + shown ||
          calibrated.p90_abs_pct_error > datasheet.p90_abs_pct_error + shown);
}

validation_summary summarize_errors(const std::vector<double>& error_pct) {
  validation_summary v;
  v.points = static_cast<int>(error_pct.size());
  if (error_pct.empty()) return v;
  std::vector<double> a;
  double sum = 0;
  for (double e : error_pct) {
    a.push_back(std::abs(e));
    sum += e;
  }
  std::sort(a.begin(), a.end());
  v.median_abs_pct_error = percentile_sorted(a, 0.5);
  v.p90_abs_pct_error = percentile_sorted(a, 0.9);
  v.max_abs_pct_error = a.back();
  v.mean_pct_error = sum / double(error_pct.size());
  return v;
}

std::optional<error_shift> uniform_shift(const std::vector<double>& error_pct) {
  if (error_pct.size() < 8) return std::nullopt;
  std::vector<double> e = error_pct;
  std::sort(e.begin(), e.end());
  error_shift s;
  s.points = static_cast<int>(e.size());
  s.median_pct = percentile_sorted(e, 0.5);
  std::vector<double> r;
  for (double x : e) {
    r.push_back(std::abs(x - s.median_pct));
    if ((x > 0 && s.median_pct > 0) || (x < 0 && s.median_pct < 0)) ++s.same_sign;
  }
  std::sort(r.begin(), r.end());
  s.residual_median_pct = percentile_sorted(r, 0.5);
  s.residual_p90_pct = percentile_sorted(r, 0.9);
  const bool uniform = 10 * s.same_sign >= 9 * s.points;
  if (!uniform || std::abs(s.median_pct) < 2.0 || std::abs(s.median_pct) < 2 * s.residual_median_pct)
    return std::nullopt;
  return s;
}

validation_summary summarize(const std::vector<validation_point>& points) {
  std::vector<double> e;
  for (const auto& p : points) e.push_back(p.error_pct);
  return summarize_errors(e);
}

std::string shape_group_of(const measured_sample& s) {
  const op_shape& x = s.shape;
  return "B" + std::to_string(x.batch) + " S" + std::to_string(x.seq_len) + " d" + std::to_string(x.d_model) + " h" +
         std::to_string(x.n_heads) + " kv" + std::to_string(x.n_kv_heads) + " ff" + std::to_string(x.d_ff) + " " +
         to_string(x.mlp);
}

cross_validation_summary cross_validation_result::summary() const {
  cross_validation_summary c;
  c.folds = folds;
  const validation_summary b = summarize(blocks), o = summarize(ops);
  c.blocks = b.points;
  c.median_abs_pct_error = b.median_abs_pct_error;
  c.p90_abs_pct_error = b.p90_abs_pct_error;
  c.max_abs_pct_error = b.max_abs_pct_error;
  c.ops = o.points;
  c.op_median_abs_pct_error = o.median_abs_pct_error;
  c.op_p90_abs_pct_error = o.p90_abs_pct_error;
  c.p90_by_time = p90_terciles(blocks, false);
  c.decode_p90_by_time = p90_terciles(blocks, true);
  return c;
}

std::vector<std::pair<double, double>> p90_terciles(const std::vector<validation_point>& points, bool decode,
                                                    std::size_t min_points) {
  std::vector<const validation_point*> by_time;
  for (const auto& p : points)
    if (p.sample.is_decode() == decode) by_time.push_back(&p);
  std::vector<std::pair<double, double>> out;
  if (by_time.size() < min_points) return out;
  std::sort(by_time.begin(), by_time.end(),
            [](const auto* x, const auto* y) { return x->predicted_s < y->predicted_s; });
  const std::size_t n = by_time.size();
  for (std::size_t t = 0; t < 3; ++t) {
    std::vector<double> e;
    for (std::size_t i = t * n / 3; i < (t + 1) * n / 3; ++i) e.push_back(by_time[i]->error_pct);
    out.emplace_back(by_time[(t + 1) * n / 3 - 1]->predicted_s, summarize_errors(e).p90_abs_pct_error);
  }
  return out;
}

holdout_summary summarize_holdout(const calibration& c, const std::vector<validation_point>& points,
                                  std::vector<std::string> files) {
  holdout_summary h;
  h.files = std::move(files);
  for (const bool decode : {false, true}) {
    std::vector<double> e;
    for (const auto& p : points)
      if (p.sample.is_decode() == decode) e.push_back(p.error_pct);
    const validation_summary v = summarize_errors(e);
    (decode ? h.decode_rows : h.blocks) = v.points;
    (decode ? h.decode_median_abs_pct_error : h.median_abs_pct_error) = v.median_abs_pct_error;
    (decode ? h.decode_p90_abs_pct_error : h.p90_abs_pct_error) = v.p90_abs_pct_error;
    (decode ? h.decode_max_abs_pct_error : h.max_abs_pct_error) = v.max_abs_pct_error;
    (decode ? h.decode_p90_by_time : h.p90_by_time) = p90_terciles(points, decode, k_holdout_tercile_rows);
    // How far from the measured values of its kind a held-out row lay along each axis
    // (inside the range; tokens aside, as in band_for).
    auto& reach = decode ? h.decode_reach : h.reach;
    for (const axis_coverage& a : c.coverage) {
      const std::optional<cv_axis> axis = find_cv_axis(a.axis);
      const std::vector<double>& measured = a.values_of_kind(decode);
      if (!axis || *axis == cv_axis::tokens || measured.empty()) continue;
      double farthest = 0;
      for (const auto& p : points) {
        const double x = axis_value(p.sample, *axis);
        if (p.sample.is_decode() != decode || x <= 0 || x < a.min || x > a.max) continue;
        double d = std::numeric_limits<double>::infinity();
        for (const double m : measured) d = std::min(d, std::abs(std::log2(x / m)));
        farthest = std::max(farthest, d);
      }
      if (farthest > 0) reach.emplace_back(a.axis, farthest);
    }
  }
  return h;
}

namespace {

// Gives calibration `c`, fitted on `train`, the band estimates `modsim calibrate` records (a
// shape cross-validation and the coverage), from `train` alone. A training set too small to
// cross-validate leaves `c` without a band.
void add_bands(calibration& c, const hardware_spec& plain, const std::vector<measured_sample>& train,
               const fit_options& options) {
  std::vector<std::string> groups;
  for (const auto& s : train) groups.push_back(shape_group_of(s));
  std::sort(groups.begin(), groups.end());
  const auto distinct = static_cast<int>(std::unique(groups.begin(), groups.end()) - groups.begin());
  if (distinct < 2) return;
  try {
    c.cross_validation = cross_validate(plain, train, std::min(5, distinct), options).summary();
    c.coverage = estimate_coverage(plain, train, options);
  } catch (const error&) {
    c.cross_validation.reset();
    c.coverage.clear();
  }
}

}  // namespace

void set_band(validation_point& p, const calibration& c) {
  if (const std::optional<error_band> b =
          band_for(c, values_of(p.sample), p.predicted_s, p.sample.is_decode(), p.stand_ins)) {
    p.band_pct = b->p90_pct;
    p.band_where = b->short_text();
  }
}

cross_validation_result cross_validate(const hardware_spec& hw, const std::vector<measured_sample>& samples, int folds,
                                       const fit_options& options, bool bands) {
  if (folds < 2) throw input_error("", "--cv", "needs at least 2 folds, got " + std::to_string(folds));
  std::vector<std::string> groups;
  for (const auto& s : samples) groups.push_back(shape_group_of(s));
  std::vector<std::string> distinct = groups;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (static_cast<int>(distinct.size()) < folds)
    throw input_error("", "--cv",
                      std::to_string(folds) + " folds need at least " + std::to_string(folds) +
                          " shapes; the measurements have " + std::to_string(distinct.size()));
  std::vector<int> fold_of(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i)
    fold_of[i] =
        static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), groups[i]) - distinct.begin()) % folds;
  hardware_spec plain = hw;
  plain.calibration_json.clear();
  cross_validation_result out;
  out.folds = folds;
  out.groups = static_cast<int>(distinct.size());
  for (int f = 0; f < folds; ++f) {
    std::vector<measured_sample> train, test;
    for (std::size_t i = 0; i < samples.size(); ++i) (fold_of[i] == f ? test : train).push_back(samples[i]);
    if (test.empty()) continue;
    calibration c = fit_calibration(plain, train, {}, "cross-validation fold " + std::to_string(f + 1), options);
    const cost_model model = with_calibration(plain, c);
    if (bands) add_bands(c, plain, train, options);
    for (const auto& s : test) {
      validation_point p = validate_sample(s, model);
      if (bands) set_band(p, c);
      (s.is_whole() ? out.blocks : out.ops).push_back(std::move(p));
    }
  }
  return out;
}

double axis_value(const measured_sample& s, cv_axis a) {
  const op_shape& x = s.shape;
  switch (a) {
    case cv_axis::d_model:
      return static_cast<double>(x.d_model);
    case cv_axis::d_ff:
      return static_cast<double>(x.d_ff);
    case cv_axis::n_heads:
      return static_cast<double>(x.n_heads);
    case cv_axis::seq_len:
      return static_cast<double>(x.seq_len);
    case cv_axis::batch:
      return static_cast<double>(x.batch);
    case cv_axis::capacity:
      return s.capacity;
    case cv_axis::tokens:
      return static_cast<double>(x.batch) * static_cast<double>(x.tokens);
  }
  return 0;
}

value_cv_result cross_validate_by(const hardware_spec& hw, const std::vector<measured_sample>& samples, cv_axis axis,
                                  const fit_options& options, bool bands) {
  std::vector<double> values;
  for (const auto& s : samples) values.push_back(axis_value(s, axis));
  std::vector<double> distinct = values;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() < 2)
    throw input_error("", "--cv-by",
                      std::string(to_string(axis)) + " takes " + std::to_string(distinct.size()) +
                          " value(s) in the measurements; leaving one out needs at least 2");
  hardware_spec plain = hw;
  plain.calibration_json.clear();
  value_cv_result out;
  out.axis = axis;
  for (std::size_t v = 0; v < distinct.size(); ++v) {
    held_out_value h;
    h.value = distinct[v];
    h.extrapolated = v == 0 || v + 1 == distinct.size();
    if (h.extrapolated) {
      const double nearest = v == 0 ? distinct[1] : distinct[v - 1];
      h.distance = h.value > 0 && nearest > 0 ? std::abs(std::log2(h.value / nearest)) : 0.0;
    }
    std::vector<measured_sample> train, test;
    for (std::size_t i = 0; i < samples.size(); ++i) (values[i] == h.value ? test : train).push_back(samples[i]);
    try {
      calibration c = fit_calibration(plain, train, {}, "leave " + std::string(to_string(axis)) + " out", options);
      const cost_model model = with_calibration(plain, c);
      if (bands) add_bands(c, plain, train, options);
      for (const auto& s : test) {
        validation_point p = validate_sample(s, model);
        if (bands) set_band(p, c);
        (s.is_whole() ? h.blocks : h.ops).push_back(std::move(p));
      }
    } catch (const error& e) {
      h.not_fitted = e.what();
    }
    out.blocks.insert(out.blocks.end(), h.blocks.begin(), h.blocks.end());
    out.ops.insert(out.ops.end(), h.ops.begin(), h.ops.end());
    out.values.push_back(std::move(h));
  }
  return out;
}

std::vector<axis_coverage> estimate_coverage(const hardware_spec& hw, const std::vector<measured_sample>& samples,
                                             const fit_options& options) {
  std::vector<axis_coverage> out;
  if (samples.empty()) return out;
  hardware_spec plain = hw;
  plain.calibration_json.clear();
  for (const cv_axis axis : k_cv_axes) {
    axis_coverage c;
    c.axis = std::string(to_string(axis));
    c.min = c.max = axis_value(samples.front(), axis);
    std::vector<double> with_blocks;  // the values that carry block rows (forward or decode)
    for (const auto& s : samples) {
      const double v = axis_value(s, axis);
      c.min = std::min(c.min, v);
      c.max = std::max(c.max, v);
      if (!s.is_whole()) continue;
      with_blocks.push_back(v);
      (s.is_decode() ? c.decode_values : c.values).push_back(v);
    }
    for (std::vector<double>* v : {&with_blocks, &c.values, &c.decode_values}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    c.decode_values_recorded = true;
    // Every value that carries blocks, predicted by a fit on the rest, which must still hold
    // blocks at two values at least: the lowest and the highest are extrapolations (the ends),
    // the others interpolations (inner): at most k_inner of them, spread evenly (each costs a
    // fit, and a fit inside every fold of validate's bands), none along tokens (whose inner
    // figures no band uses). Three values at least: leaving an end out of two leaves a fit that
    // saw one value along the axis and so cannot tell how the time changes along it; its misses
    // are not those of a calibration that measured two values and extrapolates past them (on
    // the EPYC VM such ends missed by 15-25 % at p90, short blocks by up to 38 %, where blocks
    // 2.7x past two measured widths missed by 6-9 %). Such an axis records no extrapolation, as
    // one with a single value.
    if (with_blocks.size() >= 3) {
      constexpr std::size_t k_inner = 3;
      std::vector<std::size_t> held_out = {0, with_blocks.size() - 1};
      const std::size_t inner_values = with_blocks.size() - 2;
      if (axis != cv_axis::tokens && inner_values > 0) {
        const std::size_t take = std::min(k_inner, inner_values);
        for (std::size_t i = 0; i < take; ++i) held_out.push_back(1 + (2 * i + 1) * inner_values / (2 * take));
      }
      std::vector<double> ends, decode_ends, inner, decode_inner;
      std::vector<validation_point> end_points, inner_points;  // the forward blocks, for their terciles
      for (const std::size_t h : held_out) {
        const double held = with_blocks[h];
        const bool end = h == 0 || h + 1 == with_blocks.size();
        std::vector<measured_sample> train, test;
        for (const auto& s : samples) (axis_value(s, axis) == held ? test : train).push_back(s);
        try {
          const calibration fit = fit_calibration(plain, train, {}, "coverage " + c.axis, options);
          const cost_model model = with_calibration(plain, fit);
          for (const auto& s : test) {
            if (!s.is_whole()) continue;
            std::vector<double>& into =
                end ? (s.is_decode() ? decode_ends : ends) : (s.is_decode() ? decode_inner : inner);
            validation_point p = validate_sample(s, model);
            into.push_back(p.error_pct);
            if (!s.is_decode()) (end ? end_points : inner_points).push_back(std::move(p));
          }
        } catch (const error&) {
          continue;  // no fit without it: nothing measured at this value
        }
        const double nearest = h == 0 ? with_blocks[1] : with_blocks[h - 1];
        if (end && held > 0 && nearest > 0)
          c.max_distance = std::max(c.max_distance, std::abs(std::log2(held / nearest)));
      }
      const auto set = [](const std::vector<double>& e, int& blocks, double& p90) {
        const validation_summary v = summarize_errors(e);
        blocks = v.points;
        p90 = v.p90_abs_pct_error;
      };
      set(ends, c.blocks, c.p90_abs_pct_error);
      set(decode_ends, c.decode_rows, c.decode_p90_abs_pct_error);
      set(inner, c.inner_blocks, c.inner_p90_abs_pct_error);
      set(decode_inner, c.decode_inner_blocks, c.decode_inner_p90_abs_pct_error);
      c.p90_by_time = p90_terciles(end_points, false);
      c.inner_p90_by_time = p90_terciles(inner_points, false);
    }
    out.push_back(std::move(c));
  }
  return out;
}

axis_values values_of(const measured_sample& s) {
  axis_values v;
  for (const cv_axis axis : k_cv_axes) v.emplace_back(axis, axis_value(s, axis));
  return v;
}

std::string error_band::text() const {
  const auto pct = [](double x) { return x < 10 ? fmt::format("{:.1f} %", x) : fmt::format("{:.0f} %", x); };
  std::string mid;
  for (const outside_axis& o : between)
    mid += (mid.empty() ? "" : ", ") + fmt::format("{} {:g} ({:g}–{:g}{})", o.axis, o.value, o.min, o.max,
                                                   o.measured ? "" : "; no interpolation measured along it");
  // Where the inside band came from, when the calibration was checked on held-out rows.
  std::string held = holdout_blocks > 0 ? fmt::format("; {} held-out blocks", holdout_blocks) : "";
  // Ops timed with a stand-in's curve: what each added, or that no check covers it.
  for (const stand_in& x : stand_ins)
    held += x.checked_on.empty() ? fmt::format("; {} timed as {}, never checked (not covered)", x.op, x.as)
                                 : fmt::format("; {} timed as {} +{:.1f} %{}", x.op, x.as, x.share * x.p90_pct,
                                               x.checked_on == x.op ? "" : ", checked on " + x.checked_on);
  // GPU shape axes at an unmeasured value: the leave-one-value-out figure the band took.
  for (const auto* axes : {&outside, &between})
    for (const outside_axis& o : *axes)
      if (!o.shape_lovo_axis.empty())
        held += fmt::format(
            "; {} {:g} was never measured: on a GPU a new tile/wave shape; band from leaving each measured {} out{}: "
            "{}",
            o.axis, o.value, o.shape_lovo_axis, o.shape_lovo_axis == o.axis ? "" : " (none along " + o.axis + ")",
            pct(o.shape_lovo_pct));
  if (inside()) {
    if (mid.empty()) return "±" + pct(p90_pct) + " at p90 (inside the calibration's measured range" + held + ")";
    return "±" + pct(p90_pct) + " at p90 (inside the measured range, between measured values: " + mid + held + ")";
  }
  std::string where;
  for (const outside_axis& o : outside) {
    where += where.empty() ? "" : ", ";
    where += fmt::format("{} {:g} {} {:g} (×{:.3g}{})", o.axis, o.value, o.value > o.max ? ">" : "<",
                         o.value > o.max ? o.max : o.min, std::exp2(o.distance),
                         o.measured ? "" : "; no extrapolation along it was measured");
  }
  return "±" + pct(p90_pct) + " at p90 (outside the measured range: " + where +
         (mid.empty() ? "" : "; between measured values: " + mid) + held + ")";
}

std::string error_band::short_text() const {
  const std::string pct = p90_pct < 10 ? fmt::format("{:.1f} %", p90_pct) : fmt::format("{:.0f} %", p90_pct);
  std::string mid;
  for (const outside_axis& o : between) mid += (mid.empty() ? "" : ", ") + o.axis;
  if (inside() && mid.empty()) return "±" + pct + " p90, inside the measured range";
  if (inside()) return "±" + pct + " p90, between measured values (" + mid + ")";
  std::string where;
  for (const outside_axis& o : outside)
    where += (where.empty() ? "" : ", ") + fmt::format("{} ×{:.3g}", o.axis, std::exp2(o.distance));
  return "±" + pct + " p90, outside the measured range (" + where + ")";
}

std::optional<error_band> band_for(const calibration& c, const axis_values& values, double predicted_s, bool decode,
                                   const std::vector<stand_in_use>& stand_ins) {
  if (!c.cross_validation) return std::nullopt;
  const cross_validation_summary& cv = *c.cross_validation;
  // At the measured values: the held-out rows' p90 (of blocks, or of decode rows for a decode
  // prediction) predicted to take about as long, where the calibration was checked on some of
  // this kind; else the shape cross-validation's.
  const holdout_summary* held = c.holdout && c.holdout->count(decode) > 0 ? &*c.holdout : nullptr;
  const double inside = held              ? held->p90_at(predicted_s, decode)
                        : predicted_s > 0 ? cv.p90_at(predicted_s, decode)
                                          : cv.p90_abs_pct_error;
  const double near = std::log2(1.01);  // within 1 % counts as at a value (capacities such as 1/8 print rounded)
  error_band b;
  b.p90_pct = inside;
  b.holdout_blocks = held ? held->count(decode) : 0;
  // The held-out predictions of this prediction's kind: a decode prediction takes the decode
  // rows' where the calibration held some out; a forward block those of held-out blocks
  // predicted to take about as long, where the calibration recorded their terciles.
  const auto of_kind = [&](const axis_coverage& kinds) {
    axis_coverage a = kinds;
    if (decode && kinds.decode_rows > 0) {
      a.blocks = kinds.decode_rows;
      a.p90_abs_pct_error = kinds.decode_p90_abs_pct_error;
      a.inner_blocks = kinds.decode_inner_blocks;
      a.inner_p90_abs_pct_error = kinds.decode_inner_p90_abs_pct_error;
    } else if (!decode) {
      a.p90_abs_pct_error = kinds.ends_p90_at(predicted_s);
      a.inner_p90_abs_pct_error = kinds.inner_p90_at(predicted_s);
    }
    return a;
  };
  // On a GPU, the shape axes (width, FFN size, heads): a value at none of the measured ones is
  // a new tile/wave shape. Each axis's leave-one-value-out p90 (inner values held out, else
  // the ends; 0: none measured), and the widest of them, for an axis without its own.
  const bool gpu = c.backend == backend_kind::cuda;
  const auto is_shape = [](cv_axis x) { return x == cv_axis::d_model || x == cv_axis::d_ff || x == cv_axis::n_heads; };
  const auto lovo_of = [](const axis_coverage& a) {
    return a.inner_blocks > 0 ? a.inner_p90_abs_pct_error : a.blocks > 0 ? a.p90_abs_pct_error : 0.0;
  };
  std::string widest_axis;
  double widest_lovo = 0;
  if (gpu)
    for (const axis_coverage& kinds : c.coverage)
      if (const std::optional<cv_axis> x = find_cv_axis(kinds.axis); x && is_shape(*x))
        if (const double l = lovo_of(of_kind(kinds)); l > widest_lovo) widest_lovo = l, widest_axis = kinds.axis;
  // Raises `o`'s band to the leave-one-value-out p90 of its axis (else the widest) and names it.
  const auto new_shape = [&](error_band::outside_axis& o, const axis_coverage& a) {
    const double own = lovo_of(a);
    o.shape_lovo_axis = own > 0 ? a.axis : widest_axis;
    o.shape_lovo_pct = own > 0 ? own : widest_lovo;
    o.band_pct = std::max(o.band_pct, o.shape_lovo_pct);
  };
  for (const axis_coverage& kinds : c.coverage) {
    const std::optional<cv_axis> axis = find_cv_axis(kinds.axis);
    if (!axis || kinds.min <= 0) continue;
    const axis_coverage a = of_kind(kinds);
    const bool gpu_shape = gpu && is_shape(*axis);
    // The farthest of the prediction's values outside the range along this axis, and the
    // farthest from a measured value among those inside it.
    error_band::outside_axis out, mid;
    for (const auto& [ax, v] : values) {
      if (ax != *axis || v <= 0) continue;
      const double d = v > a.max ? std::log2(v / a.max) : v < a.min ? std::log2(a.min / v) : 0.0;
      if (d > near) {
        if (d > out.distance) out = {a.axis, v, a.min, a.max, d, 0.0, a.blocks > 0, {}, 0.0};
        continue;
      }
      // Fewer than two measured values; and tokens (batch × the tokens per sequence a row
      // processes) lies between measured products whenever batch or seq_len does, whose own
      // held-out predictions speak for it.
      const std::vector<double>& measured = a.values_of_kind(decode);
      if (gpu_shape && measured.size() == 1 && std::abs(std::log2(v / measured[0])) > near) {
        // One value measured: no interpolation along it, but on a GPU still a new shape.
        const double to_value = std::abs(std::log2(v / measured[0]));
        if (to_value > mid.distance) mid = {a.axis, v, a.min, a.max, to_value, 0.0, false, {}, 0.0};
        continue;
      }
      if (measured.size() < 2 || *axis == cv_axis::tokens) continue;
      // The distance to the nearest value of the prediction's kind (past the last of them, the
      // range's end, which other rows set, is named as the bound but is no measured value).
      const auto hi = std::lower_bound(measured.begin(), measured.end(), v);
      const bool has_above = hi != measured.end(), has_below = hi != measured.begin();
      const double above = has_above ? *hi : a.max, below = has_below ? *(hi - 1) : a.min;
      const double inf = std::numeric_limits<double>::infinity();
      const double to_value = std::min(has_above ? std::log2(above / v) : inf, has_below ? std::log2(v / below) : inf);
      if (to_value > near && to_value > mid.distance) mid = {a.axis, v, below, above, to_value, 0.0, true, {}, 0.0};
    }
    if (!out.axis.empty()) {
      // The held-out ends lay `reach` past the rest and missed by their p90: nearer the range,
      // the band goes from the inside one (at its edge) to theirs in proportion to the
      // distance; farther, theirs stretched by it.
      const double reach = a.max_distance > 0 ? a.max_distance : 1.0;
      const double ends = a.p90_abs_pct_error;
      out.band_pct = a.blocks == 0           ? inside * std::max(1.0, out.distance)
                     : out.distance >= reach ? std::max(inside, ends * out.distance / reach)
                                             : std::max(inside, inside + (ends - inside) * out.distance / reach);
      if (gpu_shape) new_shape(out, a);
      b.p90_pct = std::max(b.p90_pct, out.band_pct);
      b.outside.push_back(std::move(out));
    } else if (!mid.axis.empty()) {
      // No farther from a measured value than the calibration's held-out rows lay: theirs (the
      // inside band). Else the held-out inner values' p90 where the axis has some; else the
      // ends' (an extrapolation misses by more than an interpolation: the wider band); else
      // (two values: neither measured) the inside band, and the text says no interpolation
      // was measured along the axis.
      const bool within_reach = held && mid.distance <= held->reach_along(a.axis, decode) + near;
      if (mid.measured) mid.measured = within_reach || a.inner_blocks > 0;
      mid.band_pct = within_reach         ? inside
                     : a.inner_blocks > 0 ? std::max(inside, a.inner_p90_abs_pct_error)
                     : a.blocks > 0       ? std::max(inside, a.p90_abs_pct_error)
                                          : inside;
      if (gpu_shape) new_shape(mid, a);
      b.p90_pct = std::max(b.p90_pct, mid.band_pct);
      b.between.push_back(std::move(mid));
    }
  }
  // Ops timed with a stand-in's curve: the share of the time each takes, missed by as much as
  // the check of that stand-in missed at p90, on top of the band of the rest.
  for (const stand_in_use& u : stand_ins) {
    error_band::stand_in s{std::string(to_string(u.op)), std::string(to_string(u.as)), "", u.share, 0.0};
    if (const stand_in_check* x = c.stand_in_check_for(u.op, u.as)) {
      s.checked_on = to_string(x->op);
      s.p90_pct = x->p90_abs_pct_error;
      b.stand_in_pct += u.share * x->p90_abs_pct_error;
    }
    b.stand_ins.push_back(std::move(s));
  }
  b.p90_pct += b.stand_in_pct;
  return b;
}

}  // namespace modsim::sim
