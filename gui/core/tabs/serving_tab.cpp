#include "gui/core/tabs/serving_tab.hpp"

#include <QBrush>
#include <QColor>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <algorithm>

#include "gui/core/explorer_session.hpp"
#include "gui/core/format.hpp"
#include "reports/chart_data.hpp"
#include "reports/charts.hpp"
#include "reports/views.hpp"
#include "sim/des/serving_fields.hpp"
#include "sim/model/memory.hpp"

namespace modsim::gui {

// ---------------------------------------------------------------------------------------------
// ServingModel

namespace {
// The figures of the serving table: those people read, in sim/des/serving_fields.hpp's order.
const std::vector<const sim::des::serve_field*>& servingRows() {
  static const std::vector<const sim::des::serve_field*> rows = [] {
    std::vector<const sim::des::serve_field*> out;
    for (const sim::des::serve_field& f : sim::des::serve_fields())
      if (f.format) out.push_back(&f);
    return out;
  }();
  return rows;
}
}  // namespace

int ServingModel::rowOf(const char* key) {
  const auto& rows = servingRows();
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (std::string_view(rows[i]->key) == key) return static_cast<int>(i);
  return -1;
}

int ServingModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !m_serving.available ? 0 : static_cast<int>(servingRows().size());
}
int ServingModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ServingModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const sim::des::serve_field& f = *servingRows()[static_cast<std::size_t>(index.row())];
  const double dense = f.value(m_serving.dense.summary);
  const double cur = f.value(m_serving.current.summary);
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case MetricColumn:
        return tr(f.label);
      case DenseColumn:
        return qs(sim::des::people_text(f, m_serving.dense.summary));
      case CurrentColumn:
        return qs(sim::des::people_text(f, m_serving.current.summary));
      case RatioColumn:
        return f.compare ? formatRatio(cur, dense) : QString();
      default:
        return {};
    }
  }
  if (role == ValueRole && index.column() != MetricColumn)
    return index.column() == DenseColumn     ? dense
           : index.column() == CurrentColumn ? cur
                                             : (dense != 0 ? cur / dense : 0.0);
  if (role == DenseValueRole && index.column() != MetricColumn) return dense;
  if (role == Qt::TextAlignmentRole && index.column() != MetricColumn) return rightAligned();
  return {};
}

QVariant ServingModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case MetricColumn:
      return tr("Metric");
    case DenseColumn:
      return tr("Baseline");
    case CurrentColumn:
      return tr("Current");
    case RatioColumn:
      return tr("Current / baseline");
    default:
      return {};
  }
}

void ServingModel::setResult(const ComputeResultPtr& result) {
  beginResetModel();
  if (result && result->error.empty())
    m_serving = result->serving;
  else {
    m_serving = ServingResult{};
    if (result) m_serving.unavailable = result->error;
  }
  setAvailability(m_serving.available, qs(m_serving.unavailable));
  endResetModel();
}

// ---------------------------------------------------------------------------------------------
// SamplingModel

int SamplingModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !m_sampling.available ? 0 : static_cast<int>(m_sampling.map.batches.size());
}
int SamplingModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || !m_sampling.available ? 0 : 1 + static_cast<int>(m_sampling.map.contexts.size());
}

QVariant SamplingModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const analysis::sampling_map& m = m_sampling.map;
  const auto b = static_cast<std::size_t>(index.row());
  if (index.column() == 0) {
    if (role == Qt::DisplayRole) return QString::number(m.batches[b]);
    if (role == ValueRole) return double(m.batches[b]);
    return {};
  }
  const analysis::sampling_cell& c =
      m.cell(static_cast<std::size_t>(m_strategy), b, static_cast<std::size_t>(index.column() - 1));
  static const char* letters = "KWPESL";
  switch (role) {
    case Qt::DisplayRole:
      return QStringLiteral("%1 %2%3")
          .arg(c.ratio(), 0, 'f', 3)
          .arg(QChar(letters[static_cast<int>(c.dominant)]))
          .arg(!c.fits     ? QStringLiteral(" ✗")
               : c.reaches ? QStringLiteral(" ✓")
                           : QString());
    case ValueRole:
      return c.ratio();
    case Qt::TextAlignmentRole:
      return rightAligned();
    case Qt::BackgroundRole:
      // A cell that does not fit in memory: hatched grey (the legend is in the verdict above).
      if (!c.fits) return QBrush(QColor(0x9A, 0x9A, 0x9A), Qt::BDiagPattern);
      return c.reaches ? QColor(0xD4, 0xEF, 0xD4) : c.ratio() < 1 ? QColor(0xEE, 0xF4, 0xFB) : QColor(0xFB, 0xEC, 0xEC);
    case Qt::ForegroundRole:
      if (!c.fits) return QColor(0x70, 0x70, 0x70);
      return {};
    case Qt::ToolTipRole: {
      // The cell's own convention: the step-time ratio MoD / baseline (lower is faster).
      QString t = tr("batch %1, context %2: MoD %3 vs baseline %4 per step, step-time ratio MoD / baseline %5 "
                     "(lower is faster); decided by %6\n")
                      .arg(c.batch)
                      .arg(c.context)
                      .arg(formatSeconds(c.model_s), formatSeconds(c.baseline_s))
                      .arg(c.ratio(), 0, 'f', 3)
                      .arg(QString::fromUtf8(analysis::describe(c.dominant)));
      if (!c.fits)
        t += tr("does not fit in %1: needs %2 (weights, KV cache, one step's activations); left out of the verdict\n")
                 .arg(qs(reports::sampling_memory_name(m)), qs(sim::format_bytes(c.needs_bytes)));
      for (analysis::decode_component k : analysis::decode_components)
        t += QStringLiteral("\n%1: %2 vs %3")
                 .arg(QString::fromUtf8(analysis::describe(k)), formatSeconds(part_of(c.model, k)),
                      formatSeconds(part_of(c.baseline, k)));
      return t;
    }
    default:
      return {};
  }
}

