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
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
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

// configs/hardware/h100-sxm.json without the fit it ships: the alpha-beta model of its links.
hardware_spec datasheet_h100() {
  hardware_spec hw = load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json");
  hw.interconnect->calibration.clear();
  return hw;
}

split_result split(const std::string& file) {
  hardware_spec hw = datasheet_h100();
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
// each held-out size (not taken from check_nccl_table). When committed: median |error| 1.4 %,
// the largest 5.3 % (a bus bandwidth that saturates, 312 GB/s up to 8 MiB rising to 472 GB/s
// at 512 MiB; one constant bandwidth gave 8.1 %, the largest 19.8 % at 16 MiB, where NVLink
// SHARP's bandwidth is still ramping up); the datasheet model's median 16.3 %.
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

  hardware_spec hw = datasheet_h100();
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
  EXPECT_LE(med, 10.0);  // 1.4 % when committed
  EXPECT_LT(med, median(datasheet));
  // The same split through modsim comm check's path gives the same median.
  comm_fit_options held;
  held.every = 2;
  held.offset = 1;
  held.min_bytes = 1 << 20;
  EXPECT_NEAR(median_abs_pct_error(check_nccl_table(t, hw, held)), med, 1e-9);
}

namespace {

// One published row: bytes and the measured time of one all-reduce on 8 GPUs.
struct published_row {
  std::int64_t bytes = 0;
  double time_s = 0;
};

// The nccl-tests file's out-of-place rows.
std::vector<published_row> rows_of(const std::string& file) {
  std::vector<published_row> out;
  for (const nccl_row& r : load_nccl_tests(k_dir + file).rows) out.push_back({r.bytes, r.time_s});
  return out;
}

// An Azure bus-bandwidth table (README.md there): time = 1.75 x bytes / busbw on 8 GPUs.
std::vector<published_row> busbw_rows_of(const std::string& file) {
  std::ifstream in(k_dir + file);
  EXPECT_TRUE(in) << file;
  std::string line;
  std::getline(in, line);  // the header
  std::vector<published_row> out;
  while (std::getline(in, line)) {
    std::stringstream s(line);
    std::string label, bytes, busbw;
    std::getline(s, label, ',');
    std::getline(s, bytes, ',');
    std::getline(s, busbw, ',');
    const std::int64_t n = std::stoll(bytes);
    out.push_back({n, 1.75 * static_cast<double>(n) / (std::stod(busbw) * 1e9)});
  }
  return out;
}

// |predicted - measured| / measured in percent for the rows in [lo, hi), as `hw` predicts an
// all-reduce over 8 GPUs.
std::vector<double> abs_errors(const hardware_spec& hw, const std::vector<published_row>& rows, std::int64_t lo,
                               std::int64_t hi) {
  std::vector<double> e;
  for (const published_row& r : rows) {
    if (r.bytes < lo || r.bytes >= hi) continue;
    comm_request req;
    req.op = collective::all_reduce;
    req.bytes = r.bytes;
    req.gpus = 8;
    e.push_back(100.0 * std::abs(predict_collective(hw, req).time_s - r.time_s) / r.time_s);
  }
  std::sort(e.begin(), e.end());
  return e;
}

double median_of(const std::vector<double>& e) {
  const std::size_t n = e.size();
  if (n == 0) return 0;
  return n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
}

constexpr std::int64_t k_mib = std::int64_t{1} << 20;
constexpr std::int64_t k_all = std::numeric_limits<std::int64_t>::max();

hardware_spec shipped(const char* name) {
  return load_hardware(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/" + name + ".json");
}

}  // namespace

// The interconnect figures shipped in h100-sxm.json: the all-reduce fit of the vpbenchmarking run
// (all 31 rows, 8 B .. 8 GiB), which `modsim comm calibrate` gives back from that file.
TEST(CommPublished, ShippedH100FitIsTheCalibrationOfThePublishedRun) {
  const hardware_spec hw = shipped("h100-sxm");
  ASSERT_EQ(hw.interconnect->calibration.size(), 1u);
  const collective_fit& s = hw.interconnect->calibration[0];
  EXPECT_EQ(s.collective, "all_reduce");
  EXPECT_EQ(s.link, "intra_node");
  EXPECT_EQ(s.gpus, 8);
  EXPECT_EQ(s.min_bytes, 8);
  EXPECT_EQ(s.max_bytes, std::int64_t{8} << 30);
  const collective_fit f =
      fit_nccl_table(load_nccl_tests(k_dir + "all_reduce_perf-h100-8gpu-vpbenchmarking.txt"), *hw.interconnect, {});
  EXPECT_NEAR(s.alpha_s / f.alpha_s, 1.0, 1e-6);
  EXPECT_NEAR(s.bus_bytes_s / f.bus_bytes_s, 1.0, 1e-6);
  EXPECT_NEAR(s.ramp_bus_bytes_s / f.ramp_bus_bytes_s, 1.0, 1e-6);
  EXPECT_EQ(s.ramp_from_bytes, f.ramp_from_bytes);
  EXPECT_EQ(s.ramp_to_bytes, f.ramp_to_bytes);
  EXPECT_EQ(s.points, 31);
  // The latency floor: tens of microseconds for a small all-reduce on 8 GPUs (the file's 8 B
  // row: 33.18 us).
  EXPECT_GT(s.alpha_s, 20e-6);
  EXPECT_LT(s.alpha_s, 50e-6);
  // The bus bandwidth saturates near the ~480 GB/s NCCL's maintainer quotes for NVLink SHARP on
  // 8 H100 (nccl-tests issue 212) and starts well below it.
  EXPECT_GT(s.bus_bytes_s, 440e9);
  EXPECT_LT(s.bus_bytes_s, 500e9);
  EXPECT_LT(s.ramp_bus_bytes_s, 0.8 * s.bus_bytes_s);
}

// The shipped H100 figures against every published one-node 8-GPU run: within 10 % median
// |error| from 1 MiB up, the fitted run and the two held out from the fit (another node's
// nccl-tests run, and Azure's busbw table). Below 1 MiB the error is what the fit records
// (`modsim comm` prints it), computed here again from the file's rows. When committed, from
// 1 MiB up: vpbenchmarking 1.4 % (largest 6.4 %), issue #290 0.9 % (largest 7.4 %), Azure
// ND H100 v5 1.0 % (largest 7.1 %); below 1 MiB: vpbenchmarking 0.8 % (largest 2.4 %),
// Azure 20 % (largest 30 %: a floor of 26-32 us there, and busbw printed to 0.01 GB/s).
TEST(CommPublished, ShippedH100FiguresReproduceThePublishedOneNodeRuns) {
  const hardware_spec hw = shipped("h100-sxm");
  const std::vector<published_row> vp = rows_of("all_reduce_perf-h100-8gpu-vpbenchmarking.txt");
  const std::vector<published_row> i290 = rows_of("all_reduce_perf-h100-8gpu-nccl-tests-issue-290.txt");
  const std::vector<published_row> azure = busbw_rows_of("all_reduce_busbw-h100-8gpu-azure-nd-h100-v5.csv");
  ASSERT_EQ(vp.size(), 31u);
  ASSERT_EQ(i290.size(), 6u);
  ASSERT_EQ(azure.size(), 24u);
  EXPECT_NEAR(azure[10].time_s, 1.75 * 1048576 / 43.70e9, 1e-12);  // 1M: 41.99 us

  const std::vector<double> e_vp = abs_errors(hw, vp, k_mib, k_all);
  const std::vector<double> e_290 = abs_errors(hw, i290, k_mib, k_all);
  const std::vector<double> e_azure = abs_errors(hw, azure, k_mib, k_all);
  ASSERT_EQ(e_vp.size(), 14u);
  ASSERT_EQ(e_290.size(), 6u);
  ASSERT_EQ(e_azure.size(), 14u);
  std::cout << "from 1 MiB: vpbenchmarking " << median_of(e_vp) << " % (largest " << e_vp.back() << "), issue 290 "
            << median_of(e_290) << " % (largest " << e_290.back() << "), azure " << median_of(e_azure) << " % (largest "
            << e_azure.back() << ")\n";
  EXPECT_LE(median_of(e_vp), 10.0);
  EXPECT_LE(median_of(e_290), 10.0);    // held out
  EXPECT_LE(median_of(e_azure), 10.0);  // held out
  // No published size from 1 MiB up is off by more than 10 %.
  EXPECT_LE(std::max({e_vp.back(), e_290.back(), e_azure.back()}), 10.0);

  // Below 1 MiB: what the shipped fit says is its error there is the error on the file's rows.
  const collective_fit& f = hw.interconnect->calibration[0];
  const std::vector<double> small = abs_errors(hw, vp, 0, k_mib);
  ASSERT_EQ(small.size(), 17u);
  ASSERT_TRUE(f.below_1mib_median_abs_pct_error && f.below_1mib_max_abs_pct_error);
  EXPECT_NEAR(*f.below_1mib_median_abs_pct_error, median_of(small), 1e-6);
  EXPECT_NEAR(*f.below_1mib_max_abs_pct_error, small.back(), 1e-6);
  EXPECT_LE(small.back(), 5.0);  // the 33 us floor of that run
  ASSERT_TRUE(f.from_1mib_median_abs_pct_error);
  EXPECT_NEAR(*f.from_1mib_median_abs_pct_error, median_of(e_vp), 1e-6);
  const std::vector<double> azure_small = abs_errors(hw, azure, 0, k_mib);
  std::cout << "below 1 MiB: vpbenchmarking " << median_of(small) << " % (largest " << small.back() << "), azure "
            << median_of(azure_small) << " % (largest " << azure_small.back() << ")\n";
  EXPECT_LE(median_of(azure_small), 35.0);  // another floor: 26-32 us
}

// h200.json ships the H100's figures (no nccl-tests run of an H200 node was at hand to fit; the
// same NVLink 4 / NVSwitch node): Azure's ND H200 v5 busbw table, held out, within 10 % median
// from 1 MiB up (1.96 % when committed, the largest 12.5 % at 1 MiB).
TEST(CommPublished, ShippedH200FiguresReproduceAzureH200) {
  const hardware_spec hw = shipped("h200");
  ASSERT_EQ(hw.interconnect->calibration.size(), 1u);
  const std::vector<published_row> azure = busbw_rows_of("all_reduce_busbw-h200-8gpu-azure-nd-h200-v5.csv");
  ASSERT_EQ(azure.size(), 24u);
  const std::vector<double> e = abs_errors(hw, azure, k_mib, k_all);
  ASSERT_EQ(e.size(), 14u);
  std::cout << "h200 from 1 MiB: azure " << median_of(e) << " % (largest " << e.back() << ")\n";
  EXPECT_LE(median_of(e), 10.0);
  EXPECT_LE(e.back(), 15.0);
}

// 2 and 4 GPUs in one node: the 8-GPU fit carried by nccl-tests' busbw factor (no published
// 2- or 4-GPU H100 run was at hand): the floor stays, the bus bandwidth stays, so a large
// all-reduce's time scales as 2(G-1)/G and algbw rises as G falls; a note says so.
TEST(CommPublished, ShippedH100AtTwoAndFourGpus) {
  const hardware_spec hw = shipped("h100-sxm");
  comm_request r;
  r.op = collective::all_reduce;
  r.bytes = std::int64_t{1} << 30;
  r.gpus = 8;
  const comm_prediction p8 = predict_collective(hw, r);
  r.gpus = 4;
  const comm_prediction p4 = predict_collective(hw, r);
  r.gpus = 2;
  const comm_prediction p2 = predict_collective(hw, r);
  const double a = hw.interconnect->calibration[0].alpha_s;
  EXPECT_NEAR((p4.time_s - a) / (p8.time_s - a), 1.5 / 1.75, 1e-12);
  EXPECT_NEAR((p2.time_s - a) / (p8.time_s - a), 1.0 / 1.75, 1e-12);
  ASSERT_EQ(p4.notes.size(), 1u);
  EXPECT_NE(p4.notes[0].find("fitted at 8 GPUs"), std::string::npos);
  r.bytes = 8;
  EXPECT_NEAR(predict_collective(hw, r).time_s, a, 1e-9);  // the floor
}
