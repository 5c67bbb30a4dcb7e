// The cost report (reports/report.hpp): every section is there, the HTML is well formed and
// self-contained, its numbers are those of sim/model/flops and sim/cost/predict, and a failed write
// leaves the previous report untouched. Passes with and without Qt.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "reports/report.hpp"
#include "reports/text.hpp"
#include "reports/views.hpp"
#include "sim/model/config.hpp"
#include "core/error.hpp"
#include "sim/model/flops.hpp"
#include "sim/cost/predict.hpp"

namespace modsim::reports {
namespace {

namespace fs = std::filesystem;

std::string config(const std::string& rel) { return std::string(MODSIM_SOURCE_DIR) + "/configs/" + rel; }

sim::measured_sample block_row(modsim::op op, double capacity, double median_s, const std::string& key) {
  sim::measured_sample p;
  p.op = op;
  p.type = sim::dtype::fp32;
  p.batch = 1;
  p.seq_len = 256;
  p.d_model = 256;
  p.n_heads = 8;
  p.d_ff = 1024;
  p.capacity = capacity;
  p.median_s = median_s;
  p.backend = modsim::backend_kind::cpu;
  p.device = "test cpu";
  p.key = key;
  p.where = "test.csv:" + key;
  return p;
}

// One report computed once for all tests (the serving simulation is the slow part).
const report_data& data() {
  static const report_data d = [] {
    report_input in;
    in.models.push_back(sim::load_model(config("models/mod-220m.json")));
    in.hardware = sim::load_hardware(config("hardware/h100-sxm.json"));
    in.load.seq_len = 2048;
    in.scenario.requests = 40;
    in.command_line = "test";
    in.validation.from = analysis::validation_request::source::measurements;
    in.validation.points = {block_row(modsim::op::block_dense, 1.0, 2e-3, "a"),
                            block_row(modsim::op::block_mod, 0.125, 6e-4, "b")};
    in.validation.hardware = sim::load_hardware(config("hardware/cpu.json"));
    in.validation.calibrate = false;
    in.validation.label = "test.csv";
    return build_report(in);
  }();
  return d;
}

const std::vector<report_file>& files() {
  static const std::vector<report_file> f = render_report(data());
  return f;
}

const std::string& file(const std::string& name) {
  for (const auto& f : files())
    if (f.name == name) return f.content;
  static const std::string none;
  ADD_FAILURE() << "no file " << name;
  return none;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A small tag-balance checker: every element opened is closed in order, except void
// elements and self-closing ones; comments, doctype and <style> content are skipped.
std::string check_balanced(const std::string& html) {
  static const std::set<std::string> void_elements = {"meta", "br",  "hr",  "img",   "input",
                                                      "link", "col", "wbr", "source"};
  std::vector<std::string> stack;
  std::size_t i = 0;
  while ((i = html.find('<', i)) != std::string::npos) {
    if (html.compare(i, 4, "<!--") == 0) {
      i = html.find("-->", i);
      if (i == std::string::npos) return "unterminated comment";
      continue;
    }
    const std::size_t end = html.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    if (html[i + 1] == '!' || html[i + 1] == '?') {
      i = end + 1;
      continue;
    }
    const bool closing = html[i + 1] == '/';
    std::size_t n = i + (closing ? 2 : 1);
    std::size_t e = n;
    while (e < end && (std::isalnum(static_cast<unsigned char>(html[e])) || html[e] == '-' || html[e] == ':')) ++e;
    const std::string name = lower(html.substr(n, e - n));
    if (name.empty()) return "empty tag name at " + std::to_string(i);
    if (closing) {
      if (stack.empty() || stack.back() != name)
        return "</" + name + "> closes <" + (stack.empty() ? std::string("nothing") : stack.back()) + "> at " +
               std::to_string(i);
      stack.pop_back();
    } else if (html[end - 1] != '/' && !void_elements.count(name)) {
      stack.push_back(name);
      if (name == "style" || name == "script") {
        const std::size_t close = lower(html).find("</" + name, end);
        if (close == std::string::npos) return "unterminated <" + name + ">";
        i = close;
        continue;
      }
    }
    i = end + 1;
  }
  if (!stack.empty()) return "<" + stack.back() + "> never closed";
  return "";
}

TEST(Report, EverySectionIsPresentInHtmlAndMarkdown) {
  const std::string& html = file("report.html");
  const std::string& md = file("report.md");
  for (const std::string& id : section_ids()) {
    EXPECT_NE(html.find("<section id=\"" + id + "\">"), std::string::npos) << id;
    EXPECT_NE(md.find("{#" + id + "}"), std::string::npos) << id;
  }
  // Content each section must carry for this input.
  for (const char* text : {"TTFT p50", "TPOT p50", "throughput", "KV cache peak", "median |error|", "★", "mode_staged",
                           "mode_integrated", "moe", "GEMM efficiency", "kernel launches"})
    EXPECT_NE(html.find(text), std::string::npos) << text;
  // The sampling section: its verdict and the map's table.
  for (const char* text : {"Sampling", "reaches 1.5x", "batch ↓ context →"})
    EXPECT_NE(html.find(text), std::string::npos) << text;
  for (const char* name :
       {"tables/flops_by_class.csv", "tables/sweep.csv", "tables/variants.csv", "tables/gap.csv",
        "tables/time_per_layer.csv", "tables/serving.csv", "tables/sampling.csv", "tables/validation.csv"})
    EXPECT_FALSE(file(name).empty()) << name;
}

TEST(Report, HtmlIsWellFormedAndReferencesNothingExternal) {
  const std::string& html = file("report.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(check_balanced(html), "");
  const std::string l = lower(html);
  for (const char* bad : {"http:", "https:", "@import", "src=", "<link", "<script", "//fonts."})
    EXPECT_EQ(l.find(bad), std::string::npos) << bad;
  for (std::size_t at = l.find("url("); at != std::string::npos; at = l.find("url(", at + 1))
    EXPECT_EQ(l.compare(at + 4, 5, "data:"), 0) << l.substr(at, 40);
  for (std::size_t at = l.find("href=\""); at != std::string::npos; at = l.find("href=\"", at + 1))
    EXPECT_EQ(l[at + 6], '#') << l.substr(at, 40);  // in-page links only
}

TEST(Report, ChartsAreInlineSvgWhenQtIsThereAndAnnouncedMissingOtherwise) {
  const std::string& html = file("report.html");
  std::size_t svgs = 0, svg_files = 0;
  for (std::size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) ++svgs;
  for (const auto& f : files()) svg_files += f.name.rfind("charts/", 0) == 0;
  if (charts_available()) {
    EXPECT_GE(svgs, 7u);  // flops, sweep, variants, time, gap, TTFT, TPOT (+ validation)
    EXPECT_EQ(svgs, svg_files);
  } else {
    EXPECT_EQ(svgs, 0u);
    EXPECT_NE(html.find("Charts need Qt 6"), std::string::npos);
  }
  const std::vector<report_file> tables_only = render_report(data(), render_options{false});
  for (const auto& f : tables_only) EXPECT_NE(f.name.rfind("charts/", 0), 0u) << f.name;
}

std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream l(line);
    while (std::getline(l, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

TEST(Report, TheSamplingSectionMarksTheCellsThatDoNotFitAndLeavesThemOutOfTheVerdict) {
  // mod-220m against itself without routing on the 80 GB H100, batch 1–256 × context 256–32,768:
  // the baseline caches 2 · 16 layers · B · S · 1,024 · 2 bytes = 65,536 · B · S, over 80 GB from
  // B · S = 1,220,703 on (e.g. 64 × 32,768: 137 GB; 256 × 4,096: 68.7 GB fits).
  const auto kv = [](double b, double s) { return 65536.0 * b * s; };
  const std::vector<std::vector<std::string>> rows = parse_csv(file("tables/sampling.csv"));
  ASSERT_FALSE(rows.empty());
  const std::vector<std::string>& head = rows[0];
  ASSERT_GE(head.size(), 2u);
  EXPECT_EQ(head[head.size() - 2], "fits");
  EXPECT_EQ(head.back(), "needs_bytes");
  int excluded = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const double b = std::stod(rows[i][1]), c = std::stod(rows[i][2]);
    const bool fits = rows[i][head.size() - 2] == "true";
    EXPECT_EQ(fits, kv(b, c) < 79e9) << rows[i][0] << " " << b << " x " << c;
    EXPECT_GE(std::stod(rows[i].back()), kv(b, c));
    excluded += !fits;
  }
  // Per strategy (3 on a GPU): 64 × 32,768, 128 × 16,384 and 32,768, 256 × 8,192 to 32,768.
  EXPECT_EQ(excluded, 3 * 6);
  const std::string& html = file("report.html");
  EXPECT_NE(html.find("✗: does not fit in 80 GB, excluded from the verdict"), std::string::npos);
  EXPECT_NE(html.find("6 of 72 cells excluded: they do not fit in 80 GB"), std::string::npos);
  // The chart marks the same cells: the drawn contexts' points that do not fit.
  // The chart draws every other context (512, 2,048, 8,192, 32,768): 256 × 8,192 and 64, 128,
  // 256 × 32,768.
  ASSERT_TRUE(data().sampling.has_value());
  const ratio_chart_input chart = sampling_chart(*data().sampling, 0);
  EXPECT_EQ(chart.excluded_name, "does not fit in 80 GB (excluded)");
  EXPECT_EQ(chart.excluded.size(), 4u);
  for (const auto& [b, ratio] : chart.excluded) EXPECT_GE(b, 64) << ratio;
  if (charts_available()) {
    EXPECT_NE(html.find("does not fit in 80 GB (excluded)"), std::string::npos);
  }
}

TEST(Report, FlopTableEqualsModsimFlopsAndPredictForTheSameInput) {
  // Independently: the FLOP model and the prediction of the same model and workload.
  const sim::model_spec m = sim::load_model(config("models/mod-220m.json"));
  sim::workload w;
  w.seq_len = 2048;
  const sim::flops_report f = sim::evaluate_flops(m, w);
  const sim::flops_report df = sim::evaluate_flops(sim::dense_baseline(m), w);
  const sim::prediction p = sim::predict(m, w, sim::cost_model(sim::load_hardware(config("hardware/h100-sxm.json"))));
  std::map<std::string, std::int64_t> by_class, dense_by_class;
  for (const auto& l : f.layers)
    for (const auto& c : l.ops) by_class[sim::op_class_of(c.op)] += c.matmul_flops;
  by_class["lm_head"] += f.lm_head.matmul_flops;
  for (const auto& l : df.layers)
    for (const auto& c : l.ops) dense_by_class[sim::op_class_of(c.op)] += c.matmul_flops;
  dense_by_class["lm_head"] += df.lm_head.matmul_flops;

  const auto rows = parse_csv(file("tables/flops_by_class.csv"));
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[0][0], "op_class");
  std::size_t checked = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    ASSERT_EQ(r.size(), 7u);
    if (r[0] == "total") {
      EXPECT_EQ(std::stoll(r[1]), f.totals.dense_matmul_flops);
      EXPECT_EQ(std::stoll(r[2]), f.totals.matmul_flops);
      EXPECT_EQ(std::stod(r[5]), p.dense_total_s());
      EXPECT_EQ(std::stod(r[6]), p.total_s());
    } else {
      EXPECT_EQ(std::stoll(r[1]), dense_by_class[r[0]]) << r[0];
      EXPECT_EQ(std::stoll(r[2]), by_class[r[0]]) << r[0];
      ++checked;
    }
  }
  EXPECT_GE(checked, 5u);
  // The verdict's headline numbers.
  const std::string& html = file("report.html");
  const double mm = static_cast<double>(f.totals.matmul_flops) / static_cast<double>(f.totals.dense_matmul_flops);
  EXPECT_NE(html.find(fmt::format("{:.3f}×", mm)), std::string::npos);
  EXPECT_NE(html.find(fmt::format("{:.3f}×", p.total_s() / p.dense_total_s())), std::string::npos);
  // The sweep's paper point is the shipped model.
  bool found = false;
  for (const auto& r : parse_csv(file("tables/sweep.csv")))
    if (r.size() > 6 && r[0] == "MoD c=0.125 every_other") {
      found = true;
      EXPECT_EQ(std::stoll(r[6]), f.totals.matmul_flops);
      EXPECT_EQ(std::stod(r[11]), p.total_s());
    }
  EXPECT_TRUE(found);
}

TEST(Report, GapTableSumsToTheTimeRatioMinusTheFlopRatio) {
  double sum = 0, flop = 0, time = 0;
  for (const auto& r : parse_csv(file("tables/gap.csv"))) {
    if (r.size() != 2 || r[0] == "term") continue;
    if (r[0] == "flop_ratio")
      flop = std::stod(r[1]);
    else if (r[0] == "time_ratio")
      time = std::stod(r[1]);
    else if (r[0] == "routing" || r[0] == "launch" || r[0] == "gemm_efficiency" || r[0] == "attention" ||
             r[0] == "memory_bound" || r[0] == "wave_quantisation")
      sum += std::stod(r[1]);
  }
  EXPECT_GT(flop, 0);
  EXPECT_NEAR(sum, time - flop, 1e-9);
}

std::map<std::string, std::string> read_tree(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    out[fs::relative(e.path(), dir).generic_string()] = ss.str();
  }
  return out;
}

TEST(Report, AnInterruptedWriteLeavesThePreviousReportIntact) {
  const fs::path dir = fs::path(::testing::TempDir()) / "modsim-report-interrupted";
  fs::remove_all(dir);
  write_report(files(), dir.string());
  const auto before = read_tree(dir);
  ASSERT_EQ(before.size(), files().size());

  std::vector<report_file> next = files();
  for (auto& f : next) f.content += "\n<!-- a newer report -->\n";
  int writes = 0;
  write_options o;
  o.before_write = [&](const std::string& tmp) {
    if (++writes == 3) throw modsim::runtime_error(tmp + ": injected failure (disk full)");
  };
  EXPECT_THROW(write_report(next, dir.string(), o), modsim::error);
  EXPECT_EQ(writes, 3);
  EXPECT_EQ(read_tree(dir), before);  // same files, same contents, no temporaries left

  // A write that succeeds replaces every file.
  write_report(next, dir.string());
  const auto after = read_tree(dir);
  ASSERT_EQ(after.size(), next.size());
  for (const auto& f : next) EXPECT_EQ(after.at(f.name), f.content) << f.name;
  fs::remove_all(dir);
}

// A two-layer dense model small enough to count by hand: d 64, 4 heads, d_ff 256, vocab 100, at
// batch 1 × 8 tokens. Forward matmul FLOPs per layer: QKV 3·2·8·64·64 = 196,608, out 2·8·64·64
// = 65,536, scores and values 2·8²·64 = 8,192 each, MLP up and down 2·2·8·64·256 = 524,288:
// 802,816; two layers 1,605,632; LM head 2·8·64·100 = 102,400; forward 1,708,032. A training
// step is 3× that: 5,124,096.
constexpr std::int64_t k_tiny_train_flops = 3 * (2 * (196608 + 65536 + 8192 + 8192 + 524288) + 102400);
static_assert(k_tiny_train_flops == 5124096);

sim::model_spec tiny_model() {
  return sim::parse_model(R"({"name": "tiny", "d_model": 64, "n_layers": 2, "n_heads": 4, "d_ff": 256,
                              "vocab_size": 100})",
                          "tiny.json");
}

