// The Markdown writer of the report (reports/markdown.hpp).
#include "reports/markdown.hpp"

#include "core/text.hpp"

#include <algorithm>
#include <vector>

namespace modsim::reports::detail {

std::string to_markdown(const table& t) { return text::markdown_table(t.header, t.rows, t.numeric, t.emphasised); }

std::string render_markdown(const document& doc, bool charts) {
  std::string out = "# " + doc.title + "\n\n_" + doc.subtitle + "_\n\n";
  if (!charts)
    out += "> Charts need Qt 6 (Charts + Svg); this build has none, so the report carries the tables only.\n\n";
  for (const section& s : doc.sections) {
    out += "## " + s.title + " {#" + s.id + "}\n\n";
    for (const block& b : s.blocks) {
      switch (b.k) {
        case block::kind::paragraph:
          out += b.text + "\n\n";
          break;
        case block::kind::note:
          out += "> " + b.text + "\n\n";
          break;
        case block::kind::bullets:
          for (const auto& i : b.items) out += "- " + i + "\n";
          out += "\n";
          break;
        case block::kind::cards: {
          std::vector<std::string> parts;
          for (const auto& i : b.items) {
            const auto sep = i.find('\x1F');
            parts.push_back("**" + i.substr(0, sep) + "** " + i.substr(sep + 1));
          }
          std::string line;
          for (const auto& p : parts) line += (line.empty() ? "" : " · ") + p;
          out += line + "\n\n";
          break;
        }
        case block::kind::table:
          if (!b.caption.empty()) out += "_" + b.caption + "_\n\n";
          out += to_markdown(b.tab) + "\n";
          break;
        case block::kind::chart:
          if (charts) out += "![" + b.caption + "](charts/" + b.chart + ".svg)\n\n";
          break;
      }
    }
  }
  return out;
}

}  // namespace modsim::reports::detail
