#include "cli/printer.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/text.hpp"
#include "cli/version.hpp"

namespace modsim::cli {

namespace {

void print_text_table(const table& t, std::ostream& out) {
  std::vector<std::size_t> widths(t.columns.size(), 0);
  for (std::size_t c = 0; c < t.columns.size(); ++c) widths[c] = text::display_width(t.columns[c]);
  for (const auto& row : t.rows)
    for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c)
      widths[c] = std::max(widths[c], text::display_width(row[c].text));
  auto line = [&](auto&& text_of, std::size_t n) {
    std::string s;
    for (std::size_t c = 0; c < n; ++c) {
      if (c > 0) s += "  ";
      s += text::pad(text_of(c), widths[c], static_cast<int>(c) >= t.left_columns);
    }
    s.erase(s.find_last_not_of(' ') + 1);
    out << s << "\n";
  };
  if (!t.title.empty()) out << t.title << "\n";
  if (std::any_of(t.columns.begin(), t.columns.end(), [](const std::string& c) { return !c.empty(); }))
    line([&](std::size_t c) { return t.columns[c]; }, t.columns.size());
  for (const auto& row : t.rows)
    line([&](std::size_t c) { return row[c].text; }, std::min(row.size(), t.columns.size()));
}

void print_markdown_table(const table& t, std::ostream& out) {
  if (!t.title.empty()) out << "### " << t.title << "\n\n";
  std::vector<bool> right(t.columns.size());
  for (std::size_t c = 0; c < right.size(); ++c) right[c] = static_cast<int>(c) >= t.left_columns;
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : t.rows) {
    rows.emplace_back();
    for (const cell& x : row) rows.back().push_back(x.text);
  }
  out << text::markdown_table(t.columns, rows, right);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

}  // namespace

output_format parse_format(const std::string& text) {
  if (text == "table") return output_format::table;
  if (text == "json") return output_format::json;
  if (text == "csv") return output_format::csv;
  if (text == "markdown" || text == "md") return output_format::markdown;
  throw input_error("", "--format", "unknown format '" + text + "' (expected table, json, csv or markdown)");
}

cell number(double v, const char* format) { return cell(fmt::format(fmt::runtime(format), v), fmt::format("{}", v)); }
cell integer(std::int64_t v) { return cell(std::to_string(v)); }

void print(const output& o, output_format format, std::ostream& out) {
  switch (format) {
    case output_format::json:
      if (o.json.is_object() && !o.json.as_object().contains("modsim")) {
        boost::json::object stamped = o.json.as_object();
        stamped["modsim"] = build_json();
        out << boost::json::serialize(stamped) << "\n";
      } else {
        out << boost::json::serialize(o.json) << "\n";
      }
      return;
    case output_format::csv:
      if (!o.csv.empty()) {
        out << o.csv;
        return;
      }
      for (const table& t : o.tables) {
        if (!t.csv) continue;
        for (std::size_t c = 0; c < t.columns.size(); ++c) out << (c ? "," : "") << csv_field(t.columns[c]);
        out << "\n";
        for (const auto& row : t.rows) {
          for (std::size_t c = 0; c < row.size(); ++c) out << (c ? "," : "") << csv_field(row[c].value());
          out << "\n";
        }
        return;
      }
      throw input_error("", "--format", "this command has no CSV form (use table, json or markdown)");
    case output_format::table:
    case output_format::markdown: {
      const bool md = format == output_format::markdown;
      for (const auto& l : o.head) out << l << (md ? "  \n" : "\n");
      for (const table& t : o.tables) {
        if (!t.people) continue;
        out << "\n";
        md ? print_markdown_table(t, out) : print_text_table(t, out);
      }
      if (!o.tail.empty()) out << "\n";
      for (const auto& l : o.tail) out << l << (md ? "  \n" : "\n");
      return;
    }
  }
}

}  // namespace modsim::cli
