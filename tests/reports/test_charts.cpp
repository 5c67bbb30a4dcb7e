// The chart builders of reports/charts.hpp, drawn offscreen: every chart has a title and
// labelled axes, and renders to a non-empty SVG and a PNG that is not blank.
// MODSIM_CHART_DUMP_DIR=DIR writes the PNGs there (to look at them).
#include <gtest/gtest.h>

#include <QBuffer>
#include <QCoreApplication>
#include <QFile>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QImage>
#include <QRegularExpression>
#include <QtCharts/QAbstractAxis>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QAbstractSeries>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

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

// --- Text that fits ---------------------------------------------------------------------------

struct laid_text {
  QString text;  // as drawn, line breaks as spaces
  QRectF rect;   // in chart coordinates
};

// Every visible text item of `chart` laid out at `size` in a scene (as render_svg/render_png and
// a QChartView lay it out).
std::vector<laid_text> texts_at(QChart* chart, QSize size) {
  QGraphicsScene scene;
  scene.addItem(chart);
  chart->setGeometry(QRectF(QPointF(0, 0), QSizeF(size)));
  if (chart->layout()) chart->layout()->activate();
  QCoreApplication::processEvents();
  std::vector<laid_text> out;
  for (QGraphicsItem* item : scene.items()) {
    auto* t = dynamic_cast<QGraphicsTextItem*>(item);
    if (t == nullptr || !t->isVisible() || t->toPlainText().isEmpty()) continue;
    QString text = t->toPlainText();
    text.replace(QChar(0x2028), ' ').replace(QChar(0x2029), ' ').replace('\n', ' ');
    out.push_back({text.simplified(), t->sceneBoundingRect()});
  }
  scene.removeItem(chart);
  return out;
}

// The labels of the first `o` axis of `chart` when it is a QCategoryAxis (empty ones left out).
QStringList labels_of_axis(QChart* chart, Qt::Orientation o) {
  QStringList out;
  const auto axes = chart->axes(o);
  if (auto* a = axes.isEmpty() ? nullptr : qobject_cast<QCategoryAxis*>(axes.first()))
    for (const QString& l : a->categoriesLabels())
      if (!l.isEmpty()) out << l;
  return out;
}

// Without any whitespace (a line may break after a hyphen, or between words).
QString squeezed(QString s) { return s.remove(QRegularExpression("\\s")).remove(QChar(0x200B)); }

// At `size`: no text elided (Qt ends a cut text with "..." or "…"), every text inside the
// chart, and each of `expected` drawn whole (possibly over several lines).
void expect_all_text_fits(QChart* chart, QSize size, const std::vector<std::string>& expected) {
  SCOPED_TRACE(std::to_string(size.width()) + "x" + std::to_string(size.height()));
  const std::vector<laid_text> texts = texts_at(chart, size);
  std::set<QString> drawn;
  for (const laid_text& t : texts) {
    EXPECT_FALSE(t.text.contains("...") || t.text.contains(QChar(0x2026))) << "elided: " << t.text.toStdString();
    EXPECT_GE(t.rect.left(), -1.0) << t.text.toStdString();
    EXPECT_GE(t.rect.top(), -1.0) << t.text.toStdString();
    EXPECT_LE(t.rect.right(), size.width() + 1.0) << t.text.toStdString();
    EXPECT_LE(t.rect.bottom(), size.height() + 1.0) << t.text.toStdString();
    drawn.insert(squeezed(t.text));
  }
  for (const std::string& e : expected)
    EXPECT_TRUE(drawn.count(squeezed(QString::fromStdString(e)))) << "not drawn whole: " << e;
}

// The report's size and the sizes the explorer shows charts at (1600×1000 and 1280×800
// windows: 700–1200 px wide, 260–450 px high; a 1024×700 window: about 600 px wide).
const std::vector<QSize>& sizes() {
  static const std::vector<QSize> s = {QSize(900, 520),  QSize(700, 260), QSize(700, 450), QSize(1200, 450),
                                       QSize(1200, 260), QSize(600, 400), QSize(600, 300)};
  return s;
}

const char* const k_gap_title = "Where the FLOP saving goes: 52.3% of the FLOPs → 60.1% of the time";

