#pragma once
// The Design space tab: every configuration of the sweep around the current one (capacity ×
// schedule × variant), predicted wall-clock vs matmul FLOPs with the Pareto front; a click on a
// point or a double-click on a row adopts its configuration.
#include <QPair>
#include <QPoint>
#include <QString>
#include <QVector>
#include <QWidget>

#include "gui/core/result_models.hpp"
#include "gui/core/tabs/tab.hpp"

class QChartView;
class QScatterSeries;
class QLabel;
class QTableView;
class QCheckBox;
class QSortFilterProxyModel;

namespace modsim::gui {

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
  ResultParts parts() const override { return SweepPart; }
  void setSweep(SweepResult sweep);  // for the benchmark: a sweep computed on its own

  const SweepPoint& point(int row) const { return m_sweep.points[static_cast<std::size_t>(row)]; }
  QString label(int row) const;  // "staged · every_other · c=0.125"
  double denseTimeS() const { return m_sweep.denseTimeS; }
  bool decode() const { return m_sweep.decode; }
  const std::string& strategy() const { return m_sweep.strategy; }  // decode: every point's strategy
  // What the ratios compare with: "dense", or the named baseline (the headline's).
  QString baselineName() const;
  std::int64_t denseMatmulFlops() const { return m_sweep.denseMatmulFlops; }

 private:
  SweepResult m_sweep;
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

// The tab: --tab design-space, "Design space".
TabSpec designSpaceTab();

}  // namespace modsim::gui
