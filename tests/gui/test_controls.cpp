// The explorer's controls as a researcher uses them (issue: every control works, one baseline,
// no silent refusals, no lost edits), driven through the widgets with QTest on the offscreen
// platform. Expected values are worked out by hand from the model files.
#include <gtest/gtest.h>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QToolButton>
#include <QtCharts/QAbstractBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <algorithm>
#include <functional>

#include "explorer_window.hpp"
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
#include "sim/model/spec.hpp"

using namespace modsim;
using namespace modsim::gui;

namespace {

using test::shipped;

struct Window : test::ExplorerWindow {
  using ExplorerWindow::ExplorerWindow;
  std::vector<int> routedLayers() const {
    std::vector<int> out;
    for (const sim::layer_plan& l : sim::plan_layers(session->config().model))
      if (l.routed) out.push_back(l.index);
    return out;
  }
  QString presetKey() const { return panel->presetEditor()->currentData().toString(); }
};

// Answers the next modal message box by pressing the button with `role`; records its object name.
void answerNextMessageBox(QMessageBox::StandardButton button, QString* seen) {
  QTimer::singleShot(0, [button, seen] {
    const bool found =
        QTest::qWaitFor([&] { return qobject_cast<QMessageBox*>(QApplication::activeModalWidget()) != nullptr; }, 5000);
    if (!found) return;
    auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
    if (seen) *seen = box->objectName();
    box->button(button)->click();
  });
}

}  // namespace

// --- 1. the "every n-th" schedule ---------------------------------------------------------------

TEST(Controls, EveryNthIsChosenByKeyboardAndKeepsItsN) {
  Window w;
  QComboBox* preset = w.panel->presetEditor();
  ASSERT_EQ(w.presetKey(), QStringLiteral("every_other"));
  // The next item below "every other" is "every n-th": one Down key on the closed combo.
  w.apply([&] { QTest::keyClick(preset, Qt::Key_Down); });
  EXPECT_EQ(w.presetKey(), QStringLiteral("every_nth"));
  EXPECT_TRUE(w.panel->nthEditor()->isEnabled());
  EXPECT_EQ(w.panel->nthEditor()->value(), 3);
  // 16 layers, every 3rd: layers 2, 5, 8, 11, 14.
  EXPECT_EQ(w.routedLayers(), (std::vector<int>{2, 5, 8, 11, 14}));

  // n = 2 routes what every other does, and the choice stays "every n-th" with n editable.
  w.apply([&] { w.panel->nthEditor()->setValue(2); });
  EXPECT_EQ(w.presetKey(), QStringLiteral("every_nth"));
  EXPECT_TRUE(w.panel->nthEditor()->isEnabled());
  EXPECT_EQ(w.routedLayers(), (std::vector<int>{1, 3, 5, 7, 9, 11, 13, 15}));
  // ... so n = 4 can follow: layers 3, 7, 11, 15.
  w.apply([&] { w.panel->nthEditor()->setValue(4); });
  EXPECT_EQ(w.presetKey(), QStringLiteral("every_nth"));
  EXPECT_EQ(w.routedLayers(), (std::vector<int>{3, 7, 11, 15}));
}

// --- 2. one baseline in the headline and the design-space table ---------------------------------

TEST(Controls, HeadlineAndDesignSpaceTableShareTheBaselineForEveryVariant) {
  Window w;
  // mod-220m starts without MoE: each step below changes the variant (and recomputes).
  for (const char* variant : {"moe", "staged", "integrated", "none"}) {
    QComboBox* v = w.panel->variantEditor();
    w.apply([&] { v->setCurrentIndex(v->findData(QString::fromLatin1(variant))); });
    SweepModel* sweep = w.session->resultModel<SweepModel>();
    int current = -1;
    for (int r = 0; r < sweep->rowCount(); ++r)
      if (sweep->point(r).current) current = r;
    ASSERT_GE(current, 0) << variant;
    SummaryModel* summary = w.session->summaryModel();
    const QString headlineTime =
        summary->index(SummaryModel::TotalTime, SummaryModel::RatioColumn).data(Qt::DisplayRole).toString();
    const QString headlineFlops =
        summary->index(SummaryModel::MatmulFlops, SummaryModel::RatioColumn).data(Qt::DisplayRole).toString();
    EXPECT_EQ(sweep->index(current, SweepModel::TimeRatioColumn).data().toString(), headlineTime) << variant;
    EXPECT_EQ(sweep->index(current, SweepModel::FlopRatioColumn).data().toString(), headlineFlops) << variant;
    // Both figures appear in the headline the user reads.
    const QString headline = w.window.headlineLabel()->text();
    EXPECT_TRUE(headline.contains(headlineTime)) << variant << ": " << headline.toStdString();
    EXPECT_TRUE(headline.contains(headlineFlops)) << variant << ": " << headline.toStdString();
    // The baseline's own time is the same number in both places.
    EXPECT_DOUBLE_EQ(sweep->denseTimeS(),
                     summary->index(SummaryModel::TotalTime, SummaryModel::DenseColumn).data(ValueRole).toDouble())
        << variant;
    if (std::string(variant) == "staged" || std::string(variant) == "integrated") {
      // An MoE model's baseline is the MoE without MoD routing: the sweep's MoE point (same
      // experts, no routing) is the baseline itself, ratio 1.
      bool sawMoe = false;
      for (int r = 0; r < sweep->rowCount(); ++r)
        if (sweep->point(r).variant == "MoE") {
          EXPECT_DOUBLE_EQ(sweep->point(r).timeS, sweep->denseTimeS()) << variant;
          sawMoe = true;
        }
      EXPECT_TRUE(sawMoe) << variant;
      // Named as every tab names it: the model without (MoD) routing.
      EXPECT_TRUE(headline.contains(QStringLiteral("mod-220m without routing"))) << headline.toStdString();
    }
  }
}

// --- 3. the integrated variant's capacity --------------------------------------------------------

