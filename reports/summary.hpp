#pragma once
// A report's summary.json (contract, docs/contracts.md "Report summary"): which modsim made
// it, from which files, and every headline figure of the report under a stable key, for a
// machine to compare (reports/compare.hpp, `modsim compare`). The figures are read from the
// report_data the report prints, never computed again. No date inside: the same inputs give
// the same bytes.
//
// Keys (`model` names the model a figure belongs to; PASS is `forward` or `train`, the report's
// --mode; STRATEGY a decode strategy of the sampling map: sync, pad, sync+graphs, pad+graphs;
// ROUTING sync or pad). Every model of the report:
//   flops.matmul            FLOP   lower   matmul FLOPs of one pass
//   flops.matmul_ratio      x      lower   matmul FLOPs / the baseline's
//   flops.ratio             x      lower   matmul + elementwise FLOPs / the baseline's
//   time.PASS               s      lower   predicted time of one pass
//   time.PASS_ratio         x      lower   predicted time / the baseline's
//   memory.per_gpu          bytes  lower   what the pass keeps in device memory on one GPU
// The subject (the first model), where the report has the part:
//   time.PASS_band_p90      %      lower   the prediction's p90 error band (the trust band)
//   trust.median_abs_error  %      lower   predicted vs measured blocks (validation section)
//   trust.p90_abs_error     %      lower
//   sweep.best_time_ratio   x      lower   the design space's fastest point, time / the baseline's
//   serving.FIELD           s | tok/s | bytes   the model's serving run: ttft_s.p50 .p90 .p99,
//                                   tpot_s.*, latency_s.*, throughput_tok_s (higher), kv_peak_bytes
//   serving.tpot_p50_ratio  x      lower   TPOT p50 / the baseline's
//   serving.kv_peak_ratio   x      lower   KV cache peak / the baseline's
//   decode.ROUTING.step     s      lower   the decode step at the serving section's typical cell
//   sampling.STRATEGY.best_speedup   x      higher  the sampling map's best baseline / MoD step
//   sampling.STRATEGY.cells_reached  cells  higher  cells at or past the target speed-up
//   parallel.step           s      lower   the step of the parallelism section's split
//   parallel.step_ratio     x      lower   that step / the baseline's on the same split
//   parallel.memory_per_gpu bytes  lower
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace modsim::reports {

inline constexpr const char* summary_schema = "modsim-report-summary/1";

struct summary_figure {
  std::string key;
  std::string model;
  double value = 0;
  std::string unit;
  bool higher_is_better = false;  // "better": "higher" | "lower"
};

struct summary {
  std::string schema;
  report_build build;
  std::vector<input_file> inputs;
  std::vector<summary_figure> figures;
};

// The figures of a report, in a fixed order (non-finite values left out).
std::vector<summary_figure> summary_figures(const report_data& d);

// Every key summary_figures can write (PASS, STRATEGY, ROUTING and the serving fields
// expanded): what a thresholds file or --only may name.
std::vector<std::string> summary_keys();

// The summary of `d` and its bytes (one input, one figure per line).
summary summary_of(const report_data& d);
std::string summary_text(const summary& s);

// Parses summary.json text; `path` names it in errors. Throws modsim::error(bad_input) naming
// the file and the key for anything that is not a summary, and for a schema other than
// summary_schema (another major version cannot be compared).
summary parse_summary(const std::string& text, const std::string& path);

// Reads `path`: a summary.json, or a report folder holding one.
summary load_summary(const std::string& path);

}  // namespace modsim::reports
