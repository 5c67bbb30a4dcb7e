#include "gui/core/schedule_model.hpp"

#include <algorithm>

#include "sim/model/spec.hpp"

namespace modsim::gui {

ScheduleModel::ScheduleModel(QObject* parent) : QAbstractTableModel(parent) {}

int ScheduleModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_layers.size());
}

int ScheduleModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ScheduleModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return {};
  const auto& layer = m_layers[static_cast<std::size_t>(index.row())];
  switch (index.column()) {
    case LayerColumn:
      if (role == Qt::DisplayRole) return index.row();
      if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
      break;
    case RoutedColumn:
      if (role == Qt::CheckStateRole) return layer ? Qt::Checked : Qt::Unchecked;
      if (role == Qt::DisplayRole) return layer ? tr("routed") : tr("dense");
      if (role == Qt::ToolTipRole) return tr("Route this layer's block with MoD (top-k per sequence)");
      break;
    case CapacityColumn:
      if (role == Qt::EditRole) return layer.value_or(1.0);
      if (role == Qt::DisplayRole) return layer ? QString::number(*layer, 'g', 4) : QStringLiteral("—");
      if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
      if (role == Qt::ToolTipRole) return tr("Fraction of each sequence's tokens the block computes, in (0, 1]");
      break;
    case TokensColumn:
      if (role == Qt::DisplayRole) {
        const qint64 k = layer ? sim::routed_tokens(*layer, m_seqLen) : m_seqLen;
        if (m_decode) {
          const double routed = layer ? *layer * static_cast<double>(m_batch) : static_cast<double>(m_batch);
          return QStringLiteral("%1 of %2 · KV %3").arg(routed, 0, 'g', 4).arg(m_batch).arg(k + 1);
        }
        return QStringLiteral("%1 / %2").arg(k).arg(m_seqLen);
      }
      if (role == Qt::ToolTipRole)
        return m_decode ? tr("Decode step: expected tokens the block computes per step (capacity × batch) of the "
                             "batch, and the KV entries each reads at this layer (its cache holds k of the context, "
                             "plus the new token)")
                        : tr("Tokens the block computes per sequence (k) of the sequence (S)");
      if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
      break;
    default:
      break;
  }
  return {};
}

bool ScheduleModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return false;
  auto& layer = m_layers[static_cast<std::size_t>(index.row())];
  const QString key = QStringLiteral("routing.layer_capacities[%1]").arg(index.row());
  if (index.column() == RoutedColumn && role == Qt::CheckStateRole) {
    const bool routed = value.toInt() == Qt::Checked;
    if (routed == layer.has_value()) return true;
    if (routed)
      layer = m_lastCapacity;
    else
      layer.reset();
    emit dataChanged(this->index(index.row(), RoutedColumn), this->index(index.row(), TokensColumn));
    emit scheduleEdited();
    return true;
  }
  if (index.column() == CapacityColumn && role == Qt::EditRole) {
    bool ok = false;
    const double c = value.toDouble(&ok);
    if (!ok || !(c > 0 && c <= 1)) {
      const QString kept = layer ? tr("; layer %1 keeps %2").arg(index.row()).arg(*layer, 0, 'g', 4) : QString();
      emit editRejected(key + QStringLiteral(": capacity must be in (0, 1], got ") + value.toString() + kept, true);
      return false;
    }
    if (layer && *layer == c) return true;
    layer = c;
    m_lastCapacity = c;
    emit dataChanged(this->index(index.row(), RoutedColumn), this->index(index.row(), TokensColumn));
    emit scheduleEdited();
    return true;
  }
  return false;
}

Qt::ItemFlags ScheduleModel::flags(const QModelIndex& index) const {
  if (!index.isValid() || !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
  if (index.column() == RoutedColumn) f |= Qt::ItemIsUserCheckable;
  if (index.column() == CapacityColumn && m_layers[static_cast<std::size_t>(index.row())]) f |= Qt::ItemIsEditable;
  return f;
}

QVariant ScheduleModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case LayerColumn:
      return tr("Layer");
    case RoutedColumn:
      return tr("Routed");
    case CapacityColumn:
      return tr("Capacity");
    case TokensColumn:
      return m_decode ? tr("routed / B · KV") : tr("k / S");
    default:
      return {};
  }
}

void ScheduleModel::setLayers(std::vector<std::optional<double>> layers) {
  beginResetModel();
  m_layers = std::move(layers);
  for (const auto& l : m_layers)
    if (l) {
      m_lastCapacity = *l;
      break;
    }
  endResetModel();
}

void ScheduleModel::setSeqLen(qint64 seqLen) {
  if (seqLen == m_seqLen) return;
  m_seqLen = seqLen;
  if (!m_layers.empty()) emit dataChanged(index(0, TokensColumn), index(rowCount() - 1, TokensColumn));
}

void ScheduleModel::setWorkload(bool decode, qint64 batch) {
  if (decode == m_decode && batch == m_batch) return;
  const bool header = decode != m_decode;
  m_decode = decode;
  m_batch = std::max<qint64>(1, batch);
  if (header) emit headerDataChanged(Qt::Horizontal, TokensColumn, TokensColumn);
  if (!m_layers.empty()) emit dataChanged(index(0, TokensColumn), index(rowCount() - 1, TokensColumn));
}

void ScheduleModel::setRoutedCapacity(double capacity) {
  if (!(capacity > 0 && capacity <= 1)) {
    emit editRejected(QStringLiteral("routing.capacity: must be in (0, 1], got %1").arg(capacity), false);
    return;
  }
  bool changed = false;
  for (auto& l : m_layers)
    if (l && *l != capacity) l = capacity, changed = true;
  m_lastCapacity = capacity;
  if (!changed || m_layers.empty()) return;
  emit dataChanged(index(0, RoutedColumn), index(rowCount() - 1, TokensColumn));
  emit scheduleEdited();
}

void ScheduleModel::applyPreset(const QString& preset, int n, double capacity) {
  if (!(capacity > 0 && capacity <= 1)) {
    emit editRejected(QStringLiteral("routing.capacity: must be in (0, 1], got %1").arg(capacity), false);
    return;
  }
  if (preset == QStringLiteral("every_nth") && (n < 1 || n > static_cast<int>(m_layers.size()))) {
    emit editRejected(QStringLiteral("routing.schedule: every_nth:%1 routes no layer of a %2-layer model")
                          .arg(n)
                          .arg(m_layers.size()),
                      false);
    return;
  }
  beginResetModel();
  for (std::size_t i = 0; i < m_layers.size(); ++i) {
    const int idx = static_cast<int>(i);
    bool routed = false;
    if (preset == QStringLiteral("all"))
      routed = true;
    else if (preset == QStringLiteral("every_other"))
      routed = idx % 2 == 1;
    else if (preset == QStringLiteral("every_nth"))
      routed = idx % n == n - 1;
    m_layers[i] = routed ? std::optional<double>(capacity) : std::nullopt;
  }
  m_lastCapacity = capacity;
  endResetModel();
  emit scheduleEdited();
}

}  // namespace modsim::gui