TEST(Controls, IntegratedVariantTakesItsNoOpExpertsFromTheCapacity) {
  Window w;
  QComboBox* v = w.panel->variantEditor();
  // mod-220m: capacity 0.125; 8 experts by default: N = 8·(1-0.125)/0.125 = 56 no-op experts.
  w.apply([&] { v->setCurrentIndex(v->findData(QStringLiteral("integrated"))); });
  ASSERT_TRUE(w.session->config().model.moe.has_value());
  EXPECT_EQ(w.session->config().model.moe->variant, sim::moe_variant::integrated);
  EXPECT_EQ(w.session->config().model.moe->noop_experts, 56);
  EXPECT_TRUE(w.panel->errorFor(QStringLiteral("mode")).isEmpty()) << w.panel->errorFor("mode").toStdString();
  EXPECT_TRUE(w.panel->noteText(QStringLiteral("variant")).contains(QStringLiteral("0.125")))
      << w.panel->noteText("variant").toStdString();
  // The current design point shows the capacity the panel shows.
  SweepModel* sweep = w.session->resultModel<SweepModel>();
  for (int r = 0; r < sweep->rowCount(); ++r)
    if (sweep->point(r).current) {
      EXPECT_DOUBLE_EQ(sweep->point(r).capacity, 0.125);
    }
  // 8 no-op experts beside 8 real ones: half the tokens compute, capacity 0.5.
  w.apply([&] { w.panel->noopEditor()->setValue(8); });
  EXPECT_EQ(w.session->config().model.moe->noop_experts, 8);
  EXPECT_DOUBLE_EQ(w.panel->capacityEditor()->value(), 0.5);
  for (const sim::layer_plan& l : sim::plan_layers(w.session->config().model))
    if (l.routed) {
      EXPECT_DOUBLE_EQ(l.capacity, 0.5) << l.index;
    }
}

// --- 4. the unsaved-changes prompt --------------------------------------------------------------

TEST(Controls, EditsAreNotDiscardedWithoutAsking) {
  Window w;
  EXPECT_FALSE(w.session->isModified());
  EXPECT_FALSE(w.window.windowTitle().contains(QStringLiteral(" *")));
  w.apply([&] { w.panel->dimensionEditor(QStringLiteral("d_ff"))->setValue(2048); });
  ASSERT_TRUE(w.session->isModified());
  EXPECT_TRUE(w.window.windowTitle().contains(QStringLiteral(" *")));

  // Quit, answered Cancel: the window stays and so do the edits.
  w.window.show();
  QString prompt;
  answerNextMessageBox(QMessageBox::Cancel, &prompt);
  EXPECT_FALSE(w.window.close());
  EXPECT_EQ(prompt, QStringLiteral("unsavedChangesPrompt"));
  EXPECT_EQ(w.session->config().model.d_ff, 2048);
  // Opening another model, answered Cancel: nothing is opened.
  prompt.clear();
  answerNextMessageBox(QMessageBox::Cancel, &prompt);
  EXPECT_FALSE(w.window.confirmDiscard(QStringLiteral("open another model")));
  EXPECT_EQ(prompt, QStringLiteral("unsavedChangesPrompt"));
  // Discard lets it go on.
  answerNextMessageBox(QMessageBox::Discard, nullptr);
  EXPECT_TRUE(w.window.confirmDiscard(QStringLiteral("open another model")));

  // Editing back to the file's value leaves nothing unsaved: no prompt at all.
  w.apply([&] { w.panel->dimensionEditor(QStringLiteral("d_ff"))->setValue(4096); });
  EXPECT_FALSE(w.session->isModified());
  EXPECT_FALSE(w.window.windowTitle().contains(QStringLiteral(" *")));
  EXPECT_TRUE(w.window.confirmDiscard(QStringLiteral("quit")));
}

TEST(Controls, SaveAsHasCtrlShiftSEverywhere) {
  Window w;
  ASSERT_NE(w.window.saveAsAction(), nullptr);
  EXPECT_TRUE(w.window.saveAsAction()->shortcuts().contains(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S)));
  EXPECT_TRUE(w.window.saveAsAction()->shortcuts().contains(QKeySequence(QStringLiteral("Ctrl+Shift+S"))));
}

// --- 6 and 11. hover on the design space and on the bars -----------------------------------------

TEST(Controls, DesignSpacePointsAndGapBarsShowTooltipsOnHover) {
  Window w;
  w.window.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w.window));
  DesignSpacePage* page = w.window.page<DesignSpacePage>();
  SweepModel* sweep = w.session->resultModel<SweepModel>();
  int row = -1;
  for (int r = 0; r < sweep->rowCount() && row < 0; ++r)
    if (!sweep->point(r).current) row = r;
  ASSERT_GE(row, 0);
  const QPoint at = page->pixelOf(row);
  ASSERT_GE(at.x(), 0);
  QTest::mouseMove(page->chartView()->viewport(), at);
  QTest::qWait(20);
  EXPECT_TRUE(page->hoverText().contains(sweep->label(row))) << page->hoverText().toStdString();
  EXPECT_TRUE(page->hoverText().contains(QStringLiteral("click to adopt")));
  // Far from every point: no tooltip.
  QTest::mouseMove(page->chartView()->viewport(), QPoint(2, 2));
  QTest::qWait(20);
  EXPECT_TRUE(page->hoverText().isEmpty()) << page->hoverText().toStdString();

  // The waterfall's bars: hovering the first one (the FLOP ratio) names it and its value.
  ASSERT_TRUE(w.window.setCurrentTab(QStringLiteral("layers")));
  auto* layers = qobject_cast<LayersPage*>(w.window.currentPage());
  ASSERT_NE(layers, nullptr);
  QAbstractBarSeries* bars = nullptr;
  for (QAbstractSeries* s : layers->gapView()->chart()->series())
    if ((bars = qobject_cast<QAbstractBarSeries*>(s))) break;
  ASSERT_NE(bars, nullptr);
  emit bars->hovered(true, 0, bars->barSets().first());
  GapModel* gap = w.session->resultModel<GapModel>();
  EXPECT_TRUE(layers->hoverText().startsWith(QStringLiteral("FLOPs: "))) << layers->hoverText().toStdString();
  EXPECT_TRUE(layers->hoverText().contains(gap->index(0, GapModel::PercentColumn).data().toString()));
}

// --- 8. refusals say why, and the figures say they are stale ------------------------------------

