#pragma once
// The figures of a serving run (serve_summary), declared once: the name machines read (a JSON
// path and a CSV metric), the name people read, and how each prints. Every face renders from
// this list: `modsim simulate serve`'s JSON, CSV and table, the report's serving table and CSV,
// and the explorer's serving table.
//
// Adding a serving figure: a member of serve_summary (sim/des/serving.hpp), its computation
// (sim/des/serving_stats.cpp) and a row in serve_fields() (serving_fields.cpp). Nothing else.
#include <boost/json/object.hpp>

#include <cstdint>
#include <span>
#include <string>

#include "sim/des/serving.hpp"

namespace modsim::sim::des {

struct serve_field {
  // JSON path ("ttft_s.p50" = member p50 of object ttft_s); the CSV metric is the same with '_'
  // for '.' ("ttft_s_p50").
  const char* key;
  const char* label;  // for people ("TTFT p50")
  // The value: a count (machines read an integer) or a real number; exactly one is set.
  std::int64_t (*count)(const serve_summary&);
  double (*real)(const serve_summary&);
  double value(const serve_summary& s) const { return count ? static_cast<double>(count(s)) : real(s); }
  // People's tables show value × scale printed with `format` (fmt syntax, e.g. "{:.2f} ms");
  // nullptr: machines only.
  double scale;
  const char* format;
  bool compare;  // people's tables set it against the baseline's (model ÷ baseline)
  bool csv;      // a CSV row (the JSON has every field)
};

// In JSON order.
std::span<const serve_field> serve_fields();

// The CSV metric of `f` ("ttft_s_p50").
std::string csv_key(const serve_field& f);
// For machines: the value as the CSV prints it (integers without a decimal point, doubles in
// their shortest exact form).
std::string machine_text(const serve_field& f, const serve_summary& s);
// For people: value × scale in the field's format (empty when machines only).
std::string people_text(const serve_field& f, const serve_summary& s);
// Every field into a JSON object (nested by the keys' paths).
boost::json::object serve_json(const serve_summary& s);

}  // namespace modsim::sim::des
