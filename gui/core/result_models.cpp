#include "gui/core/result_models.hpp"

#include "sim/des/serving_fields.hpp"

#include <QColor>
#include <QFont>
#include <cmath>

#include "gui/core/explorer_config.hpp"
#include "gui/core/format.hpp"

namespace modsim::gui {
namespace {

constexpr auto kValidIndex =
    QAbstractItemModel::CheckIndexOption::IndexIsValid | QAbstractItemModel::CheckIndexOption::ParentIsInvalid;

QVariant rightAligned() { return int(Qt::AlignRight | Qt::AlignVCenter); }

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

// Called inside a model reset, so that views rebuilding on modelReset see the new state.
void ResultModel::setAvailability(bool available, const QString& reason) {
  if (available == m_available && reason == m_unavailable) return;
  m_available = available;
  m_unavailable = reason;
  emit availabilityChanged(available, reason);
}

// ---------------------------------------------------------------------------------------------
// SummaryModel

int SummaryModel::rowCount(const QModelIndex& parent) const { return parent.isValid() || !m_hasResult ? 0 : RowCount; }
int SummaryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SummaryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const PredictionResult& p = m_prediction;
  double cur = 0, dense = 0;
  QString name;
  enum Unit { InSeconds, InFlops, InBytes, InCount } unit = InSeconds;
  switch (index.row()) {
    case TotalTime:
      name = tr("Predicted time");
      cur = p.totalS;
      dense = p.denseTotalS;
      break;
    case DeviceTime:
      name = tr("Device time (ops)");
      cur = p.totalS - p.overheadS;
      dense = p.denseTotalS - p.denseOverheadS;
      break;
    case Overhead:
      name = tr("Launch overhead");
      cur = p.overheadS;
      dense = p.denseOverheadS;
      break;
    case MatmulFlops:
      name = tr("Matmul FLOPs");
      cur = double(p.matmulFlops);
      dense = double(p.denseMatmulFlops);
      unit = InFlops;
      break;
    case Bytes:
      name = tr("Memory traffic");
      cur = double(p.bytes);
      dense = double(p.denseBytes);
      unit = InBytes;
      break;
    case Params:
      name = tr("Parameters");
      cur = double(p.params);
      dense = 0;
      unit = InCount;
      break;
    default:
      return {};
  }
  auto fmt = [unit](double v) {
    switch (unit) {
      case InSeconds:
        return formatSeconds(v);
      case InFlops:
        return formatFlops(v);
      case InBytes:
        return formatBytes(v);
      case InCount:
        return formatCount(v);
    }
    return QString();
  };
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case MetricColumn:
        return name;
      case CurrentColumn:
        return fmt(cur);
      case DenseColumn:
        return unit == InCount ? QStringLiteral("—") : fmt(dense);
      case RatioColumn:
        return unit == InCount ? QStringLiteral("—") : formatRatio(cur, dense);
      default:
        return {};
    }
  }
  if (role == ValueRole && index.column() != MetricColumn) {
    if (index.column() == CurrentColumn) return cur;
    if (index.column() == DenseColumn) return dense;
    return dense != 0 ? QVariant(cur / dense) : QVariant();
  }
  if (role == DenseValueRole && index.column() != MetricColumn) return dense;
  if (role == Qt::TextAlignmentRole && index.column() != MetricColumn) return rightAligned();
  return {};
}

QVariant SummaryModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case MetricColumn:
      return tr("Metric");
    case CurrentColumn:
      return tr("Current");
    case DenseColumn:
      return m_prediction.baselineName.empty() ? tr("Dense") : tr("Baseline");
    case RatioColumn:
      return m_prediction.baselineName.empty() ? tr("Current / dense") : tr("Current / baseline");
    default:
      return {};
  }
}

void SummaryModel::setResult(const ComputeResultPtr& result) {
  beginResetModel();
  m_hasResult = result && result->error.empty();
  m_error = result ? qs(result->error) : QString();
  if (result) {
    m_modelName = qs(result->model.name);
    m_modeName = displayName(result->load.mode);
  }
  m_prediction = m_hasResult ? result->prediction : PredictionResult{};
  setAvailability(m_hasResult, m_error);
  endResetModel();
}

