// The report's wording of numbers, models, routing, workloads and hardware (reports/text.hpp).
#include "reports/text.hpp"

#include "core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "reports/views.hpp"

namespace modsim::reports::detail {

std::string gflop(std::int64_t f) { return fmt::format("{:.2f}", static_cast<double>(f) / 1e9); }
std::string ms(double s) { return text::ms(s, 3); }
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

namespace {

// A schedule as the report writes it: "every-other" for the paper's default, else its name or
// layer list.
std::string schedule_words(const sim::schedule& s) {
  return s.kind == sim::schedule_kind::every_other ? "every-other" : sim::to_string(s);
}

// The routed layers of a per-layer capacity list grouped by capacity, in order of first
// appearance: {(0.25, [0, 4]), (0.5, [2])}.
std::vector<std::pair<double, std::vector<int>>> capacity_groups(const sim::routing_spec& r) {
  std::vector<std::pair<double, std::vector<int>>> groups;
  for (std::size_t i = 0; i < r.layer_capacities.size(); ++i) {
    if (!r.layer_capacities[i]) continue;
    const double c = *r.layer_capacities[i];
    auto it = std::find_if(groups.begin(), groups.end(), [c](const auto& g) { return g.first == c; });
    if (it == groups.end()) it = groups.insert(groups.end(), {c, {}});
    it->second.push_back(static_cast<int>(i));
  }
  return groups;
}

std::string layer_list(const std::vector<int>& layers) {
  std::string out;
  for (int l : layers) out += (out.empty() ? "" : ",") + std::to_string(l);
  return "[" + out + "]";
}

// The routed layers as a schedule: a preset's name when they match one, else the list.
std::string routed_layers(const sim::routing_spec& r) {
  std::vector<bool> routed;
  std::vector<int> list;
  for (std::size_t i = 0; i < r.layer_capacities.size(); ++i) {
    routed.push_back(r.layer_capacities[i].has_value());
    if (routed.back()) list.push_back(static_cast<int>(i));
  }
  const std::string preset = sim::schedule_preset(routed);
  if (preset == "every_other") return "every-other";
  return preset.empty() || preset == "none" ? layer_list(list) : preset;
}

}  // namespace

std::string routing_text(const sim::model_spec& m) {
  if (!m.routing) return "none (dense)";
  const auto& r = *m.routing;
  std::string t;
  if (r.layer_capacities.empty()) {
    t = fmt::format("capacity {:g} ({:g}%), schedule {}", r.capacity, 100 * r.capacity, sim::to_string(r.sched));
  } else {
    const auto groups = capacity_groups(r);
    if (groups.size() == 1) {
      t = fmt::format("capacity {:g} ({:g}%) at layers {}", groups[0].first, 100 * groups[0].first, routed_layers(r));
    } else {
      t = "per-layer capacities:";
      for (std::size_t g = 0; g < groups.size(); ++g) {
        const std::string list = layer_list(groups[g].second);
        t += fmt::format("{} {:g}% at layer{} {}", g ? ";" : "", 100 * groups[g].first,
                         groups[g].second.size() > 1 ? "s" : "", list.substr(1, list.size() - 2));
      }
    }
  }
  t += std::string(", decode routing by the ") +
       (r.inference == sim::inference_routing::predictor ? "causal predictor" : "router");
  return t;
}

std::string routing_short(const sim::model_spec& m) {
  if (!m.routing) return "dense";
  const auto& r = *m.routing;
  if (r.layer_capacities.empty()) return fmt::format("{:g}% {}", 100 * r.capacity, schedule_words(r.sched));
  // Per-layer capacities: each capacity with its layers ("25% [0], 50% [2]"); one capacity is
  // written as a single one would be ("25% [0,2]", "12.5% every-other").
  const auto groups = capacity_groups(r);
  if (groups.size() == 1) return fmt::format("{:g}% {}", 100 * groups[0].first, routed_layers(r));
  std::string t;
  for (const auto& [c, layers] : groups)
    t += fmt::format("{}{:g}% {}", t.empty() ? "" : ", ", 100 * c, layer_list(layers));
  return t;
}

std::string workload_text(const sim::workload& w) {
  return fmt::format("{}, batch {}, {} {} tokens, {}", pass_label(w.run), w.batch,
                     w.run == sim::run_mode::decode ? "context" : "sequence", w.seq_len, sim::to_string(w.type));
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
