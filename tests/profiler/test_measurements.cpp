// The measurements CSV: header and row round-trip, FLOPs from sim/model/flops, the writer never
// truncating a user's file, resume after an interruption measuring every point once, files
// written before the timing columns existed, and in_block runs (the block and its ops).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "profiler/measurements.hpp"
#include "sim/cost/predict.hpp"
#include "profiler/anchor.hpp"
#include "profiler/runner.hpp"
#include "sim/des/decode.hpp"
#include "core/error.hpp"

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

class fake_backend : public kernels::backend {
 public:
  backend_kind kind() const override { return backend_kind::cpu; }
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

// The header of every file written before the timing, attention and block columns existed
// (reports/measurements/*.csv, shared/data/h100-2026-11-23/*.csv).
const std::string old_header =
    "backend,device,op,dtype,batch,seq_len,d_model,n_heads,d_ff,capacity,tokens,matmul_flops,bytes,median_s,p10_s,"
    "p90_s,samples,n_kv_heads,mlp,variant,experts,noop_experts,capacity_factor,other_flops";

run_options fast_options() {
  run_options o;
  o.rule.warmup = 0;
  o.rule.min_samples = 3;
  o.rule.max_samples = 3;
  o.rule.min_time_s = 0;
  o.anchor = false;  // the anchor's workspace and runs are checked on their own (AnchorIsTimedAroundEveryPoint)
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
  r.backend = modsim::backend_kind::cpu;
  r.device = "Intel(R) Xeon(R), \"2\" threads";  // needs quoting
  r.op = modsim::op::block_mod;
  r.type = dtype::fp32;
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
  r.mlp = mlp_kind::swiglu;
  measurement_row back = parse_row(format_row(r), "m.csv", 2);
  EXPECT_EQ(back.device, r.device);
  EXPECT_EQ(back.op, modsim::op::block_mod);
  EXPECT_EQ(back.matmul_flops, 123456789012LL);
  EXPECT_DOUBLE_EQ(back.capacity, 0.125);
  EXPECT_DOUBLE_EQ(back.median_s, 1.25e-3);
  EXPECT_EQ(back.samples, 17);
  EXPECT_EQ(back.n_kv_heads, 2);
  EXPECT_EQ(back.mlp, mlp_kind::swiglu);
  EXPECT_EQ(back.timing, timing_mode::isolated);
  EXPECT_EQ(back.attention, attention_impl::unfused);
  EXPECT_EQ(back.block, std::nullopt);
  r.op = modsim::op::qkv_proj;
  r.timing = timing_mode::in_block;
  r.block = modsim::op::block_mod;
  back = parse_row(format_row(r), "m.csv", 2);
  EXPECT_EQ(back.timing, timing_mode::in_block);
  EXPECT_EQ(back.block, modsim::op::block_mod);
}

TEST(Measurements, NewColumnsFollowOtherFlopsAndAreChecked) {
  EXPECT_EQ(
      csv_header(),
      old_header + ",timing,attention,block,decode_routing,pad_capacity,predictor_hidden,model,anchor_s,recompute");
  const csv_layout three = parse_header(old_header + ",timing,attention,block", "m.csv");
  const std::string row = "cpu,dev,qkv_proj,fp32,1,2,3,4,5,1,1,1,1,1,1,1,1,4,gelu,none,0,0,0,0";
  EXPECT_EQ(parse_row(row + ",in_block,unfused,block_dense", "m.csv", 3, three).block, modsim::op::block_dense);
  auto message = [&](const std::string& tail) {
    try {
      parse_row(row + tail, "m.csv", 3, three);
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(",warm,unfused,"), "m.csv:3: timing: expected one of isolated, in_block, got 'warm'");
  EXPECT_EQ(message(",isolated,flash,"), "m.csv:3: attention: expected one of unfused, fused, got 'flash'");
  EXPECT_EQ(message(",in_block,unfused,"),
            "m.csv:3: block: an in_block row names its block (block_dense, block_mod or layer_mode), got ''");
  // The variant column is read into the MoE/MoDE variant it names (empty: none), or refused.
  const std::string head = "cpu,dev,layer_mode,fp32,1,2,3,4,5,1,1,1,1,1,1,1,1,4,gelu,";
  const std::string tail = ",4,0,1.25,0,isolated,unfused,";
  EXPECT_EQ(parse_row(head + "integrated" + tail, "m.csv", 3, three).variant, moe_variant::integrated);
  EXPECT_EQ(parse_row(head + "staged" + tail, "m.csv", 3, three).variant, moe_variant::staged);
  EXPECT_EQ(parse_row(head + tail, "m.csv", 3, three).variant, moe_variant::none);
  auto refusal = [&](const std::string& line) {
    try {
      parse_row(line, "m.csv", 3, three);
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(refusal(head + "moe" + tail), "m.csv:3: variant: expected one of none, staged, integrated, got 'moe'");
  // So are the dtype column, where the row is read, and the MLP column: a kind the kernels do not
  // run is refused, not read as gelu.
  const std::string op_row = "cpu,dev,qkv_proj,{},1,2,3,4,5,1,1,1,1,1,1,1,1,4,{},none,0,0,0,0,isolated,unfused,";
  EXPECT_EQ(refusal(fmt::format(fmt::runtime(op_row), "fp8", "gelu")),
            "m.csv:3: dtype: unknown dtype 'fp8' (expected fp32, bf16 or fp16)");
  EXPECT_EQ(refusal(fmt::format(fmt::runtime(op_row), "fp32", "relu")),
            "m.csv:3: mlp: expected one of gelu, swiglu, got 'relu'");
  // A header may carry any of the optional columns, but only known ones, once each.
  EXPECT_TRUE(parse_header(old_header + ",timing", "m.csv").has("timing"));
  EXPECT_FALSE(parse_header(old_header + ",timing", "m.csv").has("attention"));
  EXPECT_THROW(parse_header(old_header + ",colour", "m.csv"), error);
  EXPECT_THROW(parse_header(old_header + ",timing,timing", "m.csv"), error);
}

TEST(Measurements, DecodeColumnsRoundTripAndAreChecked) {
  // A decode_step row of the full layout: routing, padded capacity, predictor width, model.
  const std::string row =
      "cpu,dev,decode_step,fp32,8,2048,512,8,2048,0.125,8,1,1,0.08,0.07,0.09,5,8,gelu,none,0,0,0,0,isolated,unfused,,"
      "pad,0.62,256,mod-60m,,none";  // the anchor_s column empty: not measured
  const measurement_row r = parse_row(row, "m.csv", 2);
  EXPECT_EQ(r.decode_routing, modsim::decode_run::pad);
  EXPECT_DOUBLE_EQ(r.pad_capacity, 0.62);
  EXPECT_EQ(r.predictor_hidden, 256);
  EXPECT_EQ(r.model, "mod-60m");
  EXPECT_EQ(format_row(r), row);
  const sim::measured_sample p = sample_of(r, "m.csv:2");
  EXPECT_EQ(p.op, modsim::op::decode_step);
  EXPECT_EQ(p.decode_routing, modsim::decode_run::pad);
  EXPECT_DOUBLE_EQ(p.pad_capacity, 0.62);
  EXPECT_EQ(p.predictor_hidden, 256);
  EXPECT_EQ(p.model_name, "mod-60m");
  auto message = [&](const std::string& text) {
    try {
      parse_row(text, "m.csv", 4);
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head =
      "cpu,dev,decode_step,fp32,8,2048,512,8,2048,0.125,8,1,1,0.08,0.07,0.09,5,8,gelu,none,0,0,0,0,"
      "isolated,unfused,,";
  EXPECT_EQ(message(head + "eager,0,256,mod-60m,,none"),
            "m.csv:4: decode_routing: expected one of sync, pad, graph, got 'eager'");
  EXPECT_EQ(message(head + "sync,0,256,,,none"), "m.csv:4: model: a decode_step row names its model");
  // A decode row without a routing reads as sync; a block row keeps no routing.
  EXPECT_EQ(
      parse_row("cpu,dev,decode_dense,fp32,1,2,3,4,5,1,1,1,1,1,1,1,1,4,gelu,none,0,0,0,0,isolated,unfused,,,0,0,,,none",
                "m.csv", 5)
          .decode_routing,
      modsim::decode_run::sync);
  EXPECT_EQ(
      parse_row("cpu,dev,qkv_proj,fp32,1,2,3,4,5,1,1,1,1,1,1,1,1,4,gelu,none,0,0,0,0,isolated,unfused,,,0,0,,,none",
                "m.csv", 6)
          .decode_routing,
      std::nullopt);
}

// The reader keys a row from the row itself (sim::shape_key of the measured point); the
// profiler keys the point it is about to measure (point_key): a row written for a point must
// read back with that point's key, or --resume would measure it again and a calibration's
// block keys would not match the rows validate reads. Literal keys from the documented format.
TEST(Measurements, ARowReadsBackWithItsPointsKey) {
  std::vector<point> points = small_grid().points;
  for (const point& p : with_timing(small_grid(), timing_mode::in_block).points) points.push_back(p);
  for (const point& p : with_attention(small_grid(), attention_impl::fused).points) points.push_back(p);
  for (const point& p : expand(parse_grid(R"({"ops": ["layer_mode"], "seq_len": [32], "d_model": [64], "n_heads": [4],
                            "n_kv_heads": [2], "d_ff": [128], "capacity": [0.5], "variant": ["staged", "integrated"],
                            "experts": [4], "noop_experts": [1], "capacity_factor": [1.25]})",
                                          "g.json"))
                            .points)
    points.push_back(p);
  for (const point& p : expand(parse_grid(R"({"ops": ["decode_dense", "decode_mod"], "batch": [8], "seq_len": [512],
                            "d_model": [256], "n_heads": [4], "d_ff": [1024], "capacity": [0.5],
                            "decode_routing": ["sync", "pad"]})",
                                          "g.json"))
                            .points)
    points.push_back(p);
  // An op row of an in_block run (the runner writes one per op of the block).
  point op_row = with_timing(small_grid(), timing_mode::in_block).points.back();
  ASSERT_EQ(op_row.block, kernels::op::block_mod);
  op_row.op = kernels::op::qkv_proj;
  points.push_back(op_row);
  sample_stats stats;
  stats.median_s = stats.p10_s = stats.p90_s = 1e-3;
  stats.samples = 3;
  std::set<std::string> keys;
  for (const point& p : points) {
    const measurement_row r = make_row(p, modsim::backend_kind::cpu, "test cpu", stats);
    EXPECT_EQ(sim::shape_key(sample_of(r, "m.csv:2")), point_key(p));
    keys.insert(point_key(p));
  }
  EXPECT_EQ(keys.size(), points.size());  // no two points share a key
  for (const char* k :
       {"qkv_proj|fp32|2|16|32|4|4|64|0.25|gelu", "qkv_proj|fp32|2|16|32|4|4|64|0.25|gelu|fused",
        "block_mod|fp32|2|16|32|4|4|64|0.5|gelu|in_block|qkv_proj", "block_dense|fp32|1|16|32|4|4|64|1|gelu|in_block",
        "layer_mode|fp32|1|32|64|4|2|128|0.5|gelu|1|4|0|1.25", "layer_mode|fp32|1|32|64|4|2|128|0.5|gelu|2|4|1|1.25"})
    EXPECT_EQ(keys.count(k), 1u) << k;
}

TEST(Measurements, AFileWithTheOldHeaderReadsAsIsolatedUnfused) {
  const std::string path = temp_csv("old_header");
  std::ofstream(path)
      << old_header << "\n"
      << "cpu,dev,qkv_proj,fp32,1,16,32,4,64,0.5,8,49152,10240,1e-05,9e-06,2e-05,5,4,gelu,none,0,0,0,0\n";
  const std::vector<measurement_row> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].timing, timing_mode::isolated);
  EXPECT_EQ(rows[0].attention, attention_impl::unfused);
  const std::vector<sim::measured_sample> points = read_measured_samples(path);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].timing, timing_mode::isolated);
  EXPECT_EQ(points[0].attention, attention_impl::unfused);
  EXPECT_EQ(points[0].key, "qkv_proj|fp32|1|16|32|4|4|64|0.5|gelu");  // as before timing existed
  const sim::measured_sample sample = sim::with_costs(points[0]);
  EXPECT_EQ(sample.timing, timing_mode::isolated);
  EXPECT_EQ(sample.attention, attention_impl::unfused);
  fs::remove(path);
}

