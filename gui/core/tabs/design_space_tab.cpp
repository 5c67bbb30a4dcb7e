#include "gui/core/tabs/design_space_tab.hpp"

#include <QCheckBox>
#include <QFont>
#include <QHash>
#include <QLabel>
#include <QMainWindow>
#include <QMouseEvent>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QScatterSeries>
#include <cmath>

#include "gui/core/explorer_session.hpp"
#include "gui/core/format.hpp"
#include "reports/chart_data.hpp"
#include "reports/charts.hpp"
#include "reports/views.hpp"

namespace modsim::gui {

// ---------------------------------------------------------------------------------------------
// SweepModel

int SweepModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_sweep.points.size());
}
int SweepModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString SweepModel::baselineName() const { return qs(m_sweep.baselineName); }

QString SweepModel::label(int row) const {
  const SweepPoint& p = point(row);
  QString s = qs(p.variant);
  if (p.schedule != "none")
    s += QStringLiteral(" · ") + qs(p.schedule) + QStringLiteral(" · c=%1").arg(p.capacity, 0, 'g', 4);
  return s;
}

QVariant SweepModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const SweepPoint& p = point(index.row());
  const double speedup = p.timeS > 0 ? m_sweep.denseTimeS / p.timeS : 0;
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case VariantColumn:
        return qs(p.variant);
      case ScheduleColumn:
        return qs(p.schedule);
      case CapacityColumn:
        return p.schedule == "none" ? QStringLiteral("—") : QString::number(p.capacity, 'g', 4);
      case FlopsColumn:
        return formatFlops(double(p.matmulFlops));
      case TimeColumn:
        return formatSeconds(p.timeS);
      case TimeRatioColumn:
        return formatRatio(p.timeS, m_sweep.denseTimeS);
      case FlopRatioColumn:
        return formatRatio(double(p.matmulFlops), double(m_sweep.denseMatmulFlops));
      case ParetoColumn:
        return p.current ? (p.pareto ? tr("front · current") : tr("current")) : p.pareto ? tr("front") : QString();
      default:
        return {};
    }
  }
  if (role == ValueRole) {
    switch (index.column()) {
      case VariantColumn:
        return qs(p.variant);
      case ScheduleColumn:
        return qs(p.schedule);
      case CapacityColumn:
        return p.capacity;
      case FlopsColumn:
        return double(p.matmulFlops);
      case TimeColumn:
        return p.timeS;
      case TimeRatioColumn:
        return m_sweep.denseTimeS > 0 ? p.timeS / m_sweep.denseTimeS : 0.0;
      case FlopRatioColumn:
        return m_sweep.denseMatmulFlops ? double(p.matmulFlops) / double(m_sweep.denseMatmulFlops) : 0.0;
      case ParetoColumn:
        return p.pareto;
      default:
        return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    return tr("%1\n%2 matmul FLOPs (%3 of %6)\n%4 predicted (%7 of %6: %5× as fast)")
        .arg(label(index.row()), formatFlops(double(p.matmulFlops)),
             formatRatio(double(p.matmulFlops), double(m_sweep.denseMatmulFlops)), formatSeconds(p.timeS),
             QString::number(speedup, 'f', 2), baselineName(), formatRatio(p.timeS, m_sweep.denseTimeS));
  }
  if (role == Qt::FontRole && p.current) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::TextAlignmentRole && index.column() >= CapacityColumn && index.column() <= FlopRatioColumn)
    return rightAligned();
  return {};
}

QVariant SweepModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case VariantColumn:
      return tr("Variant");
    case ScheduleColumn:
      return tr("Schedule");
    case CapacityColumn:
      return tr("Capacity");
    case FlopsColumn:
      return tr("Matmul FLOPs");
    case TimeColumn:
      return tr("Predicted time");
    case TimeRatioColumn:
      return tr("Time / %1").arg(baselineName());
    case FlopRatioColumn:
      return tr("FLOPs / %1").arg(baselineName());
    case ParetoColumn:
      return tr("Pareto");
    default:
      return {};
  }
}

void SweepModel::setResult(const ComputeResultPtr& result) {
  if (!result || !result->error.empty()) {
    SweepResult empty;
    empty.unavailable = result ? result->error : std::string();
    setSweep(std::move(empty));
    return;
  }
  setSweep(result->sweep);
}

void SweepModel::setSweep(SweepResult sweep) {
  beginResetModel();
  m_sweep = std::move(sweep);
  setAvailability(m_sweep.available, qs(m_sweep.unavailable));
  endResetModel();
}

// ---------------------------------------------------------------------------------------------
// Charts

