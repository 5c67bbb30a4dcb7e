// Published nccl-tests results on H100 (tests/data/nccl/published/README.md: other people's
// measurements, copied verbatim from NVIDIA/nccl-tests issues and a public benchmark repository).
// Each file is split in two: the fit (modsim comm calibrate) sees rows 0, 2, 4, ... and the error
// is measured on rows 1, 3, 5, ... of at least 1 MiB, as `modsim comm calibrate --every 2
// --offset 0` then `modsim comm check --every 2 --offset 1 --min-bytes 1M` do. The figures are
// in README.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "sim/comm_calibrate.hpp"
#include "sim/config.hpp"
#include "sim/nccl_tests.hpp"

using namespace modsim;
using namespace modsim::sim;

namespace {

const std::string k_dir = std::string(MODSIM_SOURCE_DIR) + "/tests/data/nccl/published/";

struct split_result {
  collective_fit fit;
  double held_out_median_pct = 0;   // calibrated
  double datasheet_median_pct = 0;  // the alpha-beta model of configs/hardware/h100-sxm.json
  std::size_t held_out_rows = 0;
};

split_result split(const std::string& file) {
  hardware_spec hw = load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json");
  const nccl_table t = load_nccl_tests(k_dir + file);
  comm_fit_options fit;
  fit.every = 2;
  fit.offset = 0;
  comm_fit_options held;
  held.every = 2;
  held.offset = 1;
  held.min_bytes = 1 << 20;
  split_result r;
  r.datasheet_median_pct = median_abs_pct_error(check_nccl_table(t, hw, held));
  r.fit = fit_nccl_table(t, *hw.interconnect, fit);
  hw.interconnect->calibration = {r.fit};
  const auto rows = check_nccl_table(t, hw, held);
  r.held_out_rows = rows.size();
  r.held_out_median_pct = median_abs_pct_error(rows);
  std::cout << file << ": fit on " << r.fit.points << " rows, alpha " << r.fit.alpha_s * 1e6 << " us, bus "
            << r.fit.bus_bytes_s / 1e9 << " GB/s; held out " << rows.size() << " rows: median |error| "
            << r.held_out_median_pct << " % (datasheet model " << r.datasheet_median_pct << " %)\n";
  return r;
}

}  // namespace

// One node of 8 H100 (NVLink SHARP), 128 MiB .. 4 GiB: fit on 128M, 512M, 2G; held out 256M, 1G, 4G.
TEST(CommPublished, H100EightGpusOneNode) {
  const nccl_table t = load_nccl_tests(k_dir + "all_reduce_perf-h100-8gpu-nccl-tests-issue-290.txt");
  EXPECT_EQ(t.gpus, 8);
  EXPECT_EQ(t.nodes, 1);
  ASSERT_EQ(t.rows.size(), 6u);
  EXPECT_DOUBLE_EQ(t.rows[3].time_s, 4038.8e-6);  // 1073741824 bytes
  const split_result r = split("all_reduce_perf-h100-8gpu-nccl-tests-issue-290.txt");
  EXPECT_EQ(r.fit.link, "intra_node");
  EXPECT_EQ(r.fit.points, 3);
  EXPECT_EQ(r.held_out_rows, 3u);
  EXPECT_LT(r.held_out_median_pct, 10.0);  // 2.1 % when committed
}

// Two nodes of 8 H100 with NCCL_ALGO=RING, 8 MiB .. 8 GiB (srun --label prefixes on every line).
TEST(CommPublished, H100TwoNodesRing) {
  const nccl_table t = load_nccl_tests(k_dir + "all_reduce_perf-h100-2x8gpu-ring-nccl-tests-issue-290.txt");
  EXPECT_EQ(t.gpus, 16);
  EXPECT_EQ(t.nodes, 2);
  ASSERT_EQ(t.rows.size(), 11u);
  EXPECT_DOUBLE_EQ(t.rows[0].time_s, 407.5e-6);
  const split_result r = split("all_reduce_perf-h100-2x8gpu-ring-nccl-tests-issue-290.txt");
  EXPECT_EQ(r.fit.link, "inter_node");
  EXPECT_EQ(r.held_out_rows, 5u);
  EXPECT_LT(r.held_out_median_pct, 10.0);  // 8.7 % when committed
  EXPECT_LT(r.held_out_median_pct, r.datasheet_median_pct);
}

