#include "gui/core/tabs/timeline_tab.hpp"

#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "gui/core/explorer_session.hpp"
#include "gui/core/format.hpp"
#include "gui/core/gantt_view.hpp"

namespace modsim::gui {

// ---------------------------------------------------------------------------------------------
// TimelineModel

int TimelineModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_timeline.spans.size());
}
int TimelineModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TimelineModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const TimelineSpan& s = span(index.row());
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case LaneColumn:
        return s.lane >= 0 && s.lane < static_cast<int>(m_timeline.lanes.size())
                   ? qs(m_timeline.lanes[static_cast<std::size_t>(s.lane)])
                   : QString::number(s.lane);
      case NameColumn:
        return qs(s.name);
      case ClassColumn:
        return qs(s.opClass);
      case StartColumn:
        return formatSeconds(s.startS);
      case DurationColumn:
        return formatSeconds(s.endS - s.startS);
      default:
        return {};
    }
  }
  if (role == ValueRole) {
    switch (index.column()) {
      case LaneColumn:
        return s.lane;
      case NameColumn:
        return qs(s.name);
      case ClassColumn:
        return qs(s.opClass);
      case StartColumn:
        return s.startS;
      case DurationColumn:
        return s.endS - s.startS;
      default:
        return {};
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() >= StartColumn) return rightAligned();
  return {};
}

QVariant TimelineModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case LaneColumn:
      return tr("Lane");
    case NameColumn:
      return tr("Span");
    case ClassColumn:
      return tr("Class");
    case StartColumn:
      return tr("Start");
    case DurationColumn:
      return tr("Duration");
    default:
      return {};
  }
}

void TimelineModel::setResult(const ComputeResultPtr& result) {
  beginResetModel();
  if (result && result->error.empty())
    m_timeline = result->timeline;
  else {
    m_timeline = TimelineResult{};
    if (result) m_timeline.unavailable = result->error;
  }
  setAvailability(m_timeline.available, qs(m_timeline.unavailable));
  endResetModel();
}

// ---------------------------------------------------------------------------------------------

TimelinePage::TimelinePage(TimelineModel* model, QWidget* parent)
    : QWidget(parent),
      m_model(model),
      m_gantt(new GanttView(model, this)),
      m_zoom(new GanttView(model, this)),
      m_zoomTitle(new QLabel(this)),
      m_summary(new QLabel(this)),
      m_table(makeTable(model, this)) {
  auto* content = new QWidget(this);
  auto* cl = new QVBoxLayout(content);
  cl->setContentsMargins(0, 0, 0, 0);
  m_summary->setWordWrap(true);
  cl->addWidget(m_summary);
  auto* split = new QSplitter(Qt::Vertical, content);
  auto* views = new QWidget(split);
  auto* vl = new QVBoxLayout(views);
  vl->setContentsMargins(0, 0, 0, 0);
  auto* wholeTitle = new QLabel(tr("<b>Whole step</b>"), views);
  vl->addWidget(wholeTitle);
  vl->addWidget(m_gantt);
  vl->addWidget(m_zoomTitle);
  vl->addWidget(m_zoom);
  split->addWidget(views);
  split->addWidget(m_table);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  cl->addWidget(split, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(new AvailabilityStack(content, model, this));
  rebuildOnReset(this, model, [this] { rebuild(); });
  rebuild();
}

void TimelinePage::rebuild() {
  double hostBusy = 0, gpuIdle = 0, gpuBusy = 0;
  int kernels = 0;
  for (int r = 0; r < m_model->rowCount(); ++r) {
    const TimelineSpan& s = m_model->span(r);
    const double d = s.endS - s.startS;
    if (s.opClass == "launch")
      hostBusy += d;
    else if (s.opClass == "idle")
      gpuIdle += d;
    else if (s.lane > 0)
      gpuBusy += d, ++kernels;
  }
  const double step = m_model->makespanS();
  // Close-up: from the start to the first kernel of layer 2 (a dense and a routed layer under
  // every_other), else the first eighth of the step.
  double zoomEnd = step / 8;
  for (int r = 0; r < m_model->rowCount(); ++r) {
    const TimelineSpan& s = m_model->span(r);
    if (s.lane > 0 && s.opClass != "idle" && QString::fromStdString(s.name).endsWith(QStringLiteral(" L2"))) {
      zoomEnd = s.startS;
      break;
    }
  }
  m_zoom->setWindow(0, zoomEnd);
  m_zoomTitle->setText(tr("<b>Close-up: the first %1</b> (layers 0 and 1)").arg(formatSeconds(zoomEnd)));
  m_summary->setText(
      tr("One step as the simulator executes it: the host enqueues kernels (one span per launch), the GPU stream "
         "runs them; grey gaps are the GPU waiting on the host. <b>Step %1</b> · %2 kernels · GPU busy %3 (%4%) · "
         "GPU waiting on the host %5 · host enqueueing %6. Wheel to zoom, drag to pan, double-click to fit.")
          .arg(formatSeconds(step))
          .arg(kernels)
          .arg(formatSeconds(gpuBusy))
          .arg(step > 0 ? 100.0 * gpuBusy / step : 0.0, 0, 'f', 1)
          .arg(formatSeconds(gpuIdle), formatSeconds(hostBusy)));
  m_table->resizeColumnsToContents();
}

// ---------------------------------------------------------------------------------------------

TabSpec timelineTab() {
  return {QStringLiteral("timeline"), QObject::tr("Timeline"),
          [](ExplorerSession& session, QWidget* parent) -> QWidget* {
            auto* model = new TimelineModel;
            auto* page = new TimelinePage(model, parent);
            model->setParent(page);
            session.addResultModel(model);
            return page;
          }};
}

}  // namespace modsim::gui