TEST(Controls, RefusedEditsSayWhyAndMarkTheResultsStale) {
  Window w;
  const double before =
      w.session->summaryModel()->index(SummaryModel::TotalTime, SummaryModel::CurrentColumn).data(ValueRole).toDouble();
  // c = 0 in the capacity box.
  w.panel->capacityEditor()->setValue(0.0);
  EXPECT_TRUE(w.panel->errorFor(QStringLiteral("routing")).contains(QStringLiteral("(0, 1]")))
      << w.panel->errorFor("routing").toStdString();
  EXPECT_EQ(w.panel->capacityEditor()->value(), 0.0);  // kept as typed, not snapped back
  EXPECT_TRUE(w.window.isStale());
  EXPECT_TRUE(w.window.headlineLabel()->text().contains(QStringLiteral("Stale")));
  // The figures are still those of the last valid configuration.
  EXPECT_DOUBLE_EQ(
      w.session->summaryModel()->index(SummaryModel::TotalTime, SummaryModel::CurrentColumn).data(ValueRole).toDouble(),
      before);
  // A valid capacity clears both.
  w.apply([&] { w.panel->capacityEditor()->setValue(0.25); });
  EXPECT_TRUE(w.panel->errorFor(QStringLiteral("routing")).isEmpty());
  EXPECT_FALSE(w.window.isStale());
  EXPECT_FALSE(w.window.headlineLabel()->text().contains(QStringLiteral("Stale")));

  // A per-layer capacity of 0 in the schedule table: refused with the reason, and the cell keeps
  // its valid value, so the figures are not stale (see ARefusedScheduleCellSaysWhyAndIsNotStale).
  QAbstractItemModel* schedule = w.panel->scheduleView()->model();
  EXPECT_FALSE(schedule->setData(schedule->index(1, ScheduleModel::CapacityColumn), 0.0));
  EXPECT_TRUE(w.panel->errorFor(QStringLiteral("routing")).contains(QStringLiteral("layer_capacities[1]")))
      << w.panel->errorFor("routing").toStdString();
  EXPECT_FALSE(w.window.isStale());

  // Layers = 0.
  w.panel->dimensionEditor(QStringLiteral("n_layers"))->setValue(0);
  EXPECT_TRUE(w.panel->errorFor(QStringLiteral("n_layers")).contains(QStringLiteral(">= 1")))
      << w.panel->errorFor("n_layers").toStdString();
  EXPECT_EQ(w.session->config().model.n_layers, 16);
  EXPECT_EQ(w.session->scheduleModel()->rowCount(), 16);
}

TEST(Controls, TheErrorBannerHasACloseButtonAndF5DismissesIt) {
  Window w;
  w.window.showError(QStringLiteral("x.json: d_model: must be >= 1"));
  ASSERT_FALSE(w.window.errorText().isEmpty());
  QToolButton* dismiss = nullptr;
  for (QToolButton* b : w.window.findChildren<QToolButton*>())
    if (b->accessibleName() == QStringLiteral("Dismiss the error")) dismiss = b;
  ASSERT_NE(dismiss, nullptr);
  QTest::mouseClick(dismiss, Qt::LeftButton);
  EXPECT_TRUE(w.window.errorText().isEmpty());
  // F5 recomputes and dismisses it.
  w.window.showError(QStringLiteral("again"));
  QAction* recompute = nullptr;
  for (QAction* a : w.window.findChildren<QAction*>())
    if (a->shortcut() == QKeySequence(QKeySequence::Refresh)) recompute = a;
  ASSERT_NE(recompute, nullptr);
  w.apply([&] { recompute->trigger(); });
  EXPECT_TRUE(w.window.errorText().isEmpty());
}

// --- 9. overflow and memory ----------------------------------------------------------------------

TEST(Controls, AnOverflowingWorkloadIsRefusedAtItsFieldAndTheChartsStay) {
  Window w;
  const int points = w.session->resultModel<SweepModel>()->rowCount();
  ASSERT_GT(points, 0);
  // batch 999,999 x sequence 1,048,576 = 1.05e12 tokens: the lm_head FLOPs 2·T·d·V overflow.
  w.session->setSeqLen(1048576);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !w.session->worker()->isBusy(); }, 60000));
  w.session->setBatch(999999);
  const QString error = w.panel->errorFor(QStringLiteral("batch"));
  EXPECT_TRUE(error.contains(QStringLiteral("64 bits"))) << error.toStdString();
  EXPECT_TRUE(error.contains(QStringLiteral("999,999")) || error.contains(QStringLiteral("999999")))
      << error.toStdString();
  EXPECT_EQ(w.session->config().load.batch, 1);  // the last valid workload stays
  EXPECT_GT(w.session->resultModel<SweepModel>()->rowCount(), 0);
  EXPECT_TRUE(w.window.isStale());
}

TEST(Controls, AStepThatDoesNotFitInMemorySaysWhatDoesNot) {
  Window w;
  // mod-220m prefill at S = 2^20 on an 80 GB H100 with fused attention (the GPU default): no
  // scores; the largest part is the LM head's logits, B·S·V·e = 2^20·32,000·2 = 67.1 GB (with a
  // dense layer's 2^20·(3·1,024 + 2·1,024 + 4,096)·2 = 19.3 GB, its attention output 2.1 GB and
  // the weights 0.5 GB: 89.2 GB).
  w.apply([&] { w.session->setSeqLen(1 << 20); });
  QString headline = w.window.headlineLabel()->text();
  EXPECT_TRUE(headline.contains(QStringLiteral("does not fit in 80 GB"))) << headline.toStdString();
  EXPECT_TRUE(headline.contains(QStringLiteral("logits take 67.1 GB"))) << headline.toStdString();
  EXPECT_FALSE(headline.contains(QStringLiteral("attention scores"))) << headline.toStdString();
  // Unfused: a dense layer's attention scores are B·H·S²·e = 1·16·2^40·2 bytes = 35.2 TB.
  w.apply([&] { w.session->setAttention(attention_impl::unfused); });
  headline = w.window.headlineLabel()->text();
  EXPECT_TRUE(headline.contains(QStringLiteral("attention scores"))) << headline.toStdString();
  EXPECT_TRUE(headline.contains(QStringLiteral("35.2 TB"))) << headline.toStdString();
  // At S = 2048 it fits: no word about memory.
  w.apply([&] { w.session->setSeqLen(2048); });
  EXPECT_FALSE(w.window.headlineLabel()->text().contains(QStringLiteral("does not fit")));
}