TEST(Report, ATrainingStepIsLabelledAsOneNotAsAForwardPass) {
  report_input in;
  in.models.push_back(tiny_model());
  in.hardware = sim::load_hardware(config("hardware/h100-sxm.json"));
  in.load.batch = 1;
  in.load.seq_len = 8;
  in.load.run = sim::run_mode::train;
  in.serving = false;
  in.sampling = false;
  in.command_line = "test";
  const report_data d = build_report(in);
  render_options ro;
  ro.charts = false;
  std::string md, csv;
  for (const auto& f : render_report(d, ro)) {
    if (f.name == "report.md") md = f.content;
    if (f.name == "tables/flops_by_class.csv") csv = f.content;
  }
  EXPECT_NE(md.find("FLOPs per training step, by op class"), std::string::npos);
  EXPECT_NE(md.find("each op's backward (2× its matmul FLOPs: dgrad and wgrad)"), std::string::npos);
  EXPECT_NE(md.find("training step, batch 1, sequence 8 tokens"), std::string::npos);
  EXPECT_EQ(md.find("per forward pass"), std::string::npos);
  EXPECT_EQ(md.find("train pass"), std::string::npos);
  // The numbers under that label are the training step's (3× forward, + the scores the fused
  // attention kernel of the H100 recomputes in each layer's backward: 2 · 8,192), dense = model.
  const std::int64_t step = k_tiny_train_flops + 2 * 8192;
  EXPECT_NE(csv.find(fmt::format("\ntotal,{},{},", step, step)), std::string::npos) << csv;
  // The charts' labels say the same.
  EXPECT_EQ(flops_by_class_chart(d.models[0]).title, "Matmul FLOPs per training step by op class");
  EXPECT_EQ(sweep_chart(d.sweep, "h100").x_label, "matmul FLOPs per training step (GFLOP)");
  EXPECT_EQ(gap_chart(d.models[0].pred).y_label, "% of the dense training step");
  EXPECT_EQ(pass_label(sim::run_mode::forward), "forward pass");
  EXPECT_EQ(pass_label(sim::run_mode::decode), "decode step");
}

