#pragma once
// Item models over the parts of a ComputeResult: the base every one shares and the headline's
// SummaryModel; each tab's models live with the tab (gui/core/tabs/). Each keeps its own copy
// of its part (set with setResult, which resets the model) and exposes it: DisplayRole
// formatted for people, ValueRole the raw number (seconds, FLOPs, bytes), DenseValueRole the
// dense baseline's. Views and charts read these models and keep nothing of their own.
#include <QAbstractTableModel>
#include <QStringList>
#include <QString>

#include "gui/core/results.hpp"

namespace modsim::gui {

enum ResultRoles {
  ValueRole = Qt::UserRole + 1,  // double: the raw value of the cell (seconds, FLOPs, ...)
  DenseValueRole,                // double: the dense baseline's value of the same quantity
};

// The part every result model shares: whether its part was computed, and why not.
class ResultModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  bool available() const { return m_available; }
  QString unavailableReason() const { return m_unavailable; }
  // Takes its part of `result` (resets the model).
  virtual void setResult(const ComputeResultPtr& result) = 0;
  // The parts of a result this model shows (results.hpp); the session hands it a result only
  // when one of them was updated.
  virtual ResultParts parts() const { return kAllParts; }
  // Its figures are not those of the current configuration: unavailable, saying it computes,
  // until the next setResult (the figures stay, no reset: pages keep their charts).
  void setPending();
  bool isPending() const { return m_pending; }

 signals:
  void availabilityChanged(bool available, const QString& reason);

 protected:
  void setAvailability(bool available, const QString& reason);

 private:
  bool m_available = false;
  QString m_unavailable;
  bool m_pending = false;
};

// Whole-step figures: current vs dense.
class SummaryModel : public ResultModel {
  Q_OBJECT
 public:
  enum Row { TotalTime, DeviceTime, Overhead, MatmulFlops, Bytes, Params, RowCount };
  enum Column { MetricColumn, CurrentColumn, DenseColumn, RatioColumn, ColumnCount };
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;
  ResultParts parts() const override { return PredictionPart; }
  // The one-line headline of the current result ("Prefill · mod-220m on h100-sxm: ...").
  QString headline() const;
  const PredictionResult& prediction() const { return m_prediction; }

 private:
  PredictionResult m_prediction;
  QString m_modelName;
  QString m_modeName;
  QString m_error;
  bool m_hasResult = false;
};

}  // namespace modsim::gui