waterfall_input gap_waterfall() {
  return {k_gap_title,
          "% of the dense forward pass",
          {{"FLOPs", 52.3, true},
           {"routing", 1.2, false},
           {"launches", 3.3, false},
           {"GEMM eff.", 2.0, false},
           {"attention", -1.5, false},
           {"mem-bound", 2.8, false},
           {"time", 60.1, true}}};
}

TEST_F(Charts, WaterfallLabelsAndTitleFitAtEverySize) {
  std::unique_ptr<QChart> chart(make_waterfall_chart(gap_waterfall()));
  for (QSize size : sizes())
    expect_all_text_fits(
        chart.get(), size,
        {k_gap_title, "% of the dense forward pass", "FLOPs 52.3", "routing +1.2", "launches +3.3", "GEMM eff. +2.0",
         "attention -1.5", "mem-bound +2.8", "time 60.1", "saves time", "costs time", "total"});
}

const char* const k_validation_title =
    "Measured vs predicted, 60 blocks on Intel(R) Xeon(R) Processor, 2 threads: median |error| 3.3%, p90 6.5%, max "
    "9.7%";

TEST_F(Charts, ValidationChartTitleFitsAtEverySize) {
  diagonal_input in{k_validation_title,
                    "measured (ms)",
                    "predicted (ms)",
                    {{"a", "block_dense", 0.3e-3, 0.31e-3}, {"b", "block_mod", 30e-3, 29e-3}}};
  std::unique_ptr<QChart> chart(make_diagonal_chart(in));
  for (QSize size : sizes())
    expect_all_text_fits(chart.get(), size,
                         {k_validation_title, "measured (ms)", "predicted (ms)", "block_dense", "block_mod"});
}

TEST_F(Charts, CategoryLabelsOfTheBarChartsFit) {
  const std::vector<std::string> classes = {"routing", "norms", "attention proj.", "attention core",
                                            "MLP",     "MoE",   "LM head"};
  bar_chart_input by_class{"Matmul FLOPs per training step by op class",
                           "op class",
                           "matmul FLOPs (GFLOP)",
                           classes,
                           {{"dense baseline", {1, 2, 3, 4, 5, 6, 7}, 7}, {"mod-220m", {1, 1, 1, 1, 1, 1, 1}, 0}},
                           false};
  const std::vector<std::string> variants = {"dense", "MoD", "MoE", "MoDE staged", "MoDE integrated"};
  bar_chart_input by_variant{
      "Variants relative to dense: FLOPs and predicted time",
      "variant",
      "× dense",
      variants,
      {{"matmul FLOPs", {1, 0.5, 1.1, 0.6, 0.7}, 4}, {"predicted time", {1, 0.7, 1.2, 0.8, 0.9}, 1}},
      false};
  layer_time_input layers;
  layers.title = "Predicted time per layer by op class (launch overhead excluded)";
  layers.classes = {"routing", "norms", "attention proj.", "attention core", "MLP"};
  for (int l = 0; l < 24; ++l) {
    layers.dense_s.push_back({0, 1e-4, 3e-4, 4e-4, 6e-4});
    layers.current_s.push_back({l % 2 ? 1e-6 : 0.0, 1e-4, l % 2 ? 4e-5 : 3e-4, l % 2 ? 1e-5 : 4e-4, 6e-4});
  }
  for (bar_chart_input* in : {&by_class, &by_variant}) {
    std::unique_ptr<QChart> chart(make_bar_chart(*in));
    std::vector<std::string> expected = in->categories;
    expected.push_back(in->title);
    expected.push_back(in->x_label);
    for (QSize size : sizes()) expect_all_text_fits(chart.get(), size, expected);
  }
  std::unique_ptr<QChart> chart(make_layer_time_chart(layers));
  std::vector<std::string> expected = {layers.title, "0", "attention proj.", "attention core"};
  for (QSize size : sizes()) expect_all_text_fits(chart.get(), size, expected);
  // 24 layers numbered every layer when there is room, else every 2nd, 5th... layer: at 1200 px
  // every layer, at 600 px every other (the x axis is about 500 px, 12 labels of "22").
  auto layer_labels = [&](QSize size) {
    texts_at(chart.get(), size);
    return labels_of_axis(chart.get(), Qt::Horizontal);
  };
  EXPECT_EQ(layer_labels(QSize(1200, 450)).size(), 24);
  EXPECT_EQ(layer_labels(QSize(600, 400)),
            (QStringList{"0", "2", "4", "6", "8", "10", "12", "14", "16", "18", "20", "22"}));
}

