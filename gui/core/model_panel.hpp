#pragma once
// The left panel: editors of the configuration (model dimensions, workload, schedule, MoDE
// variant, hardware, mode). Edits go to the session's setters; the panel refreshes from the
// session's draft when the configuration changes, and shows each validation error under the
// field it names.
#include <QHash>
#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QSpinBox;
class QTableView;
class QPushButton;

namespace modsim::sim {
struct model_spec;
}

namespace modsim::gui {

class ExplorerSession;

class ModelPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ModelPanel(ExplorerSession* session, QWidget* parent = nullptr);

  QTableView* scheduleView() const { return m_scheduleView; }
  // The error shown for `key` ("routing.capacity", "n_heads", ...); empty when none.
  QString errorFor(const QString& key) const;
  // Hardware files offered (absolute paths); `extra` are added by the user (QSettings).
  void setHardwareFiles(const QStringList& files);
  QSpinBox* dimensionEditor(const QString& key) const { return m_dims.value(key); }
  // The read-only attention window of the model (HF sliding_window): "full" or "sliding, W
  // positions", with a tooltip saying what it prices.
  QLabel* windowLabel() const { return m_window; }
  QComboBox* presetEditor() const { return m_preset; }
  QSpinBox* nthEditor() const { return m_nth; }
  QDoubleSpinBox* capacityEditor() const { return m_capacity; }
  QComboBox* variantEditor() const { return m_variant; }
  QSpinBox* noopEditor() const { return m_noop; }
  // A note the panel shows for people: "schedule" (mixed capacities), "variant" (what the
  // MoDE variant does with the capacity), "dtype" (changed with the hardware), "baseline" (a
  // chosen baseline dropped when another model was opened), "notes" (the model's notes describe
  // another routing); empty when none.
  QString noteText(const QString& which) const;

 signals:
  void addHardwareRequested();
  void hardwareChosen(const QString& path);

 public slots:
  void refresh();
  void showValidation(const QString& key, const QString& message);

 private:
  // The panel's boxes, built once by the constructor.
  QGroupBox* buildModelBox();
  QGroupBox* buildWorkloadBox();
  QGroupBox* buildScheduleBox();
  QGroupBox* buildVariantBox();
  QGroupBox* buildHardwareBox();
  // Parts of refresh().
  void refreshSchedule(const sim::model_spec& m);
  void refreshVariant(const sim::model_spec& m);
  QLabel* makeErrorLabel(const QString& key);
  QLabel* addErrorRow(QFormLayout* form, const QString& key);
  QLabel* makeNoteLabel(QWidget* parent);
  static void setNote(QLabel* label, const QString& text);
  void applyVariant();
  void applyPreset();

  ExplorerSession* m_session;
  QLabel* m_name;
  QHash<QString, QSpinBox*> m_dims;
  QComboBox* m_mlp;
  QLabel* m_window;
  QSpinBox* m_seq;
  QSpinBox* m_batch;
  QComboBox* m_dtype;
  QComboBox* m_mode;
  QComboBox* m_preset;
  QSpinBox* m_nth;
  QDoubleSpinBox* m_capacity;
  QTableView* m_scheduleView;
  QComboBox* m_variant;
  QSpinBox* m_experts;
  QSpinBox* m_topK;
  QSpinBox* m_noop;
  QDoubleSpinBox* m_capacityFactor;
  QComboBox* m_hardware;
  QComboBox* m_baseline;   // "routing removed", then the shipped dense models
  QComboBox* m_attention;  // the hardware's default, fused, unfused
  QPushButton* m_addHardware;
  QLabel* m_hardwareInfo;
  QLabel* m_scheduleNote;
  QLabel* m_variantNote;
  QLabel* m_dtypeNote;
  QLabel* m_baselineNote;            // what became of a chosen baseline when another model was opened
  QLabel* m_notesNote;               // the model's notes describe another routing than the one edited
  QString m_presetChoice;            // the preset last picked by the user
  QHash<QString, QLabel*> m_errors;  // by key (or group: "routing", "mode", "hardware", "model")
};

}  // namespace modsim::gui
