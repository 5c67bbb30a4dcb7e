// nccl-tests' output (sim/parallel/nccl_tests.hpp) and the fit to it (sim/parallel/comm_calibrate.hpp), on the
// hand-made files of tests/data/nccl/ (README there: their times follow t = alpha + N x
// factor / B exactly, so the fit must give back alpha and B).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "core/error.hpp"
#include "sim/parallel/comm_calibrate.hpp"
#include "sim/model/config.hpp"
#include "sim/parallel/nccl_tests.hpp"

using namespace modsim;
using namespace modsim::sim;

namespace {

const std::string k_data = std::string(MODSIM_SOURCE_DIR) + "/tests/data/nccl/";

interconnect_spec node_of_8() {
  interconnect_spec ic;
  ic.gpus_per_node = 8;
  ic.intra_node = {"nvlink", 450e9, 1e-6};
  ic.inter_node = link_spec{"ib", 50e9, 5e-6};
  return ic;
}

std::string parse_error(const std::string& text, const std::string& file = "x.txt") {
  try {
    parse_nccl_tests(text, file);
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "expected a bad_input error";
  return {};
}

const char* const k_header =
    "# nThread 1 nGpus 4 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";

}  // namespace

TEST(NcclTests, ReadsTheAllReduceTable) {
  const nccl_table t = load_nccl_tests(k_data + "all_reduce_perf-8gpu.txt");
  EXPECT_EQ(t.op, collective::all_reduce);  // from "# Collective test starting: all_reduce_perf"
  EXPECT_EQ(t.gpus, 8);                     // eight "# Rank" lines
  EXPECT_EQ(t.nodes, 1);                    // all on testhost
  ASSERT_EQ(t.rows.size(), 6u);
  EXPECT_EQ(t.rows[0].bytes, 8);
  EXPECT_EQ(t.rows[0].count, 2);
  EXPECT_EQ(t.rows[0].type, "float");
  EXPECT_DOUBLE_EQ(t.rows[0].time_s, 10.00008e-6);
  const nccl_row& r = t.rows[3];  // "1048576  262144  float  sum  -1  20.48576  51.19  89.57  0  20.98576 ..."
  EXPECT_EQ(r.bytes, 1048576);
  EXPECT_EQ(r.count, 262144);
  EXPECT_DOUBLE_EQ(r.time_s, 20.48576e-6);
  EXPECT_DOUBLE_EQ(r.algbw_bytes_s, 51.19e9);
  EXPECT_DOUBLE_EQ(r.busbw_bytes_s, 89.57e9);
  ASSERT_TRUE(r.in_place_time_s);
  EXPECT_DOUBLE_EQ(*r.in_place_time_s, 20.98576e-6);
  EXPECT_EQ(r.line, 22);
  EXPECT_EQ(t.rows[5].bytes, 268435456);
  EXPECT_DOUBLE_EQ(t.rows[5].time_s, 2694.35456e-6);
  // The row whose in-place #wrong is N/A still has its in-place time.
  ASSERT_TRUE(t.rows[2].in_place_time_s);
  EXPECT_DOUBLE_EQ(*t.rows[2].in_place_time_s, 11.15536e-6);
  ASSERT_TRUE(t.avg_busbw_bytes_s);
  EXPECT_DOUBLE_EQ(*t.avg_busbw_bytes_s, 30.1234e9);
}

TEST(NcclTests, ReadsTheOlderAlltoallLayoutOverTwoNodes) {
  const nccl_table t = load_nccl_tests(k_data + "alltoall_perf-2x8gpu.txt");
  EXPECT_EQ(t.op, collective::all_to_all);  // from the file name
  EXPECT_EQ(t.gpus, 16);                    // 16 Rank lines (nThread 1 x nGpus 1 per process)
  EXPECT_EQ(t.nodes, 2);                    // node-a, node-b
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[2].bytes, 1048576);
  EXPECT_DOUBLE_EQ(t.rows[2].time_s, 46.2144e-6);
  EXPECT_DOUBLE_EQ(t.rows[2].algbw_bytes_s, 22.69e9);
  EXPECT_DOUBLE_EQ(t.rows[2].busbw_bytes_s, 21.27e9);
  EXPECT_DOUBLE_EQ(*t.avg_busbw_bytes_s, 5.5e9);
}

