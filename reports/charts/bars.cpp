// The bar charts: grouped or stacked bars (make_bar_chart), time per layer stacked by op class
// (make_layer_time_chart) and the waterfall (make_waterfall_chart).
#include <QColor>
#include <QVariant>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "reports/charts.hpp"
#include "reports/charts/kit.hpp"

namespace modsim::reports {

using namespace chart_kit;

QChart* make_bar_chart(const bar_chart_input& in) {
  if (in.categories.empty() || in.sets.empty()) return empty_chart(in.title);
  fitted_chart* chart = new_chart(in.title);

  QAbstractBarSeries* series = in.stacked ? static_cast<QAbstractBarSeries*>(new QStackedBarSeries())
                                          : static_cast<QAbstractBarSeries*>(new QBarSeries());
  double lo = 0, hi = 0;
  std::vector<double> pos(in.categories.size(), 0.0), neg(in.categories.size(), 0.0);
  for (std::size_t i = 0; i < in.sets.size(); ++i) {
    const std::size_t ci = in.sets[i].colour_index >= 0 ? static_cast<std::size_t>(in.sets[i].colour_index) : i;
    auto* set = new QBarSet(qs(in.sets[i].name));
    set->setColor(colour(ci));
    set->setBorderColor(colour(ci).darker(115));
    for (std::size_t c = 0; c < in.categories.size(); ++c) {
      const double v = c < in.sets[i].values.size() && usable(in.sets[i].values[c]) ? in.sets[i].values[c] : 0.0;
      set->append(v);
      if (in.stacked) {
        (v >= 0 ? pos[c] : neg[c]) += v;
      } else {
        hi = std::max(hi, v);
        lo = std::min(lo, v);
      }
    }
    series->append(set);
  }
  if (in.stacked) {
    for (double v : pos) hi = std::max(hi, v);
    for (double v : neg) lo = std::min(lo, v);
  }
  series->setBarWidth(in.stacked ? 0.7 : 0.8);
  QBarCategoryAxis* x = category_axis(in.categories);
  style_axis(x, in.x_label);
  x->setGridLineVisible(false);
  QValueAxis* y = value_axis(in.y_label, lo < 0 ? lo * 1.08 : 0.0, hi * 1.08);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  attach(chart, series, x, y);
  if (in.sets.size() == 1) chart->legend()->setVisible(false);
  return chart;
}

QChart* make_layer_time_chart(const layer_time_input& in) {
  const std::size_t layers = std::min(in.dense_s.size(), in.current_s.size());
  if (layers == 0 || in.classes.empty()) return empty_chart(in.title);
  bar_chart_input bars;
  bars.title = in.title;
  bars.y_label = in.y_label;
  bars.stacked = true;
  // Each layer has a dense bar (left) and the current configuration's bar (right), then an
  // empty slot before the next layer's (not after the last), so that neighbouring layers' bars
  // do not run together. The categories are unique runs of zero-width spaces: the axis is
  // replaced below by one numbered by layer.
  bars.x_label = "layer (left bar: " + in.dense_name + ", right bar: " + in.current_name + ")";
  const std::size_t bar_slots = k_layer_slots * layers - 1;  // no gap after the last layer
  std::string blank;
  for (std::size_t i = 0; i < bar_slots; ++i) {
    blank += "\u200B";
    bars.categories.push_back(blank);
  }
  for (std::size_t c = 0; c < in.classes.size(); ++c) {
    bar_set set{in.classes[c], {}, static_cast<int>(c)};
    bool any = false;
    for (std::size_t l = 0; l < layers; ++l) {
      const double dv = c < in.dense_s[l].size() ? in.dense_s[l][c] * 1e3 : 0.0;
      const double cv = c < in.current_s[l].size() ? in.current_s[l][c] * 1e3 : 0.0;
      any = any || dv != 0 || cv != 0;
      set.values.push_back(dv);
      set.values.push_back(cv);
      if (l + 1 < layers) set.values.push_back(0.0);  // the gap slot
    }
    if (any) bars.sets.push_back(std::move(set));
  }
  QChart* chart = make_bar_chart(bars);
  // The x axis numbered by layer under each pair of bars, every so many layers to fit (fit());
  // the bars sit at their index, 3·layer (dense) and 3·layer + 1 (current). Wide bars keep a
  // pair together, the empty slot keeps layers apart.
  const auto horizontal = chart->axes(Qt::Horizontal);
  if (horizontal.isEmpty() || chart->series().isEmpty()) return chart;
  if (auto* series = qobject_cast<QAbstractBarSeries*>(chart->series().first())) series->setBarWidth(0.85);
  QAbstractAxis* old_axis = horizontal.first();
  const QString title = old_axis->titleText();
  chart->removeAxis(old_axis);
  delete old_axis;
  auto* x = new QCategoryAxis();
  x->setProperty(k_layer_axis, static_cast<int>(layers));
  style_axis(x, title.toStdString());
  x->setGridLineVisible(false);
  relabel_layers(x, 800);
  chart->addAxis(x, Qt::AlignBottom);
  chart->series().first()->attachAxis(x);
  return chart;
}

QChart* make_waterfall_chart(const waterfall_input& in) {
  if (in.steps.empty()) return empty_chart(in.title);
  fitted_chart* chart = new_chart(in.title);

  auto* series = new QStackedBarSeries();
  auto* base = new QBarSet("base");
  auto* total = new QBarSet("total");
  auto* down = new QBarSet("saves time");
  auto* up = new QBarSet("costs time");
  base->setColor(Qt::transparent);
  base->setBorderColor(Qt::transparent);
  total->setColor(QColor(0x59, 0x59, 0x59));
  total->setBorderColor(QColor(0x59, 0x59, 0x59));
  down->setColor(QColor(0x00, 0x9E, 0x73));
  down->setBorderColor(QColor(0x00, 0x9E, 0x73).darker(120));
  up->setColor(QColor(0xD5, 0x5E, 0x00));
  up->setBorderColor(QColor(0xD5, 0x5E, 0x00).darker(120));
  std::vector<std::string> labels;
  double running = 0, hi = 0, lo = 0;
  for (const auto& s : in.steps) {
    const double v = usable(s.value) ? s.value : 0.0;
    double b = 0, t = 0, dn = 0, u = 0;
    if (s.total) {
      t = v;
      running = v;
    } else if (v < 0) {
      b = running + v;
      dn = -v;
      running += v;
    } else {
      b = running;
      u = v;
      running += v;
    }
    base->append(b);
    total->append(t);
    down->append(dn);
    up->append(u);
    hi = std::max({hi, b + t + dn + u, running});
    lo = std::min({lo, running, b});
    char value[32];
    std::snprintf(value, sizeof value, s.total || v < 0 ? "%.1f" : "+%.1f", v);
    labels.push_back(s.label + "\n" + value);
  }
  series->append(base);
  series->append(total);
  series->append(down);
  series->append(up);
  series->setBarWidth(0.6);
  QBarCategoryAxis* x = category_axis(labels);
  style_axis(x, "");
  x->setGridLineVisible(false);
  QValueAxis* y = value_axis(in.y_label, lo < 0 ? lo * 1.1 : 0.0, hi * 1.08);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  attach(chart, series, x, y);
  for (QLegendMarker* marker : chart->legend()->markers(series))
    if (marker->label() == "base") marker->setVisible(false);
  return chart;
}

}  // namespace modsim::reports
