// The measurements CSV: header and row round-trip, FLOPs from sim/flops, the writer never
// truncating a user's file, and resume after an interruption measuring every point once.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "profiler/measurements.hpp"
#include "profiler/runner.hpp"
#include "sim/error.hpp"

using namespace modsim;
using namespace modsim::profiler;
namespace fs = std::filesystem;

namespace {

// A backend whose ops take no time: enough to drive the runner and the writer.
class fake_workspace final : public kernels::workspace {
 public:
  fake_workspace(const kernels::block_shape& s, kernels::dtype t) : kernels::workspace(s, t) {}
  std::int64_t size(kernels::tensor) const override { return 0; }
  std::int64_t bytes() const override { return 0; }
  void upload(kernels::tensor, std::span<const float>) override {}
  std::vector<float> download(kernels::tensor) const override { return {}; }
  void upload_indices(kernels::tensor, std::span<const std::int32_t>) override {}
  std::vector<std::int32_t> download_indices(kernels::tensor) const override { return {}; }
  void rotate() override {}
};

class fake_backend final : public kernels::backend {
 public:
  std::string_view name() const override { return "fake"; }
  std::string device() const override { return "fake device, 1 thread"; }
  std::unique_ptr<kernels::workspace> make_workspace(const kernels::block_shape& s, kernels::dtype t,
                                                     const kernels::workspace_options&) override {
    ++workspaces;
    return std::make_unique<fake_workspace>(s, t);
  }
  void run(kernels::op, kernels::workspace&) override { ++runs; }
  void synchronize() override {}
  int workspaces = 0;
  long runs = 0;
};

std::string temp_csv(const char* name) {
  fs::path p = fs::temp_directory_path() / (std::string("modsim_test_") + name + ".csv");
  fs::remove(p);
  return p.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

expansion small_grid() {
  return expand(parse_grid(R"({"ops": ["block_dense", "block_mod", "qkv_proj"], "batch": [1, 2], "seq_len": [16],
                               "d_model": [32], "n_heads": [4], "d_ff": [64], "capacity": [0.25, 0.5]})",
                           "g.json"));
}

run_options fast_options() {
  run_options o;
  o.rule.warmup = 0;
  o.rule.min_samples = 3;
  o.rule.max_samples = 3;
  o.rule.min_time_s = 0;
  return o;
}

}  // namespace

TEST(Measurements, HeaderStartsWithTheContractColumns) {
  EXPECT_EQ(csv_header().rfind("backend,device,op,dtype,batch,seq_len,d_model,n_heads,d_ff,capacity,tokens,"
                               "matmul_flops,bytes,median_s,p10_s,p90_s,samples",
                               0),
            0u);
}

TEST(Measurements, RowsRoundTripThroughText) {
  measurement_row r;
  r.backend = "cpu";
  r.device = "Intel(R) Xeon(R), \"2\" threads";  // needs quoting
  r.op = "block_mod";
  r.dtype = "fp32";
  r.batch = 2;
  r.seq_len = 512;
  r.d_model = 256;
  r.n_heads = 8;
  r.d_ff = 1024;
  r.capacity = 0.125;
  r.tokens = 128;
  r.matmul_flops = 123456789012LL;
  r.bytes = 987654321;
  r.median_s = 1.25e-3;
  r.p10_s = 1.125e-3;
  r.p90_s = 1.5e-3;
  r.samples = 17;
  r.n_kv_heads = 2;
  r.mlp = "swiglu";
  measurement_row back = parse_row(format_row(r), "m.csv", 2);
  EXPECT_EQ(back.device, r.device);
  EXPECT_EQ(back.op, "block_mod");
  EXPECT_EQ(back.matmul_flops, 123456789012LL);
  EXPECT_DOUBLE_EQ(back.capacity, 0.125);
  EXPECT_DOUBLE_EQ(back.median_s, 1.25e-3);
  EXPECT_EQ(back.samples, 17);
  EXPECT_EQ(back.n_kv_heads, 2);
  EXPECT_EQ(back.mlp, "swiglu");
}

TEST(Measurements, BadRowsNameFileLineAndColumn) {
  try {
    parse_row("cpu,dev,block_dense,fp32,one,2,3,4,5,1,1,1,1,1,1,1,1,4,gelu,none,0,0,0,0", "m.csv", 7);
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()), "m.csv:7: batch: expected an integer, got 'one'");
  }
}

