// The report's writers on small hand-built documents (reports/markdown.hpp, reports/html.hpp,
// reports/svg.hpp): the expected text is written out by hand from the formats' rules — padded
// pipe tables with aligned columns, bold emphasised rows, HTML escaping of & < > ", inline
// Markdown, the page's structure and the charts' SVG clean-up. Passes with and without Qt.
#include <gtest/gtest.h>

#include "core/text.hpp"

#include <map>
#include <string>

#include "reports/document.hpp"
#include "reports/html.hpp"
#include "reports/markdown.hpp"
#include "reports/svg.hpp"

namespace modsim::reports::detail {
namespace {

TEST(ReportWriters, MarkdownTwoByTwoTable) {
  // Columns at least 3 wide, padded to the widest cell; the numeric column right-aligned; '|' escaped.
  const table t{{"name", "value"}, {false, true}, {{"a", "1"}, {"b|c", "22"}}, {}};
  EXPECT_EQ(to_markdown(t),
            "| name | value |\n"
            "| :--- | ----: |\n"
            "| a    |     1 |\n"
            "| b\\|c |    22 |\n");
}

TEST(ReportWriters, MarkdownEmphasisedRowIsBoldAndColumnsLeaveRoomForIt) {
  const table t{{"x", "y"}, {false, true}, {{"a", "1"}, {"total", "2"}}, {1}};
  EXPECT_EQ(to_markdown(t),
            "| x         |     y |\n"
            "| :-------- | ----: |\n"
            "| a         |     1 |\n"
            "| **total** | **2** |\n");
}

TEST(ReportWriters, MarkdownPadsByCodePointsNotBytes) {
  EXPECT_EQ(text::display_width("1.5×"), 4u);
  EXPECT_EQ(text::pad("–", 3, true), "  –");
  EXPECT_EQ(text::pad("ab", 4, false), "ab  ");
  const table t{{"r"}, {true}, {{"0.125×"}}, {}};
  EXPECT_EQ(to_markdown(t),
            "|      r |\n"
            "| -----: |\n"
            "| 0.125× |\n");
}

document tiny_document() {
  document doc;
  doc.title = "T <1>";
  doc.subtitle = "S & s";
  section s{"s1", "One <x>", "1 & 2", {}};
  s.blocks.push_back(paragraph("Hello **x** & y"));
  block cards{block::kind::cards, {}, {}, {}, {}, {}};
  cards.items = {"1.5×\x1Flabel one", "2%\x1Flabel <two>"};
  s.blocks.push_back(cards);
  s.blocks.push_back(bullets({"a", "`b<c`"}));
  s.blocks.push_back(note("careful"));
  s.blocks.push_back(table_block(table{{"k", "v"}, {false, true}, {{"p", "1"}, {"q", "2"}}, {}}, "cap"));
  s.blocks.push_back(chart_block("c1", "alt & more"));
  doc.sections.push_back(s);
  return doc;
}

TEST(ReportWriters, MarkdownDocument) {
  const std::string table_md =
      "| k   |   v |\n"
      "| :-- | --: |\n"
      "| p   |   1 |\n"
      "| q   |   2 |\n";
  EXPECT_EQ(render_markdown(tiny_document(), true),
            "# T <1>\n\n_S & s_\n\n"
            "## One <x> {#s1}\n\n"
            "Hello **x** & y\n\n"
            "**1.5×** label one · **2%** label <two>\n\n"
            "- a\n- `b<c`\n\n"
            "> careful\n\n"
            "_cap_\n\n" +
                table_md +
                "\n"
                "![alt & more](charts/c1.svg)\n\n");
  // Without charts: the note says why, the chart is left out.
  const std::string no_charts = render_markdown(tiny_document(), false);
  EXPECT_EQ(no_charts.find("# T <1>\n\n_S & s_\n\n> Charts need Qt 6 (Charts + Svg); this build has none, so the "
                           "report carries the tables only.\n\n## One <x> {#s1}\n\n"),
            0u);
  EXPECT_EQ(no_charts.find("!["), std::string::npos);
}

TEST(ReportWriters, HtmlEscapes) { EXPECT_EQ(html_escape("a<b & c>\"d\"'"), "a&lt;b &amp; c&gt;&quot;d&quot;'"); }

TEST(ReportWriters, HtmlTwoByTwoTableEscapesCells) {
  const table t{{"a<b", "n"}, {false, true}, {{"x & y", "<1>"}, {"\"q\"", "2"}}, {1}};
  EXPECT_EQ(to_html(t, "c&d"),
            "<div class=\"table-wrap\"><table><caption>c&amp;d</caption>"
            "<thead><tr><th>a&lt;b</th><th class=\"num\">n</th></tr></thead><tbody>"
            "<tr><td>x &amp; y</td><td class=\"num\">&lt;1&gt;</td></tr>"
            "<tr class=\"em\"><td>&quot;q&quot;</td><td class=\"num\">2</td></tr>"
            "</tbody></table></div>\n");
  // No caption element without a caption.
  EXPECT_EQ(to_html(table{{"h"}, {false}, {{"c"}}, {}}),
            "<div class=\"table-wrap\"><table><thead><tr><th>h</th></tr></thead><tbody><tr><td>c</td></tr>"
            "</tbody></table></div>\n");
}

TEST(ReportWriters, InlineMarkdownToHtml) {
  EXPECT_EQ(inline_html("**bold** *it* `a<b` 2 * 3 & 4"),
            "<strong>bold</strong> <em>it</em> <code>a&lt;b</code> 2 * 3 &amp; 4");
  // Inside code, asterisks are text; an unclosed span is closed at the end.
  EXPECT_EQ(inline_html("`**x**` **open"), "<code>**x**</code> <strong>open</strong>");
}

TEST(ReportWriters, HtmlDocument) {
  const std::string svg =
      "<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"5\" viewBox=\"0 0 10 5\" "
      "xmlns=\"http://www.w3.org/2000/svg\"><rect id=\"r\" fill=\"url(#r)\"/></svg>";
  const std::string page = render_html(tiny_document(), {{"c1", svg}}, true);
  EXPECT_EQ(page.find("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"), 0u);
  EXPECT_NE(page.find("<title>T &lt;1&gt;</title>\n<style>" + std::string(report_css()) + "</style>\n"),
            std::string::npos);
  EXPECT_NE(page.find("<header class=\"top\"><h1>T &lt;1&gt;</h1><p class=\"subtitle\">S &amp; s</p>"
                      "<nav class=\"toc\"><a href=\"#s1\">1 &amp; 2</a>\n</nav></header>\n"
                      "<section id=\"s1\">\n<h2>One &lt;x&gt;</h2>\n"
                      "<p>Hello <strong>x</strong> &amp; y</p>\n"
                      "<div class=\"cards\"><div class=\"card\"><div class=\"value\">1.5×</div>"
                      "<div class=\"label\">label one</div></div><div class=\"card\"><div class=\"value\">2%</div>"
                      "<div class=\"label\">label &lt;two&gt;</div></div></div>\n"
                      "<ul><li>a</li><li><code>b&lt;c</code></li></ul>\n"
                      "<div class=\"note\">careful</div>\n"
                      "<div class=\"table-wrap\"><table><caption>cap</caption>"),
            std::string::npos);
  EXPECT_NE(page.find("<figure id=\"chart-c1\"><svg role=\"img\" aria-label=\"alt &amp; more\" "
                      "viewBox=\"0 0 10 5\"><rect id=\"c1-r\" fill=\"url(#c1-r)\"/></svg>"
                      "<figcaption>alt &amp; more (also charts/c1.svg)</figcaption></figure>\n</section>\n"),
            std::string::npos);
  EXPECT_EQ(page.substr(page.size() - 24), "</main>\n</body>\n</html>\n");
  EXPECT_EQ(page.find("<div class=\"note warn\">"), std::string::npos);

  // No SVG for a chart: no figure; no charts: the warning says why.
  const std::string bare = render_html(tiny_document(), {}, false);
  EXPECT_EQ(bare.find("<figure"), std::string::npos);
  EXPECT_NE(bare.find("</nav></header>\n<div class=\"note warn\">Charts need Qt 6"), std::string::npos);
}

TEST(ReportWriters, TidySvgRemovesEmptyGroupsAndNamesFonts) {
  EXPECT_EQ(tidy_svg("<svg><g fill=\"none\">\n </g><g><g> </g></g><g><text font-family=\"Sans Serif\">x</text></g>"
                     "<gradient/></svg>"),
            "<svg><g><text font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">x</text></g><gradient/></svg>");
  EXPECT_EQ(inline_svg("no svg here", "p", "alt"), "");
}

}  // namespace
}  // namespace modsim::reports::detail