QVariant SamplingModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  if (section == 0) return tr("batch ↓ context →");
  const auto c = static_cast<std::size_t>(section - 1);
  if (c < m_sampling.map.contexts.size()) return QString::number(m_sampling.map.contexts[c]);
  return {};
}

void SamplingModel::setResult(const ComputeResultPtr& result) {
  beginResetModel();
  if (result && result->error.empty())
    m_sampling = result->sampling;
  else {
    m_sampling = SamplingResult{};
    if (result) m_sampling.unavailable = result->error;
  }
  m_strategy = 0;
  const auto& ss = m_sampling.map.strategies;
  for (std::size_t i = 1; i < ss.size(); ++i)
    if (ss[i].reached > ss[static_cast<std::size_t>(m_strategy)].reached) m_strategy = static_cast<int>(i);
  for (std::size_t i = 0; i < ss.size(); ++i)
    if (!m_chosenStrategy.empty() && ss[i].strategy.name() == m_chosenStrategy) m_strategy = static_cast<int>(i);
  // The strategy of the headline and the Design space (the fastest, or the user's) wins: one
  // strategy for one question.
  for (std::size_t i = 0; i < ss.size(); ++i)
    if (!m_sampling.headlineStrategy.empty() && ss[i].strategy.name() == m_sampling.headlineStrategy)
      m_strategy = static_cast<int>(i);
  if (m_sampling.available && ss.empty()) m_sampling.available = false;
  setAvailability(m_sampling.available, qs(m_sampling.unavailable));
  endResetModel();
}

void SamplingModel::setStrategy(int strategy) {
  if (strategy < 0 || strategy >= static_cast<int>(m_sampling.map.strategies.size())) return;
  m_chosenStrategy = m_sampling.map.strategies[static_cast<std::size_t>(strategy)].strategy.name();
  if (strategy == m_strategy) return;
  beginResetModel();
  m_strategy = strategy;
  endResetModel();
}

QStringList SamplingModel::strategyNames() const {
  QStringList out;
  for (const auto& s : m_sampling.map.strategies) out << qs(s.strategy.name());
  return out;
}

QString SamplingModel::headlineStrategy() const { return qs(m_sampling.headlineStrategy); }

QString SamplingModel::verdict() const {
  QStringList lines;
  for (const std::string& v : m_sampling.map.verdict) lines << qs(v);
  return lines.join(QStringLiteral("\n"));
}

QString SamplingModel::servingRouting() const { return qs(m_sampling.servingRouting); }

// ---------------------------------------------------------------------------------------------
// Charts