// The explorer's design-space chart: five variants, the front and the current point.
pareto_chart_input design_space() {
  pareto_chart_input in;
  in.title = "Design space: predicted wall-clock vs matmul FLOPs";
  in.x_label = "matmul FLOPs per step (GFLOP)";
  int i = 0;
  for (const char* g : {"dense", "MoD", "MoE", "MoDE staged", "MoDE integrated"})
    in.points.push_back({g, g, 1e12 * (4 - 0.3 * i), 1e-3 * (10 - i++), true, false});
  in.points.push_back({"current: MoD c=0.125 every_other", "MoD", 2.5e12, 7e-3, false, true});
  return in;
}

TEST_F(Charts, TheDesignSpaceLegendFitsAtNarrowWidths) {
  std::unique_ptr<QChart> chart(make_pareto_chart(design_space()));
  const std::vector<std::string> entries = {
      "dense", "MoD", "MoE", "MoDE staged", "MoDE integrated", "Pareto front", "current: MoD c=0.125 every_other"};
  std::vector<std::string> expected = entries;
  expected.push_back("Design space: predicted wall-clock vs matmul FLOPs");
  for (QSize size : sizes()) expect_all_text_fits(chart.get(), size, expected);
  for (QSize size : {QSize(560, 360), QSize(500, 300)}) expect_all_text_fits(chart.get(), size, expected);
  // The markers still name the whole series (what a user reads when hovering the legend).
  int named = 0;
  for (QLegendMarker* m : chart->legend()->markers())
    for (const std::string& e : entries)
      named += squeezed(QString(m->label()).replace("<br>", " ")) == squeezed(QString::fromStdString(e));
  EXPECT_EQ(named, 7);
}

TEST_F(Charts, LatencyAndRatioChartsFit) {
  latency_chart_input lat;
  lat.title = "Time to first token, CDF over requests";
  lat.x_label = "TTFT (ms)";
  lat.series = {{"dense TTFT", {0.010, 0.020, 0.030}, {}},
                {"current TTFT", {0.011, 0.019, 0.025}, {}},
                {"dense TPOT", {0.004, 0.005}, {}},
                {"current TPOT", {0.003, 0.004}, {}}};
  ratio_chart_input ratio;
  ratio.title = "sync decode step: mod-220m / dense-220m";
  ratio.lines = {{"context 256", {{1, 0.9}, {8, 0.8}, {64, 0.7}}}, {"context 2048", {{1, 0.6}, {8, 0.62}, {64, 0.7}}}};
  ratio.target_ratio = 1 / 1.5;
  ratio.target_name = "1.5x faster (ratio 0.667)";
  std::unique_ptr<QChart> a(make_latency_chart(lat));
  std::unique_ptr<QChart> b(make_ratio_chart(ratio));
  for (QSize size : sizes()) {
    expect_all_text_fits(a.get(), size, {lat.title, "TTFT (ms)", "fraction of requests", "current TPOT"});
    expect_all_text_fits(
        b.get(), size,
        {ratio.title, "decode batch (sequences)", "time, MoD / baseline", "1.5x faster (ratio 0.667)", "context 2048"});
  }
}

// --- Axis labels -------------------------------------------------------------------------------

QCategoryAxis* category_axis_of(QChart* chart, Qt::Orientation o) {
  const auto axes = chart->axes(o);
  return axes.isEmpty() ? nullptr : qobject_cast<QCategoryAxis*>(axes.first());
}

QStringList labels_of(QCategoryAxis* a) {
  QStringList out;
  for (const QString& l : a->categoriesLabels())
    if (!l.isEmpty()) out << l;
  return out;
}