// --- 10. mixed capacities, 13. the dtype following the hardware ----------------------------------

TEST(Controls, MixedCapacitiesAreNamedNotHidden) {
  Window w;
  QAbstractItemModel* schedule = w.panel->scheduleView()->model();
  w.apply([&] { ASSERT_TRUE(schedule->setData(schedule->index(1, ScheduleModel::CapacityColumn), 0.5)); });
  EXPECT_EQ(w.presetKey(), QStringLiteral("custom"));
  const QString note = w.panel->noteText(QStringLiteral("schedule"));
  // Layer 1 at 0.5, the other seven routed layers (3, 5, ..., 15) at 0.125.
  EXPECT_TRUE(note.contains(QStringLiteral("1 layer at 0.5"))) << note.toStdString();
  EXPECT_TRUE(note.contains(QStringLiteral("7 layers at 0.125"))) << note.toStdString();
}

TEST(Controls, ChoosingCpuHardwareSaysTheDtypeChanged) {
  Window w;
  ASSERT_EQ(w.session->config().load.type, sim::dtype::bf16);
  w.apply([&] {
    ASSERT_TRUE(w.window.openHardwareFile(QStringLiteral(MODSIM_SOURCE_DIR "/configs/hardware/cpu-calibrated.json")));
  });
  EXPECT_EQ(w.session->config().load.type, sim::dtype::fp32);
  const QString note = w.panel->noteText(QStringLiteral("dtype"));
  EXPECT_TRUE(note.contains(QStringLiteral("bf16 → fp32"))) << note.toStdString();
  EXPECT_TRUE(note.contains(QStringLiteral("cpu"))) << note.toStdString();
}

// --- 12. validation rows of the MoDE variants ----------------------------------------------------

TEST(Controls, ValidationRowsOfTheTwoMoDEVariantsDiffer) {
  Window w;
  ValidationModel* v = w.session->resultModel<ValidationModel>();
  int staged = 0, integrated = 0;
  for (int r = 0; r < v->rowCount(); ++r) {
    const ValidationRow& row = v->row(r);
    if (row.op != "layer_mode") continue;
    staged += row.shape.find("MoDE staged") != std::string::npos;
    integrated += row.shape.find("MoDE integrated") != std::string::npos;
  }
  // The H100 calibration's measurements hold layer_mode rows of both variants.
  EXPECT_GT(staged, 0);
  EXPECT_GT(integrated, 0);
}

// --- 14. exports and recent files ----------------------------------------------------------------

TEST(Controls, AnExportedViewIsTheChartUnderACaption) {
  Window w;
  w.window.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w.window));
  const QString caption = w.window.exportCaption();
  EXPECT_TRUE(caption.contains(QStringLiteral("mod-220m")));
  EXPECT_TRUE(caption.contains(QString::fromStdString(w.session->config().hardware.name)));
  EXPECT_TRUE(caption.contains(QStringLiteral("batch 1, sequence 2048")));
  QTemporaryDir dir;
  const QString png = dir.filePath(QStringLiteral("view.png"));
  ASSERT_TRUE(w.window.exportCurrentView(png));
  const QImage image(png);
  ASSERT_FALSE(image.isNull());
  // The design space's chart alone (not its table and check box) plus the caption strip.
  QChartView* chart = w.window.page<DesignSpacePage>()->chartView();
  EXPECT_EQ(image.height(), int((chart->height() + 28) * w.window.devicePixelRatioF()));
  EXPECT_LT(image.height(), int(w.window.currentPage()->height() * w.window.devicePixelRatioF()));
}

TEST(Controls, ScreenshotRunsLeaveTheRecentFilesAlone) {
  QSettings().remove(QStringLiteral("recentFiles"));
  {
    MainWindow window;
    window.setRememberFiles(false);
    EXPECT_TRUE(window.openModelFile(shipped("mod-60m")));
  }
  EXPECT_TRUE(QSettings().value(QStringLiteral("recentFiles")).toStringList().isEmpty());
  {
    MainWindow window;
    EXPECT_TRUE(window.openModelFile(shipped("mod-60m")));
  }
  const QStringList recent = QSettings().value(QStringLiteral("recentFiles")).toStringList();
  ASSERT_EQ(recent.size(), 1);
  EXPECT_TRUE(recent.first().endsWith(QStringLiteral("configs/models/mod-60m.json")));
}

// --- 15. saving a model keeps what it had --------------------------------------------------------

TEST(Controls, SavingAModelKeepsItsNotesAndItsLayout) {
  Window w;
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("mine.json"));
  ASSERT_TRUE(w.window.saveModelFile(path));
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const QString text = QString::fromUtf8(f.readAll());
  // The shipped file's notes and routing block, one member per line, numbers as written there.
  const sim::model_spec shippedSpec = sim::load_model(shipped("mod-220m").toStdString());
  EXPECT_TRUE(text.contains(QString::fromStdString("\"notes\": \"" + shippedSpec.notes.substr(0, 40))));
  EXPECT_TRUE(
      text.contains(QStringLiteral("\"routing\": {\n    \"capacity\": 0.125,\n    \"schedule\": \"every_other\",")))
      << text.toStdString();
  EXPECT_FALSE(text.contains(QStringLiteral("E-1")));
  const sim::model_spec back = sim::load_model(path.toStdString());
  EXPECT_EQ(back.notes, shippedSpec.notes);
}

// --- the researcher's question: sampling at a decode step ---------------------------------------

