// The training answer through the binary: `modsim predict --mode train --flop-budget` and the
// report's Training section (analysis/training.hpp), one set of figures in both.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "run_modsim.hpp"

using modsim_cli_test::modsim;
using modsim_cli_test::result;
using modsim_cli_test::slurp;

namespace {

// tables/training.csv as rows of name -> value, keyed by the model column.
std::map<std::string, std::map<std::string, std::string>> read_training_csv(const std::filesystem::path& file) {
  std::istringstream in(slurp(file));
  std::string line;
  std::vector<std::string> header;
  std::map<std::string, std::map<std::string, std::string>> rows;
  auto split = [](const std::string& l) {
    std::vector<std::string> out;
    std::stringstream s(l);
    std::string f;
    while (std::getline(s, f, ',')) out.push_back(f);
    if (!l.empty() && l.back() == ',') out.emplace_back();
    return out;
  };
  if (std::getline(in, line)) header = split(line);
  while (std::getline(in, line)) {
    const std::vector<std::string> f = split(line);
    if (f.empty()) continue;
    for (std::size_t i = 0; i < header.size() && i < f.size(); ++i) rows[f[0]][header[i]] = f[i];
  }
  return rows;
}

}  // namespace

TEST(CliTraining, PredictAnswersTheBudgetWithStepsTokensAndWallClock) {
  const result r = modsim(
      "predict mod-220m --hardware h100-sxm --mode train --batch 8 --seq 2048 "
      "--flop-budget 6e18 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object j = boost::json::parse(r.out).as_object();
  const boost::json::object& t = j.at("training").as_object();
  const boost::json::object& m = t.at("model").as_object();
  const boost::json::object& b = t.at("baseline").as_object();
  // Tokens per step by hand: batch × sequence.
  EXPECT_EQ(m.at("tokens_per_step").as_int64(), 8 * 2048);
  // The same step and MFU as train_pricing and total_s.
  EXPECT_EQ(m.at("model_flops").as_int64(), j.at("train_pricing").at("model_flops").as_int64());
  EXPECT_DOUBLE_EQ(m.at("step_s").as_double(), j.at("total_s").as_double());
  EXPECT_DOUBLE_EQ(b.at("step_s").as_double(), j.at("dense_total_s").as_double());
  EXPECT_DOUBLE_EQ(m.at("mfu").as_double(), j.at("train_pricing").at("mfu").as_double());
  // MFU by hand: model FLOPs / (step × the H100's bf16 peak, 989.4 TFLOP/s).
  EXPECT_NEAR(m.at("mfu").as_double(), double(m.at("model_flops").as_int64()) / (m.at("step_s").as_double() * 989.4e12),
              1e-12);
  // The budget: steps = 6e18 / model FLOPs per step; tokens = steps × 16,384; wall = steps × step.
  const boost::json::object& bud = t.at("budget").as_object();
  EXPECT_DOUBLE_EQ(bud.at("flops").as_double(), 6e18);
  for (const auto* side : {&m, &b}) {
    const boost::json::object& at = bud.at(side == &m ? "model" : "baseline").as_object();
    const double steps = 6e18 / double(side->at("model_flops").as_int64());
    EXPECT_NEAR(at.at("steps").as_double(), steps, 1e-9 * steps);
    EXPECT_NEAR(at.at("tokens").as_double(), steps * 16384, 1e-9 * steps * 16384);
    EXPECT_NEAR(at.at("wall_s").as_double(), steps * side->at("step_s").as_double(),
                1e-9 * at.at("wall_s").as_double());
  }
  // The wall-clock ratio at equal FLOPs and its sources (summing to it, less one).
  const double wall = t.at("wall_ratio").as_double();
  EXPECT_NEAR(bud.at("wall_ratio").as_double(), wall, 1e-9);
  EXPECT_NEAR(t.at("sources").at("sum").as_double(), wall - 1, 1e-9);
  for (const char* k : {"routing", "launch", "gemm_efficiency", "attention", "memory_bound", "optimizer",
                        "wave_quantisation", "flop_count"})
    EXPECT_TRUE(t.at("sources").as_object().contains(k)) << k;
  // Memory per GPU: weights, gradients, optimizer state; 14 bytes per parameter of state in bf16.
  const boost::json::object& mem = m.at("memory").as_object();
  EXPECT_DOUBLE_EQ(mem.at("gradients_bytes").as_double() * 6, mem.at("optimizer_state_bytes").as_double());
  EXPECT_DOUBLE_EQ(mem.at("weights_bytes").as_double(), mem.at("gradients_bytes").as_double());

  // The table says it too.
  const result text = modsim("predict mod-220m --hardware h100-sxm --mode train --flop-budget 6e18");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("at a budget of 6e+18 model FLOPs"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("training at equal model FLOPs: wall-clock x"), std::string::npos);
}

TEST(CliTraining, ABadBudgetIsOneLineAndExitTwo) {
  for (const char* bad : {"0", "=-6e18", "abc", "nan"}) {
    const std::string flag = bad[0] == '=' ? std::string("--flop-budget") + bad : std::string("--flop-budget ") + bad;
    const result r = modsim("predict mod-220m --hardware h100-sxm --mode train " + flag);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.err.find("--flop-budget"), std::string::npos) << bad << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // Outside train mode the flag is refused, not ignored.
  const result f = modsim("predict mod-220m --hardware h100-sxm --flop-budget 6e18");
  EXPECT_EQ(f.code, 2);
  EXPECT_NE(f.err.find("applies to --mode train only"), std::string::npos) << f.err;
}

TEST(CliTraining, TheReportsTrainingSectionHoldsPredictsFigures) {
  const auto dir = std::filesystem::temp_directory_path() / ("modsim_train_report_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string cfg = "mod-220m --hardware h100-sxm --mode train --batch 4 --seq 1024 --flop-budget 6e18";
  const result rep =
      modsim("report " + cfg + " --no-serving --no-sampling --no-parallel --no-charts --out '" + dir.string() + "'");
  ASSERT_EQ(rep.code, 0) << rep.err;
  const std::string md = slurp(dir / "report.md");
  const std::string html = slurp(dir / "report.html");
  EXPECT_NE(md.find("{#training}"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"training\">"), std::string::npos);
  for (const std::string& doc : {md, html}) {
    EXPECT_NE(doc.find("Training: equal FLOPs, equal wall-clock?"), std::string::npos);
    EXPECT_NE(doc.find("at a budget of 6e+18 model FLOPs"), std::string::npos);
    EXPECT_NE(doc.find("AdamW"), std::string::npos);  // how the optimizer was priced
  }
  const result p = modsim("predict " + cfg + " --format json");
  ASSERT_EQ(p.code, 0) << p.err;
  const boost::json::object t = boost::json::parse(p.out).at("training").as_object();
  const auto rows = read_training_csv(dir / "tables" / "training.csv");
  ASSERT_EQ(rows.size(), 2u);
  for (const char* side : {"model", "baseline"}) {
    const boost::json::object& s = t.at(side).as_object();
    const std::string name(s.at("name").as_string());
    ASSERT_TRUE(rows.count(name)) << name;
    const auto& row = rows.at(name);
    EXPECT_DOUBLE_EQ(std::stod(row.at("step_s")), s.at("step_s").as_double()) << side;
    EXPECT_DOUBLE_EQ(std::stod(row.at("mfu")), s.at("mfu").as_double()) << side;
    EXPECT_EQ(std::stoll(row.at("model_flops")), s.at("model_flops").as_int64()) << side;
    EXPECT_DOUBLE_EQ(std::stod(row.at("memory_bytes")), s.at("memory").at("total_bytes").as_double()) << side;
    // Independently: tokens per step = 4 × 1,024; steps = budget / model FLOPs per step.
    EXPECT_EQ(std::stoll(row.at("tokens_per_step")), 4 * 1024);
    const double steps = 6e18 / double(s.at("model_flops").as_int64());
    EXPECT_NEAR(std::stod(row.at("steps")), steps, 1e-9 * steps) << side;
  }
  // A forward report has the section too: the same batch trained, without a budget.
  std::filesystem::remove_all(dir);
  const result fwd = modsim(
      "report mod-220m --hardware h100-sxm --batch 4 --seq 1024 --no-serving --no-sampling "
      "--no-parallel --no-charts --out '" +
      dir.string() + "'");
  ASSERT_EQ(fwd.code, 0) << fwd.err;
  const std::string fmd = slurp(dir / "report.md");
  EXPECT_NE(fmd.find("{#training}"), std::string::npos);
  EXPECT_NE(fmd.find("this is the same batch trained"), std::string::npos);
  EXPECT_NE(fmd.find("No FLOP budget given"), std::string::npos);
  const auto frows = read_training_csv(dir / "tables" / "training.csv");
  const std::string name(t.at("model").at("name").as_string());
  ASSERT_TRUE(frows.count(name));
  EXPECT_DOUBLE_EQ(std::stod(frows.at(name).at("step_s")), t.at("model").at("step_s").as_double());
  std::filesystem::remove_all(dir);
}

TEST(CliTraining, TheSimulatedTrainingStepIsThePredictedOneAndSaysHowItIsPriced) {
  // One GPU: the simulator runs the kernels `predict --mode train` prices, the optimizer step
  // among them, so its step is predict's plus the GPU's wait for the first enqueue.
  const result sim = modsim("simulate forward mod-220m --hardware h100-sxm --mode train --format json");
  const result pred = modsim("predict mod-220m --hardware h100-sxm --mode train --format json");
  ASSERT_EQ(sim.code, 0) << sim.err;
  ASSERT_EQ(pred.code, 0) << pred.err;
  const boost::json::object s = boost::json::parse(sim.out).as_object();
  const boost::json::object p = boost::json::parse(pred.out).as_object();
  const double step = s.at("step_s").as_double(), total = p.at("total_s").as_double();
  EXPECT_NEAR(step, total, s.at("gpu_wait_host_s").as_double() + 1e-9 * total);
  bool optimizer = false;
  for (const auto& c : s.at("by_class").as_array())
    if (c.at("class").as_string() == "optimizer") {
      optimizer = true;
      // (its one launch, 2.5 us on the datasheet, included)
      EXPECT_NEAR(c.at("device_s").as_double(), p.at("optimizer").at("time_s").as_double() + 2.5e-6, 1e-9);
    }
  EXPECT_TRUE(optimizer) << "no optimizer kernel in the simulated step";
  // How it was priced: the same words as predict's train_pricing.
  for (const char* key : {"backward", "attention_backward", "optimizer"})
    EXPECT_EQ(s.at("train_pricing").at(key).as_string(), p.at("train_pricing").at(key).as_string()) << key;
}
