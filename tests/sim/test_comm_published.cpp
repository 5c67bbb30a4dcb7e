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

#include "core/error.hpp"
#include "sim/parallel/comm_calibrate.hpp"
#include "sim/model/config.hpp"
#include "sim/parallel/nccl_tests.hpp"

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
  const collective_fit* shipped_fit = find_fit(*hw.interconnect, collective::all_reduce, link_class::intra_node, 8);
  ASSERT_NE(shipped_fit, nullptr);
  const collective_fit& s = *shipped_fit;
  EXPECT_EQ(s.floor_source, "fitted");
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
  const collective_fit& f = *find_fit(*hw.interconnect, collective::all_reduce, link_class::intra_node, 8);
  ASSERT_EQ(f.gpus, 8);
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
  const hardware_spec h100 = shipped("h100-sxm");
  // The same fits as the H100 file, fit for fit.
  ASSERT_EQ(hw.interconnect->calibration.size(), h100.interconnect->calibration.size());
  for (std::size_t i = 0; i < hw.interconnect->calibration.size(); ++i) {
    const collective_fit& a = hw.interconnect->calibration[i];
    const collective_fit& b = h100.interconnect->calibration[i];
    EXPECT_EQ(a.collective, b.collective);
    EXPECT_EQ(a.gpus, b.gpus);
    EXPECT_DOUBLE_EQ(a.alpha_s, b.alpha_s);
    EXPECT_DOUBLE_EQ(a.bus_bytes_s, b.bus_bytes_s);
  }
  const std::vector<published_row> azure = busbw_rows_of("all_reduce_busbw-h200-8gpu-azure-nd-h200-v5.csv");
  ASSERT_EQ(azure.size(), 24u);
  const std::vector<double> e = abs_errors(hw, azure, k_mib, k_all);
  ASSERT_EQ(e.size(), 14u);
  std::cout << "h200 from 1 MiB: azure " << median_of(e) << " % (largest " << e.back() << ")\n";
  EXPECT_LE(median_of(e), 10.0);
  EXPECT_LE(e.back(), 15.0);
}

namespace {

// |predicted - measured| / measured in percent, sorted, for the out-of-place rows of an
// nccl-tests file in [lo, hi), as `hw` predicts collective `op` over `gpus` GPUs; the
// prediction's source is checked against `source`.
std::vector<double> file_errors(const hardware_spec& hw, const std::string& file, collective op, int gpus,
                                std::int64_t lo, std::int64_t hi, const std::string& source) {
  std::vector<double> e;
  for (const nccl_row& r : load_nccl_tests(k_dir + file).rows) {
    if (r.bytes <= 0 || r.bytes < lo || r.bytes >= hi) continue;
    comm_request req;
    req.op = op;
    req.bytes = r.bytes;
    req.gpus = gpus;
    const comm_prediction p = predict_collective(hw, req);
    EXPECT_EQ(p.source, source) << file << " " << r.bytes;
    e.push_back(100.0 * std::abs(p.time_s - r.time_s) / r.time_s);
  }
  std::sort(e.begin(), e.end());
  return e;
}

const char* const k_ar4 = "all_reduce_perf-h100-4gpu-nccl-collectives-bench.txt";
const char* const k_ag4 = "all_gather_perf-h100-4gpu-nccl-collectives-bench.txt";
const char* const k_rs4 = "reduce_scatter_perf-h100-4gpu-nccl-collectives-bench.txt";
const char* const k_ar2 = "all_reduce_perf-h100-2gpu-nccl-collectives-bench.txt";

}  // namespace