QString SummaryModel::headline() const {
  if (!m_error.isEmpty()) return tr("Cannot compute: %1").arg(m_error);
  if (!m_hasResult) return tr("Computing…");
  const PredictionResult& p = m_prediction;
  // A calibrated prediction carries its band: from the calibration's validation, inside its
  // measured range or outside it along some axes (sim::error_band).
  const QString band = !p.bandText.empty()    ? QStringLiteral(" (%1)").arg(qs(p.bandText).toHtmlEscaped())
                       : p.expectedP90Pct > 0 ? tr(" ±%1% (p90)").arg(p.expectedP90Pct, 0, 'f', 1)
                                              : QString();
  const QString dense = p.baselineName.empty() ? tr("dense") : qs(p.baselineName).toHtmlEscaped();
  QString text =
      tr("%1 · %2 on %3:  <b>%4</b>%9 predicted (%10 %5, <b>%6</b>)  ·  FLOPs %7 of %10  ·  %8")
          .arg(m_modeName, m_modelName.toHtmlEscaped(), qs(p.hardwareName).toHtmlEscaped(), formatSeconds(p.totalS),
               formatSeconds(p.denseTotalS), formatRatio(p.totalS, p.denseTotalS),
               formatRatio(double(p.matmulFlops), double(p.denseMatmulFlops)), qs(p.costLabel).toHtmlEscaped(), band)
          .arg(dense);
  if (!p.memoryVerdict.empty())
    text += tr("<br><span style='color:#b00020'><b>Memory</b>: this step %1.</span>")
                .arg(qs(p.memoryVerdict).toHtmlEscaped());
  return text;
}

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
  if (c == classCount() + 1) return tr("Dense total");
  if (c == classCount() + 2) return tr("Current / dense");
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
    meaning = tr("the predicted time ratio, current / dense");
  } else {
    meaning = qs(m_prediction.gap[static_cast<std::size_t>(row - 1)].why);
  }
  return tr("%1: %2 of the dense step\n%3").arg(term, value, meaning);
}

QVariant GapModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case TermColumn:
      return tr("Term");
    case PercentColumn:
      return tr("% of dense step");
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
// SweepModel

int SweepModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_sweep.points.size());
}
int SweepModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString SweepModel::baselineName() const {
  return m_sweep.baselineName.empty() ? tr("dense") : qs(m_sweep.baselineName);
}

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
      return tr("Dense");
    case CurrentColumn:
      return tr("Current");
    case RatioColumn:
      return tr("Current / dense");
    default:
      return {};
  }
}

// ---------------------------------------------------------------------------------------------
// ParallelModel

int ParallelModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_parallel.rows.size());
}
int ParallelModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ParallelModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const ParallelRow& r = row(index.row());
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case SplitColumn:
        return qs(r.split);
      case StepColumn:
        return formatSeconds(r.stepS);
      case BaselineColumn:
        return r.baselineStepS > 0 ? formatSeconds(r.baselineStepS) : QStringLiteral("—");
      case RatioColumn:
        return formatRatio(r.stepS, r.baselineStepS);
      case ComputeColumn:
        return formatSeconds(r.computeS);
      case CommColumn:
        return formatSeconds(r.commS);
      case BubbleColumn:
        return formatSeconds(r.bubbleS);
      case MemoryColumn:
        return formatBytes(r.memoryBytes);
      case FitsColumn:
        return r.fits ? tr("yes") : tr("no");
      default:
        return {};
    }
  }
  if (role == ValueRole) {
    switch (index.column()) {
      case StepColumn:
        return r.stepS;
      case BaselineColumn:
        return r.baselineStepS;
      case RatioColumn:
        return r.baselineStepS > 0 ? r.stepS / r.baselineStepS : 0.0;
      case ComputeColumn:
        return r.computeS;
      case CommColumn:
        return r.commS;
      case BubbleColumn:
        return r.bubbleS;
      case MemoryColumn:
        return r.memoryBytes;
      case FitsColumn:
        return r.fits;
      default:
        return qs(r.split);
    }
  }
  if (role == Qt::FontRole && r.chosen) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::ForegroundRole && !r.fits) return QColor(0x99, 0x99, 0x99);
  if (role == Qt::ToolTipRole)
    return tr("%1: step %2 (compute %3, communication waited for %4, pipeline bubble %5); %6 per GPU%7")
        .arg(qs(r.split), formatSeconds(r.stepS), formatSeconds(r.computeS), formatSeconds(r.commS),
             formatSeconds(r.bubbleS), formatBytes(r.memoryBytes),
             r.fits ? QString() : tr(": does not fit in the GPU's memory"));
  if (role == Qt::TextAlignmentRole && index.column() != SplitColumn && index.column() != FitsColumn)
    return rightAligned();
  return {};
}

