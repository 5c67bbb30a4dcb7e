// The CUDA backend against the CPU reference (kernels/cpu/): same seed → same weights and
// inputs; each op, run on the same inputs (copied from the CPU workspace into the CUDA one),
// gives the CPU's outputs within a norm-wise relative error of 1e-4 (fp32) or 2e-2 (bf16,
// compared with the CPU's fp32 result); top-k and expert choices are identical. Every test
// that needs a GPU skips with "no CUDA device" where there is none.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "cuda_test.hpp"
#include "kernels/cuda/attention_cudnn.hpp"
#include "kernels/cuda_backend.hpp"
#include "core/error.hpp"

namespace modsim::kernels {
namespace {

struct parity_case {
  std::string name;
  block_shape shape;
};

using test::layer_shape;

block_shape with_moe(block_shape s, moe_variant v, int experts, int noop, double capacity_factor) {
  s.variant = v;
  s.experts = experts;
  s.noop_experts = noop;
  s.capacity_factor = capacity_factor;
  return s;
}

std::vector<parity_case> parity_cases() {
  const block_shape mha_gelu = layer_shape(2, 64, 128, 4, 4, 256, mlp_kind::gelu, 0.5);
  const block_shape gqa_swiglu = layer_shape(2, 128, 256, 8, 2, 512, mlp_kind::swiglu, 0.25);
  // d_head 25, k 29, d 100: rows and heads not 16-byte aligned (scalar kernels, per-head GEMMs).
  const block_shape odd_gelu = layer_shape(3, 96, 100, 4, 2, 200, mlp_kind::gelu, 0.3);
  // k 27 and 21 (not 16-byte aligned) with fewer sequences than heads: the unaligned
  // attention loops over (sequence, query head of a KV group), GQA and MHA.
  const block_shape few_gqa = layer_shape(1, 90, 256, 8, 2, 512, mlp_kind::gelu, 0.3);
  const block_shape few_mha = layer_shape(2, 70, 256, 8, 8, 512, mlp_kind::swiglu, 0.3);
  return {
      {"mha_gelu", mha_gelu},
      {"gqa_swiglu", gqa_swiglu},
      {"odd_gqa_gelu", odd_gelu},
      {"few_sequences_gqa_gelu", few_gqa},
      {"few_sequences_mha_swiglu", few_mha},
      {"staged_mha_gelu", with_moe(mha_gelu, moe_variant::staged, 4, 0, 1.25)},
      {"staged_gqa_swiglu", with_moe(gqa_swiglu, moe_variant::staged, 3, 0, 1.0)},
      {"integrated_gqa_swiglu", with_moe(gqa_swiglu, moe_variant::integrated, 4, 1, 1.0)},
      {"integrated_odd_gelu", with_moe(odd_gelu, moe_variant::integrated, 3, 2, 0.8)},
  };
}

struct parity_param {
  parity_case c;
  dtype type;
};

std::vector<parity_param> parity_params() {
  std::vector<parity_param> out;
  for (const auto& c : parity_cases())
    for (const dtype t : {dtype::fp32, dtype::bf16}) out.push_back({c, t});
  return out;
}

// gtest prints parameters in failure messages and ctest names.
[[maybe_unused]] void PrintTo(const parity_param& p, std::ostream* os) { *os << p.c.name << " " << to_string(p.type); }

std::string param_name(const testing::TestParamInfo<parity_param>& info) {
  return info.param.c.name + "_" + std::string(to_string(info.param.type));
}

using test::relative_error;
using test::tolerance;

bool all_finite(const std::vector<float>& v, std::size_t count) {
  return std::all_of(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(count),
                     [](float x) { return std::isfinite(x); });
}

std::vector<float> minus(const std::vector<float>& a, const std::vector<float>& b, std::size_t count) {
  std::vector<float> r(count);
  for (std::size_t i = 0; i < count; ++i) r[i] = a[i] - b[i];
  return r;
}

// Elements of `t` that an op over m rows (n per sequence) writes.
std::size_t live_count(tensor t, const block_shape& s, std::int64_t n) {
  const std::int64_t m = s.batch * n, T = s.tokens(), k = s.routed_tokens();
  switch (t) {
    case tensor::x:
    case tensor::out:
      return static_cast<std::size_t>(T * s.d_model);
    case tensor::router_logits:
      return static_cast<std::size_t>(T);
    case tensor::routed_index:
    case tensor::routed_r:
      return static_cast<std::size_t>(s.batch * k);
    case tensor::routed_x:
      return static_cast<std::size_t>(s.batch * k * s.d_model);
    case tensor::q:
    case tensor::attn_out:
      return static_cast<std::size_t>(m * s.d_q());
    case tensor::k:
    case tensor::v:
      return static_cast<std::size_t>(m * s.d_kv());
    case tensor::scores:
      return static_cast<std::size_t>(s.batch * s.n_heads * n * n);
    case tensor::mlp_hidden:
    case tensor::mlp_gate_hidden:
      return static_cast<std::size_t>(m * s.d_ff);
    case tensor::expert_logits:
      return static_cast<std::size_t>(m * s.router_experts());
    case tensor::expert_index:
    case tensor::expert_gate:
      return static_cast<std::size_t>(m);
    default:
      return static_cast<std::size_t>(m * s.d_model);  // attn_in, h, mlp_in, y
  }
}

// What an op reads (besides weights, which both workspaces draw from the same seed) and
// writes. `residual`: the output is input + something, so its delta is compared as well.
struct op_io {
  std::vector<tensor> inputs;
  std::vector<tensor> outputs;
  tensor residual_of = tensor::x;
  bool has_residual = false;
};

op_io io_of(op o, const block_shape& s) {
  const tensor in = s.variant == moe_variant::integrated ? tensor::x : tensor::routed_x;
  const bool swiglu = s.mlp == mlp_kind::swiglu;
  switch (o) {
    case op::router:
      return {{tensor::x}, {tensor::router_logits}};
    case op::topk:
      return {{tensor::router_logits}, {tensor::routed_index}};
    case op::gather:
      return {{tensor::x, tensor::router_logits, tensor::routed_index}, {tensor::routed_x, tensor::routed_r}};
    case op::attn_norm:
      return {{in}, {tensor::attn_in}};
    case op::qkv_proj:
      return {{tensor::attn_in}, {tensor::q, tensor::k, tensor::v}};
    case op::attn_scores:
      return {{tensor::q, tensor::k}, {tensor::scores}};
    case op::attn_softmax:
      return {{tensor::scores}, {tensor::scores}};
    case op::attn_values:
      return {{tensor::scores, tensor::v}, {tensor::attn_out}};
    case op::out_proj:
      return {{in, tensor::attn_out}, {tensor::h}, in, true};
    case op::mlp_norm:
      return {{tensor::h}, {tensor::mlp_in}};
    case op::mlp_up:
      return {{tensor::mlp_in}, {tensor::mlp_hidden}};
    case op::mlp_gate:
      return {{tensor::mlp_in}, {tensor::mlp_gate_hidden}};
    case op::mlp_act:
      if (swiglu) return {{tensor::mlp_hidden, tensor::mlp_gate_hidden}, {tensor::mlp_hidden}};
      return {{tensor::mlp_hidden}, {tensor::mlp_hidden}};
    case op::mlp_down:
      return {{tensor::h, tensor::mlp_hidden}, {tensor::y}, tensor::h, true};
    case op::scatter:
      return {{tensor::x, tensor::y, tensor::routed_x, tensor::routed_r, tensor::routed_index},
              {tensor::out},
              tensor::x,
              true};
    case op::expert_router:
      return {{tensor::mlp_in}, {tensor::expert_logits, tensor::expert_index, tensor::expert_gate}};
    case op::experts:
      return {{tensor::mlp_in, tensor::h, tensor::expert_index, tensor::expert_gate}, {tensor::y}, tensor::h, true};
    default:  // blocks (and the cost model's own ops, which no backend runs)
      break;
  }
  return {};
}

bool op_applies(op o, const block_shape& s) {
  if (o == op::mlp_gate) return s.mlp == mlp_kind::swiglu;
  if (o == op::expert_router || o == op::experts || o == op::layer_mode) return s.variant != moe_variant::none;
  return true;
}

void copy_tensor(const workspace& from, workspace& to, tensor t) {
  if (is_index(t))
    to.upload_indices(t, from.download_indices(t));
  else
    to.upload(t, from.download(t));
}

// Compares one float output (and, for residual ops, output − input) within the tolerance.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, std::size_t count, double tol,
                  const std::string& what) {
  ASSERT_GE(got.size(), count) << what;
  ASSERT_GE(want.size(), count) << what;
  EXPECT_TRUE(all_finite(got, count)) << what << ": non-finite values";
  const double err = relative_error(got, want, count);
  EXPECT_LE(err, tol) << what << ": relative error " << err << " over " << count << " values";
}

std::size_t mismatches(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b, std::size_t count) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < count; ++i) n += a[i] != b[i] ? 1 : 0;
  return n;
}