TEST(Measurements, ResumingAnOldHeaderFileKeepsItsColumnsAndRefusesInBlockRows) {
  const std::string path = temp_csv("old_resume");
  std::ofstream(path) << old_header << "\n";
  const expansion e = small_grid();
  fake_backend be;
  {
    measurement_writer w(path, true);
    EXPECT_TRUE(w.accepts(timing_mode::isolated));
    EXPECT_FALSE(w.accepts(timing_mode::in_block));
    EXPECT_EQ(run_points(be, {e.points[0]}, w, fast_options()).measured, 1u);
  }
  std::string text = slurp(path);
  EXPECT_EQ(text.substr(0, text.find('\n')), old_header);
  EXPECT_EQ(read_measurements(path).size(), 1u);  // the row has the old header's 24 columns
  const std::string before = slurp(path);
  measurement_writer w(path, true);
  auto cpu = kernels::make_cpu_backend(1);
  try {
    run_points(*cpu, with_timing(small_grid(), timing_mode::in_block).points, w, fast_options());
    FAIL();
  } catch (const error& ex) {
    EXPECT_EQ(ex.kind(), error_kind::bad_input);
  }
  EXPECT_EQ(slurp(path), before);
  fs::remove(path);
}

// A backend on which the anchor (d_model 256) takes 2 ms and every other op 1 ms.
class anchored_backend final : public fake_backend {
 public:
  double timed_run(kernels::op, kernels::workspace& ws) override {
    const bool anchor = ws.shape().d_model == anchor_shape().d_model;
    anchor_runs += anchor ? 1 : 0;
    return anchor ? 2e-3 : 1e-3;
  }
  int anchor_runs = 0;
};

