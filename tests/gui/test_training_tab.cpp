// The Training tab (gui/core/tabs/training_tab.hpp): its models pass QAbstractItemModelTester,
// it shows analysis::analyze's training answer, and it follows the budget typed and every edit.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QTest>
#include <memory>

#include "analysis/analysis.hpp"
#include "gui/core/compute.hpp"
#include "gui/core/compute_worker.hpp"
#include "explorer_window.hpp"
#include "gui/core/explorer_session.hpp"
#include "gui/core/main_window.hpp"
#include "gui/core/tabs/training_tab.hpp"
#include "sim/model/config.hpp"

using namespace modsim;
using namespace modsim::gui;

namespace {

ExplorerConfig paperConfig() {
  ExplorerConfig c;
  c.model = sim::load_model(MODSIM_SOURCE_DIR "/configs/models/mod-220m.json");
  c.hardware = sim::load_hardware(MODSIM_SOURCE_DIR "/configs/hardware/h100-sxm.json");
  c.load.batch = 2;
  c.load.seq_len = 1024;
  c.load.run = sim::run_mode::forward;
  c.load.type = sim::dtype::bf16;
  c.sweepEnabled = false;
  c.servingEnabled = false;
  return c;
}

ComputeResultPtr resultOf(const ExplorerConfig& c) {
  auto r = std::make_shared<ComputeResult>();
  computeParts(c, PredictionPart | TrainingPart, *r);
  return r;
}

using Window = test::ExplorerWindow;

}  // namespace

TEST(TrainingTab, ModelsPassTheModelTesterThroughResultsAndFailures) {
  TrainingModel model;
  TrainingSourcesModel sources;
  QAbstractItemModelTester t1(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  QAbstractItemModelTester t2(&sources, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const ComputeResultPtr ok = resultOf(paperConfig());
  for (ResultModel* m : {static_cast<ResultModel*>(&model), static_cast<ResultModel*>(&sources)}) {
    m->setResult(ok);
    EXPECT_TRUE(m->available()) << m->unavailableReason().toStdString();
    for (int r = 0; r < m->rowCount(); ++r)
      for (int c = 0; c < m->columnCount(); ++c)
        for (int role : {int(Qt::DisplayRole), int(ValueRole), int(DenseValueRole), int(Qt::ToolTipRole)})
          (void)m->index(r, c).data(role);
    auto failed = std::make_shared<ComputeResult>();
    failed->error = "x.json: routing.capacity: must be in (0, 1], got 1.5";
    m->setResult(failed);
    EXPECT_FALSE(m->available());
    EXPECT_EQ(m->unavailableReason().toStdString(), failed->error);
    m->setResult(ok);
  }
  // With the default budget every row; the sources one per term.
  EXPECT_EQ(model.rowCount(), TrainingModel::RowCount);
  EXPECT_EQ(sources.rowCount(), static_cast<int>(ok->training.training.sources.size()));
}

TEST(TrainingTab, ShowsTheAnalysisTrainingAnswerWithTheBudgetByHand) {
  const ExplorerConfig c = paperConfig();
  TrainingModel model;
  model.setResult(resultOf(c));
  ASSERT_TRUE(model.available());
  // The command line's and the report's answer: analyze with the same configuration.
  analysis::scenario s;
  s.training = analysis::training_request{6e18};
  const analysis::analysis_result a = analysis::analyze({c.model, c.load, c.hardware}, s);
  ASSERT_TRUE(a.training);
  EXPECT_DOUBLE_EQ(model.modelValue(TrainingModel::StepRow), a.training->model.step_s);
  EXPECT_DOUBLE_EQ(model.baselineValue(TrainingModel::StepRow), a.training->baseline.step_s);
  EXPECT_DOUBLE_EQ(model.modelValue(TrainingModel::MfuRow), a.training->model.mfu);
  EXPECT_DOUBLE_EQ(model.modelValue(TrainingModel::MemoryRow), a.training->model.memory.total());
  // By hand: tokens per second = 2 × 1,024 / step; steps = 6e18 / model FLOPs per step.
  const double step = model.modelValue(TrainingModel::StepRow);
  EXPECT_DOUBLE_EQ(model.modelValue(TrainingModel::TokensPerSecondRow), 2048 / step);
  const double flops = model.modelValue(TrainingModel::ModelFlopsRow);
  EXPECT_DOUBLE_EQ(model.modelValue(TrainingModel::BudgetStepsRow), 6e18 / flops);
  EXPECT_DOUBLE_EQ(model.modelValue(TrainingModel::BudgetWallRow), 6e18 / flops * step);
  EXPECT_EQ(model.index(TrainingModel::StepRow, TrainingModel::ModelColumn).data(ValueRole).toDouble(), step);
  EXPECT_TRUE(model.summary().contains(QStringLiteral("AdamW")));
  EXPECT_TRUE(model.summary().contains(QStringLiteral("trained")));  // a prefill configuration, trained
}

TEST(TrainingTab, FollowsTheBudgetTypedAndEveryEdit) {
  Window w;
  ASSERT_TRUE(w.window.setCurrentTab(QStringLiteral("training")));
  auto* page = qobject_cast<TrainingPage*>(w.window.currentPage());
  ASSERT_NE(page, nullptr);
  TrainingModel* model = w.session->resultModel<TrainingModel>();
  ASSERT_TRUE(model->available()) << model->unavailableReason().toStdString();
  EXPECT_EQ(page->budgetEditor()->text(), QStringLiteral("6e+18"));

  // A budget typed: the steps follow it.
  w.apply([&] {
    page->budgetEditor()->setText(QStringLiteral("1e18"));
    emit page->budgetEditor()->editingFinished();
  });
  ASSERT_TRUE(w.session->config().flopBudget.has_value());
  EXPECT_DOUBLE_EQ(*w.session->config().flopBudget, 1e18);
  EXPECT_DOUBLE_EQ(model->modelValue(TrainingModel::BudgetStepsRow),
                   1e18 / model->modelValue(TrainingModel::ModelFlopsRow));

  // Not a number: refused with the key, the last budget kept.
  QSignalSpy refused(w.session, &ExplorerSession::validationChanged);
  page->budgetEditor()->setText(QStringLiteral("lots"));
  emit page->budgetEditor()->editingFinished();
  ASSERT_GE(refused.count(), 1);
  EXPECT_EQ(refused.last().at(0).toString(), QStringLiteral("flop_budget"));
  EXPECT_DOUBLE_EQ(*w.session->config().flopBudget, 1e18);

  // Empty: no budget, no budget rows.
  w.apply([&] {
    page->budgetEditor()->setText(QString());
    emit page->budgetEditor()->editingFinished();
  });
  EXPECT_FALSE(w.session->config().flopBudget.has_value());
  EXPECT_EQ(model->rowCount(), static_cast<int>(TrainingModel::BudgetStepsRow));

  // An edit elsewhere (the batch) updates the tab: twice the tokens per step.
  const std::int64_t before = model->result().training.model.tokens;
  w.apply([&] { w.session->setBatch(w.session->config().load.batch * 2); });
  EXPECT_EQ(model->result().training.model.tokens, 2 * before);
}
