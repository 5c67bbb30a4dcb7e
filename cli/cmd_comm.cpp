// `modsim comm`: the time of one collective over G GPUs (sim/parallel/comm.hpp), and its calibration
// from nccl-tests' output (sim/parallel/nccl_tests.hpp, sim/parallel/comm_calibrate.hpp):
//   modsim comm COLLECTIVE --bytes N --gpus G --hardware HW [--algorithm A] [--format F]
//   modsim comm calibrate --hardware HW --out NEW.json FILE...
//   modsim comm check --hardware HW FILE...
#include <fmt/format.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "cli/printer.hpp"
#include "core/error.hpp"
#include "sim/cost/calibrate.hpp"
#include "sim/parallel/comm.hpp"
#include "sim/parallel/comm_calibrate.hpp"
#include "sim/model/config.hpp"
#include "sim/parallel/nccl_tests.hpp"

namespace modsim::cli {
namespace {

namespace json = boost::json;

const char* const k_usage =
    "usage: modsim comm COLLECTIVE --bytes N --gpus G --hardware HW [--algorithm auto|ring|tree|direct|fitted]\n"
    "                              [--format table|json|csv|markdown]\n"
    "       modsim comm calibrate --hardware HW --out NEW.json [--collective C] [--gpus G] [--min-bytes N]\n"
    "                             [--max-bytes N] [--every K] [--offset I] [--floor-us US] [--merge] FILE...\n"
    "       modsim comm check --hardware HW [--collective C] [--gpus G] [--min-bytes N] [--max-bytes N]\n"
    "                         [--every K] [--offset I] [--max-error PCT] FILE...\n"
    "\n"
    "The time of one collective of N bytes per GPU over G GPUs on HW's interconnect.\n"
    "COLLECTIVE: all_reduce, all_gather, reduce_scatter, all_to_all, send_recv. N is nccl-tests'\n"
    "`size`: all_reduce the buffer on each GPU; all_gather the gathered output on each GPU;\n"
    "reduce_scatter the input on each GPU; all_to_all the send buffer of each GPU; send_recv what\n"
    "each GPU sends to its neighbour. N takes binary suffixes as nccl-tests' -b/-e: 64K = 65536,\n"
    "1M = 1048576, 8G = 8589934592. algbw = N / time, busbw = algbw x nccl-tests' factor\n"
    "(2(G-1)/G all_reduce, (G-1)/G all_gather, reduce_scatter, all_to_all, 1 send_recv).\n"
    "Algorithms: ring and tree (double binary tree; hierarchical across nodes) for all_reduce,\n"
    "ring for all_gather and reduce_scatter, direct for all_to_all and send_recv, alpha-beta\n"
    "costs per link class (intra-node when G <= interconnect.gpus_per_node); auto takes the\n"
    "fastest, or the line fitted to nccl-tests (`fitted`) when HW has interconnect.calibration\n"
    "(h100-sxm and h200 ship fits to published one-node H100 runs: all_reduce at 2, 4 and 8\n"
    "GPUs, all_gather and reduce_scatter at 4). Without a fit for the collective at G, auto\n"
    "derives one: from its own fit at the nearest GPU count, else from another collective's\n"
    "(all_to_all and send_recv from all_gather): the floor as measured there, the bus bandwidth\n"
    "carried by the busbw factor; JSON source says fitted, derived or analytic (floor_source,\n"
    "bandwidth_source per term). The output says the fit's error on its nccl-tests rows below\n"
    "1 MiB (JSON error_below_1mib) and from 1 MiB up, and when N is outside the sizes the fit was\n"
    "made on (a note; JSON outside_fitted_range).\n"
    "\n"
    "calibrate: fits time = alpha + N x busbw factor / bus bandwidth to the out-of-place times of\n"
    "each nccl-tests output FILE (all_reduce_perf, all_gather_perf, reduce_scatter_perf,\n"
    "alltoall_perf, sendrecv_perf; one run per file, the collective from its '# Collective test\n"
    "starting' line, else from the file name, else --collective) and writes HW with\n"
    "interconnect.calibration to --out. With 8 or more sizes the bus bandwidth may saturate\n"
    "instead: it rises between two of the sizes, straight in log size, when that halves the\n"
    "squared error. --floor-us fixes alpha (for a run without small sizes, whose rows cannot\n"
    "show the floor; the fit records floor_source given) and fits the bandwidth alone. --merge\n"
    "keeps HW's own fits (one of the same collective, link and GPU count is replaced).\n"
    "check: predicted vs measured for each row of FILE, and the median error; exit 1 above\n"
    "--max-error.";

sim::comm_fit_options fit_options_from(const po::variables_map& vm) {
  sim::comm_fit_options o;
  if (vm.count("collective")) {
    const std::string c = vm["collective"].as<std::string>();
    o.op = sim::find_collective(c);
    if (!o.op)
      throw input_error("", "--collective",
                        "unknown collective '" + c + "' (expected " + sim::collective_names() + ")");
  }
  if (vm.count("gpus")) {
    o.gpus = vm["gpus"].as<int>();
    if (o.gpus < 2) throw input_error("", "--gpus", "must be >= 2");
  }
  if (vm.count("min-bytes")) o.min_bytes = sim::parse_bytes(vm["min-bytes"].as<std::string>(), "--min-bytes");
  if (vm.count("max-bytes")) o.max_bytes = sim::parse_bytes(vm["max-bytes"].as<std::string>(), "--max-bytes");
  o.every = vm["every"].as<int>();
  o.offset = vm["offset"].as<int>();
  if (o.every < 1) throw input_error("", "--every", "must be >= 1");
  if (o.offset < 0 || o.offset >= o.every) throw input_error("", "--offset", "must be in [0, --every)");
  if (vm.count("floor-us")) {
    const double us = vm["floor-us"].as<double>();
    if (!(us > 0) || !std::isfinite(us))
      throw input_error("", "--floor-us", "must be a positive number of microseconds");
    o.floor_s = us * 1e-6;
  }
  return o;
}

void add_file_options(po::options_description& options) {
  options.add_options()("files", po::value<std::vector<std::string>>()->multitoken()->required(),
                        "nccl-tests output file(s)")("hardware", po::value<std::string>()->required(),
                                                     "hardware JSON (or a shipped name: h100-sxm, h200)")(
      "collective", po::value<std::string>(), "the collective of every FILE (when neither its text nor its name says)")(
      "gpus", po::value<int>(), "the GPU count of every FILE (default: its '# Rank' lines, else nThread x nGpus)")(
      "min-bytes", po::value<std::string>(), "use rows of at least this size (binary suffixes: 64K, 1M)")(
      "max-bytes", po::value<std::string>(), "use rows of at most this size")(
      "every", po::value<int>()->default_value(1),
      "use every K-th row of each FILE, counted from its first row (with --offset: a held-out split)")(
      "offset", po::value<int>()->default_value(0), "the first of every K rows used, in [0, K)")(
      "format", po::value<std::string>()->default_value("table"), "table | json | csv | markdown");
}

json::object fit_json(const sim::collective_fit& f) { return sim::collective_fit_json(f); }

std::string gbs(double bytes_s) { return fmt::format("{:.2f}", bytes_s / 1e9); }
std::string us(double s) { return fmt::format("{:.2f}", s * 1e6); }

// "320.0 -> 480.0 (16777216 .. 1073741824 B)" for a ramp, "480.0" for a constant bandwidth (GB/s).
std::string bus_text(const sim::collective_fit& f) {
  if (f.ramp_to_bytes <= 0) return fmt::format("{:.1f}", f.bus_bytes_s / 1e9);
  return fmt::format("{:.1f} -> {:.1f} ({} .. {} B)", f.ramp_bus_bytes_s / 1e9, f.bus_bytes_s / 1e9, f.ramp_from_bytes,
                     f.ramp_to_bytes);
}

// The fit's bus bandwidth in words.
std::string bus_words(const sim::collective_fit& f) {
  if (f.ramp_to_bytes <= 0) return "bus bandwidth " + gbs(f.bus_bytes_s) + " GB/s";
  return fmt::format("bus bandwidth {} GB/s up to {} bytes, rising to {} GB/s at {} bytes", gbs(f.ramp_bus_bytes_s),
                     f.ramp_from_bytes, gbs(f.bus_bytes_s), f.ramp_to_bytes);
}

// The model's error against the nccl-tests rows it was fitted on, below 1 MiB (null: not
// fitted, or no such rows).
json::value below_1mib_json(const sim::comm_prediction& p) {
  if (!p.fit || p.source != "fitted" || !p.fit->below_1mib_median_abs_pct_error) return nullptr;
  return json::object{{"median_abs_pct_error", *p.fit->below_1mib_median_abs_pct_error},
                      {"max_abs_pct_error", p.fit->below_1mib_max_abs_pct_error.value_or(0.0)},
                      {"file", p.fit->file}};
}

std::string error_line(const sim::comm_prediction& p) {
  if (!p.fit)
    return "error vs nccl-tests: not known (no fit to nccl-tests for this collective and link: the alpha-beta model "
           "of the hardware file)";
  const sim::collective_fit& f = *p.fit;
  std::string s = p.source == "derived"
                      ? fmt::format(
                            "error vs nccl-tests: not known for {} at {} GPUs (derived); the {} fit at {} GPUs "
                            "it comes from, on its own rows ({}):",
                            sim::to_string(p.op), p.gpus, f.collective, f.gpus, f.file)
                      : "error vs the nccl-tests rows fitted (" + f.file + "):";
  if (f.from_1mib_median_abs_pct_error)
    s += fmt::format(" median |error| {:.1f}% from 1 MiB up;", *f.from_1mib_median_abs_pct_error);
  if (f.below_1mib_median_abs_pct_error)
    s += fmt::format(" below 1 MiB median {:.1f}%, largest {:.1f}%", *f.below_1mib_median_abs_pct_error,
                     f.below_1mib_max_abs_pct_error.value_or(0.0));
  else
    s += " below 1 MiB not known (no row below 1 MiB)";
  return s;
}

int run_predict(const std::vector<std::string>& args) {
  po::options_description options("modsim comm options");
  options.add_options()("collective", po::value<std::string>()->required(),
                        "all_reduce | all_gather | reduce_scatter | all_to_all | send_recv")(
      "bytes", po::value<std::string>()->required(), "N, nccl-tests' size (binary suffixes: 64K, 1M, 8G)")(
      "gpus", po::value<int>()->required(), "G, the GPUs taking part (>= 2)")(
      "hardware", po::value<std::string>()->required(), "hardware JSON (or a shipped name: h100-sxm, h200)")(
      "algorithm", po::value<std::string>()->default_value("auto"), "auto | ring | tree | direct | fitted")(
      "format", po::value<std::string>()->default_value("table"), "table | json | csv | markdown");
  po::positional_options_description positional;
  positional.add("collective", 1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;
  const output_format format = parse_format(vm["format"].as<std::string>());

  sim::comm_request req;
  const std::string c = vm["collective"].as<std::string>();
  const auto op = sim::find_collective(c);
  if (!op)
    throw input_error("", "COLLECTIVE", "unknown collective '" + c + "' (expected " + sim::collective_names() + ")");
  req.op = *op;
  req.bytes = sim::parse_bytes(vm["bytes"].as<std::string>(), "--bytes");
  req.gpus = vm["gpus"].as<int>();
  const std::string a = vm["algorithm"].as<std::string>();
  if (a != "auto") {
    req.algorithm = sim::find_comm_algorithm(a);
    if (!req.algorithm)
      throw input_error("", "--algorithm",
                        "unknown algorithm '" + a + "' (expected auto, ring, tree, direct or fitted)");
  }
  const sim::hardware_spec hw = sim::load_hardware(sim::resolve_config(vm["hardware"].as<std::string>(), "hardware"));
  const sim::comm_prediction p = sim::predict_collective(hw, req);

  output o;
  json::object root;
  root["collective"] = sim::to_string(p.op);
  root["bytes"] = p.bytes;
  root["gpus"] = p.gpus;
  root["algorithm"] = sim::to_string(p.algorithm);
  root["time_s"] = p.time_s;
  root["algbw_bytes_s"] = p.algbw_bytes_s;
  root["busbw_bytes_s"] = p.busbw_bytes_s;
  root["link"] = sim::to_string(p.link);
  root["link_name"] = p.link_name;
  root["calibrated"] = p.calibrated;
  root["source"] = p.source;
  root["floor_source"] = p.floor_source;
  root["bandwidth_source"] = p.bandwidth_source;
  root["nodes"] = p.nodes;
  root["gpus_per_node"] = p.gpus_per_node;
  root["hardware"] = hw.name;
  json::array cands;
  for (const sim::comm_candidate& k : p.analytic)
    cands.push_back(json::object{{"algorithm", sim::to_string(k.algorithm)}, {"time_s", k.time_s}});
  root["analytic"] = std::move(cands);
  root["fit"] = p.fit ? json::value(fit_json(*p.fit)) : json::value(nullptr);
  root["outside_fitted_range"] = p.outside_fit_range;
  root["error_below_1mib"] = below_1mib_json(p);
  json::array notes;
  for (const std::string& n : p.notes) notes.push_back(json::value(n));
  root["notes"] = std::move(notes);
  o.json = std::move(root);

  o.head.push_back(fmt::format("{} of {} bytes per GPU over {} GPUs on {}: {} ({}), {} node(s){}", sim::to_string(p.op),
                               p.bytes, p.gpus, hw.name, sim::to_string(p.link), p.link_name, p.nodes,
                               p.gpus_per_node > 0 ? fmt::format(" of {} GPUs", p.gpus_per_node) : std::string()));
  o.head.push_back(fmt::format(
      "time {} us with {}{}; algbw {} GB/s, busbw {} GB/s", us(p.time_s), sim::to_string(p.algorithm),
      !p.calibrated          ? std::string()
      : p.source == "fitted" ? std::string(" (fitted to nccl-tests)")
                             : fmt::format(" (derived from the {} fit at {} GPUs)", p.fit->collective, p.fit->gpus),
      gbs(p.algbw_bytes_s), gbs(p.busbw_bytes_s)));
  table t;
  t.columns = {"algorithm", "time us", "algbw GB/s", "busbw GB/s", "chosen"};
  const double f = sim::busbw_factor(p.op, p.gpus);
  auto row = [&](const char* name, double time_s, bool chosen) {
    const double algbw = time_s > 0 ? static_cast<double>(p.bytes) / time_s : 0.0;
    t.rows.push_back({name, number(time_s * 1e6, "{:.2f}"), number(algbw / 1e9, "{:.2f}"),
                      number(algbw * f / 1e9, "{:.2f}"), chosen ? "yes" : ""});
  };
  for (const sim::comm_candidate& k : p.analytic)
    row(sim::to_string(k.algorithm), k.time_s, !p.calibrated && k.algorithm == p.algorithm);
  if (p.calibrated) row("fitted", p.time_s, true);
  o.tables.push_back(std::move(t));
  table csv;
  csv.people = false;
  csv.csv = true;
  csv.columns = {"collective",    "bytes",         "gpus", "algorithm",  "time_s",
                 "algbw_bytes_s", "busbw_bytes_s", "link", "calibrated", "source"};
  csv.rows.push_back({sim::to_string(p.op), integer(p.bytes), integer(p.gpus), sim::to_string(p.algorithm),
                      fmt::format("{}", p.time_s), fmt::format("{}", p.algbw_bytes_s),
                      fmt::format("{}", p.busbw_bytes_s), sim::to_string(p.link), p.calibrated ? "true" : "false",
                      p.source});
  o.tables.push_back(std::move(csv));
  if (p.fit)
    o.tail.push_back(fmt::format("fit: {} alpha {} us{}, {}; {} rows of {} at {} GPUs, {} .. {} bytes",
                                 p.fit->collective, us(p.fit->alpha_s),
                                 p.fit->floor_source == "given" ? " (given, not fitted)" : "", bus_words(*p.fit),
                                 p.fit->points, p.fit->file, p.fit->gpus, p.fit->min_bytes, p.fit->max_bytes));
  o.tail.push_back(error_line(p));
  for (const std::string& n : p.notes) o.tail.push_back("note: " + n);
  print(o, format, std::cout);
  return exit_ok;
}

int run_calibrate(const std::vector<std::string>& args) {
  po::options_description options("modsim comm calibrate options");
  add_file_options(options);
  options.add_options()("out", po::value<std::string>()->required(), "the hardware JSON to write")(
      "floor-us", po::value<double>(),
      "fix the latency floor at this many microseconds and fit the bandwidth alone (a run without small sizes)")(
      "merge", po::bool_switch(), "keep HW's own fits (one of the same collective, link and GPU count is replaced)");
  po::positional_options_description positional;
  positional.add("files", -1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;
  const output_format format = parse_format(vm["format"].as<std::string>());
  const sim::comm_fit_options fo = fit_options_from(vm);
  const std::string hw_path = sim::resolve_config(vm["hardware"].as<std::string>(), "hardware");
  const sim::hardware_spec hw = sim::load_hardware(hw_path);
  if (!hw.interconnect)
    throw input_error(hw_path, "interconnect",
                      "absent: the calibration goes into the interconnect object (gpus_per_node, intra_node, ...)");
  const std::string out = vm["out"].as<std::string>();

  std::vector<sim::collective_fit> fits;
  std::string source;
  namespace fs = std::filesystem;
  for (const std::string& file : vm["files"].as<std::vector<std::string>>()) {
    std::error_code ec;
    if (fs::exists(out, ec) && fs::exists(file, ec) && fs::equivalent(out, file, ec))
      throw input_error(out, "--out", "is one of the nccl-tests files");
    const sim::nccl_table t = sim::load_nccl_tests(file);
    sim::collective_fit f = sim::fit_nccl_table(t, *hw.interconnect, fo);
    for (const sim::collective_fit& g : fits)
      if (g.collective == f.collective && g.link == f.link && g.gpus == f.gpus)
        throw input_error(file, "",
                          fmt::format("a second {} run over {} at {} GPUs (the first is {}); give one per collective, "
                                      "link and GPU count",
                                      f.collective, f.link, f.gpus, g.file));
    source += (source.empty() ? "" : ", ") + file;
    fits.push_back(std::move(f));
  }
  std::string merged;
  if (vm["merge"].as<bool>() && !hw.interconnect->calibration.empty()) {
    std::vector<sim::collective_fit> kept;
    for (const sim::collective_fit& g : hw.interconnect->calibration) {
      bool replaced = false;
      for (const sim::collective_fit& f : fits)
        replaced = replaced || (g.collective == f.collective && g.link == f.link && g.gpus == f.gpus);
      if (!replaced) kept.push_back(g);
    }
    merged = "; kept from " + hw_path + ": " + hw.interconnect->calibration_source;
    fits.insert(fits.begin(), kept.begin(), kept.end());
  }
  std::string range;
  if (fo.min_bytes > 0 || fo.max_bytes < std::numeric_limits<std::int64_t>::max())
    range = fmt::format(
        ", sizes {}..{}", fo.min_bytes,
        fo.max_bytes == std::numeric_limits<std::int64_t>::max() ? std::string("") : std::to_string(fo.max_bytes));
  if (fo.every > 1) range += fmt::format(", every {}th row from row {}", fo.every, fo.offset);
  if (fo.floor_s) range += fmt::format(", latency floor given as {} us (not fitted)", *fo.floor_s * 1e6);
  const std::string date = sim::utc_now_iso8601();
  sim::write_comm_calibrated_hardware(
      hw_path, fits,
      "measured: nccl-tests out-of-place times of " + source + range + ", fitted by modsim comm calibrate" + merged,
      date, out);
  (void)sim::load_hardware(out);  // what we wrote must load

  output o;
  json::array arr;
  for (const auto& f : fits) arr.push_back(fit_json(f));
  o.json = json::object{{"out", out}, {"date", date}, {"fits", std::move(arr)}};
  o.head.push_back(
      fmt::format("wrote {} with {} fit(s): time = alpha + size x busbw factor / bus bandwidth", out, fits.size()));
  table t;
  t.columns = {"collective",       "link",      "gpus",       "alpha us", "floor", "bus GB/s", "rows", "sizes",
               "median |error| %", "< 1 MiB %", ">= 1 MiB %", "file"};
  t.left_columns = 2;
  t.csv = true;
  const auto pct = [](const std::optional<double>& v) { return v ? number(*v, "{:.1f}") : cell("-"); };
  for (const auto& f : fits)
    t.rows.push_back({f.collective, f.link, integer(f.gpus), number(f.alpha_s * 1e6, "{:.2f}"), f.floor_source,
                      bus_text(f), integer(f.points), fmt::format("{}..{}", f.min_bytes, f.max_bytes),
                      number(f.median_abs_pct_error, "{:.1f}"), pct(f.below_1mib_median_abs_pct_error),
                      pct(f.from_1mib_median_abs_pct_error), f.file});
  o.tables.push_back(std::move(t));
  print(o, format, std::cout);
  return exit_ok;
}

int run_check(const std::vector<std::string>& args) {
  po::options_description options("modsim comm check options");
  add_file_options(options);
  options.add_options()("max-error", po::value<double>(), "exit 1 when the median |error| % is above this");
  po::positional_options_description positional;
  positional.add("files", -1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;
  const output_format format = parse_format(vm["format"].as<std::string>());
  const sim::comm_fit_options fo = fit_options_from(vm);
  const sim::hardware_spec hw = sim::load_hardware(sim::resolve_config(vm["hardware"].as<std::string>(), "hardware"));

  std::vector<sim::comm_check_row> all;
  table t;
  t.columns = {"file", "collective", "gpus", "bytes", "measured us", "predicted us", "error %"};
  t.csv = true;
  json::array rows;
  for (const std::string& file : vm["files"].as<std::vector<std::string>>()) {
    const sim::nccl_table nt = sim::load_nccl_tests(file);
    const std::vector<sim::comm_check_row> rs = sim::check_nccl_table(nt, hw, fo);
    const char* op = sim::to_string(fo.op ? *fo.op : *nt.op);
    const int gpus = fo.gpus > 0 ? fo.gpus : nt.gpus;
    for (const auto& r : rs) {
      t.rows.push_back({file, op, integer(gpus), integer(r.bytes), number(r.measured_s * 1e6, "{:.2f}"),
                        number(r.predicted_s * 1e6, "{:.2f}"), number(r.pct_error, "{:+.1f}")});
      rows.push_back(json::object{{"file", file},
                                  {"collective", op},
                                  {"gpus", gpus},
                                  {"bytes", r.bytes},
                                  {"measured_s", r.measured_s},
                                  {"predicted_s", r.predicted_s},
                                  {"pct_error", r.pct_error}});
      all.push_back(r);
    }
  }
  const double median = sim::median_abs_pct_error(all);
  output o;
  o.json = json::object{{"points", static_cast<std::int64_t>(all.size())},
                        {"median_abs_pct_error", median},
                        {"hardware", hw.name},
                        {"rows", std::move(rows)}};
  o.tables.push_back(std::move(t));
  o.tail.push_back(fmt::format("{} rows, median |error| {:.1f}%", all.size(), median));
  print(o, format, std::cout);
  if (vm.count("max-error") && median > vm["max-error"].as<double>()) return exit_check_failed;
  return exit_ok;
}

}  // namespace

int cmd_comm(const std::vector<std::string>& args) {
  if (args.empty())
    throw input_error("", "",
                      std::string("comm needs a collective (") + sim::collective_names() +
                          "), calibrate or check\nusage: modsim comm COLLECTIVE --bytes N --gpus G --hardware HW "
                          "[options]   (modsim comm --help for the options)");
  if (args[0] == "calibrate") return run_calibrate(std::vector<std::string>(args.begin() + 1, args.end()));
  if (args[0] == "check") return run_check(std::vector<std::string>(args.begin() + 1, args.end()));
  return run_predict(args);
}

}  // namespace modsim::cli
