#include "gui/core/main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPainter>
#include <QProgressBar>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "gui/core/explorer_session.hpp"
#include "gui/core/format.hpp"
#include "gui/core/model_panel.hpp"
#include "gui/core/pages.hpp"
#include "core/error.hpp"

#include "reports/report.hpp"

namespace modsim::gui {
namespace {
constexpr int kMaxRecent = 8;
const char* kRecentKey = "recentFiles";
const char* kHardwareKey = "extraHardwareFiles";
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), m_session(new ExplorerSession(this)) {
  setWindowTitle(QStringLiteral("modsim-gui"));

  // Left: the configuration.
  m_panel = new ModelPanel(m_session, this);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(m_panel);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setMinimumWidth(360);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);

  // Right: the error banner, the headline, the tabs.
  auto* right = new QWidget(this);
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(4, 4, 4, 0);
  m_banner = new QLabel(right);
  m_banner->setWordWrap(true);
  m_banner->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_banner->setStyleSheet(QStringLiteral(
      "QLabel { background: #fdecea; color: #8a1c1c; border: 1px solid #f5c2c0; border-radius: 4px; padding: 6px; }"));
  m_banner->setVisible(false);
  m_banner->setToolTip(tr("Click to dismiss"));
  m_banner->installEventFilter(this);
  m_headline = new QLabel(tr("Computing…"), right);
  m_headline->setWordWrap(true);
  m_headline->setTextFormat(Qt::RichText);
  m_headline->setStyleSheet(QStringLiteral("QLabel { font-size: 11pt; padding: 4px 2px; }"));
  m_tabs = new QTabWidget(right);
  m_tabs->setDocumentMode(true);
  m_designSpace = new DesignSpacePage(m_session->sweepModel(), m_tabs);
  m_layers = new LayersPage(m_session->layerTimesModel(), m_session->gapModel(), m_tabs);
  m_timeline = new TimelinePage(m_session->timelineModel(), m_tabs);
  m_serving = new ServingPage(m_session->servingModel(), m_session->samplingModel(), m_tabs);
  m_validation = new ValidationPage(m_session->validationModel(), m_tabs);
  m_tabs->addTab(m_designSpace, tr("Design space"));
  m_tabs->addTab(m_layers, tr("Layers"));
  m_tabs->addTab(m_timeline, tr("Timeline"));
  m_tabs->addTab(m_serving, tr("Serving / sampling"));
  m_tabs->addTab(m_validation, tr("Validation"));
  rl->addWidget(m_banner);
  rl->addWidget(m_headline);
  rl->addWidget(m_tabs, 1);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(scroll);
  split->addWidget(right);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({380, 1200});
  setCentralWidget(split);

  // Status bar: progress while computing, the last computation's figures otherwise.
  m_progress = new QProgressBar(this);
  m_progress->setRange(0, 100);
  m_progress->setMaximumWidth(180);
  m_progress->setTextVisible(false);
  m_progress->setVisible(false);
  m_status = new QLabel(this);
  statusBar()->addPermanentWidget(m_status);
  statusBar()->addPermanentWidget(m_progress);

  buildMenus();

  // Wiring: signals only.
  ComputeWorker* worker = m_session->worker();
  connect(worker, &ComputeWorker::busyChanged, this, [this](bool busy) {
    m_progress->setVisible(busy);
    if (busy) m_progress->setValue(0);
  });
  connect(worker, &ComputeWorker::progressChanged, m_progress, &QProgressBar::setValue);
  connect(m_session, &ExplorerSession::resultApplied, this, [this](const ComputeResultPtr& r) {
    m_headline->setText(m_session->summaryModel()->headline());
    m_status->setText(
        tr("computed in %1 ms · %2 design points").arg(r->computeMs, 0, 'f', 0).arg(r->sweep.points.size()));
  });
  connect(m_session, &ExplorerSession::configChanged, this, &MainWindow::updateTitle);
  connect(m_designSpace, &DesignSpacePage::adoptRequested, this, [this](int row) {
    m_session->adoptSweepPoint(row);
    statusBar()->showMessage(tr("Adopted the configuration of the design point"), 4000);
  });
  connect(m_validation, &ValidationPage::measurementsFileChosen, m_session, &ExplorerSession::setMeasurementsFile);
  connect(m_panel, &ModelPanel::hardwareChosen, this, [this](const QString& path) { openHardwareFile(path); });
  connect(m_panel, &ModelPanel::addHardwareRequested, this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Add hardware file"), configsDir() + QStringLiteral("/hardware"), tr("Hardware (*.json)"));
    if (path.isEmpty()) return;
    if (!openHardwareFile(path)) return;
    QSettings settings;
    QStringList extra = settings.value(QLatin1String(kHardwareKey)).toStringList();
    if (!extra.contains(path)) extra << path;
    settings.setValue(QLatin1String(kHardwareKey), extra);
    m_panel->setHardwareFiles(hardwareFiles(extra));
  });

  m_panel->setHardwareFiles(hardwareFiles(extraHardwareFiles()));
  updateTitle();
  m_session->recompute();
}