TEST(Controls, InDecodeTheDesignSpaceTimesTheStepTheHeadlineShows) {
  Window w("mod-1b");
  w.apply([&] { w.session->setMode(sim::run_mode::decode); });
  SweepModel* sweep = w.session->resultModel<SweepModel>();
  int current = -1;
  for (int r = 0; r < sweep->rowCount(); ++r)
    if (sweep->point(r).current) current = r;
  ASSERT_GE(current, 0);
  SummaryModel* summary = w.session->summaryModel();
  // One decode step, the discrete-event one, in both: the same seconds and the same baseline.
  EXPECT_DOUBLE_EQ(sweep->point(current).timeS,
                   summary->index(SummaryModel::TotalTime, SummaryModel::CurrentColumn).data(ValueRole).toDouble());
  EXPECT_DOUBLE_EQ(sweep->denseTimeS(),
                   summary->index(SummaryModel::TotalTime, SummaryModel::DenseColumn).data(ValueRole).toDouble());
  // The chart draws the step a 1.5x faster sampling needs: the baseline's step / 1.5 (in ms).
  QLineSeries* target = nullptr;
  for (QAbstractSeries* s : w.window.page<DesignSpacePage>()->chartView()->chart()->series())
    if (s->name().startsWith(QStringLiteral("1.5x faster than the baseline"))) target = qobject_cast<QLineSeries*>(s);
  ASSERT_NE(target, nullptr);
  ASSERT_GE(target->count(), 1);
  EXPECT_DOUBLE_EQ(target->at(0).y(), sweep->denseTimeS() / 1.5 * 1e3);
}

// One decode answer: the headline, the Design space and the sampling map show one strategy (the
// fastest of the map's strategies at the configuration's cell, until the user picks one in the
// map) over the same routing draws, so the headline is the map's cell of that strategy.
TEST(Controls, InDecodeTheHeadlineTheDesignSpaceAndTheMapShowOneStrategy) {
  Window w;
  w.apply([&] {
    w.session->setMode(sim::run_mode::decode);
    w.session->setBatch(16);
    w.session->setSeqLen(512);
  });
  ASSERT_TRUE(w.window.setCurrentTab(QStringLiteral("serving")));
  auto* page = qobject_cast<ServingPage*>(w.window.currentPage());
  ASSERT_NE(page, nullptr);
  SamplingModel* sampling = w.session->resultModel<SamplingModel>();
  ASSERT_TRUE(sampling->available()) << sampling->unavailableReason().toStdString();
  const analysis::sampling_map& m = sampling->map();
  const auto at = [](const std::vector<std::int64_t>& v, std::int64_t x) {
    return static_cast<std::size_t>(std::find(v.begin(), v.end(), x) - v.begin());
  };
  const std::size_t b = at(m.batches, 16), c = at(m.contexts, 512);
  ASSERT_LT(b, m.batches.size());
  ASSERT_LT(c, m.contexts.size());
  // Checks that every face shows strategy `name` and the map's cell of it.
  const auto expectOneAnswer = [&](const std::string& name) {
    const PredictionResult& p = w.session->lastResult()->prediction;
    EXPECT_EQ(p.decodeStrategy, name);
    EXPECT_EQ(sampling->strategyNames().value(sampling->strategy()).toStdString(), name);
    EXPECT_EQ(page->strategyEditor()->currentText().toStdString(), name);
    const analysis::sampling_cell& cell = sampling->map().cell(static_cast<std::size_t>(sampling->strategy()), b, c);
    EXPECT_DOUBLE_EQ(p.totalS, cell.model_s) << name;
    EXPECT_DOUBLE_EQ(p.denseTotalS, cell.baseline_s) << name;
    EXPECT_TRUE(w.session->summaryModel()->headline().contains(
        QStringLiteral("Decode strategy <b>%1</b>").arg(QString::fromStdString(name))))
        << w.session->summaryModel()->headline().toStdString();
    SweepModel* sweep = w.session->resultModel<SweepModel>();
    int current = -1;
    for (int r = 0; r < sweep->rowCount(); ++r)
      if (sweep->point(r).current) current = r;
    ASSERT_GE(current, 0);
    EXPECT_DOUBLE_EQ(sweep->point(current).timeS, p.totalS) << name;
    EXPECT_EQ(sweep->strategy(), name);
    EXPECT_TRUE(w.window.page<DesignSpacePage>()->chartView()->chart()->title().contains(QString::fromStdString(name)));
  };
  // By default: the fastest of the map's strategies at this cell.
  std::size_t fastest = 0;
  for (std::size_t s = 1; s < m.strategies.size(); ++s)
    if (m.cell(s, b, c).model_s < m.cell(fastest, b, c).model_s) fastest = s;
  const std::string fastestName = m.strategies[fastest].strategy.name();
  expectOneAnswer(fastestName);
  EXPECT_NE(w.session->lastResult()->prediction.decodeStrategyLabel.find("fastest of"), std::string::npos);
  // The user's choice in the map: every face follows it.
  const int other = fastest == 0 ? 1 : 0;
  const std::string otherName = sampling->strategyNames().value(other).toStdString();
  w.apply([&] {
    page->strategyEditor()->setCurrentIndex(other);
    emit page->strategyEditor()->activated(other);
  });
  expectOneAnswer(otherName);
  EXPECT_NE(w.session->lastResult()->prediction.decodeStrategyLabel.find("the user's choice"), std::string::npos);
}

// --- the step over several GPUs ------------------------------------------------------------------

TEST(Controls, TheParallelismTabRanksEverySplitOfTheGpusChosen) {
  Window w;
  ParallelModel* parallel = w.session->resultModel<ParallelModel>();
  ASSERT_TRUE(parallel->available()) << parallel->unavailableReason().toStdString();
  // 8 GPUs at batch 1: no data parallelism (one sequence), so tp x pp in {8x1, 4x2, 2x4, 1x8}.
  EXPECT_EQ(parallel->rowCount(), 4);
  for (int r = 0; r < parallel->rowCount(); ++r) {
    EXPECT_EQ(parallel->row(r).tp * parallel->row(r).pp * parallel->row(r).dp, 8);
    EXPECT_EQ(parallel->row(r).dp, 1);
  }
  // Four GPUs from the tab's own box: 4x1 and 2x2 and 1x4.
  ASSERT_TRUE(w.window.setCurrentTab(QStringLiteral("parallel")));
  auto* page = qobject_cast<ParallelPage*>(w.window.currentPage());
  ASSERT_NE(page, nullptr);
  w.apply([&] { page->gpusEditor()->setValue(4); });
  EXPECT_EQ(w.session->config().gpus, 4);
  EXPECT_EQ(parallel->rowCount(), 3);
  int chosen = 0;
  for (int r = 0; r < parallel->rowCount(); ++r) {
    EXPECT_EQ(parallel->row(r).tp * parallel->row(r).pp, 4);
    chosen += parallel->row(r).chosen;
  }
  EXPECT_EQ(chosen, 1);
  // The first row is the one detailed: the fastest that fits, no slower than any other that fits.
  EXPECT_TRUE(parallel->row(0).chosen);
  for (int r = 1; r < parallel->rowCount(); ++r)
    if (parallel->row(r).fits) {
      EXPECT_LE(parallel->row(0).stepS, parallel->row(r).stepS);
    }
  EXPECT_TRUE(parallel->summary().contains(QString::fromStdString(parallel->row(0).split)));
}

