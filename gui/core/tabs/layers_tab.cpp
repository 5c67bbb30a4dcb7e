#include "gui/core/tabs/layers_tab.hpp"

#include <QCursor>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtCharts/QAbstractBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>

#include "gui/core/explorer_session.hpp"
#include "gui/core/format.hpp"
#include "reports/chart_data.hpp"
#include "reports/charts.hpp"
#include "reports/views.hpp"

namespace modsim::gui {

// ---------------------------------------------------------------------------------------------
// LayerTimesModel

int LayerTimesModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || m_prediction.layers.empty()) return 0;
  return layerCount() + 1;  // + LM head
}
int LayerTimesModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : firstClassColumn() + classCount() + 3;
}

QString LayerTimesModel::className(int c) const {
  return c >= 0 && c < classCount() ? qs(m_prediction.opClasses[static_cast<std::size_t>(c)]) : QString();
}

QStringList LayerTimesModel::classNames() const {
  QStringList out;
  for (int c = 0; c < classCount(); ++c) out << className(c);
  return out;
}

QVariant LayerTimesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const int row = index.row();
  const int col = index.column();
  const bool head = row == layerCount();
  const LayerTiming* layer = head ? nullptr : &m_prediction.layers[static_cast<std::size_t>(row)];
  double cur = 0, dense = 0;
  bool numeric = true;
  if (col == 0) {
    if (role == Qt::DisplayRole) return head ? tr("LM head") : QString::number(layer->index);
    if (role == ValueRole) return head ? -1 : layer->index;
    return {};
  }
  if (col == 1) {
    if (role == Qt::DisplayRole) return head ? QString() : layer->routed ? tr("routed") : tr("dense");
    if (role == ValueRole) return head ? false : layer->routed;
    return {};
  }
  if (col == 2) {
    if (role == Qt::DisplayRole)
      return head || !layer->routed ? QStringLiteral("—") : QString::number(layer->capacity, 'g', 4);
    if (role == ValueRole) return head ? 1.0 : layer->capacity;
    if (role == Qt::TextAlignmentRole) return rightAligned();
    return {};
  }
  const int c = col - firstClassColumn();
  if (c < classCount()) {
    const std::size_t ci = static_cast<std::size_t>(c);
    if (head) {
      const bool isHead = className(c) == QStringLiteral("lm_head");
      cur = isHead ? m_prediction.lmHeadS : 0;
      dense = isHead ? m_prediction.denseLmHeadS : 0;
    } else {
      cur = layer->currentS[ci];
      dense = layer->denseS[ci];
    }
  } else if (c == classCount()) {
    cur = head ? m_prediction.lmHeadS : layer->currentTotalS;
    dense = head ? m_prediction.denseLmHeadS : layer->denseTotalS;
  } else if (c == classCount() + 1) {
    cur = dense = head ? m_prediction.denseLmHeadS : layer->denseTotalS;
  } else {
    cur = head ? m_prediction.lmHeadS : layer->currentTotalS;
    dense = head ? m_prediction.denseLmHeadS : layer->denseTotalS;
    numeric = false;
  }
  switch (role) {
    case Qt::DisplayRole:
      return numeric ? formatSeconds(cur) : formatRatio(cur, dense);
    case ValueRole:
      return numeric ? cur : (dense != 0 ? cur / dense : 0.0);
    case DenseValueRole:
      return dense;
    case Qt::TextAlignmentRole:
      return rightAligned();
    default:
      return {};
  }
}

QVariant LayerTimesModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  if (section == 0) return tr("Layer");
  if (section == 1) return tr("Routed");
  if (section == 2) return tr("Capacity");
  const int c = section - firstClassColumn();
  if (c >= 0 && c < classCount()) return className(c);
  if (c == classCount()) return tr("Total");
  if (c == classCount() + 1) return tr("Baseline total");
  if (c == classCount() + 2) return tr("Current / baseline");
  return {};
}

void LayerTimesModel::setResult(const ComputeResultPtr& result) {
  const bool ok = result && result->error.empty();
  beginResetModel();
  m_prediction = ok ? result->prediction : PredictionResult{};
  setAvailability(ok, result ? qs(result->error) : QString());
  endResetModel();
}

// ---------------------------------------------------------------------------------------------
// GapModel

int GapModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || m_prediction.gap.empty() ? 0 : static_cast<int>(m_prediction.gap.size()) + 2;
}
int GapModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant GapModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const int r = index.row();
  const bool first = r == 0, last = r == rowCount() - 1;
  QString name;
  double pct = 0;
  if (first) {
    name = tr("FLOPs");
    pct = 100 * m_prediction.flopRatio;
  } else if (last) {
    name = tr("time");
    pct = 100 * m_prediction.timeRatio;
  } else {
    const GapTerm& t = m_prediction.gap[static_cast<std::size_t>(r - 1)];
    name = tr(t.label.c_str());
    pct = 100 * t.fraction;
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case TermColumn:
        return name;
      case PercentColumn:
        return QStringLiteral("%1%2 %")
            .arg(!first && !last && pct > 0 ? QStringLiteral("+") : QString())
            .arg(pct, 0, 'f', 2);
      case KindColumn:
        return first || last ? tr("total") : tr("delta");
      default:
        return {};
    }
  }
  if (role == ValueRole && index.column() == PercentColumn) return pct;
  if (role == Qt::TextAlignmentRole && index.column() == PercentColumn) return rightAligned();
  return {};
}