TEST(Report, PerLayerCapacitiesAreAllNamed) {
  sim::model_spec m = tiny_model();
  m.n_layers = 4;
  m.routing = sim::routing_spec{};
  m.routing->sched.kind = sim::schedule_kind::list;
  m.routing->sched.layers = {0, 2};
  m.routing->capacity = 0.25;
  m.routing->layer_capacities = {0.25, std::nullopt, 0.5, std::nullopt};
  EXPECT_EQ(detail::routing_short(m), "25% [0], 50% [2]");
  EXPECT_EQ(detail::routing_text(m),
            "per-layer capacities: 25% at layer 0; 50% at layer 2, decode routing by the causal predictor");
  // One capacity at every routed layer reads as a single capacity would.
  m.routing->layer_capacities = {0.25, std::nullopt, 0.25, std::nullopt};
  EXPECT_EQ(detail::routing_short(m), "25% [0,2]");
  EXPECT_EQ(detail::routing_text(m), "capacity 0.25 (25%) at layers [0,2], decode routing by the causal predictor");
  m.routing->layer_capacities = {std::nullopt, 0.125, std::nullopt, 0.125};  // odd layers: the paper's schedule
  EXPECT_EQ(detail::routing_short(m), "12.5% every-other");
  // Without per-layer capacities, as before.
  m.routing->layer_capacities.clear();
  m.routing->sched.kind = sim::schedule_kind::every_other;
  m.routing->capacity = 0.125;
  EXPECT_EQ(detail::routing_short(m), "12.5% every-other");
}