TEST(Measurements, RowFlopsComeFromTheFlopModel) {
  // qkv_proj at capacity 0.5 of S = 16 (k = 8), B = 2: T = 16 rows, d = 32, d_q = d_kv·... MHA:
  // 2·T·d·(d + 2d) = 2·16·32·96 = 98304 FLOPs (by hand).
  point p;
  p.op = kernels::op::qkv_proj;
  p.shape.batch = 2;
  p.shape.seq_len = 16;
  p.shape.d_model = 32;
  p.shape.n_heads = 4;
  p.shape.n_kv_heads = 4;
  p.shape.d_head = 8;
  p.shape.d_ff = 64;
  p.shape.capacity = 0.5;
  measurement_row r;
  fill_costs(p, r);
  EXPECT_EQ(r.matmul_flops, 98304);
  EXPECT_EQ(r.tokens, 16);
  // fp32 bytes: 4·(T·d + d·3d + T·3d) = 4·(512 + 3072 + 1536) = 20480.
  EXPECT_EQ(r.bytes, 20480);
}

TEST(Measurements, AnExistingFileIsNeverOverwrittenWithoutResume) {
  std::string path = temp_csv("no_clobber");
  std::ofstream(path) << "precious data\n";
  EXPECT_THROW(measurement_writer(path, false), error);
  EXPECT_EQ(slurp(path), "precious data\n");
  // With --resume a file whose header does not match is refused, and left alone.
  EXPECT_THROW(measurement_writer(path, true), error);
  EXPECT_EQ(slurp(path), "precious data\n");
  fs::remove(path);
}

TEST(Measurements, UnwritableOutputIsBadInput) {
  try {
    measurement_writer w("/nonexistent-dir/m.csv", false);
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/m.csv: cannot open for writing"), std::string::npos);
  }
}

TEST(Measurements, ResumeAfterInterruptionMeasuresEveryPointExactlyOnce) {
  const std::string path = temp_csv("resume");
  expansion e = small_grid();
  // block_dense: 2 batches; block_mod and qkv_proj: 2 batches × 2 capacities → 10 points.
  ASSERT_EQ(e.points.size(), 10u);
  fake_backend be;
  std::atomic<bool> stop{false};
  {
    measurement_writer w(path, false);
    run_options o = fast_options();
    o.stop = &stop;
    o.on_progress = [&](const run_progress& p) {
      if (p.done == 4) stop = true;  // "Ctrl-C" while the 5th point is measured
    };
    run_result r = run_points(be, e.points, w, o);
    EXPECT_TRUE(r.interrupted);
    EXPECT_EQ(r.measured, 5u);
  }
  // A run killed mid-write leaves a partial line; resume must drop it, not keep it.
  std::ofstream(path, std::ios::app) << "fake,fake device,block_dense,fp32,1,";
  {
    measurement_writer w(path, true);
    EXPECT_EQ(w.existing_rows(), 5u);
    run_result r = run_points(be, e.points, w, fast_options());
    EXPECT_FALSE(r.interrupted);
    EXPECT_EQ(r.already_present, 5u);
    EXPECT_EQ(r.measured, 5u);
  }
  std::vector<measurement_row> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 10u);
  std::map<std::string, int> seen;
  for (const auto& r : rows) ++seen[point_key(point_of(r))];
  for (const auto& p : e.points) EXPECT_EQ(seen[point_key(p)], 1) << point_key(p);
  // A third resume finds nothing to do.
  measurement_writer w(path, true);
  EXPECT_EQ(run_points(be, e.points, w, fast_options()).measured, 0u);
  fs::remove(path);
}

TEST(Measurements, ConsecutivePointsOfOneShapeShareAWorkspace) {
  const std::string path = temp_csv("share");
  expansion e = small_grid();
  fake_backend be;
  measurement_writer w(path, false);
  run_points(be, e.points, w, fast_options());
  // Shapes: batch {1,2} × capacity {0.25, 0.5}; block_dense rides on the first capacity's
  // shape at capacity 1, so per batch: {dense}, {c=.25: mod, qkv}, {c=.5: mod, qkv} = 3.
  EXPECT_EQ(be.workspaces, 6);
  fs::remove(path);
}
