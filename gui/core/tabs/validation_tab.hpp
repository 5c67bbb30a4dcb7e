#pragma once
// The Validation tab: measured vs predicted block times from a measurements CSV.
#include <QString>
#include <QWidget>

#include "gui/core/result_models.hpp"
#include "gui/core/tabs/tab.hpp"

class QChartView;
class QLabel;
class QTableView;
class QPushButton;

namespace modsim::gui {

// Measured vs predicted, one row per measured block.
class ValidationModel : public ResultModel {
  Q_OBJECT
 public:
  enum Column { OpColumn, ShapeColumn, MeasuredColumn, PredictedColumn, ErrorColumn, ColumnCount };
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;
  ResultParts parts() const override { return ValidationPart; }

  const ValidationRow& row(int r) const { return m_validation.rows[static_cast<std::size_t>(r)]; }
  QString summary() const;  // "N points · median |error| 4.1% · p90 9.8% · max 15%"
  QString file() const { return QString::fromStdString(m_validation.file); }

 private:
  ValidationResult m_validation;
};

class ValidationPage : public QWidget {
  Q_OBJECT
 public:
  explicit ValidationPage(ValidationModel* model, QWidget* parent = nullptr);
  QChartView* chartView() const { return m_view; }

 signals:
  void measurementsFileChosen(const QString& path);

 private:
  void rebuild();
  ValidationModel* m_model;
  QChartView* m_view;
  QTableView* m_table;
  QLabel* m_summary;
  QPushButton* m_open;
};

// The tab: --tab validation, "Validation".
TabSpec validationTab();

}  // namespace modsim::gui
