// make_pareto_chart: predicted wall-clock vs FLOPs, the Pareto front, highlighted points.
#include <QColor>
#include <QPen>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <string>
#include <vector>

#include "reports/charts.hpp"
#include "reports/charts/kit.hpp"

namespace modsim::reports {

using namespace chart_kit;

QChart* make_pareto_chart(const pareto_chart_input& in) {
  std::vector<const scatter_point*> pts;
  for (const auto& p : in.points)
    if (usable(p.flops) && usable(p.time_s)) pts.push_back(&p);
  if (pts.empty()) return empty_chart(in.title);

  fitted_chart* chart = new_chart(in.title);
  double max_x = 0, max_y = 0;
  for (const auto* p : pts) {
    max_x = std::max(max_x, p->flops / 1e9);
    max_y = std::max(max_y, p->time_s * 1e3);
  }
  for (const time_reference& r : in.references)
    if (usable(r.time_s)) max_y = std::max(max_y, r.time_s * 1e3);
  QValueAxis* x = value_axis(in.x_label, 0.0, max_x * 1.06);
  QValueAxis* y = value_axis(in.y_label, 0.0, max_y * 1.08);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);

  // Reference times under the points: the baseline, a target.
  for (const time_reference& r : in.references) {
    if (!usable(r.time_s)) continue;
    auto* line = new QLineSeries();
    line->setName(qs(r.label));
    QPen pen(r.target ? QColor(0xd6, 0x27, 0x28) : QColor(0x88, 0x88, 0x88));
    pen.setWidthF(1.4);
    pen.setStyle(Qt::DashLine);
    line->setPen(pen);
    line->append(0.0, r.time_s * 1e3);
    line->append(max_x * 1.06, r.time_s * 1e3);
    attach(chart, line, x, y);
  }

  // One series per group, in order of first appearance.
  std::vector<std::string> groups;
  for (const auto* p : pts)
    if (std::find(groups.begin(), groups.end(), p->group) == groups.end()) groups.push_back(p->group);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    auto* s = new QScatterSeries();
    s->setName(qs(groups[g].empty() ? std::string("points") : groups[g]));
    s->setMarkerSize(8.0);
    s->setColor(colour(g));
    s->setBorderColor(colour(g).darker(130));
    for (const auto* p : pts)
      if (p->group == groups[g]) s->append(p->flops / 1e9, p->time_s * 1e3);
    attach(chart, s, x, y);
  }

  std::vector<const scatter_point*> front;
  for (const auto* p : pts)
    if (p->pareto) front.push_back(p);
  std::sort(front.begin(), front.end(), [](const scatter_point* a, const scatter_point* b) {
    return a->flops != b->flops ? a->flops < b->flops : a->time_s < b->time_s;
  });
  if (!front.empty()) {
    auto* line = new QLineSeries();
    line->setName("Pareto front");
    QPen pen(k_front);
    pen.setWidthF(1.6);
    pen.setStyle(Qt::DashLine);
    line->setPen(pen);
    for (const auto* p : front) line->append(p->flops / 1e9, p->time_s * 1e3);
    attach(chart, line, x, y);
  }

  for (const auto* p : pts) {
    if (!p->highlight) continue;
    auto* star = new QScatterSeries();
    star->setName(qs(p->label));
    star->setMarkerShape(QScatterSeries::MarkerShapeStar);
    star->setMarkerSize(20.0);
    star->setColor(k_highlight);
    star->setBorderColor(k_highlight.darker(140));
    star->append(p->flops / 1e9, p->time_s * 1e3);
    attach(chart, star, x, y);
  }
  return chart;
}

}  // namespace modsim::reports