namespace {

QChart* makeDesignSpaceChart(const SweepModel& model, const QString& title) {
  reports::pareto_chart_input in;
  in.title = title.toStdString();
  in.x_label = "matmul FLOPs per step (GFLOP)";
  in.y_label = "predicted wall-clock (ms)";
  in.points.reserve(static_cast<std::size_t>(model.rowCount()));
  for (int r = 0; r < model.rowCount(); ++r) {
    const SweepPoint& p = model.point(r);
    reports::scatter_point s;
    s.label = "current: " + model.label(r).toStdString();
    s.group = p.variant;
    s.flops = double(p.matmulFlops);
    s.time_s = p.timeS;
    s.pareto = p.pareto;
    s.highlight = p.current;
    in.points.push_back(std::move(s));
  }
  // The baseline every ratio compares with, and in decode the step a 1.5x faster sampling
  // needs (the paper's claim): which points reach it is read off the chart.
  if (model.denseTimeS() > 0) {
    in.references.push_back({"baseline: " + model.baselineName().toStdString(), model.denseTimeS(), false});
    if (model.decode())
      in.references.push_back(
          {"1.5x faster than the baseline" + (model.strategy().empty() ? std::string() : " (" + model.strategy() + ")"),
           model.denseTimeS() / 1.5, true});
  }
  return reports::make_pareto_chart(in);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

namespace {
// Sorts by ValueRole (numbers as numbers) and can keep only the Pareto front.
class SweepProxy : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  void setFrontOnly(bool on) {
    m_frontOnly = on;
    invalidateFilter();
  }

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
    if (!m_frontOnly) return true;
    const QModelIndex idx = sourceModel()->index(row, SweepModel::ParetoColumn, parent);
    return idx.data(ValueRole).toBool() || !idx.data(Qt::DisplayRole).toString().isEmpty();
  }
  bool lessThan(const QModelIndex& a, const QModelIndex& b) const override {
    const QVariant va = a.data(ValueRole), vb = b.data(ValueRole);
    if (va.typeId() == QMetaType::Double && vb.typeId() == QMetaType::Double) return va.toDouble() < vb.toDouble();
    return va.toString() < vb.toString();
  }

 private:
  bool m_frontOnly = true;
};
}  // namespace

DesignSpacePage::DesignSpacePage(SweepModel* model, QWidget* parent)
    : QWidget(parent),
      m_model(model),
      m_view(makeChartView(this)),
      m_proxy(new SweepProxy(this)),
      m_frontOnly(new QCheckBox(tr("Pareto front and current only"), this)),
      m_hint(new QLabel(this)) {
  m_proxy->setSourceModel(model);
  m_proxy->setSortRole(ValueRole);
  m_table = makeTable(m_proxy, this);
  m_table->setSortingEnabled(true);
  m_table->sortByColumn(SweepModel::FlopsColumn, Qt::AscendingOrder);
  m_frontOnly->setChecked(true);
  m_hint->setText(
      tr("Each point is one configuration around the current one (capacity × schedule × variant). "
         "Hover for details; <b>click a point</b> (or double-click a row) to adopt it."));
  m_hint->setWordWrap(true);

  auto* content = new QWidget(this);
  auto* split = new QSplitter(Qt::Vertical, content);
  split->addWidget(m_view);
  auto* side = new QWidget(split);
  auto* sideLayout = new QVBoxLayout(side);
  sideLayout->setContentsMargins(0, 0, 0, 0);
  sideLayout->addWidget(m_frontOnly);
  sideLayout->addWidget(m_table);
  split->addWidget(side);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  auto* cl = new QVBoxLayout(content);
  cl->setContentsMargins(0, 0, 0, 0);
  cl->addWidget(m_hint);
  cl->addWidget(split, 1);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(new AvailabilityStack(content, model, this));

  m_view->setMouseTracking(true);
  m_view->viewport()->setMouseTracking(true);
  m_view->viewport()->installEventFilter(this);
  rebuildOnReset(this, model, [this] { rebuild(); });
  connect(m_frontOnly, &QCheckBox::toggled, this,
          [this](bool on) { static_cast<SweepProxy*>(m_proxy)->setFrontOnly(on); });
  connect(m_table, &QTableView::doubleClicked, this,
          [this](const QModelIndex& idx) { emit adoptRequested(m_proxy->mapToSource(idx).row()); });
  rebuild();
}

