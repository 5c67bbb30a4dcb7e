// The explorer at small windows (issue 45, "The explorer"): at 1,280 × 800 and 1,024 × 700 every
// tab's charts draw their texts whole, tables show rows, wrapped texts get their height, the
// window keeps the size asked, and on Layers one layer's bars stand apart from the next's. And
// its speed: the headline and the visible tab are computed first, the other tabs after, each
// saying it computes until its figures are those of the current inputs.
#include <gtest/gtest.h>

#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QLabel>
#include <QScrollArea>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>
#include <QtCharts/QAbstractBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <algorithm>

#include "gui/core/compute.hpp"
#include "gui/core/compute_worker.hpp"
#include "gui/core/explorer_session.hpp"
#include "gui/core/main_window.hpp"
#include "gui/core/tabs/layers_tab.hpp"
#include "gui/core/tabs/serving_tab.hpp"
#include "gui/core/tabs/timeline_tab.hpp"
#include "gui/core/tabs/validation_tab.hpp"
#include "sim/model/config.hpp"

using namespace modsim;
using namespace modsim::gui;

namespace {

QString shipped(const char* name) { return QStringLiteral(MODSIM_SOURCE_DIR "/configs/models/%1.json").arg(name); }

// A shown window of `size` on `model`, every part of its result applied.
struct Shown {
  MainWindow window;
  ExplorerSession* session = window.session();
  Shown(QSize size, const char* model) {
    window.setRememberFiles(false);
    window.resize(size);
    window.show();
    EXPECT_TRUE(QTest::qWaitForWindowExposed(&window));
    EXPECT_TRUE(window.openModelFile(shipped(model)));
    settle();
  }
  void settle() const {
    const bool done = QTest::qWaitFor(
        [&] { return session->lastResult() && session->lastResult()->complete() && !session->worker()->isBusy(); },
        120000);
    if (!done) ADD_FAILURE() << "no complete result within 120 s";
    QTest::qWait(50);  // let the pages lay out
  }
  void show(const char* tab) {
    ASSERT_TRUE(window.setCurrentTab(QString::fromLatin1(tab)));
    QTest::qWait(80);  // a hidden page draws its charts when shown
  }
};

// The texts a chart draws, as drawn (line breaks as spaces).
QStringList drawnTexts(QChartView* view) {
  QStringList out;
  if (!view->scene()) return out;
  for (QGraphicsItem* item : view->scene()->items())
    if (auto* t = dynamic_cast<QGraphicsTextItem*>(item); t && t->isVisible() && !t->toPlainText().isEmpty())
      out << t->toPlainText().replace(QChar(0x2029), QLatin1Char(' ')).replace(QLatin1Char('\n'), QLatin1Char(' '));
  return out;
}

// Qt ends a text it cuts with "…" (or "..."): none of the page's charts cuts one.
void expectNoElidedChartText(QWidget* page, const std::string& where) {
  for (QChartView* v : page->findChildren<QChartView*>()) {
    if (!v->isVisible() || !v->chart()) continue;
    for (const QString& t : drawnTexts(v))
      EXPECT_FALSE(t.contains(QChar(0x2026)) || t.contains(QStringLiteral("...")))
          << where << ": cut in \"" << v->chart()->title().toStdString() << "\": " << t.toStdString();
  }
}

// Every table of the page shows at least kMinTableRows rows (or all it has) in its viewport.
void expectTablesShowRows(QWidget* page, const std::string& where) {
  for (QTableView* t : page->findChildren<QTableView*>()) {
    if (!t->isVisible() || t->model()->rowCount() == 0) continue;
    const int rowHeight = t->rowHeight(0);
    ASSERT_GT(rowHeight, 0);
    const int shown = t->viewport()->height() / rowHeight;
    EXPECT_GE(shown, std::min(kMinTableRows, t->model()->rowCount()))
        << where << ": a table of " << t->model()->rowCount() << " rows shows " << shown;
  }
}

// Every wrapped label of the page is as high as its text needs at its width (nothing clipped).
void expectWrappedLabelsWhole(QWidget* page, const std::string& where) {
  for (QLabel* l : page->findChildren<QLabel*>()) {
    if (!l->isVisible() || !l->wordWrap() || l->text().isEmpty()) continue;
    EXPECT_GE(l->height(), l->heightForWidth(l->width()))
        << where << ": label cut: " << l->text().left(60).toStdString();
  }
}

const QSize kSmall(1024, 700), kMedium(1280, 800);

}  // namespace

// --- layout -----------------------------------------------------------------------------------

