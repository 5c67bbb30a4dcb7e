// modsim profile: times real kernels over a capacity × shape grid into a measurements CSV.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "kernels/backend.hpp"
#include "kernels/decode.hpp"
#include "profiler/anchor.hpp"
#include "profiler/gemm_calls.hpp"
#include "profiler/grid.hpp"
#include "profiler/measurements.hpp"
#include "profiler/runner.hpp"
#include "core/version.hpp"
#include "cli/common.hpp"
#include "cli/printer.hpp"
#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/common/io.hpp"
#include "sim/cost/validation.hpp"
#if MODSIM_HAVE_CUDA
#include "kernels/cuda_backend.hpp"
#endif

namespace modsim::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) { g_stop.store(true); }

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string describe(const profiler::point& p) {
  const auto& s = p.shape;
  if (p.op == kernels::op::decode_step)
    return fmt::format("decode_step {} B={} ctx={} {}", p.model_name, s.batch, s.seq_len, to_string(p.decode_routing));
  if (p.op == kernels::op::adamw)  // one layer's parameters: the batch and the sequence play no part
    return fmt::format("adamw d={} H={} kv={} F={} {}", s.d_model, s.n_heads, s.n_kv_heads, s.d_ff,
                       modsim::to_string(s.mlp));
  std::string d = fmt::format("{} B={} {}={} d={} H={} F={}", kernels::to_string(p.op), s.batch,
                              kernels::is_decode(p.op) ? "ctx" : "S", s.seq_len, s.d_model, s.n_heads, s.d_ff);
  if (p.op != kernels::op::block_dense && p.op != kernels::op::block_dense_train && p.op != kernels::op::router &&
      p.op != kernels::op::decode_dense)
    d += fmt::format(" c={:g}", s.capacity);
  if (kernels::is_decode(p.op)) d += std::string(" ") + to_string(p.decode_routing);
  if (kernels::is_train(p.op)) d += fmt::format(" recompute={}", modsim::to_string(p.recompute));
  return d;
}

std::string clock_text(double s) {
  const auto t = static_cast<long>(s + 0.5);
  return fmt::format("{}:{:02d}", t / 60, t % 60);
}

// The metadata sidecar: written at the start and rewritten at the end (temp file + rename).
void write_metadata(const std::string& path, const boost::json::object& meta) {
  sim::write_file_atomically(path, boost::json::serialize(meta) + "\n");
}

std::string metadata_path(const std::string& csv) {
  std::filesystem::path p(csv);
  return (p.parent_path() / (p.stem().string() + ".meta.json")).string();
}

}  // namespace

