// The held-out CPU check's edges (cli/cpu_holdout.hpp): it needs CPU hardware and a grid with
// blocks to time, and a run stopped after its first point keeps what it measured as a partial
// file for the next run, never as a complete one.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "cli/cpu_holdout.hpp"
#include "core/error.hpp"
#include "sim/model/config.hpp"

namespace modsim::cli {
namespace {

namespace fs = std::filesystem;

std::string config(const std::string& rel) { return std::string(MODSIM_SOURCE_DIR) + "/configs/" + rel; }

TEST(CpuHoldout, TheHeldOutCpuCheckNeedsCpuHardwareAndStopsWhenAsked) {
  cpu_holdout_check check;
  check.dir = (fs::temp_directory_path() / "modsim-holdout-test").string();
  fs::remove_all(check.dir);
  check.cpu = sim::load_hardware(config("hardware/h100-sxm.json"));
  EXPECT_THROW(cpu_holdout_validation(check), modsim::error);

  check.cpu = sim::load_hardware(config("hardware/cpu.json"));
  profiler::grid g;
  g.ops = {modsim::op::mlp_act};  // no block: nothing to time inside a block
  check.calibration_grid = g;
  EXPECT_THROW(cpu_holdout_validation(check), modsim::error);
  g.ops = {modsim::op::block_dense};
  g.dtypes = {modsim::dtype::fp32};
  g.batch = {1};
  g.seq_len = {16};
  g.d_model = {64};
  g.n_heads = {2};
  g.d_ff = {128};
  g.capacity = {1.0};
  g.mlp = {modsim::mlp_kind::gelu};
  check.calibration_grid = g;
  check.holdout_grid = g;
  std::atomic<bool> stop{true};  // stop after the first point
  check.stop = &stop;
  EXPECT_FALSE(cpu_holdout_validation(check).has_value());
  // What was measured stays for the next run to resume; nothing claims to be complete.
  EXPECT_TRUE(fs::exists(fs::path(check.dir) / "measurements-cpu.csv.partial"));
  EXPECT_FALSE(fs::exists(fs::path(check.dir) / "measurements-cpu.csv"));
  fs::remove_all(check.dir);
}

}  // namespace
}  // namespace modsim::cli
