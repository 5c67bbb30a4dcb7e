// kernels/backend.{hpp,cpp}: op names, shapes, routed token counts, workspace access.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "helpers.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/cpu_workspace.hpp"
#include "kernels/train.hpp"
#include "core/error.hpp"

namespace modsim::kernels {
namespace {

TEST(OpNames, AreTheContractNamesAndRoundTrip) {
  const std::vector<std::string> expected = {"router",      "topk",         "gather",      "attn_norm",     "qkv_proj",
                                             "attn_scores", "attn_softmax", "attn_values", "out_proj",      "mlp_norm",
                                             "mlp_up",      "mlp_gate",     "mlp_act",     "mlp_down",      "scatter",
                                             "block_dense", "block_mod",    "layer_mode",  "expert_router", "experts"};
  ASSERT_EQ(kernel_ops().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(to_string(kernel_ops()[i]), expected[i]);
    EXPECT_EQ(parse_op(expected[i]), kernel_ops()[i]);
  }
}

TEST(OpNames, UnknownNameIsABadInputError) {
  try {
    (void)parse_op("attention");
    FAIL() << "no exception";
  } catch (const modsim::error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_NE(std::string(e.what()).find("attention"), std::string::npos);
  }
}

TEST(TensorNames, AreUnique) {
  std::set<std::string> names;
  for (int i = 0; i < tensor_count; ++i) names.insert(std::string(to_string(static_cast<tensor>(i))));
  EXPECT_EQ(names.size(), static_cast<std::size_t>(tensor_count));
  EXPECT_EQ(to_string(tensor::expert_w_down), "expert_w_down");
}

TEST(RoutedTokens, OneEighthOf2048Is256) { EXPECT_EQ(routed_tokens(0.125, 2048), 256); }
TEST(RoutedTokens, OneTenthOf30Is3Not4) { EXPECT_EQ(routed_tokens(0.1, 30), 3); }
TEST(RoutedTokens, RoundsUpAPartialToken) { EXPECT_EQ(routed_tokens(0.5, 7), 4); }
TEST(RoutedTokens, IsAtLeastOneAndAtMostS) {
  EXPECT_EQ(routed_tokens(1e-6, 100), 1);
  EXPECT_EQ(routed_tokens(1.0, 100), 100);
}
TEST(RoutedTokens, BlockShapeUsesItsCapacity) {
  block_shape s = test::small_shape(0.25);
  EXPECT_EQ(s.routed_tokens(), 3);  // 0.25 of 12
  EXPECT_EQ(s.block_tokens(), 3);
  s.variant = moe_variant::integrated;
  EXPECT_EQ(s.block_tokens(), 12);
}

TEST(ExpertCapacity, IsCapacityFactorTimesTokensPerExpertRoundedUp) {
  block_shape s = test::moe_shape(moe_variant::integrated);  // 4 real + 1 no-op
  s.capacity_factor = 1.25;
  EXPECT_EQ(s.expert_capacity(24), 6);  // ceil(1.25·24/5) = ceil(6.0)
  s.capacity_factor = 1.0;
  EXPECT_EQ(s.expert_capacity(24), 5);  // ceil(4.8)
  s.capacity_factor = 0.0;
  EXPECT_EQ(s.expert_capacity(24), 24);  // dropless
}

TEST(BlockShape, ValidateNamesTheBadField) {
  auto expect_field = [](block_shape s, const std::string& field) {
    try {
      s.validate();
      ADD_FAILURE() << "no exception for " << field;
    } catch (const modsim::error& e) {
      EXPECT_EQ(e.kind(), error_kind::bad_input);
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  block_shape s = test::small_shape();
  EXPECT_NO_THROW(s.validate());
  s.capacity = 0.0;
  expect_field(s, "block_shape.capacity");
  s = test::small_shape();
  s.capacity = 1.5;
  expect_field(s, "block_shape.capacity");
  s = test::small_shape();
  s.n_kv_heads = 3;
  expect_field(s, "block_shape.n_kv_heads");
  s = test::small_shape();
  s.d_ff = 0;
  expect_field(s, "block_shape.d_ff");
  s = test::moe_shape(moe_variant::integrated);
  s.top_k = 2;
  expect_field(s, "block_shape.top_k");
  s = test::moe_shape(moe_variant::staged);
  s.experts = 0;
  expect_field(s, "block_shape.experts");
}

TEST(ResultTensor, IsYForDenseAndIntegratedAndOutForRoutedLayers) {
  EXPECT_EQ(result_tensor(op::block_dense, test::small_shape()), tensor::y);
  EXPECT_EQ(result_tensor(op::block_mod, test::small_shape()), tensor::out);
  EXPECT_EQ(result_tensor(op::layer_mode, test::moe_shape(moe_variant::integrated)), tensor::y);
  EXPECT_EQ(result_tensor(op::layer_mode, test::moe_shape(moe_variant::staged)), tensor::out);
}

TEST(CpuWorkspace, RejectsAnUnsupportedDtypeAndABadShape) {
  auto be = make_cpu_backend(2);
  EXPECT_THROW((void)be->make_workspace(test::small_shape(), dtype::bf16), modsim::error);
  block_shape bad = test::small_shape();
  bad.n_heads = 0;
  EXPECT_THROW((void)be->make_workspace(bad, dtype::fp32), modsim::error);
}

TEST(CpuWorkspace, HoldsRandomNonZeroWeightsAndInputs) {
  auto be = make_cpu_backend(2);
  auto ws = test::make_ws(*be, test::small_shape());
  for (tensor t : {tensor::x, tensor::router_w, tensor::w_q, tensor::w_down, tensor::attn_norm_g}) {
    const auto v = ws->download(t);
    ASSERT_FALSE(v.empty()) << to_string(t);
    for (float f : v) ASSERT_NE(f, 0.0f) << to_string(t);
  }
  // The router vector is scaled so that r = w·x is O(1).
  const auto r = ws->download(tensor::router_logits);
  double ss = 0.0;
  for (float f : r) ss += f * f;
  const double rms = std::sqrt(ss / static_cast<double>(r.size()));
  EXPECT_GT(rms, 0.3);
  EXPECT_LT(rms, 3.0);
}

TEST(CpuWorkspace, SameSeedGivesSameDataAndRotateSwitchesInputs) {
  auto be = make_cpu_backend(2);
  workspace_options o;
  o.seed = 3;
  o.input_copies = 2;
  auto a = be->make_workspace(test::small_shape(), dtype::fp32, o);
  auto b = be->make_workspace(test::small_shape(), dtype::fp32, o);
  EXPECT_EQ(a->download(tensor::w_q), b->download(tensor::w_q));
  const auto x0 = a->download(tensor::x);
  a->rotate();
  const auto x1 = a->download(tensor::x);
  EXPECT_NE(x0, x1);
  a->rotate();
  EXPECT_EQ(a->download(tensor::x), x0);
}

TEST(CpuWorkspace, RejectsOversizedUploadsWrongKindsAndBadIndices) {
  auto be = make_cpu_backend(2);
  auto ws = test::make_ws(*be, test::small_shape());
  EXPECT_THROW(ws->upload(tensor::router_w, std::vector<float>(1000, 1.0f)), modsim::error);
  EXPECT_THROW(ws->upload(tensor::routed_index, std::vector<float>(1, 1.0f)), modsim::error);
  EXPECT_THROW((void)ws->download_indices(tensor::x), modsim::error);
  EXPECT_THROW(ws->upload_indices(tensor::routed_index, std::vector<std::int32_t>{12}), modsim::error);
  EXPECT_EQ(ws->size(tensor::w_gate), 0);  // gelu has no gate
  EXPECT_EQ(ws->size(tensor::scores), 2 * 4 * 12 * 12);
}

TEST(CpuBackend, OpsThatNeedAnotherShapeSayWhy) {
  auto be = make_cpu_backend(2);
  auto ws = test::make_ws(*be, test::small_shape());
  EXPECT_THROW(be->run(op::mlp_gate, *ws), modsim::error);
  EXPECT_THROW(be->run(op::layer_mode, *ws), modsim::error);
  EXPECT_THROW(be->run(op::experts, *ws), modsim::error);
}

}  // namespace
}  // namespace modsim::kernels

namespace modsim::kernels {
namespace {

// Repeating an in-place op (as the profiler does) must not feed it its own output: without
// prepare(), gelu applied to gelu's output again and again drifts towards zero (and into
// denormal floats, which are slow on CPUs).
TEST(Backend, PrepareRestoresTheInputOfInPlaceOps) {
  for (op o : {op::mlp_act, op::attn_softmax}) {
    auto be = make_cpu_backend(1);
    auto ws = test::make_ws(*be, test::small_shape(1.0, mlp_kind::gelu));
    const tensor t = o == op::mlp_act ? tensor::mlp_hidden : tensor::scores;
    be->prepare(o, *ws);
    be->run(o, *ws);
    const std::vector<float> once = ws->download(t);
    for (int i = 0; i < 20; ++i) {
      be->prepare(o, *ws);
      be->run(o, *ws);
    }
    EXPECT_EQ(ws->download(t), once) << to_string(o);
    // The test can fail: repeating without prepare changes the data.
    be->run(o, *ws);
    be->run(o, *ws);
    if (o == op::mlp_act) {
      EXPECT_NE(ws->download(t), once);
    }
  }
}

// The training tests' layer: 16 tokens a sequence, d 32, 4 heads of 8 (2 kv heads), swiglu d_ff 64.
block_shape training_shape(std::int64_t batch) {
  block_shape s;
  s.batch = batch;
  s.seq_len = 16;
  s.d_model = 32;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.d_head = 8;
  s.d_ff = 64;
  s.mlp = mlp_kind::swiglu;
  return s;
}

// The CPU backend's training ops run one layer's forward + backward on the workspace's
// training state: block_mod_train the routed layer, on the workspace's x, with its dL/dout.
// The same step through cpu_trainer directly, on the same weights, gives the same dL/dx.
TEST(CpuTraining, BlockModTrainIsTheTrainersStepOnTheWorkspaceInput) {
  block_shape s = training_shape(2);
  s.capacity = 0.25;
  auto be = make_cpu_backend(1);
  workspace_options o;
  o.seed = 7;
  o.training = true;
  o.recompute = recompute::selective;
  auto ws = be->make_workspace(s, dtype::fp32, o);
  be->run(op::block_mod_train, *ws);
  auto& cws = dynamic_cast<cpu::cpu_workspace&>(*ws);
  ASSERT_NE(cws.m_training, nullptr);
  const std::vector<float> x = ws->download(tensor::x);
  const train::layer_params p = train::random_params(s, true, 7);
  train::cpu_trainer trainer(1);
  train::saved_activations saved;
  std::vector<float> out(x.size()), dx(x.size());
  train::layer_grads g;
  trainer.forward(p, x, out, saved, recompute::none);
  trainer.backward(p, saved, cws.m_training->dout, dx, g);
  ASSERT_EQ(cws.m_training->dx.size(), dx.size());
  for (std::size_t i = 0; i < dx.size(); ++i) EXPECT_NEAR(cws.m_training->dx[i], dx[i], 1e-5f) << i;
  EXPECT_EQ(cws.m_training->routed.saved.mode, recompute::selective);
}

// adamw is one AdamW step (kernels/train.hpp's defaults: lr 1e-3, betas 0.9 and 0.999, eps
// 1e-8, no decay) over the workspace's dense layer with its last gradients: the workspace made
// the first step, so this is step 2, checked against the update in float64. The layer (d 32, 4
// heads, 2 kv heads of 8, swiglu d_ff 64) has 32·(32 + 2·16) + 32·32 + 2·32 + 3·32·64 = 9,280
// parameters, as the cost model's adamw row counts them.
TEST(CpuTraining, AdamwIsOneAdamwStepOfTheDenseLayer) {
  const block_shape s = training_shape(1);
  auto be = make_cpu_backend(1);
  workspace_options o;
  o.seed = 3;
  o.training = true;
  auto ws = be->make_workspace(s, dtype::fp32, o);
  auto& layer = dynamic_cast<cpu::cpu_workspace&>(*ws).m_training->dense;
  ASSERT_EQ(layer.adam.step, 1);
  EXPECT_EQ(layer.params.parameter_count(), 9280);
  const train::layer_params p0 = layer.params, m0 = layer.adam.m, v0 = layer.adam.v;
  const train::layer_grads g = layer.grads;
  be->run(op::adamw, *ws);
  EXPECT_EQ(layer.adam.step, 2);
  const double b1 = 0.9, b2 = 0.999, lr = 1e-3, eps = 1e-8;
  const auto p1 = layer.params.tensors();
  const auto t0 = p0.tensors(), tm = m0.tensors(), tv = v0.tensors(), tg = g.tensors();
  int checked = 0;
  for (std::size_t k = 0; k < t0.size(); ++k)
    for (std::size_t i = 0; i < t0[k]->size(); ++i) {
      const double gi = (*tg[k])[i];
      const double m = b1 * (*tm[k])[i] + (1 - b1) * gi;
      const double v = b2 * (*tv[k])[i] + (1 - b2) * gi * gi;
      const double want = (*t0[k])[i] - lr * ((m / (1 - b1 * b1)) / (std::sqrt(v / (1 - b2 * b2)) + eps));
      EXPECT_NEAR((*p1[k])[i], want, 1e-6) << k << " " << i;
      ++checked;
    }
  EXPECT_EQ(checked, 9280);
}

TEST(CpuTraining, TrainingOpsNeedATrainingWorkspace) {
  block_shape s;
  s.batch = 1;
  s.seq_len = 8;
  s.d_model = 16;
  s.n_heads = 2;
  s.n_kv_heads = 2;
  s.d_head = 8;
  s.d_ff = 32;
  auto be = make_cpu_backend(1);
  auto ws = be->make_workspace(s, dtype::fp32);
  try {
    be->run(op::block_dense_train, *ws);
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_NE(std::string(e.what()).find("needs a workspace made for training"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace modsim::kernels
