// Collectives (sim/parallel/comm.hpp): every algorithm's alpha-beta time worked by hand for both link
// classes, the choice of the fastest, nccl-tests' busbw factors, byte suffixes, and the
// bad-input errors.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.hpp"
#include "sim/parallel/comm.hpp"

using namespace modsim;
using namespace modsim::sim;

namespace {

// 4 GPUs per node; intra-node 100 GB/s and 2 us, inter-node 25 GB/s and 10 us.
interconnect_spec round_links() {
  interconnect_spec ic;
  ic.gpus_per_node = 4;
  ic.intra_node = {"fast", 100e9, 2e-6};
  ic.inter_node = link_spec{"slow", 25e9, 10e-6};
  ic.source = "test";
  return ic;
}

hardware_spec round_hardware() {
  hardware_spec h;
  h.name = "round";
  h.interconnect = round_links();
  return h;
}

// A fitted all-reduce over 4 GPUs of the intra-node link: alpha, bus bandwidth and the sizes it
// was fitted on (6 points unless set).
collective_fit all_reduce_fit(double alpha_s, double bus_bytes_s, std::int64_t min_bytes, std::int64_t max_bytes) {
  collective_fit f;
  f.collective = "all_reduce";
  f.link = "intra_node";
  f.gpus = 4;
  f.alpha_s = alpha_s;
  f.bus_bytes_s = bus_bytes_s;
  f.points = 6;
  f.min_bytes = min_bytes;
  f.max_bytes = max_bytes;
  return f;
}

constexpr std::int64_t k_gb = 1'000'000'000;  // N = 1e9 bytes keeps the hand arithmetic decimal

double t(collective c, comm_algorithm a, std::int64_t n, int g) { return collective_time(c, a, n, g, round_links()); }

std::string bad_input(const std::function<void()>& f) {
  try {
    f();
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    return e.what();
  }
  ADD_FAILURE() << "expected a bad_input error";
  return {};
}

}  // namespace

