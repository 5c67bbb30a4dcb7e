#include "gui/core/compute_worker.hpp"

#include <QPromise>
#include <QtConcurrent/QtConcurrentRun>

namespace modsim::gui {

void registerMetaTypes() { qRegisterMetaType<ComputeResultPtr>("modsim::gui::ComputeResultPtr"); }

ComputeWorker::ComputeWorker(QObject* parent) : QObject(parent) {
  registerMetaTypes();
  m_debounce.setSingleShot(true);
  m_debounce.setInterval(150);
  connect(&m_debounce, &QTimer::timeout, this, &ComputeWorker::launch);
}

ComputeWorker::~ComputeWorker() {
  // Running tasks hold copies of their inputs only; tell them to stop and let the pool finish.
  m_latest->store(0);
}

void ComputeWorker::request(const ExplorerConfig& config) {
  const bool wasBusy = isBusy();
  m_pending = config;
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
  ExplorerConfig config = m_pending;

  auto* watcher = new QFutureWatcher<ComputeResult>(this);
  connect(watcher, &QFutureWatcherBase::progressValueChanged, this, [this, gen](int value) {
    if (gen == m_generation) emit progressChanged(value);
  });
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, gen] {
    const QFuture<ComputeResult> future = watcher->future();
    watcher->deleteLater();
    if (gen == m_generation && !future.isCanceled() && future.resultCount() > 0) {
      auto result = std::make_shared<ComputeResult>(future.result());
      if (result->error != "cancelled") {
        // Leave the busy state before the result so listeners see a settled worker.
        setRunning(-1);
        emit progressChanged(100);
        emit resultReady(std::move(result));
        return;
      }
    }
    setRunning(-1);
  });

  m_running += 1;  // busy already announced by request()/computeNow()
  emit started(gen);
  QFuture<ComputeResult> future =
      QtConcurrent::run([config = std::move(config), gen, latest](QPromise<ComputeResult>& promise) {
        promise.setProgressRange(0, 100);
        ComputeControl control;
        control.cancelled = [&] { return promise.isCanceled() || latest->load() != gen; };
        control.progress = [&](int pct) { promise.setProgressValue(pct); };
        ComputeResult r = computeAll(config, control);
        r.generation = gen;
        promise.addResult(std::move(r));
      });
  watcher->setFuture(future);
}

}  // namespace modsim::gui
