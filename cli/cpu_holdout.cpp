// cpu_holdout_validation: profile this CPU (or reuse what was measured), calibrate, validate
// on held-out shapes.
#include "cli/cpu_holdout.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <memory>

#include "analysis/calibration.hpp"
#include "core/error.hpp"
#include "kernels/backend.hpp"
#include "profiler/measurements.hpp"
#include "profiler/runner.hpp"
#include "sim/cost/calibrate.hpp"

namespace modsim::cli {
namespace {

namespace fs = std::filesystem;

void say(const cpu_holdout_check& c, const std::string& line) {
  if (c.progress) c.progress(line);
}

// Measures `grid` into `csv` with ops timed as `timing`, unless `csv` already holds this
// CPU's rows with that timing. Returns false when stopped (FILE.partial stays for the next run).
bool profile_into(const cpu_holdout_check& c, const std::string& csv, const profiler::grid& grid, const char* what,
                  profiler::timing_mode timing) {
  std::unique_ptr<kernels::backend> be = kernels::make_cpu_backend(1);
  const std::string partial = csv + ".partial";
  std::error_code ec;
  if (c.fresh) {
    fs::remove(partial, ec);
  } else if (fs::exists(csv)) {
    const auto rows = profiler::read_measurements(csv);
    if (!rows.empty() && rows.front().device == be->device() && rows.front().timing == timing) {
      say(c, "reusing the CPU measurements in " + csv + " (measured on this CPU before)");
      return true;
    }
  }
  if (fs::exists(partial)) {
    const auto rows = profiler::read_measurements(partial);
    if (!rows.empty() && rows.front().device != be->device()) fs::remove(partial, ec);
  }
  const profiler::expansion plan = profiler::with_timing(profiler::expand(grid), timing);
  if (plan.points.empty())
    throw input_error(
        csv, "ops",
        std::string("the grid for the ") + what + " has no point to time " + std::string(modsim::to_string(timing)));
  profiler::measurement_writer writer(partial, true);
  profiler::run_options ro;
  ro.rule.max_time_s = 0.5;
  ro.stop = c.stop;
  auto last = std::chrono::steady_clock::now() - std::chrono::hours(1);
  ro.on_progress = [&](const profiler::run_progress& p) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::seconds(10) && p.current) return;
    last = now;
    const double eta = p.done ? p.elapsed_s / static_cast<double>(p.done) * static_cast<double>(p.total - p.done) : 0.0;
    say(c, fmt::format("profiling this CPU ({}): {}/{} points, {:.0f} s elapsed, ~{:.0f} s left", what, p.done, p.total,
                       p.elapsed_s, eta));
  };
  say(c, fmt::format("profiling this CPU ({}, {}), {} points", be->device(), what, plan.points.size()));
  const profiler::run_result res = profiler::run_points(*be, plan.points, writer, ro);
  if (res.interrupted) return false;
  fs::rename(partial, csv, ec);
  if (ec) throw runtime_error(csv + ": cannot rename the measurements into place: " + ec.message());
  return true;
}

}  // namespace

std::optional<analysis::validation_request> cpu_holdout_validation(const cpu_holdout_check& c) {
  if (c.cpu.kind != sim::hardware_kind::cpu)
    throw input_error(c.cpu.source_file, "kind", "the held-out check needs CPU hardware");
  fs::create_directories(c.dir);
  const std::string quick = (fs::path(c.dir) / "measurements-cpu.csv").string();
  const std::string holdout = (fs::path(c.dir) / "measurements-cpu-holdout.csv").string();
  if (!profile_into(c, quick, c.calibration_grid, "quick preset, ops inside their blocks",
                    profiler::timing_mode::in_block) ||
      !profile_into(c, holdout, c.holdout_grid, "held-out blocks", profiler::timing_mode::isolated))
    return std::nullopt;

  const sim::calibration cal = analysis::calibrate_from(c.cpu, analysis::read_measured_rows({quick}), {}).calibration;

  analysis::validation_request val;
  val.from = analysis::validation_request::source::measurements;
  val.label = holdout;
  val.points = analysis::read_measured_rows({holdout}).points;
  val.hardware = c.cpu;
  val.hardware->calibration_json = sim::calibration_to_json(cal);
  val.calibrate = false;
  return val;
}

}  // namespace modsim::cli
