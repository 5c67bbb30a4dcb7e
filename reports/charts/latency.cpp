// make_latency_chart: empirical CDFs of latency series.
#include <QPen>
#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <utility>
#include <vector>

#include "reports/charts.hpp"
#include "reports/charts/kit.hpp"

namespace modsim::reports {

using namespace chart_kit;

QChart* make_latency_chart(const latency_chart_input& in) {
  fitted_chart* chart = new_chart(in.title);
  double max_x = 0;
  std::vector<std::vector<std::pair<double, double>>> curves;  // (ms, fraction)
  for (const auto& s : in.series) {
    std::vector<std::pair<double, double>> c;
    if (!s.samples_s.empty()) {
      std::vector<double> v;
      for (double x : s.samples_s)
        if (usable(x)) v.push_back(x * 1e3);
      std::sort(v.begin(), v.end());
      const double n = static_cast<double>(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        c.emplace_back(v[i], static_cast<double>(i) / n);
        c.emplace_back(v[i], static_cast<double>(i + 1) / n);
      }
    } else {
      for (const auto& [q, val] : s.quantiles_s)
        if (usable(val)) c.emplace_back(val * 1e3, q);
    }
    for (const auto& p : c) max_x = std::max(max_x, p.first);
    curves.push_back(std::move(c));
  }
  bool any = false;
  for (const auto& c : curves) any = any || !c.empty();
  if (!any) {
    delete chart;
    return empty_chart(in.title);
  }
  QValueAxis* x = value_axis(in.x_label, 0.0, max_x * 1.05);
  QValueAxis* y = value_axis(in.y_label, 0.0, 1.0);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (std::size_t i = 0; i < curves.size(); ++i) {
    if (curves[i].empty()) continue;
    auto* line = new QLineSeries();
    line->setName(qs(in.series[i].name));
    QPen pen(colour(i));
    pen.setWidthF(2.0);
    if (in.series[i].samples_s.empty()) {
      line->setPointsVisible(true);
    }
    line->setPen(pen);
    for (const auto& [ms, f] : curves[i]) line->append(ms, f);
    attach(chart, line, x, y);
  }
  return chart;
}

}  // namespace modsim::reports
