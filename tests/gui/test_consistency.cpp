// One configuration, one set of numbers: the command line (`modsim flops`, `predict`,
// `simulate serve`, `sweep`), the report (reports::build_report) and the explorer (gui
// compute), all three over analysis::analyze, give the same FLOPs, predicted time, sweep
// point and serving figures for the shipped models, to the last digit their outputs print
// (JSON doubles round-trip exactly).
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "gui/core/compute.hpp"
#include "gui/core/explorer_config.hpp"
#include "reports/report.hpp"
#include "sim/model/config.hpp"

namespace {

namespace json = boost::json;

// What `modsim ARGS --format json` printed, run from the source tree.
struct printed {
  std::string text;
  json::object parsed;
  // The number printed for `key` (the first one after `within`, when given), read back exactly
  // (strtod; a JSON parser may round the last bit): "to the last printed digit".
  double number(const std::string& key, const std::string& within = "") const {
    std::size_t at = within.empty() ? 0 : text.find("\"" + within + "\":");
    EXPECT_NE(at, std::string::npos) << within;
    at = text.find("\"" + key + "\":", at);
    EXPECT_NE(at, std::string::npos) << key;
    return std::strtod(text.c_str() + at + key.size() + 3, nullptr);
  }
};

printed cli_json(const std::string& args) {
  const std::string out =
      (std::filesystem::temp_directory_path() / ("modsim_consistency_" + std::to_string(::getpid()) + ".json"))
          .string();
  const std::string cmd = std::string("cd '") + MODSIM_SOURCE_DIR + "' && '" + MODSIM_BINARY + "' " + args +
                          " --format json >'" + out + "' 2>/dev/null";
  const int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(out);
  return {text.str(), json::parse(text.str()).as_object()};
}

class OneAnalysis : public ::testing::TestWithParam<const char*> {};

TEST_P(OneAnalysis, CliReportAndExplorerAgreeOnFlopsTimeAndServing) {
  const std::string name = GetParam();
  const std::string hw_name = "h100-sxm-calibrated";
  const std::string root = MODSIM_SOURCE_DIR;
  const modsim::sim::model_spec model = modsim::sim::load_model(root + "/configs/models/" + name + ".json");
  const modsim::sim::hardware_spec hw = modsim::sim::load_hardware(root + "/configs/hardware/" + hw_name + ".json");
  modsim::sim::workload load;  // the defaults of all three: forward, batch 1, 2,048 tokens, bf16 on a GPU
  load.batch = 1;
  load.seq_len = 2048;
  load.run = modsim::sim::run_mode::forward;
  load.type = modsim::sim::dtype::bf16;

  // The command line.
  const printed flops = cli_json("flops " + name + " --batch 1 --seq 2048");
  const printed pred = cli_json("predict " + name + " --hardware " + hw_name + " --batch 1 --seq 2048");
  const printed serve = cli_json("simulate serve " + name + " --hardware " + hw_name);
  const std::string sweep_csv =
      (std::filesystem::temp_directory_path() / ("modsim_consistency_sweep_" + std::to_string(::getpid()) + ".csv"))
          .string();
  const printed sweep = cli_json("sweep " + name + " --hardware " + hw_name + " --out '" + sweep_csv + "'");
  std::filesystem::remove(sweep_csv);

  // The report.
  modsim::reports::report_input in;
  in.models = {model};
  in.hardware = hw;
  in.load = load;
  in.validation.missing = "not part of this test";
  const modsim::reports::report_data report = modsim::reports::build_report(in);
  ASSERT_FALSE(report.models.empty());
  ASSERT_TRUE(report.serving.has_value());
  ASSERT_EQ(report.serving->runs.size(), 2u);
  const auto& report_mod = report.serving->runs[1].summary;

  // The explorer.
  modsim::gui::ExplorerConfig config;
  config.model = model;
  config.hardware = hw;
  config.load = load;
  const modsim::gui::PredictionResult gui_pred = modsim::gui::computePrediction(config);
  const modsim::gui::ServingResult gui_serve = modsim::gui::computeServing(config);
  ASSERT_TRUE(gui_serve.available);
  const modsim::gui::SweepResult gui_sweep = modsim::gui::computeSweep(config);

  // FLOPs.
  const auto cli_matmul = flops.parsed.at("totals").as_object().at("matmul_flops").to_number<std::int64_t>();
  EXPECT_EQ(report.models.front().flops.totals.matmul_flops, cli_matmul);
  EXPECT_EQ(gui_pred.matmulFlops, cli_matmul);
  // Predicted time of the model and of its dense baseline.
  const double cli_total = pred.number("total_s"), cli_dense = pred.number("dense_total_s");
  EXPECT_EQ(report.models.front().pred.model.total_s, cli_total);
  EXPECT_EQ(report.models.front().pred.dense.total_s, cli_dense);
  EXPECT_EQ(gui_pred.totalS, cli_total);
  EXPECT_EQ(gui_pred.denseTotalS, cli_dense);
  // Serving: the model's run under the one scenario.
  const double ttft_p50 = serve.number("p50", "ttft_s"), ttft_p90 = serve.number("p90", "ttft_s");
  const double tpot_p50 = serve.number("p50", "tpot_s"), throughput = serve.number("throughput_tok_s");
  const auto kv_peak = serve.parsed.at("kv_peak_bytes").to_number<std::int64_t>();
  EXPECT_EQ(report_mod.ttft_s.p50, ttft_p50);
  EXPECT_EQ(report_mod.ttft_s.p90, ttft_p90);
  EXPECT_EQ(report_mod.tpot_s.p50, tpot_p50);
  EXPECT_EQ(report_mod.throughput_tok_s, throughput);
  EXPECT_EQ(report_mod.kv_peak_bytes, kv_peak);
  EXPECT_EQ(gui_serve.current.summary.ttft_s.p50, ttft_p50);
  EXPECT_EQ(gui_serve.current.summary.tpot_s.p50, tpot_p50);
  EXPECT_EQ(gui_serve.current.summary.throughput_tok_s, throughput);
  EXPECT_EQ(gui_serve.current.summary.kv_peak_bytes, kv_peak);
  // The dense baseline the report and the explorer compare against is the same run, and the
  // one the command line prints beside the model.
  EXPECT_EQ(gui_serve.dense.summary.ttft_s.p50, report.serving->runs[0].summary.ttft_s.p50);
  EXPECT_EQ(serve.number("p50", "dense\":{\"requests"), report.serving->runs[0].summary.ttft_s.p50);

  // The sweep: the configuration's own point (every shipped model is one of the default
  // space's points) has the same FLOPs and time in the three; the explorer marks it.
  const json::array& points = sweep.parsed.at("points").as_array();
  const auto current = sweep.parsed.at("current_point").to_number<std::int64_t>();
  ASSERT_GE(current, 0);
  const json::object& cli_point = points.at(static_cast<std::size_t>(current)).as_object();
  const std::string description(cli_point.at("description").as_string());
  const auto point_flops = cli_point.at("matmul_flops").to_number<std::int64_t>();
  EXPECT_EQ(point_flops, cli_matmul);
  const auto report_point = std::find_if(report.sweep.points.begin(), report.sweep.points.end(),
                                         [&](const auto& p) { return p.description == description; });
  ASSERT_NE(report_point, report.sweep.points.end()) << description;
  EXPECT_EQ(report_point->matmul_flops, point_flops);
  EXPECT_EQ(report_point->time_s, cli_total);
  const auto gui_point =
      std::find_if(gui_sweep.points.begin(), gui_sweep.points.end(), [](const auto& p) { return p.current; });
  ASSERT_NE(gui_point, gui_sweep.points.end());
  EXPECT_EQ(gui_point->matmulFlops, point_flops);
  EXPECT_EQ(gui_point->timeS, cli_total);

  // The sampling map: every cell's step times, the same in the three; the serving routing the
  // report and the explorer chose from it is the one `simulate serve` names.
  const printed sampling = cli_json("sampling " + name + " --hardware " + hw_name);
  const modsim::gui::SamplingResult gui_sampling = modsim::gui::computeSampling(config);
  ASSERT_TRUE(gui_sampling.available);
  ASSERT_TRUE(report.sampling.has_value());
  const json::array& strategies = sampling.parsed.at("strategies").as_array();
  ASSERT_EQ(strategies.size(), report.sampling->strategies.size());
  ASSERT_EQ(strategies.size(), gui_sampling.map.strategies.size());
  for (std::size_t s = 0; s < strategies.size(); ++s) {
    const json::array& cells = strategies[s].at("cells").as_array();
    ASSERT_EQ(cells.size(), report.sampling->strategies[s].cells.size());
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const double model_s = cells[i].at("model_s").as_double(), baseline_s = cells[i].at("baseline_s").as_double();
      EXPECT_DOUBLE_EQ(report.sampling->strategies[s].cells[i].model_s, model_s);
      EXPECT_DOUBLE_EQ(gui_sampling.map.strategies[s].cells[i].model_s, model_s);
      EXPECT_DOUBLE_EQ(report.sampling->strategies[s].cells[i].baseline_s, baseline_s);
      EXPECT_DOUBLE_EQ(gui_sampling.map.strategies[s].cells[i].baseline_s, baseline_s);
      // Which cells fit in memory (and so count in the verdict): the same in the three.
      const bool fits = cells[i].at("fits").as_bool();
      EXPECT_EQ(report.sampling->strategies[s].cells[i].fits, fits);
      EXPECT_EQ(gui_sampling.map.strategies[s].cells[i].fits, fits);
    }
  }
  ASSERT_TRUE(report.serving_routing.has_value());
  EXPECT_EQ(std::string(serve.parsed.at("decode_routing").as_string()),
            std::string(modsim::to_string(report.serving_routing->routing)));

  // One decode step: predict --mode decode and the explorer's decode headline.
  const printed decode = cli_json("predict " + name + " --hardware " + hw_name + " --mode decode --batch 8 --seq 2048");
  modsim::gui::ExplorerConfig decode_config = config;
  decode_config.load.run = modsim::sim::run_mode::decode;
  decode_config.load.batch = 8;
  const modsim::gui::PredictionResult gui_decode = modsim::gui::computePrediction(decode_config);
  EXPECT_EQ(gui_decode.totalS, decode.number("total_s"));
  EXPECT_EQ(gui_decode.denseTotalS, decode.number("dense_total_s"));
}

INSTANTIATE_TEST_SUITE_P(ShippedModels, OneAnalysis, ::testing::Values("mod-220m", "mod-60m", "mode-staged-220m"));

}  // namespace