namespace {

// `--check`: the grid's points against the rows of measurement files (e.g. the shards of a
// cluster job array): each point must be in exactly one row of one file.
namespace json = boost::json;

int check_shards(const profiler::expansion& plan, const std::vector<std::string>& files, output_format format) {
  std::map<std::string, std::vector<std::string>> where;  // row key -> "FILE:LINE" of each row
  std::size_t rows = 0;
  for (const std::string& f : files) {
    const std::vector<profiler::measurement_row> read = profiler::read_measurements(f);
    int line = 1;
    for (const profiler::measurement_row& r : read) {
      ++line;
      const std::string at = f + ":" + std::to_string(line);
      where[sim::shape_key(profiler::sample_of(r, at))].push_back(at);
      ++rows;
    }
  }
  std::set<std::string> grid_keys;
  std::vector<std::string> missing;
  for (const profiler::point& p : plan.points) {
    const std::string k = profiler::point_key(p);
    grid_keys.insert(k);
    if (!where.contains(k)) missing.push_back(describe(p));
  }
  std::vector<std::string> duplicated, foreign;
  for (const auto& [k, at] : where) {
    if (at.size() > 1) {
      std::string list;
      for (const std::string& a : at) list += (list.empty() ? "" : ", ") + a;
      duplicated.push_back(k + " (" + list + ")");
    }
    // An in_block point also writes one row per op ("KEY|OP"): those belong to it.
    bool ours = grid_keys.contains(k);
    if (!ours) {
      const std::size_t bar = k.rfind('|');
      ours = bar != std::string::npos && grid_keys.contains(k.substr(0, bar));
    }
    if (!ours) foreign.push_back(k + " (" + at.front() + ")");
  }
  output o;
  o.head.push_back(fmt::format("{} points in the grid; {} rows in {} file{}", plan.points.size(), rows, files.size(),
                               files.size() == 1 ? "" : "s"));
  o.head.push_back(fmt::format("missing: {}; duplicated: {}; not in the grid: {}", missing.size(), duplicated.size(),
                               foreign.size()));
  for (const std::string& m : missing) o.tail.push_back("missing: " + m);
  for (const std::string& d : duplicated) o.tail.push_back("duplicated: " + d);
  for (const std::string& f : foreign) o.tail.push_back("not in the grid: " + f);
  json::object j;
  j["points"] = plan.points.size();
  j["rows"] = rows;
  auto list = [](const std::vector<std::string>& v) {
    json::array a;
    for (const std::string& x : v) a.emplace_back(x);
    return a;
  };
  j["missing"] = list(missing);
  j["duplicated"] = list(duplicated);
  j["not_in_grid"] = list(foreign);
  j["complete"] = missing.empty() && duplicated.empty();
  o.json = std::move(j);
  table t;
  t.columns = {"check", "count"};
  t.rows = {{"points in the grid", integer(std::int64_t(plan.points.size()))},
            {"rows read", integer(std::int64_t(rows))},
            {"missing", integer(std::int64_t(missing.size()))},
            {"duplicated", integer(std::int64_t(duplicated.size()))},
            {"not in the grid", integer(std::int64_t(foreign.size()))}};
  t.csv = true;
  o.tables.push_back(std::move(t));
  print(o, format, std::cout);
  return missing.empty() && duplicated.empty() ? exit_ok : exit_check_failed;
}

// The flags of `modsim profile`.
void add_profile_options(po::options_description& opts) {
  opts.add_options()("backend", po::value<std::string>(), "cpu | cuda (required)")(
      "preset", po::value<std::string>()->default_value("quick"),
      "quick (CPU: under 2 minutes) | full | decode (KV-cached decode steps: decode_dense, decode_mod, and "
      "decode_step of each --model) | calibration (CPU: the grid the CPU model's published errors come from, to "
      "calibrate on: configs/grids/calibration-5-cpu.json's 96 blocks with every op timed inside its block "
      "(in_block) and configs/grids/gemm-rows-cpu.json's 400 GEMMs timed alone, in one CSV; 496 points, 3-7 "
      "minutes (median 4) with --threads 1 on the 2-core AMD EPYC; --timing does not apply; on a GPU calibrate "
      "on full and decode) | train (one layer's forward + backward, block_dense_train and "
      "block_mod_train, 72 points, then the AdamW step, adamw, of 3 layers of d_model 1024 and 2048 (on a GPU "
      "also 4096): CPU fp32, about 3 minutes; GPU bf16 with batches up to 4 x 2048 tokens, meant for under 4 "
      "minutes on an H100/H200, never yet run on one)")(
      "model", po::value<std::vector<std::string>>()->composing(),
      "a model (name under configs/models/ or a path) whose whole decode step decode_step measures; repeat for "
      "several (added to the grid's \"model\" list)")("grid", po::value<std::string>(),
                                                      "grid JSON file (Cartesian product of lists); replaces --preset")(
      "out", po::value<std::string>(), "measurements CSV to write (required); never overwritten")(
      "resume", po::bool_switch(), "continue an existing --out file: skip rows already there")(
      "timing", po::value<std::string>()->default_value("isolated"),
      "isolated (each op alone, cold: inputs rotated, cache flushed) | in_block (each block of the grid run "
      "warm, every op of it timed on the block's own timeline: a row for the block and one per op)")(
      "threads", po::value<int>()->default_value(0), "CPU threads (0 = all hardware threads)")(
      "seed", po::value<std::uint64_t>()->default_value(1), "seed for the random weights and inputs")(
      "max-time", po::value<double>(),
      "a cap per point, not on the whole run: a point stops taking samples once its timed samples add up to S "
      "seconds (after the minimum number of samples; warm-up and setup not counted) even if not yet precise, unless "
      "--max-noisy-time extends it; the run takes about points x S (default S = 0.5 quick, 2 full); --time-budget "
      "caps the whole run")(
      "max-noisy-time", po::value<double>(),
      "a second cap per point, for noisy points only: a point whose samples are still imprecise (standard error of "
      "the mean above 1%) at --max-time samples on until they are precise, or add up to S seconds and number at "
      "least 15 (3 x the minimum); more samples move its median back where disturbances (another process on a "
      "shared machine) pushed it (default S = 4 x --max-time; 0: stop at --max-time)")(
      "passes", po::value<int>()->default_value(1),
      "N: measure the whole grid N times over, in the same order, and write each point's row in the last pass "
      "from all N (median of the passes' medians; p10/p90 the lowest/highest of theirs; samples the total): a "
      "shared machine that slows down for seconds at a time slows every sample of the point it falls on, which "
      "the point's own samples cannot see but passes minutes apart outvote (the run takes about N times as long; "
      "stopped early or failed, each point measured so far is written with the passes it had)")(
      "no-anchor", po::bool_switch(),
      "do not time the anchor (a fixed small dense block, a few ms on one CPU core) just before and after every "
      "point; by default each row records its median (column anchor_s), the machine's speed while the row was "
      "measured, and calibrate and validate hold rows to one machine speed with it")(
      "retake-slower", po::value<double>()->default_value(10),
      "PCT: a point whose anchor (timed just before and after it) ran more than PCT % slower than the machine's "
      "recent speed (the median anchor of the last 16 points) fell in a slow spell of a shared machine, which "
      "its own samples cannot see: it is measured again after half a second, up to --retakes times, and the last "
      "take kept (its row records its anchor, so calibrate and validate still hold it to one speed); 0: never "
      "retake")("retakes", po::value<int>()->default_value(2),
                "N: the most times one point is measured again (--retake-slower)")(
      "time-budget", po::value<double>(),
      "a cap on the whole run, in seconds: no point starts after S seconds (the one in progress finishes); the CSV "
      "keeps what was measured, --resume measures the rest; exit 0 (default: no cap)")(
      "dry-run", po::bool_switch(), "list the points (and skipped ones with their reason), measure nothing")(
      "check", po::value<std::vector<std::string>>()->multitoken(),
      "CSV...: measure nothing; say which points of the grid (the same --preset/--grid/--model/--timing/"
      "--attention, all shards) are missing from these measurement files and which rows are duplicated or not "
      "in the grid; exit 0 when every point is there exactly once, 1 otherwise")(
      "attention", po::value<std::string>()->default_value("unfused"),
      "unfused (attn_scores → attn_softmax → attn_values, the n×n scores in memory; the default) | fused (one "
      "causal attention kernel through cuDNN's fused SDPA: CUDA backend, bf16, cuDNN found on LD_LIBRARY_PATH; "
      "compiled but not yet checked by the parity tests on a GPU, hence not the default). Recorded in the CSV's "
      "attention column; fused skips attn_scores/attn_softmax/attn_values (no fused form) and needs --timing "
      "isolated")("shard", po::value<std::string>(),
                  "I/N: measure only shard I of N (whole shapes dealt round-robin; run the others elsewhere and give "
                  "calibrate/validate all the CSVs)")("format", po::value<std::string>()->default_value("table"),
                                                      "summary on stdout: table | json | csv");
}

// The progress line on stderr: a bar on a terminal, a line every 10 s otherwise; a stopped run
// says what it measured.
std::function<void(const profiler::run_progress&)> progress_printer(int passes) {
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  auto last_line = std::chrono::steady_clock::now() - std::chrono::hours(1);
  return [tty, last_line, passes](const profiler::run_progress& p) mutable {
    const double frac = p.total ? static_cast<double>(p.done) / static_cast<double>(p.total) : 1.0;
    // The rate of the points measured now (points already in the file took no time).
    const double eta =
        p.measured ? p.elapsed_s / static_cast<double>(p.measured) * static_cast<double>(p.total - p.done) : 0.0;
    if (!p.current && p.done < p.total) {
      // Stopped (--time-budget, Ctrl-C): what was measured, never the points that were not.
      std::cerr << (tty ? "\n" : "")
                << fmt::format("profile: stopped after {}/{} points{} ({} measured in this run), {:.0f} s elapsed\n",
                               p.done, p.total, passes > 1 ? fmt::format(" ({} passes)", passes) : std::string(),
                               p.measured, p.elapsed_s);
      return;
    }
    if (tty) {
      const int width = 30;
      const int filled = static_cast<int>(frac * width);
      std::cerr << fmt::format("\r[{}{}] {}/{} {} elapsed, ~{} left{}  {:<48.48}",
                               std::string(static_cast<std::size_t>(filled), '#'),
                               std::string(static_cast<std::size_t>(width - filled), '.'), p.done, p.total,
                               clock_text(p.elapsed_s), clock_text(eta),
                               p.retaken ? fmt::format(", {} retaken", p.retaken) : std::string(),
                               p.current ? describe(*p.current) : "done")
                << (p.current ? "" : "\n") << std::flush;
    } else {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_line > std::chrono::seconds(10) || !p.current) {
        std::cerr << fmt::format(
            "profile: {}/{} points{}, {:.0f} s elapsed, ~{:.0f} s left{}\n", p.done, p.total,
            passes > 1 ? fmt::format(" ({} passes)", passes) : std::string(), p.elapsed_s, eta,
            p.retaken ? fmt::format(" ({} takes measured again in slow spells)", p.retaken) : std::string());
        last_line = now;
      }
    }
  };
}

