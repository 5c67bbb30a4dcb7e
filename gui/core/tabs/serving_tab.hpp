#pragma once
// The Serving / sampling tab: the serving simulation, dense vs current under one load, beside
// the sampling map (MoD / baseline decode step time over batch × context per decode strategy).
#include <QString>
#include <QStringList>
#include <QWidget>

#include "gui/core/result_models.hpp"
#include "gui/core/tabs/tab.hpp"

class QChartView;
class QComboBox;
class QLabel;
class QSplitter;
class QTableView;

namespace modsim::gui {

// Serving figures, dense vs current.
class ServingModel : public ResultModel {
  Q_OBJECT
 public:
  // One row per figure people read (sim/des/serving_fields.hpp), in its order.
  enum Column { MetricColumn, DenseColumn, CurrentColumn, RatioColumn, ColumnCount };
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;
  ResultParts parts() const override { return ServingPart; }

  const ServingStats& dense() const { return m_serving.dense; }
  const ServingStats& current() const { return m_serving.current; }
  QString scenario() const { return QString::fromStdString(m_serving.scenario); }
  QString baselineName() const { return QString::fromStdString(m_serving.baselineName); }
  // The row of the figure with this key ("ttft_s.p50"), -1 when none.
  static int rowOf(const char* key);

 private:
  ServingResult m_serving;
};

// The sampling map of one decode strategy: rows are decode batches, columns the batch then one per
// context; a cell shows the MoD / baseline step ratio and the letter of the component that decides
// it (ValueRole: the ratio; ToolTipRole: both breakdowns). The strategy shown is the one with the
// most cells at the target (the first on a tie) until setStrategy(); the strategy set so stays
// chosen, by name, through later results (another model opened, any edit).
class SamplingModel : public ResultModel {
  Q_OBJECT
 public:
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;
  ResultParts parts() const override { return SamplingPart; }

  const analysis::sampling_map& map() const { return m_sampling.map; }
  int strategy() const { return m_strategy; }
  void setStrategy(int strategy);  // resets the model; the user's choice
  QStringList strategyNames() const;
  // The strategy the headline and the Design space show (SamplingResult::headlineStrategy); may be empty.
  QString headlineStrategy() const;
  QString verdict() const;         // the map's verdict, one line per strategy
  QString servingRouting() const;  // the routing the serving simulation chose, or empty

 private:
  SamplingResult m_sampling;
  int m_strategy = 0;
  std::string m_chosenStrategy;  // the name set by setStrategy(); empty: none chosen
};

class ServingPage : public QWidget {
  Q_OBJECT
 public:
  // Serving (dense vs current under one load) beside the sampling map (MoD / baseline decode step
  // time over batch × context, for the strategy chosen in the combo box).
  ServingPage(ServingModel* model, SamplingModel* sampling, QWidget* parent = nullptr);
  QChartView* chartView() const { return m_view; }
  QChartView* samplingView() const { return m_samplingView; }
  QComboBox* strategyEditor() const { return m_strategy; }

  // The page's width from which serving and the sampling map stand side by side.
  static constexpr int kSideBySideWidth = 760;

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void rebuild();
  void rebuildSampling();
  QSplitter* m_split = nullptr;
  ServingModel* m_model;
  SamplingModel* m_sampling;
  QChartView* m_view;
  QTableView* m_table;
  QLabel* m_scenario;
  QChartView* m_samplingView;
  QTableView* m_samplingTable;
  QComboBox* m_strategy;
  QLabel* m_verdict;
};

// The tab: --tab serving, "Serving / sampling".
TabSpec servingTab();

}  // namespace modsim::gui
