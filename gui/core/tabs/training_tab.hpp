#pragma once
// The Training tab: the paper's training claim answered for the configuration (analysis/training.hpp):
// one training step of the model and its baseline (time, tokens/s, MFU, memory per GPU), the
// wall-clock at equal model FLOPs and where the difference comes from, and the steps, tokens and
// wall-clock of each at the FLOP budget typed on the tab.
#include <QString>
#include <QWidget>
#include <optional>
#include <vector>

#include "gui/core/result_models.hpp"
#include "gui/core/tabs/tab.hpp"

class QChartView;
class QLabel;
class QLineEdit;
class QTableView;

namespace modsim::gui {

// Per step and at the budget: one row per figure, the model's, the baseline's and their ratio.
// ValueRole is the model's raw value (seconds, tokens, FLOPs, bytes, a fraction), DenseValueRole
// the baseline's.
class TrainingModel : public ResultModel {
  Q_OBJECT
 public:
  enum Row {
    StepRow,
    TokensPerSecondRow,
    MfuRow,
    ModelFlopsRow,
    WeightsRow,
    GradientsRow,
    OptimizerStateRow,
    ActivationsRow,
    MemoryRow,
    BudgetStepsRow,  // the three budget rows only with a budget
    BudgetTokensRow,
    BudgetWallRow,
    RowCount
  };
  enum Column { MetricColumn, ModelColumn, BaselineColumn, RatioColumn, ColumnCount };
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;
  ResultParts parts() const override { return TrainingPart; }

  const TrainingResult& result() const { return m_training; }
  // The model's and the baseline's raw value of `row` (as ValueRole and DenseValueRole).
  double modelValue(int row) const;
  double baselineValue(int row) const;
  // For people: the answer at equal FLOPs, at the budget, and how the step was priced.
  QString summary() const;

 private:
  TrainingResult m_training;
};

// Where the wall-clock difference at equal model FLOPs comes from (analysis::training_source):
// one row per source, its share of the baseline's wall-clock (ValueRole: the fraction).
class TrainingSourcesModel : public ResultModel {
  Q_OBJECT
 public:
  enum Column { SourceColumn, ShareColumn, WhyColumn, ColumnCount };
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;
  ResultParts parts() const override { return TrainingPart; }

 private:
  std::vector<analysis::training_source> m_sources;
};

class TrainingPage : public QWidget {
  Q_OBJECT
 public:
  TrainingPage(TrainingModel* model, TrainingSourcesModel* sources, QWidget* parent = nullptr);
  QChartView* chartView() const { return m_view; }
  QLineEdit* budgetEditor() const { return m_budget; }
  QLabel* summaryLabel() const { return m_summary; }

 signals:
  // The budget typed (editing finished): the text as typed; empty for none.
  void flopBudgetEdited(const QString& text);

 public slots:
  void setFlopBudget(std::optional<double> flops);

 private:
  void rebuild();
  TrainingModel* m_model;
  QChartView* m_view;
  QTableView* m_table;
  QTableView* m_sources;
  QLineEdit* m_budget;
  QLabel* m_summary;
};

// The tab: --tab training, "Training".
TabSpec trainingTab();

}  // namespace modsim::gui
