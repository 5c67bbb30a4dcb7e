// `modsim calibrate --measurements CSV... --hardware HW --out HW_CAL.json`: fits the cost
// model (sim/cost/cost.hpp, sim/cost/calibrate.hpp) to measured single ops (and the launch overhead to
// measured blocks) and writes a copy of the hardware file with a `calibration` block.
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "analysis/calibration.hpp"
#include "sim/cost/calibrate.hpp"
#include "cli/common.hpp"
#include "cli/printer.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/validation.hpp"
#include "core/error.hpp"

namespace modsim::cli {

namespace {

namespace json = boost::json;

const char* const k_usage =
    "usage: modsim calibrate --measurements CSV [CSV...] --hardware HW --out HW_CAL.json [--name NAME] [--cv K] "
    "[--format table|json|csv|markdown]\n"
    "\n"
    "GPU hardware: fits the kernel-sequence model (sim/cost/kernel_model.hpp) to every row: each op is\n"
    "the kernels the CUDA backend launches, each kernel a floor plus a wave-quantised compute /\n"
    "bandwidth bound with fitted efficiencies (never above the datasheet), a host queue and the\n"
    "gaps between kernels; isolated op rows (cold, alone), in-block op rows and whole blocks are\n"
    "three views of the same kernels and are fitted together.\n"
    "CPU hardware: per op and dtype, an efficiency\n"
    "curve over log(work) (work = the op's datasheet roofline time) and a fixed per-call cost,\n"
    "learnt from the single-op rows; the per-kernel launch overhead and the cost of refetching an\n"
    "op's bytes inside a layer from the block rows (block - sum of its predicted ops = kernels x\n"
    "launch + bytes x refetch). Writes a copy of HW with\n"
    "a `calibration` block (data, date, device, fitted parameters) to --out, through a\n"
    "temporary file, named --name or after --out (cpu-mine.json: \"cpu-mine\"), the name every output\n"
    "that uses it shows. Block rows used here are recorded and never scored by `modsim validate`;\n"
    "validate on blocks from another measurements file.\n"
    "Either way the calibration is then cross-validated (--cv K folds by shape, default 5; 0 = skip)\n"
    "and the expected error it found is recorded in the file, so that predictions made with it\n"
    "show their error band.\n"
    "--holdout CSV...: rows measured on the same machine to check the calibration, never fitted\n"
    "(shapes between the calibration's measured values, e.g. configs/grids/holdout-cpu.json). The\n"
    "calibration predicts their blocks and decode rows and records how it did; its bands inside the\n"
    "measured range (and between measured values as far out as those rows lay) then come from\n"
    "those errors instead of the cross-validation's, whose fits saw a fifth less. `modsim validate`\n"
    "still scores such rows (they were never fitted) and says that the band was set by them.\n"
    "Training rows (block_dense_train, block_mod_train: one layer's forward + backward) fit the backward:\n"
    "each row's measured time minus its calibrated forward, recomputation and launches = the sum over its\n"
    "backward ops of factor(class) x the rule (the forward's calibrated efficiency applied to the backward's\n"
    "FLOPs and bytes), one factor each for GEMMs, attention and memory-bound ops (JSON \"backward\"), checked\n"
    "by shape (5 folds) and on the training rows of --holdout; predict --mode train and validate use it.\n"
    "adamw rows (one AdamW step over one layer's parameters; --preset train measures them) fit the optimizer\n"
    "step: time = bytes (28 a parameter) / a streaming rate, least squares on the seconds (JSON \"optimizer\":\n"
    "bytes_per_s), checked by shape and on the adamw rows of --holdout; predict --mode train prices the\n"
    "model's AdamW step at that rate (without them, on the datasheet roofline), and validate scores adamw rows.\n"
    "A warning names each axis (d_model, d_ff, n_heads, seq_len, batch) along which the blocks of the\n"
    "measurements have one value: predictions will vary it, and no row says how the model does there\n"
    "(JSON \"single_value_axes\").";

// The kernel-sequence model's parameters, one row per kernel class.
void kernel_model_output(const sim::calibration& c, output& o) {
  const sim::kernel_params& p = *c.kernels;
  table t;
  t.title = "kernel-sequence model (per kernel class; efficiencies are shares of the datasheet peaks)";
  t.columns = {"kernel", "floor us", "compute eff", "bandwidth eff", "per item ns"};
  t.csv = true;
  for (int i = 0; i < sim::kernel_kind_count; ++i) {
    const auto k = static_cast<sim::kernel_kind>(i);
    const sim::kernel_class_params& cp = p.of(k);
    const bool gemm = k == sim::kernel_kind::gemm || k == sim::kernel_kind::batched_gemm;
    const bool serial = k == sim::kernel_kind::topk || k == sim::kernel_kind::rank || k == sim::kernel_kind::choice;
    t.rows.push_back({sim::to_string(k), number(cp.floor_s * 1e6, "{:.2f}"),
                      gemm ? number(cp.compute_efficiency, "{:.3f}") : cell("-", ""),
                      serial ? cell("-", "") : number(cp.bandwidth_efficiency, "{:.3f}"),
                      serial ? number(cp.per_item_s * 1e9, "{:.3f}") : cell("-", "")});
  }
  o.tables.push_back(std::move(t));
  o.tail.push_back(fmt::format(
      "host enqueue {:.2f} us/kernel, gap between kernels {:.2f} us, event overhead {:.2f} us per timed region, "
      "{:.0f}% of a kernel's inputs warm in L2 inside a sequence",
      p.host_s * 1e6, p.gap_s * 1e6, p.event_s * 1e6, p.warm_fraction * 100));
}

// The per-op efficiency curves and the launch / refetch fit (CPU hardware).
void curves_output(const sim::calibration& c, output& o) {
  table t;
  t.title = "per op: time = fixed + roofline / efficiency(log work); efficiency = roofline share reached";
  t.columns = {"op", "dtype", "samples", "fixed us", "eff (small)", "eff (large)", "rms err"};
  t.left_columns = 2;
  t.csv = true;
  std::vector<std::string> above_one;
  for (const auto& cv : c.curves) {
    auto eff = [](double g) { return g > 0 ? number(1.0 / g, "{:.3f}") : cell("inf"); };
    t.rows.push_back({std::string(modsim::to_string(cv.op)), sim::to_string(cv.type), integer(cv.samples),
                      number(cv.fixed_s * 1e6, "{:.2f}"), eff(cv.inv_efficiency.front()), eff(cv.inv_efficiency.back()),
                      number(100 * cv.rms_rel_error, "{:.1f}%")});
    double best = 0;
    for (double g : cv.inv_efficiency)
      if (g > 0) best = std::max(best, 1.0 / g);
    if (best > 1.0) above_one.push_back(fmt::format("{} {:.2f}", modsim::to_string(cv.op), best));
  }
  o.tables.push_back(std::move(t));
  std::string few;
  for (const auto& cv : c.curves) {
    if (cv.rows_factor.empty()) continue;
    std::string at;
    for (std::size_t i = 0; i + 1 < cv.rows_factor.size(); ++i)
      at +=
          fmt::format("{}×{:.3f} at {:g} rows", at.empty() ? "" : ", ", cv.rows_factor[i], std::exp2(cv.log2_rows[i]));
    few += fmt::format("{}{} {}", few.empty() ? "" : "; ", modsim::to_string(cv.op), at);
  }
  if (!few.empty())
    o.tail.push_back(fmt::format("few-row GEMMs (below {:g} rows the library runs other kernels): {}",
                                 sim::k_rows_factor_below, few));
  // How well a stand-in's curve times an op measured beside it: what a prediction of an op
  // never measured adds to its band.
  std::string checks;
  for (const sim::stand_in_check& x : c.stand_in_checks)
    checks += fmt::format("{}{} as {} median {:.1f}%, p90 {:.1f}% ({} rows)", checks.empty() ? "" : "; ",
                          modsim::to_string(x.op), modsim::to_string(x.as), x.median_abs_pct_error, x.p90_abs_pct_error,
                          x.rows);
  if (!checks.empty())
    o.tail.push_back(
        "stand-in curves checked on ops measured beside them (a prediction that times an op never "
        "measured with one adds the op's share of the time x this p90 to its band): " +
        checks);
  // The rows left over past a group: one figure for all the row GEMMs of a dtype.
  std::map<std::string, std::pair<std::string, const sim::efficiency_curve*>> leftover;  // dtype -> (ops, a curve)
  for (const auto& cv : c.curves)
    if (cv.leftover_rows.size() == sim::k_row_group - 1) {
      auto& [ops, curve] = leftover[std::string(sim::to_string(cv.type))];
      ops += (ops.empty() ? "" : ", ") + std::string(modsim::to_string(cv.op));
      curve = &cv;
    }
  for (const auto& [type, at] : leftover)
    o.tail.push_back(fmt::format(
        "rows left over ({} {}; fitted on neighbouring row counts): a GEMM of {}q + 1, + 2 or + 3 rows costs as much "
        "as {:.1f}, {:.1f} or {:.1f} more rows would",
        type, at.first, sim::k_row_group, at.second->leftover_rows[0], at.second->leftover_rows[1],
        at.second->leftover_rows[2]));
  if (!above_one.empty()) {
    std::string list;
    for (const auto& a : above_one) list += (list.empty() ? "" : ", ") + a;
    o.tail.push_back(fmt::format(
        "note: efficiencies above 1 ({}): these ops ran faster than the hardware file's roofline, whose bandwidth "
        "({:.1f} GB/s) or peaks this machine exceeds for them (caches hold their bytes, or the datasheet figure is "
        "low); the curves absorb it, but the roofline is not this machine's ceiling",
        list, c.memory_bandwidth_bytes_s / 1e9));
  }
  o.tail.push_back(fmt::format(
      "launch overhead: {:.2f} us per kernel; inside a layer ops refetch their bytes at {} ({})", c.launch_s * 1e6,
      c.in_layer_s_per_byte > 0 ? fmt::format("{:.1f} GB/s", 1e-9 / c.in_layer_s_per_byte) : std::string("no cost"),
      c.launch_source));
  if (!c.block_keys.empty())
    o.tail.push_back(
        fmt::format("{} block rows were used for the launch fit; modsim validate skips them", c.block_keys.size()));
}

// The backward fit on the training rows (sim::backward_fit), one line.
std::string backward_line(const sim::backward_fit& b) {
  std::string line = fmt::format(
      "backward fitted on {} training rows ({}): the rule x {:.3f} for GEMMs, {:.3f} for attention, {:.3f} for "
      "memory-bound ops (3 parameters), in sample rms {:.1f}%",
      b.rows, sim::to_string(b.type), b.factor_of(sim::backward_class::gemm),
      b.factor_of(sim::backward_class::attention), b.factor_of(sim::backward_class::memory), 100 * b.rms_rel_error);
  if (b.cv_folds > 0)
    line += fmt::format("; {}-fold by shape median {:.1f}%, p90 {:.1f}%", b.cv_folds, b.cv_median_abs_pct_error,
                        b.cv_p90_abs_pct_error);
  if (b.holdout_rows > 0)
    line += fmt::format("; held-out training rows median {:.1f}%, p90 {:.1f}% ({} rows)",
                        b.holdout_median_abs_pct_error, b.holdout_p90_abs_pct_error, b.holdout_rows);
  return line;
}

// The optimizer fit on the adamw rows (sim::optimizer_fit), one line.
std::string optimizer_line(const sim::optimizer_fit& f) {
  std::string line = fmt::format(
      "optimizer step fitted on {} adamw rows ({}): {:.1f} GB/s over its 28 bytes a parameter (1 parameter), in "
      "sample rms {:.1f}%",
      f.rows, sim::to_string(f.type), f.bytes_per_s() / 1e9, 100 * f.rms_rel_error);
  if (f.cv_folds > 0)
    line += fmt::format("; {}-fold by shape median {:.1f}%, p90 {:.1f}%", f.cv_folds, f.cv_median_abs_pct_error,
                        f.cv_p90_abs_pct_error);
  if (f.holdout_rows > 0)
    line += fmt::format("; held-out adamw rows median {:.1f}%, p90 {:.1f}% ({} rows)", f.holdout_median_abs_pct_error,
                        f.holdout_p90_abs_pct_error, f.holdout_rows);
  return line;
}

output calibration_output(const sim::calibration& c, const std::string& out, const analysis::calibrated& fitted) {
  output o;
  json::object root;
  root["out"] = out;
  root["calibration"] = json::parse(sim::calibration_to_json(c));
  o.json = std::move(root);
  o.head.push_back(fmt::format("calibrated {} from {} file(s), device: {}", out, c.sources.size(), c.device));
  for (const auto& s : c.sources) o.head.push_back(fmt::format("  {}: {} rows, {} used", s.file, s.rows, s.used_rows));
  if (fitted.speed.any())
    o.head.push_back("machine speed: " + fitted.speed.text() +
                     ", their median; recorded, so that validate holds what it scores to it (--as-measured: fit as "
                     "measured)");
  if (fitted.slow.limit > 0) o.head.push_back("slow spells: " + fitted.slow.text() + " (--leave-out-slower)");
  if (fitted.holdout_speed.any()) o.head.push_back("held-out rows: " + fitted.holdout_speed.text());
  if (c.cross_validation)
    o.head.push_back(fmt::format(
        "expected error ({}-fold cross-validation by shape): blocks median {:.1f}%, p90 {:.1f}% ({} blocks); ops "
        "median {:.1f}%, p90 {:.1f}% ({} ops)",
        c.cross_validation->folds, c.cross_validation->median_abs_pct_error, c.cross_validation->p90_abs_pct_error,
        c.cross_validation->blocks, c.cross_validation->op_median_abs_pct_error,
        c.cross_validation->op_p90_abs_pct_error, c.cross_validation->ops));
  if (c.holdout) {
    const sim::holdout_summary& h = *c.holdout;
    std::string files;
    for (const auto& f : h.files) files += (files.empty() ? "" : ", ") + f;
    std::string line = fmt::format("checked on held-out rows ({}): ", files);
    if (h.blocks > 0)
      line += fmt::format("blocks median {:.1f}%, p90 {:.1f}% ({} blocks)", h.median_abs_pct_error, h.p90_abs_pct_error,
                          h.blocks);
    if (h.decode_rows > 0)
      line += fmt::format("{}decode rows median {:.1f}%, p90 {:.1f}% ({} rows)", h.blocks > 0 ? "; " : "",
                          h.decode_median_abs_pct_error, h.decode_p90_abs_pct_error, h.decode_rows);
    o.head.push_back(line + "; the bands inside the measured range come from these");
  }
  if (c.backward) o.head.push_back(backward_line(*c.backward));
  if (c.optimizer) o.head.push_back(optimizer_line(*c.optimizer));
  if (c.kernels)
    kernel_model_output(c, o);
  else
    curves_output(c, o);
  return o;
}

// The axes a prediction varies along that the rows' blocks measured at one value only: a
// prediction at another value of such an axis is an extrapolation the calibration never saw
// (its band says so, sim::error_band::outside). One line per axis, e.g. "n_heads: every block
// has 8 (a prediction at another head count is outside what was measured)".
std::vector<std::string> single_value_axes(const std::vector<sim::measured_sample>& rows) {
  struct axis {
    const char* name;
    const char* what;
    double (*value)(const sim::measured_sample&);
  };
  static const axis axes[] = {
      {"d_model", "width", [](const sim::measured_sample& r) { return double(r.d_model); }},
      {"d_ff", "FFN size", [](const sim::measured_sample& r) { return double(r.d_ff); }},
      {"n_heads", "head count", [](const sim::measured_sample& r) { return double(r.n_heads); }},
      {"seq_len", "sequence length", [](const sim::measured_sample& r) { return double(r.seq_len); }},
      {"batch", "batch", [](const sim::measured_sample& r) { return double(r.batch); }},
  };
  std::vector<std::string> out;
  std::vector<const sim::measured_sample*> blocks;
  for (const auto& r : rows)
    if (r.is_block()) blocks.push_back(&r);
  if (blocks.empty()) return out;
  for (const axis& a : axes) {
    std::vector<double> seen;
    for (const auto* r : blocks)
      if (std::find(seen.begin(), seen.end(), a.value(*r)) == seen.end()) seen.push_back(a.value(*r));
    if (seen.size() == 1)
      out.push_back(
          fmt::format("{}: every block has {:g} (a prediction at another {} is outside what was measured; "
                      "add a second value to the grid)",
                      a.name, seen.front(), a.what));
  }
  return out;
}

}  // namespace

int cmd_calibrate(const std::vector<std::string>& args) {
  po::options_description options("modsim calibrate options");
  options.add_options()("measurements", po::value<std::vector<std::string>>()->multitoken()->required(),
                        "measurements CSV file(s) from modsim profile")(
      "hardware", po::value<std::string>()->required(), "hardware JSON (or a shipped name: cpu, h100-sxm, h200)")(
      "out", po::value<std::string>()->required(), "calibrated hardware JSON to write (keep the device in its name)")(
      "name", po::value<std::string>(),
      "the calibrated hardware's name, shown by every output that uses it (default: the stem of --out, "
      "cpu-mine.json -> cpu-mine)")(
      "no-launch-fit",
      "keep the hardware file's kernel_launch_s (no in-layer refetch cost) instead of fitting on block rows")(
      "launch-only", "fit launch_s on block rows but no in-layer refetch cost (median per-kernel gap)")(
      "no-rows-factor", "CPU: no row-count factor for GEMMs of fewer than 128 rows (the work curve alone)")(
      "cv", po::value<int>()->default_value(5), "cross-validation folds (by shape) for the expected error; 0 = none")(
      "holdout", po::value<std::vector<std::string>>()->multitoken(),
      "measurements CSV file(s) of held-out shapes: the calibration is checked on them and its bands use the "
      "result")("as-measured",
                "fit rows as they were measured; by default rows that carry the machine's speed (anchor_s, "
                "recorded by `modsim profile`) are first held to their median anchor, so that a slow spell of a "
                "shared machine is not fitted as the model's, and that speed is recorded for validate")(
      "leave-out-slower", po::value<double>()->default_value((sim::k_slow_limit - 1) * 100),
      "PCT: rows measured while the machine ran more than PCT % slower than at the fastest quarter of the rows "
      "(by anchor) are left out of the fit, a spell too deep for the hold to take out (held-out rows never are); "
      "0 keeps every row")("format", po::value<std::string>()->default_value("table"),
                           "summary on stdout: table | json | csv (the fitted parameters) | markdown");
  po::positional_options_description positional;
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;
  const output_format format = parse_format(vm["format"].as<std::string>());

  const std::string hw_path = sim::resolve_config(vm["hardware"].as<std::string>(), "hardware");
  const sim::hardware_spec hw = sim::load_hardware(hw_path);
  const std::string out = vm["out"].as<std::string>();
  const std::string name = vm.count("name") ? vm["name"].as<std::string>() : std::string();
  if (vm.count("name") && name.find_first_not_of(" \t") == std::string::npos)
    throw input_error("", "--name", "must not be empty");

  const std::vector<std::string> files = vm["measurements"].as<std::vector<std::string>>();
  const std::vector<std::string> holdout =
      vm.count("holdout") ? vm["holdout"].as<std::vector<std::string>>() : std::vector<std::string>{};
  namespace fs = std::filesystem;
  const auto same_file = [](const std::string& a, const std::string& b) {
    std::error_code ec;
    return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
  };
  for (const std::string& file : files) {
    if (same_file(out, file)) throw input_error(out, "--out", "is one of the measurements files");
    for (const std::string& h : holdout)
      if (same_file(h, file))
        throw input_error(h, "--holdout", "is also a --measurements file (a holdout is never fitted)");
  }
  for (const std::string& h : holdout)
    if (same_file(out, h)) throw input_error(out, "--out", "is one of the --holdout files");
  analysis::calibrate_options co;
  co.fit.launch_from_blocks = vm.count("no-launch-fit") == 0;
  co.fit.fit_in_layer_bytes = vm.count("launch-only") == 0;
  co.fit.rows_factor = vm.count("no-rows-factor") == 0;
  co.folds = vm["cv"].as<int>();
  if (co.folds == 1 || co.folds < 0) throw input_error("", "--cv", "must be 0 (none) or >= 2");
  co.coverage = true;
  co.cross_validation_optional = true;
  co.progress = [](const std::string& line) { std::cerr << "modsim calibrate: " << line << "\n"; };
  co.hold_speed = vm.count("as-measured") == 0;
  const double slower = vm["leave-out-slower"].as<double>();
  if (!(slower >= 0) || !std::isfinite(slower))
    throw input_error("", "--leave-out-slower", "must be a percentage >= 0 (0: keep every row)");
  co.slow_limit = slower > 0 ? 1 + slower / 100 : 0;
  if (!holdout.empty()) {
    if (co.folds == 0) throw input_error("", "--holdout", "needs a cross-validation (--cv 0 records no band to set)");
    co.holdout = analysis::read_measured_rows(holdout);
  }
  const analysis::measured_rows rows = analysis::read_measured_rows(files);
  const std::vector<std::string> single = single_value_axes(rows.points);
  analysis::calibrated fitted = analysis::calibrate_from(hw, rows, co);
  if (!fitted.no_cross_validation.empty())
    std::cerr << "modsim calibrate: no cross-validation: " << fitted.no_cross_validation << "\n";
  const sim::calibration& cal = fitted.calibration;
  sim::write_calibrated_hardware(hw_path, cal, out, name);
  // Read it back: what we wrote must load (a check of the writer and the parser together).
  const sim::cost_model check(sim::load_hardware(out));
  (void)check;

  output o = calibration_output(cal, out, fitted);
  json::array axes;
  for (const std::string& line : single) {
    axes.emplace_back(line.substr(0, line.find(':')));
    o.head.push_back("warning: one value of " + line);
  }
  o.json.as_object()["single_value_axes"] = std::move(axes);
  print(o, format, std::cout);
  return exit_ok;
}

}  // namespace modsim::cli