QString GapModel::describe(int row) const {
  if (row < 0 || row >= rowCount()) return {};
  const QString term = index(row, TermColumn).data().toString();
  const QString value = index(row, PercentColumn).data().toString();
  QString meaning;
  if (row == 0) {
    meaning = tr("the FLOP ratio: what the step would take if time followed FLOPs");
  } else if (row == rowCount() - 1) {
    meaning = tr("the predicted time ratio, current / baseline");
  } else {
    meaning = qs(m_prediction.gap[static_cast<std::size_t>(row - 1)].why);
  }
  return tr("%1: %2 of the %3 step\n%4").arg(term, value, baselineName(), meaning);
}

QVariant GapModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case TermColumn:
      return tr("Term");
    case PercentColumn:
      return tr("% of baseline step");
    case KindColumn:
      return tr("Kind");
    default:
      return {};
  }
}

void GapModel::setResult(const ComputeResultPtr& result) {
  const bool ok = result && result->error.empty();
  beginResetModel();
  m_prediction = ok ? result->prediction : PredictionResult{};
  setAvailability(ok && !m_prediction.gap.empty(), result ? qs(result->error) : QString());
  endResetModel();
}

// ---------------------------------------------------------------------------------------------
// Charts

namespace {

QChart* makeLayerTimeChart(const LayerTimesModel& model, const QString& title) {
  reports::layer_time_input in;
  in.title = title.toStdString();
  in.current_name = "current";
  const int classes = model.classCount();
  for (int c = 0; c < classes; ++c) in.classes.push_back(model.className(c).toStdString());
  for (int r = 0; r < model.layerCount(); ++r) {
    std::vector<double> dense, cur;
    for (int c = 0; c < classes; ++c) {
      const QModelIndex idx = model.index(r, model.firstClassColumn() + c);
      cur.push_back(idx.data(ValueRole).toDouble());
      dense.push_back(idx.data(DenseValueRole).toDouble());
    }
    in.dense_s.push_back(std::move(dense));
    in.current_s.push_back(std::move(cur));
  }
  return reports::make_layer_time_chart(in);
}

QChart* makeGapChart(const GapModel& model, const QString& title) {
  reports::waterfall_input in;
  in.title = title.toStdString();
  in.y_label = QObject::tr("% of the %1 step").arg(model.baselineName()).toStdString();
  for (int r = 0; r < model.rowCount(); ++r) {
    reports::waterfall_step s;
    s.label = model.index(r, GapModel::TermColumn).data().toString().toStdString();
    s.value = model.index(r, GapModel::PercentColumn).data(ValueRole).toDouble();
    s.total = model.isTotal(r);
    in.steps.push_back(std::move(s));
  }
  return reports::make_waterfall_chart(in);
}

}  // namespace

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
  m_bottom = bottom;
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
  rebuildOnReset(this, model, [this] { rebuild(); });
  rebuildOnReset(this, gap, [this] { rebuildGap(); });
  rebuild();
  rebuildGap();
}

void LayersPage::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  // The waterfall beside the table from kSideBySideWidth up; below it, above the table at the
  // page's whole width (the page scrolls), so that its nine labels keep their words.
  const Qt::Orientation o = width() >= kSideBySideWidth ? Qt::Horizontal : Qt::Vertical;
  if (m_bottom->orientation() != o) m_bottom->setOrientation(o);
}

void LayersPage::rebuild() {
  QChart* chart = makeLayerTimeChart(
      *m_model,
      tr("Predicted time per layer by op class, the baseline (%1) beside current").arg(m_model->baselineName()));
  // Hover over a bar segment: its layer, bar (dense or current), op class and time.
  for (QAbstractSeries* s : chart->series())
    if (auto* bars = qobject_cast<QAbstractBarSeries*>(s))
      connect(bars, &QAbstractBarSeries::hovered, this, [this](bool on, int index, QBarSet* set) {
        if (!on) {
          m_hoverText.clear();
          QToolTip::hideText();
          return;
        }
        // Three slots per layer (reports::make_layer_time_chart): baseline, current, gap.
        if (index % 3 == 2) return;
        const int layer = index / 3;
        const bool dense = index % 3 == 0;
        const int column = m_model->firstClassColumn() + int(m_model->classNames().indexOf(set->label()));
        if (layer >= m_model->layerCount() || column < m_model->firstClassColumn()) return;
        const QModelIndex idx = m_model->index(layer, column);
        const double seconds = dense ? idx.data(DenseValueRole).toDouble() : idx.data(ValueRole).toDouble();
        m_hoverText = tr("layer %1, %2: %3 %4")
                          .arg(layer)
                          .arg(dense ? tr("baseline") : tr("current"), set->label(), formatSeconds(seconds));
        QToolTip::showText(QCursor::pos(), m_hoverText, m_view);
      });
  replaceChart(m_view, chart);
  m_table->resizeColumnsToContents();
}

void LayersPage::rebuildGap() {
  QChart* chart =
      makeGapChart(*m_gap, tr("From the FLOP ratio to the time ratio (% of the %1 step)").arg(m_gap->baselineName()));
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

TabSpec layersTab() {
  return {QStringLiteral("layers"), QObject::tr("Layers"), [](ExplorerSession& session, QWidget* parent) -> QWidget* {
            auto* model = new LayerTimesModel;
            auto* gap = new GapModel;
            auto* page = new LayersPage(model, gap, parent);
            model->setParent(page);
            gap->setParent(page);
            session.addResultModel(model);
            session.addResultModel(gap);
            return page;
          }};
}

}  // namespace modsim::gui
