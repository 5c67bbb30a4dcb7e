// `modsim report [MODEL...] --out DIR`: the cost report (reports/report.hpp) — Markdown, a
// self-contained HTML page with the charts inline, the tables as CSV and each chart as SVG.
// With no arguments: the embedded defaults (the 220M MoD model vs its dense baseline on the
// H100 datasheet numbers, plus a quick CPU profile of this machine for the validation section).
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "analysis/calibration.hpp"
#include "profiler/grid.hpp"
#include "reports/report.hpp"
#include "cli/common.hpp"
#include "cli/cpu_holdout.hpp"
#include "sim/model/config.hpp"
#include "core/error.hpp"
#if MODSIM_HAVE_QT
#include "reports/charts.hpp"
#endif

namespace modsim::cli {
namespace {

namespace fs = std::filesystem;

const char* const k_usage =
    "usage: modsim report [MODEL...] [--hardware HW] [--measurements CSV] [--calibration HW_CAL] [--out DIR]\n"
    "                     [--batch B] [--seq S] [--mode forward|train] [--dtype T] [--no-serving] [--requests N]\n"
    "                     [--rate R] [--no-profile] [--fresh-profile] [--no-charts] [--threads N]\n"
    "                     [--baseline MODEL] [--no-sampling] [--gpus G] [--tp N --pp N --dp N --ep N]\n"
    "                     [--micro-batches M] [--no-parallel] [--attention fused|unfused] [--flop-budget F]\n"
    "\n"
    "The cost report of MODEL (the first one; others are compared in a table) on HW: FLOPs per\n"
    "forward pass vs dense by op class, the capacity x schedule sweep with its Pareto front, MoDE\n"
    "staged/integrated vs MoE vs dense, where the FLOP-to-time gap goes, serving (TTFT, TPOT,\n"
    "throughput, KV cache) dense vs MoD from the simulator, decoding with the faster routing (sync or\n"
    "pad) at its typical cell, the sampling map (MoD / baseline decode step time over batch x context,\n"
    "as `modsim sampling`: where MoD reaches 1.5x and why), the step over several GPUs (every split of\n"
    "--gpus G ranked, default 8 on GPU hardware with an interconnect, as modsim predict --gpus), and\n"
    "predicted vs measured blocks. Every report has a Training section: one training step of MODEL and its\n"
    "baseline at the report's batch and sequence (time, tokens/s, MFU, memory per GPU), the wall-clock MODEL\n"
    "takes for its baseline's model FLOPs and where the difference comes from, and with --flop-budget F\n"
    "(model FLOPs, e.g. the paper's 6e18) the steps, tokens and wall-clock of each.\n"
    "--baseline MODEL compares with a matched-quality dense model instead of MODEL without routing.\n"
    "Writes DIR/report.md, DIR/report.html (self-contained), DIR/summary.json (the headline figures under\n"
    "stable keys, the modsim version and commit, the inputs' SHA-256; no date: the same inputs give the same\n"
    "bytes; `modsim compare` gates on it), DIR/tables/*.csv, DIR/charts/*.svg;\n"
    "every file goes to a temporary name first, so a failed run leaves the previous report intact.\n"
    "\n"
    "With no MODEL: mod-220m on h100-sxm-calibrated (the cost model calibrated on the committed H100\n"
    "measurements). On a GPU the predicted-vs-measured section cross-validates the calibration on the\n"
    "measurements behind it (5 folds by shape; for an uncalibrated GPU file, those of NAME-calibrated.json\n"
    "score its datasheet roofline). On a CPU with no MODEL: the held-out check on this CPU: a quick\n"
    "profile (DIR/measurements-cpu.csv) calibrates it, the blocks of configs/grids/holdout-cpu.json\n"
    "(DIR/measurements-cpu-holdout.csv, shapes the calibration never saw) score it; both files are reused\n"
    "on the next run on the same CPU unless --fresh-profile; --no-profile skips them. --measurements CSV\n"
    "validates those rows instead: with --calibration HW_CAL (a calibrated hardware file), HW_CAL scored on\n"
    "them; without it, on an uncalibrated HW, the calibration method cross-validated on them (5 folds by\n"
    "shape, as `modsim validate --cv 5`: no row predicted by a fit that saw its shape), and the report\n"
    "says what was held out.";

std::atomic<bool> g_stop{false};
extern "C" void on_report_sigint(int) { g_stop.store(true); }

std::string join_args(const std::vector<std::string>& args) {
  std::string t = "modsim report";
  for (const auto& a : args) t += " " + a;
  return t;
}

}  // namespace

int cmd_report(const std::vector<std::string>& args) {
  po::options_description options("modsim report options");
  options.add_options()("models", po::value<std::vector<std::string>>()->multitoken(),
                        "model JSON(s), HF config.json or shipped names")(
      "hardware", po::value<std::string>()->default_value("h100-sxm-calibrated"), "hardware JSON or shipped name")(
      "measurements", po::value<std::string>(), "measurements CSV (modsim profile) for the validation section")(
      "calibration", po::value<std::string>(),
      "calibrated hardware file for the measurements (default: cross-validate the calibration method on them)")(
      "out", po::value<std::string>()->default_value("report"), "output folder")("no-serving", po::bool_switch(),
                                                                                 "skip the serving simulation")(
      "requests", po::value<std::int64_t>()->default_value(300), "serving: requests simulated")(
      "rate", po::value<double>()->default_value(0.0), "serving: arrivals per second (0 = 70% of what dense sustains)")(
      "seed", po::value<std::uint64_t>()->default_value(1), "serving: seed")(
      "no-profile", po::bool_switch(), "defaults only: no CPU profile (no validation section)")(
      "fresh-profile", po::bool_switch(), "defaults only: measure again even when DIR/measurements-cpu.csv exists")(
      "no-charts", po::bool_switch(), "tables only")("no-sampling", po::bool_switch(), "skip the sampling map")(
      "threads", po::value<unsigned>()->default_value(0), "sweep threads (0 = all hardware threads)")(
      "no-parallel", po::bool_switch(),
      "skip the parallelism section (default: every split of --gpus 8 on GPU hardware with an interconnect)");
  add_parallel_options(options);
  add_workload_options(options);
  add_routing_overrides(options);
  add_baseline_option(options);
  add_attention_option(options);
  add_flop_budget_option(options);
  po::positional_options_description positional;
  positional.add("models", -1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;

  const std::string out_dir = vm["out"].as<std::string>();
  const bool defaults = !vm.count("models");
  std::vector<std::string> model_names =
      defaults ? std::vector<std::string>{"mod-220m"} : vm["models"].as<std::vector<std::string>>();
  reports::report_input in;
  for (const auto& name : model_names) in.models.push_back(load_model_arg(name, vm));
  const std::string hw_path = sim::resolve_config(vm["hardware"].as<std::string>(), "hardware");
  in.hardware = sim::load_hardware(hw_path);
  in.load = workload_from(vm, sim::default_dtype(in.hardware), /*trains_anyway=*/true);
  if (in.load.run == sim::run_mode::decode)
    throw input_error("", "--mode", "the report describes forward or train passes (serving covers decode)");
  in.serving = !vm["no-serving"].as<bool>();
  in.sampling = !vm["no-sampling"].as<bool>();
  in.baseline = baseline_from(vm);
  in.attention = attention_from(vm);
  in.flop_budget = flop_budget_from(vm);
  in.scenario.requests = vm["requests"].as<std::int64_t>();
  if (in.scenario.requests < 1) throw input_error("", "--requests", "must be >= 1");
  in.scenario.rate_per_s = vm["rate"].as<double>();
  if (!(in.scenario.rate_per_s >= 0)) throw input_error("", "--rate", "must be >= 0");
  in.scenario.seed = vm["seed"].as<std::uint64_t>();
  in.threads = vm["threads"].as<unsigned>();
  if (!vm["no-parallel"].as<bool>())
    in.parallel = parallel_from(vm, sim::is_gpu(in.hardware) && in.hardware.interconnect ? 8 : 0);
  in.command_line = join_args(args);
  // The files the report is made from, for summary.json (path and SHA-256 of each).
  std::vector<std::string> inputs;
  for (const auto& m : in.models) inputs.push_back(m.source_file);
  if (vm.count("baseline")) inputs.push_back(in.baseline->source_file);
  inputs.push_back(hw_path);
  if (vm.count("calibration")) inputs.push_back(sim::resolve_config(vm["calibration"].as<std::string>(), "hardware"));
  if (vm.count("workload")) inputs.push_back(sim::resolve_config(vm["workload"].as<std::string>(), "workloads"));
  if (vm.count("measurements")) inputs.push_back(vm["measurements"].as<std::string>());

  // Validation: given measurements, or — for the defaults on a CPU — the held-out split of
  // scripts/validate-cpu.sh: calibrate on a quick CPU profile (single ops and blocks), score
  // the blocks of configs/grids/holdout-cpu.json, shapes the calibration never saw; else the
  // measurements behind the hardware's calibration.
  analysis::validation_request& val = in.validation;
  const bool cpu_profile = defaults && !vm["no-profile"].as<bool>() && !sim::is_gpu(in.hardware);
  if (vm.count("measurements")) {
    val.from = analysis::validation_request::source::measurements;
    val.label = vm["measurements"].as<std::string>();
    val.points = analysis::read_measured_rows({val.label}).points;
    in.decode_rows = val.points;  // decode_step pairs are overlaid on the sampling map
    if (val.points.empty()) throw input_error(val.label, "", "no measurement rows");
    if (vm.count("calibration")) {
      val.hardware = sim::load_hardware(sim::resolve_config(vm["calibration"].as<std::string>(), "hardware"));
      val.calibrate = false;
    } else if (val.points.front().backend == backend_kind::cpu) {
      val.hardware = sim::load_hardware(sim::resolve_config("cpu", "hardware"));
    }
  } else if (cpu_profile) {
    cpu_holdout_check check;
    check.dir = out_dir;
    check.fresh = vm["fresh-profile"].as<bool>();
    check.calibration_grid = profiler::preset("quick", backend_kind::cpu);
    check.holdout_grid = profiler::load_grid(sim::resolve_config("holdout-cpu", "grids"));
    check.cpu = sim::load_hardware(sim::resolve_config("cpu", "hardware"));
    check.stop = &g_stop;
    check.progress = [](const std::string& line) { std::cerr << "report: " << line << "\n"; };
    g_stop.store(false);
    auto previous = std::signal(SIGINT, on_report_sigint);
    std::optional<analysis::validation_request> held_out = cpu_holdout_validation(check);
    std::signal(SIGINT, previous);
    if (!held_out) {
      std::cerr << "report: interrupted while profiling; the previous report is untouched, run again to resume\n";
      return exit_interrupted;
    }
    val = std::move(*held_out);
    inputs.push_back((fs::path(out_dir) / "measurements-cpu.csv").string());
    inputs.push_back((fs::path(out_dir) / "measurements-cpu-holdout.csv").string());
  } else {
    val.from = analysis::validation_request::source::hardware;
    val.missing =
        defaults ? "skipped (--no-profile)" : "no measurements given (add --measurements CSV from `modsim profile`)";
  }
  if (val.from == analysis::validation_request::source::hardware)  // the measurements behind its calibration
    for (const std::string& f : analysis::calibration_measurements(in.hardware)) inputs.push_back(f);
  if (val.from != analysis::validation_request::source::none)
    std::cerr << "report: validating the cost model on "
              << (val.label.empty() ? "the measurements behind " + in.hardware.name : val.label) << "\n";

  in.inputs = reports::hash_inputs(inputs);

  auto progress = [](const std::string& line) { std::cerr << line << "\n"; };
  const reports::report_data data = reports::build_report(in, progress);
  reports::render_options ro;
  ro.charts = !vm["no-charts"].as<bool>();
#if MODSIM_HAVE_QT
  if (ro.charts && !reports::ensure_application())
    throw runtime_error("cannot start Qt (offscreen) to draw the charts");
#endif
  const std::vector<reports::report_file> files = reports::render_report(data, ro, progress);
  reports::write_options wo;
  reports::write_report(files, out_dir, wo);
  std::size_t charts = 0;
  for (const auto& f : files) charts += f.name.rfind("charts/", 0) == 0;
  std::cerr << fmt::format("report: {} files ({} charts) written to {}\n", files.size(), charts, out_dir);
  std::cout << (fs::path(out_dir) / "report.html").string() << "\n"
            << (fs::path(out_dir) / "report.md").string() << "\n";
  return exit_ok;
}

}  // namespace modsim::cli
