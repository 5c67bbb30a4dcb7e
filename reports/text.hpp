#pragma once
// The report's wording of numbers and of the things it describes (models, routing, workloads,
// hardware), shared by its sections. Internal to reports/.
#include <cstdint>
#include <string>

#include "reports/report.hpp"
#include "sim/model/spec.hpp"

namespace modsim::reports::detail {

// Numbers as the report's tables and sentences print them.
std::string gflop(std::int64_t f);              // FLOPs in GFLOP, 2 decimals
std::string ms(double s);                       // seconds in ms, 3 decimals
std::string times(double r);                    // "0.125×"; "–" when not finite
std::string pct(double r);                      // a fraction as "12.5%"
std::string signed_points(double r);            // a fraction as signed percentage points ("+3.2")
std::string ratio_or_dash(double a, double b);  // times(a / b); "–" when b is 0
std::string ratio_or_dash(std::int64_t a, std::int64_t b);
// Shortest round-trip text of a double (CSV: exact numbers).
std::string exact(double v);

std::string model_label(const sim::model_spec& m);    // its name, or "model"
std::string routing_text(const sim::model_spec& m);   // the routing in a sentence
std::string routing_short(const sim::model_spec& m);  // "12.5% every-other", "dense"
std::string workload_text(const sim::workload& w);

// The report's subject (models[0]) and its hardware with the cost model ("h100 [label]").
const model_result& subject(const report_data& d);
std::string hw_phrase(const report_data& d);
// "Intel(R) Xeon(R) Processor, 2 threads, OpenBLAS ..." -> its first two parts.
std::string short_device(const std::string& device);

}  // namespace modsim::reports::detail
