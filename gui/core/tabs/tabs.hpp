#pragma once
// The registry of the explorer's result tabs: the one list the main window builds its tabs,
// its View menu (Ctrl+1 … Ctrl+9 by position) and the --tab option from. Adding a tab:
// docs/architecture.md, "Adding a GUI tab".
#include <QKeySequence>
#include <QStringList>
#include <cstddef>
#include <vector>

#include "gui/core/tabs/tab.hpp"

namespace modsim::gui {

// The tabs in the order they are shown.
std::vector<TabSpec> resultTabs();
// Their names, in that order (for --tab).
QStringList resultTabNames();
// The View menu's key for the tab at `index`: Ctrl+1 for the first, … Ctrl+9; none after.
QKeySequence tabShortcut(std::size_t index);

}  // namespace modsim::gui
