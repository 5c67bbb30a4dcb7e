// Fitting one efficiency curve to an op's measured rows (sim/cost/efficiency_fit.hpp).
#include "sim/cost/efficiency_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>

#include "core/error.hpp"
#include "sim/common/least_squares.hpp"
#include "sim/common/stats.hpp"

namespace modsim::sim {

efficiency_curve fit_curve(modsim::op op, dtype type, const std::vector<double>& roofline_s,
                           const std::vector<double>& measured_s, const fit_options& options,
                           const std::vector<double>& quantised_s) {
  if (roofline_s.empty() || roofline_s.size() != measured_s.size() ||
      (!quantised_s.empty() && quantised_s.size() != roofline_s.size()))
    throw input_error("", std::string(to_string(op)),
                      "fit_curve needs as many roofline as measured times, at least one");
  const std::size_t n = roofline_s.size();
  const std::vector<double>& q = quantised_s.empty() ? roofline_s : quantised_s;
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!(roofline_s[i] > 0) || !(measured_s[i] > 0))
      throw input_error("", std::string(to_string(op)), "fit_curve needs positive roofline and measured times");
    x[i] = std::log10(roofline_s[i]);
  }
  // Knots at quantiles of the distinct x (closer than 0.02 decades count as one).
  std::vector<double> xs = x;
  std::sort(xs.begin(), xs.end());
  std::vector<double> distinct;
  for (double v : xs)
    if (distinct.empty() || v - distinct.back() > 0.02) distinct.push_back(v);
  const int k = std::max(1, std::min<int>(options.max_knots, static_cast<int>(distinct.size() + 1) / 2));
  std::vector<double> knots;
  if (k == 1) {
    knots.push_back(distinct.front());
  } else {
    for (int j = 0; j < k; ++j) {
      const double v = value_at_rank(xs, double(j) * double(xs.size() - 1) / double(k - 1));
      if (knots.empty() || v - knots.back() > 0.02) knots.push_back(v);
    }
    if (knots.back() < xs.back() - 1e-12) knots.back() = xs.back();
  }
  const std::size_t K = knots.size();

  std::vector<double> ratio(n);
  for (std::size_t i = 0; i < n; ++i) ratio[i] = measured_s[i] / q[i];
  const double g_ref = median(ratio);
  double t_min = measured_s.front();
  for (double t : measured_s) t_min = std::min(t_min, t);

  std::vector<double> weight(n, 1.0);
  std::vector<double> theta;
  for (int iter = 0; iter <= options.huber_iterations; ++iter) {
    matrix A;
    std::vector<double> b;
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<double> row(K + 1, 0.0);
      const double w = weight[i] / measured_s[i];
      row[0] = w;
      const std::vector<double> phi = hats(knots, x[i]);
      for (std::size_t j = 0; j < K; ++j) row[j + 1] = w * q[i] * phi[j];
      A.push_back(std::move(row));
      b.push_back(weight[i]);
    }
    // Smoothness: second differences of g (per unit of log-work spacing).
    for (std::size_t j = 1; j + 1 < K; ++j) {
      std::vector<double> row(K + 1, 0.0);
      const double h1 = knots[j] - knots[j - 1], h2 = knots[j + 1] - knots[j];
      // s · ((g[j+1] − g[j])/h2 − (g[j] − g[j−1])/h1) · (h1 + h2)/2, relative to g_ref.
      const double s = options.smoothing * std::sqrt(double(n)) / g_ref * 0.5 * (h1 + h2);
      row[j] = s / h1;  // column 0 is fixed_s, g_j is column j + 1
      row[j + 1] = -s * (1 / h1 + 1 / h2);
      row[j + 2] = s / h2;
      A.push_back(std::move(row));
      b.push_back(0.0);
    }
    // A tiny ridge on fixed_s keeps it determined when all shapes are alike.
    {
      std::vector<double> row(K + 1, 0.0);
      row[0] = 1e-3 / t_min;
      A.push_back(std::move(row));
      b.push_back(0.0);
    }
    theta = nonnegative_least_squares(A, b);
    if (iter == options.huber_iterations) break;
    // Huber weights from the relative residuals.
    std::vector<double> res(n), absres(n);
    for (std::size_t i = 0; i < n; ++i) {
      double pred = theta[0];
      const std::vector<double> phi = hats(knots, x[i]);
      for (std::size_t j = 0; j < K; ++j) pred += q[i] * phi[j] * theta[j + 1];
      res[i] = (pred - measured_s[i]) / measured_s[i];
      absres[i] = std::abs(res[i]);
    }
    const double mad = median(absres);
    const double c = std::max(1.5 * 1.4826 * mad, 0.02);
    for (std::size_t i = 0; i < n; ++i) weight[i] = absres[i] <= c ? 1.0 : std::sqrt(c / absres[i]);
  }

  efficiency_curve curve;
  curve.op = op;
  curve.type = type;
  curve.fixed_s = theta[0];
  curve.log10_work = knots;
  curve.inv_efficiency.assign(theta.begin() + 1, theta.end());
  curve.samples = static_cast<int>(n);
  double sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double pred = curve.time_s(roofline_s[i], q[i]);
    const double r = (pred - measured_s[i]) / measured_s[i];
    sq += r * r;
  }
  curve.rms_rel_error = std::sqrt(sq / double(n));
  return curve;
}

