// The report's wording of numbers, models, routing, workloads and hardware (reports/text.hpp).
#include "reports/text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace modsim::reports::detail {

std::string gflop(std::int64_t f) { return fmt::format("{:.2f}", static_cast<double>(f) / 1e9); }
std::string ms(double s) { return fmt::format("{:.3f}", s * 1e3); }
std::string times(double r) { return std::isfinite(r) ? fmt::format("{:.3f}×", r) : "–"; }
std::string pct(double r) { return fmt::format("{:.1f}%", 100 * r); }
std::string signed_points(double r) { return fmt::format("{:+.1f}", 100 * r); }
std::string ratio_or_dash(double a, double b) { return b != 0 ? times(a / b) : "–"; }
std::string ratio_or_dash(std::int64_t a, std::int64_t b) {
  return b != 0 ? times(static_cast<double>(a) / static_cast<double>(b)) : "–";
}
// Shortest round-trip text of a double (CSV: exact numbers).
std::string exact(double v) { return fmt::format("{}", v); }

std::string model_label(const sim::model_spec& m) { return m.name.empty() ? std::string("model") : m.name; }

std::string routing_text(const sim::model_spec& m) {
  if (!m.routing) return "none (dense)";
  const auto& r = *m.routing;
  std::string t = r.layer_capacities.empty() ? fmt::format("capacity {:g} ({:g}%), schedule {}", r.capacity,
                                                           100 * r.capacity, sim::to_string(r.sched))
                                             : "per-layer capacities";
  t += std::string(", decode routing by the ") +
       (r.inference == sim::inference_routing::predictor ? "causal predictor" : "router");
  return t;
}

std::string routing_short(const sim::model_spec& m) {
  if (!m.routing) return "dense";
  const auto& r = *m.routing;
  const std::string sched = r.sched.kind == sim::schedule_kind::every_other ? "every-other" : sim::to_string(r.sched);
  return fmt::format("{:g}% {}", 100 * r.capacity, sched);
}

std::string workload_text(const sim::workload& w) {
  return fmt::format("{} pass, batch {}, {} {} tokens, {}", sim::to_string(w.mode), w.batch,
                     w.mode == sim::run_mode::decode ? "context" : "sequence", w.seq_len, sim::to_string(w.type));
}

const model_result& subject(const report_data& d) { return d.models.front(); }

std::string hw_phrase(const report_data& d) { return fmt::format("{} [{}]", d.hardware.name, d.cost_label); }

// "Intel(R) Xeon(R) Processor, 2 threads, OpenBLAS ..." -> its first two parts.
std::string short_device(const std::string& device) {
  const auto first = device.find(", ");
  if (first == std::string::npos) return device;
  const auto second = device.find(", ", first + 2);
  return second == std::string::npos ? device : device.substr(0, second);
}

}  // namespace modsim::reports::detail
