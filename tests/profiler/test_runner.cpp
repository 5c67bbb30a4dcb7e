// The runner's workspace plan (profiler::plan_workspaces): every point measured exactly once,
// each workspace made once per shape, the rows the same as in grid order (keys and counts),
// and the capacity-free ops giving the same results on a workspace of another capacity.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>

#include "profiler/measurements.hpp"
#include "profiler/runner.hpp"
#include "core/error.hpp"

using namespace modsim;
using namespace modsim::profiler;
namespace fs = std::filesystem;

namespace {

// A backend whose ops take no time and that counts the workspaces it makes.
class counting_workspace final : public kernels::workspace {
 public:
  counting_workspace(const kernels::block_shape& s, kernels::dtype t) : kernels::workspace(s, t) {}
  std::int64_t size(kernels::tensor) const override { return 0; }
  std::int64_t bytes() const override { return 0; }
  void upload(kernels::tensor, std::span<const float>) override {}
  std::vector<float> download(kernels::tensor) const override { return {}; }
  void upload_indices(kernels::tensor, std::span<const std::int32_t>) override {}
  std::vector<std::int32_t> download_indices(kernels::tensor) const override { return {}; }
  void rotate() override {}
};

class counting_backend final : public kernels::backend {
 public:
  backend_kind kind() const override { return backend_kind::cpu; }
  std::string device() const override { return "fake device, 1 thread"; }
  std::unique_ptr<kernels::workspace> make_workspace(const kernels::block_shape& s, kernels::dtype t,
                                                     const kernels::workspace_options& o) override {
    made.push_back(s);
    fused.push_back(o.fused_attention);
    return std::make_unique<counting_workspace>(s, t);
  }
  void run(kernels::op, kernels::workspace&) override {}
  void synchronize() override {}
  std::vector<kernels::block_shape> made;
  std::vector<bool> fused;  // workspace_options::fused_attention of each workspace made
};

run_options fast_options() {
  run_options o;
  o.rule.warmup = 0;
  o.rule.min_samples = 1;
  o.rule.max_samples = 1;
  o.rule.min_time_s = 0;
  o.anchor = false;  // the anchor's workspace and runs are checked on their own (AnchorIsTimedAroundEveryPoint)
  return o;
}

std::string temp_csv(const char* name) {
  fs::path p = fs::temp_directory_path() / (std::string("modsim_test_runner_") + name + ".csv");
  fs::remove(p);
  return p.string();
}

// The workspace-relevant part of a shape, as text (model shape, capacity and MoE axes).
std::string workspace_key(const point& p) {
  const kernels::block_shape& s = p.shape;
  return std::string(kernels::to_string(p.type)) + " " + std::to_string(s.batch) + " " + std::to_string(s.seq_len) +
         " " + std::to_string(s.d_model) + " " + std::to_string(s.n_heads) + " " + std::to_string(s.n_kv_heads) + " " +
         std::to_string(s.d_ff) + " " + std::to_string(static_cast<int>(s.mlp)) + " " + std::to_string(s.capacity) +
         " " + std::to_string(static_cast<int>(s.variant)) + " " + std::to_string(s.experts) + " " +
         std::to_string(s.noop_experts) + " " + std::to_string(s.capacity_factor);
}

bool capacity_free(const point& p) {
  return (p.op == kernels::op::block_dense || p.op == kernels::op::router) &&
         p.shape.variant == kernels::moe_variant::none;
}

void check_plan(const std::vector<point>& points) {
  const workspace_plan plan = plan_workspaces(points);
  ASSERT_EQ(plan.steps.size(), points.size());
  std::vector<int> seen(points.size(), 0);
  std::set<std::size_t> finished;  // workspaces whose steps are over
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const auto& st = plan.steps[i];
    ASSERT_LT(st.point, points.size());
    ASSERT_LT(st.workspace, plan.workspaces.size());
    ++seen[st.point];
    EXPECT_EQ(finished.count(st.workspace), 0u) << "workspace " << st.workspace << " comes back";
    if (i > 0 && plan.steps[i - 1].workspace != st.workspace) finished.insert(plan.steps[i - 1].workspace);
    const point& p = points[st.point];
    const point& w = plan.workspaces[st.workspace];
    // A point runs on a workspace of its own shape, or (capacity-free ops) of its model shape
    // at another capacity with no MoE.
    if (capacity_free(p)) {
      point same = p;
      same.shape.capacity = w.shape.capacity;
      EXPECT_EQ(workspace_key(same), workspace_key(w)) << point_key(p);
    } else {
      EXPECT_EQ(workspace_key(p), workspace_key(w)) << point_key(p);
    }
  }
  for (std::size_t i = 0; i < points.size(); ++i) EXPECT_EQ(seen[i], 1) << point_key(points[i]);
  // No two workspaces of one shape.
  std::set<std::string> keys;
  for (const point& w : plan.workspaces) EXPECT_TRUE(keys.insert(workspace_key(w)).second) << workspace_key(w);
}

