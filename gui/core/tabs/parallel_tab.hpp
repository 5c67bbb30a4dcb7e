#pragma once
// The Parallelism tab: every tp × pp × dp split of the GPUs chosen on the tab, the fastest that
// fits detailed against its baseline (sim/parallel/parallel_predict.hpp).
#include <QString>
#include <QWidget>

#include "gui/core/result_models.hpp"
#include "gui/core/tabs/tab.hpp"

class QChartView;
class QLabel;
class QTableView;
class QSpinBox;

namespace modsim::gui {

// Every split of the GPUs, one row each (those that fit in memory first, fastest first); the
// split detailed is bold.
class ParallelModel : public ResultModel {
  Q_OBJECT
 public:
  enum Column {
    SplitColumn,
    StepColumn,
    BaselineColumn,
    RatioColumn,
    ComputeColumn,
    CommColumn,
    BubbleColumn,
    MemoryColumn,
    FitsColumn,
    ColumnCount
  };
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;
  ResultParts parts() const override { return ParallelPart; }

  const ParallelResult& result() const { return m_parallel; }
  const ParallelRow& row(int r) const { return m_parallel.rows[static_cast<std::size_t>(r)]; }
  // For people: the split detailed, its parts, and the stages.
  QString summary() const;

 private:
  ParallelResult m_parallel;
  QString m_modelName;
};

class ParallelPage : public QWidget {
  Q_OBJECT
 public:
  // The step over several GPUs: every tp × pp × dp split of the GPU count chosen here, the
  // fastest that fits detailed (sim/parallel/parallel_predict.hpp).
  explicit ParallelPage(ParallelModel* model, QWidget* parent = nullptr);
  QChartView* chartView() const { return m_view; }
  QSpinBox* gpusEditor() const { return m_gpus; }

 signals:
  void gpusChosen(int gpus);

 public slots:
  void setGpus(int gpus);

 private:
  void rebuild();
  ParallelModel* m_model;
  QChartView* m_view;
  QTableView* m_table;
  QSpinBox* m_gpus;
  QLabel* m_summary;
};

// The tab: --tab parallel, "Parallelism".
TabSpec parallelTab();

}  // namespace modsim::gui