TEST(Measurements, AnchorIsTimedAroundEveryPoint) {
  const std::string path = temp_csv("anchor");
  const expansion e = small_grid();
  anchored_backend be;
  run_options o = fast_options();
  o.anchor = true;
  {
    measurement_writer w(path, false);
    const run_result r = run_points(be, e.points, w, o);
    EXPECT_EQ(be.workspaces, 5);  // the grid's 4 (ConsecutivePointsOfOneShapeShareAWorkspace) and the anchor's
    EXPECT_EQ(r.workspaces_made, 4u);
    // Before and after each point: one warm run and three timed ones.
    EXPECT_EQ(be.anchor_runs, static_cast<int>(e.points.size()) * 2 * 4);
    ASSERT_EQ(r.anchor_s.size(), e.points.size());
    for (const double a : r.anchor_s) EXPECT_DOUBLE_EQ(a, 2e-3);
  }
  const std::vector<measurement_row> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), e.points.size());
  for (const measurement_row& r : rows) {
    EXPECT_DOUBLE_EQ(r.anchor_s, 2e-3);
    EXPECT_DOUBLE_EQ(r.median_s, 1e-3);  // the point's own time, not the anchor's
  }
  // Off: no anchor workspace, no anchor run, an empty column read back as 0.
  fs::remove(path);
  anchored_backend quiet;
  {
    measurement_writer w(path, false);
    run_points(quiet, e.points, w, fast_options());
  }
  EXPECT_EQ(quiet.workspaces, 4);
  EXPECT_EQ(quiet.anchor_runs, 0);
  for (const measurement_row& r : read_measurements(path)) EXPECT_EQ(r.anchor_s, 0.0);
  fs::remove(path);
}

// A backend whose machine has one slow spell: while the anchor has run [from, to) times so
// far, the anchor takes 3 ms instead of 2 and every other op 1.5 ms instead of 1.
class spell_backend final : public fake_backend {
 public:
  spell_backend(int from, int to) : from_(from), to_(to) {}
  double timed_run(kernels::op, kernels::workspace& ws) override {
    const bool slow = anchor_runs >= from_ && anchor_runs < to_;
    if (ws.shape().d_model == anchor_shape().d_model) {
      ++anchor_runs;
      return slow ? 3e-3 : 2e-3;
    }
    return slow ? 1.5e-3 : 1e-3;
  }
  int anchor_runs = 0;

 private:
  int from_, to_;
};