TEST(Report, NoModelIsBadInput) {
  report_input in;
  in.hardware = sim::load_hardware(config("hardware/h100-sxm.json"));
  EXPECT_THROW(build_report(in), modsim::error);
}

TEST(Report, ValidationNeedsBlockRowsOfTheHardwaresBackend) {
  const sim::hardware_spec cpu = sim::load_hardware(config("hardware/cpu.json"));
  const sim::hardware_spec gpu = sim::load_hardware(config("hardware/h100-sxm.json"));
  EXPECT_THROW(analysis::make_validation({block_row(modsim::op::block_dense, 1.0, 1e-3, "a")}, gpu,
                                         analysis::validation_options{}, "x.csv"),
               modsim::error);
  sim::measured_sample single = block_row(modsim::op::qkv_proj, 1.0, 1e-4, "s");
  EXPECT_THROW(analysis::make_validation({single}, cpu, analysis::validation_options{}, "x.csv"), modsim::error);
  const validation_section v = analysis::make_validation({block_row(modsim::op::block_dense, 1.0, 1e-3, "a")}, cpu,
                                                         analysis::validation_options{}, "x.csv");
  ASSERT_EQ(v.points.size(), 1u);
  EXPECT_NEAR(v.points[0].error_pct, 100 * (v.points[0].predicted_s - 1e-3) / 1e-3, 1e-9);
}

