// The report document from the report data: its title and sections in order
// (reports/sections.hpp), and the gap's terms shared by the verdict and the gap section.
#include "reports/sections.hpp"

#include <fmt/format.h>

#include "reports/text.hpp"

namespace modsim::reports::detail {

const std::vector<gap_term>& gap_terms() {
  static const std::vector<gap_term> terms = {
      {"routing", "routing ops", &sim::gap_decomposition::routing,
       "router, top-k, gather, scatter: time MoD adds that the dense model never spends"},
      {"launch", "kernel launches", &sim::gap_decomposition::launch,
       "the launch count does not shrink with capacity, and routing adds launches"},
      {"gemm_efficiency", "GEMM efficiency", &sim::gap_decomposition::gemm_efficiency,
       "projections, MLP and LM head on k rows run below the efficiency they had on S rows"},
      {"attention", "attention", &sim::gap_decomposition::attention,
       "attention FLOPs shrink with capacity², its time share decides the sign"},
      {"memory_bound", "memory-bound ops", &sim::gap_decomposition::memory_bound,
       "norms, activations and small GEMMs whose weight reads do not shrink with k"},
      {"wave_quantisation", "wave quantisation", &sim::gap_decomposition::wave_quantisation,
       "GEMMs on k rows fill part of a wave of output tiles: the idle SMs' time"},
  };
  return terms;
}

document build_document(const report_data& d) {
  document doc;
  const model_result& m = subject(d);
  doc.title = fmt::format("MoD cost report: {}", model_label(m.model));
  doc.subtitle = fmt::format("{} on {} · {}", routing_short(m.model), hw_phrase(d), workload_text(d.load));
  doc.sections.push_back(verdict_section(d));
  doc.sections.push_back(configuration_section(d));
  doc.sections.push_back(flops_section(d, doc));
  doc.sections.push_back(sweep_section(d, doc));
  doc.sections.push_back(variants_section(d, doc));
  doc.sections.push_back(time_section(d, doc));
  doc.sections.push_back(gap_section(d, doc));
  doc.sections.push_back(training_section_of(d, doc));
  doc.sections.push_back(serving_section_of(d, doc));
  doc.sections.push_back(sampling_section_of(d, doc));
  doc.sections.push_back(parallel_section_of(d, doc));
  doc.sections.push_back(validation_section_of(d, doc));
  doc.sections.push_back(models_section(d));
  doc.sections.push_back(method_section(d));
  return doc;
}

}  // namespace modsim::reports::detail
