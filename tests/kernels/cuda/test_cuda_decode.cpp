// The CUDA decode step (kernels/cuda/decode.cu) against the CPU one (make_cpu_decode) on the
// same weights (make_decode_weights) and the same caches (fill_cache, same seed): over several
// committed steps in a row, hidden states and logits within a norm-wise relative error of
// 1e-4 (fp32) or 2e-2 (bf16, against the CPU's fp32), identical routing decisions and cache
// lengths; dense and routed layers, MHA and GQA, gelu and swiglu, ragged contexts across pages
// and splits, sync and pad (with and without a CUDA graph), predictor, forced count and forced
// mask, commit = false steps that repeat. Tests that need a GPU skip with "no CUDA device"
// where there is none; the refusals checked before any device is touched run anywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/cuda_backend.hpp"
#include "cuda_test.hpp"
#include "kernels/decode.hpp"
#include "kernels/init.hpp"

namespace modsim::kernels {
namespace {

using source = decode_decisions::source;

decode_shape make_shape(std::int64_t batch, std::int64_t heads, std::int64_t kv_heads, mlp_kind mlp,
                        std::vector<bool> routed, decode_routing routing, double pad_capacity) {
  decode_shape s;
  s.batch = batch;
  s.max_context = 300;  // 3 splits of 128 keys; 19 pages of 16 tokens (the last one partly used)
  s.d_model = 64;
  s.n_heads = heads;
  s.n_kv_heads = kv_heads;
  s.d_head = 64 / heads;
  s.d_ff = 96;
  s.mlp = mlp;
  s.predictor_hidden = 24;
  s.vocab = 50;
  s.page_tokens = 16;
  for (const bool r : routed) s.layers.push_back({r});
  s.routing = routing;
  s.pad_capacity = pad_capacity;
  return s;
}

// d_head 15, pages of 7 tokens, 2 splits (128 + 22 keys), MQA: nothing a power of two.
decode_shape odd(decode_shape s) {
  s.max_context = 150;
  s.d_model = 60;
  s.n_heads = 4;
  s.n_kv_heads = 1;
  s.d_head = 15;
  s.d_ff = 50;
  s.predictor_hidden = 7;
  s.vocab = 33;
  s.page_tokens = 7;
  return s;
}

// 64 query heads of 256 on one KV head: the attention block's shared memory (97 KiB) is
// above the 48 KiB default.
decode_shape wide_group(decode_shape s) {
  s.n_heads = 64;
  s.n_kv_heads = 1;
  s.d_head = 256;
  return s;
}

// 300 sequences: the routing's compaction crosses its 256-token tiles.
decode_shape many(decode_shape s) {
  s.batch = 300;
  s.max_context = 140;
  s.d_model = 32;
  s.d_head = 32 / s.n_heads;
  s.d_ff = 48;
  s.vocab = 20;
  return s;
}

struct decode_case {
  std::string name;
  decode_shape shape;
  source from = source::predictor;
  std::int64_t count = 0;  // forced_count
  bool graph = false;
};

struct decode_param {
  decode_case c;
  dtype type;
};

std::ostream& operator<<(std::ostream& os, const decode_param& p) { return os << p.c.name << "_" << to_string(p.type); }

std::vector<decode_param> decode_params() {
  const std::vector<bool> dense{false, false};
  const std::vector<bool> mixed{false, true, false, true};
  const auto sync = decode_routing::sync;
  const auto pad = decode_routing::pad;
  const std::vector<decode_case> cases{
      {"dense_mha_gelu", make_shape(5, 4, 4, mlp_kind::gelu, dense, sync, 1.0)},
      {"dense_gqa_swiglu", make_shape(5, 8, 2, mlp_kind::swiglu, dense, sync, 1.0)},
      {"routed_mha_mask_sync", make_shape(6, 4, 4, mlp_kind::gelu, mixed, sync, 1.0), source::forced_mask},
      {"routed_gqa_mask_sync", make_shape(6, 8, 2, mlp_kind::swiglu, mixed, sync, 1.0), source::forced_mask},
      {"routed_gqa_count_sync", make_shape(6, 8, 2, mlp_kind::swiglu, mixed, sync, 1.0), source::forced_count, 3},
      // pad: 3 rows; 4 forced tokens, so one is dropped at each routed layer
      {"routed_gqa_count_pad", make_shape(6, 8, 2, mlp_kind::gelu, mixed, pad, 0.5), source::forced_count, 4},
      {"routed_gqa_mask_pad", make_shape(6, 8, 2, mlp_kind::swiglu, mixed, pad, 0.5), source::forced_mask},
      {"routed_gqa_mask_pad_graph", make_shape(6, 8, 2, mlp_kind::swiglu, mixed, pad, 0.5), source::forced_mask, 0,
       true},
      {"routed_mha_count_pad_graph", make_shape(6, 4, 4, mlp_kind::gelu, mixed, pad, 0.5), source::forced_count, 2,
       true},
      {"routed_gqa_predictor_sync", make_shape(6, 8, 2, mlp_kind::swiglu, mixed, sync, 1.0), source::predictor},
      {"routed_gqa_predictor_pad_graph", make_shape(6, 8, 2, mlp_kind::gelu, mixed, pad, 0.5), source::predictor, 0,
       true},
      {"odd_mqa_mask_sync", odd(make_shape(5, 4, 1, mlp_kind::swiglu, mixed, sync, 1.0)), source::forced_mask},
      {"odd_mqa_count_pad_graph", odd(make_shape(5, 4, 1, mlp_kind::gelu, mixed, pad, 0.6)), source::forced_count, 4,
       true},
      {"wide_group_mask_sync", wide_group(make_shape(3, 4, 1, mlp_kind::gelu, mixed, sync, 1.0)), source::forced_mask},
      // pad: 150 rows; 200 forced tokens, 50 dropped at each routed layer
      {"many_count_pad", many(make_shape(300, 4, 2, mlp_kind::gelu, mixed, pad, 0.5)), source::forced_count, 200},
      {"many_mask_pad_graph", many(make_shape(300, 4, 2, mlp_kind::swiglu, mixed, pad, 0.5)), source::forced_mask, 0,
       true},
  };
  std::vector<decode_param> out;
  for (const auto& c : cases)
    for (const dtype t : {dtype::fp32, dtype::bf16}) {
      // Decisions from the logits (predictor, forced count) flip where a bf16 logit lands on
      // the other side of 0 or of a neighbour: compared in fp32 only; the forced mask in both.
      if (t == dtype::bf16 && c.from != source::forced_mask && c.shape.any_routed()) continue;
      out.push_back({c, t});
    }
  return out;
}

using test::relative_error;
using test::tolerance;

std::vector<float> step_input(const decode_shape& s, int step) {
  std::vector<float> x(static_cast<std::size_t>(s.batch * s.d_model));
  fill_normal(x, 4242, static_cast<std::uint64_t>(step), 0.0, 1.0, 0, s.batch * s.d_model);
  return x;
}

// Step `step`'s decisions: a mask that changes from step to step and layer to layer.
decode_decisions step_decisions(const decode_case& c, int step) {
  decode_decisions d;
  d.from = c.from;
  d.count = c.count;
  if (c.from == source::forced_mask) {
    std::int64_t routed_layers = 0;
    for (const auto& layer : c.shape.layers) routed_layers += layer.routed ? 1 : 0;
    for (std::int64_t r = 0; r < routed_layers; ++r) {
      std::vector<std::uint8_t> m(static_cast<std::size_t>(c.shape.batch));
      for (std::int64_t b = 0; b < c.shape.batch; ++b) m[static_cast<std::size_t>(b)] = (b + step + r) % 3 != 0 ? 1 : 0;
      d.mask.push_back(m);
    }
  }
  return d;
}

// Ragged: empty, within one page, across pages, across the 128-key splits; at most
// max_context − 8, room for the steps and writes of the tests.
std::vector<std::int64_t> ragged(const decode_shape& s, const std::vector<std::int64_t>& pattern) {
  std::vector<std::int64_t> out;
  for (std::int64_t b = 0; b < s.batch; ++b)
    out.push_back(std::min(pattern[static_cast<std::size_t>(b) % pattern.size()], s.max_context - 8));
  return out;
}

std::vector<std::int64_t> contexts(const decode_shape& s) { return ragged(s, {129, 0, 17, 255, 40, 200, 1, 64, 127}); }
std::vector<std::int64_t> routed_contexts(const decode_shape& s) {
  return ragged(s, {16, 130, 0, 33, 127, 3, 128, 90});
}

void expect_same_lengths(const decode_state& gpu, const decode_state& cpu, const std::string& when) {
  const decode_shape& s = cpu.shape();
  for (int l = 0; l < static_cast<int>(s.layers.size()); ++l)
    for (std::int64_t b = 0; b < s.batch; ++b)
      EXPECT_EQ(gpu.length(l, b), cpu.length(l, b)) << when << ", layer " << l << ", sequence " << b;
}

void expect_same_step(decode_state& gpu, decode_state& cpu, dtype t, const std::string& when) {
  gpu.synchronize();
  cpu.synchronize();
  EXPECT_EQ(gpu.routed(), cpu.routed()) << when;
  EXPECT_LT(relative_error(gpu.hidden(), cpu.hidden()), tolerance(t)) << when << ": hidden";
  EXPECT_LT(relative_error(gpu.logits(), cpu.logits()), tolerance(t)) << when << ": logits";
}

class CudaDecode : public ::testing::TestWithParam<decode_param> {};

TEST_P(CudaDecode, CommittedStepsMatchTheCpuStep) {
  MODSIM_REQUIRE_GPU();
  const decode_case& c = GetParam().c;
  const dtype t = GetParam().type;
  const decode_weights w = make_decode_weights(c.shape, 7);
  auto cpu = make_cpu_decode(c.shape, w, 2);
  auto gpu = make_cuda_decode(c.shape, w, {t, c.graph, 0});
  cpu->fill_cache(contexts(c.shape), routed_contexts(c.shape), 11);
  gpu->fill_cache(contexts(c.shape), routed_contexts(c.shape), 11);
  expect_same_lengths(*gpu, *cpu, "after fill_cache");
  for (int step = 0; step < 4; ++step) {
    const std::string when = "step " + std::to_string(step);
    const auto x = step_input(c.shape, step);
    const auto d = step_decisions(c, step);
    cpu->set_input(x);
    gpu->set_input(x);
    cpu->step(d, true);
    gpu->step(d, true);
    expect_same_step(*gpu, *cpu, t, when);
    expect_same_lengths(*gpu, *cpu, when);
  }
}

TEST_P(CudaDecode, UncommittedStepsRepeatOnTheSameCache) {
  MODSIM_REQUIRE_GPU();
  const decode_case& c = GetParam().c;
  const dtype t = GetParam().type;
  const decode_weights w = make_decode_weights(c.shape, 8);
  auto cpu = make_cpu_decode(c.shape, w, 2);
  auto gpu = make_cuda_decode(c.shape, w, {t, c.graph, 0});
  cpu->fill_cache(contexts(c.shape), routed_contexts(c.shape), 12);
  gpu->fill_cache(contexts(c.shape), routed_contexts(c.shape), 12);
  const auto x = step_input(c.shape, 9);
  const auto d = step_decisions(c, 1);
  cpu->set_input(x);
  gpu->set_input(x);
  cpu->step(d, false);
  gpu->step(d, false);
  expect_same_step(*gpu, *cpu, t, "first uncommitted step");
  const auto first_hidden = gpu->hidden();
  const auto first_logits = gpu->logits();
  // The same step again on the same cache: the same kernels on the same data.
  gpu->set_input(x);
  gpu->step(d, false);
  gpu->synchronize();
  EXPECT_EQ(gpu->hidden(), first_hidden);
  EXPECT_EQ(gpu->logits(), first_logits);
  expect_same_lengths(*gpu, *cpu, "after uncommitted steps");
  // Then a committed step still matches.
  cpu->set_input(x);
  gpu->set_input(x);
  cpu->step(d, true);
  gpu->step(d, true);
  expect_same_step(*gpu, *cpu, t, "committed step after uncommitted ones");
  expect_same_lengths(*gpu, *cpu, "after the committed step");
}

// The bytes a step reads: the CPU's count (fp32) in the step's element size.
TEST_P(CudaDecode, StepBytesAreTheCpuCountInTheElementSize) {
  MODSIM_REQUIRE_GPU();
  const decode_case& c = GetParam().c;
  const dtype t = GetParam().type;
  const decode_weights w = make_decode_weights(c.shape, 5);
  auto cpu = make_cpu_decode(c.shape, w, 2);
  auto gpu = make_cuda_decode(c.shape, w, {t, c.graph, 0});
  EXPECT_EQ(gpu->step_bytes() * 4, cpu->step_bytes() * dtype_bytes(t)) << "before any step";
  cpu->fill_cache(contexts(c.shape), routed_contexts(c.shape), 3);
  gpu->fill_cache(contexts(c.shape), routed_contexts(c.shape), 3);
  for (int step = 0; step < 2; ++step) {
    const auto x = step_input(c.shape, step);
    cpu->set_input(x);
    gpu->set_input(x);
    cpu->step(step_decisions(c, step), step == 0);
    gpu->step(step_decisions(c, step), step == 0);
    gpu->synchronize();
    EXPECT_EQ(gpu->step_bytes() * 4, cpu->step_bytes() * dtype_bytes(t)) << "step " << step;
  }
}

// A prefill's keys and values handed over token by token, then a step over them.
TEST_P(CudaDecode, WrittenCacheEntriesAreAttendedOver) {
  MODSIM_REQUIRE_GPU();
  const decode_case& c = GetParam().c;
  const dtype t = GetParam().type;
  const decode_weights w = make_decode_weights(c.shape, 6);
  auto cpu = make_cpu_decode(c.shape, w, 2);
  auto gpu = make_cuda_decode(c.shape, w, {t, c.graph, 0});
  cpu->fill_cache(contexts(c.shape), routed_contexts(c.shape), 4);
  gpu->fill_cache(contexts(c.shape), routed_contexts(c.shape), 4);
  const std::int64_t d_kv = c.shape.d_kv();
  std::vector<float> k(static_cast<std::size_t>(d_kv)), v(static_cast<std::size_t>(d_kv));
  for (int l = 0; l < static_cast<int>(c.shape.layers.size()); ++l)
    for (std::int64_t b = 0; b < c.shape.batch; b += 2)
      for (int token = 0; token < 3; ++token) {
        const auto stream = static_cast<std::uint64_t>((l * c.shape.batch + b) * 3 + token);
        fill_normal(k, 77, 2 * stream, 0.0, 1.0, 0, d_kv);
        fill_normal(v, 77, 2 * stream + 1, 0.0, 1.0, 0, d_kv);
        cpu->write_cache(l, b, k, v);
        gpu->write_cache(l, b, k, v);
      }
  expect_same_lengths(*gpu, *cpu, "after write_cache");
  const auto x = step_input(c.shape, 3);
  cpu->set_input(x);
  gpu->set_input(x);
  cpu->step(step_decisions(c, 2), true);
  gpu->step(step_decisions(c, 2), true);
  expect_same_step(*gpu, *cpu, t, "step after write_cache");
  expect_same_lengths(*gpu, *cpu, "after the step");
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaDecode, ::testing::ValuesIn(decode_params()),
                         [](const ::testing::TestParamInfo<decode_param>& p) {
                           return p.param.c.name + "_" + to_string(p.param.type);
                         });

TEST(CudaDecode, ClearEmptiesEveryCache) {
  MODSIM_REQUIRE_GPU();
  const decode_shape s = make_shape(3, 4, 2, mlp_kind::gelu, {false, true}, decode_routing::sync, 1.0);
  auto gpu = make_cuda_decode(s, make_decode_weights(s, 3), {dtype::fp32, false, 0});
  gpu->fill_cache(std::vector<std::int64_t>{5, 6, 7}, std::vector<std::int64_t>{1, 2, 3}, 1);
  EXPECT_EQ(gpu->length(0, 2), 7);
  EXPECT_EQ(gpu->length(1, 2), 3);
  gpu->clear();
  for (int l = 0; l < 2; ++l)
    for (std::int64_t b = 0; b < 3; ++b) EXPECT_EQ(gpu->length(l, b), 0);
}

TEST(CudaDecode, RefusesAStepIntoAFullCache) {
  MODSIM_REQUIRE_GPU();
  const decode_shape s = make_shape(2, 4, 4, mlp_kind::gelu, {false}, decode_routing::sync, 1.0);
  auto gpu = make_cuda_decode(s, make_decode_weights(s, 3), {dtype::fp32, false, 0});
  gpu->fill_cache(std::vector<std::int64_t>{s.max_context - 1, 3}, std::vector<std::int64_t>{0, 0}, 1);
  gpu->set_input(step_input(s, 0));
  gpu->step({}, true);  // the last free slot
  EXPECT_EQ(gpu->length(0, 0), s.max_context);
  try {
    gpu->step({}, true);
    FAIL() << "a step into a full cache ran";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
  }
}

TEST(CudaDecode, RefusesForcedDecisionsThatDoNotFitTheShape) {
  MODSIM_REQUIRE_GPU();
  const decode_shape s = make_shape(3, 4, 2, mlp_kind::gelu, {false, true}, decode_routing::sync, 1.0);
  auto gpu = make_cuda_decode(s, make_decode_weights(s, 3), {dtype::fp32, false, 0});
  gpu->set_input(step_input(s, 0));
  decode_decisions too_many;
  too_many.from = source::forced_count;
  too_many.count = 4;
  decode_decisions short_mask;
  short_mask.from = source::forced_mask;
  short_mask.mask = {{1, 0}};
  for (const auto& d : {too_many, short_mask}) {
    try {
      gpu->step(d, true);
      FAIL() << "forced decisions that do not fit ran";
    } catch (const error& e) {
      EXPECT_EQ(e.kind(), error_kind::bad_input);
    }
  }
}

// Checked before any device is touched: runs without a GPU.
TEST(CudaDecode, RefusesAGraphWithSyncRouting) {
  const decode_shape s = make_shape(2, 4, 4, mlp_kind::gelu, {false, true}, decode_routing::sync, 1.0);
  try {
    make_cuda_decode(s, make_decode_weights(s, 1), {dtype::bf16, true, 0});
    FAIL() << "graph + sync was accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_NE(std::string(e.what()).find("graph"), std::string::npos) << e.what();
  }
}

TEST(CudaDecode, RefusesFp16) {
  const decode_shape s = make_shape(2, 4, 4, mlp_kind::gelu, {false}, decode_routing::sync, 1.0);
  try {
    make_cuda_decode(s, make_decode_weights(s, 1), {dtype::fp16, false, 0});
    FAIL() << "fp16 was accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
  }
}

TEST(CudaDecode, RefusesWeightsOfAnotherShape) {
  const decode_shape s = make_shape(2, 4, 4, mlp_kind::gelu, {false}, decode_routing::sync, 1.0);
  decode_weights w = make_decode_weights(s, 1);
  w.layers[0].w_o.pop_back();
  try {
    make_cuda_decode(s, w, {dtype::fp32, false, 0});
    FAIL() << "a short w_o was accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_NE(std::string(e.what()).find("w_o"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace modsim::kernels
