#pragma once
// Runs the explorer's computation off the GUI thread, part by part (compute.hpp, computeParts):
// the headline's part first, then the visible tab's, then the others, each result carrying the
// parts computed so far, so the headline and the tab in view come first. Requests are debounced
// (a burst of edits computes once), every launch gets a new generation number, a newer request
// cancels the running one, and a result whose generation is not the latest is dropped, so the
// models only ever see the newest configuration's figures. Progress arrives as 0..100 on the GUI
// thread.
#include <QFutureWatcher>
#include <QObject>
#include <QTimer>
#include <atomic>
#include <memory>

#include "gui/core/compute.hpp"
#include "gui/core/explorer_config.hpp"
#include "gui/core/results.hpp"

namespace modsim::gui {

class ComputeWorker : public QObject {
  Q_OBJECT
 public:
  explicit ComputeWorker(QObject* parent = nullptr);
  ~ComputeWorker() override;

  void setDebounceMs(int ms) { m_debounce.setInterval(ms); }
  int debounceMs() const { return m_debounce.interval(); }
  quint64 generation() const { return m_generation; }
  // Busy until every part of the newest configuration is computed.
  bool isBusy() const { return m_running > 0 || m_debounce.isActive(); }
  // The parts the visible tab shows: computed right after the headline's, also by a computation
  // already running when they are not computed yet.
  void setVisibleParts(ResultParts parts) { m_visible->store(parts); }
  ResultParts visibleParts() const { return m_visible->load(); }

 public slots:
  // Computes `config` after the debounce interval; a later request replaces it. What runs
  // stops at once: its configuration is not the newest any more.
  void request(const modsim::gui::ExplorerConfig& config);
  // Computes `config` now (cancels what runs).
  void computeNow(const modsim::gui::ExplorerConfig& config);
  // Cancels the pending and the running computation; no result follows.
  void cancel();

 signals:
  void started(quint64 generation);
  void progressChanged(int percent);
  void busyChanged(bool busy);
  // The newest configuration's result so far (never a stale or cancelled one): once per part
  // computed, result->updated naming the new parts, the last with result->complete(). Emitted
  // on the thread the worker lives in. result->error is non-empty when the computation failed
  // (that result is complete).
  void resultReady(modsim::gui::ComputeResultPtr result);

 private:
  void launch();
  void setRunning(int delta);

  QTimer m_debounce;
  ExplorerConfig m_pending;
  quint64 m_generation = 0;
  // The latest generation, read by running tasks to notice they are stale.
  std::shared_ptr<std::atomic<quint64>> m_latest = std::make_shared<std::atomic<quint64>>(0);
  // The visible tab's parts, read by running tasks between parts.
  std::shared_ptr<std::atomic<ResultParts>> m_visible = std::make_shared<std::atomic<ResultParts>>(0);
  int m_running = 0;
};

// Registers the result types with Qt's meta-type system (queued connections, QSignalSpy).
void registerMetaTypes();

}  // namespace modsim::gui

Q_DECLARE_METATYPE(modsim::gui::ComputeResultPtr)