TEST(Layout, EveryTabFitsItsTextsAndShowsItsTablesAt1280x800And1024x700) {
  for (QSize size : {kMedium, kSmall}) {
    Shown w(size, "mod-220m");
    const std::string at = std::to_string(size.width()) + "x" + std::to_string(size.height());
    // The window keeps the size asked: nothing in it needs more width than such a screen has.
    EXPECT_EQ(w.window.size(), size) << at;
    EXPECT_LE(w.window.minimumSizeHint().width(), size.width()) << at;
    for (const QString& tab : MainWindow::tabNames()) {
      w.show(tab.toLatin1().constData());
      const std::string where = at + " " + tab.toStdString();
      QWidget* page = w.window.currentPage();
      expectNoElidedChartText(page, where);
      expectTablesShowRows(page, where);
      expectWrappedLabelsWhole(page, where);
    }
  }
}

TEST(Layout, TheSamplingMapKeepsItsTitleAndItsBatchLabelsForEveryStrategy) {
  // In decode against the model without routing, every strategy's map (the "pad" one had its
  // title and its x labels 128 and 256 cut).
  for (QSize size : {kMedium, kSmall}) {
    Shown w(size, "mod-220m");
    w.session->setMode(sim::run_mode::decode);
    w.settle();
    w.show("serving");
    auto* page = w.window.page<ServingPage>();
    SamplingModel* map = w.session->resultModel<SamplingModel>();
    ASSERT_TRUE(map->available()) << map->unavailableReason().toStdString();
    ASSERT_GE(map->strategyNames().size(), 2);
    for (int s = 0; s < map->strategyNames().size(); ++s) {
      map->setStrategy(s);
      QTest::qWait(30);
      const std::string where = std::to_string(size.width()) + " " + map->strategyNames()[s].toStdString();
      const QStringList texts = drawnTexts(page->samplingView());
      for (const QString& t : texts) EXPECT_FALSE(t.contains(QChar(0x2026))) << where << ": " << t.toStdString();
      // The batches 1 … 256 are labelled, every power of two or every other: the last one is.
      EXPECT_TRUE(texts.contains(QStringLiteral("256"))) << where << ": " << texts.join(" | ").toStdString();
    }
  }
}

TEST(Layout, OnLayersOneLayersBarsStandApartFromTheNext) {
  Shown w(kSmall, "mod-220m");
  w.show("layers");
  QChartView* view = w.window.page<LayersPage>()->chartView();
  ASSERT_NE(view->scene(), nullptr);
  // The bars of one op class every bar has (the MLP's): baseline and current of each layer, in
  // order along x.
  QColor mlp;
  for (QAbstractSeries* s : view->chart()->series())
    if (auto* bars = qobject_cast<QAbstractBarSeries*>(s))
      for (QBarSet* set : bars->barSets())
        if (set->label() == QStringLiteral("mlp")) mlp = set->color();
  ASSERT_TRUE(mlp.isValid());
  std::vector<QRectF> rects;
  for (QGraphicsItem* item : view->scene()->items())
    if (auto* r = dynamic_cast<QGraphicsRectItem*>(item);
        r && r->isVisible() && r->brush().color() == mlp && r->rect().height() > 0 &&
        view->chart()->plotArea().intersects(r->sceneBoundingRect()))  // not the legend's marker
      rects.push_back(r->sceneBoundingRect());
  std::sort(rects.begin(), rects.end(), [](const QRectF& a, const QRectF& b) { return a.left() < b.left(); });
  const int layers = 16;  // mod-220m
  ASSERT_EQ(static_cast<int>(rects.size()), 2 * layers);
  for (int l = 0; l + 1 < layers; ++l) {
    const double within = rects[2 * l + 1].left() - rects[2 * l].right();
    const double between = rects[2 * l + 2].left() - rects[2 * l + 1].right();
    EXPECT_GT(between, 0) << "layer " << l;
    // One layer's pair stands apart: the gap to the next layer is wider than the pair's own by
    // at least a bar's width.
    EXPECT_GT(between - within, rects[2 * l].width()) << "layer " << l;
  }
}

// --- what is computed first ---------------------------------------------------------------------

namespace {
ExplorerConfig paper() {
  ExplorerConfig c;
  c.model = sim::load_model(MODSIM_SOURCE_DIR "/configs/models/mod-220m.json");
  c.hardware = sim::load_hardware(MODSIM_SOURCE_DIR "/configs/hardware/h100-sxm-calibrated.json");
  c.load.batch = 1;
  c.load.seq_len = 2048;
  c.load.run = sim::run_mode::forward;
  c.load.type = sim::dtype::bf16;
  return c;
}
}  // namespace

