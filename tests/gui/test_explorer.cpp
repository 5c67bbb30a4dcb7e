// The explorer end to end: the main window with its session, panel and pages, driven the way
// a user drives it (schedule editor cells, chart clicks, files), on the offscreen platform.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>

#include "gui/core/explorer_session.hpp"
#include "gui/core/main_window.hpp"
#include "gui/core/model_panel.hpp"
#include "gui/core/tabs/design_space_tab.hpp"
#include "gui/core/tabs/layers_tab.hpp"
#include "gui/core/tabs/parallel_tab.hpp"
#include "gui/core/tabs/serving_tab.hpp"
#include "gui/core/tabs/timeline_tab.hpp"
#include "gui/core/tabs/validation_tab.hpp"
#include "sim/model/config.hpp"

using namespace modsim;
using namespace modsim::gui;

namespace {

// A window showing mod-220m (the shipped file), its first result applied.
struct Explorer {
  MainWindow window;
  ExplorerSession* session = window.session();
  Explorer() {
    window.resize(1400, 900);
    QSignalSpy ready(session, &ExplorerSession::resultApplied);
    EXPECT_TRUE(window.openModelFile(QStringLiteral(MODSIM_SOURCE_DIR "/configs/models/mod-220m.json")));
    waitForResult(ready, session);
  }
  // Waits until a result arrived and the worker is idle (no debounced or running request), so
  // the models hold the result of the latest configuration.
  void waitForResult(QSignalSpy& spy) const { waitForResult(spy, session); }
  static void waitForResult(QSignalSpy& spy, ExplorerSession* session) {
    const bool settled = QTest::qWaitFor([&] { return spy.count() > 0 && !session->worker()->isBusy(); }, 60000);
    if (!settled) ADD_FAILURE() << "no result within 60 s";
  }
  double predictedTotalS() const {
    return session->summaryModel()
        ->index(SummaryModel::TotalTime, SummaryModel::CurrentColumn)
        .data(ValueRole)
        .toDouble();
  }
};

}  // namespace

TEST(Explorer, EditingACapacityInTheScheduleEditorChangesThePredictedTimeShown) {
  Explorer e;
  const QString before = e.window.headlineLabel()->text();
  const double beforeS = e.predictedTotalS();
  ASSERT_GT(beforeS, 0);
  // The schedule editor's table, as the user edits a cell: layer 1 from 0.125 to 0.5.
  QAbstractItemModel* editor = e.window.panel()->scheduleView()->model();
  QSignalSpy ready(e.session, &ExplorerSession::resultApplied);
  ASSERT_TRUE(editor->setData(editor->index(1, ScheduleModel::CapacityColumn), 0.5));
  e.waitForResult(ready);
  // More tokens through layer 1's block: more work, so more time (and a different headline).
  EXPECT_GT(e.predictedTotalS(), beforeS);
  EXPECT_NE(e.window.headlineLabel()->text(), before);
  const auto plan = sim::plan_layers(e.session->config().model);
  EXPECT_DOUBLE_EQ(plan[1].capacity, 0.5);
  EXPECT_DOUBLE_EQ(plan[3].capacity, 0.125);
}

TEST(Explorer, ChoosingAParetoPointAdoptsItsConfiguration) {
  Explorer e;
  SweepModel* sweep = e.session->resultModel<SweepModel>();
  int row = -1;
  for (int r = 0; r < sweep->rowCount(); ++r)
    if (sweep->point(r).pareto && !sweep->point(r).current) row = r;
  ASSERT_GE(row, 0) << "no Pareto point other than the current one";
  const SweepPoint chosen = sweep->point(row);
  // A mouse click on the chart where the point is drawn.
  e.window.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&e.window));
  DesignSpacePage* page = e.window.page<DesignSpacePage>();
  const QPoint at = page->pixelOf(row);
  ASSERT_GE(at.x(), 0);
  ASSERT_EQ(page->rowAtPixel(at), row);
  QSignalSpy ready(e.session, &ExplorerSession::resultApplied);
  QTest::mouseClick(page->chartView()->viewport(), Qt::LeftButton, {}, at);
  e.waitForResult(ready);
  const auto adopted = sim::plan_layers(e.session->config().model);
  const auto expected = sim::plan_layers(chosen.model);
  ASSERT_EQ(adopted.size(), expected.size());
  for (std::size_t i = 0; i < adopted.size(); ++i) {
    EXPECT_EQ(adopted[i].routed, expected[i].routed) << i;
    EXPECT_DOUBLE_EQ(adopted[i].capacity, expected[i].capacity) << i;
  }
  // The schedule editor shows it, and it is now the current point of the design space.
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(e.session->scheduleModel()->layers()[i].has_value(), expected[i].routed) << i;
  EXPECT_DOUBLE_EQ(e.predictedTotalS(), chosen.timeS);
}