// --- issue 45: baselines ------------------------------------------------------------------------

TEST(Controls, TheBaselineFollowsTheModelOpenedAndAChosenOneSaysSo) {
  Window w;
  // dense-220m chosen on purpose for mod-220m: the headline names it and says it was chosen.
  w.apply([&] { w.session->setBaseline(shipped("dense-220m")); });
  ASSERT_TRUE(w.session->config().baseline.has_value());
  QString headline = w.window.headlineLabel()->text();
  EXPECT_TRUE(headline.contains(QStringLiteral("dense-220m"))) << headline.toStdString();
  EXPECT_TRUE(headline.contains(QStringLiteral("chosen in the Baseline box"))) << headline.toStdString();

  // Importing another model: the baseline is that model's own again, and the panel says what
  // became of the chosen one.
  w.apply(
      [&] { ASSERT_TRUE(w.window.openModelFile(QStringLiteral(MODSIM_SOURCE_DIR "/configs/hf/smollm-135m.json"))); });
  EXPECT_FALSE(w.session->config().baseline.has_value());
  const std::string name = w.session->config().model.name;
  headline = w.window.headlineLabel()->text();
  EXPECT_TRUE(headline.contains(QString::fromStdString(name + " without routing"))) << headline.toStdString();
  EXPECT_FALSE(headline.contains(QStringLiteral("dense-220m"))) << headline.toStdString();
  // A model without routing is its own baseline: every ratio is 1.
  SummaryModel* summary = w.session->summaryModel();
  EXPECT_DOUBLE_EQ(summary->index(SummaryModel::TotalTime, SummaryModel::RatioColumn).data(ValueRole).toDouble(), 1.0);
  EXPECT_DOUBLE_EQ(summary->index(SummaryModel::MatmulFlops, SummaryModel::RatioColumn).data(ValueRole).toDouble(),
                   1.0);
  const QString note = w.panel->noteText(QStringLiteral("baseline"));
  EXPECT_TRUE(note.contains(QStringLiteral("dense-220m"))) << note.toStdString();

  // Chosen again for this model, on purpose: it stays, the headline says so, and the sampling
  // map's absence does not claim the decode step is the baseline's.
  w.apply([&] { w.session->setBaseline(shipped("dense-220m")); });
  headline = w.window.headlineLabel()->text();
  EXPECT_TRUE(headline.contains(QStringLiteral("chosen in the Baseline box"))) << headline.toStdString();
  SamplingModel* sampling = w.session->resultModel<SamplingModel>();
  ASSERT_FALSE(sampling->available());
  EXPECT_FALSE(sampling->unavailableReason().contains(QStringLiteral("its decode step is the baseline's")))
      << sampling->unavailableReason().toStdString();
  EXPECT_TRUE(sampling->unavailableReason().contains(QStringLiteral("dense-220m")))
      << sampling->unavailableReason().toStdString();
}

TEST(Controls, EveryTabNamesOneBaselineAndAnAdoptedPointKeepsItsRatio) {
  Window w;
  // mod-220m has no MoE: its baseline is mod-220m with the routing removed, a dense MLP
  // (analysis::baseline_label's "<model> without routing").
  const QString baseline = QStringLiteral("mod-220m without routing");
  ASSERT_TRUE(w.window.headlineLabel()->text().contains(baseline)) << w.window.headlineLabel()->text().toStdString();
  SweepModel* sweep = w.session->resultModel<SweepModel>();
  EXPECT_EQ(sweep->baselineName(), baseline);
  GapModel* gap = w.session->resultModel<GapModel>();
  ASSERT_GT(gap->rowCount(), 0);
  EXPECT_TRUE(gap->describe(0).contains(baseline)) << gap->describe(0).toStdString();
  ParallelModel* parallel = w.session->resultModel<ParallelModel>();
  ASSERT_TRUE(parallel->available());
  EXPECT_TRUE(parallel->summary().contains(baseline)) << parallel->summary().toStdString();
  SamplingModel* sampling = w.session->resultModel<SamplingModel>();
  ASSERT_TRUE(sampling->available());
  EXPECT_EQ(QString::fromStdString(sampling->map().baseline_name), baseline);

  // An MoDE staged point of the design space: its ratio there is against the dense MLP.
  int row = -1;
  for (int r = 0; r < sweep->rowCount() && row < 0; ++r)
    if (sweep->point(r).variant == "MoDE staged" && !sweep->point(r).current) row = r;
  ASSERT_GE(row, 0);
  const double ratio = sweep->index(row, SweepModel::TimeRatioColumn).data(ValueRole).toDouble();
  const double pointS = sweep->point(row).timeS;
  const double baselineS = sweep->denseTimeS();
  ASSERT_GT(ratio, 0);
  DesignSpacePage* page = w.window.page<DesignSpacePage>();
  w.apply([&] { emit page->adoptRequested(row); });
  ASSERT_TRUE(w.session->config().model.moe.has_value());
  // Adopted, it reads the same time over the same baseline: one value.
  SummaryModel* summary = w.session->summaryModel();
  EXPECT_NEAR(summary->index(SummaryModel::TotalTime, SummaryModel::CurrentColumn).data(ValueRole).toDouble(), pointS,
              1e-9 * pointS);
  EXPECT_NEAR(summary->index(SummaryModel::TotalTime, SummaryModel::DenseColumn).data(ValueRole).toDouble(), baselineS,
              1e-9 * baselineS);
  EXPECT_NEAR(summary->index(SummaryModel::TotalTime, SummaryModel::RatioColumn).data(ValueRole).toDouble(), ratio,
              1e-9);
  // ... under the same name, and the headline says why it is not the MoE's own baseline.
  const QString headline = w.window.headlineLabel()->text();
  EXPECT_TRUE(headline.contains(baseline)) << headline.toStdString();
  EXPECT_TRUE(headline.contains(QStringLiteral("kept from the design space"))) << headline.toStdString();
  EXPECT_EQ(sweep->baselineName(), baseline);
  EXPECT_DOUBLE_EQ(sweep->denseTimeS(), baselineS);
  // Editing a dimension keeps the kept baseline beside the model: the same d_ff in both.
  w.apply([&] { w.panel->dimensionEditor(QStringLiteral("d_ff"))->setValue(2048); });
  ASSERT_TRUE(w.session->config().baseline.has_value());
  EXPECT_EQ(w.session->config().baseline->d_ff, 2048);
  EXPECT_FALSE(w.session->config().baseline->moe.has_value());
}