QVariant ParallelModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case SplitColumn:
      return tr("Split");
    case StepColumn:
      return tr("Step");
    case BaselineColumn:
      return tr("Baseline step");
    case RatioColumn:
      return tr("Step / baseline");
    case ComputeColumn:
      return tr("Compute");
    case CommColumn:
      return tr("Comm. waited for");
    case BubbleColumn:
      return tr("Bubble");
    case MemoryColumn:
      return tr("Memory / GPU");
    case FitsColumn:
      return tr("Fits");
    default:
      return {};
  }
}

QString ParallelModel::summary() const {
  if (!m_parallel.available) return {};
  const ParallelRow& c = m_parallel.chosen;
  const ParallelRow& b = m_parallel.chosenBaseline;
  QString text =
      tr("<b>%1 on %2</b> (the fastest split that fits): step <b>%3</b> against %4 for %5 (<b>%6</b>) · compute %7, "
         "communication the next op waits for %8, pipeline bubble %9")
          .arg(m_modelName.toHtmlEscaped(), qs(c.split), formatSeconds(c.stepS), formatSeconds(b.stepS),
               qs(m_parallel.baselineName).toHtmlEscaped(), formatRatio(c.stepS, b.stepS), formatSeconds(c.computeS),
               formatSeconds(c.commS), formatSeconds(c.bubbleS));
  text += tr(" · %1 per GPU").arg(formatBytes(c.memoryBytes));
  if (c.pp > 1) {
    QStringList stages;
    for (std::size_t i = 0; i < m_parallel.stageS.size(); ++i)
      stages << tr("%1 from layer %2").arg(formatSeconds(m_parallel.stageS[i])).arg(m_parallel.stageFirstLayer[i]);
    text += tr("<br>Stages of one micro-batch (%1 micro-batches, balanced by predicted time): %2")
                .arg(c.microBatches)
                .arg(stages.join(QStringLiteral(", ")));
  }
  for (const std::string& n : m_parallel.notes) text += QStringLiteral("<br>") + qs(n).toHtmlEscaped();
  return text;
}