TEST(Report, TheParallelismSectionShowsTheSplitAndRanksTheGpuCount) {
  report_input in;
  in.models.push_back(sim::load_model(config("models/mod-220m.json")));
  in.hardware = sim::load_hardware(config("hardware/h100-sxm.json"));
  in.load.seq_len = 2048;
  in.load.batch = 4;
  in.serving = false;
  in.sampling = false;
  in.command_line = "test";
  analysis::parallel_request pr;
  pr.split.tp = 2;
  pr.gpus = 8;
  in.parallel = pr;
  const report_data d = build_report(in);
  ASSERT_TRUE(d.parallel.has_value()) << d.parallel_missing;
  EXPECT_EQ(d.parallel->model.split.tp, 2);
  // mod-220m, B 4, S 2048, bf16: 8 dense layers of 4·2048·1024·2 = 16,777,216 bytes and 8 routed
  // ones of 4·256·1024·2 = 2,097,152, two all-reduces each per step.
  EXPECT_DOUBLE_EQ(d.parallel->model.tp_bytes_per_step, 2.0 * 8 * (16777216 + 2097152));
  EXPECT_DOUBLE_EQ(d.parallel->baseline.tp_bytes_per_step, 2.0 * 16 * 16777216);
  // 8 GPUs: tp x pp x dp with tp, pp in {1, 2, 4, 8} and dp dividing the batch of 4.
  EXPECT_FALSE(d.parallel->best_model.empty());
  for (const auto& p : d.parallel->best_model) EXPECT_EQ(p.split.gpus(), 8);
  const std::vector<report_file> out = render_report(d, render_options{false});
  bool csv = false, md = false;
  for (const report_file& f : out) {
    csv = csv || f.name == "tables/parallel.csv";
    if (f.name == "report.md") md = f.content.find("## Parallelism") != std::string::npos;
  }
  EXPECT_TRUE(csv);
  EXPECT_TRUE(md);
  // Without a request the section says how to ask for one.
  in.parallel.reset();
  EXPECT_FALSE(build_report(in).parallel.has_value());
}