// all_reduce file: t = 10 us + 1.75 N / 175 GB/s; alltoall file: t = 20 us + (15/16) N / 37.5 GB/s.
TEST(NcclTests, FitGivesBackAlphaAndBusBandwidth) {
  const interconnect_spec ic = node_of_8();
  const collective_fit a = fit_nccl_table(load_nccl_tests(k_data + "all_reduce_perf-8gpu.txt"), ic, {});
  EXPECT_EQ(a.collective, "all_reduce");
  EXPECT_EQ(a.link, "intra_node");
  EXPECT_EQ(a.gpus, 8);
  EXPECT_NEAR(a.alpha_s, 10e-6, 1e-12);
  EXPECT_NEAR(a.bus_bytes_s / 175e9, 1.0, 1e-9);
  EXPECT_EQ(a.points, 6);
  EXPECT_EQ(a.min_bytes, 8);
  EXPECT_EQ(a.max_bytes, 268435456);
  EXPECT_NEAR(a.median_abs_pct_error, 0.0, 1e-6);
  EXPECT_EQ(a.ramp_to_bytes, 0);  // 6 sizes: a line

  const collective_fit b = fit_nccl_table(load_nccl_tests(k_data + "alltoall_perf-2x8gpu.txt"), ic, {});
  EXPECT_EQ(b.collective, "all_to_all");
  EXPECT_EQ(b.link, "inter_node");
  EXPECT_EQ(b.gpus, 16);
  EXPECT_NEAR(b.alpha_s, 20e-6, 1e-12);
  EXPECT_NEAR(b.bus_bytes_s / 37.5e9, 1.0, 1e-9);
}

// 8 GPUs in one node, one row per power of two from 1 KiB to 4 GiB (23 sizes), the times made
// here by t = 30 us + 1.75 N x beta(N), beta = 1 / 300e9 up to 8 MiB, 1 / 480e9 from 512 MiB,
// straight in log2(N) between (the ramp of sim/model/spec.hpp's collective_fit), or 1 / 400e9 for
// every size (a line).
nccl_table made_up_table(bool ramp) {
  nccl_table t;
  t.file = ramp ? "ramp.txt" : "line.txt";
  t.op = collective::all_reduce;
  t.gpus = 8;
  t.nodes = 1;
  for (int k = 10; k <= 32; ++k) {
    const double n = std::ldexp(1.0, k);
    double beta = 1 / 400e9;
    if (ramp) {
      const double w = std::clamp((k - 23) / 6.0, 0.0, 1.0);
      beta = (1 - w) / 300e9 + w / 480e9;
    }
    nccl_row r;
    r.bytes = std::int64_t{1} << k;
    r.time_s = 30e-6 + 1.75 * n * beta;
    t.rows.push_back(r);
  }
  return t;
}

TEST(NcclTests, FitFindsASaturatingBandwidth) {
  const collective_fit f = fit_nccl_table(made_up_table(true), node_of_8(), {});
  EXPECT_NEAR(f.alpha_s, 30e-6, 1e-12);
  EXPECT_NEAR(f.ramp_bus_bytes_s / 300e9, 1.0, 1e-9);
  EXPECT_NEAR(f.bus_bytes_s / 480e9, 1.0, 1e-9);
  EXPECT_EQ(f.ramp_from_bytes, std::int64_t{1} << 23);
  EXPECT_EQ(f.ramp_to_bytes, std::int64_t{1} << 29);
  EXPECT_EQ(f.points, 23);
  EXPECT_NEAR(f.median_abs_pct_error, 0.0, 1e-6);
  // The error split at 1 MiB: 10 rows below (1 KiB .. 512 KiB), 13 from 1 MiB up.
  ASSERT_TRUE(f.below_1mib_median_abs_pct_error && f.below_1mib_max_abs_pct_error);
  ASSERT_TRUE(f.from_1mib_median_abs_pct_error);
  EXPECT_NEAR(*f.below_1mib_max_abs_pct_error, 0.0, 1e-6);
  EXPECT_NEAR(*f.from_1mib_median_abs_pct_error, 0.0, 1e-6);

  // A line stays a line, however many sizes.
  const collective_fit l = fit_nccl_table(made_up_table(false), node_of_8(), {});
  EXPECT_EQ(l.ramp_to_bytes, 0);
  EXPECT_EQ(l.ramp_bus_bytes_s, 0.0);
  EXPECT_NEAR(l.alpha_s, 30e-6, 1e-12);
  EXPECT_NEAR(l.bus_bytes_s / 400e9, 1.0, 1e-9);

  // Fewer than 8 sizes: no ramp is tried (the line's error shows instead).
  comm_fit_options few;
  few.min_bytes = std::int64_t{1} << 24;
  few.max_bytes = std::int64_t{1} << 30;
  const collective_fit g = fit_nccl_table(made_up_table(true), node_of_8(), few);
  EXPECT_EQ(g.points, 7);
  EXPECT_EQ(g.ramp_to_bytes, 0);
  EXPECT_GT(g.median_abs_pct_error, 0.1);
  EXPECT_FALSE(g.below_1mib_median_abs_pct_error);  // no row below 1 MiB
}

