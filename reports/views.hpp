#pragma once
// The chart inputs (reports/chart_data.hpp) of modsim's results: one function per chart, no
// Qt. The report renders them with reports/charts.hpp; the GUI can do the same with its own
// results (sim::sweep_result, sim::prediction, ...).
#include <string>
#include <string_view>

#include "reports/chart_data.hpp"
#include "reports/report.hpp"
#include "sim/cost/predict.hpp"
#include "sim/cost/sweep.hpp"

namespace modsim::reports {

// Predicted wall-clock vs matmul FLOPs (per pass_label(r.load.run)) of every feasible point, one series per variant,
// the Pareto front, the paper's point (MoD 12.5% every_other) highlighted. `hardware` goes in the title.
pareto_chart_input sweep_chart(const sim::sweep_result& r, const std::string& hardware);

// Matmul FLOPs per forward pass / training step (the model's workload) by op class (GFLOP),
// dense baseline beside the model.
bar_chart_input flops_by_class_chart(const model_result& m);

// FLOPs and predicted time of each variant relative to dense (×).
bar_chart_input variants_chart(const sim::sweep_result& variants);

// Per layer, predicted time (launch excluded) stacked by op class, dense beside the model.
layer_time_input layer_time_chart(const sim::prediction& p, const std::string& model_name);

// From the FLOP ratio to the time ratio (% of the dense forward pass / training step): the
// gap's terms.
waterfall_input gap_chart(const sim::prediction& p);

// TTFT (ttft = true) or TPOT CDFs of each serving run.
latency_chart_input latency_chart(const serving_section& s, bool ttft);

// Measured vs predicted blocks with the error summary in the title.
diagonal_input validation_chart(const validation_section& v);

// The sampling map's strategy `strategy`: MoD / baseline decode step ratio vs batch, one line
// per context (every other context when there are more than five), the measured cells of that
// routing as points, the target ratio as a line, the cells that do not fit in memory marked
// (excluded). The report and the explorer draw it.
ratio_chart_input sampling_chart(const analysis::sampling_map& m, std::size_t strategy);

// The memory the sampling map's cells are checked against, for labels: "80 GB", or "memory"
// when the hardware does not say.
std::string sampling_memory_name(const analysis::sampling_map& m);

// What one run of the workload is, for labels: "forward pass", "training step" (forward +
// backward, 3x the forward matmul FLOPs), "decode step".
std::string pass_label(sim::run_mode mode);

// The class names of sim::op_classes() in words for legends ("attn_core" → "attention core").
std::string class_label(std::string_view op_class);

}  // namespace modsim::reports
