// build_report (through analysis::analyze) and write_report (render_report is in render.cpp).
#include "reports/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "sim/common/io.hpp"

namespace modsim::reports {

const std::vector<std::string>& section_ids() {
  static const std::vector<std::string> ids = {"verdict",  "configuration", "flops",    "sweep",   "variants",
                                               "time",     "gap",           "training", "serving", "sampling",
                                               "parallel", "validation",    "models",   "method"};
  return ids;
}

// --- Building ---------------------------------------------------------------------------------

report_data build_report(const report_input& in, const progress_fn& progress) {
  if (in.models.empty()) throw input_error("", "MODEL", "the report needs at least one model");
  report_data d;
  d.generated = sim::utc_now_iso8601();
  d.command_line = in.command_line;
  d.build = in.build;
  d.inputs = in.inputs;
  d.hardware = in.hardware;
  d.load = in.load;
  analysis::control ctl;
  std::string last;
  if (progress)
    ctl.progress = [&](int, const std::string& what) {
      if (what != last && what != "done") progress("report: " + what);
      last = what;
    };

  // The subject: every part; the other models: FLOPs and predicted time (the models table).
  for (std::size_t i = 0; i < in.models.size(); ++i) {
    const sim::model_spec& m = in.models[i];
    const analysis::configuration config{m, in.load, in.hardware, in.baseline, in.attention};
    analysis::scenario s;
    if (i == 0) {
      s.sweep = analysis::sweep_request{};
      s.sweep->space = in.space;
      s.sweep->threads = in.threads;
      s.variants = true;
      if (in.serving && m.routing) {
        s.serving.emplace().scenario = in.scenario;
        s.serving->fastest_routing = true;
      }
      if (in.sampling && m.routing) {
        s.sampling = in.sampling_request;
        s.sampling->measured =
            analysis::measured_cells(in.decode_rows, m, in.baseline ? *in.baseline : sim::dense_baseline(m));
      }
      s.validation = in.validation;
      s.training = analysis::training_request{in.flop_budget};
    }
    if (progress) progress("report: " + m.name);
    analysis::analysis_result r = analysis::analyze(config, s, ctl);
    if (i == 0) {
      d.cost_label = r.cost_label;
      d.sweep = std::move(r.sweep->result);
      d.variants = std::move(r.variants->result);
      d.variant_notes = std::move(r.variants->notes);
      if (!in.serving) {
        d.serving_missing = "not simulated (--no-serving)";
      } else if (!m.routing) {
        d.serving_missing = "the model has no MoD routing: nothing to compare with its dense baseline";
      } else {
        serving_section sv;
        sv.scenario = r.serving->scenario;
        sv.runs.push_back(std::move(r.serving->dense));
        sv.runs.push_back(std::move(r.serving->model));
        d.serving = std::move(sv);
      }
      d.baseline_label = analysis::baseline_label(config);
      d.baseline_routing_removed = !config.baseline;
      d.serving_routing = r.serving_routing;
      if (!in.sampling)
        d.sampling_missing = "not computed (--no-sampling)";
      else if (!m.routing)
        d.sampling_missing = "the model has no MoD routing: its decode step is the baseline's";
      else if (!r.sampling)
        d.sampling_missing = r.sampling_missing;
      d.sampling = std::move(r.sampling);
      if (!in.parallel) {
        d.parallel_missing = "not asked for (modsim report --gpus G, or --tp/--pp/--dp/--ep)";
      } else {
        // A split the model or the hardware cannot take is said in the section, not fatal.
        try {
          analysis::scenario ps;
          ps.prediction = false;
          ps.parallel = in.parallel;
          analysis::analysis_result pr = analysis::analyze(config, ps, ctl);
          d.parallel = std::move(pr.parallel);
        } catch (const modsim::error& e) {
          d.parallel_missing = e.what();
        }
      }
      d.training = std::move(r.training);
      d.training_missing = r.training_missing;
      d.validation = std::move(r.validation);
      d.validation_missing = r.validation_missing.empty() && !d.validation
                                 ? "no measurements given (modsim report --measurements CSV, from modsim profile)"
                                 : r.validation_missing;
    }
    model_result mr;
    mr.model = m;
    mr.flops = std::move(r.flops);
    mr.dense_flops = std::move(r.dense_flops);
    mr.pred = std::move(*r.prediction);
    mr.memory = r.memory;
    mr.classes = std::move(r.time_classes);
    d.models.push_back(std::move(mr));
  }
  if (progress) progress("report: computed");
  return d;
}

std::vector<input_file> hash_inputs(const std::vector<std::string>& paths) {
  std::vector<input_file> out;
  std::set<std::string> seen;
  for (const std::string& p : paths) {
    if (p.empty() || !seen.insert(p).second) continue;
    std::ifstream in(p, std::ios::binary);
    if (!in) throw input_error(p, "", "cannot open file");
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw input_error(p, "", "cannot read file");
    out.push_back({p, sha256_hex(bytes)});
  }
  return out;
}

// --- Writing ----------------------------------------------------------------------------------

void write_report(const std::vector<report_file>& files, const std::string& dir, const write_options& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw runtime_error(dir + ": cannot create the folder: " + ec.message());

  // Phase 1: every file to a temporary name beside its final one.
  std::vector<std::pair<fs::path, fs::path>> written;  // (tmp, final)
  auto discard = [&] {
    for (const auto& [tmp, final_path] : written) fs::remove(tmp, ec);
  };
  try {
    for (const report_file& f : files) {
      const fs::path final_path = fs::path(dir) / f.name;
      fs::create_directories(final_path.parent_path(), ec);
      if (ec) throw runtime_error(final_path.parent_path().string() + ": cannot create the folder: " + ec.message());
      const fs::path tmp = final_path.parent_path() / ("." + final_path.filename().string() + ".tmp");
      written.emplace_back(tmp, final_path);
      if (options.before_write) options.before_write(tmp.string());
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw runtime_error(tmp.string() + ": cannot write");
      out.write(f.content.data(), static_cast<std::streamsize>(f.content.size()));
      out.flush();
      if (!out) throw runtime_error(tmp.string() + ": write failed");
    }
  } catch (...) {
    discard();
    throw;
  }
  // Phase 2: rename into place (report.html last, so a reader never sees a new page whose
  // charts or tables are still the old ones).
  std::stable_partition(written.begin(), written.end(),
                        [](const auto& w) { return w.second.filename() != "report.html"; });
  for (const auto& [tmp, final_path] : written) {
    fs::rename(tmp, final_path, ec);
    if (ec) {
      const std::string msg = final_path.string() + ": cannot rename the temporary file over it: " + ec.message();
      discard();
      throw runtime_error(msg);
    }
    if (options.progress) options.progress("report: wrote " + final_path.string());
  }
}

}  // namespace modsim::reports