QStringList MainWindow::extraHardwareFiles() const {
  QStringList out;
  for (const QString& f : QSettings().value(QLatin1String(kHardwareKey)).toStringList())
    if (QFileInfo::exists(f)) out << f;
  return out;
}

QStringList MainWindow::tabNames() {
  return {QStringLiteral("design-space"), QStringLiteral("layers"), QStringLiteral("timeline"),
          QStringLiteral("serving"), QStringLiteral("validation")};
}

bool MainWindow::setCurrentTab(const QString& name) {
  const int i = int(tabNames().indexOf(name.toLower()));
  if (i < 0) return false;
  m_tabs->setCurrentIndex(i);
  return true;
}

QString MainWindow::errorText() const { return m_banner->isHidden() ? QString() : m_banner->text(); }

void MainWindow::showError(const QString& message) {
  m_banner->setText(message);
  m_banner->setVisible(true);
}

void MainWindow::clearError() {
  m_banner->clear();
  m_banner->setVisible(false);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_banner && event->type() == QEvent::MouseButtonRelease) {
    clearError();
    return true;
  }
  return QMainWindow::eventFilter(watched, event);
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open model…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open model"), configsDir() + QStringLiteral("/models"),
                                                      tr("Model files (*.json);;All files (*)"));
    if (!path.isEmpty()) openModelFile(path);
  });
  open->setShortcut(QKeySequence::Open);
  QAction* import = file->addAction(tr("&Import HuggingFace config.json…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Import HuggingFace config"), configsDir() + QStringLiteral("/hf"), tr("HuggingFace config (*.json)"));
    if (!path.isEmpty()) openModelFile(path);
  });
  import->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
  m_recentMenu = file->addMenu(tr("Open &recent"));
  updateRecentMenu();
  file->addSeparator();
  QAction* save = file->addAction(tr("&Save model"), this, [this] {
    const QString path = m_session->modelPath();
    if (path.isEmpty() || QFileInfo(path).fileName() == QStringLiteral("config.json") || path.startsWith(configsDir()))
      saveModelFileAs();
    else
      saveModelFile(path);
  });
  save->setShortcut(QKeySequence::Save);
  QAction* saveAs = file->addAction(tr("Save model &as…"), this, &MainWindow::saveModelFileAs);
  saveAs->setShortcut(QKeySequence::SaveAs);
  file->addSeparator();
  QAction* exportPng = file->addAction(tr("&Export view as PNG…"), this, [this] {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export view"), QStringLiteral("modsim-view.png"), tr("PNG (*.png)"));
    if (!path.isEmpty()) exportCurrentView(path);
  });
  exportPng->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  QAction* exportSvg = file->addAction(tr("Export view as S&VG…"), this, [this] {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export view"), QStringLiteral("modsim-view.svg"), tr("SVG (*.svg)"));
    if (!path.isEmpty()) exportCurrentView(path);
  });
  exportSvg->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
  m_reportAction = file->addAction(tr("Export &report…"), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Report folder"));
    if (!dir.isEmpty()) exportReport(dir);
  });
  m_reportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  const QStringList titles = {tr("Design space"), tr("Layers"), tr("Timeline"), tr("Serving / sampling"),
                              tr("Validation")};
  for (int i = 0; i < titles.size(); ++i) {
    QAction* a = view->addAction(titles[i], this, [this, i] { m_tabs->setCurrentIndex(i); });
    a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
  }
  view->addSeparator();
  QAction* recompute = view->addAction(tr("Recompute"), m_session, &ExplorerSession::recompute);
  recompute->setShortcut(QKeySequence::Refresh);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About modsim-gui"), this, [this] {
    QMessageBox::about(this, tr("About modsim-gui"),
                       tr("<b>modsim-gui</b> explores Mixture-of-Depths designs: what routing k of S tokens saves in "
                          "FLOPs and in predicted wall-clock on a given hardware, for training, prefill and serving."));
  });
}

void MainWindow::updateRecentMenu() {
  m_recentMenu->clear();
  const QStringList recent = QSettings().value(QLatin1String(kRecentKey)).toStringList();
  for (int i = 0; i < recent.size(); ++i) {
    const QString path = recent[i];
    QAction* a = m_recentMenu->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(path).fileName()), this,
                                         [this, path] { openModelFile(path); });
    a->setToolTip(path);
  }
  m_recentMenu->setEnabled(!recent.isEmpty());
}