// Two nodes of 8 H100, NCCL's default (NVLSTree), 8 B .. 16 GiB: one alpha-beta line does not
// follow NCCL's protocol and algorithm switches over seven decades of size; the error is above
// 10 % (21.5 % when committed) and the test only checks that it stays in that range.
TEST(CommPublished, H100TwoNodesDefaultAlgorithm) {
  const nccl_table t = load_nccl_tests(k_dir + "all_reduce_perf-h100-2x8gpu-nccl-tests-issue-309.txt");
  EXPECT_EQ(t.gpus, 16);
  EXPECT_EQ(t.nodes, 2);
  ASSERT_EQ(t.rows.size(), 32u);
  const split_result r = split("all_reduce_perf-h100-2x8gpu-nccl-tests-issue-309.txt");
  EXPECT_EQ(r.held_out_rows, 8u);
  EXPECT_LT(r.held_out_median_pct, 25.0);
  EXPECT_LT(r.held_out_median_pct, r.datasheet_median_pct);
}

// One node of 8 H100 SXM (HGX, NVLink 4 / NVSwitch), one process with 8 GPUs (`nGpus 8`), NCCL
// 2.24.3, 8 B .. 8 GiB (31 rows): Voltage Park's benchmark logs (README.md). The fit sees rows
// 0, 2, ... (8 B .. 8 GiB); held out from 1 MiB up are 1M, 4M, 16M, 64M, 256M, 1G and 4G. The
// error is computed here from the file's own out-of-place times and modsim's prediction for
// each held-out size (not taken from check_nccl_table). When committed: median |error| 8.1 %,
// the largest 19.8 % at 16 MiB (NCCL's NVLS bandwidth still ramping up there, which one
// alpha-beta line does not follow; the fitted 437 GB/s is below the 480 GB/s busbw the largest
// sizes reach, so 1 GiB and 4 GiB come out 8-9 % slow); the datasheet model's median 16.3 %.
TEST(CommPublished, H100EightGpusOneNodeFromOneMiB) {
  const std::string file = "all_reduce_perf-h100-8gpu-vpbenchmarking.txt";
  const nccl_table t = load_nccl_tests(k_dir + file);
  ASSERT_EQ(t.op, collective::all_reduce);
  EXPECT_EQ(t.gpus, 8);
  EXPECT_EQ(t.nodes, 1);
  ASSERT_EQ(t.rows.size(), 31u);
  EXPECT_EQ(t.rows[0].bytes, 8);
  EXPECT_EQ(t.rows[17].bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(t.rows[17].time_s, 38.74e-6);
  EXPECT_EQ(t.rows[30].bytes, std::int64_t{8} << 30);

  hardware_spec hw = load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json");
  const auto abs_pct_errors = [&](const hardware_spec& h) {
    std::vector<double> errors;
    for (std::size_t i = 1; i < t.rows.size(); i += 2) {
      const nccl_row& row = t.rows[i];
      if (row.bytes < (1 << 20)) continue;
      comm_request req;
      req.op = collective::all_reduce;
      req.bytes = row.bytes;
      req.gpus = 8;
      const double predicted = predict_collective(h, req).time_s;
      errors.push_back(100.0 * std::abs(predicted - row.time_s) / row.time_s);
    }
    std::sort(errors.begin(), errors.end());
    return errors;
  };
  const auto median = [](const std::vector<double>& e) {
    const std::size_t n = e.size();
    return n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
  };

  const std::vector<double> datasheet = abs_pct_errors(hw);
  comm_fit_options fit;
  fit.every = 2;
  fit.offset = 0;
  const collective_fit f = fit_nccl_table(t, *hw.interconnect, fit);
  EXPECT_EQ(f.link, "intra_node");
  EXPECT_EQ(f.points, 16);
  hw.interconnect->calibration = {f};
  const std::vector<double> held_out = abs_pct_errors(hw);
  ASSERT_EQ(held_out.size(), 7u);
  const double med = median(held_out);
  std::cout << file << ": fit on " << f.points << " rows, alpha " << f.alpha_s * 1e6 << " us, bus "
            << f.bus_bytes_s / 1e9 << " GB/s; held out from 1 MiB " << held_out.size() << " rows: median |error| "
            << med << " %, largest " << held_out.back() << " % (datasheet model " << median(datasheet) << " %)\n";
  EXPECT_LE(med, 10.0);  // 8.1 % when committed
  EXPECT_LT(med, median(datasheet));
  // The same split through modsim comm check's path gives the same median.
  comm_fit_options held;
  held.every = 2;
  held.offset = 1;
  held.min_bytes = 1 << 20;
  EXPECT_NEAR(median_abs_pct_error(check_nccl_table(t, hw, held)), med, 1e-9);
}
