// The explorer's item models: each passes QAbstractItemModelTester through resets, edits and
// failures, and exposes values checked against independent expectations.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QBrush>
#include <QSignalSpy>
#include <QTest>
#include <memory>

#include "gui/core/compute.hpp"
#include "gui/core/compute_worker.hpp"
#include "gui/core/explorer_config.hpp"
#include "gui/core/result_models.hpp"
#include "gui/core/schedule_model.hpp"
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

ExplorerConfig paperConfig() {
  ExplorerConfig c;
  c.model = sim::load_model(MODSIM_SOURCE_DIR "/configs/models/mod-220m.json");
  c.hardware = sim::load_hardware(MODSIM_SOURCE_DIR "/configs/hardware/h100-sxm.json");
  c.load.batch = 1;
  c.load.seq_len = 2048;
  c.load.run = sim::run_mode::forward;
  c.load.type = sim::dtype::bf16;
  return c;
}

// One real computation, shared by the tests of this file (it takes a few tens of ms).
ComputeResultPtr paperResult() {
  static ComputeResultPtr r = std::make_shared<ComputeResult>(computeAll(paperConfig()));
  return r;
}

ComputeResultPtr failedResult() {
  auto r = std::make_shared<ComputeResult>();
  r->error = "x.json: routing.capacity: must be in (0, 1], got 1.5";
  return r;
}

template <class Model>
void exerciseResultModel(Model& model) {
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.setResult(paperResult());
  const int rows = model.rowCount();
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < model.columnCount(); ++c)
      for (int role : {int(Qt::DisplayRole), int(ValueRole), int(DenseValueRole), int(Qt::ToolTipRole)})
        (void)model.index(r, c).data(role);
  model.setResult(failedResult());
  EXPECT_FALSE(model.available());
  EXPECT_EQ(model.unavailableReason().toStdString(), failedResult()->error);
  model.setResult(paperResult());
  EXPECT_EQ(model.rowCount(), rows);
}

}  // namespace

TEST(ScheduleModel, PassesModelTesterThroughPresetsAndEdits) {
  ScheduleModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.setLayers(std::vector<std::optional<double>>(16));
  model.setSeqLen(2048);
  model.applyPreset(QStringLiteral("every_other"), 2, 0.125);
  model.applyPreset(QStringLiteral("every_nth"), 4, 0.25);
  model.applyPreset(QStringLiteral("all"), 2, 0.5);
  EXPECT_TRUE(model.setData(model.index(3, ScheduleModel::CapacityColumn), 0.75));
  EXPECT_TRUE(model.setData(model.index(4, ScheduleModel::RoutedColumn), Qt::Unchecked, Qt::CheckStateRole));
  model.setLayers(std::vector<std::optional<double>>(4, 0.5));
  EXPECT_EQ(model.rowCount(), 4);
}

TEST(ScheduleModel, InDecodeShowsRoutedTokensPerStepAndKvEntries) {
  ScheduleModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.setLayers({std::nullopt, 0.125});
  model.setSeqLen(2048);
  const QModelIndex dense = model.index(0, ScheduleModel::TokensColumn),
                    routed = model.index(1, ScheduleModel::TokensColumn);
  EXPECT_EQ(routed.data().toString(), QStringLiteral("256 / 2048"));  // prefill: k of S
  model.setWorkload(true, 8);
  // Decode, batch 8: 0.125 · 8 = 1 token routed per step, reading ⌈0.125 · 2048⌉ + 1 = 257 KV
  // entries; the dense layer all 8, over 2048 + 1.
  EXPECT_EQ(routed.data().toString(), QStringLiteral("1 of 8 · KV 257"));
  EXPECT_EQ(dense.data().toString(), QStringLiteral("8 of 8 · KV 2049"));
  EXPECT_EQ(model.headerData(ScheduleModel::TokensColumn, Qt::Horizontal).toString(),
            QStringLiteral("routed / B · KV"));
}

