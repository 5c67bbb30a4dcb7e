// The Training section: the paper's training claim answered (analysis/training.hpp): one training
// step of the subject and its baseline, their memory, the wall-clock at equal model FLOPs and
// where the difference comes from, the budget answer when one was given, and how the backward
// pass and the optimizer were priced. Every report has it: in a forward report it is a training
// step at the report's batch and sequence (the workload's recomputation).
#include <fmt/format.h>

#include <string>

#include "reports/document.hpp"
#include "reports/sections.hpp"
#include "reports/text.hpp"
#include "sim/model/memory.hpp"

namespace modsim::reports::detail {
namespace {

std::string gb(double bytes) { return fmt::format("{:.2f}", bytes / 1e9); }

std::string hours(double s) {
  return s >= 3600 * 48 ? fmt::format("{:.1f} days", s / 86400) : fmt::format("{:.1f} h", s / 3600);
}

}  // namespace

section training_section_of(const report_data& d, document& doc) {
  section s{"training", "Training: equal FLOPs, equal wall-clock?", "Training", {}};
  if (!d.training) {
    s.blocks.push_back(note("No training section: " + d.training_missing + "."));
    return s;
  }
  const analysis::training_section& t = *d.training;
  const bool budget = t.budget.has_value();
  s.blocks.push_back(paragraph(fmt::format(
      "The paper's first claim: MoD models match their baseline for equivalent FLOPs and wall-clock times to train. "
      "One training step ({}, batch {} × {} tokens, recompute {}) of **{}** and of its baseline **{}** on {}{}. "
      "A budget and MFU count {}.",
      sim::to_string(t.load.type), t.load.batch, t.load.seq_len, sim::to_string(t.load.recompute), t.model.name,
      t.baseline.name, hw_phrase(d),
      d.load.run == sim::run_mode::train ? ""
                                         : " (the report describes forward passes; this is the same batch trained)",
      t.flop_convention)));

  table st{{"", "step ms", "tokens/step", "tokens/s", "model TFLOP/step", "MFU", "weights GB", "gradients GB",
            "optimizer state GB", "activations GB", "memory GB"},
           {false, true, true, true, true, true, true, true, true, true, true},
           {},
           {}};
  for (const analysis::training_step* x : {&t.model, &t.baseline})
    st.rows.push_back({x->name, ms(x->step_s), std::to_string(x->tokens), fmt::format("{:.0f}", x->tokens_per_s),
                       fmt::format("{:.3f}", static_cast<double>(x->model_flops) / 1e12), pct(x->mfu),
                       gb(x->memory.weights), gb(x->memory.gradients), gb(x->memory.optimizer_state),
                       gb(x->memory.activations), gb(x->memory.total()) + (x->memory_verdict.empty() ? "" : " ✗")});
  s.blocks.push_back(table_block(
      std::move(st), fmt::format("one training step, {}; activations under recompute {} (MoD keeps none for the "
                                 "tokens a layer skips); ✗ = does not fit in {} GB; tables/training.csv",
                                 t.memory_scope, sim::to_string(t.load.recompute), d.hardware.memory_bytes / 1e9)));

  table parts{{"", "forward ms", "backward ms", "recompute ms", "optimizer ms", "launch ms", "step ms"},
              {false, true, true, true, true, true, true},
              {},
              {}};
  for (const analysis::training_step* x : {&t.model, &t.baseline})
    parts.rows.push_back({x->name, ms(x->forward_s), ms(x->backward_s), ms(x->recompute_s), ms(x->optimizer_s),
                          ms(x->overhead_s), ms(x->step_s)});
  s.blocks.push_back(table_block(std::move(parts), "where each step goes"));

  s.blocks.push_back(paragraph(fmt::format(
      "For the model FLOPs its baseline trains with, {} takes **{}** the baseline's wall-clock: its step takes {} "
      "the baseline's, its model FLOPs per step are {} the baseline's. Where the difference ({} percentage points) "
      "comes from, in "
      "fractions of the baseline's wall-clock (they sum to it):",
      t.model.name, times(t.wall_ratio), times(t.time_ratio), times(t.model_flop_ratio),
      signed_points(t.wall_ratio - 1))));
  table src{{"source", "points", "why"}, {false, true, false}, {}, {}};
  for (const analysis::training_source& x : t.sources) src.rows.push_back({x.label, signed_points(x.value), x.why});
  s.blocks.push_back(table_block(std::move(src),
                                 "the step's gap decomposition (the Gap section's terms on the "
                                 "training step) over the model-FLOP ratio, percentage points"));

  std::string csv =
      "model,step_s,forward_s,backward_s,recompute_s,optimizer_s,overhead_s,tokens_per_step,tokens_per_s,model_flops,"
      "mfu,weights_bytes,gradients_bytes,optimizer_state_bytes,activations_bytes,memory_bytes,budget_flops,steps,"
      "tokens,wall_s\n";
  auto csv_row = [&](const analysis::training_step& x, double steps, double tokens, double wall) {
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", x.name, exact(x.step_s),
                       exact(x.forward_s), exact(x.backward_s), exact(x.recompute_s), exact(x.optimizer_s),
                       exact(x.overhead_s), x.tokens, exact(x.tokens_per_s), x.model_flops, exact(x.mfu),
                       exact(x.memory.weights), exact(x.memory.gradients), exact(x.memory.optimizer_state),
                       exact(x.memory.activations), exact(x.memory.total()),
                       budget ? exact(t.budget->flops) : std::string(), budget ? exact(steps) : std::string(),
                       budget ? exact(tokens) : std::string(), budget ? exact(wall) : std::string());
  };
  if (budget) {
    const analysis::training_budget& b = *t.budget;
    table bt{{"", "steps", "tokens", "wall-clock"}, {false, true, true, true}, {}, {}};
    bt.rows.push_back({t.model.name, fmt::format("{:.0f}", b.model_steps), fmt::format("{:.4g}", b.model_tokens),
                       hours(b.model_wall_s)});
    bt.rows.push_back({t.baseline.name, fmt::format("{:.0f}", b.baseline_steps),
                       fmt::format("{:.4g}", b.baseline_tokens), hours(b.baseline_wall_s)});
    s.blocks.push_back(
        table_block(std::move(bt),
                    fmt::format("at a budget of {:.3g} model FLOPs: steps = budget / model FLOPs per step", b.flops)));
    csv_row(t.model, b.model_steps, b.model_tokens, b.model_wall_s);
    csv_row(t.baseline, b.baseline_steps, b.baseline_tokens, b.baseline_wall_s);
  } else {
    s.blocks.push_back(
        note("No FLOP budget given: `modsim report --flop-budget F` (e.g. the paper's 6e18) adds the "
             "steps, tokens and wall-clock of each at it."));
    csv_row(t.model, 0, 0, 0);
    csv_row(t.baseline, 0, 0, 0);
  }
  s.blocks.push_back(bullets(
      {"backward: " + t.backward, "attention's backward: " + t.attention_backward, "optimizer: " + t.optimizer}));
  for (const analysis::training_step* x : {&t.model, &t.baseline})
    if (!x->memory_verdict.empty()) s.blocks.push_back(note(x->name + ": " + x->memory_verdict));
  doc.csv.push_back({"tables/training.csv", csv});
  return s;
}

}  // namespace modsim::reports::detail
