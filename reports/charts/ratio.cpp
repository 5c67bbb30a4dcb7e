// make_ratio_chart: ratio lines over a log2 x axis (the sampling map), measured and excluded points,
// the target and 1.0 as dashed lines.
#include <QColor>
#include <QPen>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <string>
#include <vector>

#include "reports/charts.hpp"
#include "reports/charts/kit.hpp"

namespace modsim::reports {

using namespace chart_kit;

QChart* make_ratio_chart(const ratio_chart_input& in) {
  double x_lo = 1e300, x_hi = 0, y_hi = 0;
  auto scan = [&](const std::vector<ratio_line>& ls) {
    for (const auto& l : ls)
      for (const auto& [x, y] : l.points)
        if (usable_positive(x) && usable(y)) {
          x_lo = std::min(x_lo, x);
          x_hi = std::max(x_hi, x);
          y_hi = std::max(y_hi, y);
        }
  };
  scan(in.lines);
  scan(in.measured);
  if (!(x_hi > 0)) return empty_chart(in.title);
  fitted_chart* chart = new_chart(in.title);
  if (!(x_hi > x_lo)) x_hi = x_lo * 2;
  auto* x = new QLogValueAxis();
  x->setBase(2.0);
  x->setRange(x_lo, x_hi);
  x->setLabelFormat("%g");
  x->setMinorTickCount(0);
  style_axis(x, in.x_label);
  QValueAxis* y = value_axis(in.y_label, 0.0, std::max({y_hi, in.target_ratio, 1.0}) * 1.08);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  auto flat = [&](double level, const std::string& name, const QColor& c) {
    auto* line = new QLineSeries();
    line->setName(qs(name));
    QPen pen(c);
    pen.setWidthF(1.4);
    pen.setStyle(Qt::DashLine);
    line->setPen(pen);
    line->append(x_lo, level);
    line->append(x_hi, level);
    attach(chart, line, x, y);
  };
  flat(1.0, "1.0 (no faster)", QColor(0x99, 0x99, 0x99));
  if (in.target_ratio > 0) flat(in.target_ratio, in.target_name, k_highlight);
  for (std::size_t i = 0; i < in.lines.size(); ++i) {
    auto* line = new QLineSeries();
    line->setName(qs(in.lines[i].name));
    QPen pen(colour(i));
    pen.setWidthF(2.0);
    line->setPen(pen);
    line->setPointsVisible(true);
    for (const auto& [px, py] : in.lines[i].points)
      if (usable_positive(px) && usable(py)) line->append(px, py);
    attach(chart, line, x, y);
  }
  for (std::size_t i = 0; i < in.measured.size(); ++i) {
    auto* pts = new QScatterSeries();
    pts->setName(qs(in.measured[i].name));
    pts->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    pts->setMarkerSize(10.0);
    pts->setColor(colour(in.lines.size() + i));
    for (const auto& [px, py] : in.measured[i].points)
      if (usable_positive(px) && usable(py)) pts->append(px, py);
    attach(chart, pts, x, y);
  }
  if (!in.excluded.empty()) {
    auto* pts = new QScatterSeries();
    pts->setName(qs(in.excluded_name));
    pts->setMarkerSize(13.0);
    // Greyed out: a solid grey disc over the line's point (an SVG keeps solid fills; a hatch
    // pattern may not survive the SVG writer).
    pts->setBrush(QColor(0x9A, 0x9A, 0x9A, 220));
    pts->setPen(QPen(QColor(0x55, 0x55, 0x55), 1.2));
    for (const auto& [px, py] : in.excluded)
      if (usable_positive(px) && usable(py)) pts->append(px, py);
    attach(chart, pts, x, y);
  }
  return chart;
}

}  // namespace modsim::reports
