// The charts' SVG text tidied and inlined (reports/svg.hpp).
#include "reports/svg.hpp"

#include <cctype>

#include "reports/html.hpp"

namespace modsim::reports::detail {

// QSvgGenerator's output made smaller and portable: empty groups (one per state change of
// the painter) removed, Qt's generic "Sans Serif" family given real fallbacks.
std::string tidy_svg(std::string s) {
  for (bool changed = true; changed;) {
    changed = false;
    std::string out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i < s.size()) {
      const std::size_t at = s.find("<g", i);
      if (at == std::string::npos) {
        out.append(s, i, std::string::npos);
        break;
      }
      const std::size_t close = s.find('>', at);
      std::size_t j = close == std::string::npos ? close : close + 1;
      while (j != std::string::npos && j < s.size() && std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j != std::string::npos && (s[at + 2] == ' ' || s[at + 2] == '\n' || s[at + 2] == '>') &&
          s.compare(j, 4, "</g>") == 0) {
        out.append(s, i, at - i);
        i = j + 4;
        changed = true;
      } else {
        out.append(s, i, at + 2 - i);
        i = at + 2;
      }
    }
    s = std::move(out);
  }
  const std::string from = "font-family=\"Sans Serif\"";
  const std::string to = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\"";
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

// An SVG document (QSvgGenerator's output) made fit to sit inside HTML: no XML prolog or
// DOCTYPE, no namespace URLs (HTML parses inline <svg> without them), ids made unique, and
// scaled by CSS through its viewBox.
std::string inline_svg(const std::string& svg, const std::string& id_prefix, const std::string& alt) {
  std::string s = svg;
  const auto start = s.find("<svg");
  if (start == std::string::npos) return "";
  s = s.substr(start);
  auto erase_attr = [&](const std::string& name) {
    const std::string::size_type tag_end = s.find('>');
    const auto at = s.find(" " + name + "=\"");
    if (at == std::string::npos || at > tag_end) return;
    const auto q = s.find('"', at + name.size() + 3);
    s.erase(at, q + 1 - at);
  };
  for (const char* a : {"xmlns", "xmlns:xlink", "width", "height", "version", "baseProfile"}) erase_attr(a);
  s.insert(4, " role=\"img\" aria-label=\"" + html_escape(alt) + "\"");
  // Unique ids per chart (gradients, clip paths).
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
      s.replace(pos, from.size(), to);
  };
  replace_all("id=\"", "id=\"" + id_prefix + "-");
  replace_all("url(#", "url(#" + id_prefix + "-");
  replace_all("xlink:href=\"#", "xlink:href=\"#" + id_prefix + "-");
  // Namespace URL text anywhere else (none expected) would be an external-looking reference.
  return s;
}

}  // namespace modsim::reports::detail
