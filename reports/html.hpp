#pragma once
// The HTML writer of the report (report.html): one self-contained page, the style sheet and the
// charts inline, no scripts and no external reference. Internal to reports/.
#include <map>
#include <string>

#include "reports/document.hpp"

namespace modsim::reports::detail {

// `s` with & < > " escaped.
std::string html_escape(const std::string& s);

// Minimal Markdown for inline text: **bold**, *italic*, `code` (after escaping).
std::string inline_html(const std::string& text);

// A table in its scrolling wrapper, with an optional caption; ends in '\n'.
std::string to_html(const table& t, const std::string& caption = "");

// The report's style sheet (reports/html_style.cpp).
const char* report_css();

// The whole page. `svgs`: chart name -> its SVG (tidied, reports/svg.hpp); a chart block
// whose name is not there is left out. Without `charts` a note says why there are none.
std::string render_html(const document& doc, const std::map<std::string, std::string>& svgs, bool charts);

}  // namespace modsim::reports::detail
