#pragma once
// The report's sections, each built from the report data into the document (reports/document.hpp);
// sections with a chart or a CSV table add them to the document as well. Internal to reports/.
#include <string>
#include <vector>

#include "reports/document.hpp"
#include "reports/report.hpp"
#include "sim/cost/predict.hpp"

namespace modsim::reports::detail {

// The whole document: title, subtitle and the sections in the order of section_ids().
document build_document(const report_data& d);

// One function per section (reports/sections_*.cpp).
section verdict_section(const report_data& d);
section configuration_section(const report_data& d);
section flops_section(const report_data& d, document& doc);
section sweep_section(const report_data& d, document& doc);
section variants_section(const report_data& d, document& doc);
section time_section(const report_data& d, document& doc);
section gap_section(const report_data& d, document& doc);
section training_section_of(const report_data& d, document& doc);
section serving_section_of(const report_data& d, document& doc);
section sampling_section_of(const report_data& d, document& doc);
section parallel_section_of(const report_data& d, document& doc);
section validation_section_of(const report_data& d, document& doc);
section models_section(const report_data& d);
section method_section(const report_data& d);

// The terms the FLOP-to-time gap splits into (sim::gap_decomposition), in the report's words.
struct gap_term {
  const char* key;
  const char* label;
  double sim::gap_decomposition::*field;
  const char* why;
};
const std::vector<gap_term>& gap_terms();

// Adds the chart `name` to section `sec`, and to `doc` the way to draw it (with Qt): `expr`
// builds the QChart.
#if MODSIM_HAVE_QT
#define MODSIM_CHART(doc, sec, name, alt, expr)                              \
  do {                                                                       \
    (sec).blocks.push_back(chart_block((name), (alt)));                      \
    (doc).charts.push_back(chart_spec{(name), (alt), [=] { return expr; }}); \
  } while (0)
#else
#define MODSIM_CHART(doc, sec, name, alt, expr)         \
  do {                                                  \
    (sec).blocks.push_back(chart_block((name), (alt))); \
    (doc).charts.push_back(chart_spec{(name), (alt)});  \
  } while (0)
#endif

}  // namespace modsim::reports::detail