TEST(Comm, BusbwFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor(collective::all_reduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(collective::all_gather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(collective::reduce_scatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(busbw_factor(collective::all_to_all, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(busbw_factor(collective::send_recv, 8), 1.0);
}

// One node (G = 4 <= 4): the intra-node link, alpha 2 us, B 100 GB/s.
TEST(Comm, IntraNodeTimesByHand) {
  // ring all_reduce: 2(G-1) alpha + 2(G-1)/G N/B = 6 x 2 us + 1.5 x 1e9 / 100e9 s = 12 us + 15 ms
  EXPECT_DOUBLE_EQ(t(collective::all_reduce, comm_algorithm::ring, k_gb, 4), 12e-6 + 0.015);
  // double binary tree: 2 ceil(log2 4) alpha + 2 N/B = 8 us + 20 ms
  EXPECT_DOUBLE_EQ(t(collective::all_reduce, comm_algorithm::tree, k_gb, 4), 8e-6 + 0.02);
  // all_gather / reduce_scatter ring: (G-1) alpha + (G-1)/G N/B = 6 us + 7.5 ms
  EXPECT_DOUBLE_EQ(t(collective::all_gather, comm_algorithm::ring, k_gb, 4), 6e-6 + 0.0075);
  EXPECT_DOUBLE_EQ(t(collective::reduce_scatter, comm_algorithm::ring, k_gb, 4), 6e-6 + 0.0075);
  // all_to_all direct: (G-1) alpha + (G-1)/G N/B = 6 us + 7.5 ms
  EXPECT_DOUBLE_EQ(t(collective::all_to_all, comm_algorithm::direct, k_gb, 4), 6e-6 + 0.0075);
  // send_recv: alpha + N/B = 2 us + 10 ms
  EXPECT_DOUBLE_EQ(t(collective::send_recv, comm_algorithm::direct, k_gb, 4), 2e-6 + 0.01);
  // 3 GPUs: the tree's depth is ceil(log2 3) = 2; ring 2 x 2 x 2 us + 4/3 x 1e9/100e9
  EXPECT_DOUBLE_EQ(t(collective::all_reduce, comm_algorithm::tree, k_gb, 3), 8e-6 + 0.02);
  EXPECT_DOUBLE_EQ(t(collective::all_reduce, comm_algorithm::ring, k_gb, 3), 8e-6 + 4.0 / 3 * 0.01);
}

// Two nodes (G = 8 > 4): the ring runs at its slowest link (10 us, 25 GB/s); the tree is
// hierarchical.
TEST(Comm, InterNodeTimesByHand) {
  // ring all_reduce: 2 x 7 x 10 us + 2 x 7/8 x 1e9 / 25e9 = 140 us + 70 ms
  EXPECT_DOUBLE_EQ(t(collective::all_reduce, comm_algorithm::ring, k_gb, 8), 140e-6 + 0.07);
  // tree: 2 [3 x 2 us + 3/4 x 1e9/100e9] + 2 ceil(log2 2) x 10 us + 2 (1e9/4) / 25e9
  //     = 2 [6 us + 7.5 ms] + 20 us + 20 ms
  EXPECT_NEAR(t(collective::all_reduce, comm_algorithm::tree, k_gb, 8), 12e-6 + 0.015 + 20e-6 + 0.02, 1e-15);
  // all_gather ring: 7 x 10 us + 7/8 x 1e9 / 25e9 = 70 us + 35 ms
  EXPECT_DOUBLE_EQ(t(collective::all_gather, comm_algorithm::ring, k_gb, 8), 70e-6 + 0.035);
  EXPECT_DOUBLE_EQ(t(collective::reduce_scatter, comm_algorithm::ring, k_gb, 8), 70e-6 + 0.035);
  // all_to_all: max(3 x 2 us + 3/8 x 1e9/100e9, 4 x 10 us + 4/8 x 1e9/25e9) = max(3.756 ms, 20.04 ms)
  EXPECT_DOUBLE_EQ(t(collective::all_to_all, comm_algorithm::direct, k_gb, 8), 40e-6 + 0.02);
  // send_recv over the inter-node link: 10 us + 40 ms
  EXPECT_DOUBLE_EQ(t(collective::send_recv, comm_algorithm::direct, k_gb, 8), 10e-6 + 0.04);
  // 4 nodes: the tree over nodes is ceil(log2 4) = 2 deep: 2 [6 us + 7.5 ms] + 40 us + 20 ms
  EXPECT_NEAR(t(collective::all_reduce, comm_algorithm::tree, k_gb, 16), 12e-6 + 0.015 + 40e-6 + 0.02, 1e-15);
}

TEST(Comm, AutoTakesTheFastestAndSaysWhich) {
  const hardware_spec hw = round_hardware();
  comm_request r;
  r.op = collective::all_reduce;
  r.gpus = 4;
  r.bytes = k_gb;  // bandwidth-bound: ring 15.012 ms beats tree 20.008 ms
  comm_prediction p = predict_collective(hw, r);
  EXPECT_EQ(p.algorithm, comm_algorithm::ring);
  EXPECT_DOUBLE_EQ(p.time_s, 12e-6 + 0.015);
  EXPECT_EQ(p.link, link_class::intra_node);
  EXPECT_EQ(p.link_name, "fast");
  EXPECT_EQ(p.nodes, 1);
  EXPECT_FALSE(p.calibrated);
  ASSERT_EQ(p.analytic.size(), 2u);
  EXPECT_DOUBLE_EQ(p.algbw_bytes_s, 1e9 / (12e-6 + 0.015));
  EXPECT_DOUBLE_EQ(p.busbw_bytes_s, 1.5 * 1e9 / (12e-6 + 0.015));

  r.bytes = 1000;  // latency-bound: tree 8 us + 20 ns beats ring 12 us + 15 ns
  p = predict_collective(hw, r);
  EXPECT_EQ(p.algorithm, comm_algorithm::tree);
  EXPECT_DOUBLE_EQ(p.time_s, 8e-6 + 2.0 * 1000 / 100e9);

  r.gpus = 8;  // two nodes, 1 GB: hierarchical tree 35.032 ms beats ring 70.14 ms
  r.bytes = k_gb;
  p = predict_collective(hw, r);
  EXPECT_EQ(p.algorithm, comm_algorithm::tree);
  EXPECT_EQ(p.link, link_class::inter_node);
  EXPECT_EQ(p.link_name, "slow");
  EXPECT_EQ(p.nodes, 2);
  EXPECT_NEAR(p.time_s, 0.035032, 1e-12);

  r.algorithm = comm_algorithm::ring;  // asked for: no choice
  p = predict_collective(hw, r);
  EXPECT_EQ(p.algorithm, comm_algorithm::ring);
  EXPECT_DOUBLE_EQ(p.time_s, 140e-6 + 0.07);
}

TEST(Comm, FitIsUsedByAutoWhenPresent) {
  hardware_spec hw = round_hardware();
  hw.interconnect->calibration.push_back(all_reduce_fit(5e-6, 80e9, 8, 4 * k_gb));
  comm_request r;
  r.op = collective::all_reduce;
  r.gpus = 4;
  r.bytes = k_gb;
  // 5 us + 1e9 x 1.5 / 80e9 = 5 us + 18.75 ms
  comm_prediction p = predict_collective(hw, r);
  EXPECT_TRUE(p.calibrated);
  EXPECT_EQ(p.algorithm, comm_algorithm::fitted);
  EXPECT_DOUBLE_EQ(p.time_s, 5e-6 + 0.01875);
  EXPECT_TRUE(p.notes.empty());
  // 2 GPUs, same link class: the busbw factor is 1: 5 us + 12.5 ms, and a note says so.
  r.gpus = 2;
  p = predict_collective(hw, r);
  EXPECT_TRUE(p.calibrated);
  EXPECT_DOUBLE_EQ(p.time_s, 5e-6 + 0.0125);
  EXPECT_EQ(p.notes.size(), 1u);
  // An explicit algorithm is the alpha-beta model.
  r.gpus = 4;
  r.algorithm = comm_algorithm::ring;
  p = predict_collective(hw, r);
  EXPECT_FALSE(p.calibrated);
  EXPECT_DOUBLE_EQ(p.time_s, 12e-6 + 0.015);
  // Across nodes there is no fit: the model.
  r.algorithm.reset();
  r.gpus = 8;
  p = predict_collective(hw, r);
  EXPECT_FALSE(p.calibrated);
  EXPECT_EQ(p.algorithm, comm_algorithm::tree);
  // Another collective without a fit of its own is derived from the all-reduce fit: its floor,
  // its bus bandwidth times all_gather's busbw factor 3/4: 5 us + 1e9 x 0.75 / 80e9 = 5 us +
  // 9.375 ms, and a note names the fit.
  r.op = collective::all_gather;
  r.gpus = 4;
  p = predict_collective(hw, r);
  EXPECT_TRUE(p.calibrated);
  EXPECT_EQ(p.source, "derived");
  EXPECT_DOUBLE_EQ(p.time_s, 5e-6 + 0.009375);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("the all_reduce fit at 4 GPUs"), std::string::npos) << p.notes[0];
  // Across nodes no fit of any collective: asking for `fitted` is an error that says so.
  r.gpus = 8;
  r.algorithm = comm_algorithm::fitted;
  EXPECT_NE(bad_input([&] { predict_collective(hw, r); })
                .find("interconnect.calibration: no fit for all_gather or a collective it can be derived from over "
                      "inter_node"),
            std::string::npos);
}

// A fit with a saturating bus bandwidth: 100 GB/s up to 1 MiB, 400 GB/s from 1 GiB, the time per
// bus byte straight in log2(size) between; 4 GPUs (busbw factor 1.5).
TEST(Comm, FitWithARampByHand) {
  hardware_spec hw = round_hardware();
  collective_fit f = all_reduce_fit(20e-6, 400e9, 1024, std::int64_t{1} << 32);
  f.ramp_bus_bytes_s = 100e9;
  f.ramp_from_bytes = std::int64_t{1} << 20;
  f.ramp_to_bytes = std::int64_t{1} << 30;
  f.points = 10;
  hw.interconnect->calibration.push_back(f);
  comm_request r;
  r.op = collective::all_reduce;
  r.gpus = 4;
  const auto time = [&](std::int64_t n) {
    r.bytes = n;
    return predict_collective(hw, r).time_s;
  };
  // 64 KiB, below the ramp: 20 us + 65536 x 1.5 / 100e9.
  EXPECT_DOUBLE_EQ(time(65536), 20e-6 + 65536 * 1.5 / 100e9);
  // 2^25 = 32 MiB, half way (log2 25 of 20 .. 30): beta = (1/100e9 + 1/400e9) / 2 = 6.25e-12 s/B.
  EXPECT_NEAR(time(std::int64_t{1} << 25), 20e-6 + 33554432 * 1.5 * 6.25e-12, 1e-15);
  // 2 GiB, above it: 400 GB/s.
  EXPECT_DOUBLE_EQ(time(std::int64_t{1} << 31), 20e-6 + 2147483648.0 * 1.5 / 400e9);
  EXPECT_FALSE(predict_collective(hw, r).outside_fit_range);
}

// A fitted line used outside the sizes it was fitted on says so (a note and a flag).
TEST(Comm, OutsideTheFittedSizesIsSaid) {
  hardware_spec hw = round_hardware();
  hw.interconnect->calibration.push_back(all_reduce_fit(5e-6, 80e9, 1024, 1 << 20));
  comm_request r;
  r.op = collective::all_reduce;
  r.gpus = 4;
  for (std::int64_t n : {std::int64_t{1024}, std::int64_t{65536}, std::int64_t{1} << 20}) {
    r.bytes = n;
    const comm_prediction p = predict_collective(hw, r);
    EXPECT_FALSE(p.outside_fit_range) << n;
    EXPECT_TRUE(p.notes.empty()) << n;
  }
  for (std::int64_t n : {std::int64_t{512}, (std::int64_t{1} << 20) + 1, std::int64_t{1} << 30}) {
    r.bytes = n;
    const comm_prediction p = predict_collective(hw, r);
    EXPECT_TRUE(p.outside_fit_range) << n;
    ASSERT_EQ(p.notes.size(), 1u) << n;
    EXPECT_NE(p.notes[0].find("outside the sizes the fit was made on (1024 .. 1048576 bytes)"), std::string::npos)
        << p.notes[0];
  }
  // The alpha-beta model has no fitted range.
  r.algorithm = comm_algorithm::tree;
  EXPECT_FALSE(predict_collective(hw, r).outside_fit_range);
}

TEST(Comm, LegacyInterconnectBytesIsTheOneLink) {
  hardware_spec hw;
  hw.name = "old";
  hw.interconnect_bytes_s = 900e9;
  comm_request r;
  r.op = collective::send_recv;
  r.gpus = 16;  // no node boundary is known: every GPU on the one link
  r.bytes = 900'000'000;
  const comm_prediction p = predict_collective(hw, r);
  EXPECT_DOUBLE_EQ(p.time_s, 1e-3);  // 0 latency + 9e8 / 900e9
  EXPECT_EQ(p.link, link_class::intra_node);
  EXPECT_EQ(p.gpus_per_node, 0);
  EXPECT_EQ(p.notes.size(), 1u);
  hw.interconnect_bytes_s = 0;
  hw.source_file = "cpu.json";
  EXPECT_NE(bad_input([&] { predict_collective(hw, r); }).find("cpu.json: interconnect: "), std::string::npos);
}

TEST(Comm, BadRequestsAreBadInput) {
  const interconnect_spec ic = round_links();
  EXPECT_NE(bad_input([&] { collective_time(collective::all_reduce, comm_algorithm::ring, 8, 1, ic); }).find("--gpus"),
            std::string::npos);
  // 6 GPUs over nodes of 4.
  EXPECT_NE(bad_input([&] {
              collective_time(collective::all_reduce, comm_algorithm::ring, 8, 6, ic);
            }).find("give a multiple of 4"),
            std::string::npos);
  // One node only.
  interconnect_spec one = ic;
  one.inter_node.reset();
  EXPECT_NE(bad_input([&] {
              collective_time(collective::all_gather, comm_algorithm::ring, 8, 8, one, "hw.json");
            }).find("hw.json: interconnect.inter_node: "),
            std::string::npos);
  // An algorithm that does not apply.
  EXPECT_NE(bad_input([&] {
              collective_time(collective::all_to_all, comm_algorithm::ring, 8, 4, ic);
            }).find("--algorithm: ring does not apply to all_to_all"),
            std::string::npos);
  EXPECT_NE(bad_input([&] {
              collective_time(collective::all_gather, comm_algorithm::tree, 8, 4, ic);
            }).find("--algorithm: tree does not apply to all_gather"),
            std::string::npos);
}

TEST(Comm, BytesTakeBinarySuffixes) {
  EXPECT_EQ(parse_bytes("123", "--bytes"), 123);
  EXPECT_EQ(parse_bytes("64K", "--bytes"), 65536);
  EXPECT_EQ(parse_bytes("1M", "--bytes"), 1048576);
  EXPECT_EQ(parse_bytes("1m", "--bytes"), 1048576);
  EXPECT_EQ(parse_bytes("8G", "--bytes"), 8LL * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_bytes("2T", "--bytes"), 2LL * 1024 * 1024 * 1024 * 1024);
  for (const char* bad : {"", "1.5M", "1MB", "-1", "M", "1 M", "99999999999999999999"})
    EXPECT_NE(bad_input([&] { parse_bytes(bad, "--bytes"); }).find("--bytes: "), std::string::npos) << bad;
}

TEST(Comm, NamesRoundTrip) {
  for (collective c : {collective::all_reduce, collective::all_gather, collective::reduce_scatter,
                       collective::all_to_all, collective::send_recv})
    EXPECT_EQ(find_collective(to_string(c)), c);
  EXPECT_EQ(find_collective("alltoall"), collective::all_to_all);
  EXPECT_EQ(find_collective("sendrecv"), collective::send_recv);
  EXPECT_FALSE(find_collective("broadcast"));
}