class CudaParity : public testing::TestWithParam<parity_param> {};

// ---------------------------------------------------------------------------------------

TEST(CudaBackend, DeviceCountNeverThrows) {
  int count = -1;
  EXPECT_NO_THROW(count = cuda_device_count());
  EXPECT_GE(count, 0);
}

TEST(CudaBackend, MakingABackendWithoutAGpuIsARuntimeError) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  try {
    (void)make_cuda_backend();
    FAIL() << "make_cuda_backend succeeded without a GPU";
  } catch (const modsim::error& e) {
    EXPECT_EQ(e.kind(), error_kind::runtime) << e.what();
  }
}

TEST(CudaBackend, ADeviceIndexOutOfRangeIsBadInput) {
  MODSIM_REQUIRE_GPU();
  try {
    (void)make_cuda_backend(cuda_device_count());
    FAIL() << "no error for a device that does not exist";
  } catch (const modsim::error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input) << e.what();
  }
}

TEST(CudaBackend, DescribesTheGpuAndTheLibraries) {
  MODSIM_REQUIRE_GPU();
  auto gpu = make_cuda_backend();
  EXPECT_EQ(gpu->kind(), backend_kind::cuda);
  const std::string d = gpu->device();
  EXPECT_NE(d.find("SMs"), std::string::npos) << d;
  EXPECT_NE(d.find("MHz"), std::string::npos) << d;
  EXPECT_NE(d.find("driver"), std::string::npos) << d;
  EXPECT_NE(d.find("cuBLAS"), std::string::npos) << d;
}

