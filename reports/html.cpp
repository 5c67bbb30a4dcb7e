// The HTML writer of the report (reports/html.hpp).
#include "reports/html.hpp"

#include "reports/svg.hpp"

namespace modsim::reports::detail {

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string to_html(const table& t, const std::string& caption) {
  std::string out = "<div class=\"table-wrap\"><table>";
  if (!caption.empty()) out += "<caption>" + html_escape(caption) + "</caption>";
  out += "<thead><tr>";
  for (std::size_t c = 0; c < t.header.size(); ++c)
    out += std::string(c < t.numeric.size() && t.numeric[c] ? "<th class=\"num\">" : "<th>") +
           html_escape(t.header[c]) + "</th>";
  out += "</tr></thead><tbody>";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    out += t.emphasised.count(i) ? "<tr class=\"em\">" : "<tr>";
    for (std::size_t c = 0; c < t.header.size(); ++c) {
      const std::string cell = c < t.rows[i].size() ? t.rows[i][c] : "";
      out += std::string(c < t.numeric.size() && t.numeric[c] ? "<td class=\"num\">" : "<td>") + html_escape(cell) +
             "</td>";
    }
    out += "</tr>";
  }
  out += "</tbody></table></div>\n";
  return out;
}

// Minimal Markdown for inline text: **bold**, *italic*, `code` (after escaping).
std::string inline_html(const std::string& text) {
  const std::string s = html_escape(text);
  std::string out;
  bool bold = false, ital = false, code = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '`') {
      out += code ? "</code>" : "<code>";
      code = !code;
    } else if (!code && s.compare(i, 2, "**") == 0) {
      out += bold ? "</strong>" : "<strong>";
      bold = !bold;
      ++i;
    } else if (!code && s[i] == '*' && (ital || (i + 1 < s.size() && s[i + 1] != ' '))) {
      out += ital ? "</em>" : "<em>";
      ital = !ital;
    } else {
      out += s[i];
    }
  }
  if (code) out += "</code>";
  if (bold) out += "</strong>";
  if (ital) out += "</em>";
  return out;
}

std::string render_html(const document& doc, const std::map<std::string, std::string>& svgs, bool charts) {
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + html_escape(doc.title) + "</title>\n<style>" + std::string(report_css()) +
         "</style>\n</head>\n<body>\n<main>\n";
  out += "<header class=\"top\"><h1>" + html_escape(doc.title) + "</h1><p class=\"subtitle\">" +
         html_escape(doc.subtitle) + "</p>";
  out += "<nav class=\"toc\">";
  for (const section& s : doc.sections) out += "<a href=\"#" + s.id + "\">" + html_escape(s.toc) + "</a>\n";
  out += "</nav></header>\n";
  if (!charts)
    out +=
        "<div class=\"note warn\">Charts need Qt 6 (Charts + Svg); this build has none, so the report carries the "
        "tables only.</div>\n";
  for (const section& s : doc.sections) {
    out += "<section id=\"" + s.id + "\">\n<h2>" + html_escape(s.title) + "</h2>\n";
    for (const block& b : s.blocks) {
      switch (b.k) {
        case block::kind::paragraph:
          out += "<p>" + inline_html(b.text) + "</p>\n";
          break;
        case block::kind::note:
          out += "<div class=\"note\">" + inline_html(b.text) + "</div>\n";
          break;
        case block::kind::bullets:
          out += "<ul>";
          for (const auto& i : b.items) out += "<li>" + inline_html(i) + "</li>";
          out += "</ul>\n";
          break;
        case block::kind::cards:
          out += "<div class=\"cards\">";
          for (const auto& i : b.items) {
            const auto sep = i.find('\x1F');
            out += "<div class=\"card\"><div class=\"value\">" + html_escape(i.substr(0, sep)) +
                   "</div><div class=\"label\">" + html_escape(i.substr(sep + 1)) + "</div></div>";
          }
          out += "</div>\n";
          break;
        case block::kind::table:
          out += to_html(b.tab, b.caption);
          break;
        case block::kind::chart: {
          auto it = svgs.find(b.chart);
          if (it == svgs.end()) break;
          out += "<figure id=\"chart-" + b.chart + "\">" + inline_svg(it->second, b.chart, b.caption) + "<figcaption>" +
                 html_escape(b.caption) + " (also charts/" + b.chart + ".svg)</figcaption></figure>\n";
          break;
        }
      }
    }
    out += "</section>\n";
  }
  out +=
      "<footer>modsim — measure, predict and explain Mixture-of-Depths. This page is self-contained: no network, "
      "no scripts, no external fonts.</footer>\n</main>\n</body>\n</html>\n";
  return out;
}

}  // namespace modsim::reports::detail
