#include "gui/core/compute_worker.hpp"

#include <QPromise>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <bit>

namespace modsim::gui {

void registerMetaTypes() { qRegisterMetaType<ComputeResultPtr>("modsim::gui::ComputeResultPtr"); }

ComputeWorker::ComputeWorker(QObject* parent) : QObject(parent) {
  registerMetaTypes();
  m_debounce.setSingleShot(true);
  m_debounce.setInterval(50);  // a burst of keystrokes in a field computes once
  connect(&m_debounce, &QTimer::timeout, this, &ComputeWorker::launch);
}

ComputeWorker::~ComputeWorker() {
  // Running tasks hold copies of their inputs only; tell them to stop and let the pool finish.
  m_latest->store(0);
}

void ComputeWorker::request(const ExplorerConfig& config) {
  const bool wasBusy = isBusy();
  m_pending = config;
  // What runs computes an earlier configuration: it stops, and its results are dropped.
  m_latest->store(++m_generation);
  m_debounce.start();
  if (!wasBusy) emit busyChanged(true);
}

void ComputeWorker::computeNow(const ExplorerConfig& config) {
  const bool wasBusy = isBusy();
  m_pending = config;
  m_debounce.stop();
  if (!wasBusy) emit busyChanged(true);
  launch();
}

void ComputeWorker::cancel() {
  const bool wasBusy = isBusy();
  m_debounce.stop();
  ++m_generation;
  m_latest->store(m_generation);
  if (wasBusy && !isBusy()) emit busyChanged(false);
}

void ComputeWorker::setRunning(int delta) {
  const bool wasBusy = isBusy();
  m_running += delta;
  if (wasBusy != isBusy()) emit busyChanged(isBusy());
}

void ComputeWorker::launch() {
  const quint64 gen = ++m_generation;
  m_latest->store(gen);
  auto latest = m_latest;
  auto visible = m_visible;
  ExplorerConfig config = m_pending;

  // Leaves the busy state once per launch: before the complete result (so that listeners see a
  // settled worker), else when the task ends.
  auto settled = std::make_shared<bool>(false);
  auto settle = [this, settled] {
    if (*settled) return;
    *settled = true;
    setRunning(-1);
  };
  auto* watcher = new QFutureWatcher<ComputeResultPtr>(this);
  connect(watcher, &QFutureWatcherBase::progressValueChanged, this, [this, gen](int value) {
    if (gen == m_generation) emit progressChanged(value);
  });
  connect(watcher, &QFutureWatcherBase::resultReadyAt, this, [this, watcher, gen, settle](int index) {
    ComputeResultPtr result = watcher->future().resultAt(index);
    if (gen != m_generation || !result || result->error == "cancelled") return;
    if (result->complete()) {
      settle();
      emit progressChanged(100);
    }
    emit resultReady(std::move(result));
  });
  connect(watcher, &QFutureWatcherBase::finished, this, [watcher, settle] {
    watcher->deleteLater();
    settle();
  });

  m_running += 1;  // busy already announced by request()/computeNow()
  emit started(gen);
  QFuture<ComputeResultPtr> future =
      QtConcurrent::run([config = std::move(config), gen, latest, visible](QPromise<ComputeResultPtr>& promise) {
        promise.setProgressRange(0, 100);
        ComputeResult r;
        r.generation = gen;
        int done = 0;  // parts computed
        ComputeControl control;
        control.cancelled = [&] { return promise.isCanceled() || latest->load() != gen; };
        control.progress = [&](int pct) {
          promise.setProgressValue(std::min(99, (100 * done + pct) / std::popcount(kAllParts)));
        };
        for (ResultParts next = nextParts(kAllParts, visible->load()); next != 0;
             next = nextParts(kAllParts & ~r.computed, visible->load())) {
          if (control.cancelled()) return;
          computeParts(config, next, r, control);
          if (r.error == "cancelled") return;
          done = std::popcount(r.computed);
          promise.addResult(std::make_shared<const ComputeResult>(r));
        }
      });
  watcher->setFuture(future);
}

}  // namespace modsim::gui