// The 4-GPU runs (README.md: 4 GPUs of an 8x H100 SXM NVSwitch node, 8 B .. 8 GiB, the
// repository's quiet-box re-run): all_reduce, all_gather and reduce_scatter, each with a fit of
// its own in h100-sxm.json ("fitted"). From 1 MiB up within 10 % median |error|; below 1 MiB
// the error the fit records is the error on the file's rows (the size-0 rows that all_gather
// and reduce_scatter print for 8..32 B are no collective and are skipped).
TEST(CommPublished, ShippedH100FiguresReproduceThePublishedFourGpuRuns) {
  const hardware_spec hw = shipped("h100-sxm");
  for (const auto& [file, op] : {std::pair{k_ar4, collective::all_reduce}, std::pair{k_ag4, collective::all_gather},
                                 std::pair{k_rs4, collective::reduce_scatter}}) {
    const nccl_table t = load_nccl_tests(k_dir + file);
    ASSERT_EQ(t.op, op) << file;
    EXPECT_EQ(t.gpus, 4);
    EXPECT_EQ(t.nodes, 1);
    const collective_fit* f = find_fit(*hw.interconnect, op, link_class::intra_node, 4);
    ASSERT_NE(f, nullptr) << file;
    EXPECT_EQ(f->gpus, 4);
    EXPECT_EQ(f->floor_source, "fitted");
    const std::vector<double> big = file_errors(hw, file, op, 4, k_mib, k_all, "fitted");
    const std::vector<double> small = file_errors(hw, file, op, 4, 0, k_mib, "fitted");
    ASSERT_EQ(big.size(), 14u) << file;  // 1 MiB .. 8 GiB
    std::cout << file << ": alpha " << f->alpha_s * 1e6 << " us; from 1 MiB median " << median_of(big) << " % (largest "
              << big.back() << "); below 1 MiB median " << median_of(small) << " % (largest " << small.back() << ")\n";
    EXPECT_LE(median_of(big), 10.0) << file;
    ASSERT_TRUE(f->below_1mib_median_abs_pct_error && f->below_1mib_max_abs_pct_error);
    EXPECT_NEAR(*f->below_1mib_median_abs_pct_error, median_of(small), 1e-6) << file;
    EXPECT_NEAR(*f->below_1mib_max_abs_pct_error, small.back(), 1e-6) << file;
    // The floor is the file's own: within 10 % of its smallest non-empty row.
    double smallest = 0;
    for (const nccl_row& r : t.rows)
      if (r.bytes > 0) {
        smallest = r.time_s;
        break;
      }
    EXPECT_NEAR(f->alpha_s / smallest, 1.0, 0.1) << file;
  }
}

// The 2-GPU run (README.md: 256 MiB .. 8 GiB only, no header, so the GPU count is given): its
// rows cannot show a floor (a free line puts one at ~124 us, the bandwidth still rising), so the
// shipped fit takes the floor of the same node's 4-GPU all_reduce fit ("given") and fits the bus
// bandwidth alone. Within 10 % median from 256 MiB up; below that the 2-GPU error is not known.
TEST(CommPublished, ShippedH100FiguresReproduceThePublishedTwoGpuRun) {
  const hardware_spec hw = shipped("h100-sxm");
  const nccl_table t = load_nccl_tests(k_dir + k_ar2);
  EXPECT_EQ(t.gpus, 0);  // no Rank lines, no nGpus header
  ASSERT_EQ(t.rows.size(), 6u);
  EXPECT_EQ(t.rows[0].bytes, std::int64_t{256} << 20);
  EXPECT_DOUBLE_EQ(t.rows[5].time_s, 24765.0e-6);
  const collective_fit* f2 = find_fit(*hw.interconnect, collective::all_reduce, link_class::intra_node, 2);
  const collective_fit* f4 = find_fit(*hw.interconnect, collective::all_reduce, link_class::intra_node, 4);
  ASSERT_TRUE(f2 && f4);
  ASSERT_EQ(f2->gpus, 2);
  EXPECT_EQ(f2->floor_source, "given");
  EXPECT_NEAR(f2->alpha_s, f4->alpha_s, 0.01e-6);  // given to 0.01 us
  const std::vector<double> e = file_errors(hw, k_ar2, collective::all_reduce, 2, 0, k_all, "fitted");
  ASSERT_EQ(e.size(), 6u);
  std::cout << k_ar2 << ": bus " << f2->bus_bytes_s / 1e9 << " GB/s; median " << median_of(e) << " % (largest "
            << e.back() << ")\n";
  EXPECT_LE(median_of(e), 10.0);
  comm_request req;
  req.gpus = 2;
  req.bytes = 8;
  const comm_prediction p = predict_collective(hw, req);
  EXPECT_EQ(p.source, "fitted");
  EXPECT_EQ(p.floor_source, "given");
  EXPECT_TRUE(p.outside_fit_range);
}

