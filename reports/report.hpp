#pragma once
// The cost report of `modsim report`: what MoD saves in FLOPs and in predicted wall-clock on
// a piece of hardware, where the difference goes, what it does to serving, and how far the
// predictions are from measurements.
//
// Three steps, each testable on its own:
//  1. build_report(input) computes everything through analysis::analyze (the analysis the
//     command line and the explorer show too) into report_data;
//  2. render_report(data) turns it into files (report.md, a self-contained report.html with
//     the charts inline as SVG, tables/*.csv, charts/*.svg) held in memory;
//  3. write_report(files, dir) writes every file to a temporary name first and renames them
//     only when all were written, so an interrupted or failed run leaves the previous report
//     as it was.
// Library code: never prints (progress goes through a callback), throws modsim::error.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analysis.hpp"
#include "analysis/validation.hpp"
#include "core/version.hpp"
#include "sim/cost/calibrate.hpp"
#include "sim/des/comparison.hpp"
#include "sim/des/serving.hpp"
#include "sim/model/flops.hpp"
#include "sim/model/memory.hpp"
#include "sim/cost/predict.hpp"
#include "sim/model/rollup.hpp"
#include "sim/model/spec.hpp"
#include "sim/cost/sweep.hpp"

namespace modsim::reports {

using progress_fn = std::function<void(const std::string&)>;  // one line, no newline; may be empty

// --- Inputs ----------------------------------------------------------------------------------

// The serving workload simulated for the model and its dense baseline.
// The serving comparison (sim/des/comparison.hpp): one scenario for every face of modsim.
using serving_scenario = sim::des::serving_scenario;

// Which modsim made a report (core/version.hpp) and the files it was made from.
using report_build = build_info;
struct input_file {
  std::string path;    // as the report resolved it
  std::string sha256;  // of the file's bytes (core/sha256.hpp)
};

// Every file at `paths`, hashed, in order, each once. Throws modsim::error(bad_input) naming a
// file that cannot be read.
std::vector<input_file> hash_inputs(const std::vector<std::string>& paths);

struct report_input {
  report_build build = modsim::build();  // this binary's
  std::vector<input_file> inputs;        // models, baseline, hardware, calibration, workload, measurements
  std::vector<sim::model_spec> models;   // >= 1; models[0] is the subject of the report
  sim::hardware_spec hardware;
  sim::workload load;  // the forward pass the FLOP and time tables describe
  // The capacity × schedule sweep; empty = sim::default_space(models[0]).
  std::optional<sim::sweep_space> space;
  bool serving = true;
  serving_scenario scenario;
  // The measurements the predictions are checked against (source::none: the section says how
  // to add them, and `missing` why there are none).
  analysis::validation_request validation;
  std::string command_line;  // how the report was made (shown)
  unsigned threads = 0;      // sweep threads (0 = all)
  // The baseline every "vs dense" compares with (--baseline); empty = the model without routing.
  std::optional<sim::model_spec> baseline;
  // The sampling map (decode step ratio over batch × context) of the subject when it routes.
  bool sampling = true;
  analysis::sampling_request sampling_request;
  // Measured rows whose decode_step pairs (the subject and its baseline) are overlaid on the
  // sampling map (analysis::measured_cells); may be empty.
  std::vector<sim::measured_sample> decode_rows;
  // The Parallelism section (analysis/analysis.hpp parallel_request): a split, and with gpus > 0
  // every split of that many GPUs ranked (the section shows the fastest that fits when the split
  // is one GPU). Empty: the section says it was not asked for.
  std::optional<analysis::parallel_request> parallel;
  // How attention runs (--attention; analysis::configuration::attention): empty, the hardware's
  // default. Every prediction of the report (the validation section apart) prices it so.
  std::optional<attention_impl> attention;
  // The Training section's budget in model FLOPs (--flop-budget; analysis::training_request);
  // empty: the section answers per step and at equal FLOPs only.
  std::optional<double> flop_budget;
};

using analysis::validation_section;

// --- Results ---------------------------------------------------------------------------------

// FLOPs and predicted time of one op class, model vs its dense baseline (sim/model/rollup.hpp).
using class_row = sim::class_rollup;

struct model_result {
  sim::model_spec model;
  sim::flops_report flops;        // evaluate_flops(model, load)
  sim::flops_report dense_flops;  // evaluate_flops(dense_baseline(model), load)
  sim::prediction pred;           // predict(model, load, cost)
  // What the pass keeps in device memory on one GPU (analysis_result::memory; absent without hardware).
  std::optional<sim::memory_footprint> memory;
  std::vector<class_row> classes;  // in sim::op_classes() order, classes either model runs
};

using serving_run = sim::des::serving_run;
struct serving_section {
  serving_scenario scenario;      // with the rate actually used
  std::vector<serving_run> runs;  // [0] dense baseline, [1] the model
};

struct report_data {
  std::string generated;  // UTC ISO 8601
  report_build build;
  std::vector<input_file> inputs;
  std::string command_line;
  sim::hardware_spec hardware;
  std::string cost_label;
  sim::workload load;
  std::vector<model_result> models;        // [0] the subject
  sim::sweep_result sweep;                 // capacity × schedule × variant
  sim::sweep_result variants;              // dense, MoD, MoE, MoDE staged/integrated at the subject's routing
  std::vector<std::string> variant_notes;  // e.g. the routing used when the subject has none
  std::optional<serving_section> serving;
  std::string serving_missing;  // why there is no serving section
  std::optional<validation_section> validation;
  std::string validation_missing;
  std::string baseline_label;  // "dense-220m" or "<model> without routing"
  bool baseline_routing_removed = true;
  std::optional<analysis::sampling_map> sampling;
  std::string sampling_missing;  // why there is no sampling section
  // The decode routing the serving section used (the faster at its typical cell) and the other's step time.
  std::optional<analysis::serving_routing_choice> serving_routing;
  std::optional<analysis::parallel_section> parallel;
  std::string parallel_missing;  // why there is no parallelism section
  // The Training section (analysis/training.hpp): the subject's and its baseline's training step.
  std::optional<analysis::training_section> training;
  std::string training_missing;  // why there is none
};

// Computes the report. Throws modsim::error(bad_input) for no model or an invalid workload.
report_data build_report(const report_input& in, const progress_fn& progress = {});

// --- Rendering and writing -----------------------------------------------------------------

struct report_file {
  std::string name;  // relative to the output folder, '/'-separated ("tables/sweep.csv")
  std::string content;
};

struct render_options {
  bool charts = true;  // ignored (no charts) in a build without Qt
};

// True when this build draws charts (Qt 6 Charts + Svg were found).
bool charts_available();

// The section ids, in order, each an `id` in report.html and a heading in report.md:
// verdict, configuration, flops, sweep, variants, time, gap, training, serving, sampling, parallel,
// validation, models, method.
const std::vector<std::string>& section_ids();

// report.md, report.html, summary.json (reports/summary.hpp), tables/*.csv and (with charts)
// charts/*.svg. Charts need a
// QApplication (reports::ensure_application()) when charts_available().
std::vector<report_file> render_report(const report_data& data, const render_options& options = {},
                                       const progress_fn& progress = {});

struct write_options {
  // Called with each temporary file's path before it is written; it may throw to simulate a
  // failure (tests). May be empty.
  std::function<void(const std::string& tmp_path)> before_write;
  progress_fn progress;
};

// Writes `files` under `dir` (created when missing): all to temporary names first, then
// renamed into place; when any write fails the temporaries are removed and the files already
// in `dir` are untouched. Throws modsim::error(runtime) naming the file.
void write_report(const std::vector<report_file>& files, const std::string& dir, const write_options& options = {});

}  // namespace modsim::reports