TEST_F(Charts, LogAxesAreLabelledAtOneTwoFiveSteps) {
  // Points from 0.3 ms to 30 ms: labels from the 1-2-5 value below 0.3 to the one above 30.
  diagonal_input in{"measured vs predicted",
                    "measured (ms)",
                    "predicted (ms)",
                    {{"a", "block_dense", 0.3e-3, 0.32e-3}, {"b", "block_mod", 30e-3, 28e-3}}};
  std::unique_ptr<QChart> chart(make_diagonal_chart(in));
  for (Qt::Orientation o : {Qt::Horizontal, Qt::Vertical}) {
    QCategoryAxis* axis = category_axis_of(chart.get(), o);
    ASSERT_NE(axis, nullptr);
    EXPECT_EQ(labels_of(axis), (QStringList{"0.2", "0.5", "1", "2", "5", "10", "20", "50"}));
    // Each label sits at the log10 of its value: 1 at 0, 10 at 1, 0.2 at log10(0.2).
    EXPECT_NEAR(axis->endValue("1"), 0.0, 1e-12);
    EXPECT_NEAR(axis->endValue("10"), 1.0, 1e-12);
    EXPECT_NEAR(axis->endValue("0.2"), std::log10(0.2), 1e-12);
    EXPECT_NEAR(axis->min(), std::log10(0.2), 1e-12);
    EXPECT_NEAR(axis->max(), std::log10(50.0), 1e-12);
  }
  // The y = x and ±25% guides stay inside the axes' square (Qt does not clip them): y = x from
  // 0.2 to 50, y = 1.25x from (0.2, 0.25) to (40, 50), y = 0.8x from (0.25, 0.2) to (50, 40).
  int guides = 0;
  for (QAbstractSeries* s : chart->series()) {
    auto* line = qobject_cast<QLineSeries*>(s);
    if (line == nullptr || s->type() != QAbstractSeries::SeriesTypeLine) continue;
    ++guides;
    ASSERT_EQ(line->count(), 2);
    for (const QPointF& p : line->points()) {
      EXPECT_GE(p.x(), std::log10(0.2) - 1e-9);
      EXPECT_LE(p.x(), std::log10(50.0) + 1e-9);
      EXPECT_GE(p.y(), std::log10(0.2) - 1e-9);
      EXPECT_LE(p.y(), std::log10(50.0) + 1e-9);
    }
    const double slope_offset = line->at(1).y() - line->at(1).x();
    if (std::abs(slope_offset - std::log10(1.25)) < 1e-9) {
      EXPECT_NEAR(line->at(1).x(), std::log10(40.0), 1e-9);
    }
    if (std::abs(slope_offset - std::log10(0.8)) < 1e-9) {
      EXPECT_NEAR(line->at(0).x(), std::log10(0.25), 1e-9);
    }
  }
  EXPECT_EQ(guides, 3);
  // From 0.002 ms to 500 ms: 1-2-5 steps would be 17 labels and 1-3 steps 11, so one label
  // per decade (at most ten in the room a chart gets before it is laid out).
  in.points = {{"a", "block_dense", 2e-6, 2e-6}, {"b", "block_dense", 0.5, 0.5}};
  std::unique_ptr<QChart> wide(make_diagonal_chart(in));
  EXPECT_EQ(labels_of(category_axis_of(wide.get(), Qt::Horizontal)), (QStringList{"0.01", "0.1", "1", "10", "100"}));
  EXPECT_TRUE(category_axis_of(wide.get(), Qt::Horizontal)->titleText().contains("(ms)"));
}

bool plain_numbers(const QStringList& labels) {
  static const QRegularExpression number("^-?[0-9]+(\\.[0-9]+)?$");
  for (const QString& l : labels)
    if (!number.match(l).hasMatch()) return false;
  return !labels.isEmpty();
}