// --- issue 45: refusals say why, and Stale clears when the value does ----------------------------

TEST(Controls, ARefusedScheduleCellSaysWhyAndIsNotStale) {
  Window w;
  w.window.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w.window));
  QTableView* view = w.panel->scheduleView();
  const QModelIndex cell = view->model()->index(1, ScheduleModel::CapacityColumn);
  // Typing 0 in layer 1's cell and pressing Enter.
  view->setCurrentIndex(cell);
  view->edit(cell);
  auto* editor = view->findChild<QDoubleSpinBox*>();
  ASSERT_NE(editor, nullptr);
  editor->setValue(0.0);
  QTest::keyClick(editor, Qt::Key_Return);
  QTest::qWait(20);
  // The cell shows the valid capacity again, the reason is shown, and the figures (of 0.125,
  // what the cell shows) are not stale.
  EXPECT_DOUBLE_EQ(cell.data(Qt::EditRole).toDouble(), 0.125);
  const QString error = w.panel->errorFor(QStringLiteral("routing"));
  EXPECT_TRUE(error.contains(QStringLiteral("(0, 1], got 0"))) << error.toStdString();
  EXPECT_TRUE(error.contains(QStringLiteral("layer 1 keeps 0.125"))) << error.toStdString();
  EXPECT_FALSE(w.window.isStale());
  EXPECT_FALSE(w.window.headlineLabel()->text().contains(QStringLiteral("Stale")));
}

TEST(Controls, ZeroNoOpExpertsIsRefusedWithTheReasonUntilAValidValue) {
  Window w;
  QComboBox* v = w.panel->variantEditor();
  w.apply([&] { v->setCurrentIndex(v->findData(QStringLiteral("integrated"))); });
  // 8 experts at c = 0.125: 8·(1 − 0.125)/0.125 = 56 no-op experts.
  ASSERT_EQ(w.session->config().model.moe->noop_experts, 56);
  w.panel->noopEditor()->setValue(0);
  EXPECT_EQ(w.panel->noopEditor()->value(), 0);  // kept as typed, not clamped back silently
  const QString error = w.panel->errorFor(QStringLiteral("mode"));
  EXPECT_TRUE(error.contains(QStringLiteral("noop_experts"))) << error.toStdString();
  EXPECT_TRUE(error.contains(QStringLiteral(">= 1, got 0"))) << error.toStdString();
  EXPECT_EQ(w.session->config().model.moe->noop_experts, 56);
  EXPECT_DOUBLE_EQ(w.panel->capacityEditor()->value(), 0.125);
  EXPECT_TRUE(w.window.isStale());
  // A valid value clears the error and the stale mark: 8 no-op experts beside 8, c = 8/16.
  w.apply([&] { w.panel->noopEditor()->setValue(8); });
  EXPECT_EQ(w.session->config().model.moe->noop_experts, 8);
  EXPECT_TRUE(w.panel->errorFor(QStringLiteral("mode")).isEmpty());
  EXPECT_FALSE(w.window.isStale());
}

// --- issue 45: the sampling strategy chosen stays chosen -----------------------------------------

TEST(Controls, TheSamplingStrategyChosenStaysWhenAnotherModelIsOpened) {
  Window w;
  ASSERT_TRUE(w.window.setCurrentTab(QStringLiteral("serving")));
  auto* page = qobject_cast<ServingPage*>(w.window.currentPage());
  ASSERT_NE(page, nullptr);
  SamplingModel* sampling = w.session->resultModel<SamplingModel>();
  ASSERT_TRUE(sampling->available());
  const QStringList names = sampling->strategyNames();
  ASSERT_GE(names.size(), 2);
  // A strategy other than the one shown by default, chosen in the page's box.
  const int other = sampling->strategy() == 0 ? 1 : 0;
  QComboBox* box = page->strategyEditor();
  box->setCurrentIndex(other);
  emit box->activated(other);
  ASSERT_EQ(sampling->strategy(), other);
  // Another model opened, then an edit: the choice stands, in the model and in the box.
  w.apply([&] { ASSERT_TRUE(w.window.openModelFile(shipped("mod-60m"))); });
  EXPECT_EQ(sampling->strategyNames().value(sampling->strategy()), names[other]);
  w.apply([&] { w.session->setBatch(4); });
  EXPECT_EQ(sampling->strategyNames().value(sampling->strategy()), names[other]);
  EXPECT_EQ(box->currentText(), names[other]);
}

// --- issue 45: integrated MoDE and per-layer capacities ------------------------------------------

TEST(Controls, IntegratedMoDERefusesAPerLayerCapacityWithTheReason) {
  Window w;
  QComboBox* v = w.panel->variantEditor();
  w.apply([&] { v->setCurrentIndex(v->findData(QStringLiteral("integrated"))); });
  ASSERT_EQ(w.session->config().model.moe->noop_experts, 56);
  // Layer 1 at 0.5 while layers 3, 5, ..., 15 stay at 0.125: one N cannot give both.
  QAbstractItemModel* schedule = w.panel->scheduleView()->model();
  schedule->setData(schedule->index(1, ScheduleModel::CapacityColumn), 0.5);
  const QString error = w.panel->errorFor(QStringLiteral("routing"));
  EXPECT_TRUE(error.contains(QStringLiteral("integrated MoDE has one capacity"))) << error.toStdString();
  EXPECT_TRUE(error.contains(QStringLiteral("staged"))) << error.toStdString();
  // The table shows the configuration again, which did not change, and nothing is stale.
  EXPECT_TRUE(QTest::qWaitFor([&] { return *w.session->scheduleModel()->layers()[1] == 0.125; }, 2000));
  EXPECT_EQ(w.session->config().model.moe->noop_experts, 56);
  for (const sim::layer_plan& l : sim::plan_layers(w.session->config().model))
    if (l.routed) {
      EXPECT_DOUBLE_EQ(l.capacity, 0.125) << l.index;
    }
  EXPECT_FALSE(w.window.isStale());
  // One capacity for every routed layer is honoured: c = 0.5 gives N = 8·(1 − 0.5)/0.5 = 8.
  w.apply([&] { w.panel->capacityEditor()->setValue(0.5); });
  EXPECT_EQ(w.session->config().model.moe->noop_experts, 8);
}