TEST(ScheduleModel, EveryOtherPresetRoutesOddLayers) {
  ScheduleModel model;
  model.setLayers(std::vector<std::optional<double>>(16));
  QSignalSpy edited(&model, &ScheduleModel::scheduleEdited);
  model.applyPreset(QStringLiteral("every_other"), 2, 0.125);
  EXPECT_EQ(edited.count(), 1);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(model.layers()[std::size_t(i)].has_value(), i % 2 == 1) << "layer " << i;
    EXPECT_EQ(model.index(i, ScheduleModel::RoutedColumn).data(Qt::CheckStateRole).toInt(),
              i % 2 == 1 ? Qt::Checked : Qt::Unchecked);
  }
}

TEST(ScheduleModel, EveryFourthPresetRoutesLayersThreeSevenElevenFifteen) {
  ScheduleModel model;
  model.setLayers(std::vector<std::optional<double>>(16));
  model.applyPreset(QStringLiteral("every_nth"), 4, 0.25);
  std::vector<int> routed;
  for (int i = 0; i < 16; ++i)
    if (model.layers()[std::size_t(i)]) routed.push_back(i);
  EXPECT_EQ(routed, (std::vector<int>{3, 7, 11, 15}));
}

TEST(ScheduleModel, TokensColumnShowsKOfS) {
  ScheduleModel model;
  model.setLayers({std::nullopt, 0.125, 0.1});
  model.setSeqLen(2048);
  // k = ceil(0.125 · 2048) = 256; ceil(0.1 · 2048) = ceil(204.8) = 205.
  EXPECT_EQ(model.index(0, ScheduleModel::TokensColumn).data().toString(), QStringLiteral("2048 / 2048"));
  EXPECT_EQ(model.index(1, ScheduleModel::TokensColumn).data().toString(), QStringLiteral("256 / 2048"));
  EXPECT_EQ(model.index(2, ScheduleModel::TokensColumn).data().toString(), QStringLiteral("205 / 2048"));
}

TEST(ScheduleModel, RejectsCapacityOutsideTheUnitIntervalWithTheKeyPath) {
  ScheduleModel model;
  model.setLayers({std::nullopt, 0.125});
  QSignalSpy rejected(&model, &ScheduleModel::editRejected);
  EXPECT_FALSE(model.setData(model.index(1, ScheduleModel::CapacityColumn), 1.5));
  EXPECT_FALSE(model.setData(model.index(1, ScheduleModel::CapacityColumn), 0.0));
  ASSERT_EQ(rejected.count(), 2);
  EXPECT_TRUE(rejected.first().first().toString().startsWith(QStringLiteral("routing.layer_capacities[1]: ")));
  EXPECT_EQ(*model.layers()[1], 0.125);
}

TEST(ScheduleModel, DenseLayerCapacityIsNotEditable) {
  ScheduleModel model;
  model.setLayers({std::nullopt, 0.5});
  EXPECT_FALSE(model.flags(model.index(0, ScheduleModel::CapacityColumn)) & Qt::ItemIsEditable);
  EXPECT_TRUE(model.flags(model.index(1, ScheduleModel::CapacityColumn)) & Qt::ItemIsEditable);
}