// What the GEMM library would run for each GEMM the grid makes, beside the cost model's tile
// choice, where the backend can ask its library (cuBLASLt on the CUDA backend; asking runs
// nothing on the device): the metadata's gemm_choices.
void add_gemm_choices(boost::json::object& meta, const profiler::expansion& plan, kernels::backend& be) {
  const std::vector<profiler::gemm_call> calls = profiler::distinct_gemm_calls(plan.points);
  std::vector<kernels::backend::gemm_query> queries;
  for (const auto& c : calls) queries.push_back(c.query);
  std::vector<kernels::backend::gemm_choice> answers;
  try {
    answers = be.library_gemm_choices(queries);
  } catch (const std::exception& e) {  // asking must never stop a measurement
    std::cerr << "profile: the GEMM library could not be asked for its kernels: " << e.what() << "\n";
    queries.clear();
  }
  if (!queries.empty()) {
    const boost::json::object choices = profiler::gemm_choices_json(calls, answers, profiler::sm_count_of(be.device()));
    std::cerr << fmt::format("profile: {} distinct GEMM calls; the library named {}", calls.size(),
                             choices.at("known").as_int64());
    if (const auto* same = choices.if_contains("same_tile"))
      std::cerr << fmt::format(", the cost model's tile chooser agrees on the tile of {} and the split-K of {}",
                               same->as_int64(), choices.at("same_split_k").as_int64());
    std::cerr << " (metadata gemm_choices)\n";
    meta["gemm_choices"] = choices;
  }
}