void MainWindow::addRecentFile(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value(QLatin1String(kRecentKey)).toStringList();
  const QString abs = QFileInfo(path).absoluteFilePath();
  recent.removeAll(abs);
  recent.prepend(abs);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue(QLatin1String(kRecentKey), recent);
  updateRecentMenu();
}

void MainWindow::updateTitle() {
  const QString path = m_session->modelPath();
  setWindowTitle(
      QStringLiteral("%1%2 — modsim-gui")
          .arg(path.isEmpty() ? QString::fromStdString(m_session->config().model.name) : QFileInfo(path).fileName(),
               m_session->isModified() ? QStringLiteral(" *") : QString()));
}

bool MainWindow::openModelFile(const QString& path) {
  QString error;
  if (!m_session->loadModelFile(path, &error)) {
    showError(tr("Could not open the model; the previous configuration is kept.\n%1").arg(error));
    return false;
  }
  clearError();
  addRecentFile(path);
  updateTitle();
  return true;
}

bool MainWindow::openHardwareFile(const QString& path) {
  QString error;
  if (!m_session->loadHardwareFile(path, &error)) {
    showError(tr("Could not use the hardware file; the previous hardware is kept.\n%1").arg(error));
    m_panel->refresh();
    return false;
  }
  clearError();
  return true;
}

bool MainWindow::saveModelFile(const QString& path) {
  QString error;
  if (!m_session->saveModelFile(path, &error)) {
    showError(error);
    return false;
  }
  addRecentFile(path);
  updateTitle();
  statusBar()->showMessage(tr("Saved %1").arg(path), 4000);
  return true;
}

void MainWindow::saveModelFileAs() {
  const QString suggested = QString::fromStdString(m_session->config().model.name) + QStringLiteral(".json");
  const QString path = QFileDialog::getSaveFileName(this, tr("Save model"), suggested, tr("Model files (*.json)"));
  if (!path.isEmpty()) saveModelFile(path);
}

bool MainWindow::exportCurrentView(const QString& path) {
  QWidget* page = m_tabs->currentWidget();
  if (path.endsWith(QStringLiteral(".svg"), Qt::CaseInsensitive)) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(page->size());
    svg.setViewBox(QRect(QPoint(0, 0), page->size()));
    svg.setTitle(m_tabs->tabText(m_tabs->currentIndex()));
    svg.setDescription(QStringLiteral("modsim-gui"));
    QPainter painter;
    if (!painter.begin(&svg)) {
      showError(tr("%1: cannot write the SVG").arg(path));
      return false;
    }
    page->render(&painter);
    painter.end();
  } else if (!page->grab().save(path)) {
    showError(tr("%1: cannot write the image").arg(path));
    return false;
  }
  statusBar()->showMessage(tr("Exported %1").arg(path), 4000);
  return true;
}

bool MainWindow::exportReport(const QString& dir) {
  reports::report_input in;
  in.models = {m_session->config().model};
  in.hardware = m_session->config().hardware;
  in.load = m_session->config().load;
  // The report describes forward passes (serving covers decode): say so instead of
  // switching silently.
  const bool was_decode = in.load.mode == sim::run_mode::decode;
  if (was_decode) in.load.mode = sim::run_mode::forward;
  in.command_line = "modsim-gui (Export report)";
  // Computing the report takes seconds: off the GUI thread; the charts are drawn on it.
  m_reportAction->setEnabled(false);
  statusBar()->showMessage(was_decode ? tr("Writing the report to %1 (a forward pass of the same workload: the report "
                                           "describes forward passes, its serving section covers decode)…")
                                            .arg(dir)
                                      : tr("Writing the report to %1…").arg(dir));
  struct Built {
    std::shared_ptr<reports::report_data> data;
    QString error;
  };
  auto* watcher = new QFutureWatcher<Built>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, dir] {
    watcher->deleteLater();
    m_reportAction->setEnabled(true);
    const Built built = watcher->result();
    try {
      if (!built.data) throw modsim::runtime_error(built.error.toStdString());
      reports::write_report(reports::render_report(*built.data), dir.toStdString());
      statusBar()->showMessage(tr("Report written to %1").arg(dir), 6000);
      emit reportFinished(dir, {});
    } catch (const modsim::error& e) {
      const QString message = QString::fromUtf8(e.what());
      showError(tr("Could not write the report: %1").arg(message));
      emit reportFinished(dir, message);
    }
  });
  watcher->setFuture(QtConcurrent::run([in]() mutable -> Built {
    try {
      // The same validation as the Validation tab and `modsim report`: the measurements behind
      // the hardware's calibration.
      in.validation.from = analysis::validation_request::source::hardware;
      return {std::make_shared<reports::report_data>(reports::build_report(in)), {}};
    } catch (const modsim::error& e) {
      return {nullptr, QString::fromUtf8(e.what())};
    }
  }));
  return true;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  m_session->worker()->cancel();
  event->accept();
}

}  // namespace modsim::gui