TEST(CudaBackend, AnInvalidShapeOrDtypeIsBadInput) {
  MODSIM_REQUIRE_GPU();
  auto gpu = make_cuda_backend();
  block_shape s = layer_shape(1, 16, 64, 4, 4, 128, mlp_kind::gelu, 0.5);
  s.n_kv_heads = 3;  // does not divide n_heads
  try {
    (void)gpu->make_workspace(s, dtype::fp32);
    FAIL() << "no error for n_kv_heads = 3";
  } catch (const modsim::error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_NE(std::string(e.what()).find("n_kv_heads"), std::string::npos) << e.what();
  }
  s.n_kv_heads = 4;
  try {
    (void)gpu->make_workspace(s, dtype::fp16);
    FAIL() << "no error for fp16";
  } catch (const modsim::error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input) << e.what();
  }
}

TEST(CudaBackend, RefusesAWorkspaceOfAnotherBackend) {
  MODSIM_REQUIRE_GPU();
  auto gpu = make_cuda_backend();
  auto cpu = make_cpu_backend(1);
  auto ws = cpu->make_workspace(layer_shape(1, 16, 64, 4, 4, 128, mlp_kind::gelu, 0.5), dtype::fp32);
  EXPECT_THROW(gpu->run(op::router, *ws), modsim::error);
}

TEST(CudaBackend, WorkspaceHoldsTheCpuWeightsAndInputsAndRotatesItsInputs) {
  MODSIM_REQUIRE_GPU();
  auto gpu = make_cuda_backend();
  auto cpu = make_cpu_backend(2);
  const block_shape s =
      with_moe(layer_shape(2, 32, 64, 4, 2, 128, mlp_kind::swiglu, 0.5), moe_variant::staged, 2, 0, 1.0);
  workspace_options options;
  options.seed = 7;
  options.input_copies = 2;
  auto c = cpu->make_workspace(s, dtype::fp32, options);
  auto g = gpu->make_workspace(s, dtype::fp32, options);
  for (const tensor t : {tensor::router_w, tensor::w_q, tensor::w_k, tensor::w_v, tensor::w_o, tensor::w_up,
                         tensor::w_gate, tensor::w_down, tensor::attn_norm_g, tensor::mlp_norm_g,
                         tensor::expert_router_w, tensor::expert_w_up, tensor::expert_w_gate, tensor::expert_w_down}) {
    SCOPED_TRACE(std::string(to_string(t)));
    EXPECT_EQ(g->size(t), c->size(t));
    EXPECT_EQ(g->download(t), c->download(t));
  }
  const auto x0 = g->download(tensor::x);
  EXPECT_EQ(x0, c->download(tensor::x));
  g->rotate();
  c->rotate();
  const auto x1 = g->download(tensor::x);
  EXPECT_NE(x1, x0);
  EXPECT_EQ(x1, c->download(tensor::x));
  g->rotate();
  EXPECT_EQ(g->download(tensor::x), x0);
  EXPECT_GT(g->bytes(), 0);

  // bf16 holds the same values rounded to 8 significant bits.
  auto gb = gpu->make_workspace(s, dtype::bf16, options);
  const auto w = c->download(tensor::w_q), wb = gb->download(tensor::w_q);
  ASSERT_EQ(w.size(), wb.size());
  for (std::size_t i = 0; i < w.size(); ++i) ASSERT_LE(std::abs(wb[i] - w[i]), std::abs(w[i]) * (1.0f / 256.0f)) << i;
}

