#pragma once
// The explorer's main window on a shipped model, for the GUI tests that drive it: open a model,
// wait for its result, make an edit and wait for the result it brings.
#include <gtest/gtest.h>

#include <QSignalSpy>
#include <QString>
#include <QTest>
#include <functional>

#include "gui/core/explorer_session.hpp"
#include "gui/core/main_window.hpp"

namespace modsim::gui::test {

// configs/models/NAME.json of the source tree.
inline QString shipped(const char* name) {
  return QStringLiteral(MODSIM_SOURCE_DIR "/configs/models/%1.json").arg(name);
}

struct ExplorerWindow {
  MainWindow window;
  ExplorerSession* session = window.session();
  ModelPanel* panel = window.panel();
  explicit ExplorerWindow(const char* model = "mod-220m") {
    window.resize(1400, 900);
    QSignalSpy ready(session, &ExplorerSession::resultApplied);
    EXPECT_TRUE(window.openModelFile(shipped(model)));
    settle(ready);
  }
  // Waits for the result of the latest configuration (worker idle).
  void settle(QSignalSpy& spy) const {
    if (!QTest::qWaitFor([&] { return spy.count() > 0 && !session->worker()->isBusy(); }, 60000))
      ADD_FAILURE() << "no result within 60 s";
  }
  // Runs `edit`, then waits for its result.
  void apply(const std::function<void()>& edit) const {
    QSignalSpy ready(session, &ExplorerSession::resultApplied);
    edit();
    settle(ready);
  }
};

}  // namespace modsim::gui::test