// The rows of a run over `points` on the counting backend, as key → count.
std::map<std::string, int> run_rows(const std::vector<point>& points, std::size_t* workspaces) {
  const std::string path = temp_csv("rows");
  counting_backend be;
  {
    measurement_writer w(path, false);
    const run_result r = run_points(be, points, w, fast_options());
    EXPECT_EQ(r.workspaces_made, be.made.size());
    if (workspaces) *workspaces = r.workspaces_made;
  }
  std::map<std::string, int> rows;
  for (const measurement_row& r : read_measurements(path)) ++rows[sim::shape_key(sample_of(r, path))];
  fs::remove(path);
  return rows;
}

}  // namespace

TEST(Runner, PlanCoversEveryPointOnceWithOneWorkspacePerShape) {
  for (const char* name : {"quick", "full"})
    for (const modsim::backend_kind backend : {modsim::backend_kind::cpu, modsim::backend_kind::cuda}) {
      SCOPED_TRACE(std::string(name) + " " + to_string(backend));
      check_plan(expand(preset(name, backend)).points);
      check_plan(with_timing(expand(preset(name, backend)), timing_mode::in_block).points);
    }
}

TEST(Runner, ReuseWritesTheSameRowsAsTheGridOrder) {
  // The full CPU preset: single ops, both blocks and MoDE layers at four capacities over 16
  // shapes. The rows (keys and counts) are exactly the grid's points, one row each.
  const expansion e = expand(preset("full", modsim::backend_kind::cpu));
  std::size_t workspaces = 0;
  const std::map<std::string, int> rows = run_rows(e.points, &workspaces);
  std::map<std::string, int> expected;
  for (const point& p : e.points) ++expected[point_key(p)];
  EXPECT_EQ(rows, expected);
  // One workspace per (shape, capacity) with no MoE and one per MoDE layer shape: per model
  // shape 4 capacities × (none, staged, integrated) = 12, over 16 model shapes.
  EXPECT_EQ(workspaces, 16u * 12u);
  // Grid order would have made one each time consecutive points changed workspace shape.
  std::size_t grid_order = 0;
  for (std::size_t i = 0; i < e.points.size(); ++i)
    if (i == 0 || workspace_key(e.points[i]) != workspace_key(e.points[i - 1])) ++grid_order;
  EXPECT_LT(workspaces, grid_order);
}

TEST(Runner, ResumeAfterAStopMeasuresTheRestOnce) {
  const expansion e = expand(preset("quick", modsim::backend_kind::cpu));
  const std::string path = temp_csv("resume");
  counting_backend be;
  std::atomic<bool> stop{false};
  {
    measurement_writer w(path, false);
    run_options o = fast_options();
    o.stop = &stop;
    o.on_progress = [&](const run_progress& p) {
      if (p.done == e.points.size() / 3) stop = true;
    };
    EXPECT_TRUE(run_points(be, e.points, w, o).interrupted);
  }
  {
    measurement_writer w(path, true);
    const run_result r = run_points(be, e.points, w, fast_options());
    EXPECT_FALSE(r.interrupted);
    EXPECT_EQ(r.measured + r.already_present, e.points.size());
  }
  std::map<std::string, int> rows;
  for (const measurement_row& r : read_measurements(path)) ++rows[sim::shape_key(sample_of(r, path))];
  EXPECT_EQ(rows.size(), e.points.size());
  for (const auto& [key, count] : rows) EXPECT_EQ(count, 1) << key;
  fs::remove(path);
}

TEST(Runner, CapacityFreeOpsGiveTheSameResultsOnAWorkspaceOfAnotherCapacity) {
  // block_dense and the router on a capacity-0.25 workspace (what the plan gives them) against
  // a capacity-1 workspace (what grid order gave them): bit for bit the same outputs.
  auto be = kernels::make_cpu_backend(1);
  kernels::block_shape s;
  s.batch = 2;
  s.seq_len = 16;
  s.d_model = 32;
  s.n_heads = 4;
  s.n_kv_heads = 4;
  s.d_head = 8;
  s.d_ff = 64;
  kernels::block_shape quarter = s;
  quarter.capacity = 0.25;
  auto full_ws = be->make_workspace(s, kernels::dtype::fp32);
  auto quarter_ws = be->make_workspace(quarter, kernels::dtype::fp32);
  for (kernels::op o : {kernels::op::block_dense, kernels::op::router}) {
    be->run(o, *full_ws);
    be->run(o, *quarter_ws);
    be->synchronize();
  }
  EXPECT_EQ(full_ws->download(kernels::tensor::y), quarter_ws->download(kernels::tensor::y));
  EXPECT_EQ(full_ws->download(kernels::tensor::router_logits), quarter_ws->download(kernels::tensor::router_logits));
}