namespace {

QChart* makeLatencyChart(const ServingModel& model, const QString& title) {
  reports::latency_chart_input in;
  in.title = title.toStdString();
  auto add = [&in](const std::string& name, const std::vector<double>& samples, const sim::des::percentiles& q) {
    reports::latency_series s;
    s.name = name;
    s.samples_s = samples;
    if (samples.empty() && q.p99 > 0) s.quantiles_s = {{0.5, q.p50}, {0.9, q.p90}, {0.99, q.p99}};
    if (!s.samples_s.empty() || !s.quantiles_s.empty()) in.series.push_back(std::move(s));
  };
  {
    add("baseline TTFT", model.dense().ttftSamplesS, model.dense().summary.ttft_s);
    add("current TTFT", model.current().ttftSamplesS, model.current().summary.ttft_s);
    add("baseline TPOT", model.dense().tpotSamplesS, model.dense().summary.tpot_s);
    add("current TPOT", model.current().tpotSamplesS, model.current().summary.tpot_s);
  }
  return reports::make_latency_chart(in);
}

QChart* makeSamplingChart(const SamplingModel& model) {
  if (!model.available()) return reports::make_ratio_chart(reports::ratio_chart_input{});
  return reports::make_ratio_chart(reports::sampling_chart(model.map(), static_cast<std::size_t>(model.strategy())));
}

}  // namespace

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
  wrapToWidth(m_scenario);
  m_verdict->setWordWrap(true);
  wrapToWidth(m_verdict);
  m_verdict->setTextFormat(Qt::RichText);
  m_samplingTable->horizontalHeader()->setStretchLastSection(false);
  m_samplingTable->verticalHeader()->setDefaultSectionSize(20);
  m_strategy->setToolTip(
      tr("Decode strategy: sync reads the routed count back to the host before each routed block; pad sizes the "
         "block to the capacity + 3 sigma of the batch with no sync; +graphs runs the step as CUDA graphs. It opens "
         "on the headline's strategy (the fastest for the configuration); choosing one here makes it the strategy "
         "of the headline and the Design space too"));

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
  m_view->setMinimumHeight(320);  // the latency chart's y title and two-line legend need it

  auto* samplingSide = new QWidget(this);
  auto* ml = new QVBoxLayout(samplingSide);
  ml->setContentsMargins(0, 0, 0, 0);
  auto* top = new QHBoxLayout;
  auto* mapTitle =
      new QLabel(tr("<b>Sampling map</b>: step-time ratio MoD / baseline (lower is faster), strategy"), samplingSide);
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
  m_split = split;
  split->addWidget(new AvailabilityStack(servingSide, model, this));
  split->addWidget(new AvailabilityStack(samplingSide, sampling, this));
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(split, 1);
  rebuildOnReset(this, model, [this] { rebuild(); });
  rebuildOnReset(this, sampling, [this] { rebuildSampling(); });
  connect(m_strategy, &QComboBox::activated, this, [this](int i) { m_sampling->setStrategy(i); });
  rebuild();
  rebuildSampling();
}

void ServingPage::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  // Side by side from kSideBySideWidth up; below it, one above the other (the page scrolls), so
  // that neither half's charts get too narrow for their titles and legends.
  const Qt::Orientation o = width() >= kSideBySideWidth ? Qt::Horizontal : Qt::Vertical;
  if (m_split->orientation() != o) m_split->setOrientation(o);
}

void ServingPage::rebuild() {
  m_scenario->setText(
      tr("Serving simulation (sim/des), the baseline (%1) and the current configuration under the same load: %2")
          .arg(m_model->baselineName(), m_model->scenario()));
  m_table->resizeColumnsToContents();
  replaceChart(
      m_view,
      makeLatencyChart(*m_model,
                       tr("Serving latency: TTFT and TPOT, baseline (%1) vs current").arg(m_model->baselineName())));
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
  if (std::any_of(m.strategies.begin(), m.strategies.end(),
                  [](const analysis::sampling_strategy_map& s) { return s.excluded > 0; }))
    verdict += tr(" Hatched grey cells (✗) do not fit in %1 (weights, KV cache, one step's activations) and are left "
                  "out of the verdict.")
                   .arg(qs(reports::sampling_memory_name(m)));
  if (!m_sampling->headlineStrategy().isEmpty())
    verdict += tr(" The headline and the Design space are <b>%1</b> steps, the same routing draws: its map is shown.")
                   .arg(m_sampling->headlineStrategy().toHtmlEscaped());
  for (const std::string& v : m.verdict)
    verdict += QStringLiteral("<br>• ") + QString::fromStdString(v).toHtmlEscaped();
  m_verdict->setText(verdict);
  m_samplingTable->resizeColumnsToContents();
  replaceChart(m_samplingView, makeSamplingChart(*m_sampling));
}

// ---------------------------------------------------------------------------------------------

TabSpec servingTab() {
  return {QStringLiteral("serving"), QObject::tr("Serving / sampling"),
          [](ExplorerSession& session, QWidget* parent) -> QWidget* {
            auto* model = new ServingModel;
            auto* sampling = new SamplingModel;
            auto* page = new ServingPage(model, sampling, parent);
            model->setParent(page);
            sampling->setParent(page);
            session.addResultModel(model);
            session.addResultModel(sampling);
            // The strategy chosen in the map is the user's choice for every decode figure (the
            // headline and the Design space follow it).
            QObject::connect(page->strategyEditor(), &QComboBox::activated, &session, [&session, sampling](int i) {
              const QStringList names = sampling->strategyNames();
              if (i >= 0 && i < names.size()) session.setDecodeStrategy(names[i].toStdString());
            });
            return page;
          }};
}

}  // namespace modsim::gui