TEST(NcclTests, RowSelection) {
  const nccl_table t = load_nccl_tests(k_data + "all_reduce_perf-8gpu.txt");
  comm_fit_options o;
  o.min_bytes = 1024;
  o.max_bytes = 16777216;  // 1024, 65536, 1048576, 16777216
  EXPECT_EQ(fit_nccl_table(t, node_of_8(), o).points, 4);
  o.every = 2;
  o.offset = 1;  // rows 1, 3, 5 of the file (1024, 1048576, 268435456), then the range: 1024, 1048576
  const collective_fit f = fit_nccl_table(t, node_of_8(), o);
  EXPECT_EQ(f.points, 2);
  EXPECT_EQ(f.min_bytes, 1024);
  EXPECT_EQ(f.max_bytes, 1048576);
  o.every = 1;
  o.min_bytes = o.max_bytes = 1024;  // one size: nothing to fit
  try {
    fit_nccl_table(t, node_of_8(), o);
    ADD_FAILURE();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than two distinct sizes"), std::string::npos);
  }
}

// The weighted line by hand: points exactly on t = 3 + 2x give alpha 3, beta 2; points on
// t = 2x - 1 would need alpha < 0, so the line goes through the origin with
// beta = sum(x/t) / sum(x^2/t^2).
TEST(NcclTests, RelativeLineFit) {
  line_fit f = fit_relative_line({1, 2, 4}, {5, 7, 11});
  EXPECT_NEAR(f.alpha, 3, 1e-12);
  EXPECT_NEAR(f.beta, 2, 1e-12);
  f = fit_relative_line({1, 2}, {1, 3});
  EXPECT_DOUBLE_EQ(f.alpha, 0);
  EXPECT_NEAR(f.beta, (1.0 / 1 + 2.0 / 3) / (1.0 / 1 + 4.0 / 9), 1e-12);
}

TEST(NcclTests, CheckComparesRowByRow) {
  hardware_spec hw;
  hw.name = "t";
  hw.interconnect = node_of_8();
  hw.interconnect->calibration.push_back(
      fit_nccl_table(load_nccl_tests(k_data + "all_reduce_perf-8gpu.txt"), *hw.interconnect, {}));
  const auto rows = check_nccl_table(load_nccl_tests(k_data + "all_reduce_perf-8gpu.txt"), hw, {});
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_NEAR(rows[3].predicted_s, 20.48576e-6, 1e-15);
  EXPECT_NEAR(median_abs_pct_error(rows), 0.0, 1e-6);
  std::vector<comm_check_row> hand = {{1, 1, 1.1, 10}, {2, 1, 0.8, -20}, {3, 1, 1.05, 5}, {4, 1, 1.3, 30}};
  EXPECT_DOUBLE_EQ(median_abs_pct_error(hand), 15);  // |errors| 5, 10, 20, 30
}