TEST(Runner, FusedAttentionSkipsTheUnfusedOpsAndIsRecordedInRowsKeysAndWorkspaces) {
  const expansion unfused = expand(preset("quick", modsim::backend_kind::cuda));
  const expansion fused = with_attention(expand(preset("quick", modsim::backend_kind::cuda)), attention_impl::fused);
  std::size_t attention_ops = 0;
  for (const point& p : unfused.points)
    attention_ops +=
        p.op == kernels::op::attn_scores || p.op == kernels::op::attn_softmax || p.op == kernels::op::attn_values;
  ASSERT_GT(attention_ops, 0u);
  EXPECT_EQ(fused.points.size() + attention_ops, unfused.points.size());
  EXPECT_EQ(fused.skipped.size(), unfused.skipped.size() + attention_ops);
  std::set<std::string> unfused_keys;
  for (const point& p : unfused.points) unfused_keys.insert(point_key(p));
  for (const point& p : fused.points) {
    EXPECT_EQ(p.attention, attention_impl::fused);
    const std::string key = point_key(p);
    EXPECT_EQ(key.substr(key.size() - 6), "|fused") << key;
    EXPECT_EQ(unfused_keys.count(key), 0u) << key;  // one file may hold both
  }
  // Unfused keys are those written before the attention column existed (no suffix).
  point plain = unfused.points.front();
  EXPECT_EQ(point_key(plain).find("fused"), std::string::npos);

  // The rows say fused, read back as fused points, and every workspace is made fused.
  const std::string path = temp_csv("fused");
  counting_backend be;
  {
    measurement_writer w(path, false);
    run_points(be, fused.points, w, fast_options());
  }
  ASSERT_FALSE(be.fused.empty());
  for (bool f : be.fused) EXPECT_TRUE(f);
  const std::vector<measurement_row> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), fused.points.size());
  for (const measurement_row& r : rows) {
    EXPECT_EQ(r.attention, attention_impl::fused);
    EXPECT_EQ(sample_of(r, path).attention, attention_impl::fused);
  }
  fs::remove(path);
  EXPECT_EQ(parse_attention_impl("unfused"), attention_impl::unfused);
  EXPECT_STREQ(to_string(attention_impl::fused), "fused");
  EXPECT_THROW(parse_attention_impl("flash"), modsim::error);
}

// Decode points run on decode states from the factory, one sample = one uncommitted step with
// round(capacity·batch) forced tokens; the row's FLOPs are the simulator's for that step.
TEST(Runner, DecodePointsRunOnTheDecodeFactoryAndWriteTheSimulatorsCosts) {
  const grid g = parse_grid(
      R"({"ops": ["decode_dense", "decode_mod"], "batch": [2], "seq_len": [16], "d_model": [32], "n_heads": [4],
          "d_ff": [64], "capacity": [0.5], "decode_routing": ["sync", "pad"], "predictor_hidden": [8]})",
      "g.json");
  const expansion e = expand(g);
  ASSERT_EQ(e.points.size(), 3u);  // decode_dense sync, decode_mod sync and pad
  const std::string path = temp_csv("decode");
  counting_backend be;
  int made = 0;
  std::vector<kernels::decode_shape> shapes;
  run_options o = fast_options();
  o.make_decode = [&](const kernels::decode_shape& s, const kernels::decode_weights& w, kernels::dtype, bool) {
    ++made;
    shapes.push_back(s);
    return kernels::make_cpu_decode(s, w, 1);
  };
  {
    measurement_writer w(path, false);
    const run_result r = run_points(be, e.points, w, o);
    EXPECT_EQ(r.measured, 3u);
  }
  EXPECT_EQ(made, 3);
  EXPECT_TRUE(be.made.empty());  // no block workspace for decode points
  for (const kernels::decode_shape& s : shapes) EXPECT_EQ(s.max_context, 17);
  const std::vector<measurement_row> rows = read_measurements(path);
  ASSERT_EQ(rows.size(), 3u);
  for (const measurement_row& r : rows) {
    EXPECT_EQ(r.tokens, 2);
    EXPECT_GT(r.median_s, 0.0);
    if (r.op == modsim::op::decode_dense) {
      // One dense layer, B = 2 new tokens over L = 16 + 1 keys, d 32, d_q = d_kv = 32, d_ff 64 (gelu):
      // 2B·[d(d_q + 2d_kv) + 2·(L+1)·d_q + d_q·d + 2·d·d_ff] = 4·[3072 + 1088 + 1024 + 4096].
      EXPECT_EQ(r.matmul_flops, 4 * (3072 + 1088 + 1024 + 4096));
    }
  }
  fs::remove(path);
  // Without a factory, decode points are refused before anything is measured.
  measurement_writer w(path, false);
  EXPECT_THROW(run_points(be, e.points, w, fast_options()), error);
  fs::remove(path);
}
