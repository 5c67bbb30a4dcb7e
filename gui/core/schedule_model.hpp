#pragma once
// The schedule editor's model: one row per layer — routed or not, and its capacity. It is
// the editable part of the configuration (the session turns it into routing_spec); edits
// and presets emit scheduleEdited(), setLayers() (a loaded or adopted model) does not.
#include <QAbstractTableModel>
#include <optional>
#include <vector>

namespace modsim::gui {

class ScheduleModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { LayerColumn, RoutedColumn, CapacityColumn, TokensColumn, ColumnCount };

  explicit ScheduleModel(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

  // One entry per layer: nullopt = not routed, a value = routed at that capacity in (0, 1].
  const std::vector<std::optional<double>>& layers() const { return m_layers; }
  void setLayers(std::vector<std::optional<double>> layers);
  // Sequence length, for the "k of S" column only.
  void setSeqLen(qint64 seqLen);
  // The workload the Tokens column describes: prefill/training (k of S tokens per sequence) or,
  // when `decode`, one decode step of `batch` sequences over a cached context of seqLen: the
  // expected routed tokens per step (capacity · B) and the KV entries each routed token reads
  // (routed_tokens(capacity, S) + 1; S + 1 at a dense layer).
  void setWorkload(bool decode, qint64 batch);

  // Presets: "none", "all", "every_other", "every_nth" (with n), all at `capacity`.
  void applyPreset(const QString& preset, int n, double capacity);
  // Every routed layer at `capacity`, the routed set kept: one scheduleEdited() (a refusal as
  // applyPreset's).
  void setRoutedCapacity(double capacity);

 signals:
  void scheduleEdited();
  // An edit was refused; `message` is "KEY: reason" in modsim's error form. `reverted`: the
  // model still holds (and shows) the last valid value, e.g. a capacity cell typed out of range;
  // false when the refused value stays in its editor (a preset's capacity box).
  void editRejected(const QString& message, bool reverted);

 private:
  std::vector<std::optional<double>> m_layers;
  qint64 m_seqLen = 2048;
  bool m_decode = false;
  qint64 m_batch = 1;
  double m_lastCapacity = 0.125;  // given to a layer switched to routed
};

}  // namespace modsim::gui
