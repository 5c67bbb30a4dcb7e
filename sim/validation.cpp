// Validation and cross-validation of a calibrated cost model (sim/validation.hpp).
#include "sim/validation.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "sim/calibrate.hpp"
#include "sim/stats.hpp"

namespace modsim::sim {

validation_point validate_sample(const calibration_sample& s, const cost_model& model) {
  const block_prediction b = predict_sample(s, model);
  validation_point p;
  p.sample = s;
  p.predicted_s = b.total_s;
  p.ops_s = b.ops_s;
  p.overhead_s = b.overhead_s;
  p.error_pct = 100.0 * (b.total_s - s.measured_s) / s.measured_s;
  return p;
}

std::vector<validation_point> validate_blocks(const std::vector<calibration_sample>& samples, const cost_model& model) {
  std::vector<validation_point> out;
  for (const auto& s : samples)
    if (s.is_whole()) out.push_back(validate_sample(s, model));
  return out;
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

validation_summary summarize(const std::vector<validation_point>& points) {
  std::vector<double> e;
  for (const auto& p : points) e.push_back(p.error_pct);
  return summarize_errors(e);
}

std::string shape_group_of(const calibration_sample& s) {
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
  return c;
}

cross_validation_result cross_validate(const hardware_spec& hw, const std::vector<calibration_sample>& samples,
                                       int folds, const fit_options& options) {
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
    std::vector<calibration_sample> train, test;
    for (std::size_t i = 0; i < samples.size(); ++i) (fold_of[i] == f ? test : train).push_back(samples[i]);
    if (test.empty()) continue;
    const calibration c = fit_calibration(plain, train, {}, "cross-validation fold " + std::to_string(f + 1), options);
    const cost_model model = with_calibration(plain, c);
    for (const auto& s : test) (s.is_whole() ? out.blocks : out.ops).push_back(validate_sample(s, model));
  }
  return out;
}

namespace {

constexpr std::pair<cv_axis, std::string_view> k_axes[] = {
    {cv_axis::d_model, "d_model"}, {cv_axis::d_ff, "d_ff"},   {cv_axis::n_heads, "n_heads"},
    {cv_axis::seq_len, "seq_len"}, {cv_axis::batch, "batch"}, {cv_axis::capacity, "capacity"},
    {cv_axis::tokens, "tokens"},
};

}  // namespace

std::string_view to_string(cv_axis a) {
  for (const auto& [axis, name] : k_axes)
    if (axis == a) return name;
  return "?";
}

std::optional<cv_axis> find_cv_axis(std::string_view name) {
  for (const auto& [axis, n] : k_axes)
    if (n == name) return axis;
  return std::nullopt;
}

std::string cv_axis_names() {
  std::string out;
  for (const auto& [axis, name] : k_axes) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

double axis_value(const calibration_sample& s, cv_axis a) {
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

value_cv_result cross_validate_by(const hardware_spec& hw, const std::vector<calibration_sample>& samples, cv_axis axis,
                                  const fit_options& options) {
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
    std::vector<calibration_sample> train, test;
    for (std::size_t i = 0; i < samples.size(); ++i) (values[i] == h.value ? test : train).push_back(samples[i]);
    try {
      const calibration c =
          fit_calibration(plain, train, {}, "leave " + std::string(to_string(axis)) + " out", options);
      const cost_model model = with_calibration(plain, c);
      for (const auto& s : test) (s.is_whole() ? h.blocks : h.ops).push_back(validate_sample(s, model));
    } catch (const error& e) {
      h.not_fitted = e.what();
    }
    out.blocks.insert(out.blocks.end(), h.blocks.begin(), h.blocks.end());
    out.ops.insert(out.ops.end(), h.ops.begin(), h.ops.end());
    out.values.push_back(std::move(h));
  }
  return out;
}

}  // namespace modsim::sim
