#pragma once
// The Markdown writer of the report (report.md): pipe tables padded to their columns, numeric
// columns right-aligned, emphasised rows in bold. Internal to reports/.
#include <cstddef>
#include <string>

#include "reports/document.hpp"

namespace modsim::reports::detail {

// A pipe table, each line ending in '\n' (core/text.hpp's markdown_table, the command line's
// too).
std::string to_markdown(const table& t);

// The whole document; without `charts` the chart blocks are left out and a note says why.
std::string render_markdown(const document& doc, bool charts);

}  // namespace modsim::reports::detail
