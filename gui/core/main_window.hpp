#pragma once
// The explorer's main window: the configuration panel on the left, the headline and the
// result tabs on the right, files and exports in the menus. It wires the session, the panel
// and the pages together and owns no data.
#include <QMainWindow>
#include <QSize>
#include <QStringList>
#include <QTabWidget>

#include "gui/core/results.hpp"

class QLabel;
class QProgressBar;
class QMenu;
class QAction;
class QFrame;
class QPainter;
class QToolButton;

namespace modsim::gui {

class ExplorerSession;
class ModelPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  ExplorerSession* session() const { return m_session; }
  ModelPanel* panel() const { return m_panel; }
  QLabel* headlineLabel() const { return m_headline; }
  QTabWidget* tabs() const { return m_tabs; }
  // The page of the tab at `index` (each tab is a scroll area around its page), and the
  // visible tab's.
  QWidget* pageAt(int index) const;
  QWidget* currentPage() const { return pageAt(m_tabs->currentIndex()); }
  // The page of type Page among the tabs (e.g. page<DesignSpacePage>()); null if none.
  template <class Page>
  Page* page() const {
    for (int i = 0; i < m_tabs->count(); ++i)
      if (auto* p = qobject_cast<Page*>(pageAt(i))) return p;
    return nullptr;
  }
  // The error banner's text; empty when it is hidden.
  QString errorText() const;

  // Tab names for --tab, in the tabs' order (the registry's, gui/core/tabs/tabs.hpp).
  static QStringList tabNames();
  bool setCurrentTab(const QString& name);

  // Non-interactive file operations (the dialogs call these). On failure they show the
  // error in the banner, keep the previous state and return false.
  bool openModelFile(const QString& path);
  bool openHardwareFile(const QString& path);
  bool saveModelFile(const QString& path);
  // Asks Save / Discard / Cancel when the model has unsaved changes (`action`: "quit", ...);
  // true when the caller may go on (saved, discarded, or nothing to save).
  bool confirmDiscard(const QString& action);
  // Whether the figures shown belong to an earlier configuration (an edit was refused).
  bool isStale() const;
  // Whether the headline and the visible tab show the current configuration's figures.
  bool visibleTabIsCurrent() const;
  // The parts of a result the visible tab shows (those of its pages' item models).
  ResultParts visibleParts() const;
  // Files opened or saved join the recent list (off for --screenshot runs).
  void setRememberFiles(bool on) { m_rememberFiles = on; }
  QAction* saveAsAction() const { return m_saveAsAction; }
  // Exports the current tab as PNG or SVG (by the file's extension).
  bool exportCurrentView(const QString& path);
  // The line an exported image carries: model, hardware, workload, tab, date.
  QString exportCaption() const;
  // Writes the whole state as a report into `dir` (reports/report.hpp).
  bool exportReport(const QString& dir);

 signals:
  // exportReport() finished: `error` is empty on success.
  void reportFinished(const QString& dir, const QString& error);

 public slots:
  void showError(const QString& message);
  void clearError();

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void buildMenus();
  void updateRecentMenu();
  void addRecentFile(const QString& path);
  void updateTitle();
  bool saveModelFileAs();
  bool saveModel();
  void updateHeadline();
  void paintExport(QPainter& painter, QWidget* page, const QSize& size) const;
  QSize exportSize(QWidget* page) const;
  static int exportCaptionHeight();
  QString lastFolder(const QString& fallback) const;
  void rememberFolder(const QString& path);
  QStringList extraHardwareFiles() const;

  ExplorerSession* m_session;
  ModelPanel* m_panel;
  QFrame* m_bannerFrame;
  QLabel* m_banner;
  QToolButton* m_bannerClose;
  QString m_staleReason;
  bool m_rememberFiles = true;
  QAction* m_saveAsAction = nullptr;
  QLabel* m_headline;
  QTabWidget* m_tabs;
  QProgressBar* m_progress;
  QLabel* m_status;
  QMenu* m_recentMenu = nullptr;
  QAction* m_reportAction = nullptr;
};

}  // namespace modsim::gui