TEST(Measurements, APointMeasuredInASlowSpellIsMeasuredAgain) {
  // Each take runs the anchor 8 times (before and after: a warm run and three timed ones). The
  // spell covers the sixth take (anchor runs 40-47): its anchor, 3 ms, is 50 % slower than the
  // median of the five kept before (2 ms), past the 10 % allowed.
  const std::string path = temp_csv("spell");
  const expansion e = small_grid();
  ASSERT_GE(e.points.size(), 6u);
  run_options o = fast_options();
  o.anchor = true;
  o.retake_wait_s = 0;
  std::size_t reported = 0;  // what the progress reports say at the end
  o.on_progress = [&](const run_progress& p) { reported = p.retaken; };
  int anchor_runs = 0;
  // One run on a machine with a spell over anchor runs [from, to): its result, and how many of
  // the rows it wrote have median `median_s`.
  auto run = [&](int from, int to, double median_s) {
    run_result r;
    {
      spell_backend be(from, to);
      measurement_writer w(path, false);
      r = run_points(be, e.points, w, o);
      anchor_runs = be.anchor_runs;
    }
    const std::vector<measurement_row> rows = read_measurements(path);
    fs::remove(path);
    const auto n =
        std::count_if(rows.begin(), rows.end(), [&](const measurement_row& x) { return x.median_s == median_s; });
    return std::make_pair(r, n);
  };
  {
    const auto [r, undisturbed] = run(40, 48, 1e-3);
    EXPECT_EQ(reported, 1u);
    EXPECT_EQ(r.retaken, 1u);
    EXPECT_EQ(r.kept_slow, 0u);
    EXPECT_EQ(anchor_runs, static_cast<int>(e.points.size() + 1) * 8);  // one take more
    for (const double a : r.anchor_s) EXPECT_DOUBLE_EQ(a, 2e-3);
    EXPECT_EQ(undisturbed, static_cast<std::ptrdiff_t>(e.points.size()));  // the retake's time, not the spell's
  }
  // No retakes allowed: the slow take is kept, with its anchor (calibrate and validate hold it
  // to the others' speed with it).
  o.retakes = 0;
  {
    const auto [r, slow] = run(40, 48, 1.5e-3);
    EXPECT_EQ(r.retaken, 0u);
    EXPECT_EQ(r.kept_slow, 1u);
    EXPECT_EQ(slow, 1);
  }
  // A spell over the first takes: before four are kept there is no speed to compare with.
  o.retakes = 2;
  {
    const auto [r, slow] = run(0, 24, 1.5e-3);
    EXPECT_EQ(r.retaken, 0u);
    EXPECT_EQ(slow, 3);
  }
  // Off (--retake-slower 0): the spell's take is kept.
  o.retake_slower_pct = 0;
  {
    const auto [r, slow] = run(40, 48, 1.5e-3);
    EXPECT_EQ(r.retaken, 0u);
    EXPECT_EQ(slow, 1);
  }
}

TEST(Measurements, AnchorColumnRoundTripsAndIsChecked) {
  measurement_row r;
  r.backend = modsim::backend_kind::cpu;
  r.device = "d";
  r.op = modsim::op::block_dense;
  r.type = dtype::fp32;
  // The columns through anchor_s (a file written before recompute existed): anchor_s is last.
  const csv_layout upto_anchor = parse_header(
      old_header + ",timing,attention,block,decode_routing,pad_capacity,predictor_hidden,model,anchor_s", "m.csv");
  r.anchor_s = 2.085e-3;
  EXPECT_DOUBLE_EQ(parse_row(format_row(r), "m.csv", 2).anchor_s, 2.085e-3);
  r.anchor_s = 0;
  const std::string line = format_row(r, upto_anchor);
  EXPECT_EQ(line.back(), ',');  // not measured: the column is empty
  EXPECT_EQ(parse_row(line, "m.csv", 2, upto_anchor).anchor_s, 0.0);
  try {
    parse_row(line + "-1", "m.csv", 9, upto_anchor);
    FAIL();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("m.csv:9: anchor_s"), std::string::npos) << e.what();
  }
}

TEST(Measurements, BadRowsNameFileLineAndColumn) {
  try {
    parse_row("cpu,dev,block_dense,fp32,one,2,3,4,5,1,1,1,1,1,1,1,1,4,gelu,none,0,0,0,0", "m.csv", 7,
              parse_header(old_header, "m.csv"));
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()), "m.csv:7: batch: expected an integer, got 'one'");
  }
}

// The op is read from its name once, where the CSV (or the calibration file) is read; from
// there on the rows, samples, costs and predictions carry the enum.
static_assert(std::is_same_v<decltype(measurement_row::op), modsim::op>);
static_assert(std::is_same_v<decltype(sim::measured_sample::op), modsim::op>);
static_assert(std::is_same_v<decltype(sim::op_cost::op), modsim::op>);
static_assert(std::is_same_v<decltype(sim::efficiency_curve::op), modsim::op>);
static_assert(std::is_same_v<decltype(sim::op_time::op), modsim::op>);
static_assert(std::is_same_v<decltype(sim::op_prediction::op), modsim::op>);
// Timing likewise: one enum from the CSV's column (and --timing) to the kernel-sequence fit.
static_assert(std::is_same_v<decltype(measurement_row::timing), modsim::timing_mode>);
static_assert(std::is_same_v<decltype(point::timing), modsim::timing_mode>);
static_assert(std::is_same_v<decltype(sim::measured_sample::timing), modsim::timing_mode>);
static_assert(std::is_same_v<decltype(sim::kernel_row::timing), modsim::timing_mode>);
// The backend and a decode row's routing likewise; the curve an op was timed by is its op.
static_assert(std::is_same_v<decltype(measurement_row::backend), std::optional<modsim::backend_kind>>);
static_assert(std::is_same_v<decltype(sim::measured_sample::backend), std::optional<modsim::backend_kind>>);
static_assert(std::is_same_v<decltype(sim::calibration::backend), std::optional<modsim::backend_kind>>);
static_assert(std::is_same_v<decltype(measurement_row::decode_routing), std::optional<modsim::decode_run>>);
static_assert(std::is_same_v<decltype(point::decode_routing), modsim::decode_run>);
static_assert(std::is_same_v<decltype(sim::measured_sample::decode_routing), modsim::decode_run>);
static_assert(std::is_same_v<decltype(sim::op_time::calibrated_as), std::optional<modsim::op>>);
static_assert(std::is_same_v<decltype(sim::op_prediction::calibrated_as), std::optional<modsim::op>>);