// Runs the points; --time-budget: a watchdog asks the runner to stop (as SIGINT does) once the
// budget is spent, and `stopped_at_budget` says whether it did.
profiler::run_result run_within_budget(kernels::backend& be, const profiler::expansion& plan,
                                       profiler::measurement_writer& writer, const profiler::run_options& ro,
                                       std::optional<double> time_budget_s, bool& stopped_at_budget) {
  g_stop.store(false);
  auto previous = std::signal(SIGINT, on_sigint);
  std::atomic<bool> budget_reached{false};
  std::mutex budget_mutex;
  std::condition_variable budget_cv;
  bool run_done = false;
  std::thread watchdog;
  if (time_budget_s) {
    auto stop_at_budget = [&] {
      if (!g_stop.exchange(true)) budget_reached.store(true);
    };
    if (*time_budget_s <= 0) {
      stop_at_budget();
    } else {
      watchdog = std::thread([&] {
        std::unique_lock<std::mutex> lock(budget_mutex);
        if (!budget_cv.wait_for(lock, std::chrono::duration<double>(*time_budget_s), [&] { return run_done; }))
          stop_at_budget();
      });
    }
  }
  profiler::run_result result = profiler::run_points(be, plan.points, writer, ro);
  {
    std::lock_guard<std::mutex> lock(budget_mutex);
    run_done = true;
  }
  budget_cv.notify_all();
  if (watchdog.joinable()) watchdog.join();
  std::signal(SIGINT, previous);
  stopped_at_budget = result.interrupted && budget_reached.load();
  return result;
}

// The rows measured, for people (a table), programs (JSON) and the file's own CSV.
output profile_output(const profiler::run_result& result, const std::string& device, bool stopped_at_budget) {
  output o;
  boost::json::array rows;
  table t;
  t.columns = {"op", "B", "S", "d", "H", "d_ff", "cap", "median ms", "±p90%", "GFLOP/s", "GB/s"};
  for (const auto& r : result.rows) {
    const double gflops = r.median_s > 0 ? static_cast<double>(r.matmul_flops + r.other_flops) / r.median_s / 1e9 : 0.0;
    const double gbs = r.median_s > 0 ? static_cast<double>(r.bytes) / r.median_s / 1e9 : 0.0;
    const std::string op(modsim::to_string(r.op));
    rows.push_back({{"op", op},
                    {"timing", modsim::to_string(r.timing)},
                    {"batch", r.batch},
                    {"seq_len", r.seq_len},
                    {"d_model", r.d_model},
                    {"n_heads", r.n_heads},
                    {"d_ff", r.d_ff},
                    {"capacity", r.capacity},
                    {"median_s", r.median_s},
                    {"p10_s", r.p10_s},
                    {"p90_s", r.p90_s},
                    {"samples", r.samples},
                    {"gflop_s", gflops},
                    {"gbyte_s", gbs}});
    t.rows.push_back({op, integer(r.batch), integer(r.seq_len), integer(r.d_model), integer(r.n_heads), integer(r.d_ff),
                      number(r.capacity, "{:g}"), number(r.median_s * 1e3, "{:.4f}"),
                      fmt::format("{:.1f}%", r.median_s > 0 ? (r.p90_s - r.median_s) / r.median_s * 100 : 0.0),
                      fmt::format("{:.1f}", gflops), fmt::format("{:.1f}", gbs)});
  }
  o.tables.push_back(std::move(t));
  o.json = boost::json::object{{"device", device},
                               {"measured", result.measured},
                               {"already_present", result.already_present},
                               {"interrupted", result.interrupted && !stopped_at_budget},
                               {"time_budget_reached", stopped_at_budget},
                               {"rows", std::move(rows)}};
  // The CSV is the measurements file's own (profiler::csv_header, format_row).
  o.csv = profiler::csv_header() + "\n";
  for (const auto& r : result.rows) o.csv += profiler::format_row(r) + "\n";
  return o;
}

