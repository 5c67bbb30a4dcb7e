#include "gui/core/main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDate>
#include <QDir>
#include <QImage>
#include <QtCharts/QChartView>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontMetrics>
#include <QFrame>
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
#include "gui/core/tabs/tabs.hpp"
#include "core/error.hpp"

#include "reports/report.hpp"

namespace modsim::gui {
namespace {
constexpr int kMaxRecent = 8;
const char* kRecentKey = "recentFiles";
const char* kHardwareKey = "extraHardwareFiles";
const char* kLastFolderKey = "lastFolder";
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
  // The error banner: the message and a close button; F5 (recompute) and a successful file
  // operation dismiss it too.
  m_bannerFrame = new QFrame(right);
  m_bannerFrame->setObjectName(QStringLiteral("errorBanner"));
  m_bannerFrame->setStyleSheet(
      QStringLiteral("QFrame#errorBanner { background: #fdecea; border: 1px solid #f5c2c0; border-radius: 4px; }"
                     "QFrame#errorBanner QLabel { color: #8a1c1c; padding: 4px; }"));
  auto* bannerLayout = new QHBoxLayout(m_bannerFrame);
  bannerLayout->setContentsMargins(4, 2, 2, 2);
  m_banner = new QLabel(m_bannerFrame);
  m_banner->setWordWrap(true);
  m_banner->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_bannerClose = new QToolButton(m_bannerFrame);
  m_bannerClose->setText(QStringLiteral("✕"));
  m_bannerClose->setAutoRaise(true);
  m_bannerClose->setToolTip(tr("Dismiss"));
  m_bannerClose->setAccessibleName(tr("Dismiss the error"));
  connect(m_bannerClose, &QToolButton::clicked, this, &MainWindow::clearError);
  bannerLayout->addWidget(m_banner, 1);
  bannerLayout->addWidget(m_bannerClose, 0, Qt::AlignTop);
  m_bannerFrame->setVisible(false);
  m_headline = new QLabel(tr("Computing…"), right);
  m_headline->setWordWrap(true);
  m_headline->setTextFormat(Qt::RichText);
  m_headline->setStyleSheet(QStringLiteral("QLabel { font-size: 11pt; padding: 4px 2px; }"));
  m_tabs = new QTabWidget(right);
  m_tabs->setDocumentMode(true);
  for (const TabSpec& tab : resultTabs()) {
    QWidget* page = tab.makePage(*m_session, m_tabs);
    page->setObjectName(tab.name);
    // A page scrolls when the window is smaller than its charts and tables need (a 1,024 × 700
    // screen): they keep their minimum sizes instead of being squeezed or cut.
    auto* pageScroll = new QScrollArea(m_tabs);
    pageScroll->setObjectName(tab.name);
    pageScroll->setWidget(page);
    pageScroll->setWidgetResizable(true);
    pageScroll->setFrameShape(QFrame::NoFrame);
    m_tabs->addTab(pageScroll, tab.title);
  }
  rl->addWidget(m_bannerFrame);
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
    if (r->updated & PredictionPart) updateHeadline();
    if (!r->error.empty())
      m_status->setText(tr("not computed: %1").arg(QString::fromStdString(r->error)));
    else if (r->complete())
      m_status->setText(
          tr("computed in %1 ms · %2 design points").arg(r->computeMs, 0, 'f', 0).arg(r->sweep.points.size()));
    else
      m_status->setText(tr("%1 ms so far · computing the other tabs…").arg(r->computeMs, 0, 'f', 0));
  });
  // The visible tab's parts come first (and a tab shown before its figures says so).
  connect(m_tabs, &QTabWidget::currentChanged, this, [this] { m_session->setVisibleParts(visibleParts()); });
  m_session->setVisibleParts(visibleParts());
  connect(m_session, &ExplorerSession::configChanged, this, &MainWindow::updateTitle);
  connect(m_session, &ExplorerSession::configChanged, this, [this] {
    if (!m_session->dtypeNotice().isEmpty()) statusBar()->showMessage(m_session->dtypeNotice(), 8000);
  });
  // While an edit is refused the results shown are those of the last valid configuration:
  // the headline says so until the error is fixed.
  connect(m_session, &ExplorerSession::validationChanged, this, [this](const QString& key, const QString& message) {
    m_staleReason = message.isEmpty() ? QString() : (key.isEmpty() ? message : key + QStringLiteral(": ") + message);
    updateHeadline();
  });
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