TEST(Measurements, TheBackendIsReadOnceAndAnUnknownOneIsRefused) {
  const csv_layout old = parse_header(old_header, "m.csv");
  const std::string rest = ",dev,block_dense,fp32,1,2,3,4,5,1,1,1,1,1,1,1,1,4,gelu,none,0,0,0,0";
  EXPECT_EQ(parse_row("cpu" + rest, "m.csv", 2, old).backend, modsim::backend_kind::cpu);
  EXPECT_EQ(parse_row("cuda" + rest, "m.csv", 3, old).backend, modsim::backend_kind::cuda);
  // An empty cell names no backend, and is written back empty.
  const measurement_row none = parse_row(rest, "m.csv", 4, old);
  EXPECT_EQ(none.backend, std::nullopt);
  EXPECT_EQ(format_row(none).rfind(",dev,block_dense,", 0), 0u) << format_row(none);
  try {
    parse_row("tpu" + rest, "m.csv", 5, old);
    FAIL() << "an unknown backend was read";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_EQ(std::string(e.what()), "m.csv:5: backend: unknown backend 'tpu' (expected cpu or cuda)");
  }
}

TEST(Measurements, AGraphRowIsPadCapturedInACudaGraphNeverPlainPad) {
  // sync and pad by hand: graph is pad in a CUDA graph; sync cannot be captured.
  EXPECT_EQ(routing_of(decode_run::sync), decode_routing::sync);
  EXPECT_EQ(routing_of(decode_run::pad), decode_routing::pad);
  EXPECT_EQ(routing_of(decode_run::pad_graph), decode_routing::pad);
  EXPECT_FALSE(in_cuda_graph(decode_run::sync));
  EXPECT_FALSE(in_cuda_graph(decode_run::pad));
  EXPECT_TRUE(in_cuda_graph(decode_run::pad_graph));
  const std::string row =
      "cuda,dev,decode_mod,bf16,8,2048,512,8,2048,0.125,8,1,1,0.08,0.07,0.09,5,8,gelu,none,0,0,0,0,isolated,unfused,,"
      "graph,0.62,256,,,none";
  const measurement_row r = parse_row(row, "m.csv", 2);
  EXPECT_EQ(r.decode_routing, decode_run::pad_graph);
  EXPECT_EQ(format_row(r), row);  // written back as "graph"
  const sim::des::decode_case c = sim::des::decode_case_of(sample_of(r, "m.csv:2"));
  EXPECT_EQ(c.routing, decode_routing::pad);
  EXPECT_TRUE(c.cuda_graph);
  const sim::des::decode_case p =
      sim::des::decode_case_of(sample_of(parse_row("cuda,dev,decode_mod,bf16,8,2048,512,8,2048,0.125,8,1,1,0.08,0.07,0."
                                                   "09,5,8,gelu,none,0,0,0,0,isolated,unfused,,"
                                                   "pad,0.62,256,,,none",
                                                   "m.csv", 3),
                                         "m.csv:3"));
  EXPECT_EQ(p.routing, decode_routing::pad);
  EXPECT_FALSE(p.cuda_graph);
}