TEST(Explorer, LoadingABadFileShowsTheErrorAndKeepsThePreviousState) {
  Explorer e;
  const sim::model_spec before = e.session->config().model;
  const QString headline = e.window.headlineLabel()->text();
  QTemporaryDir dir;
  const QString malformed = dir.filePath(QStringLiteral("malformed.json"));
  const QString outOfRange = dir.filePath(QStringLiteral("bad-capacity.json"));
  {
    QFile f(malformed);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("{ \"name\": \"x\", \"d_model\": 1024, ");
  }
  {
    QFile f(outOfRange);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(R"({"name": "x", "d_model": 512, "n_layers": 4, "n_heads": 8, "d_ff": 2048, "vocab_size": 1000,
               "routing": {"capacity": 1.5, "schedule": "all"}})");
  }
  QSignalSpy ready(e.session, &ExplorerSession::resultApplied);
  EXPECT_FALSE(e.window.openModelFile(malformed));
  EXPECT_TRUE(e.window.errorText().contains(QStringLiteral("malformed.json")));
  EXPECT_TRUE(e.window.errorText().contains(QStringLiteral("malformed JSON")));
  EXPECT_FALSE(e.window.openModelFile(outOfRange));
  EXPECT_TRUE(e.window.errorText().contains(QStringLiteral("routing.capacity")));
  EXPECT_FALSE(e.window.openModelFile(dir.filePath(QStringLiteral("missing.json"))));
  QTest::qWait(400);
  EXPECT_EQ(ready.count(), 0);  // nothing recomputed
  EXPECT_EQ(e.session->config().model.name, before.name);
  EXPECT_EQ(e.session->config().model.d_model, before.d_model);
  EXPECT_EQ(e.session->scheduleModel()->rowCount(), before.n_layers);
  EXPECT_EQ(e.window.headlineLabel()->text(), headline);
  // A good file afterwards clears the error.
  EXPECT_TRUE(e.window.openModelFile(QStringLiteral(MODSIM_SOURCE_DIR "/configs/models/mod-60m.json")));
  EXPECT_TRUE(e.window.errorText().isEmpty());
}

TEST(Explorer, AnInvalidFieldShowsItsErrorNextToTheFieldAndKeepsTheConfiguration) {
  Explorer e;
  QSpinBox* heads = e.window.panel()->dimensionEditor(QStringLiteral("n_heads"));
  ASSERT_NE(heads, nullptr);
  QSignalSpy ready(e.session, &ExplorerSession::resultApplied);
  heads->setValue(7);  // 1024 is not divisible by 7
  EXPECT_TRUE(
      e.window.panel()->errorFor(QStringLiteral("n_heads")).contains(QStringLiteral("not divisible by n_heads 7")));
  EXPECT_EQ(e.session->config().model.n_heads, 16);
  QTest::qWait(400);
  EXPECT_EQ(ready.count(), 0);
  heads->setValue(8);  // divisible, but 8 heads cannot share 16 KV heads: the next error
  EXPECT_TRUE(e.window.panel()
                  ->errorFor(QStringLiteral("n_kv_heads"))
                  .contains(QStringLiteral("not a multiple of n_kv_heads 16")));
  EXPECT_TRUE(e.window.panel()->errorFor(QStringLiteral("n_heads")).isEmpty());
  heads->setValue(32);  // valid again: the errors go, the model recomputes with d_head = 1024 / 32
  EXPECT_TRUE(e.window.panel()->errorFor(QStringLiteral("n_kv_heads")).isEmpty());
  e.waitForResult(ready);
  EXPECT_EQ(e.session->config().model.n_heads, 32);
  EXPECT_EQ(e.session->config().model.d_head, 32);
}