TEST(ResultModels, SummaryPassesModelTester) {
  SummaryModel m;
  exerciseResultModel(m);
}
TEST(ResultModels, LayerTimesPassesModelTester) {
  LayerTimesModel m;
  exerciseResultModel(m);
}
TEST(ResultModels, GapPassesModelTester) {
  GapModel m;
  exerciseResultModel(m);
}
TEST(ResultModels, SweepPassesModelTester) {
  SweepModel m;
  exerciseResultModel(m);
}
TEST(ResultModels, TimelinePassesModelTester) {
  TimelineModel m;
  exerciseResultModel(m);
}
TEST(ResultModels, ServingPassesModelTester) {
  ServingModel m;
  exerciseResultModel(m);
}
TEST(ResultModels, SamplingPassesModelTester) {
  SamplingModel m;
  exerciseResultModel(m);
  // mod-220m: 9 batches × (the batch column + 8 contexts); the strategies of a GPU.
  EXPECT_EQ(m.rowCount(), 9);
  EXPECT_EQ(m.columnCount(), 9);
  EXPECT_EQ(m.strategyNames(),
            (QStringList{QStringLiteral("sync"), QStringLiteral("pad"), QStringLiteral("pad+graphs")}));
  // A cell's value is its ratio, model over baseline step time.
  const auto& cell = m.map().cell(static_cast<std::size_t>(m.strategy()), 3, 2);
  EXPECT_DOUBLE_EQ(m.index(3, 3).data(ValueRole).toDouble(), cell.model_s / cell.baseline_s);
  // One convention in the view: the cell and its tooltip both show that ratio (not a speed-up).
  const QString ratio = QString::number(cell.model_s / cell.baseline_s, 'f', 3);
  EXPECT_TRUE(m.index(3, 3).data(Qt::DisplayRole).toString().startsWith(ratio));
  const QString tip = m.index(3, 3).data(Qt::ToolTipRole).toString();
  EXPECT_TRUE(tip.contains(QStringLiteral("step-time ratio MoD / baseline ") + ratio)) << tip.toStdString();
  EXPECT_FALSE(tip.contains(QString::number(cell.baseline_s / cell.model_s, 'f', 2) + QStringLiteral("x")))
      << tip.toStdString();
  m.setStrategy(0);
  EXPECT_EQ(m.strategy(), 0);
}
TEST(ResultModels, SamplingMapHatchesTheCellsThatDoNotFitInMemory) {
  SamplingModel m;
  m.setResult(paperResult());
  ASSERT_EQ(m.rowCount(), 9);
  // Batch 256 (row 8) × context 32,768 (column 8) on the 80 GB H100: the baseline (mod-220m
  // without routing) caches 2 · 16 layers · 256 · 32,768 · 1,024 · 2 bytes = 550 GB.
  const QModelIndex big = m.index(8, 8);
  EXPECT_EQ(m.map().cell(static_cast<std::size_t>(m.strategy()), 8, 7).context, 32768);
  EXPECT_FALSE(m.map().cell(static_cast<std::size_t>(m.strategy()), 8, 7).fits);
  EXPECT_EQ(big.data(Qt::BackgroundRole).value<QBrush>().style(), Qt::BDiagPattern);
  EXPECT_TRUE(big.data(Qt::DisplayRole).toString().endsWith(QStringLiteral("✗")));
  EXPECT_TRUE(big.data(Qt::ToolTipRole).toString().contains(QStringLiteral("does not fit in 80 GB")));
  // Batch 1 × context 256: a few MB of KV; a plain cell.
  const QModelIndex small = m.index(0, 1);
  EXPECT_EQ(small.data(Qt::BackgroundRole).metaType(), QMetaType::fromType<QColor>());  // a plain colour
  EXPECT_FALSE(small.data(Qt::DisplayRole).toString().contains(QStringLiteral("✗")));
  EXPECT_FALSE(small.data(Qt::ToolTipRole).toString().contains(QStringLiteral("does not fit")));
}
TEST(ResultModels, ValidationPassesModelTester) {
  ValidationModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  auto r = std::make_shared<ComputeResult>(*paperResult());
  r->validation.available = true;
  r->validation.rows = {{"block_dense", "B=1 S=512", 2e-3, 2.2e-3, 10.0},
                        {"block_mod", "B=1 S=512 c=0.125", 1e-3, 0.9e-3, -10.0}};
  m.setResult(r);
  EXPECT_EQ(m.rowCount(), 2);
  EXPECT_EQ(m.index(1, ValidationModel::ErrorColumn).data().toString(), QStringLiteral("-10.0%"));
  m.setResult(failedResult());
  EXPECT_EQ(m.rowCount(), 0);
}

