// The block constructors of the report document (reports/document.hpp).
#include "reports/document.hpp"

#include <utility>

namespace modsim::reports::detail {

block paragraph(std::string text) { return block{block::kind::paragraph, std::move(text), {}, {}, {}, {}}; }
block note(std::string text) { return block{block::kind::note, std::move(text), {}, {}, {}, {}}; }
block bullets(std::vector<std::string> items) { return block{block::kind::bullets, {}, std::move(items), {}, {}, {}}; }
block table_block(table t, std::string caption) {
  return block{block::kind::table, {}, {}, std::move(t), std::move(caption), {}};
}
block chart_block(std::string name, std::string alt) {
  return block{block::kind::chart, {}, {}, {}, std::move(alt), std::move(name)};
}

}  // namespace modsim::reports::detail