TEST(Measurements, AnUnknownOpIsRefusedWhereTheFileIsRead) {
  try {
    parse_row("cpu,dev,block_dence,fp32,1,2,3,4,5,1,1,1,1,1,1,1,1,4,gelu,none,0,0,0,0", "m.csv", 5,
              parse_header(old_header, "m.csv"));
    FAIL() << "an unknown op was read";
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()), "m.csv:5: op: unknown op 'block_dence'");
  }
  // Through the reader behind calibrate, validate and the report: one line naming file:line.
  const std::string path = temp_csv("unknown_op");
  {
    std::ofstream out(path);
    out << old_header << "\n"
        << "cpu,dev,block_dense,fp32,1,2,3,4,5,1,1,1,1,1,1,1,1,4,gelu,none,0,0,0,0\n"
        << "cpu,dev,mlp_upp,fp32,1,2,3,4,5,1,1,1,1,1,1,1,1,4,gelu,none,0,0,0,0\n";
  }
  try {
    (void)read_measured_samples(path);
    FAIL() << "an unknown op was read";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_EQ(std::string(e.what()), path + ":3: op: unknown op 'mlp_upp'");
  }
  fs::remove(path);
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
    run_progress last;
    o.on_progress = [&](const run_progress& p) {
      if (p.done == 4) stop = true;  // "Ctrl-C" while the 5th point is measured
      last = p;
    };
    run_result r = run_points(be, e.points, w, o);
    EXPECT_TRUE(r.interrupted);
    EXPECT_EQ(r.measured, 5u);
    // The last report says what was measured: 5 of 10, not 10 of 10.
    EXPECT_EQ(last.current, nullptr);
    EXPECT_EQ(last.done, 5u);
    EXPECT_EQ(last.measured, 5u);
    EXPECT_EQ(last.total, 10u);
  }
  // A run killed mid-write leaves a partial line; resume must drop it, not keep it.
  std::ofstream(path, std::ios::app) << "fake,fake device,block_dense,fp32,1,";
  {
    measurement_writer w(path, true);
    EXPECT_EQ(w.existing_rows(), 5u);
    run_options o = fast_options();
    run_progress last;
    o.on_progress = [&](const run_progress& p) { last = p; };
    run_result r = run_points(be, e.points, w, o);
    EXPECT_FALSE(r.interrupted);
    EXPECT_EQ(r.already_present, 5u);
    EXPECT_EQ(r.measured, 5u);
    // Resumed: all 10 done at the end, 5 of them measured in this run.
    EXPECT_EQ(last.done, 10u);
    EXPECT_EQ(last.measured, 5u);
  }
  std::vector<measurement_row> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 10u);
  std::map<std::string, int> seen;
  for (const auto& r : rows) ++seen[sim::shape_key(sample_of(r, path))];
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
  const run_result r = run_points(be, e.points, w, fast_options());
  // Shapes: batch {1,2} × capacity {0.25, 0.5}; block_dense does not depend on the capacity and
  // runs on the first capacity's workspace, so per batch: {c=.25: mod, qkv, dense},
  // {c=.5: mod, qkv} = 2.
  EXPECT_EQ(be.workspaces, 4);
  EXPECT_EQ(r.workspaces_made, 4u);
  fs::remove(path);
}

namespace {

// B = 1, S = 16, d = 32, H = 4, d_ff = 64: block_dense (capacity 1) and block_mod at capacity
// 0.25 (k = 4), timed in_block.
expansion in_block_grid() {
  return with_timing(expand(parse_grid(R"({"ops": ["block_dense", "block_mod"], "batch": [1], "seq_len": [16],
                                           "d_model": [32], "n_heads": [4], "d_ff": [64], "capacity": [0.25]})",
                                       "g.json")),
                     timing_mode::in_block);
}

const std::vector<modsim::op> dense_ops = {modsim::op::attn_norm,    modsim::op::qkv_proj,    modsim::op::attn_scores,
                                           modsim::op::attn_softmax, modsim::op::attn_values, modsim::op::out_proj,
                                           modsim::op::mlp_norm,     modsim::op::mlp_up,      modsim::op::mlp_act,
                                           modsim::op::mlp_down};

std::vector<modsim::op> mod_ops() {
  std::vector<modsim::op> v = {modsim::op::router, modsim::op::topk, modsim::op::gather};
  v.insert(v.end(), dense_ops.begin(), dense_ops.end());
  v.push_back(modsim::op::scatter);
  return v;
}

}  // namespace