TEST(ResultModels, LayerTimesHasOneRowPerLayerPlusTheLmHead) {
  LayerTimesModel m;
  m.setResult(paperResult());
  EXPECT_EQ(m.rowCount(), 16 + 1);
  // every_other: layer 1 routed at 0.125, layer 0 dense (mod-220m.json).
  EXPECT_TRUE(m.index(1, 1).data(ValueRole).toBool());
  EXPECT_FALSE(m.index(0, 1).data(ValueRole).toBool());
  EXPECT_DOUBLE_EQ(m.index(1, 2).data(ValueRole).toDouble(), 0.125);
  // A dense layer takes as long as the same layer of the dense baseline; a routed one less.
  const int total = m.totalColumn();
  EXPECT_DOUBLE_EQ(m.index(0, total).data(ValueRole).toDouble(), m.index(0, total).data(DenseValueRole).toDouble());
  EXPECT_LT(m.index(1, total).data(ValueRole).toDouble(), m.index(1, total).data(DenseValueRole).toDouble());
}

TEST(ResultModels, SummaryRatioIsCurrentOverDense) {
  SummaryModel m;
  m.setResult(paperResult());
  const double cur = m.index(SummaryModel::TotalTime, SummaryModel::CurrentColumn).data(ValueRole).toDouble();
  const double dense = m.index(SummaryModel::TotalTime, SummaryModel::DenseColumn).data(ValueRole).toDouble();
  const double ratio = m.index(SummaryModel::TotalTime, SummaryModel::RatioColumn).data(ValueRole).toDouble();
  EXPECT_GT(dense, cur);
  EXPECT_DOUBLE_EQ(ratio, cur / dense);
  EXPECT_TRUE(m.headline().contains(QStringLiteral("mod-220m")));
}

TEST(ResultModels, HeadlineSaysHowAttentionRunsAndWhetherItWasMeasured) {
  // The shipped H100 calibration ran unfused attention; the GPU default is fused.
  ExplorerConfig c = paperConfig();
  c.hardware = sim::load_hardware(MODSIM_SOURCE_DIR "/configs/hardware/h100-sxm-calibrated.json");
  c.sweepEnabled = false;
  c.servingEnabled = false;
  SummaryModel m;
  m.setResult(std::make_shared<ComputeResult>(computeAll(c)));
  EXPECT_TRUE(m.headline().contains(QStringLiteral("Attention fused</b>: never measured")))
      << m.headline().toStdString();
  EXPECT_FALSE(m.headline().contains(QStringLiteral("p90"))) << m.headline().toStdString();
  c.attention = attention_impl::unfused;
  m.setResult(std::make_shared<ComputeResult>(computeAll(c)));
  EXPECT_TRUE(m.headline().contains(QStringLiteral("Attention unfused, as measured"))) << m.headline().toStdString();
  EXPECT_TRUE(m.headline().contains(QStringLiteral("p90"))) << m.headline().toStdString();
}

TEST(ResultModels, GapTermsSumToTimeRatioMinusFlopRatio) {
  GapModel m;
  m.setResult(paperResult());
  ASSERT_GE(m.rowCount(), 3);
  const double flops = m.index(0, GapModel::PercentColumn).data(ValueRole).toDouble();
  const double time = m.index(m.rowCount() - 1, GapModel::PercentColumn).data(ValueRole).toDouble();
  double sum = 0;
  for (int r = 1; r < m.rowCount() - 1; ++r) sum += m.index(r, GapModel::PercentColumn).data(ValueRole).toDouble();
  EXPECT_NEAR(flops + sum, time, 1e-6);
}

TEST(ResultModels, SweepMarksExactlyTheUndominatedPointsAndTheCurrentOne) {
  SweepModel m;
  m.setResult(paperResult());
  ASSERT_GT(m.rowCount(), 10);
  int current = 0;
  for (int i = 0; i < m.rowCount(); ++i) {
    const SweepPoint& a = m.point(i);
    current += a.current;
    // Naive reference: a point is on the front when no other is at least as good on both
    // axes and better on one.
    bool dominated = false;
    for (int j = 0; j < m.rowCount() && !dominated; ++j) {
      const SweepPoint& b = m.point(j);
      dominated =
          b.matmulFlops <= a.matmulFlops && b.timeS <= a.timeS && (b.matmulFlops < a.matmulFlops || b.timeS < a.timeS);
    }
    EXPECT_EQ(a.pareto, !dominated) << m.label(i).toStdString();
  }
  EXPECT_EQ(current, 1);
}