TEST(Report, ACalibratedHardwareShowsTheFittedLaunchCostsNotTheDatasheets) {
  report_input in;
  in.models.push_back(sim::load_model(config("models/mod-60m.json")));
  in.hardware = sim::load_hardware(config("hardware/h100-sxm-calibrated.json"));
  in.serving = false;
  in.sampling = false;
  in.command_line = "test";
  // The fitted host enqueue, read from the file's calibration block.
  const boost::json::value file = boost::json::parse(sim::read_text_file(config("hardware/h100-sxm-calibrated.json")));
  const double host_s = file.at("calibration").at("kernels").at("host_s").to_number<double>();
  std::string md;
  for (const report_file& f : render_report(build_report(in), render_options{false}))
    if (f.name == "report.md") md = f.content;
  EXPECT_NE(md.find(fmt::format("{:.2f} µs host enqueue per kernel", host_s * 1e6)), std::string::npos);
  EXPECT_NE(md.find("(fitted; the file's datasheet values"), std::string::npos);
}

TEST(Report, SaysHowAttentionRunsAndWhetherTheCalibrationMeasuredIt) {
  report_input in;
  in.models.push_back(sim::load_model(config("models/mod-60m.json")));
  in.hardware = sim::load_hardware(config("hardware/h100-sxm-calibrated.json"));
  in.serving = false;
  in.sampling = false;
  in.command_line = "test";
  auto markdown = [&] {
    for (const report_file& f : render_report(build_report(in), render_options{false}))
      if (f.name == "report.md") return f.content;
    return std::string();
  };
  // The default on a GPU is fused, which the shipped calibration (unfused rows) never measured.
  const report_data d = build_report(in);
  EXPECT_EQ(d.models.front().pred.attention, attention_impl::fused);
  EXPECT_FALSE(d.models.front().pred.attention_measured);
  std::string md = markdown();
  EXPECT_NE(md.find("**Attention**: fused"), std::string::npos);
  EXPECT_NE(md.find("the calibration never measured"), std::string::npos);
  EXPECT_NE(md.find("| attention "), std::string::npos);  // the configuration table's row
  // --attention unfused: what it measured, with its band.
  in.attention = attention_impl::unfused;
  const report_data u = build_report(in);
  EXPECT_TRUE(u.models.front().pred.attention_measured);
  EXPECT_TRUE(u.models.front().pred.band.has_value());
  md = markdown();
  EXPECT_NE(md.find("**Attention**: unfused"), std::string::npos);
  EXPECT_NE(md.find("as the calibration measured it"), std::string::npos);
}

}  // namespace
}  // namespace modsim::reports
