// make_diagonal_chart: measured vs predicted on log-log axes, the y = x line and ±25% guides.
#include <QColor>
#include <QPen>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reports/charts.hpp"
#include "reports/charts/kit.hpp"

namespace modsim::reports {

using namespace chart_kit;

QChart* make_diagonal_chart(const diagonal_input& in) {
  std::vector<const diagonal_point*> pts;
  for (const auto& p : in.points)
    if (usable_positive(p.measured_s) && usable_positive(p.predicted_s)) pts.push_back(&p);
  if (pts.empty()) return empty_chart(in.title);
  fitted_chart* chart = new_chart(in.title);
  double lo = 1e300, hi = 0;
  for (const auto* p : pts) {
    lo = std::min({lo, p->measured_s * 1e3, p->predicted_s * 1e3});
    hi = std::max({hi, p->measured_s * 1e3, p->predicted_s * 1e3});
  }
  // Both axes log10 of the value in the unit the range calls for (µs, ms or s): the series hold
  // log10 coordinates, the labels say the values at 1-2-5 steps.
  const QString x_title = qs(in.x_label), y_title = qs(in.y_label);
  const unit_choice u = unit_for(family::time, hi);
  lo /= u.divisor;
  hi /= u.divisor;
  if (!(hi > lo)) {
    lo /= 2;
    hi *= 2;
  }
  QCategoryAxis* x = log_axis(titled_with_unit(x_title, family_of(x_title), u), lo, hi);
  QCategoryAxis* y = log_axis(titled_with_unit(y_title, family_of(y_title), u), lo, hi);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  // The guides span the axes' range (the same whatever labels they take; Qt does not clip a
  // line to the plot area).
  const auto [range_lo, range_hi] = log_range(lo, hi);
  const double lo_log = std::log10(range_lo), hi_log = std::log10(range_hi);
  auto at = [&](double seconds) { return std::log10(seconds * 1e3 / u.divisor); };

  auto guide = [&](double factor, const char* name, Qt::PenStyle style, const QColor& c) {
    auto* line = new QLineSeries();
    line->setName(name);
    QPen pen(c);
    pen.setWidthF(style == Qt::SolidLine ? 1.4 : 1.0);
    pen.setStyle(style);
    line->setPen(pen);
    // y = x + f (log10) within the square [lo, hi]².
    const double f = std::log10(factor);
    const double x0 = std::max(lo_log, lo_log - f), x1 = std::min(hi_log, hi_log - f);
    line->append(x0, x0 + f);
    line->append(x1, x1 + f);
    attach(chart, line, x, y);
    return line;
  };
  guide(1.0, "y = x", Qt::SolidLine, k_front);
  QLineSeries* plus = guide(1.25, "±25%", Qt::DashLine, QColor(0x99, 0x99, 0x99));
  QLineSeries* minus = guide(0.8, "-25%", Qt::DashLine, QColor(0x99, 0x99, 0x99));
  (void)plus;
  for (QLegendMarker* m : chart->legend()->markers(minus)) m->setVisible(false);

  std::vector<std::string> groups;
  for (const auto* p : pts)
    if (std::find(groups.begin(), groups.end(), p->group) == groups.end()) groups.push_back(p->group);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    auto* s = new QScatterSeries();
    s->setName(qs(groups[g].empty() ? std::string("points") : groups[g]));
    s->setMarkerSize(9.0);
    s->setColor(colour(g));
    s->setBorderColor(colour(g).darker(130));
    for (const auto* p : pts)
      if (p->group == groups[g]) s->append(at(p->measured_s), at(p->predicted_s));
    attach(chart, s, x, y);
  }
  return chart;
}

}  // namespace modsim::reports