TEST(ComputeWorker, DebouncedBurstComputesOnceAndDropsStaleResults) {
  ComputeWorker worker;
  worker.setDebounceMs(50);
  QSignalSpy ready(&worker, &ComputeWorker::resultReady);
  ExplorerConfig c = paperConfig();
  c.sweepEnabled = false;
  c.servingEnabled = false;
  for (double cap : {0.5, 0.25, 0.125}) {
    c.model.routing->capacity = cap;
    worker.request(c);
  }
  ASSERT_TRUE(QTest::qWaitFor([&] { return !worker.isBusy(); }, 30000));
  QTest::qWait(200);
  // One computation, the last request's: its results part by part, one of them complete.
  ASSERT_GE(ready.count(), 1);
  int complete = 0;
  for (const QList<QVariant>& args : ready) {
    const auto r = args.first().value<ComputeResultPtr>();
    EXPECT_EQ(r->model.routing->capacity, 0.125);
    EXPECT_EQ(r->generation, worker.generation());
    complete += r->complete();
  }
  EXPECT_EQ(complete, 1);
}

TEST(ComputeWorker, ANewerRequestReplacesARunningOne) {
  ComputeWorker worker;
  QSignalSpy ready(&worker, &ComputeWorker::resultReady);
  ExplorerConfig c = paperConfig();
  c.model.routing->capacity = 0.5;
  worker.computeNow(c);
  c.model.routing->capacity = 0.25;
  worker.computeNow(c);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !worker.isBusy(); }, 30000));
  QTest::qWait(300);
  // Only the newer request's results arrive (part by part), one of them complete.
  ASSERT_GE(ready.count(), 1);
  int complete = 0;
  for (const QList<QVariant>& args : ready) {
    const auto r = args.first().value<ComputeResultPtr>();
    EXPECT_EQ(r->model.routing->capacity, 0.25);
    complete += r->complete();
  }
  EXPECT_EQ(complete, 1);
  EXPECT_FALSE(worker.isBusy());
}

TEST(ComputeWorker, CancelledComputationEmitsNoResult) {
  ComputeWorker worker;
  QSignalSpy ready(&worker, &ComputeWorker::resultReady);
  worker.request(paperConfig());
  worker.cancel();
  QTest::qWait(400);
  EXPECT_EQ(ready.count(), 0);
}

TEST(Compute, InvalidConfigurationBecomesAnErrorNotACrash) {
  ExplorerConfig c = paperConfig();
  c.load.seq_len = 0;
  const ComputeResult r = computeAll(c);
  EXPECT_FALSE(r.error.empty());
}

TEST(ExplorerConfig, ModelJsonRoundTripsThroughTheParser) {
  sim::model_spec m = sim::load_model(MODSIM_SOURCE_DIR "/configs/models/mod-220m.json");
  m.routing->layer_capacities = std::vector<std::optional<double>>(16);
  m.routing->layer_capacities[2] = 0.25;
  m.routing->layer_capacities[5] = 0.5;
  m.routing->sched = {sim::schedule_kind::list, 0, {2, 5}};
  const sim::model_spec back = sim::parse_model(sim::model_to_json(m), "roundtrip.json");
  const auto a = sim::plan_layers(m), b = sim::plan_layers(back);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].routed, b[i].routed) << i;
    EXPECT_EQ(a[i].capacity, b[i].capacity) << i;
  }
  EXPECT_EQ(back.d_model, 1024);
  EXPECT_EQ(back.routing->predictor_hidden, 256);
}

TEST(ExplorerConfig, SplitErrorFindsTheKeyPath) {
  const ErrorParts p =
      splitError(QStringLiteral("x.json: routing.capacity: must be in (0, 1], got 1.5"), QStringLiteral("x.json"));
  EXPECT_EQ(p.key, QStringLiteral("routing.capacity"));
  EXPECT_EQ(p.reason, QStringLiteral("must be in (0, 1], got 1.5"));
  EXPECT_TRUE(splitError(QStringLiteral("malformed JSON at line 1, column 2: x")).key.isEmpty());
}