QStringList MainWindow::tabNames() { return resultTabNames(); }

bool MainWindow::setCurrentTab(const QString& name) {
  const int i = int(tabNames().indexOf(name.toLower()));
  if (i < 0) return false;
  m_tabs->setCurrentIndex(i);
  return true;
}

QString MainWindow::errorText() const { return m_bannerFrame->isHidden() ? QString() : m_banner->text(); }

void MainWindow::showError(const QString& message) {
  m_banner->setText(message);
  m_bannerFrame->setVisible(true);
}

void MainWindow::clearError() {
  m_banner->clear();
  m_bannerFrame->setVisible(false);
}

void MainWindow::updateHeadline() {
  const QString headline = m_session->summaryModel()->headline();
  if (m_staleReason.isEmpty() || !m_session->lastResult()) {
    m_headline->setText(headline);
    return;
  }
  m_headline->setText(tr("<span style='color:#b00020'><b>Stale</b>: the edit was refused (%1); the figures below "
                         "are those of the last valid configuration.</span><br>%2")
                          .arg(m_staleReason.toHtmlEscaped(), headline));
}

bool MainWindow::isStale() const { return !m_staleReason.isEmpty(); }

ResultParts MainWindow::visibleParts() const {
  ResultParts parts = 0;
  if (QWidget* page = currentPage())
    for (const ResultModel* m : page->findChildren<ResultModel*>()) parts |= m->parts();
  return parts;
}

bool MainWindow::visibleTabIsCurrent() const {
  const ResultParts needed = visibleParts() | PredictionPart;
  return m_session->lastResult() != nullptr && (m_session->currentParts() & needed) == needed;
}

QString MainWindow::lastFolder(const QString& fallback) const {
  const QString dir = QSettings().value(QLatin1String(kLastFolderKey)).toString();
  return !dir.isEmpty() && QFileInfo(dir).isDir() ? dir : fallback;
}

void MainWindow::rememberFolder(const QString& path) {
  const QFileInfo info(path);
  QSettings().setValue(QLatin1String(kLastFolderKey), info.isDir() ? info.absoluteFilePath() : info.absolutePath());
}

bool MainWindow::confirmDiscard(const QString& action) {
  if (!m_session->isModified()) return true;
  QMessageBox box(QMessageBox::Warning, tr("Unsaved changes"),
                  tr("The model %1 has unsaved changes.").arg(QString::fromStdString(m_session->config().model.name)),
                  QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, this);
  box.setInformativeText(tr("Save them before you %1?").arg(action));
  box.setDefaultButton(QMessageBox::Save);
  box.setObjectName(QStringLiteral("unsavedChangesPrompt"));
  switch (box.exec()) {
    case QMessageBox::Save:
      return saveModel();
    case QMessageBox::Discard:
      return true;
    default:
      return false;
  }
}