void DesignSpacePage::rebuild() {
  // In decode every point is a decode step of one strategy (the headline's): the title names it.
  const QString title =
      m_model->decode() && !m_model->strategy().empty()
          ? tr("Design space: decode step (%1, the headline's strategy) vs matmul FLOPs").arg(qs(m_model->strategy()))
          : tr("Design space: predicted wall-clock vs matmul FLOPs");
  QChart* chart = makeDesignSpaceChart(*m_model, title);
  // Hover and click are found from the pointer's pixel position over every marker, so that the
  // Pareto line and the current point's star drawn above them do not hide points.
  m_markers.clear();
  QHash<QString, QScatterSeries*> byName;
  for (QAbstractSeries* s : chart->series())
    if (auto* scatter = qobject_cast<QScatterSeries*>(s); scatter && !byName.contains(scatter->name()))
      byName.insert(scatter->name(), scatter);
  QHash<QString, int> next;
  for (int r = 0; r < m_model->rowCount(); ++r) {
    const QString group = QString::fromStdString(m_model->point(r).variant);
    QScatterSeries* series = byName.value(group.isEmpty() ? QStringLiteral("points") : group);
    const int i = next[group]++;
    m_markers.append({series && i < series->count() ? series : nullptr, i});
  }
  replaceChart(m_view, chart);
  m_table->resizeColumnsToContents();
}

QPoint DesignSpacePage::pixelOf(int row) const {
  if (row < 0 || row >= m_markers.size() || !m_markers[row].first || !m_view->chart()) return {-1, -1};
  QScatterSeries* series = m_markers[row].first;
  const QPointF inChart = m_view->chart()->mapToPosition(series->at(m_markers[row].second), series);
  return m_view->mapFromScene(m_view->chart()->mapToScene(inChart));
}

int DesignSpacePage::rowAtPixel(const QPoint& pos, double radius) const {
  int best = -1;
  double bestD = radius * radius;
  for (int r = 0; r < m_markers.size(); ++r) {
    const QPoint p = pixelOf(r);
    if (p.x() < 0) continue;
    const double dx = p.x() - pos.x(), dy = p.y() - pos.y();
    const double d = dx * dx + dy * dy;
    // Among coincident points prefer the current one, then one on the front.
    const bool better = d < bestD - 1e-9 ||
                        (best >= 0 && std::abs(d - bestD) <= 1e-9 &&
                         (m_model->point(r).current || (m_model->point(r).pareto && !m_model->point(best).current)));
    if (d <= radius * radius && better) {
      bestD = d;
      best = r;
    }
  }
  return best;
}

void DesignSpacePage::clickAt(const QPoint& pos) {
  const int row = rowAtPixel(pos);
  if (row >= 0) emit adoptRequested(row);
}

void DesignSpacePage::hoverAt(const QPoint& pos) {
  const int row = rowAtPixel(pos);
  if (row < 0) {
    m_hoverText.clear();
    QToolTip::hideText();
    return;
  }
  const SweepPoint& p = m_model->point(row);
  m_hoverText = m_model->index(row, 0).data(Qt::ToolTipRole).toString() +
                (p.current ? tr("\nthe current configuration") : QString()) +
                (p.pareto ? tr("\non the Pareto front") : QString()) + (p.current ? QString() : tr("\nclick to adopt"));
  QToolTip::showText(m_view->viewport()->mapToGlobal(pos), m_hoverText, m_view);
}

bool DesignSpacePage::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_view->viewport()) {
    if (event->type() == QEvent::MouseMove) {
      hoverAt(static_cast<QMouseEvent*>(event)->position().toPoint());
    } else if (event->type() == QEvent::MouseButtonRelease &&
               static_cast<QMouseEvent*>(event)->button() == Qt::LeftButton) {
      clickAt(static_cast<QMouseEvent*>(event)->position().toPoint());
    } else if (event->type() == QEvent::Leave) {
      m_hoverText.clear();
      QToolTip::hideText();
    }
  }
  return QWidget::eventFilter(watched, event);
}

// ---------------------------------------------------------------------------------------------

TabSpec designSpaceTab() {
  return {QStringLiteral("design-space"), QObject::tr("Design space"),
          [](ExplorerSession& session, QWidget* parent) -> QWidget* {
            auto* model = new SweepModel;
            auto* page = new DesignSpacePage(model, parent);
            model->setParent(page);
            session.addResultModel(model);
            QObject::connect(page, &DesignSpacePage::adoptRequested, &session, [&session, model, page](int row) {
              if (row < 0 || row >= model->rowCount()) return;
              session.adoptDesignPoint(model->point(row).model);
              if (auto* window = qobject_cast<QMainWindow*>(page->window()))
                window->statusBar()->showMessage(QObject::tr("Adopted the configuration of the design point"), 4000);
            });
            return page;
          }};
}

}  // namespace modsim::gui
