#pragma once
// The result tabs. Each page is a view over one or two item models of the session: it
// rebuilds its chart from the model when the model resets and emits requests (adopt a
// point, choose a file); it holds no data of its own. When its part of the result is not
// available (a module missing from this build, a failed computation) it says so instead.
#include <QStackedWidget>
#include <QWidget>

class QChartView;
class QComboBox;
class QLabel;
class QTableView;
class QCheckBox;
class QSortFilterProxyModel;
class QPushButton;

namespace modsim::gui {

class ResultModel;
class SweepModel;
class LayerTimesModel;
class GapModel;
class TimelineModel;
class ServingModel;
class SamplingModel;
class ValidationModel;
class GanttView;

// The content, or a message saying why there is none.
class AvailabilityStack : public QStackedWidget {
  Q_OBJECT
 public:
  AvailabilityStack(QWidget* content, ResultModel* model, QWidget* parent = nullptr);
  QString message() const;

 private:
  void update(bool available, const QString& reason);
  QLabel* m_message;
};

class DesignSpacePage : public QWidget {
  Q_OBJECT
 public:
  explicit DesignSpacePage(SweepModel* model, QWidget* parent = nullptr);
  QChartView* chartView() const { return m_view; }
  QTableView* table() const { return m_table; }
  // The sweep row nearest to a point in the chart's value coordinates (GFLOP, ms); -1 if none.
  int rowAt(const QPointF& value) const;

 public slots:
  // A click on the chart at `value` (GFLOP, ms): adopts the nearest configuration.
  void onPointClicked(const QPointF& value);

 signals:
  void adoptRequested(int sweepRow);

 private:
  void rebuild();
  void onHovered(const QPointF& value, bool state);
  SweepModel* m_model;
  QChartView* m_view;
  QTableView* m_table;
  QSortFilterProxyModel* m_proxy;
  QCheckBox* m_frontOnly;
  QLabel* m_hint;
};

class LayersPage : public QWidget {
  Q_OBJECT
 public:
  LayersPage(LayerTimesModel* model, GapModel* gap, QWidget* parent = nullptr);
  QChartView* chartView() const { return m_view; }

 private:
  void rebuild();
  void rebuildGap();
  LayerTimesModel* m_model;
  GapModel* m_gap;
  QChartView* m_view;
  QChartView* m_gapView;
  QTableView* m_table;
};

class TimelinePage : public QWidget {
  Q_OBJECT
 public:
  explicit TimelinePage(TimelineModel* model, QWidget* parent = nullptr);
  GanttView* gantt() const { return m_gantt; }

 private:
  void rebuild();
  TimelineModel* m_model;
  GanttView* m_gantt;
  GanttView* m_zoom;  // the first layers, close up
  QLabel* m_zoomTitle;
  QLabel* m_summary;
  QTableView* m_table;
};

class ServingPage : public QWidget {
  Q_OBJECT
 public:
  // Serving (dense vs current under one load) beside the sampling map (MoD / baseline decode step
  // time over batch × context, for the strategy chosen in the combo box).
  ServingPage(ServingModel* model, SamplingModel* sampling, QWidget* parent = nullptr);
  QChartView* chartView() const { return m_view; }
  QChartView* samplingView() const { return m_samplingView; }

 private:
  void rebuild();
  void rebuildSampling();
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

}  // namespace modsim::gui