bool MainWindow::saveModel() {
  const QString path = m_session->modelPath();
  // Shipped files and imported HF configs are not overwritten: those go through Save as.
  if (path.isEmpty() || QFileInfo(path).fileName() == QStringLiteral("config.json") || path.startsWith(configsDir()))
    return saveModelFileAs();
  return saveModelFile(path);
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open model…"), this, [this] {
    if (!confirmDiscard(tr("open another model"))) return;
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open model"), lastFolder(configsDir() + QStringLiteral("/models")),
                                     tr("Model files (*.json);;All files (*)"));
    if (!path.isEmpty()) openModelFile(path);
  });
  open->setShortcut(QKeySequence::Open);
  QAction* import = file->addAction(tr("&Import HuggingFace config.json…"), this, [this] {
    if (!confirmDiscard(tr("import another model"))) return;
    const QString path = QFileDialog::getOpenFileName(this, tr("Import HuggingFace config"),
                                                      lastFolder(configsDir() + QStringLiteral("/hf")),
                                                      tr("HuggingFace config (*.json)"));
    if (!path.isEmpty()) openModelFile(path);
  });
  import->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
  m_recentMenu = file->addMenu(tr("Open &recent"));
  updateRecentMenu();
  file->addSeparator();
  QAction* save = file->addAction(tr("&Save model"), this, [this] { saveModel(); });
  save->setShortcut(QKeySequence::Save);
  m_saveAsAction = file->addAction(tr("Save model &as…"), this, [this] { saveModelFileAs(); });
  // The platform's Save As key where it has one (GNOME, KDE), and Ctrl+Shift+S everywhere.
  QList<QKeySequence> saveAsKeys = QKeySequence::keyBindings(QKeySequence::SaveAs);
  const QKeySequence ctrlShiftS(Qt::CTRL | Qt::SHIFT | Qt::Key_S);
  if (!saveAsKeys.contains(ctrlShiftS)) saveAsKeys.append(ctrlShiftS);
  m_saveAsAction->setShortcuts(saveAsKeys);
  file->addSeparator();
  QAction* exportPng = file->addAction(tr("&Export view as PNG…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export view"), lastFolder(QDir::homePath()) + QStringLiteral("/modsim-view.png"), tr("PNG (*.png)"));
    if (!path.isEmpty()) exportCurrentView(path);
  });
  exportPng->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  QAction* exportSvg = file->addAction(tr("Export view as S&VG…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export view"), lastFolder(QDir::homePath()) + QStringLiteral("/modsim-view.svg"), tr("SVG (*.svg)"));
    if (!path.isEmpty()) exportCurrentView(path);
  });
  exportSvg->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
  m_reportAction = file->addAction(tr("Export &report…"), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Report folder"), lastFolder(QDir::homePath()));
    if (!dir.isEmpty()) exportReport(dir);
  });
  m_reportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* view = menuBar()->addMenu(tr("&View"));
  const std::vector<TabSpec> tabs = resultTabs();
  for (std::size_t i = 0; i < tabs.size(); ++i) {
    const int index = static_cast<int>(i);
    QAction* a = view->addAction(tabs[i].title, this, [this, index] { m_tabs->setCurrentIndex(index); });
    a->setShortcut(tabShortcut(i));
  }
  view->addSeparator();
  QAction* recompute = view->addAction(tr("Recompute"), this, [this] {
    clearError();
    m_session->recompute();
  });
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
    // The name, then the folder it is in (two files of one name stay apart).
    const QFileInfo info(path);
    const QString folder = QFontMetrics(m_recentMenu->font())
                               .elidedText(QDir::toNativeSeparators(info.absolutePath()), Qt::ElideMiddle, 420);
    QAction* a = m_recentMenu->addAction(QStringLiteral("&%1 %2 — %3").arg(i + 1).arg(info.fileName(), folder), this,
                                         [this, path] {
                                           if (confirmDiscard(tr("open another model"))) openModelFile(path);
                                         });
    a->setToolTip(path);
  }
  m_recentMenu->setEnabled(!recent.isEmpty());
}