// Why a decode point in a CUDA graph (decode_routing graph) is not measured on the CPU.
constexpr const char* k_graph_needs_cuda = "graph (a step captured in a CUDA graph) exists on the cuda backend only";

// The points a run measures: the grid (or the preset's grids) with the models of --model, the
// timing and the attention asked for; on a CPU, decode points in CUDA graphs are skipped.
profiler::expansion plan_points(const po::variables_map& vm, backend_kind backend, profiler::timing_mode timing,
                                profiler::attention_impl attention) {
  const std::string preset_name = vm["preset"].as<std::string>();
  std::vector<profiler::preset_part> parts =
      vm.count("grid") ? std::vector<profiler::preset_part>{{profiler::load_grid(vm["grid"].as<std::string>()), {}}}
                       : profiler::preset_parts(preset_name, backend);
  // A preset of several grids times each its own way: --timing would contradict it.
  const bool timing_fixed = !vm.count("grid") && profiler::preset_fixes_timing(preset_name);
  if (timing_fixed && !vm["timing"].defaulted())
    throw input_error("", "--timing",
                      "--preset " + preset_name +
                          " times its blocks in_block and its GEMM rows isolated, in one file; drop --timing");
  for (profiler::preset_part& part : parts) {
    if (vm.count("model"))
      for (const std::string& m : vm["model"].as<std::vector<std::string>>()) part.g.model_names.push_back(m);
    for (const std::string& m : part.g.model_names)
      part.g.models.push_back(
          std::make_shared<const sim::model_spec>(sim::load_model(sim::resolve_config(m, "models"))));
  }
  if (attention == profiler::attention_impl::fused && backend != backend_kind::cuda)
    throw input_error("", "--attention", "fused attention exists on the cuda backend only");
  if (attention == profiler::attention_impl::fused && timing == profiler::timing_mode::in_block)
    throw input_error("", "--attention",
                      "in_block timing names attn_scores, attn_softmax and attn_values separately; fused attention "
                      "is one kernel: use --timing isolated");
  profiler::expansion plan = profiler::with_attention(profiler::expand_parts(parts, timing), attention);
  if (backend == backend_kind::cpu) {
    // CUDA graphs exist on the GPU only.
    std::vector<profiler::point> kept;
    for (profiler::point& p : plan.points) {
      if (kernels::is_decode(p.op) && in_cuda_graph(p.decode_routing))
        plan.skipped.push_back({std::move(p), k_graph_needs_cuda});
      else
        kept.push_back(std::move(p));
    }
    plan.points = std::move(kept);
  }
  return plan;
}

// The backend a run measures on.
std::unique_ptr<kernels::backend> make_backend(backend_kind backend, int threads) {
  if (backend == backend_kind::cpu) return kernels::make_cpu_backend(threads);
#if MODSIM_HAVE_CUDA
  if (kernels::cuda_device_count() == 0) throw runtime_error("--backend cuda: no CUDA device is visible");
  return kernels::make_cuda_backend(0);
#else
  throw input_error("", "--backend", "this build has no CUDA backend (configure where nvcc is found)");
#endif
}

// The decode states a run's decode points run on (the CPU computes in fp32 only).
profiler::decode_factory decode_factory_for(backend_kind backend, int threads) {
  if (backend == backend_kind::cpu)
    return [threads](const kernels::decode_shape& s, const kernels::decode_weights& w, kernels::dtype t, bool graph) {
      if (graph) throw input_error("", "decode_routing", k_graph_needs_cuda);  // plan_points skipped these
      if (t != kernels::dtype::fp32) throw input_error("", "dtype", "the CPU decode step computes in fp32 only");
      return kernels::make_cpu_decode(s, w, threads);
    };
#if MODSIM_HAVE_CUDA
  return [](const kernels::decode_shape& s, const kernels::decode_weights& w, kernels::dtype t, bool graph) {
    kernels::cuda_decode_options o;
    o.type = t;
    o.graph = graph;
    return kernels::make_cuda_decode(s, w, o);
  };
#else
  return {};
#endif
}

