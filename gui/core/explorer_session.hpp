#pragma once
// The explorer's state and its one-way data flow:
//   editors ──set…()──► draft configuration ──validated──► current configuration
//          ──ComputeWorker (thread pool, debounced, cancellable)──► ComputeResult
//          ──setResult()──► item models (the summary and each tab's) ──► views and charts
// An edit that does not validate leaves the current configuration (and every result) as it
// was and is reported with validationChanged(key, message) for the editor to show next to
// the field. Loading a file that does not parse does the same and returns its error.
#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>
#include <memory>

#include "gui/core/compute_worker.hpp"
#include "gui/core/explorer_config.hpp"
#include "gui/core/result_models.hpp"
#include "gui/core/schedule_model.hpp"

namespace modsim::gui {

class ExplorerSession : public QObject {
  Q_OBJECT
 public:
  explicit ExplorerSession(QObject* parent = nullptr);

  // The current (validated) configuration and the draft the editors show.
  const ExplorerConfig& config() const { return m_config; }
  const sim::model_spec& draftModel() const { return m_draft.model; }
  const sim::workload& draftWorkload() const { return m_draft.load; }
  // The file the model came from (empty for an edited or built-in one) and whether it was
  // edited since it was loaded or saved.
  QString modelPath() const { return m_modelPath; }
  // Modified: the model differs from the one last loaded or saved (the workload and the
  // hardware are not part of a model file).
  bool isModified() const { return m_modified; }
  // A setting the session changed on its own with the last edit, for people (e.g. the dtype
  // following a hardware of another kind); empty when none.
  QString dtypeNotice() const { return m_dtypeNotice; }
  // What became of the baseline when the last model was opened (one chosen for the previous
  // model is dropped); empty when nothing changed.
  QString baselineNotice() const { return m_baselineNotice; }
  ComputeResultPtr lastResult() const { return m_lastResult; }
  // When the routing was edited away from the one the model's notes describe: says so (the
  // saved file's notes end in a mark naming both); empty otherwise.
  QString notesStatus() const;

  ScheduleModel* scheduleModel() const { return m_schedule; }
  SummaryModel* summaryModel() const { return m_summary; }
  ComputeWorker* worker() const { return m_worker; }

  // The tabs' item models (gui/core/tabs/): each result is set, before resultApplied, on every
  // model added here one of whose parts it updated. The session does not own them (a model may
  // go with its page).
  void addResultModel(ResultModel* model);
  // The parts the visible tab shows: the worker computes them right after the headline, and
  // those not computed for the current configuration yet say so (ResultModel::setPending).
  void setVisibleParts(ResultParts parts);
  ResultParts visibleParts() const { return m_visible; }
  // The parts whose models hold the current configuration's figures. An edit empties it; the
  // models of the other parts say they are computing (at once when hidden, after 250 ms when
  // shown), so a tab never shows an earlier configuration's figures unmarked.
  ResultParts currentParts() const { return m_currentParts; }
  // The first added model of type Model (e.g. session->resultModel<SweepModel>()); null if none.
  template <class Model>
  Model* resultModel() const {
    for (const QPointer<ResultModel>& m : m_results)
      if (auto* found = qobject_cast<Model*>(m.data())) return found;
    return nullptr;
  }

  // Files. On failure they return false with the modsim::error message in *error and change
  // nothing.
  bool loadModelFile(const QString& path, QString* error);
  bool saveModelFile(const QString& path, QString* error);
  bool loadHardwareFile(const QString& path, QString* error);
  void setMeasurementsFile(const QString& path);

  // Edits of the draft; each recomputes when the draft validates.
  void setModel(const sim::model_spec& model);  // a whole configuration (built-in)
  // A design point's configuration (Design space tab), under the current model's name and notes;
  // the design space's baseline is kept when the point's own would be another (see
  // ExplorerConfig::BaselineOrigin::DesignSpace).
  void adoptDesignPoint(const sim::model_spec& point);
  void setDimension(const QString& key, int value);  // d_model n_layers n_heads n_kv_heads d_ff vocab_size
  void setMlp(sim::mlp_kind mlp);
  void setSeqLen(qint64 seqLen);
  void setBatch(qint64 batch);
  void setDtype(sim::dtype type);
  void setMode(sim::run_mode mode);
  // The baseline every ratio compares with: a model file (the user's choice: it stays until
  // another model is opened), or empty for the model without routing. A file that does not
  // load is refused (validationChanged "baseline").
  void setBaseline(const QString& path);
  void setAttention(std::optional<attention_impl> attention);  // empty: the hardware's default
  // The decode strategy of every decode figure (ExplorerConfig::decodeStrategy); empty: the fastest.
  void setDecodeStrategy(const std::string& name);
  // variant: "none", "moe", "staged", "integrated".
  void setVariant(const QString& variant, int experts, int topK, int noopExperts, double capacityFactor);
  void setSweepEnabled(bool enabled);
  void setServingEnabled(bool enabled);
  // The GPU count the Parallelism tab splits the step over (every tp × pp × dp of it).
  void setGpus(int gpus);
  // The Training tab's FLOP budget: a number > 0, or empty for none; anything else is refused
  // (validationChanged("flop_budget", why)) and the last valid budget stays.
  void setFlopBudget(std::optional<double> flops);

 public slots:
  // Computes the current configuration now (no debounce).
  void recompute();

 signals:
  // The current configuration changed: editors refresh from draftModel()/draftWorkload().
  void configChanged();
  // The draft's validity: `key` names the field ("routing.capacity", "n_heads", ...) and
  // `message` the reason; both empty when the draft is valid.
  void validationChanged(const QString& key, const QString& message);
  // An edit was refused and its editor shows the last valid value again (a schedule cell typed
  // out of range): `message` says why; the configuration and the figures are still current.
  void editRefused(const QString& key, const QString& message);
  // Every model holds `result` now.
  void resultApplied(modsim::gui::ComputeResultPtr result);

 private:
  void applyScheduleToDraft();
  void scheduleFromModel(const sim::model_spec& model);
  // Validates the draft; when valid it becomes the configuration and is computed.
  bool commitDraft();
  static void checkCounts(const ExplorerConfig& config, const QString& lastWorkloadKey);
  void markSaved();
  void onResult(const ComputeResultPtr& result);
  // Marks the models of parts outside `except` that are not current as pending.
  void markPending(ResultParts except);

  ExplorerConfig m_config;
  ExplorerConfig m_draft;
  QString m_modelPath;
  bool m_modified = false;
  std::string m_savedJson;  // sim::model_to_json of the model last loaded or saved
  QString m_dtypeNotice;
  QString m_baselineNotice;
  std::string m_notesRouting;  // the routing the model's notes describe (routingText), as loaded
  QString m_lastWorkloadKey;   // batch or seq_len, whichever was edited last
  bool m_headDerived = true;
  ComputeResultPtr m_lastResult;
  ResultParts m_visible = 0;
  ResultParts m_currentParts = 0;
  QTimer* m_pendingTimer;  // marks the visible tab's parts pending when they are slow to come

  ScheduleModel* m_schedule;
  SummaryModel* m_summary;
  QList<QPointer<ResultModel>> m_results;
  ComputeWorker* m_worker;
};

}  // namespace modsim::gui