TEST(Measurements, InBlockWritesTheBlockThenItsOpsAsSimFlopsListsThem) {
  const std::string path = temp_csv("in_block");
  auto be = kernels::make_cpu_backend(1);
  measurement_writer w(path, false);
  run_options o = fast_options();
  o.rule.warmup = 1;
  o.keep_block_samples = true;
  run_result r = run_points(*be, in_block_grid().points, w, o);
  EXPECT_EQ(r.measured, 2u);
  std::vector<measurement_row> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 1 + dense_ops.size() + 1 + mod_ops().size());
  // The runner measures block_mod first (plan_workspaces: block_dense, which does not depend
  // on the capacity, runs last on the same workspace); each block's rows stay together, in
  // order. Below, the dense block's rows first.
  std::stable_partition(rows.begin(), rows.end(),
                        [](const measurement_row& x) { return x.block == modsim::op::block_dense; });
  std::stable_partition(r.in_block_samples.begin(), r.in_block_samples.end(),
                        [](const block_samples& b) { return b.block.op == kernels::op::block_dense; });

  // The rows: each block, then its ops in sim/model/flops's order, all with the block's shape.
  std::vector<modsim::op> expected = {modsim::op::block_dense};
  expected.insert(expected.end(), dense_ops.begin(), dense_ops.end());
  expected.push_back(modsim::op::block_mod);
  for (const modsim::op op : mod_ops()) expected.push_back(op);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const measurement_row& row = rows[i];
    const bool dense = i <= dense_ops.size();
    EXPECT_EQ(row.op, expected[i]) << i;
    EXPECT_EQ(row.timing, timing_mode::in_block) << modsim::to_string(row.op);
    EXPECT_EQ(row.attention, attention_impl::unfused) << modsim::to_string(row.op);
    EXPECT_EQ(row.block, dense ? modsim::op::block_dense : modsim::op::block_mod) << modsim::to_string(row.op);
    EXPECT_EQ(row.batch, 1);
    EXPECT_EQ(row.seq_len, 16);
    EXPECT_EQ(row.d_model, 32);
    EXPECT_EQ(row.n_heads, 4);
    EXPECT_EQ(row.d_ff, 64);
    EXPECT_DOUBLE_EQ(row.capacity, dense ? 1.0 : 0.25);
    // tokens as isolated rows count them: all S for the dense block and for router/topk,
    // k = 4 for the routed block and its other ops.
    const bool all_tokens = dense || row.op == modsim::op::router || row.op == modsim::op::topk;
    EXPECT_EQ(row.tokens, all_tokens ? 16 : 4) << modsim::to_string(row.op);
    EXPECT_EQ(row.samples, 3) << modsim::to_string(row.op);
  }
  // FLOPs of an op row are those of the same op measured isolated on the block's shape:
  // qkv_proj on k = 4 routed tokens, 2·4·32·(3·32) = 24576 (by hand).
  const measurement_row& qkv_mod = rows[1 + dense_ops.size() + 1 + 4];
  ASSERT_EQ(qkv_mod.op, modsim::op::qkv_proj);
  EXPECT_EQ(qkv_mod.matmul_flops, 24576);
  // and the op rows of a block add up to its row.
  for (std::size_t first : {std::size_t{0}, 1 + dense_ops.size()}) {
    const std::size_t n = first == 0 ? dense_ops.size() : mod_ops().size();
    std::int64_t matmul = 0, other = 0, bytes = 0;
    for (std::size_t i = first + 1; i <= first + n; ++i) {
      matmul += rows[i].matmul_flops;
      other += rows[i].other_flops;
      bytes += rows[i].bytes;
    }
    EXPECT_EQ(matmul, rows[first].matmul_flops) << modsim::to_string(rows[first].op);
    EXPECT_EQ(other, rows[first].other_flops) << modsim::to_string(rows[first].op);
    EXPECT_EQ(bytes, rows[first].bytes) << modsim::to_string(rows[first].op);
  }

  // Every sample's op times add up to that sample's block time (same clock readings), and
  // each op row's median is over that op's own samples.
  ASSERT_EQ(r.in_block_samples.size(), 2u);
  std::size_t first_row = 0;
  for (const block_samples& b : r.in_block_samples) {
    ASSERT_EQ(b.block_s.size(), 3u);  // the warm-up sample is not among them
    ASSERT_EQ(b.op_s.size(), b.ops.size());
    EXPECT_EQ(b.ops, b.block.op == kernels::op::block_dense ? dense_ops : mod_ops());
    for (std::size_t j = 0; j < b.block_s.size(); ++j) {
      double sum = 0;
      for (std::size_t i = 0; i < b.ops.size(); ++i) {
        ASSERT_EQ(b.op_s[i].size(), b.block_s.size());
        sum += b.op_s[i][j];
      }
      EXPECT_EQ(sum, b.block_s[j]) << "sample " << j;
    }
    for (std::size_t i = 0; i < b.ops.size(); ++i) {
      std::vector<double> sorted = b.op_s[i];
      std::sort(sorted.begin(), sorted.end());
      EXPECT_DOUBLE_EQ(rows[first_row + 1 + i].median_s, sorted[1]) << modsim::to_string(b.ops[i]);
    }
    std::vector<double> sorted = b.block_s;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_DOUBLE_EQ(rows[first_row].median_s, sorted[1]);
    first_row += 1 + b.ops.size();
  }
  fs::remove(path);
}

TEST(Measurements, PassesWriteEachRowOnceFromEveryPassesSamples) {
  const std::string path = temp_csv("passes");
  auto be = kernels::make_cpu_backend(1);
  measurement_writer w(path, false);
  run_options o = fast_options();
  o.passes = 3;
  o.keep_block_samples = true;
  std::vector<std::size_t> done;
  std::size_t total = 0;
  o.on_progress = [&](const run_progress& p) {
    done.push_back(p.done);
    total = p.total;
  };
  run_result r = run_points(*be, in_block_grid().points, w, o);
  EXPECT_EQ(r.measured, 2u);
  EXPECT_EQ(r.in_block_samples.size(), 6u);  // 2 blocks x 3 passes
  EXPECT_EQ(r.pass_spread_pct.size(), 2u);   // one per point
  // Every row once (as one pass writes them), each from 3 passes of 3 samples.
  const std::vector<measurement_row> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 1 + dense_ops.size() + 1 + mod_ops().size());
  for (const measurement_row& row : rows) EXPECT_EQ(row.samples, 9) << modsim::to_string(row.op);
  // Progress counts the 2 points in each of the 3 passes: 0..5, then the end at 6.
  EXPECT_EQ(total, 6u);
  EXPECT_EQ(done, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(Measurements, AMultiPassRunStoppedEarlyWritesWhatItMeasured) {
  const std::string path = temp_csv("passes_stopped");
  auto be = kernels::make_cpu_backend(1);
  measurement_writer w(path, false);
  run_options o = fast_options();
  o.passes = 3;
  std::atomic<bool> stop{false};
  o.stop = &stop;
  // Stop once the second pass has begun its first point: each block then has 1 pass, except
  // the first one measured, which has 2.
  o.on_progress = [&](const run_progress& p) {
    if (p.done == 2) stop = true;
  };
  run_result r = run_points(*be, in_block_grid().points, w, o);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.measured, 2u);
  const std::vector<measurement_row> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 1 + dense_ops.size() + 1 + mod_ops().size());
  int six = 0, three = 0;
  for (const measurement_row& row : rows)
    if (row.op == modsim::op::block_dense || row.op == modsim::op::block_mod) (row.samples == 6 ? six : three)++;
  EXPECT_EQ(six, 1);
  EXPECT_EQ(three, 1);
}

