// CUDA training (kernels/cuda_train.hpp) against the CPU reference (kernels/train.hpp's
// cpu_trainer): same weights, input and dL/dout; the output, dL/dx and every parameter's
// gradient of a dense and a MoD layer (MHA and GQA, gelu and swiglu, an unaligned head size)
// within a norm-wise relative error of 1e-4 (fp32) or 2e-2 (bf16; the CPU then runs on the
// bf16-rounded weights and inputs, so only the arithmetic differs), the routed positions
// identical, under each recomputation; MoDE staged and integrated layers in fp32; the recomputation modes agree with
// each other; AdamW and the predictor's BCE match. Every test skips with "no CUDA device" where there is none.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "cuda_test.hpp"
#include "kernels/cuda_backend.hpp"
#include "kernels/cuda_train.hpp"
#include "kernels/init.hpp"
#include "kernels/train.hpp"
#include "kernels/train_tensors.hpp"
#include "core/error.hpp"

namespace modsim::kernels::train {
namespace {

using test::layer_shape;
using test::relative_error;
using test::tolerance;

struct train_case {
  std::string name;
  block_shape shape;
  bool routed = false;
  dtype type = dtype::fp32;
  recompute mode = recompute::none;
};

[[maybe_unused]] void PrintTo(const train_case& c, std::ostream* os) { *os << c.name; }

std::vector<train_case> train_cases() {
  struct named_shape {
    const char* name;
    block_shape shape;
  };
  // k = 32, 32 and 29 routed tokens; d_head 32, 32 and 25 (the last: no 16-byte-aligned
  // head offsets, so attention's GEMMs run one per (sequence, head)).
  const named_shape shapes[] = {
      {"mha_gelu", layer_shape(2, 64, 128, 4, 4, 256, mlp_kind::gelu, 0.5)},
      {"gqa_swiglu", layer_shape(2, 128, 256, 8, 2, 512, mlp_kind::swiglu, 0.25)},
      {"odd_gqa_gelu", layer_shape(3, 96, 100, 4, 2, 200, mlp_kind::gelu, 0.3)},
  };
  std::vector<train_case> out;
  for (const auto& s : shapes)
    for (const bool routed : {false, true})
      for (const dtype t : {dtype::fp32, dtype::bf16})
        for (const recompute m : {recompute::none, recompute::selective, recompute::full})
          out.push_back({std::string(routed ? "mod_" : "dense_") + s.name + "_" + std::string(to_string(t)) + "_" +
                             std::string(to_string(m)),
                         s.shape, routed, t, m});
  // MoDE (staged: routed; integrated: not), fp32 only: in bf16 an expert choice the rounding
  // flips would be a different layer, not an error. Capacity factors below 1 and few experts
  // drop tokens; no-op experts skip the MLP.
  const auto moe = [](block_shape sh, moe_variant v, int experts, int noop, double factor) {
    sh.variant = v;
    sh.experts = experts;
    sh.noop_experts = noop;
    sh.capacity_factor = factor;
    return sh;
  };
  const named_shape moe_shapes[] = {
      {"staged_mha_gelu", moe(shapes[0].shape, moe_variant::staged, 4, 0, 1.25)},
      {"staged_gqa_swiglu", moe(shapes[1].shape, moe_variant::staged, 3, 0, 1.0)},
      {"integrated_gqa_swiglu", moe(shapes[1].shape, moe_variant::integrated, 4, 1, 1.0)},
      {"integrated_odd_gelu", moe(shapes[2].shape, moe_variant::integrated, 3, 2, 0.8)},
  };
  for (const auto& s : moe_shapes)
    for (const recompute m : {recompute::none, recompute::full})
      out.push_back({std::string(s.name) + "_fp32_" + std::string(to_string(m)), s.shape,
                     s.shape.variant == moe_variant::staged, dtype::fp32, m});
  return out;
}

// v rounded to the nearest bf16 (ties to even), as the device's conversion rounds it.
float round_bf16(float v) {
  std::uint32_t u = 0;
  std::memcpy(&u, &v, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  float r = 0;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

void round_all(std::vector<float>& v) {
  for (float& x : v) x = round_bf16(x);
}

// Weights, input and dL/dout of a case (rounded to bf16 for a bf16 case).
struct case_data {
  layer_params params;
  std::vector<float> x, dout;
};

case_data make_data(const train_case& c) {
  case_data d;
  d.params = random_params(c.shape, c.routed, 11);
  const auto n = static_cast<std::size_t>(c.shape.tokens() * c.shape.d_model);
  d.x.resize(n);
  d.dout.resize(n);
  fill_normal(d.x, 11, 9001, 0.0, 1.0, 0, static_cast<std::int64_t>(n));
  fill_normal(d.dout, 11, 9002, 0.0, 1.0, 0, static_cast<std::int64_t>(n));
  if (c.type == dtype::bf16) {
    for (auto* t : d.params.tensors()) round_all(*t);
    round_all(d.x);
    round_all(d.dout);
  }
  return d;
}

// What one trainer produced for a case.
struct step_result {
  std::vector<float> out, dx;
  layer_grads grads;
  std::vector<std::int32_t> routed_index;
};

step_result run_cpu(const train_case& c, const case_data& d) {
  cpu_trainer trainer(2);
  step_result r;
  r.out.resize(d.x.size());
  r.dx.resize(d.x.size());
  saved_activations saved;
  trainer.forward(d.params, d.x, r.out, saved, c.mode);
  trainer.backward(d.params, saved, d.dout, r.dx, r.grads);
  if (c.routed && c.mode != recompute::full) r.routed_index = saved.routed_index;
  return r;
}

step_result run_cuda(const train_case& c, const case_data& d, recompute mode) {
  cuda_trainer trainer(d.params, {c.type, 0});
  trainer.set_input(d.x);
  trainer.set_output_grad(d.dout);
  trainer.forward(mode);
  trainer.backward();
  trainer.synchronize();
  step_result r;
  r.out.resize(d.x.size());
  r.dx.resize(d.x.size());
  trainer.read_output(r.out);
  trainer.read_input_grad(r.dx);
  trainer.read_grads(r.grads);
  r.routed_index = trainer.read_routed_index();
  return r;
}

// Every compared quantity of `got` within `tol` of `want`.
void expect_close(const step_result& got, const step_result& want, double tol) {
  EXPECT_LE(relative_error(got.out, want.out), tol) << "out";
  EXPECT_LE(relative_error(got.dx, want.dx), tol) << "dL/dx";
  const auto g = got.grads.tensors();
  const auto w = want.grads.tensors();
  ASSERT_EQ(g.size(), w.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(g[i]->size(), w[i]->size()) << tensor_names[i];
    if (w[i]->empty()) continue;
    EXPECT_LE(relative_error(*g[i], *w[i]), tol) << "dL/d" << tensor_names[i];
  }
}

class CudaTrainParity : public testing::TestWithParam<train_case> {};

TEST_P(CudaTrainParity, OutputInputGradientAndEveryWeightGradientMatchTheCpu) {
  MODSIM_REQUIRE_GPU();
  const train_case& c = GetParam();
  const case_data d = make_data(c);
  const step_result want = run_cpu(c, d);
  const step_result got = run_cuda(c, d, c.mode);
  if (c.routed) {
    ASSERT_EQ(got.routed_index.size(), static_cast<std::size_t>(c.shape.batch * c.shape.routed_tokens()));
    if (!want.routed_index.empty()) {
      EXPECT_EQ(got.routed_index, want.routed_index) << "routed positions";
    }
  }
  expect_close(got, want, tolerance(c.type));
}

std::string case_name(const testing::TestParamInfo<train_case>& p) { return p.param.name; }

INSTANTIATE_TEST_SUITE_P(Layers, CudaTrainParity, testing::ValuesIn(train_cases()), case_name);

TEST(CudaTrain, RecomputationModesGiveTheSameGradients) {
  MODSIM_REQUIRE_GPU();
  // Recomputation repeats the same kernels on the same inputs: only the order of the
  // gains' and the router's fp32 atomic partial sums may differ.
  for (const dtype t : {dtype::fp32, dtype::bf16}) {
    const train_case c{"gqa", layer_shape(2, 128, 256, 8, 2, 512, mlp_kind::swiglu, 0.25), true, t, recompute::none};
    const case_data d = make_data(c);
    const step_result none = run_cuda(c, d, recompute::none);
    for (const recompute m : {recompute::selective, recompute::full}) {
      SCOPED_TRACE(std::string(to_string(t)) + " " + std::string(to_string(m)));
      expect_close(run_cuda(c, d, m), none, 1e-6);
    }
  }
}

TEST(CudaTrain, AdamWStepMatchesTheCpu) {
  MODSIM_REQUIRE_GPU();
  const train_case c{"mod", layer_shape(2, 64, 128, 4, 2, 256, mlp_kind::swiglu, 0.5), true, dtype::fp32,
                     recompute::none};
  const case_data d = make_data(c);
  adamw_options o;
  o.lr = 1e-2;
  o.weight_decay = 0.1;
  // The CPU: two steps from the same gradients.
  const step_result cpu = run_cpu(c, d);
  cpu_trainer ct(2);
  layer_params want = d.params;
  adamw_state state;
  ct.adamw_step(want, cpu.grads, state, o);
  ct.adamw_step(want, cpu.grads, state, o);
  // The device: one backward, two steps over its own gradients.
  cuda_trainer gt(d.params, {dtype::fp32, 0});
  gt.set_input(d.x);
  gt.set_output_grad(d.dout);
  gt.forward();
  gt.backward();
  gt.adamw_step(o);
  gt.adamw_step(o);
  layer_params got;
  gt.read_params(got);
  const auto g = got.tensors();
  const auto w = want.tensors();
  const auto p0 = d.params.tensors();
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (w[i]->empty()) continue;
    // The update itself (p − p0), not only p, within 1e-3.
    std::vector<float> dg(g[i]->size()), dw(w[i]->size());
    for (std::size_t j = 0; j < dg.size(); ++j) {
      dg[j] = (*g[i])[j] - (*p0[i])[j];
      dw[j] = (*w[i])[j] - (*p0[i])[j];
    }
    EXPECT_LE(relative_error(dg, dw), 1e-3) << tensor_names[i];
  }
}

TEST(CudaTrain, PredictorLossAndGradientsMatchTheCpu) {
  MODSIM_REQUIRE_GPU();
  const train_case c{"mod", layer_shape(2, 64, 128, 4, 4, 256, mlp_kind::gelu, 0.25), true, dtype::fp32,
                     recompute::none};
  const case_data d = make_data(c);
  predictor_params p;
  p.d_model = 128;
  p.hidden = 32;
  p.w1.resize(128 * 32);
  p.w2.resize(32);
  fill_normal(p.w1, 5, 1, 0.0, 1.0 / std::sqrt(128.0), 0, 128 * 32);
  fill_normal(p.w2, 5, 2, 0.0, 1.0 / std::sqrt(32.0), 0, 32);
  p.bias = 0.25f;
  // Routed positions: the first 16 of each sequence's 64 in steps of 4.
  std::vector<std::int32_t> index;
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < 16; ++j) index.push_back(4 * j);
  cpu_trainer ct(2);
  predictor_grads want, got;
  const double want_loss = ct.predictor_backward(p, c.shape, d.x, index, want);
  cuda_trainer gt(d.params, {dtype::fp32, 0});
  const double got_loss = gt.predictor_backward(p, d.x, index, got);
  EXPECT_NEAR(got_loss, want_loss, 1e-5 * std::abs(want_loss));
  EXPECT_LE(relative_error(got.w1, want.w1), 1e-4);
  EXPECT_LE(relative_error(got.w2, want.w2), 1e-4);
  EXPECT_NEAR(got.bias, want.bias, 1e-5 + 1e-4 * std::abs(want.bias));
}

TEST(CudaTrain, RefusesFp16TooManyExpertsAndMissizedWeightsBeforeTouchingADevice) {
  // Runs without a GPU: the checks come before any CUDA call.
  const block_shape s = layer_shape(2, 64, 128, 4, 4, 256, mlp_kind::gelu, 0.5);
  const auto expect_bad_input = [](const layer_params& p, dtype t, const std::string& key) {
    try {
      cuda_trainer trainer(p, {t, 0});
      FAIL() << "made a trainer";
    } catch (const error& e) {
      EXPECT_EQ(e.kind(), error_kind::bad_input) << e.what();
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  expect_bad_input(zero_params(s, true), dtype::fp16, "dtype");
  layer_params many;  // 257 experts: more than the expert router's kernels take
  many.shape = s;
  many.shape.variant = moe_variant::staged;
  many.shape.experts = 257;
  many.shape.capacity_factor = 1.0;
  many.routed = true;
  expect_bad_input(many, dtype::bf16, "block_shape.experts");
  layer_params short_q = zero_params(s, false);
  short_q.w_q.pop_back();  // 128·128 − 1 elements
  expect_bad_input(short_q, dtype::fp32, "layer_params.w_q");
}

// The backend's training ops: both layers' forward + backward and the dense layer's AdamW step
// (op adamw) run on a training workspace and are refused on another; MoDE has no training state.
TEST(CudaTrain, TheBackendRunsTheTrainingOpsAndAdamwAndRefusesMoDE) {
  MODSIM_REQUIRE_GPU();
  auto be = make_cuda_backend(0);
  workspace_options o;
  o.training = true;
  o.recompute = recompute::selective;
  auto ws = be->make_workspace(layer_shape(2, 128, 256, 8, 2, 512, mlp_kind::gelu, 0.25), dtype::bf16, o);
  be->run(op::block_dense_train, *ws);
  be->run(op::block_mod_train, *ws);
  be->synchronize();
  EXPECT_GT(be->timed_run(op::block_mod_train, *ws), 0.0);
  be->run(op::adamw, *ws);
  EXPECT_GT(be->timed_run(op::adamw, *ws), 0.0);
  // Without training state the ops are refused.
  auto plain = be->make_workspace(layer_shape(2, 128, 256, 8, 2, 512, mlp_kind::gelu, 0.25), dtype::bf16, {});
  EXPECT_THROW(be->run(op::block_dense_train, *plain), error);
  EXPECT_THROW(be->run(op::adamw, *plain), error);
  block_shape moe = layer_shape(2, 64, 128, 4, 4, 256, mlp_kind::gelu, 0.5);
  moe.variant = moe_variant::staged;
  moe.experts = 4;
  moe.capacity_factor = 1.0;
  try {
    be->make_workspace(moe, dtype::bf16, o);
    FAIL() << "a MoDE training workspace was made";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
  }
}

}  // namespace
}  // namespace modsim::kernels::train
