// The chart kit's basics: modsim's palette and colours, the axis and chart style
// (apply_style), a new fitted chart, the empty chart, attaching a series to its axes.
#include <QColor>
#include <QFont>
#include <QtCharts/QLegend>
#include <cmath>
#include <string>
#include <vector>

#include "reports/charts.hpp"
#include "reports/charts/kit.hpp"

namespace modsim::reports {
namespace chart_kit {
namespace {

// A colour-blind-friendly qualitative palette (Okabe–Ito, then Tableau fill-ins).
const std::vector<QColor>& palette() {
  static const std::vector<QColor> colours = {
      QColor(0x00, 0x72, 0xB2), QColor(0xE6, 0x9F, 0x00), QColor(0x00, 0x9E, 0x73), QColor(0xCC, 0x79, 0xA7),
      QColor(0x56, 0xB4, 0xE9), QColor(0xD5, 0x5E, 0x00), QColor(0xF0, 0xE4, 0x42), QColor(0x59, 0x59, 0x59),
      QColor(0x8C, 0x56, 0x4B), QColor(0x7F, 0x3C, 0x8D)};
  return colours;
}

const QColor k_text(0x22, 0x22, 0x22);
const QColor k_grid(0xE3, 0xE3, 0xE3);

}  // namespace

QString qs(const std::string& s) { return QString::fromStdString(s); }

QColor colour(std::size_t i) { return palette()[i % palette().size()]; }

void style_axis(QAbstractAxis* axis, const std::string& title) {
  axis->setTitleText(qs(title));
  QFont f = axis->titleFont();
  f.setPointSizeF(10.5);
  f.setBold(false);
  axis->setTitleFont(f);
  QFont l = axis->labelsFont();
  l.setPointSizeF(9.5);
  axis->setLabelsFont(l);
  axis->setLabelsColor(k_text);
  axis->setTitleBrush(k_text);
  axis->setGridLineColor(k_grid);
  axis->setLinePenColor(QColor(0x99, 0x99, 0x99));
}

fitted_chart* new_chart(const std::string& title) {
  auto* chart = new fitted_chart();
  chart->set_full_title(qs(title));
  apply_style(chart);
  return chart;
}

QChart* empty_chart(const std::string& title) {
  return new_chart(title.empty() ? std::string("no data") : title + " (no data)");
}

void attach(QChart* chart, QAbstractSeries* series, QAbstractAxis* x, QAbstractAxis* y) {
  chart->addSeries(series);
  series->attachAxis(x);
  series->attachAxis(y);
}

bool usable(double v) { return std::isfinite(v); }
bool usable_positive(double v) { return std::isfinite(v) && v > 0; }

}  // namespace chart_kit

void apply_style(QChart* chart) {
  chart->setTheme(QChart::ChartThemeLight);
  chart->setBackgroundBrush(Qt::white);
  chart->setBackgroundRoundness(0);
  chart->setDropShadowEnabled(false);
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->setMargins(QMargins(8, 6, 12, 6));
  QFont title = chart->titleFont();
  title.setPointSizeF(13);
  title.setBold(true);
  chart->setTitleFont(title);
  chart->setTitleBrush(chart_kit::k_text);
  chart->legend()->setAlignment(Qt::AlignBottom);
  QFont lf = chart->legend()->font();
  lf.setPointSizeF(9.5);
  chart->legend()->setFont(lf);
  chart->legend()->setLabelColor(chart_kit::k_text);
}

}  // namespace modsim::reports