// The metadata once the run ended: its status, its counts, the passes' spread and the anchor.
void finish_metadata(boost::json::object& meta, const profiler::run_result& result, kernels::backend& be,
                     const profiler::run_options& ro, std::optional<double> time_budget_s, bool stopped_at_budget) {
  meta["finished"] = now_iso();
  meta["status"] = stopped_at_budget ? "time_budget" : result.interrupted ? "interrupted" : "complete";
  if (time_budget_s) meta["time_budget_s"] = *time_budget_s;
  meta["measured_this_run"] = result.measured;
  meta["workspaces_made"] = result.workspaces_made;
  meta["setup_s"] = result.setup_s;
  meta["sampling_s"] = result.sampling_s;
  meta["already_present"] = result.already_present;
  meta["samples_dropped_throttled"] = result.dropped_throttled;
  meta["points_sampled_past_max_time"] = result.sampled_past_max_time;
  if (const auto c = be.clocks(); c.known) meta["sm_clock_mhz_at_end"] = c.sm_clock_mhz;
  if (!result.pass_spread_pct.empty()) {
    const sim::validation_summary spread = sim::summarize_errors(result.pass_spread_pct);
    meta["pass_spread"] = {{"points", spread.points},
                           {"median_pct", spread.median_abs_pct_error},
                           {"p90_pct", spread.p90_abs_pct_error},
                           {"max_pct", spread.max_abs_pct_error}};
  }
  if (!result.anchor_s.empty()) {
    const profiler::sample_stats anchor = profiler::summarize(result.anchor_s);
    const double anchor_max_s = *std::max_element(result.anchor_s.begin(), result.anchor_s.end());
    meta["anchor"] = {{"block", profiler::anchor_text()},
                      {"points", result.anchor_s.size()},
                      {"median_s", anchor.median_s},
                      {"p10_s", anchor.p10_s},
                      {"p90_s", anchor.p90_s},
                      {"max_s", anchor_max_s},
                      {"retaken", result.retaken},
                      {"kept_slow", result.kept_slow}};
  } else if (!ro.anchor) {
    meta["anchor"] = "off";
  }
}

// How far the passes of a point disagreed and how the machine's speed moved (the anchor), on stderr.
void print_machine_speed(const profiler::run_result& result, const profiler::run_options& ro) {
  if (!result.pass_spread_pct.empty()) {
    const sim::validation_summary spread = sim::summarize_errors(result.pass_spread_pct);
    std::cerr << fmt::format(
        "profile: the {} passes of a point disagree by median {:.1f}%, p90 {:.1f}%, max {:.1f}% ({} points; highest "
        "minus lowest of the passes' medians, in % of their median): how far single runs on this machine differ; "
        "each row, the median of its passes, scatters less\n",
        ro.passes, spread.median_abs_pct_error, spread.p90_abs_pct_error, spread.max_abs_pct_error, spread.points);
  }
  if (result.anchor_s.empty()) return;
  const profiler::sample_stats anchor = profiler::summarize(result.anchor_s);
  const double anchor_max_s = *std::max_element(result.anchor_s.begin(), result.anchor_s.end());
  if (anchor.median_s > 0) {
    auto rel = [&](double v) { return (v / anchor.median_s - 1) * 100; };
    std::cerr << fmt::format(
        "profile: machine speed (the anchor, {}, timed around each point): median {:.3f} ms, p10 {:+.1f}%, p90 "
        "{:+.1f}%, slowest {:+.1f}%; each row records it (anchor_s), and calibrate and validate hold rows to one "
        "machine speed with it\n",
        profiler::anchor_text(), anchor.median_s * 1e3, rel(anchor.p10_s), rel(anchor.p90_s), rel(anchor_max_s));
    if (result.retaken > 0)
      std::cerr << fmt::format(
          "profile: {} takes measured again because the anchor ran more than {:g} % slower than the machine's "
          "recent speed around them (a slow spell); {} points kept slow after {} retakes\n",
          result.retaken, ro.retake_slower_pct, result.kept_slow, ro.retakes);
  }
}

// The run's numeric flags in range (one line naming the flag otherwise).
void check_run_flags(const po::variables_map& vm) {
  for (const char* seconds : {"time-budget", "max-time", "max-noisy-time"})
    if (vm.count(seconds) && (!(vm[seconds].as<double>() >= 0) || !std::isfinite(vm[seconds].as<double>())))
      throw input_error("", std::string("--") + seconds, "must be a number of seconds >= 0");
  if (const int passes = vm["passes"].as<int>(); passes < 1 || passes > 100)
    throw input_error("", "--passes", "must be a whole number from 1 to 100");
  if (const double retake_slower = vm["retake-slower"].as<double>();
      !(retake_slower >= 0) || !std::isfinite(retake_slower))
    throw input_error("", "--retake-slower", "must be a percentage >= 0 (0: never retake)");
  if (const int retakes = vm["retakes"].as<int>(); retakes < 0 || retakes > 10)
    throw input_error("", "--retakes", "must be a whole number from 0 to 10");
}