// Every single op, on inputs copied from the CPU workspace, against the CPU's outputs.
TEST_P(CudaParity, SingleOpsMatchTheCpu) {
  MODSIM_REQUIRE_GPU();
  const parity_param& p = GetParam();
  const block_shape& s = p.c.shape;
  auto gpu = make_cuda_backend();
  auto cpu = make_cpu_backend(2);
  workspace_options options;
  options.seed = 11;
  auto c = cpu->make_workspace(s, dtype::fp32, options);
  auto g = gpu->make_workspace(s, p.type, options);
  const double tol = tolerance(p.type);
  const std::int64_t n = s.block_tokens();

  for (const op o : kernel_ops()) {
    if (o == op::block_dense || o == op::block_mod || o == op::layer_mode) continue;
    SCOPED_TRACE("op " + std::string(to_string(o)));
    if (!op_applies(o, s)) {
      for (backend* b : {cpu.get(), gpu.get()}) {
        workspace& ws = b == cpu.get() ? *c : *g;
        try {
          b->run(o, ws);
          ADD_FAILURE() << to_string(b->kind()) << " ran an op this shape does not have";
        } catch (const modsim::error& e) {
          EXPECT_EQ(e.kind(), error_kind::bad_input) << to_string(b->kind()) << ": " << e.what();
        }
      }
      continue;
    }
    const op_io io = io_of(o, s);
    for (const tensor t : io.inputs) copy_tensor(*c, *g, t);
    gpu->run(o, *g);
    gpu->synchronize();
    cpu->run(o, *c);
    for (const tensor t : io.outputs) {
      const std::string what = std::string(to_string(o)) + " → " + std::string(to_string(t));
      const std::size_t count = live_count(t, s, n);
      if (is_index(t)) {
        const auto want = c->download_indices(t), got = g->download_indices(t);
        // bf16 expert logits differ by rounding, so near-tied choices may differ there.
        if (p.type == dtype::fp32 || t == tensor::routed_index) {
          EXPECT_EQ(mismatches(got, want, count), 0U) << what;
        }
        continue;
      }
      const auto want = c->download(t), got = g->download(t);
      expect_close(got, want, count, tol, what);
      if (io.has_residual) {
        const auto base_want = c->download(io.residual_of), base_got = g->download(io.residual_of);
        const std::size_t rows_count = std::min(count, base_want.size());
        expect_close(minus(got, base_got, rows_count), minus(want, base_want, rows_count), rows_count, tol,
                     what + " − " + std::string(to_string(io.residual_of)));
      }
    }
  }
}

// The CPU layer with the GPU's routing (and expert) decisions imposed, op by op: a routed
// block (block_mod, staged layer_mode; not on integrated shapes, whose single ops run on all
// tokens) or the integrated layer, with the dense MLP or the MoE.
void cpu_layer_with_decisions(backend& cpu, workspace& ws, bool routed_block, bool moe,
                              const std::vector<std::int32_t>& routed, const std::vector<std::int32_t>& expert) {
  const block_shape& s = ws.shape();
  if (routed_block) {
    cpu.run(op::router, ws);
    cpu.run(op::topk, ws);
    ws.upload_indices(tensor::routed_index, routed);
    cpu.run(op::gather, ws);
  }
  for (const op o :
       {op::attn_norm, op::qkv_proj, op::attn_scores, op::attn_softmax, op::attn_values, op::out_proj, op::mlp_norm})
    cpu.run(o, ws);
  if (moe) {
    cpu.run(op::expert_router, ws);
    ws.upload_indices(tensor::expert_index, expert);
    cpu.run(op::experts, ws);
  } else {
    cpu.run(op::mlp_up, ws);
    if (s.mlp == mlp_kind::swiglu) cpu.run(op::mlp_gate, ws);
    cpu.run(op::mlp_act, ws);
    cpu.run(op::mlp_down, ws);
  }
  if (routed_block) cpu.run(op::scatter, ws);
}

