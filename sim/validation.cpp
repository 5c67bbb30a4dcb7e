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

}  // namespace modsim::sim