TEST(NcclTests, BadInputNamesFileAndLine) {
  // Line 4: nine columns where the header has thirteen.
  EXPECT_EQ(parse_error(std::string(k_header) + "8 2 float sum -1 10.0 0.00 0.00 0\n"),
            "x.txt: line 4: expected 13 columns as in the header, got 9");
  EXPECT_EQ(parse_error(std::string(k_header) + "\n8 2 float sum -1 fast 0.00 0.00 0 10.0 0.00 0.00 0\n"),
            "x.txt: line 5: out-of-place time 'fast' is not a positive number of microseconds");
  EXPECT_EQ(parse_error(std::string(k_header) + "8x 2 float sum -1 10.0 0.00 0.00 0 10.0 0.00 0.00 0\n"),
            "x.txt: line 4: size '8x' is not a byte count");
  EXPECT_EQ(parse_error(std::string(k_header) + "8 2 float sum -1 0 0.00 0.00 0 10.0 0.00 0.00 0\n"),
            "x.txt: line 4: out-of-place time '0' is not a positive number of microseconds");
  EXPECT_EQ(parse_error(std::string(k_header) + "# Avg bus bandwidth : 0\n"),
            "x.txt: no data rows (not nccl-tests output?)");
  EXPECT_EQ(parse_error("hello\n"), "x.txt: no data rows (not nccl-tests output?)");
  // A table that names neither its collective nor its GPU count cannot be fitted.
  const nccl_table t = parse_nccl_tests(
      "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
      "8 2 float sum -1 10.0 0.00 0.00 0 10.0 0.00 0.00 0\n"
      "1024 256 float sum -1 20.0 0.05 0.09 0 20.0 0.05 0.09 0\n",
      "run.txt");
  EXPECT_FALSE(t.op);
  EXPECT_EQ(t.gpus, 0);
  try {
    fit_nccl_table(t, node_of_8(), {});
    ADD_FAILURE();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("run.txt: cannot tell which collective"), std::string::npos);
  }
  comm_fit_options o;
  o.op = collective::all_reduce;
  try {
    fit_nccl_table(t, node_of_8(), o);
    ADD_FAILURE();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("run.txt: cannot tell the GPU count"), std::string::npos);
  }
  o.gpus = 4;  // now it fits: t = 10 us + 1.5 N / B through (8, 10 us), (1024, 20 us)
  const collective_fit f = fit_nccl_table(t, node_of_8(), o);
  EXPECT_NEAR(f.bus_bytes_s / (1.5 * (1024 - 8) / 10e-6), 1.0, 1e-9);
  EXPECT_EQ(f.link, "intra_node");
}

// Launchers' prefixes: srun --label ("0: ") and Open MPI --tag-output ("[1,0]<stdout>:").
TEST(NcclTests, LauncherPrefixesAreDropped) {
  const nccl_table a = parse_nccl_tests(
      " 0: #  Rank  0 Group  0 Pid 1 on h1 device  0 [0x18] GPU\n"
      " 0: #  Rank  1 Group  0 Pid 2 on h2 device  0 [0x18] GPU\n"
      " 0: #  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
      " 0:        8    2 float sum -1 12.5 0.00 0.00 N/A 12.0 0.00 0.00 N/A\n",
      "a.txt");
  EXPECT_EQ(a.gpus, 2);
  EXPECT_EQ(a.nodes, 2);
  ASSERT_EQ(a.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(a.rows[0].time_s, 12.5e-6);
  const nccl_table b = parse_nccl_tests(
      "[1,0]<stdout>:#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
      "[1,0]<stdout>:           8             2     float     sum      -1    12.90    0.00    0.00      0    12.87    "
      "0.00    0.00      0\n",
      "b.txt");
  ASSERT_EQ(b.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(b.rows[0].time_s, 12.90e-6);
}

TEST(NcclTests, CollectiveFromName) {
  EXPECT_EQ(collective_from_name("build/all_reduce_perf"), collective::all_reduce);
  EXPECT_EQ(collective_from_name("runs/all_gather_perf-8.txt"), collective::all_gather);
  EXPECT_EQ(collective_from_name("reduce_scatter_perf.log"), collective::reduce_scatter);
  EXPECT_EQ(collective_from_name("alltoall_perf"), collective::all_to_all);
  EXPECT_EQ(collective_from_name("SendRecv.txt"), collective::send_recv);
  EXPECT_FALSE(collective_from_name("broadcast_perf"));
}

// modsim comm calibrate's writer: the copy loads, with the fits and the file's other keys.
TEST(NcclTests, CalibratedHardwareFileLoads) {
  const interconnect_spec ic = node_of_8();
  const std::string hw_path = std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm.json";
  const collective_fit f = fit_nccl_table(load_nccl_tests(k_data + "all_reduce_perf-8gpu.txt"), ic, {});
  const auto out = std::filesystem::temp_directory_path() / ("modsim-comm-cal-" + std::to_string(::getpid()) + ".json");
  write_comm_calibrated_hardware(hw_path, {f}, "hand", "2026-11-24", out.string());
  const hardware_spec h = load_hardware(out.string());
  std::filesystem::remove(out);
  EXPECT_EQ(h.name, "h100-sxm-calibrated");
  ASSERT_TRUE(h.interconnect);
  ASSERT_EQ(h.interconnect->calibration.size(), 1u);
  EXPECT_EQ(h.interconnect->calibration_source, "hand");
  EXPECT_NEAR(h.interconnect->calibration[0].bus_bytes_s / 175e9, 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(h.interconnect->intra_node.bytes_s, 450e9);
  EXPECT_DOUBLE_EQ(h.memory_bandwidth_bytes_s, 3.35e12);
}