// Whole blocks and layers on fresh workspaces (same seed): identical routing decisions in
// fp32; in bf16 near-tied decisions may differ, and the CPU then reruns with the GPU's.
TEST_P(CudaParity, BlocksAndLayersMatchTheCpu) {
  MODSIM_REQUIRE_GPU();
  const parity_param& p = GetParam();
  const block_shape& s = p.c.shape;
  auto gpu = make_cuda_backend();
  auto cpu = make_cpu_backend(2);
  const double tol = tolerance(p.type);
  for (const op o : {op::block_dense, op::block_mod, op::layer_mode}) {
    if (!op_applies(o, s)) continue;
    // block_mod on an integrated shape runs, but the CPU cannot replay it op by op.
    if (o == op::block_mod && s.variant == moe_variant::integrated) continue;
    SCOPED_TRACE("op " + std::string(to_string(o)));
    workspace_options options;
    options.seed = 23;
    auto c = cpu->make_workspace(s, dtype::fp32, options);
    auto g = gpu->make_workspace(s, p.type, options);
    gpu->run(o, *g);
    gpu->synchronize();
    cpu->run(o, *c);

    const bool routed = o == op::block_mod || (o == op::layer_mode && s.variant == moe_variant::staged);
    const bool moe = o == op::layer_mode;
    std::size_t differing = 0;
    std::vector<std::int32_t> routed_index, expert_index;
    if (routed) {
      routed_index = g->download_indices(tensor::routed_index);
      differing += mismatches(routed_index, c->download_indices(tensor::routed_index), routed_index.size());
    }
    if (moe) {
      const std::size_t m = live_count(tensor::expert_index, s, s.block_tokens());
      expert_index = g->download_indices(tensor::expert_index);
      differing += mismatches(expert_index, c->download_indices(tensor::expert_index), m);
    }
    if (p.type == dtype::fp32) {
      EXPECT_EQ(differing, 0U) << "routing decisions differ from the CPU's";
    }
    if (differing > 0) cpu_layer_with_decisions(*cpu, *c, routed, moe, routed_index, expert_index);

    const tensor result = result_tensor(o, s);
    const std::size_t count = live_count(result, s, s.seq_len);
    const auto want = c->download(result), got = g->download(result);
    expect_close(got, want, count, tol, std::string(to_string(result)));
    const auto x_want = c->download(tensor::x), x_got = g->download(tensor::x);
    expect_close(minus(got, x_got, count), minus(want, x_want, count), count, tol,
                 std::string(to_string(result)) + " − x");
  }
}

// Running a routed layer twice leaves `out` equal to one run (the scatter restores the rows
// the previous run wrote), as on the CPU.
TEST_P(CudaParity, RepeatedRoutedLayersLeaveTheSameOutput) {
  MODSIM_REQUIRE_GPU();
  const parity_param& p = GetParam();
  const block_shape& s = p.c.shape;
  if (s.variant == moe_variant::integrated) GTEST_SKIP() << "integrated layers do not scatter";
  auto gpu = make_cuda_backend();
  auto g = gpu->make_workspace(s, p.type);
  const op o = s.variant == moe_variant::none ? op::block_mod : op::layer_mode;
  gpu->run(o, *g);
  gpu->synchronize();
  const auto once = g->download(tensor::out);
  gpu->run(o, *g);
  gpu->run(o, *g);
  gpu->synchronize();
  EXPECT_EQ(g->download(tensor::out), once);
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaParity, testing::ValuesIn(parity_params()), param_name);

