#pragma once
// The Layers tab: the predicted time of each layer by op class, dense beside current, and the
// gap from the FLOP ratio to the time ratio.
#include <QString>
#include <QStringList>
#include <QWidget>

#include "gui/core/result_models.hpp"
#include "gui/core/tabs/tab.hpp"

class QChartView;
class QSplitter;
class QTableView;

namespace modsim::gui {

// Per layer (then the LM head), predicted time by op class, current and dense.
class LayerTimesModel : public ResultModel {
  Q_OBJECT
 public:
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;
  ResultParts parts() const override { return PredictionPart; }

  // Columns: layer, routed, capacity, one per op class, total, dense total, ratio.
  int firstClassColumn() const { return 3; }
  int classCount() const { return static_cast<int>(m_prediction.opClasses.size()); }
  int totalColumn() const { return firstClassColumn() + classCount(); }
  int layerCount() const { return static_cast<int>(m_prediction.layers.size()); }  // rows before the LM head
  QString className(int c) const;
  QStringList classNames() const;
  // The baseline's one name (analysis::baseline_label), as every tab shows it.
  QString baselineName() const { return QString::fromStdString(m_prediction.baselineName); }

 private:
  PredictionResult m_prediction;
};

// From the FLOP saving to the wall-clock saving (sim/cost/predict gap_decomposition): the FLOP
// ratio, each term of the gap, the time ratio, in % of the dense step.
class GapModel : public ResultModel {
  Q_OBJECT
 public:
  enum Column { TermColumn, PercentColumn, KindColumn, ColumnCount };
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;
  ResultParts parts() const override { return PredictionPart; }
  bool isTotal(int row) const { return row == 0 || row == rowCount() - 1; }
  // For people: the row's term, its value and what it stands for (the chart's tooltip).
  QString describe(int row) const;
  QString baselineName() const { return QString::fromStdString(m_prediction.baselineName); }

 private:
  PredictionResult m_prediction;
};

class LayersPage : public QWidget {
  Q_OBJECT
 public:
  LayersPage(LayerTimesModel* model, GapModel* gap, QWidget* parent = nullptr);
  QChartView* chartView() const { return m_view; }
  QChartView* gapView() const { return m_gapView; }
  // The tooltip last shown over a bar (empty when none).
  QString hoverText() const { return m_hoverText; }

  // The page's width from which the waterfall stands beside the table.
  static constexpr int kSideBySideWidth = 1100;

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void rebuild();
  void rebuildGap();
  QSplitter* m_bottom = nullptr;
  LayerTimesModel* m_model;
  GapModel* m_gap;
  QChartView* m_view;
  QChartView* m_gapView;
  QTableView* m_table;
  QString m_hoverText;
};

// The tab: --tab layers, "Layers".
TabSpec layersTab();

}  // namespace modsim::gui
