// The Parallelism section: one step of the subject and its baseline over several GPUs
// (sim/parallel_predict.hpp), the chosen split's parts and every split of the GPU count ranked.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "reports/chart_data.hpp"
#include "reports/document.hpp"
#include "reports/sections.hpp"
#include "reports/text.hpp"
#include "sim/memory.hpp"
#if MODSIM_HAVE_QT
#include "reports/charts.hpp"
#endif

namespace modsim::reports::detail {
namespace {}  // namespace

section parallel_section_of(const report_data& d, document& doc) {
  section s{"parallel", "Parallelism: the step over several GPUs (predicted)", "Parallelism", {}};
  if (!d.parallel) {
    s.blocks.push_back(note("No parallelism section: " + d.parallel_missing + "."));
    return s;
  }
  const analysis::parallel_section& ps = *d.parallel;
  const sim::parallel_prediction& m = ps.model;
  const sim::parallel_prediction& b = ps.baseline;
  s.blocks.push_back(paragraph(fmt::format(
      "One step of **{}** and of its baseline **{}** over {} GPUs, {}{}: each GPU computes a tensor-parallel "
      "shard (the cost model), every layer all-reduces its block's output twice per forward pass over the tokens "
      "it really computes (a routed layer's k, not S), pipeline stages are balanced by predicted time and run "
      "1F1B, and in training the data-parallel gradient all-reduce (as large as the dense model's: MoD skips "
      "tokens, not weights) overlaps the backward pass. Collectives are `modsim comm`'s on {}'s interconnect.",
      subject(d).model.name, d.baseline_label, m.split.gpus(), sim::to_string(m.split),
      m.split.pp > 1 ? fmt::format(", {} micro-batches", m.split.micro_batches) : std::string(), d.hardware.name)));

  table t{{"", "step ms", "compute ms", "exposed comm. ms", "bubble ms", "TP all-reduce GB", "memory/GPU GB"},
          {false, true, true, true, true, true, true},
          {},
          {}};
  auto row = [&](const std::string& who, const sim::parallel_prediction& p) {
    t.rows.push_back({who, ms(p.step_s), ms(p.compute_s), ms(p.exposed_comm_s()), ms(p.bubble_s),
                      fmt::format("{:.2f}", p.tp_bytes_per_step / 1e9),
                      fmt::format("{:.1f}{}", p.memory_per_gpu.total() / 1e9, p.memory_verdict.empty() ? "" : " ✗")});
  };
  row(subject(d).model.name, m);
  row(d.baseline_label, b);
  s.blocks.push_back(table_block(
      std::move(t), fmt::format("{}: the slowest stage's parts over the step; ✗ = does not fit in {} GB per GPU",
                                sim::to_string(m.split), d.hardware.memory_bytes / 1e9)));
  s.blocks.push_back(paragraph(fmt::format(
      "{} takes **{} ms** against {} ms for the baseline (**{:.3f}x**); communication the next op waits for is {:.0f}% "
      "of its step ({:.0f}% of the baseline's): the all-reduces shrink with the routed tokens as the compute does.",
      subject(d).model.name, ms(m.step_s), ms(b.step_s), b.step_s > 0 ? m.step_s / b.step_s : 0.0,
      m.step_s > 0 ? 100 * m.exposed_comm_s() / m.step_s : 0.0,
      b.step_s > 0 ? 100 * b.exposed_comm_s() / b.step_s : 0.0)));
  if (m.split.pp > 1) {
    table st{{"stage", "first layer", "balanced by time ms", "by layer count ms"}, {true, true, true, true}, {}, {}};
    for (std::size_t i = 0; i < m.stages.stage_s.size(); ++i)
      st.rows.push_back({std::to_string(i), std::to_string(m.stages.first_layer[i]), ms(m.stages.stage_s[i]),
                         i < m.naive_stages.stage_s.size() ? ms(m.naive_stages.stage_s[i]) : ""});
    s.blocks.push_back(table_block(std::move(st), "pipeline stages of one micro-batch (the last with the LM head)"));
  }
  for (const std::string& n : m.notes) s.blocks.push_back(note(n));

  if (ps.gpus > 0 && !ps.best_model.empty()) {
    table r{{"split", "step ms", "baseline step ms", "ratio", "compute ms", "exposed comm. ms", "bubble ms",
             "memory/GPU GB", "fits"},
            {false, true, true, true, true, true, true, true, false},
            {},
            {}};
    std::string csv =
        "tp,pp,dp,ep,micro_batches,step_s,baseline_step_s,compute_s,exposed_comm_s,bubble_s,memory_per_gpu_bytes,"
        "fits\n";
    bar_chart_input chart;
    chart.title = fmt::format("{} over {} GPUs: where the step goes, by split", subject(d).model.name, ps.gpus);
    chart.x_label = "split (tp x pp x dp)";
    chart.y_label = "predicted step (ms)";
    chart.stacked = true;
    chart.sets = {{"compute", {}, 0}, {"exposed communication", {}, 3}, {"pipeline bubble", {}, 1}};
    for (const sim::parallel_prediction& p : ps.best_model) {
      const double base = ps.baseline_step_s(p.split);
      const bool fits = p.memory_verdict.empty();
      r.rows.push_back({sim::to_string(p.split), ms(p.step_s), base > 0 ? ms(base) : "-",
                        base > 0 ? fmt::format("{:.3f}", p.step_s / base) : "-", ms(p.compute_s),
                        ms(p.exposed_comm_s()), ms(p.bubble_s), fmt::format("{:.1f}", p.memory_per_gpu.total() / 1e9),
                        fits ? "yes" : "no"});
      if (&p == &ps.best_model.front() && fits) r.emphasised.insert(r.rows.size() - 1);
      csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", p.split.tp, p.split.pp, p.split.dp, p.split.ep,
                         p.split.micro_batches, p.step_s, base, p.compute_s, p.exposed_comm_s(), p.bubble_s,
                         p.memory_per_gpu.total(), fits ? "true" : "false");
      if (fits) {
        chart.categories.push_back(fmt::format("{}x{}x{}", p.split.tp, p.split.pp, p.split.dp));
        chart.sets[0].values.push_back(p.compute_s * 1e3);
        chart.sets[1].values.push_back(p.exposed_comm_s() * 1e3);
        chart.sets[2].values.push_back(p.bubble_s * 1e3);
      }
    }
    s.blocks.push_back(table_block(
        std::move(r), fmt::format("every split of {} GPUs (tp, pp powers of two, tp within a node): those that "
                                  "fit in memory first, fastest first; tables/parallel.csv",
                                  ps.gpus)));
    doc.csv.push_back({"tables/parallel.csv", csv});
    if (!chart.categories.empty())
      MODSIM_CHART(doc, s, "parallel",
                   fmt::format("{} over {} GPUs: compute, exposed communication and bubble per split",
                               subject(d).model.name, ps.gpus),
                   make_bar_chart(chart));
  }
  return s;
}

}  // namespace modsim::reports::detail
