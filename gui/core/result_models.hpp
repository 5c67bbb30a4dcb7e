#pragma once
// Item models over the parts of a ComputeResult. Each keeps its own copy of its part (set
// with setResult, which resets the model) and exposes it: DisplayRole formatted for people,
// ValueRole the raw number (seconds, FLOPs, bytes), DenseValueRole the dense baseline's.
// Views and charts read these models and keep nothing of their own.
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
  virtual void setResult(const ComputeResultPtr& result) = 0;

 signals:
  void availabilityChanged(bool available, const QString& reason);

 protected:
  void setAvailability(bool available, const QString& reason);

 private:
  bool m_available = false;
  QString m_unavailable;
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

  // Columns: layer, routed, capacity, one per op class, total, dense total, ratio.
  int firstClassColumn() const { return 3; }
  int classCount() const { return static_cast<int>(m_prediction.opClasses.size()); }
  int totalColumn() const { return firstClassColumn() + classCount(); }
  int layerCount() const { return static_cast<int>(m_prediction.layers.size()); }  // rows before the LM head
  QString className(int c) const;
  QStringList classNames() const;

 private:
  PredictionResult m_prediction;
};

// From the FLOP saving to the wall-clock saving (sim/predict gap_decomposition): the FLOP
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
  bool isTotal(int row) const { return row == 0 || row == rowCount() - 1; }
  // For people: the row's term, its value and what it stands for (the chart's tooltip).
  QString describe(int row) const;

 private:
  PredictionResult m_prediction;
};

// The design-space sweep, one row per configuration.
class SweepModel : public ResultModel {
  Q_OBJECT
 public:
  enum Column {
    VariantColumn,
    ScheduleColumn,
    CapacityColumn,
    FlopsColumn,
    TimeColumn,
    TimeRatioColumn,  // predicted time / the baseline's (the headline's ratio)
    FlopRatioColumn,
    ParetoColumn,
    ColumnCount
  };
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;
  void setSweep(SweepResult sweep);  // for the benchmark: a sweep computed on its own

  const SweepPoint& point(int row) const { return m_sweep.points[static_cast<std::size_t>(row)]; }
  QString label(int row) const;  // "staged · every_other · c=0.125"
  double denseTimeS() const { return m_sweep.denseTimeS; }
  bool decode() const { return m_sweep.decode; }
  // What the ratios compare with: "dense", or the named baseline (the headline's).
  QString baselineName() const;
  std::int64_t denseMatmulFlops() const { return m_sweep.denseMatmulFlops; }

 private:
  SweepResult m_sweep;
};

// The spans of one step's execution timeline.
class TimelineModel : public ResultModel {
  Q_OBJECT
 public:
  enum Column { LaneColumn, NameColumn, ClassColumn, StartColumn, DurationColumn, ColumnCount };
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;

  const std::vector<std::string>& lanes() const { return m_timeline.lanes; }
  const TimelineSpan& span(int row) const { return m_timeline.spans[static_cast<std::size_t>(row)]; }
  double makespanS() const { return m_timeline.makespanS; }

 private:
  TimelineResult m_timeline;
};

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

  const ServingStats& dense() const { return m_serving.dense; }
  const ServingStats& current() const { return m_serving.current; }
  QString scenario() const { return QString::fromStdString(m_serving.scenario); }
  // The row of the figure with this key ("ttft_s.p50"), -1 when none.
  static int rowOf(const char* key);

 private:
  ServingResult m_serving;
};

// The sampling map of one decode strategy: rows are decode batches, columns the batch then one per
// context; a cell shows the MoD / baseline step ratio and the letter of the component that decides
// it (ValueRole: the ratio; ToolTipRole: both breakdowns). The strategy shown is the one with the
// most cells at the target (the first on a tie) until setStrategy().
class SamplingModel : public ResultModel {
  Q_OBJECT
 public:
  using ResultModel::ResultModel;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  void setResult(const ComputeResultPtr& result) override;

  const analysis::sampling_map& map() const { return m_sampling.map; }
  int strategy() const { return m_strategy; }
  void setStrategy(int strategy);  // resets the model
  QStringList strategyNames() const;
  QString verdict() const;         // the map's verdict, one line per strategy
  QString servingRouting() const;  // the routing the serving simulation chose, or empty

 private:
  SamplingResult m_sampling;
  int m_strategy = 0;
};

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

  const ParallelResult& result() const { return m_parallel; }
  const ParallelRow& row(int r) const { return m_parallel.rows[static_cast<std::size_t>(r)]; }
  // For people: the split detailed, its parts, and the stages.
  QString summary() const;

 private:
  ParallelResult m_parallel;
  QString m_modelName;
};

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

  const ValidationRow& row(int r) const { return m_validation.rows[static_cast<std::size_t>(r)]; }
  QString summary() const;  // "N points · median |error| 4.1% · p90 9.8% · max 15%"
  QString file() const { return QString::fromStdString(m_validation.file); }

 private:
  ValidationResult m_validation;
};

}  // namespace modsim::gui
