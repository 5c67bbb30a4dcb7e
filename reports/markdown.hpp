#pragma once
// The Markdown writer of the report (report.md): pipe tables padded to their columns, numeric
// columns right-aligned, emphasised rows in bold. Internal to reports/.
#include <cstddef>
#include <string>

#include "reports/document.hpp"

namespace modsim::reports::detail {

// A table cell with '|' escaped.
std::string md_cell(const std::string& s);
// Display width of UTF-8 text (code points; good enough for the symbols used here).
std::size_t text_width(const std::string& s);
// `s` padded with spaces to `width` (text_width), on the left when `right`.
std::string pad(const std::string& s, std::size_t width, bool right);

// A pipe table, each line ending in '\n'.
std::string to_markdown(const table& t);

// The whole document; without `charts` the chart blocks are left out and a note says why.
std::string render_markdown(const document& doc, bool charts);

}  // namespace modsim::reports::detail
