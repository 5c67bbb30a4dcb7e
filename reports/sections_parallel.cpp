// The Parallelism section: one step of the subject and its baseline over several GPUs
// (sim/parallel/parallel_predict.hpp), the chosen split's parts and every split of the GPU count ranked.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "reports/chart_data.hpp"
#include "reports/document.hpp"
#include "reports/sections.hpp"
#include "reports/text.hpp"
#include "sim/model/memory.hpp"
#if MODSIM_HAVE_QT
#include "reports/charts.hpp"
#endif

namespace modsim::reports::detail {
namespace {

// "x1.23 faster" / "x1.23 slower": how `a` compares with `b` (times).
std::string speed_word(double a, double b) {
  if (a <= 0 || b <= 0) return "-";
  return a <= b ? fmt::format("{:.2f}x faster", b / a) : fmt::format("{:.2f}x slower", a / b);
}

// The sentences under the split's table, each from the numbers it speaks of: the step against
// the baseline's, the communication against the baseline's (and why it moved the way it did),
// and the split against one GPU holding the whole batch.
std::string split_sentences(const std::string& name, const analysis::parallel_section& ps) {
  const sim::parallel_prediction& m = ps.model;
  const sim::parallel_prediction& b = ps.baseline;
  std::string out = fmt::format("{} takes **{} ms** against {} ms for the baseline (**{:.3f}x**). ", name, ms(m.step_s),
                                ms(b.step_s), b.step_s > 0 ? m.step_s / b.step_s : 0.0);
  const double mc = m.exposed_comm_s(), bc = b.exposed_comm_s();
  if (mc <= 0 && bc <= 0) {
    out += "No communication is exposed in either step. ";
  } else {
    out += fmt::format(
        "Communication the next op waits for takes {} ms, {:.0f}% of its step, against {} ms ({:.0f}%) for the "
        "baseline",
        ms(mc), m.step_s > 0 ? 100 * mc / m.step_s : 0.0, ms(bc), b.step_s > 0 ? 100 * bc / b.step_s : 0.0);
    if (bc > 0 && mc > bc * (1 + 1e-9)) {
      out += fmt::format(": **{:.2f}x the baseline's**", mc / bc);
      if (m.dp_exposed_s > b.dp_exposed_s)
        out +=
            ", because the gradient all-reduce is as large as the baseline's (MoD skips tokens, not weights) and "
            "the model's shorter backward pass hides less of it";
      out += ". ";
    } else if (bc > 0 && mc < bc * (1 - 1e-9)) {
      out += fmt::format(": {:.2f}x the baseline's", mc / bc);
      if (m.tp_comm_s + m.ep_comm_s < b.tp_comm_s + b.ep_comm_s)
        out += ", the per-layer all-reduces and all-to-alls shrinking with the routed tokens";
      out += ". ";
    } else {
      out += ". ";
    }
  }
  const sim::parallel_prediction& one = ps.one_gpu_model;
  if (one.step_s > 0) {
    out += fmt::format(
        "On one GPU holding the whole batch the model's step is {} ms{}: this split is **{}**", ms(one.step_s),
        one.memory_verdict.empty() ? "" : " (one GPU " + one.memory_verdict + ": a time for comparison only)",
        speed_word(m.step_s, one.step_s));
    if (m.step_s > one.step_s) out += ", its communication and bubble cost more than the compute it divides";
    out += ".";
  }
  if (ps.gpus > 0 && !ps.best_model.empty() && one.step_s > 0) {
    const bool all_slower = std::all_of(ps.best_model.begin(), ps.best_model.end(),
                                        [&](const sim::parallel_prediction& p) { return p.step_s > one.step_s; });
    if (all_slower)
      out += fmt::format(" **Every split of {} GPUs is slower than one GPU** for this workload.", ps.gpus);
  }
  return out;
}

}  // namespace

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
  s.blocks.push_back(paragraph(split_sentences(subject(d).model.name, ps)));
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