TEST(Measurements, AMultiPassRunThatFailsWritesWhatItMeasuredBeforeItFails) {
  const std::string path = temp_csv("passes_failed");
  auto be = kernels::make_cpu_backend(1);
  measurement_writer w(path, false);
  run_options o = fast_options();
  o.passes = 3;
  // The grid's block_mod, then a point that fails when its turn comes (an op timed in_block
  // that is not a block), on another shape so that it runs after the block.
  std::vector<point> points;
  for (const point& p : in_block_grid().points)
    if (p.op == kernels::op::block_mod) points.push_back(p);
  ASSERT_EQ(points.size(), 1u);
  point bad = points.front();
  bad.op = kernels::op::attn_norm;
  bad.shape.seq_len = 32;
  points.push_back(bad);
  EXPECT_THROW(run_points(*be, points, w, o), modsim::error);
  // The block's first pass was measured before the failure: its rows are in the file, from
  // that one pass (3 samples).
  const std::vector<measurement_row> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 1 + mod_ops().size());
  EXPECT_EQ(rows.front().op, modsim::op::block_mod);
  for (const measurement_row& row : rows) EXPECT_EQ(row.samples, 3) << modsim::to_string(row.op);
}

TEST(Measurements, ResumeOfAnInBlockFileSkipsWhatIsPresent) {
  const std::string path = temp_csv("in_block_resume");
  const expansion e = in_block_grid();
  auto be = kernels::make_cpu_backend(1);
  std::atomic<bool> stop{false};
  {
    measurement_writer w(path, false);
    run_options o = fast_options();
    o.stop = &stop;
    // The plan (plan_workspaces) runs block_mod first: block_dense does not depend on the
    // capacity and runs after it on the same capacity-0.25 workspace.
    o.on_progress = [&](const run_progress& p) {
      if (p.done == 0 && p.current) stop = true;  // "Ctrl-C" while the block_mod is measured
    };
    const run_result r = run_points(*be, e.points, w, o);
    EXPECT_TRUE(r.interrupted);
    EXPECT_EQ(r.rows.size(), 1 + mod_ops().size());
  }
  {
    measurement_writer w(path, true);
    const run_result r = run_points(*be, e.points, w, fast_options());
    EXPECT_EQ(r.already_present, 1u);
    EXPECT_EQ(r.measured, 1u);
    EXPECT_EQ(r.rows.size(), 1 + dense_ops.size());
  }
  // A run killed between the rows of one block: only the missing rows are written again.
  std::string text = slurp(path);
  text.erase(text.find_last_of('\n', text.size() - 2) + 1);  // drop the dense block's mlp_down row
  std::ofstream(path, std::ios::trunc) << text;
  {
    measurement_writer w(path, true);
    const run_result r = run_points(*be, e.points, w, fast_options());
    EXPECT_EQ(r.already_present, 1u);
    EXPECT_EQ(r.measured, 1u);
    ASSERT_EQ(r.rows.size(), 1u);
    EXPECT_EQ(r.rows[0].op, modsim::op::mlp_down);
  }
  // Isolated rows of the same shapes are other points, in the same file.
  {
    measurement_writer w(path, true);
    fake_backend fake;
    expansion isolated = in_block_grid();
    for (point& p : isolated.points) p.timing = timing_mode::isolated;
    EXPECT_EQ(run_points(fake, isolated.points, w, fast_options()).measured, 2u);
  }
  std::map<std::string, int> seen;
  for (const auto& r : read_measurements(path)) ++seen[sim::shape_key(sample_of(r, path))];
  EXPECT_EQ(seen.size(), 2 + dense_ops.size() + 1 + mod_ops().size() + 1);
  for (const auto& [key, count] : seen) EXPECT_EQ(count, 1) << key;
  // A last resume finds nothing to do.
  measurement_writer w(path, true);
  EXPECT_EQ(run_points(*be, e.points, w, fast_options()).measured, 0u);
  fs::remove(path);
}

TEST(Measurements, RecomputeColumnRoundTripsAndIsChecked) {
  measurement_row r;
  r.backend = modsim::backend_kind::cpu;
  r.device = "d";
  r.op = modsim::op::block_mod_train;
  r.type = dtype::fp32;
  for (const auto mode : {modsim::recompute::none, modsim::recompute::selective, modsim::recompute::full}) {
    r.recompute = mode;
    const std::string line = format_row(r);
    EXPECT_EQ(line.substr(line.rfind(',') + 1), modsim::to_string(mode));
    EXPECT_EQ(parse_row(line, "m.csv", 2).recompute, mode);
  }
  const std::string line = format_row(r);
  try {
    parse_row(line.substr(0, line.rfind(',') + 1) + "some", "m.csv", 7);
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()), "m.csv:7: recompute: expected one of none, selective, full, got 'some'");
  }
  EXPECT_EQ(parse_row(line.substr(0, line.rfind(',') + 1), "m.csv", 2).recompute, modsim::recompute::none);
}

TEST(Measurements, AFileWithoutTheRecomputeColumnReadsAsNone) {
  // A training row in a file whose header ends at anchor_s (written before recompute existed).
  const std::string path = temp_csv("no_recompute");
  std::ofstream(path) << old_header
                      << ",timing,attention,block,decode_routing,pad_capacity,predictor_hidden,model,anchor_s\n"
                      << "cpu,dev,block_mod_train,fp32,1,16,32,4,64,0.5,8,1,1,1e-03,9e-04,2e-03,5,4,gelu,none,0,0,0,"
                         "0,isolated,unfused,,,0,0,,\n";
  const std::vector<sim::measured_sample> points = read_measured_samples(path);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].recompute, modsim::recompute::none);
  EXPECT_EQ(points[0].key, "block_mod_train|fp32|1|16|32|4|4|64|0.5|gelu");
  {
    // Resuming it: a recompute none training row fits; a full one needs the column.
    measurement_writer w(path, true);
    measurement_row r = read_measurements(path)[0];
    r.recompute = modsim::recompute::full;
    EXPECT_THROW(w.append(r), error);
  }
  fs::remove(path);
}
