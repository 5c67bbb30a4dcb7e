// The Markdown writer of the report (reports/markdown.hpp).
#include "reports/markdown.hpp"

#include <algorithm>
#include <vector>

namespace modsim::reports::detail {

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else
      out += c;
  }
  return out;
}

std::size_t text_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string pad(const std::string& s, std::size_t width, bool right) {
  const std::size_t w = text_width(s);
  const std::string fill(width > w ? width - w : 0, ' ');
  return right ? fill + s : s + fill;
}

std::string to_markdown(const table& t) {
  std::vector<std::size_t> w(t.header.size(), 3);
  for (std::size_t c = 0; c < t.header.size(); ++c) w[c] = std::max(w[c], text_width(md_cell(t.header[c])));
  for (const auto& r : t.rows)
    for (std::size_t c = 0; c < r.size() && c < w.size(); ++c)
      w[c] = std::max(w[c], text_width(md_cell(r[c])) + (t.emphasised.empty() ? 0 : 4));
  auto right = [&](std::size_t c) { return c < t.numeric.size() && t.numeric[c]; };
  std::string out = "|";
  for (std::size_t c = 0; c < t.header.size(); ++c) out += " " + pad(md_cell(t.header[c]), w[c], right(c)) + " |";
  out += "\n|";
  for (std::size_t c = 0; c < t.header.size(); ++c)
    out += (right(c) ? " " + std::string(w[c] - 1, '-') + ": |" : " :" + std::string(w[c] - 1, '-') + " |");
  out += "\n";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    out += "|";
    for (std::size_t c = 0; c < t.header.size(); ++c) {
      std::string cell = c < t.rows[i].size() ? md_cell(t.rows[i][c]) : "";
      if (t.emphasised.count(i) && !cell.empty()) cell = "**" + cell + "**";
      out += " " + pad(cell, w[c], right(c)) + " |";
    }
    out += "\n";
  }
  return out;
}

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