bool row_gemm(modsim::op o) {
  return o == modsim::op::qkv_proj || o == modsim::op::out_proj || o == modsim::op::mlp_up ||
         o == modsim::op::mlp_gate || o == modsim::op::mlp_down;
}

efficiency_curve fit_curve_with_rows(modsim::op op, dtype type, const std::vector<double>& roofline_s,
                                     const std::vector<double>& measured_s, const std::vector<double>& rows,
                                     const fit_options& options, const std::vector<double>& quantised_s) {
  efficiency_curve curve = fit_curve(op, type, roofline_s, measured_s, options, quantised_s);
  if (rows.size() != measured_s.size()) return curve;
  const std::vector<double>& q = quantised_s.empty() ? roofline_s : quantised_s;
  for (int round = 0; round < 2; ++round) {
    // measured / curve by M (the curve without a factor).
    std::map<double, std::vector<double>> ratios;
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (rows[i] > 0 && rows[i] < k_rows_factor_below)
        ratios[rows[i]].push_back(measured_s[i] / curve.time_s(roofline_s[i], q[i]));
    std::vector<double> at, factor;
    for (const auto& [m, r] : ratios)
      if (r.size() >= 3) {
        at.push_back(std::log2(m));
        factor.push_back(median(r));
      }
    // One row count alone says nothing of the shape between it and 128 rows (on this CPU the
    // factor falls below 1 at 32 rows and rises above it at 64): two or more, or none.
    if (at.size() < 2) return curve;
    at.push_back(std::log2(k_rows_factor_below));  // 1 from there up
    factor.push_back(1.0);
    if (round == 1) {
      curve.log2_rows = std::move(at);
      curve.rows_factor = std::move(factor);
      break;
    }
    // Fit the curve again on the measurements with the factor taken out.
    efficiency_curve probe;
    probe.log2_rows = at;
    probe.rows_factor = factor;
    std::vector<double> flat(measured_s.size());
    for (std::size_t i = 0; i < flat.size(); ++i) flat[i] = measured_s[i] / probe.rows_factor_at(rows[i]);
    curve = fit_curve(op, type, roofline_s, flat, options, quantised_s);
  }
  // The fit's error with the factor.
  double sq = 0;
  for (std::size_t i = 0; i < measured_s.size(); ++i) {
    const double r = (curve.time_s(roofline_s[i], q[i], rows[i]) - measured_s[i]) / measured_s[i];
    sq += r * r;
  }
  curve.rms_rel_error = std::sqrt(sq / double(measured_s.size()));
  return curve;
}

std::vector<double> fit_leftover_rows(const std::vector<row_series>& series) {
  std::vector<std::vector<double>> extra(k_row_group - 1);
  for (const row_series& one : series) {
    std::map<long long, double> at;  // rows -> seconds (the last of repeats)
    for (const auto& [rows, t] : one)
      if (rows >= 1 && t > 0) at[std::llround(rows)] = t;
    for (const auto& [m, t] : at) {
      const long long r = m % k_row_group;
      if (r == 0 || m - r < 1) continue;
      const auto lo = at.find(m - r), hi = at.find(m - r + k_row_group);
      if (lo == at.end() || hi == at.end()) continue;
      const double base = lo->second + (hi->second - lo->second) * double(r) / double(k_row_group);
      extra[static_cast<std::size_t>(r - 1)].push_back(double(m) * (t / base - 1.0));
    }
  }
  // Rows left over never cost less than their share of the work: a median below zero is the
  // machine's noise (on the Xeon, whose kernels leave about one row over, a run gave -0.2 and
  // a cross-validation fold of it less than -1, which no calibration file may hold), so none.
  std::vector<double> out;
  for (const std::vector<double>& e : extra) {
    if (e.size() < 3) return {};
    out.push_back(std::max(0.0, median(e)));
  }
  return out;
}

}  // namespace modsim::sim
