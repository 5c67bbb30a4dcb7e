#pragma once
// The report as a document, built once from the report data and written out as Markdown
// (reports/markdown.hpp) and as HTML (reports/html.hpp): sections of blocks (paragraphs,
// lists, tables, charts, notes, headline cards), the charts to draw and the CSV tables.
// Internal to reports/.
#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "reports/report.hpp"

#if MODSIM_HAVE_QT
#include "reports/charts.hpp"
#endif

namespace modsim::reports::detail {

// A table, written as a Markdown pipe table or an HTML <table>.
struct table {
  std::vector<std::string> header;
  std::vector<bool> numeric;  // right-aligned columns
  std::vector<std::vector<std::string>> rows;
  std::set<std::size_t> emphasised;  // rows drawn bold (totals, the paper's point)
};

// A block of a section: a paragraph, a list, a table, a chart, or a note.
struct block {
  enum class kind { paragraph, bullets, table, chart, note, cards } k = kind::paragraph;
  std::string text;                // paragraph / note
  std::vector<std::string> items;  // bullets; cards as "value\x1Flabel"
  table tab;                       // table
  std::string caption;             // table caption / chart alt text
  std::string chart;               // chart file name under charts/ (no extension)
};

struct section {
  std::string id;
  std::string title;
  std::string toc;  // short title for the table of contents
  std::vector<block> blocks;
};

block paragraph(std::string text);
block note(std::string text);
block bullets(std::vector<std::string> items);
block table_block(table t, std::string caption = "");
block chart_block(std::string name, std::string alt);

// The charts the report draws: file name -> how to build it (with Qt).
struct chart_spec {
  std::string name;
  std::string alt;
#if MODSIM_HAVE_QT
  std::function<QChart*()> build;
#endif
};

struct document {
  std::string title;
  std::string subtitle;
  std::vector<section> sections;
  std::vector<chart_spec> charts;
  std::vector<report_file> csv;
};

}  // namespace modsim::reports::detail
