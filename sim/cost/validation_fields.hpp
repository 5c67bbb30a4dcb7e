#pragma once
// The figures of a validation summary (sim/cost/validation.hpp), declared once: their JSON key, their
// name for people and how they are printed. `modsim validate`'s JSON and tables and the
// report's validation table render from this list, so a figure has one name and one format
// everywhere. The point count, an integer, leads every row and is not in the list.
#include <array>
#include <string>

#include <fmt/format.h>

#include "sim/cost/validation.hpp"

namespace modsim::sim {

struct summary_field {
  const char* key;                    // JSON key of validate's summaries (a contract)
  const char* label;                  // column header
  double validation_summary::*value;  // percent
  const char* format;                 // fmt format of the value, percent sign included
};

inline constexpr std::array<summary_field, 4> summary_fields = {{
    {"median_abs_pct_error", "median |error|", &validation_summary::median_abs_pct_error, "{:.1f}%"},
    {"p90_abs_pct_error", "p90 |error|", &validation_summary::p90_abs_pct_error, "{:.1f}%"},
    {"max_abs_pct_error", "max |error|", &validation_summary::max_abs_pct_error, "{:.1f}%"},
    {"mean_pct_error", "mean error (signed)", &validation_summary::mean_pct_error, "{:+.1f}%"},
}};

// A field's value of `s`, printed.
inline std::string format_field(const summary_field& f, const validation_summary& s) {
  return fmt::format(fmt::runtime(f.format), s.*f.value);
}

}  // namespace modsim::sim
