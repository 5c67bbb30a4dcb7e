// kernels/cpu/moe.cpp: expert_router, experts, and layer_mode for both MoDE variants.
#include <gtest/gtest.h>

#include <algorithm>

#include "helpers.hpp"

namespace modsim::kernels {
namespace {

using test::head;
using test::make_ws;
using test::moe_shape;
using test::tolerance;

TEST(ExpertRouter, ChoosesTopOneWithSoftmaxGateAndDropsOverCapacityInTokenOrder) {
  auto be = make_cpu_backend(2);
  block_shape s = moe_shape(moe_variant::integrated);  // 4 real + 1 no-op expert, all 24 tokens
  s.capacity_factor = 0.5;                             // ceil(0.5·24/5) = 3 tokens per expert
  auto ws = make_ws(*be, s, 17);
  const std::int64_t m = s.tokens(), d = s.d_model;
  ws->upload(tensor::mlp_in, ref::random_floats(static_cast<std::size_t>(m * d), 61));
  be->run(op::expert_router, *ws);
  const auto u = ref::to_double(head(ws->download(tensor::mlp_in), m * d));
  const auto logits = ref::matmul(u, ref::read_weights(*ws).expert_router_w, m, d, s.router_experts());
  EXPECT_LE(ref::relative_error(ws->download(tensor::expert_logits), logits), tolerance);
  const auto expected = ref::assign_experts(s, logits, m);
  const auto got = ws->download_indices(tensor::expert_index);
  EXPECT_EQ(std::vector<int>(got.begin(), got.end()), expected.expert);
  EXPECT_LE(ref::relative_error(ws->download(tensor::expert_gate), expected.gate), tolerance);
  // The case must exercise both a drop and a no-op choice to mean anything.
  EXPECT_NE(std::count(got.begin(), got.end(), -1), 0);
  EXPECT_NE(std::count(got.begin(), got.end(), 4), 0);
}

TEST(Experts, AddGatedExpertOutputsOnlyForKeptTokens) {
  for (mlp_kind kind : {mlp_kind::gelu, mlp_kind::swiglu}) {
    auto be = make_cpu_backend(2);
    const block_shape s = moe_shape(moe_variant::integrated, kind);
    auto ws = make_ws(*be, s, 19);
    const std::int64_t m = s.tokens(), d = s.d_model;
    std::vector<std::int32_t> expert(static_cast<std::size_t>(m));
    std::vector<double> gate(static_cast<std::size_t>(m));
    for (std::int64_t t = 0; t < m; ++t) {
      expert[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(t % 6) - 1;  // -1 dropped, 0..3 real, 4 no-op
      gate[static_cast<std::size_t>(t)] = 0.2 + 0.03 * static_cast<double>(t);
    }
    const std::vector<float> gate_f(gate.begin(), gate.end());
    ws->upload_indices(tensor::expert_index, expert);
    ws->upload(tensor::expert_gate, gate_f);
    be->run(op::experts, *ws);
    const auto u = ref::to_double(head(ws->download(tensor::mlp_in), m * d));
    const auto h = ref::to_double(head(ws->download(tensor::h), m * d));
    const auto expected = ref::moe_apply(s, ref::read_weights(*ws), u, h, m,
                                         std::vector<int>(expert.begin(), expert.end()), ref::to_double(gate_f));
    const auto y = ws->download(tensor::y);
    EXPECT_LE(ref::relative_error(y, expected), tolerance);
    for (std::int64_t c = 0; c < d; ++c) EXPECT_EQ(y[c], static_cast<float>(h[c])) << "a dropped token keeps h";
  }
}

TEST(LayerMode, IntegratedMatchesTheReferenceOverAllTokens) {
  for (mlp_kind kind : {mlp_kind::gelu, mlp_kind::swiglu}) {
    auto be = make_cpu_backend(2);
    block_shape s = moe_shape(moe_variant::integrated, kind);
    s.capacity_factor = 1.25;
    auto ws = make_ws(*be, s, 23);
    be->run(op::layer_mode, *ws);
    const auto x = ref::to_double(ws->download(tensor::x));
    const auto expected = ref::block(s, ref::read_weights(*ws), x, s.seq_len, true);
    EXPECT_LE(ref::relative_error(ws->download(tensor::y), expected), tolerance);
  }
}

TEST(LayerMode, StagedIsModRoutingAroundAnMoeBlock) {
  for (double capacity : {0.25, 0.5, 1.0}) {
    auto be = make_cpu_backend(2);
    block_shape s = moe_shape(moe_variant::staged);
    s.capacity = capacity;
    s.capacity_factor = 1.0;
    auto ws = make_ws(*be, s, 29);
    be->run(op::layer_mode, *ws);
    const auto expected = ref::mod_layer(s, ref::read_weights(*ws), ref::to_double(ws->download(tensor::x)), true);
    const auto idx = ws->download_indices(tensor::routed_index);
    EXPECT_EQ(std::vector<int>(idx.begin(), idx.end()), expected.routed);
    EXPECT_LE(ref::relative_error(ws->download(tensor::out), expected.out), tolerance) << "capacity " << capacity;
  }
}

}  // namespace
}  // namespace modsim::kernels
