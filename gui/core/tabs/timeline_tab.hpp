#pragma once
// The Timeline tab: one step as the simulator executes it, host and GPU stream lanes (a Gantt
// chart, gantt_view.hpp) and the spans as a table.
#include <QWidget>

#include "gui/core/result_models.hpp"
#include "gui/core/tabs/tab.hpp"

class QLabel;
class QTableView;

namespace modsim::gui {

class GanttView;

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
  ResultParts parts() const override { return TimelinePart; }

  const std::vector<std::string>& lanes() const { return m_timeline.lanes; }
  const TimelineSpan& span(int row) const { return m_timeline.spans[static_cast<std::size_t>(row)]; }
  double makespanS() const { return m_timeline.makespanS; }

 private:
  TimelineResult m_timeline;
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

// The tab: --tab timeline, "Timeline".
TabSpec timelineTab();

}  // namespace modsim::gui
