#pragma once
// The one set of printers every `modsim` command's results go through (as nvbench's printers):
// a command turns its analysis_result into an `output` — lines and tables for people, one
// table for CSV, one JSON value for programs — and print() writes it in the format asked for:
//   table     the lines, then each table with aligned columns (titles as lines);
//   markdown  the lines as paragraphs, each table as a pipe table under a `###` title;
//   csv       the table marked `csv`, its raw (full-precision) values, RFC 4180 quoting;
//   json      the JSON value, one line (the contracts of docs/contracts.md); an object gets
//             "modsim": {"version", "commit"} (cli/version.hpp) unless it has that key already.
#include <boost/json.hpp>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace modsim::cli {

enum class output_format { table, json, csv, markdown };
// "table" | "json" | "csv" | "markdown"; throws modsim::error(bad_input) naming --format.
output_format parse_format(const std::string& text);

// One value: `text` as people read it, `raw` as programs read it (CSV); raw empty = text.
struct cell {
  std::string text, raw;
  cell() = default;
  cell(std::string t) : text(std::move(t)) {}  // NOLINT: a cell is written as its text
  cell(const char* t) : text(t) {}             // NOLINT
  cell(std::string t, std::string r) : text(std::move(t)), raw(std::move(r)) {}
  const std::string& value() const { return raw.empty() ? text : raw; }
};

// A number shown with `format` (fmt syntax, e.g. "{:.3f}") and kept at full precision for CSV.
cell number(double v, const char* format);
cell integer(std::int64_t v);

struct table {
  std::string title;                 // a line above the table (a `###` heading in Markdown); may be empty
  std::vector<std::string> columns;  // header names (the CSV header too)
  std::vector<std::vector<cell>> rows;
  int left_columns = 1;  // the first N columns are left-aligned, the rest right-aligned
  bool people = true;    // shown by the table and Markdown printers
  bool csv = false;      // the table the CSV printer writes (the first one marked)
};

struct output {
  std::vector<std::string> head;  // lines before the tables
  std::vector<table> tables;
  std::vector<std::string> tail;  // lines after the tables (notes, verdicts)
  boost::json::value json;        // what --format json prints
  std::string csv;                // what --format csv prints when a library writes the CSV
                                  // (sim::sweep_csv); else the table marked `csv`
};

void print(const output& o, output_format format, std::ostream& out);

}  // namespace modsim::cli
