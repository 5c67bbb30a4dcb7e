#include "sim/cost/machine_speed.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <utility>

#include "sim/common/stats.hpp"

namespace modsim::sim {
namespace {

std::string file_of(const std::string& where) {
  const std::size_t colon = where.rfind(':');
  return colon == std::string::npos ? where : where.substr(0, colon);
}

}  // namespace

std::vector<double> smoothed_anchors(const std::vector<measured_sample>& rows) {
  std::vector<double> out(rows.size(), 0.0);
  // The points: runs of consecutive rows of one file with the same anchor.
  struct point {
    std::string file;
    double anchor = 0;
    std::vector<std::size_t> rows;
  };
  std::vector<point> points;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!(rows[i].anchor_s > 0)) continue;
    const std::string file = file_of(rows[i].where);
    const bool same = !points.empty() && points.back().file == file && points.back().anchor == rows[i].anchor_s &&
                      points.back().rows.back() + 1 == i;
    if (!same) points.push_back({file, rows[i].anchor_s, {}});
    points.back().rows.push_back(i);
  }
  for (std::size_t p = 0; p < points.size(); ++p) {
    std::vector<double> near = {points[p].anchor};
    if (p > 0 && points[p - 1].file == points[p].file) near.push_back(points[p - 1].anchor);
    if (p + 1 < points.size() && points[p + 1].file == points[p].file) near.push_back(points[p + 1].anchor);
    const double a = median(std::move(near));
    for (const std::size_t i : points[p].rows) out[i] = a;
  }
  return out;
}

double median_anchor(const std::vector<measured_sample>& rows) {
  std::vector<double> a;
  for (const double x : smoothed_anchors(rows))
    if (x > 0) a.push_back(x);
  return a.empty() ? 0.0 : median(std::move(a));
}

std::string speed_hold::text() const {
  if (held == 0) return "no row carries an anchor (anchor_s): rows scored as measured";
  auto pct = [](double r) { return (r - 1) * 100; };
  std::string s = fmt::format(
      "{} rows held to the machine speed of an anchor of {:.3f} ms (anchor_s, over neighbouring points; rescaled by "
      "the anchor ratio to the power {:g}): measured at median {:+.1f}% of it (p10 {:+.1f}%, p90 {:+.1f}%, slowest "
      "{:+.1f}%)",
      held, reference_s * 1e3, elasticity, pct(median_ratio), pct(p10_ratio), pct(p90_ratio), pct(max_ratio));
  if (without > 0) s += fmt::format("; {} rows without an anchor left as measured", without);
  return s;
}

speed_hold hold_machine_speed(std::vector<measured_sample>& rows, double reference_s, double elasticity) {
  speed_hold h;
  h.elasticity = elasticity;
  if (!(reference_s > 0)) return h;
  h.reference_s = reference_s;
  const std::vector<double> anchors = smoothed_anchors(rows);
  std::vector<double> ratios;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!(anchors[i] > 0)) {
      ++h.without;
      continue;
    }
    const double ratio = anchors[i] / reference_s;
    rows[i].median_s /= std::pow(ratio, elasticity);
    ratios.push_back(ratio);
  }
  h.held = static_cast<int>(ratios.size());
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    h.median_ratio = median(ratios);
    h.p10_ratio = percentile_sorted(ratios, 0.1);
    h.p90_ratio = percentile_sorted(ratios, 0.9);
    h.max_ratio = ratios.back();
  }
  return h;
}

std::string slow_cut::text() const {
  if (limit <= 0) return "no row left out for a slow spell";
  std::string s = fmt::format(
      "{} of {} rows left out of the fit: measured while the machine ran more than {:.0f}% "
      "slower than at its fastest quarter (a smoothed anchor above {:.3f} ms against {:.3f} ms",
      left_out, rows, (limit - 1) * 100, fast_s * limit * 1e3, fast_s * 1e3);
  if (left_out > 0) s += fmt::format("; the slowest {:+.0f}%", (slowest_ratio - 1) * 100);
  return s + ")";
}

slow_cut leave_out_slow_rows(std::vector<measured_sample>& rows, double limit) {
  slow_cut c;
  c.rows = static_cast<int>(rows.size());
  if (!(limit > 0)) return c;
  const std::vector<double> anchors = smoothed_anchors(rows);
  std::vector<double> with;
  for (const double a : anchors)
    if (a > 0) with.push_back(a);
  if (with.empty()) return c;
  std::sort(with.begin(), with.end());
  c.limit = limit;
  c.fast_s = percentile_sorted(with, 0.25);
  c.slowest_ratio = with.back() / c.fast_s;
  std::vector<measured_sample> kept;
  kept.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (anchors[i] > 0 && anchors[i] > c.fast_s * limit)
      ++c.left_out;
    else
      kept.push_back(std::move(rows[i]));
  }
  rows = std::move(kept);
  return c;
}

}  // namespace modsim::sim