const char* const k_usage =
    "usage: modsim profile --backend cpu|cuda [--preset quick|full|decode|calibration|train] [--grid FILE] "
    "--out FILE.csv [--resume] [--timing isolated|in_block] [--attention unfused|fused] [--shard I/N] "
    "[--model MODEL]... [--max-time S per point] [--max-noisy-time S] [--passes N] [--time-budget S for the "
    "run]\n"
    "       modsim profile --backend cpu|cuda [--preset P|--grid FILE] --check CSV...   (the shards add up?)";

}  // namespace

int cmd_profile(const std::vector<std::string>& args) {
  po::options_description opts("modsim profile options");
  add_profile_options(opts);
  po::positional_options_description pos;
  po::variables_map vm;
  if (!parse_args(args, opts, pos, vm, k_usage)) return exit_ok;
  if (!vm.count("backend")) throw input_error("", "--backend", "required (cpu or cuda)");
  const backend_kind backend = parse_backend(vm["backend"].as<std::string>(), "", "--backend");
  const output_format format = parse_format(vm["format"].as<std::string>());
  check_run_flags(vm);
  const int passes = vm["passes"].as<int>();
  const double retake_slower = vm["retake-slower"].as<double>();
  const int retakes = vm["retakes"].as<int>();
  std::optional<double> time_budget_s;
  if (vm.count("time-budget")) time_budget_s = vm["time-budget"].as<double>();
  const std::string preset_name = vm["preset"].as<std::string>();
  // A preset of several grids times each its own way (--timing would contradict it).
  const bool timing_fixed = !vm.count("grid") && profiler::preset_fixes_timing(preset_name);
  const profiler::timing_mode timing = modsim::parse_timing(vm["timing"].as<std::string>(), "--timing");
  const profiler::attention_impl attention =
      profiler::parse_attention_impl(vm["attention"].as<std::string>(), "--attention");
  profiler::expansion plan = plan_points(vm, backend, timing, attention);
  if (vm.count("check")) {
    if (vm.count("shard")) throw input_error("", "--check", "checks the whole grid: drop --shard");
    return check_shards(plan, vm["check"].as<std::vector<std::string>>(), format);
  }
  std::pair<int, int> shard{1, 1};
  if (vm.count("shard")) {
    shard = profiler::parse_shard(vm["shard"].as<std::string>());
    plan = profiler::shard(std::move(plan), shard.first, shard.second);
  }
  if (plan.points.empty()) {
    std::string why = plan.skipped.empty() ? "no points" : plan.skipped.front().reason;
    throw input_error(vm.count("grid") ? vm["grid"].as<std::string>() : "", "",
                      fmt::format("the grid yields no valid point ({} skipped; first: {})", plan.skipped.size(), why));
  }
  for (const auto& s : plan.skipped) std::cerr << "profile: skip " << describe(s.p) << ": " << s.reason << "\n";
  if (timing_fixed) {
    std::size_t blocks = 0;
    for (const profiler::point& p : plan.points) blocks += kernels::is_block(p.op);
    std::cerr << fmt::format(
        "profile: --preset {}: {} blocks with every op timed inside them (in_block), then {} GEMMs timed alone, "
        "in one file\n",
        preset_name, blocks, plan.points.size() - blocks);
  }
  if (vm["dry-run"].as<bool>()) {
    for (const auto& p : plan.points) std::cout << describe(p) << " " << kernels::to_string(p.type) << "\n";
    std::cerr << fmt::format("profile: {} points, {} skipped\n", plan.points.size(), plan.skipped.size());
    return exit_ok;
  }
  if (!vm.count("out")) throw input_error("", "--out", "required (the measurements CSV to write)");
  const std::string out_path = vm["out"].as<std::string>();

  const std::unique_ptr<kernels::backend> be = make_backend(backend, vm["threads"].as<int>());
  profiler::measurement_writer writer(out_path, vm["resume"].as<bool>());
  if (!writer.accepts(timing_fixed ? profiler::timing_mode::in_block : timing))
    throw input_error(out_path, "--timing",
                      "has the old header without the timing/block columns: --resume can add only isolated rows to "
                      "it; write --timing in_block to a new file");
  if (!writer.existing_device().empty() && writer.existing_device() != be->device())
    throw input_error(
        out_path, "device",
        "holds measurements of '" + writer.existing_device() + "', this run is on '" + be->device() + "'");

  profiler::run_options ro;
  ro.make_decode = decode_factory_for(backend, vm["threads"].as<int>());
  const bool full = !vm.count("grid") && preset_name == "full";
  ro.rule.max_time_s = vm.count("max-time") ? vm["max-time"].as<double>() : (full ? 2.0 : 0.5);
  ro.rule.noisy_max_time_s = vm.count("max-noisy-time") ? vm["max-noisy-time"].as<double>() : 4 * ro.rule.max_time_s;
  ro.rule.noisy_min_samples = 3 * ro.rule.min_samples;
  ro.seed = vm["seed"].as<std::uint64_t>();
  ro.passes = passes;
  ro.anchor = !vm["no-anchor"].as<bool>();
  ro.retake_slower_pct = retake_slower;
  ro.retakes = retakes;
  ro.stop = &g_stop;
  ro.on_progress = progress_printer(passes);

  boost::json::object meta;
  meta["modsim_version"] = build().version;
  meta["git_revision"] = build().commit;
  meta["backend"] = to_string(backend);
  meta["device"] = be->device();
  meta["hardware_threads"] = std::thread::hardware_concurrency();
  meta["threads_requested"] = vm["threads"].as<int>();
  meta["grid"] = vm.count("grid") ? vm["grid"].as<std::string>() : "preset:" + preset_name;
  meta["points"] = plan.points.size();
  meta["skipped_invalid"] = plan.skipped.size();
  meta["seed"] = ro.seed;
  meta["stop_rule"] = {{"warmup", ro.rule.warmup},
                       {"min_samples", ro.rule.min_samples},
                       {"min_time_s", ro.rule.min_time_s},
                       {"max_time_s", ro.rule.max_time_s},
                       {"noisy_max_time_s", ro.rule.noisy_max_time_s},
                       {"noisy_min_samples", ro.rule.noisy_min_samples},
                       {"target_rel_error", ro.rule.target_rel_error}};
  // A preset that fixes its own timing: both kinds, each row's `timing` column says which.
  meta["timing"] = timing_fixed ? std::string("in_block+isolated") : std::string(modsim::to_string(timing));
  if (shard.second > 1) meta["shard"] = std::to_string(shard.first) + "/" + std::to_string(shard.second);
  meta["attention"] = std::string(to_string(attention));
  meta["passes"] = ro.passes;
  if (ro.anchor) {
    meta["retake_slower_pct"] = ro.retake_slower_pct;
    meta["retakes"] = ro.retakes;
  }
  meta["input_copies"] = ro.input_copies;  // rotated by isolated timing only
  meta["measurements"] = std::filesystem::path(out_path).filename().string();
  meta["started"] = now_iso();
  meta["status"] = "running";
  if (backend == backend_kind::cuda) add_gemm_choices(meta, plan, *be);
  const std::string meta_path = metadata_path(out_path);
  write_metadata(meta_path, meta);

  bool stopped_at_budget = false;
  profiler::run_result result = run_within_budget(*be, plan, writer, ro, time_budget_s, stopped_at_budget);

  finish_metadata(meta, result, *be, ro, time_budget_s, stopped_at_budget);
  write_metadata(meta_path, meta);

  const output o = profile_output(result, be->device(), stopped_at_budget);
  print(o, format, std::cout);
  std::cerr << fmt::format("profile: {} measured, {} already in {}, results in {} (metadata {})\n", result.measured,
                           result.already_present, out_path, out_path, meta_path);
  std::cerr << fmt::format("profile: {} workspaces made in {:.1f} s, {:.1f} s sampling\n", result.workspaces_made,
                           result.setup_s, result.sampling_s);
  print_machine_speed(result, ro);
  const std::size_t in_file = result.measured + result.already_present;
  if (stopped_at_budget) {
    std::cerr << fmt::format(
        "profile: the --time-budget of {:g} s stopped the run: {} of {} points measured ({} now, {} already in the "
        "file); run again with --resume to measure the remaining {}\n",
        *time_budget_s, in_file, plan.points.size(), result.measured, result.already_present,
        plan.points.size() - std::min(in_file, plan.points.size()));
    return exit_ok;
  }
  if (result.interrupted) {
    std::cerr << fmt::format(
        "profile: interrupted: {} of {} points measured; run again with --resume to measure the remaining {}\n",
        in_file, plan.points.size(), plan.points.size() - std::min(in_file, plan.points.size()));
    return exit_interrupted;
  }
  return exit_ok;
}

}  // namespace modsim::cli