// With the floor given, the fit minimises the relative squared error over the bandwidth alone:
// moving the fitted bandwidth either way by 0.5 % makes the error larger.
TEST(CommPublished, AGivenFloorFitsTheBandwidthAlone) {
  const hardware_spec hw = datasheet_h100();
  const nccl_table t = load_nccl_tests(k_dir + k_ar2);
  comm_fit_options o;
  o.gpus = 2;
  o.floor_s = 23e-6;
  const collective_fit f = fit_nccl_table(t, *hw.interconnect, o);
  EXPECT_DOUBLE_EQ(f.alpha_s, 23e-6);
  EXPECT_EQ(f.floor_source, "given");
  EXPECT_EQ(f.ramp_to_bytes, 0);
  const auto ssr = [&](double bus) {
    double s = 0;
    for (const nccl_row& r : t.rows) {
      const double e = (23e-6 + static_cast<double>(r.bytes) / bus - r.time_s) / r.time_s;  // busbw factor 1 at 2
      s += e * e;
    }
    return s;
  };
  EXPECT_LT(ssr(f.bus_bytes_s), ssr(f.bus_bytes_s * 1.005));
  EXPECT_LT(ssr(f.bus_bytes_s), ssr(f.bus_bytes_s * 0.995));
  // The floor given with no GPU count: the file says none.
  comm_fit_options none;
  none.floor_s = 23e-6;
  EXPECT_THROW(fit_nccl_table(t, *hw.interconnect, none), modsim::error);
}

// Collectives and GPU counts without a fit of their own are derived, and say so: all_gather on
// 8 GPUs from the 4-GPU all_gather fit (floor as measured, bandwidth by the busbw factor),
// all_to_all and send_recv from the all_gather fit (no published H100 alltoall_perf or
// sendrecv_perf run was at hand).
TEST(CommPublished, DerivedCollectivesNameTheFitTheyComeFrom) {
  const hardware_spec hw = shipped("h100-sxm");
  const collective_fit& ag4 = *find_fit(*hw.interconnect, collective::all_gather, link_class::intra_node, 4);
  ASSERT_EQ(ag4.gpus, 4);
  comm_request r;
  r.op = collective::all_gather;
  r.gpus = 8;
  r.bytes = 8;
  comm_prediction p = predict_collective(hw, r);
  EXPECT_EQ(p.source, "derived");
  EXPECT_EQ(p.floor_source, "derived");
  EXPECT_EQ(p.bandwidth_source, "derived");
  ASSERT_EQ(ag4.ramp_to_bytes, 0);  // one line: no saturating bandwidth
  EXPECT_NEAR(p.time_s, ag4.alpha_s + 8 * (7.0 / 8) / ag4.bus_bytes_s, 1e-12);
  for (collective c : {collective::all_to_all, collective::send_recv}) {
    r.op = c;
    r.gpus = 8;
    r.bytes = std::int64_t{8} << 30;  // past the ramp: the saturated bus bandwidth
    p = predict_collective(hw, r);
    ASSERT_TRUE(p.fit);
    EXPECT_EQ(p.fit->collective, "all_gather");
    EXPECT_EQ(p.source, "derived");
    EXPECT_NEAR(p.time_s, ag4.alpha_s + static_cast<double>(r.bytes) * busbw_factor(c, 8) / ag4.bus_bytes_s, 1e-12);
    ASSERT_FALSE(p.notes.empty());
    EXPECT_NE(p.notes[0].find("derived: no fit for"), std::string::npos) << p.notes[0];
  }
  // A fit of its own at the count asked: fitted, no note.
  r.op = collective::all_reduce;
  r.gpus = 4;
  r.bytes = 1 << 20;
  p = predict_collective(hw, r);
  EXPECT_EQ(p.source, "fitted");
  EXPECT_TRUE(p.notes.empty());
}

// How good the cross-collective derivation is, measured where both sides are published: all_gather
// and reduce_scatter on 4 GPUs derived from the 4-GPU all_reduce fit alone (its floor, its bus
// bandwidth times their busbw factor), against their own files, from 1 MiB up: within 10 %
// median (all_gather 7.9 %, reduce_scatter 6.0 % when committed; below 1 MiB 7.5 % and 10.2 %).
TEST(CommPublished, DerivingFromAllReduceAgainstThePublishedFourGpuRuns) {
  hardware_spec hw = shipped("h100-sxm");
  const collective_fit ar4 = *find_fit(*hw.interconnect, collective::all_reduce, link_class::intra_node, 4);
  hw.interconnect->calibration = {ar4};
  for (const auto& [file, op] :
       {std::pair{k_ag4, collective::all_gather}, std::pair{k_rs4, collective::reduce_scatter}}) {
    const std::vector<double> e = file_errors(hw, file, op, 4, k_mib, k_all, "derived");
    const std::vector<double> small = file_errors(hw, file, op, 4, 0, k_mib, "derived");
    std::cout << file << " derived from all_reduce: from 1 MiB median " << median_of(e) << " % (largest " << e.back()
              << "); below 1 MiB median " << median_of(small) << " %\n";
    EXPECT_LE(median_of(e), 10.0) << file;  // all_gather 7.9 %, reduce_scatter 6.0 % when committed
  }
}
