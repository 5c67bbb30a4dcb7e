// The result tabs come from one registry (gui/core/tabs/tabs.cpp, docs/architecture.md "Adding a GUI tab"):
// the main window shows exactly its tabs, in its order, under their titles; the View menu
// switches to each with its own key; --tab (and modsim-gui --list-tabs) takes each name.
#include <gtest/gtest.h>

#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QRegularExpression>
#include <QSet>
#include <QTabWidget>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include "gui/core/main_window.hpp"
#include "gui/core/tabs/tabs.hpp"

using namespace modsim::gui;

namespace {

struct GuiRun {
  int code = -1;
  std::string output;
};

// modsim-gui ARGS: its exit code and its stdout (and its stderr with `withStderr`).
GuiRun runGui(const std::string& args, bool withStderr) {
  GuiRun r;
  const std::string cmd = std::string("'") + MODSIM_GUI_BINARY + "' " + args + (withStderr ? " 2>&1" : " 2>/dev/null");
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

QStringList titlesOf(const std::vector<TabSpec>& tabs) {
  QStringList out;
  for (const TabSpec& t : tabs) out << t.title;
  return out;
}

}  // namespace

TEST(Tabs, RegistryNamesAndTitlesAreUnique) {
  const std::vector<TabSpec> tabs = resultTabs();
  ASSERT_FALSE(tabs.empty());
  QSet<QString> names, titles, keys;
  for (std::size_t i = 0; i < tabs.size(); ++i) {
    const TabSpec& t = tabs[i];
    EXPECT_TRUE(QRegularExpression(QStringLiteral("^[a-z][a-z0-9-]*$")).match(t.name).hasMatch()) << i;
    EXPECT_FALSE(t.title.isEmpty()) << i;
    EXPECT_TRUE(bool(t.makePage)) << t.name.toStdString();
    EXPECT_FALSE(names.contains(t.name)) << t.name.toStdString();
    EXPECT_FALSE(titles.contains(t.title)) << t.title.toStdString();
    const QKeySequence key = tabShortcut(i);
    EXPECT_FALSE(key.isEmpty()) << t.name.toStdString() << ": no Ctrl+digit left for it";
    EXPECT_FALSE(keys.contains(key.toString())) << t.name.toStdString();
    names << t.name;
    titles << t.title;
    keys << key.toString();
  }
  EXPECT_EQ(resultTabNames(), MainWindow::tabNames());
}

TEST(Tabs, TheShippedTabsKeepTheirNamesTitlesAndOrder) {
  // A new tab may go anywhere; these stay, in this order.
  const QStringList shipped = {QStringLiteral("design-space"), QStringLiteral("layers"),
                               QStringLiteral("timeline"),     QStringLiteral("serving"),
                               QStringLiteral("validation"),   QStringLiteral("parallel")};
  const QStringList shippedTitles = {QStringLiteral("Design space"), QStringLiteral("Layers"),
                                     QStringLiteral("Timeline"),     QStringLiteral("Serving / sampling"),
                                     QStringLiteral("Validation"),   QStringLiteral("Parallelism")};
  const std::vector<TabSpec> tabs = resultTabs();
  const QStringList names = resultTabNames();
  qsizetype last = -1;
  for (qsizetype i = 0; i < shipped.size(); ++i) {
    const qsizetype at = names.indexOf(shipped[i]);
    ASSERT_GE(at, 0) << shipped[i].toStdString();
    EXPECT_GT(at, last) << shipped[i].toStdString();
    EXPECT_EQ(tabs[static_cast<std::size_t>(at)].title, shippedTitles[i]);
    last = at;
  }
}

TEST(Tabs, TheWindowShowsExactlyTheRegistry) {
  MainWindow window;
  const std::vector<TabSpec> tabs = resultTabs();
  QTabWidget* shown = window.tabs();
  ASSERT_EQ(shown->count(), static_cast<int>(tabs.size()));
  for (int i = 0; i < shown->count(); ++i) {
    const TabSpec& t = tabs[static_cast<std::size_t>(i)];
    EXPECT_EQ(shown->tabText(i), t.title);
    EXPECT_EQ(shown->widget(i)->objectName(), t.name);
    ASSERT_TRUE(window.setCurrentTab(t.name)) << t.name.toStdString();
    EXPECT_EQ(shown->currentIndex(), i);
    ASSERT_TRUE(window.setCurrentTab(t.name.toUpper())) << "--tab ignores case";
    EXPECT_EQ(shown->currentIndex(), i);
  }
  EXPECT_FALSE(window.setCurrentTab(QStringLiteral("no-such-tab")));

  // The View menu: one entry per tab, in order, under its title, with its key; each switches to it.
  QMenu* view = nullptr;
  for (QAction* a : window.menuBar()->actions())
    if (a->menu() && a->text().remove(QLatin1Char('&')) == QStringLiteral("View")) view = a->menu();
  ASSERT_NE(view, nullptr);
  QStringList entries;
  for (QAction* a : view->actions())
    if (titlesOf(tabs).contains(a->text())) entries << a->text();
  EXPECT_EQ(entries, titlesOf(tabs));
  for (QAction* a : view->actions()) {
    const qsizetype i = titlesOf(tabs).indexOf(a->text());
    if (i < 0) continue;
    EXPECT_EQ(a->shortcut(), tabShortcut(static_cast<std::size_t>(i))) << a->text().toStdString();
    shown->setCurrentIndex(i == 0 ? 1 : 0);
    a->trigger();
    EXPECT_EQ(shown->currentIndex(), i) << a->text().toStdString();
  }
}

TEST(Tabs, TheAppTakesEachRegistryName) {
  // --list-tabs prints the registry's names; --tab refuses any other, naming the registry's.
  const GuiRun list = runGui("--list-tabs", false);
  ASSERT_EQ(list.code, 0) << list.output;
  EXPECT_EQ(list.output, resultTabNames().join(QLatin1Char('\n')).toStdString() + "\n");
  const GuiRun bad = runGui("--tab no-such-tab --screenshot /dev/null", true);
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("(expected " + resultTabNames().join(QStringLiteral(", ")).toStdString() + ")"),
            std::string::npos)
      << bad.output;
}

TEST(Tabs, HelpAndListTabsAnswerWithoutADisplay) {
  // No display and no platform named: QApplication would abort (exit 134); these only print.
  const std::string bare = "env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM ";
  const auto run = [&](const std::string& args) {
    GuiRun r;
    const std::string cmd = bare + "'" + MODSIM_GUI_BINARY + "' " + args + " 2>&1";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return r;
    char buf[4096];
    std::size_t n = 0;
    while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
    const int status = pclose(pipe);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  };
  const GuiRun help = run("--help");
  EXPECT_EQ(help.code, 0) << help.output;
  EXPECT_NE(help.output.find("--list-tabs"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("--screenshot"), std::string::npos) << help.output;
  const GuiRun list = run("--list-tabs");
  EXPECT_EQ(list.code, 0) << list.output;
  EXPECT_EQ(list.output, resultTabNames().join(QLatin1Char('\n')).toStdString() + "\n");
}
