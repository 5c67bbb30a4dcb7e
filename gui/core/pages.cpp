#include "gui/core/pages.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHash>
#include <QLabel>
#include <QMouseEvent>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtCharts/QAbstractBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <cmath>
#include <limits>

#include "gui/core/chart_inputs.hpp"
#include "gui/core/format.hpp"
#include "gui/core/gantt_view.hpp"
#include "gui/core/result_models.hpp"

namespace modsim::gui {
namespace {

QTableView* makeTable(QAbstractItemModel* model, QWidget* parent) {
  auto* t = new QTableView(parent);
  t->setModel(model);
  t->setAlternatingRowColors(true);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setEditTriggers(QAbstractItemView::NoEditTriggers);
  t->verticalHeader()->setVisible(false);
  t->verticalHeader()->setDefaultSectionSize(22);
  t->horizontalHeader()->setStretchLastSection(true);
  t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  return t;
}

QChartView* makeChartView(QWidget* parent) {
  auto* v = new QChartView(parent);
  v->setRenderHint(QPainter::Antialiasing);
  v->setMinimumHeight(260);
  return v;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

AvailabilityStack::AvailabilityStack(QWidget* content, ResultModel* model, QWidget* parent)
    : QStackedWidget(parent), m_message(new QLabel(this)) {
  m_message->setAlignment(Qt::AlignCenter);
  m_message->setWordWrap(true);
  m_message->setMargin(40);
  m_message->setStyleSheet(QStringLiteral("QLabel { color: #555; font-size: 13pt; }"));
  addWidget(content);
  addWidget(m_message);
  connect(model, &ResultModel::availabilityChanged, this, &AvailabilityStack::update);
  update(model->available(), model->unavailableReason());
}

QString AvailabilityStack::message() const { return currentIndex() == 1 ? m_message->text() : QString(); }

void AvailabilityStack::update(bool available, const QString& reason) {
  m_message->setText(reason.isEmpty() ? tr("Computing…") : reason);
  setCurrentIndex(available ? 0 : 1);
}

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
  connect(model, &QAbstractItemModel::modelReset, this, &DesignSpacePage::rebuild);
  connect(m_frontOnly, &QCheckBox::toggled, this,
          [this](bool on) { static_cast<SweepProxy*>(m_proxy)->setFrontOnly(on); });
  connect(m_table, &QTableView::doubleClicked, this,
          [this](const QModelIndex& idx) { emit adoptRequested(m_proxy->mapToSource(idx).row()); });
  rebuild();
}

void DesignSpacePage::rebuild() {
  QChart* chart = makeDesignSpaceChart(*m_model, tr("Design space: predicted wall-clock vs matmul FLOPs"));
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

LayersPage::LayersPage(LayerTimesModel* model, GapModel* gap, QWidget* parent)
    : QWidget(parent),
      m_model(model),
      m_gap(gap),
      m_view(makeChartView(this)),
      m_gapView(makeChartView(this)),
      m_table(makeTable(model, this)) {
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(m_view);
  auto* bottom = new QSplitter(Qt::Horizontal, split);
  m_gapView->setMinimumWidth(420);
  bottom->addWidget(m_gapView);
  bottom->addWidget(m_table);
  bottom->setStretchFactor(0, 2);
  bottom->setStretchFactor(1, 3);
  split->addWidget(bottom);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(new AvailabilityStack(split, model, this));
  connect(model, &QAbstractItemModel::modelReset, this, &LayersPage::rebuild);
  connect(gap, &QAbstractItemModel::modelReset, this, &LayersPage::rebuildGap);
  rebuild();
  rebuildGap();
}

void LayersPage::rebuild() {
  QChart* chart = makeLayerTimeChart(*m_model, tr("Predicted time per layer by op class, dense beside current"));
  // Hover over a bar segment: its layer, bar (dense or current), op class and time.
  for (QAbstractSeries* s : chart->series())
    if (auto* bars = qobject_cast<QAbstractBarSeries*>(s))
      connect(bars, &QAbstractBarSeries::hovered, this, [this](bool on, int index, QBarSet* set) {
        if (!on) {
          m_hoverText.clear();
          QToolTip::hideText();
          return;
        }
        const int layer = index / 2;
        const bool dense = index % 2 == 0;
        const int column = m_model->firstClassColumn() + int(m_model->classNames().indexOf(set->label()));
        if (layer >= m_model->layerCount() || column < m_model->firstClassColumn()) return;
        const QModelIndex idx = m_model->index(layer, column);
        const double seconds = dense ? idx.data(DenseValueRole).toDouble() : idx.data(ValueRole).toDouble();
        m_hoverText = tr("layer %1, %2: %3 %4")
                          .arg(layer)
                          .arg(dense ? tr("dense") : tr("current"), set->label(), formatSeconds(seconds));
        QToolTip::showText(QCursor::pos(), m_hoverText, m_view);
      });
  replaceChart(m_view, chart);
  m_table->resizeColumnsToContents();
}

void LayersPage::rebuildGap() {
  QChart* chart = makeGapChart(*m_gap, tr("From the FLOP ratio to the time ratio (% of the dense step)"));
  // Hover over a bar: the term, its value and what it means.
  for (QAbstractSeries* s : chart->series())
    if (auto* bars = qobject_cast<QAbstractBarSeries*>(s))
      connect(bars, &QAbstractBarSeries::hovered, this, [this](bool on, int index, QBarSet*) {
        if (!on || index < 0 || index >= m_gap->rowCount()) {
          m_hoverText.clear();
          QToolTip::hideText();
          return;
        }
        m_hoverText = m_gap->describe(index);
        QToolTip::showText(QCursor::pos(), m_hoverText, m_gapView);
      });
  replaceChart(m_gapView, chart);
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
  connect(model, &QAbstractItemModel::modelReset, this, &TimelinePage::rebuild);
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

ServingPage::ServingPage(ServingModel* model, SamplingModel* sampling, QWidget* parent)
    : QWidget(parent),
      m_model(model),
      m_sampling(sampling),
      m_view(makeChartView(this)),
      m_table(makeTable(model, this)),
      m_scenario(new QLabel(this)),
      m_samplingView(makeChartView(this)),
      m_samplingTable(makeTable(sampling, this)),
      m_strategy(new QComboBox(this)),
      m_verdict(new QLabel(this)) {
  m_scenario->setWordWrap(true);
  m_scenario->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  m_verdict->setWordWrap(true);
  m_verdict->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  m_verdict->setTextFormat(Qt::RichText);
  m_samplingTable->horizontalHeader()->setStretchLastSection(false);
  m_samplingTable->verticalHeader()->setDefaultSectionSize(20);
  m_strategy->setToolTip(
      tr("Decode strategy: sync reads the routed count back to the host before each routed block; pad sizes the "
         "block to the capacity + 3 sigma of the batch with no sync; +graphs runs the step as CUDA graphs"));

  // Left: serving under load; right: the sampling map.
  auto* servingSide = new QWidget(this);
  auto* sl = new QVBoxLayout(servingSide);
  sl->setContentsMargins(0, 0, 0, 0);
  sl->addWidget(m_scenario);
  auto* servingSplit = new QSplitter(Qt::Vertical, servingSide);
  servingSplit->addWidget(m_view);
  servingSplit->addWidget(m_table);
  servingSplit->setStretchFactor(0, 3);
  servingSplit->setStretchFactor(1, 2);
  sl->addWidget(servingSplit, 1);
  m_table->horizontalHeader()->setStretchLastSection(false);

  auto* samplingSide = new QWidget(this);
  auto* ml = new QVBoxLayout(samplingSide);
  ml->setContentsMargins(0, 0, 0, 0);
  auto* top = new QHBoxLayout;
  auto* mapTitle = new QLabel(tr("<b>Sampling map</b>, strategy"), samplingSide);
  mapTitle->setToolTip(tr("Decode step time of the model over its baseline's, over decode batch × cached context"));
  top->addWidget(mapTitle);
  top->addWidget(m_strategy);
  top->addStretch(1);
  ml->addLayout(top);
  // Chart, table and verdict share the height through a splitter; the verdict scrolls, so a
  // long one never squeezes the chart below its labels' height.
  auto* verdictScroll = new QScrollArea(samplingSide);
  verdictScroll->setWidget(m_verdict);
  verdictScroll->setWidgetResizable(true);
  verdictScroll->setFrameShape(QFrame::NoFrame);
  verdictScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  verdictScroll->setMinimumHeight(90);
  auto* samplingSplit = new QSplitter(Qt::Vertical, samplingSide);
  samplingSplit->addWidget(m_samplingView);
  samplingSplit->addWidget(m_samplingTable);
  samplingSplit->addWidget(verdictScroll);
  samplingSplit->setStretchFactor(0, 4);
  samplingSplit->setStretchFactor(1, 2);
  samplingSplit->setStretchFactor(2, 1);
  samplingSplit->setChildrenCollapsible(false);
  ml->addWidget(samplingSplit, 1);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(new AvailabilityStack(servingSide, model, this));
  split->addWidget(new AvailabilityStack(samplingSide, sampling, this));
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(split, 1);
  connect(model, &QAbstractItemModel::modelReset, this, &ServingPage::rebuild);
  connect(sampling, &QAbstractItemModel::modelReset, this, &ServingPage::rebuildSampling);
  connect(m_strategy, &QComboBox::activated, this, [this](int i) { m_sampling->setStrategy(i); });
  rebuild();
  rebuildSampling();
}

void ServingPage::rebuild() {
  m_scenario->setText(
      tr("Serving simulation (sim/des), dense baseline and current configuration under the same load: %1")
          .arg(m_model->scenario()));
  m_table->resizeColumnsToContents();
  replaceChart(m_view, makeLatencyChart(*m_model, tr("Serving latency: TTFT and TPOT, dense vs current")));
}

void ServingPage::rebuildSampling() {
  const QStringList names = m_sampling->strategyNames();
  QStringList current;
  for (int i = 0; i < m_strategy->count(); ++i) current << m_strategy->itemText(i);
  if (current != names) {
    m_strategy->clear();
    m_strategy->addItems(names);
  }
  m_strategy->setCurrentIndex(m_sampling->strategy());
  const analysis::sampling_map& m = m_sampling->map();
  QString verdict = tr("Target %1x (ratio ≤ %2); cell letter = what decides it: <b>K</b> KV reads, <b>W</b> weight "
                       "reads, <b>P</b> predictor/routing, <b>E</b> norms/activations, <b>S</b> sync round trips, "
                       "<b>L</b> launches/host. Mean of %3 routing draws; baseline: %4.")
                        .arg(m.target_speedup)
                        .arg(m.target_speedup > 0 ? 1.0 / m.target_speedup : 0.0, 0, 'f', 3)
                        .arg(m.draws)
                        .arg(QString::fromStdString(m.baseline_name).toHtmlEscaped());
  for (const std::string& v : m.verdict)
    verdict += QStringLiteral("<br>• ") + QString::fromStdString(v).toHtmlEscaped();
  m_verdict->setText(verdict);
  m_samplingTable->resizeColumnsToContents();
  replaceChart(m_samplingView, makeSamplingChart(*m_sampling));
}

// ---------------------------------------------------------------------------------------------

ParallelPage::ParallelPage(ParallelModel* model, QWidget* parent)
    : QWidget(parent),
      m_model(model),
      m_view(makeChartView(this)),
      m_table(makeTable(model, this)),
      m_gpus(new QSpinBox(this)),
      m_summary(new QLabel(this)) {
  m_gpus->setRange(1, 4096);
  m_gpus->setValue(8);
  m_gpus->setKeyboardTracking(false);
  m_gpus->setToolTip(
      tr("GPUs the step is split over: every tensor × pipeline × data parallel split of them "
         "(tp and pp powers of two, tp within a node) is ranked"));
  m_summary->setWordWrap(true);
  m_summary->setTextFormat(Qt::RichText);
  m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("GPUs"), this));
  top->addWidget(m_gpus);
  auto* how = new QLabel(tr("— each GPU computes a tensor-parallel shard; a layer's all-reduces carry only the "
                            "tokens its block computes (a routed layer's k); stages are balanced by time, 1F1B"),
                         this);
  how->setWordWrap(true);
  how->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  top->addWidget(how, 1);
  auto* content = new QWidget(this);
  auto* cl = new QVBoxLayout(content);
  cl->setContentsMargins(0, 0, 0, 0);
  cl->addWidget(m_summary);
  auto* split = new QSplitter(Qt::Vertical, content);
  split->addWidget(m_view);
  split->addWidget(m_table);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  cl->addWidget(split, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(top);
  layout->addWidget(new AvailabilityStack(content, model, this), 1);
  connect(m_gpus, &QSpinBox::valueChanged, this, &ParallelPage::gpusChosen);
  connect(model, &QAbstractItemModel::modelReset, this, &ParallelPage::rebuild);
  rebuild();
}

void ParallelPage::setGpus(int gpus) {
  const QSignalBlocker block(m_gpus);
  m_gpus->setValue(gpus);
}

void ParallelPage::rebuild() {
  m_summary->setText(m_model->summary());
  replaceChart(m_view, makeParallelChart(*m_model, tr("The step by split: compute, communication waited for, "
                                                      "pipeline bubble (splits that fit in memory)")));
  m_table->resizeColumnsToContents();
}

// ---------------------------------------------------------------------------------------------

ValidationPage::ValidationPage(ValidationModel* model, QWidget* parent)
    : QWidget(parent),
      m_model(model),
      m_view(makeChartView(this)),
      m_table(makeTable(model, this)),
      m_summary(new QLabel(this)),
      m_open(new QPushButton(tr("Open measurements CSV…"), this)) {
  m_summary->setWordWrap(true);
  m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  auto* top = new QHBoxLayout;
  top->addWidget(m_open, 0, Qt::AlignTop);
  top->addWidget(m_summary, 1);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(m_view);
  split->addWidget(m_table);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setSizes({1, 1});
  m_view->setMinimumWidth(440);  // the log-log axes and their legend need the room
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(top);
  layout->addWidget(new AvailabilityStack(split, model, this), 1);
  connect(model, &QAbstractItemModel::modelReset, this, &ValidationPage::rebuild);
  connect(m_open, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open measurements"), m_model->file(),
                                                      tr("Measurements (*.csv);;All files (*)"));
    if (!path.isEmpty()) emit measurementsFileChosen(path);
  });
  rebuild();
}

void ValidationPage::rebuild() {
  const QString summary = m_model->summary();
  m_summary->setText(m_model->file().isEmpty() ? tr("No measurements chosen.")
                                               : QStringLiteral("%1 — %2").arg(m_model->file(), summary));
  replaceChart(m_view, makeValidationChart(*m_model, tr("Measured vs predicted block times")));
  m_table->resizeColumnsToContents();
}

}  // namespace modsim::gui