// Top-k alone, on weights with many exact ties and NaN: exactly the CPU's indices.
TEST(CudaParityTopk, TiesGoToTheLowerPositionAsOnTheCpu) {
  MODSIM_REQUIRE_GPU();
  auto gpu = make_cuda_backend();
  auto cpu = make_cpu_backend(1);
  const block_shape s = layer_shape(3, 100, 64, 4, 4, 128, mlp_kind::gelu, 0.37);
  auto c = cpu->make_workspace(s, dtype::fp32);
  auto g = gpu->make_workspace(s, dtype::fp32);
  std::vector<float> r(static_cast<std::size_t>(s.tokens()));
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>((i * 7919) % 5) - 2.0f;  // 5 values, many ties
  r[3] = -0.0f;
  r[5] = std::nanf("");
  r[150] = 1e30f;
  for (workspace* ws : {c.get(), g.get()}) ws->upload(tensor::router_logits, r);
  cpu->run(op::topk, *c);
  gpu->run(op::topk, *g);
  gpu->synchronize();
  EXPECT_EQ(g->download_indices(tensor::routed_index), c->download_indices(tensor::routed_index));
}

// ---------------------------------------------------------------------------------------
// Fused attention (workspace_options::fused_attention: cuDNN's fused SDPA, bf16). cuDNN is
// loaded at run time; where it is missing these tests skip, unless MODSIM_REQUIRE_CUDNN=1
// (scripts/gpu-session.sh sets it) turns that into a failure.

#define MODSIM_REQUIRE_CUDNN()                                                  \
  if (const std::string why = cuda::cudnn_unavailable_reason(); !why.empty()) { \
    const char* required = std::getenv("MODSIM_REQUIRE_CUDNN");                 \
    if (required != nullptr && std::string(required) == "1") FAIL() << why;     \
    GTEST_SKIP() << why;                                                        \
  }

std::vector<parity_case> fused_cases() {
  // d_head 32 (MHA and GQA 8/2); a batch of 3 with S = 96, k = 29 (not a multiple of 16).
  return {
      {"mha_gelu", layer_shape(2, 64, 128, 4, 4, 256, mlp_kind::gelu, 0.5)},
      {"gqa_swiglu", layer_shape(2, 128, 256, 8, 2, 512, mlp_kind::swiglu, 0.25)},
      {"gqa_odd_k", layer_shape(3, 96, 128, 4, 2, 256, mlp_kind::gelu, 0.3)},
  };
}

std::string fused_name(const testing::TestParamInfo<parity_case>& info) { return info.param.name; }

class CudaFusedAttention : public testing::TestWithParam<parity_case> {};

// The fused block against the CPU's unfused block (fp32) and the GPU's unfused block (bf16,
// same q, k, v): attention output and block output within bf16 tolerance, every element of
// the attention output written (poisoned before the run).
TEST_P(CudaFusedAttention, BlocksMatchTheCpuAndTheUnfusedGpu) {
  MODSIM_REQUIRE_GPU();
  MODSIM_REQUIRE_CUDNN();
  const block_shape& s = GetParam().shape;
  auto gpu = make_cuda_backend();
  auto cpu = make_cpu_backend(2);
  workspace_options options;
  options.seed = 31;
  workspace_options fused_options = options;
  fused_options.fused_attention = true;
  const double tol = tolerance(dtype::bf16);
  for (const op o : {op::block_dense, op::block_mod}) {
    SCOPED_TRACE("op " + std::string(to_string(o)));
    auto c = cpu->make_workspace(s, dtype::fp32, options);
    auto u = gpu->make_workspace(s, dtype::bf16, options);
    auto f = gpu->make_workspace(s, dtype::bf16, fused_options);
    const std::int64_t n = o == op::block_dense ? s.seq_len : s.routed_tokens();
    const std::size_t attn_count = live_count(tensor::attn_out, s, n);
    f->upload(tensor::attn_out, std::vector<float>(attn_count, 1.0e4f));  // poison
    gpu->run(o, *f);
    gpu->run(o, *u);
    gpu->synchronize();
    cpu->run(o, *c);

    // Same bf16 q, k, v on both GPU workspaces (same kernels before attention).
    ASSERT_EQ(f->download(tensor::q), u->download(tensor::q));
    expect_close(f->download(tensor::attn_out), u->download(tensor::attn_out), attn_count, tol,
                 "attn_out fused vs unfused GPU");
    if (o == op::block_mod) {
      // bf16 routing may differ from the CPU's on near ties: replay the CPU with the GPU's.
      const auto routed = f->download_indices(tensor::routed_index);
      if (mismatches(routed, c->download_indices(tensor::routed_index), routed.size()) > 0)
        cpu_layer_with_decisions(*cpu, *c, true, false, routed, {});
    }
    expect_close(f->download(tensor::attn_out), c->download(tensor::attn_out), attn_count, tol, "attn_out vs CPU");
    const tensor result = result_tensor(o, s);
    const std::size_t count = live_count(result, s, s.seq_len);
    const auto want = c->download(result), got = f->download(result);
    expect_close(got, want, count, tol, std::string(to_string(result)) + " vs CPU");
    const auto x = c->download(tensor::x);
    expect_close(minus(got, f->download(tensor::x), count), minus(want, x, count), count, tol,
                 std::string(to_string(result)) + " − x vs CPU");
  }
}