void MainWindow::addRecentFile(const QString& path) {
  if (!m_rememberFiles) return;
  rememberFolder(path);
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
  if (!m_session->baselineNotice().isEmpty()) statusBar()->showMessage(m_session->baselineNotice(), 8000);
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

bool MainWindow::saveModelFileAs() {
  const QString suggested = lastFolder(QDir::homePath()) + QLatin1Char('/') +
                            QString::fromStdString(m_session->config().model.name) + QStringLiteral(".json");
  const QString path = QFileDialog::getSaveFileName(this, tr("Save model"), suggested, tr("Model files (*.json)"));
  return !path.isEmpty() && saveModelFile(path);
}

QString MainWindow::exportCaption() const {
  const ExplorerConfig& c = m_session->config();
  return tr("%1 (%9) · %2 · %3, batch %4, sequence %5, %6 · %7 · modsim-gui %8")
      .arg(QString::fromStdString(c.model.name), QString::fromStdString(c.hardware.name), displayName(c.load.run))
      .arg(c.load.batch)
      .arg(c.load.seq_len)
      .arg(QString::fromLatin1(sim::to_string(c.load.type)), m_tabs->tabText(m_tabs->currentIndex()),
           QDate::currentDate().toString(Qt::ISODate), routingText(c.model));
}

void MainWindow::paintExport(QPainter& painter, QWidget* page, const QSize& size) const {
  // The charts of the page (without the tables and controls beside them), stacked, under a
  // caption naming the model, hardware and workload; a page without charts as it is.
  QList<QWidget*> parts;
  for (QChartView* v : page->findChildren<QChartView*>())
    if (v->isVisible() && v->chart()) parts << v;
  if (parts.isEmpty()) parts << page;
  const int caption = exportCaptionHeight();
  painter.fillRect(QRect(QPoint(0, 0), size), Qt::white);
  QFont f = painter.font();
  f.setPointSizeF(9.5);
  painter.setFont(f);
  painter.setPen(QColor(0x33, 0x33, 0x33));
  painter.drawText(QRect(8, 0, size.width() - 16, caption), Qt::AlignVCenter | Qt::AlignLeft | Qt::TextWordWrap,
                   exportCaption());
  int y = caption;
  for (QWidget* w : parts) {
    w->render(&painter, QPoint(0, y), QRegion(), QWidget::DrawChildren);
    y += w->height();
  }
}

int MainWindow::exportCaptionHeight() { return 28; }

QSize MainWindow::exportSize(QWidget* page) const {
  int width = 0, height = exportCaptionHeight();
  bool any = false;
  for (QChartView* v : page->findChildren<QChartView*>())
    if (v->isVisible() && v->chart()) width = std::max(width, v->width()), height += v->height(), any = true;
  if (!any) width = page->width(), height += page->height();
  return {std::max(width, 200), height};
}

QWidget* MainWindow::pageAt(int index) const {
  auto* scroll = qobject_cast<QScrollArea*>(m_tabs->widget(index));
  return scroll ? scroll->widget() : m_tabs->widget(index);
}

bool MainWindow::exportCurrentView(const QString& path) {
  QWidget* page = currentPage();
  const QSize size = exportSize(page);
  if (path.endsWith(QStringLiteral(".svg"), Qt::CaseInsensitive)) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(size);
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setTitle(m_tabs->tabText(m_tabs->currentIndex()));
    svg.setDescription(exportCaption());
    QPainter painter;
    if (!painter.begin(&svg)) {
      showError(tr("%1: cannot write the SVG").arg(path));
      return false;
    }
    paintExport(painter, page, size);
    painter.end();
  } else {
    const qreal dpr = devicePixelRatioF();
    QImage image(size * dpr, QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(dpr);
    QPainter painter(&image);
    paintExport(painter, page, size);
    painter.end();
    if (!image.save(path)) {
      showError(tr("%1: cannot write the image").arg(path));
      return false;
    }
  }
  rememberFolder(path);
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
  const bool was_decode = in.load.run == sim::run_mode::decode;
  if (was_decode) in.load.run = sim::run_mode::forward;
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
  if (!confirmDiscard(tr("quit"))) {
    event->ignore();
    return;
  }
  m_session->worker()->cancel();
  event->accept();
}

}  // namespace modsim::gui
