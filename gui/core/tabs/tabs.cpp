#include "gui/core/tabs/tabs.hpp"

#include "gui/core/tabs/design_space_tab.hpp"
#include "gui/core/tabs/layers_tab.hpp"
#include "gui/core/tabs/parallel_tab.hpp"
#include "gui/core/tabs/serving_tab.hpp"
#include "gui/core/tabs/timeline_tab.hpp"
#include "gui/core/tabs/training_tab.hpp"
#include "gui/core/tabs/validation_tab.hpp"

namespace modsim::gui {

std::vector<TabSpec> resultTabs() {
  return {designSpaceTab(), layersTab(), trainingTab(), timelineTab(), servingTab(), validationTab(), parallelTab()};
}

QStringList resultTabNames() {
  QStringList names;
  for (const TabSpec& tab : resultTabs()) names << tab.name;
  return names;
}

QKeySequence tabShortcut(std::size_t index) {
  if (index >= 9) return {};
  return QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + static_cast<int>(index)));
}

}  // namespace modsim::gui
