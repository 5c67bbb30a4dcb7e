#pragma once
// The result tabs. Each page is a view over one or two item models of the session: it
// rebuilds its chart from the model when the model resets and emits requests (adopt a
// point, choose a file); it holds no data of its own. When its part of the result is not
// available (a module missing from this build, a failed computation) it says so instead.
#include <QStackedWidget>
#include <QPair>
#include <QPoint>
#include <QVector>
#include <QWidget>

class QChartView;
class QScatterSeries;
class QComboBox;
class QLabel;
class QTableView;
class QCheckBox;
class QSortFilterProxyModel;
class QPushButton;
class QSpinBox;

namespace modsim::gui {

class ResultModel;
class SweepModel;
class LayerTimesModel;
class GapModel;
class TimelineModel;
class ServingModel;
class SamplingModel;
class ValidationModel;
class ParallelModel;
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
  // Where row `row`'s marker is drawn, in the chart view's viewport coordinates; (-1, -1) when
  // it is not drawn.
  QPoint pixelOf(int row) const;
  // The sweep row whose marker is nearest to `pos` (viewport coordinates) within `radius`
  // pixels; -1 if none.
  int rowAtPixel(const QPoint& pos, double radius = 12) const;
  // The tooltip last shown on hover (empty when the pointer is over no point).
  QString hoverText() const { return m_hoverText; }

 public slots:
  // A click on the chart at `pos` (viewport coordinates): adopts the nearest configuration.
  void clickAt(const QPoint& pos);
  // The pointer at `pos` (viewport coordinates): the nearest point's tooltip, or none.
  void hoverAt(const QPoint& pos);

 signals:
  void adoptRequested(int sweepRow);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void rebuild();
  SweepModel* m_model;
  QChartView* m_view;
  QTableView* m_table;
  QSortFilterProxyModel* m_proxy;
  QCheckBox* m_frontOnly;
  QLabel* m_hint;
  QString m_hoverText;
  // Each sweep row's marker: its scatter series and index there (the builder makes one series
  // per variant, points in row order).
  QVector<QPair<QScatterSeries*, int>> m_markers;
};

class LayersPage : public QWidget {
  Q_OBJECT
 public:
  LayersPage(LayerTimesModel* model, GapModel* gap, QWidget* parent = nullptr);
  QChartView* chartView() const { return m_view; }
  QChartView* gapView() const { return m_gapView; }
  // The tooltip last shown over a bar (empty when none).
  QString hoverText() const { return m_hoverText; }

 private:
  void rebuild();
  void rebuildGap();
  LayerTimesModel* m_model;
  GapModel* m_gap;
  QChartView* m_view;
  QChartView* m_gapView;
  QTableView* m_table;
  QString m_hoverText;
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

class ParallelPage : public QWidget {
  Q_OBJECT
 public:
  // The step over several GPUs: every tp × pp × dp split of the GPU count chosen here, the
  // fastest that fits detailed (sim/parallel_predict.hpp).
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