TEST(ComputeOrder, TheHeadlineComesFirstThenTheVisibleTabThenTheOthers) {
  EXPECT_EQ(nextParts(kAllParts, ValidationPart), ResultParts(PredictionPart));
  EXPECT_EQ(nextParts(kAllParts & ~PredictionPart, ServingPart | SamplingPart),
            ResultParts(ServingPart | SamplingPart));
  EXPECT_EQ(nextParts(ValidationPart | SweepPart, 0), ResultParts(SweepPart));
  EXPECT_EQ(nextParts(0, SweepPart), ResultParts(0));

  ComputeWorker worker;
  worker.setVisibleParts(ValidationPart);
  QSignalSpy ready(&worker, &ComputeWorker::resultReady);
  worker.computeNow(paper());
  ASSERT_TRUE(QTest::qWaitFor([&] { return !worker.isBusy(); }, 120000));
  ASSERT_GE(ready.count(), 3);
  std::vector<ComputeResultPtr> results;
  for (const QList<QVariant>& args : ready) results.push_back(args.first().value<ComputeResultPtr>());
  EXPECT_EQ(results[0]->updated, ResultParts(PredictionPart));
  EXPECT_EQ(results[1]->updated, ResultParts(ValidationPart));
  ResultParts seen = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i]->generation, worker.generation());
    EXPECT_EQ(results[i]->updated & seen, 0u) << "part computed twice";
    seen |= results[i]->updated;
    EXPECT_EQ(results[i]->computed, seen);
    EXPECT_EQ(results[i]->complete(), i + 1 == results.size());
  }
  EXPECT_EQ(seen, kAllParts);
}

TEST(ComputeOrder, PartsComputedOneByOneAreTheWholeComputation) {
  for (sim::run_mode mode : {sim::run_mode::forward, sim::run_mode::decode}) {
    ExplorerConfig c = paper();
    c.load.run = mode;
    c.load.batch = mode == sim::run_mode::decode ? 16 : 1;
    const ComputeResult whole = computeAll(c);
    ASSERT_TRUE(whole.error.empty()) << whole.error;
    ComputeResult parts;
    for (ResultParts next = nextParts(kAllParts, 0); next != 0; next = nextParts(kAllParts & ~parts.computed, 0))
      computeParts(c, next, parts);
    ASSERT_TRUE(parts.complete());
    EXPECT_EQ(parts.prediction.totalS, whole.prediction.totalS);
    EXPECT_EQ(parts.prediction.denseTotalS, whole.prediction.denseTotalS);
    ASSERT_EQ(parts.sweep.points.size(), whole.sweep.points.size());
    for (std::size_t i = 0; i < whole.sweep.points.size(); ++i)
      EXPECT_EQ(parts.sweep.points[i].timeS, whole.sweep.points[i].timeS) << i;
    EXPECT_EQ(parts.timeline.makespanS, whole.timeline.makespanS);
    EXPECT_EQ(parts.serving.current.summary.tpot_s.p50, whole.serving.current.summary.tpot_s.p50);
    EXPECT_EQ(parts.sampling.map.strategies.size(), whole.sampling.map.strategies.size());
    EXPECT_EQ(parts.parallel.rows.size(), whole.parallel.rows.size());
    EXPECT_EQ(parts.validation.rows.size(), whole.validation.rows.size());
  }
}

TEST(ComputeOrder, AHiddenTabSaysItComputesUntilItsFiguresAreTheCurrentInputs) {
  Shown w(kMedium, "mod-220m");
  w.show("design-space");
  TimelineModel* timeline = w.session->resultModel<TimelineModel>();
  ASSERT_TRUE(timeline->available());
  const double before = timeline->makespanS();
  // An edit: every hidden tab says at once that its figures are not those of the inputs shown.
  w.session->setSeqLen(1024);
  EXPECT_TRUE(timeline->isPending());
  EXPECT_FALSE(timeline->available());
  EXPECT_TRUE(w.session->resultModel<ValidationModel>()->isPending());
  EXPECT_EQ(w.session->currentParts(), 0u);
  EXPECT_FALSE(w.window.visibleTabIsCurrent());
  w.settle();
  // Then the figures of the edited inputs: half the sequence, a shorter step.
  EXPECT_FALSE(timeline->isPending());
  EXPECT_TRUE(timeline->available());
  EXPECT_LT(timeline->makespanS(), before);
  EXPECT_EQ(w.session->currentParts(), kAllParts);
  EXPECT_TRUE(w.window.visibleTabIsCurrent());
}