TEST_F(Charts, ValueAxesChooseTheirUnitAndPrintPlainNumbers) {
  // 50,000 GFLOP and 15,000 ms: TFLOP and s; the data stay in GFLOP and ms (the explorer maps
  // a clicked point back to its row by them).
  pareto_chart_input big;
  big.title = "big";
  big.points = {{"a", "dense", 5e13, 15.0, true, false}, {"b", "MoD", 2e13, 6.0, true, false}};
  std::unique_ptr<QChart> chart(make_pareto_chart(big));
  QCategoryAxis* x = category_axis_of(chart.get(), Qt::Horizontal);
  QCategoryAxis* y = category_axis_of(chart.get(), Qt::Vertical);
  ASSERT_NE(x, nullptr);
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(x->titleText(), "matmul FLOPs per forward pass (TFLOP)");
  EXPECT_EQ(y->titleText(), "predicted wall-clock (s)");
  // Before it is laid out a chart has room for ten labels: x up to 50 × 1.06 = 53 TFLOP, 53 / 9
  // = 5.9 rounds up to steps of 10; y up to 15 × 1.08 = 16.2 s, 16.2 / 9 = 1.8 to steps of 2.
  EXPECT_EQ(labels_of(x), (QStringList{"0", "10", "20", "30", "40", "50", "60"}));
  EXPECT_EQ(labels_of(y), (QStringList{"0", "2", "4", "6", "8", "10", "12", "14", "16", "18"}));
  EXPECT_DOUBLE_EQ(x->max(), 60000.0);  // GFLOP
  EXPECT_DOUBLE_EQ(y->max(), 18000.0);  // ms
  // Laid out 260 px high, the y axis (about 120 px) takes fewer labels, still plain seconds.
  texts_at(chart.get(), QSize(700, 260));
  EXPECT_LT(labels_of(y).size(), 10);
  EXPECT_TRUE(plain_numbers(labels_of(y)));
  EXPECT_EQ(y->titleText(), "predicted wall-clock (s)");

  // 1.5 PFLOP → PFLOP; 0.4 ms → µs; 200 GFLOP and 40 ms stay.
  pareto_chart_input huge;
  huge.title = "huge";
  huge.points = {{"a", "dense", 1.5e18, 0.4e-3, true, false}};
  std::unique_ptr<QChart> h(make_pareto_chart(huge));
  EXPECT_TRUE(category_axis_of(h.get(), Qt::Horizontal)->titleText().endsWith("(PFLOP)"));
  EXPECT_TRUE(category_axis_of(h.get(), Qt::Vertical)->titleText().endsWith("(µs)"));
  EXPECT_TRUE(plain_numbers(labels_of(category_axis_of(h.get(), Qt::Vertical))));
  pareto_chart_input small;
  small.title = "small";
  small.points = {{"a", "dense", 2e11, 40e-3, true, false}};
  std::unique_ptr<QChart> sm(make_pareto_chart(small));
  EXPECT_TRUE(category_axis_of(sm.get(), Qt::Horizontal)->titleText().endsWith("(GFLOP)"));
  EXPECT_TRUE(category_axis_of(sm.get(), Qt::Vertical)->titleText().endsWith("(ms)"));

  // A serving run whose TTFT reaches 15 s: seconds, plain numbers.
  latency_chart_input lat;
  lat.title = "TTFT";
  lat.x_label = "TTFT (ms)";
  lat.series = {{"dense", {1.0, 7.0, 15.0}, {}}};
  std::unique_ptr<QChart> l(make_latency_chart(lat));
  EXPECT_EQ(category_axis_of(l.get(), Qt::Horizontal)->titleText(), "TTFT (s)");
  EXPECT_TRUE(plain_numbers(labels_of(category_axis_of(l.get(), Qt::Horizontal))));
  EXPECT_EQ(labels_of(category_axis_of(l.get(), Qt::Vertical)),
            (QStringList{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}));

  // Bars already in GFLOP (a 3B model's training step): TFLOP.
  bar_chart_input bars{"FLOPs", "op class", "matmul FLOPs (GFLOP)", {"attn", "mlp"}, {{"dense", {1.2e4, 5e4}, -1}},
                       false};
  std::unique_ptr<QChart> b(make_bar_chart(bars));
  QCategoryAxis* by = category_axis_of(b.get(), Qt::Vertical);
  ASSERT_NE(by, nullptr);
  EXPECT_EQ(by->titleText(), "matmul FLOPs (TFLOP)");
  EXPECT_TRUE(plain_numbers(labels_of(by)));
}

TEST_F(Charts, AnEmptyInputGivesAnEmptyTitledChart) {
  std::unique_ptr<QChart> chart(make_pareto_chart({}));
  ASSERT_NE(chart, nullptr);
  EXPECT_TRUE(chart->title().contains("no data"));
  EXPECT_FALSE(render_svg(chart.get()).isEmpty());
}

}  // namespace
}  // namespace modsim::reports
