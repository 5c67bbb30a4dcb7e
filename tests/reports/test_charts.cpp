// The chart builders of reports/charts.hpp, drawn offscreen: every chart has a title and
// labelled axes, and renders to a non-empty SVG and a PNG that is not blank.
// MODSIM_CHART_DUMP_DIR=DIR writes the PNGs there (to look at them).
#include <gtest/gtest.h>

#include <QBuffer>
#include <QFile>
#include <QImage>
#include <QtCharts/QAbstractAxis>
#include <QtCharts/QAbstractSeries>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <cstdlib>
#include <memory>
#include <set>

#include "reports/charts.hpp"

namespace modsim::reports {
namespace {

class Charts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(ensure_application()); }
};

void expect_titled_with_axes(QChart* chart) {
  ASSERT_NE(chart, nullptr);
  EXPECT_FALSE(chart->title().isEmpty());
  const auto axes = chart->axes();
  ASSERT_GE(axes.size(), 2);
  for (QAbstractAxis* a : axes) {
    if (a->orientation() == Qt::Vertical) {
      EXPECT_FALSE(a->titleText().isEmpty());
    }
  }
}

std::size_t distinct_colours(const QByteArray& png) {
  QImage img;
  EXPECT_TRUE(img.loadFromData(png, "PNG"));
  std::set<QRgb> colours;
  for (int y = 0; y < img.height(); y += 2)
    for (int x = 0; x < img.width(); x += 2) colours.insert(img.pixel(x, y));
  return colours.size();
}

pareto_chart_input sample_pareto() {
  pareto_chart_input in;
  in.title = "predicted wall-clock vs FLOPs";
  in.points = {{"dense", "dense", 4.0e12, 0.010, true, false},
               {"MoD 0.5", "MoD", 3.0e12, 0.008, true, false},
               {"MoD 0.125", "MoD", 2.4e12, 0.0071, true, true},
               {"MoD 0.5 all", "MoD", 2.8e12, 0.0095, false, false}};
  return in;
}

TEST_F(Charts, ParetoChartHasTheFrontAsALineAndTheHighlightedPointAsAStar) {
  std::unique_ptr<QChart> chart(make_pareto_chart(sample_pareto()));
  expect_titled_with_axes(chart.get());
  int lines = 0, stars = 0;
  for (QAbstractSeries* s : chart->series()) {
    if (auto* l = qobject_cast<QLineSeries*>(s); l && s->type() == QAbstractSeries::SeriesTypeLine) {
      ++lines;
      EXPECT_EQ(l->count(), 3);  // the three points on the front
    }
    if (auto* sc = qobject_cast<QScatterSeries*>(s); sc && sc->markerShape() == QScatterSeries::MarkerShapeStar)
      ++stars;
  }
  EXPECT_EQ(lines, 1);
  EXPECT_EQ(stars, 1);
}

TEST_F(Charts, EveryChartRendersToSvgAndANonBlankPng) {
  bar_chart_input bars{
      "FLOPs by op class", "op class", "GFLOP", {"attn", "mlp"}, {{"dense", {1, 2}, -1}, {"MoD", {0.5, 1}, -1}}, false};
  layer_time_input layers;
  layers.title = "time per layer";
  layers.classes = {"attn", "mlp"};
  layers.dense_s = {{1e-3, 2e-3}, {1e-3, 2e-3}};
  layers.current_s = {{1e-3, 2e-3}, {2e-4, 3e-4}};
  waterfall_input fall{
      "gap", "% of dense", {{"FLOPs", 60, true}, {"routing", 5, false}, {"attention", -2, false}, {"time", 63, true}}};
  latency_chart_input lat;
  lat.title = "TTFT";
  lat.series = {{"dense", {0.1, 0.2, 0.3}, {}}, {"MoD", {}, {{0.5, 0.1}, {0.9, 0.15}, {0.99, 0.2}}}};
  diagonal_input diag{"measured vs predicted",
                      "measured (ms)",
                      "predicted (ms)",
                      {{"a", "block_dense", 1e-3, 1.1e-3}, {"b", "block_mod", 2e-4, 1.8e-4}}};

  std::vector<std::unique_ptr<QChart>> charts;
  charts.emplace_back(make_pareto_chart(sample_pareto()));
  charts.emplace_back(make_bar_chart(bars));
  charts.emplace_back(make_layer_time_chart(layers));
  charts.emplace_back(make_waterfall_chart(fall));
  charts.emplace_back(make_latency_chart(lat));
  charts.emplace_back(make_diagonal_chart(diag));
  for (auto& c : charts) {
    SCOPED_TRACE(c->title().toStdString());
    expect_titled_with_axes(c.get());
    const QByteArray svg = render_svg(c.get(), QSize(600, 400));
    EXPECT_TRUE(svg.contains("<svg"));
    EXPECT_TRUE(svg.contains("</svg>"));
    EXPECT_TRUE(svg.contains(c->title().toUtf8()));
    const QByteArray png = render_png(c.get(), QSize(600, 400));
    if (const char* dir = std::getenv("MODSIM_CHART_DUMP_DIR")) {
      QFile f(QString(dir) + "/" + c->title() + ".png");
      if (f.open(QIODevice::WriteOnly)) f.write(png);
    }
    EXPECT_GT(distinct_colours(png), 8u);
    EXPECT_EQ(c->scene(), nullptr);  // rendering leaves no scene behind
  }
}

TEST_F(Charts, AnEmptyInputGivesAnEmptyTitledChart) {
  std::unique_ptr<QChart> chart(make_pareto_chart({}));
  ASSERT_NE(chart, nullptr);
  EXPECT_TRUE(chart->title().contains("no data"));
  EXPECT_FALSE(render_svg(chart.get()).isEmpty());
}

}  // namespace
}  // namespace modsim::reports
