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

void ResultModel::setPending() {
  setAvailability(false, tr("Computing the figures of the current inputs…"));
  m_pending = true;
}

// Called inside a model reset, so that views rebuilding on modelReset see the new state.
void ResultModel::setAvailability(bool available, const QString& reason) {
  m_pending = false;
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
      return tr("Baseline");
    case RatioColumn:
      return tr("Current / baseline");
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
    m_modeName = displayName(result->load.run);
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
  const QString dense = qs(p.baselineName).toHtmlEscaped();
  QString text =
      tr("%1 · %2 on %3:  <b>%4</b>%9 predicted (%10 %5, <b>%6</b>)  ·  FLOPs %7 of %10  ·  %8")
          .arg(m_modeName, m_modelName.toHtmlEscaped(), qs(p.hardwareName).toHtmlEscaped(), formatSeconds(p.totalS),
               formatSeconds(p.denseTotalS), formatRatio(p.totalS, p.denseTotalS),
               formatRatio(double(p.matmulFlops), double(p.denseMatmulFlops)), qs(p.costLabel).toHtmlEscaped(), band)
          .arg(dense);
  if (!p.baselineWhy.empty()) text += tr("<br>Baseline <b>%1</b>: %2").arg(dense, qs(p.baselineWhy).toHtmlEscaped());
  if (p.calibrated && !p.attentionMeasured && !p.attention.empty())
    text += tr("<br><b>Attention %1</b>: never measured by this calibration, priced by the datasheet roofline; no "
               "error band")
                .arg(qs(p.attention));
  else if (!p.attention.empty())
    text += tr("<br>Attention %1%2").arg(qs(p.attention), p.calibrated ? tr(", as measured") : QString());
  if (!p.decodeStrategy.empty())
    text += tr("<br>Decode strategy <b>%1</b> (%2; the Design space and the sampling map's %1 column are the same "
               "steps): %3")
                .arg(qs(p.decodeStrategy).toHtmlEscaped(), qs(p.decodeStrategyLabel).toHtmlEscaped(),
                     qs(p.decodeCandidates).toHtmlEscaped());
  if (!p.memoryVerdict.empty())
    text += tr("<br><span style='color:#b00020'><b>Memory</b>: this step %1.</span>")
                .arg(qs(p.memoryVerdict).toHtmlEscaped());
  return text;
}

}  // namespace modsim::gui