void ParallelModel::setResult(const ComputeResultPtr& result) {
  beginResetModel();
  if (result && result->error.empty()) {
    m_parallel = result->parallel;
    m_modelName = qs(result->model.name);
  } else {
    m_parallel = ParallelResult{};
    if (result) m_parallel.unavailable = result->error;
  }
  setAvailability(m_parallel.available, qs(m_parallel.unavailable));
  endResetModel();
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
          .arg(c.reaches ? QStringLiteral(" ✓") : QString());
    case ValueRole:
      return c.ratio();
    case Qt::TextAlignmentRole:
      return rightAligned();
    case Qt::BackgroundRole:
      return c.reaches ? QColor(0xD4, 0xEF, 0xD4) : c.ratio() < 1 ? QColor(0xEE, 0xF4, 0xFB) : QColor(0xFB, 0xEC, 0xEC);
    case Qt::ToolTipRole: {
      QString t = tr("batch %1, context %2: MoD %3 vs baseline %4 per step (%5x); decided by %6\n")
                      .arg(c.batch)
                      .arg(c.context)
                      .arg(formatSeconds(c.model_s), formatSeconds(c.baseline_s))
                      .arg(c.speedup(), 0, 'f', 2)
                      .arg(QString::fromUtf8(analysis::describe(c.dominant)));
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
  if (m_sampling.available && ss.empty()) m_sampling.available = false;
  setAvailability(m_sampling.available, qs(m_sampling.unavailable));
  endResetModel();
}

void SamplingModel::setStrategy(int strategy) {
  if (strategy < 0 || strategy >= static_cast<int>(m_sampling.map.strategies.size()) || strategy == m_strategy) return;
  beginResetModel();
  m_strategy = strategy;
  endResetModel();
}

QStringList SamplingModel::strategyNames() const {
  QStringList out;
  for (const auto& s : m_sampling.map.strategies) out << qs(s.strategy.name());
  return out;
}

QString SamplingModel::verdict() const {
  QStringList lines;
  for (const std::string& v : m_sampling.map.verdict) lines << qs(v);
  return lines.join(QStringLiteral("\n"));
}

QString SamplingModel::servingRouting() const { return qs(m_sampling.servingRouting); }

// ---------------------------------------------------------------------------------------------
// ValidationModel

int ValidationModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_validation.rows.size());
}
int ValidationModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ValidationModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const ValidationRow& r = row(index.row());
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case OpColumn:
        return qs(r.op);
      case ShapeColumn:
        return qs(r.shape);
      case MeasuredColumn:
        return formatSeconds(r.measuredS);
      case PredictedColumn:
        return formatSeconds(r.predictedS);
      case ErrorColumn:
        return QStringLiteral("%1%").arg(r.errorPct, 0, 'f', 1);
      default:
        return {};
    }
  }
  if (role == ValueRole) {
    switch (index.column()) {
      case OpColumn:
        return qs(r.op);
      case ShapeColumn:
        return qs(r.shape);
      case MeasuredColumn:
        return r.measuredS;
      case PredictedColumn:
        return r.predictedS;
      case ErrorColumn:
        return r.errorPct;
      default:
        return {};
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() >= MeasuredColumn) return rightAligned();
  return {};
}

QVariant ValidationModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case OpColumn:
      return tr("Op");
    case ShapeColumn:
      return tr("Shape");
    case MeasuredColumn:
      return tr("Measured");
    case PredictedColumn:
      return tr("Predicted");
    case ErrorColumn:
      return tr("Error");
    default:
      return {};
  }
}

QString ValidationModel::summary() const {
  if (!m_validation.available) return {};
  const QString blocks = tr("%1 blocks · median |error| %2% · p90 %3% · max %4%")
                             .arg(m_validation.rows.size())
                             .arg(m_validation.medianAbsPctError, 0, 'f', 1)
                             .arg(m_validation.p90AbsPctError, 0, 'f', 1)
                             .arg(m_validation.maxAbsPctError, 0, 'f', 1);
  if (m_validation.folds > 0)
    return tr("%1 · %2 ops: median %3%, p90 %4% · %5-fold cross-validation by shape: every point predicted by a "
              "calibration that never saw its shape · %6")
        .arg(blocks)
        .arg(m_validation.opPoints)
        .arg(m_validation.opMedianAbsPctError, 0, 'f', 1)
        .arg(m_validation.opP90AbsPctError, 0, 'f', 1)
        .arg(m_validation.folds)
        .arg(qs(m_validation.file));
  return tr("%1 · %2").arg(blocks).arg(qs(m_validation.costLabel));
}

void ValidationModel::setResult(const ComputeResultPtr& result) {
  beginResetModel();
  if (result && result->error.empty())
    m_validation = result->validation;
  else {
    m_validation = ValidationResult{};
    if (result) m_validation.unavailable = result->error;
  }
  setAvailability(m_validation.available, qs(m_validation.unavailable));
  endResetModel();
}

}  // namespace modsim::gui