TEST(Explorer, ImportsAHuggingFaceConfigAsADenseModel) {
  Explorer e;
  QSignalSpy ready(e.session, &ExplorerSession::resultApplied);
  ASSERT_TRUE(e.window.openModelFile(QStringLiteral(MODSIM_SOURCE_DIR "/configs/hf/llama-3-8b.json")));
  e.waitForResult(ready);
  EXPECT_EQ(e.session->config().model.d_model, 4096);
  EXPECT_EQ(e.session->config().model.n_layers, 32);
  EXPECT_EQ(e.session->scheduleModel()->rowCount(), 32);
  EXPECT_FALSE(e.session->config().model.routing.has_value());
}

TEST(Explorer, SavedModelLoadsBackToTheSameConfiguration) {
  Explorer e;
  QAbstractItemModel* editor = e.window.panel()->scheduleView()->model();
  ASSERT_TRUE(editor->setData(editor->index(3, ScheduleModel::CapacityColumn), 0.3));
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("saved.json"));
  ASSERT_TRUE(e.window.saveModelFile(path));
  const sim::model_spec back = sim::load_model(path.toStdString());
  const auto plan = sim::plan_layers(back);
  EXPECT_DOUBLE_EQ(plan[3].capacity, 0.3);
  EXPECT_DOUBLE_EQ(plan[1].capacity, 0.125);
  EXPECT_FALSE(plan[2].routed);
}

TEST(Explorer, EveryTabRendersAndExportsAsPngAndSvg) {
  Explorer e;
  QTemporaryDir dir;
  for (const QString& tab : MainWindow::tabNames()) {
    ASSERT_TRUE(e.window.setCurrentTab(tab));
    const QString png = dir.filePath(tab + QStringLiteral(".png"));
    const QString svg = dir.filePath(tab + QStringLiteral(".svg"));
    EXPECT_TRUE(e.window.exportCurrentView(png)) << tab.toStdString();
    EXPECT_TRUE(e.window.exportCurrentView(svg)) << tab.toStdString();
    EXPECT_GT(QFileInfo(png).size(), 1000) << tab.toStdString();
    EXPECT_GT(QFileInfo(svg).size(), 1000) << tab.toStdString();
  }
}

TEST(Explorer, ModeSwitchToDecodeRecomputesOneDecodeStep) {
  Explorer e;
  QSignalSpy ready(e.session, &ExplorerSession::resultApplied);
  e.session->setMode(sim::run_mode::decode);
  e.waitForResult(ready);
  EXPECT_EQ(e.session->lastResult()->load.run, sim::run_mode::decode);
  EXPECT_TRUE(e.session->lastResult()->error.empty()) << e.session->lastResult()->error;
  EXPECT_GT(e.session->resultModel<TimelineModel>()->rowCount(), 0);
}

TEST(Explorer, ExportsTheWholeStateAsAReport) {
  Explorer e;
  QTemporaryDir dir;
  QSignalSpy finished(&e.window, &MainWindow::reportFinished);
  ASSERT_TRUE(e.window.exportReport(dir.path()));
  ASSERT_TRUE(finished.wait(120000));
  EXPECT_TRUE(finished.first().at(1).toString().isEmpty()) << finished.first().at(1).toString().toStdString();
  QFile md(dir.filePath(QStringLiteral("report.md")));
  ASSERT_TRUE(md.open(QIODevice::ReadOnly));
  EXPECT_TRUE(md.readAll().contains("mod-220m"));
  EXPECT_TRUE(QFileInfo::exists(dir.filePath(QStringLiteral("report.html"))));
}