// A routed layer run again and again on a fused workspace leaves the same output, as unfused.
TEST_P(CudaFusedAttention, RepeatedRoutedLayersLeaveTheSameOutput) {
  MODSIM_REQUIRE_GPU();
  MODSIM_REQUIRE_CUDNN();
  auto gpu = make_cuda_backend();
  workspace_options options;
  options.fused_attention = true;
  auto g = gpu->make_workspace(GetParam().shape, dtype::bf16, options);
  gpu->run(op::block_mod, *g);
  gpu->synchronize();
  const auto once = g->download(tensor::out);
  gpu->run(op::block_mod, *g);
  gpu->run(op::block_mod, *g);
  gpu->synchronize();
  EXPECT_EQ(g->download(tensor::out), once);
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaFusedAttention, testing::ValuesIn(fused_cases()), fused_name);

// Runs wherever cuDNN loads, GPU or not: every tensor and operation descriptor of the fused
// attention graph is accepted (finalized) by the cuDNN found, for MHA, GQA and odd lengths.
TEST(CudaFusedAttentionGraph, CudnnAcceptsEveryDescriptorOfTheGraph) {
  MODSIM_REQUIRE_CUDNN();
  for (const cuda::sdpa_layout l : {cuda::sdpa_layout{8, 2048, 16, 16, 128}, cuda::sdpa_layout{2, 128, 8, 2, 32},
                                    cuda::sdpa_layout{3, 29, 4, 2, 64}, cuda::sdpa_layout{1, 1, 32, 8, 128}}) {
    SCOPED_TRACE("B " + std::to_string(l.batch) + " n " + std::to_string(l.n) + " H " + std::to_string(l.heads) +
                 " kv " + std::to_string(l.kv_heads) + " d_head " + std::to_string(l.d_head));
    EXPECT_EQ(cuda::sdpa_shape_problem(l), "");
    EXPECT_NO_THROW(cuda::cudnn_sdpa_check_descriptors(l));
  }
  EXPECT_NE(cuda::sdpa_shape_problem({3, 96, 4, 2, 25}), "");
  EXPECT_THROW(cuda::cudnn_sdpa_check_descriptors({3, 96, 4, 2, 25}), modsim::error);
  EXPECT_GE(cuda::cudnn_version(), 90000u);
}

TEST(CudaFusedAttentionOptions, Fp32AnOddHeadSizeAndInBlockTimingAreRefused) {
  MODSIM_REQUIRE_GPU();
  MODSIM_REQUIRE_CUDNN();
  auto gpu = make_cuda_backend();
  workspace_options options;
  options.fused_attention = true;
  const block_shape mha = layer_shape(2, 64, 128, 4, 4, 256, mlp_kind::gelu, 0.5);
  const block_shape odd = layer_shape(3, 96, 100, 4, 2, 200, mlp_kind::gelu, 0.3);  // d_head 25
  auto kind_of = [&](const block_shape& s, dtype t) {
    try {
      gpu->make_workspace(s, t, options);
    } catch (const modsim::error& e) {
      return e.kind();
    }
    ADD_FAILURE() << "made a fused workspace it cannot run";
    return error_kind::runtime;
  };
  EXPECT_EQ(kind_of(mha, dtype::fp32), error_kind::bad_input);
  EXPECT_EQ(kind_of(odd, dtype::bf16), error_kind::bad_input);
  auto g = gpu->make_workspace(mha, dtype::bf16, options);
  std::vector<backend::op_time> times;
  try {
    gpu->timed_block_run(op::block_dense, *g, times);
    ADD_FAILURE() << "timed a fused block in_block";
  } catch (const modsim::error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input) << e.what();
  }
}

}  // namespace
}  // namespace modsim::kernels