// --- issue 45: the start-up model's notes, and notes that describe another routing ---------------

TEST(Controls, TheStartUpModelIsTheShippedFileAndSavesWithItsNotes) {
  MainWindow window;
  ExplorerSession* session = window.session();
  const sim::model_spec shippedSpec = sim::load_model(shipped("mod-220m").toStdString());
  ASSERT_FALSE(shippedSpec.notes.empty());
  EXPECT_EQ(session->config().model.notes, shippedSpec.notes);
  EXPECT_FALSE(session->isModified());
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("startup.json"));
  ASSERT_TRUE(window.saveModelFile(path));
  EXPECT_EQ(sim::load_model(path.toStdString()).notes, shippedSpec.notes);
}

TEST(Controls, NotesWrittenForAnotherRoutingAreMarkedWhenSaved) {
  Window w;
  const std::string notes = w.session->config().model.notes;
  ASSERT_FALSE(notes.empty());
  EXPECT_TRUE(w.panel->noteText(QStringLiteral("notes")).isEmpty());
  // The notes speak of 12.5 %, every other layer; the capacity becomes 0.25.
  w.apply([&] { w.panel->capacityEditor()->setValue(0.25); });
  const QString status = w.panel->noteText(QStringLiteral("notes"));
  EXPECT_TRUE(status.contains(QStringLiteral("MoD c=0.125 every_other"))) << status.toStdString();
  EXPECT_TRUE(status.contains(QStringLiteral("MoD c=0.25 every_other"))) << status.toStdString();
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("edited.json"));
  ASSERT_TRUE(w.window.saveModelFile(path));
  const std::string saved = sim::load_model(path.toStdString()).notes;
  EXPECT_EQ(saved.rfind(notes, 0), 0u) << saved;  // the notes as written, then the mark
  EXPECT_NE(saved.find("routing was edited to MoD c=0.25 every_other"), std::string::npos) << saved;
  EXPECT_NE(saved.find("describe MoD c=0.125 every_other"), std::string::npos) << saved;
  // Saved again after another edit: one mark, naming the routing the notes describe.
  w.apply([&] { w.panel->capacityEditor()->setValue(0.5); });
  ASSERT_TRUE(w.window.saveModelFile(path));
  const std::string again = sim::load_model(path.toStdString()).notes;
  EXPECT_EQ(again, notes +
                       " [modsim-gui: the routing was edited to MoD c=0.5 every_other; the notes before this "
                       "mark describe MoD c=0.125 every_other.]");
  // Back at the routing they describe: saved as written.
  w.apply([&] { w.panel->capacityEditor()->setValue(0.125); });
  ASSERT_TRUE(w.window.saveModelFile(path));
  EXPECT_EQ(sim::load_model(path.toStdString()).notes, notes);
  EXPECT_TRUE(w.panel->noteText(QStringLiteral("notes")).isEmpty());
}

// --- issue 45: export captions name the routing --------------------------------------------------

TEST(Controls, AnExportCaptionNamesTheScheduleAndTheCapacity) {
  Window w;
  // mod-220m: capacity 0.125 at every other layer.
  EXPECT_TRUE(w.window.exportCaption().contains(QStringLiteral("MoD c=0.125 every_other")))
      << w.window.exportCaption().toStdString();
  // Layer 1 at 0.5: one routed layer at 0.5, the other seven at 0.125.
  QAbstractItemModel* schedule = w.panel->scheduleView()->model();
  w.apply([&] { ASSERT_TRUE(schedule->setData(schedule->index(1, ScheduleModel::CapacityColumn), 0.5)); });
  const QString caption = w.window.exportCaption();
  EXPECT_TRUE(caption.contains(QStringLiteral("c=0.125×7 0.5×1"))) << caption.toStdString();
  // The SVG carries the caption as its description.
  QTemporaryDir dir;
  const QString svg = dir.filePath(QStringLiteral("view.svg"));
  ASSERT_TRUE(w.window.exportCurrentView(svg));
  QFile f(svg);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  EXPECT_TRUE(QString::fromUtf8(f.readAll()).contains(QStringLiteral("c=0.125×7 0.5×1")));
}

// The model panel shows the attention window read-only: "full" for mod-220m, the window of
// Mistral-7B's config.json (sliding_window 4096) once it is opened, with a tooltip saying what
// it prices; the label takes no edits.
TEST(Controls, ModelPanelShowsTheSlidingWindow) {
  Window w;
  QLabel* window = w.panel->windowLabel();
  ASSERT_NE(window, nullptr);
  EXPECT_EQ(window->text(), QStringLiteral("full"));
  w.apply([&] {
    ASSERT_TRUE(w.window.openModelFile(QStringLiteral(MODSIM_SOURCE_DIR "/configs/hf/mistral-7b-v0.1.json")));
  });
  EXPECT_EQ(w.session->config().model.sliding_window, 4096);
  EXPECT_TRUE(window->text().contains(QStringLiteral("4096"))) << window->text().toStdString();
  EXPECT_TRUE(window->toolTip().contains(QStringLiteral("at most 4096 keys"))) << window->toolTip().toStdString();
  EXPECT_TRUE(window->toolTip().contains(QStringLiteral("KV"))) << window->toolTip().toStdString();
  EXPECT_FALSE(window->textInteractionFlags() & Qt::TextEditable);
  w.apply([&] { ASSERT_TRUE(w.window.openModelFile(shipped("mod-60m"))); });
  EXPECT_EQ(window->text(), QStringLiteral("full"));
}
