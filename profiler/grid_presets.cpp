// Sweep grids (profiler/grid.hpp): the built-in grids (`--preset`).
#include "profiler/grid.hpp"

#include "core/error.hpp"

namespace modsim::profiler {

namespace {
// The axes every built-in grid shares (a preset's MoDE axes apply to layer_mode only).
grid preset_defaults() {
  grid g;
  g.mlp = {kernels::mlp_kind::gelu};
  g.variants = {kernels::moe_variant::staged, kernels::moe_variant::integrated};
  g.noop_experts = {1};
  g.capacity_factor = {1.25};
  return g;
}
}  // namespace

grid preset(std::string_view name, backend_kind backend) {
  using kernels::op;
  const bool gpu = backend == backend_kind::cuda;
  grid g = preset_defaults();
  if (name == "quick") {
    // Seconds per point on two CPU cores: enough shapes to calibrate and to validate.
    g.ops = {op::block_dense, op::block_mod, op::router,      op::topk,         op::gather,
             op::scatter,     op::qkv_proj,  op::attn_scores, op::attn_softmax, op::attn_values,
             op::out_proj,    op::mlp_up,    op::mlp_act,     op::mlp_down,     op::attn_norm};
    g.dtypes = {kernels::dtype::fp32};
    g.batch = {1};
    g.seq_len = gpu ? std::vector<std::int64_t>{1024, 2048} : std::vector<std::int64_t>{256, 512};
    g.d_model = gpu ? std::vector<std::int64_t>{1024, 2048} : std::vector<std::int64_t>{256, 512};
    g.n_heads = {gpu ? 16 : 8};
    g.d_ff = {};
    g.capacity = {0.125, 0.5, 1.0};
    g.experts = {0};
    // d_ff = 4·d_model is the norm; as an axis it would cross every d_model with every d_ff.
    g.d_ff = gpu ? std::vector<std::int64_t>{4096, 8192} : std::vector<std::int64_t>{1024, 2048};
    return g;
  }
  if (name == "full") {
    // Sized to finish in about five minutes on an H100/H200 (bf16; ~1,150 points) or about
    // half an hour on a 2-core CPU (fp32): every single op and both blocks at four capacities
    // over 16 shapes, plus MoDE layers. Includes the paper's point (S = 2048, capacity 1/8).
    g.ops = {op::block_dense, op::block_mod, op::layer_mode, op::router,      op::topk,         op::gather,
             op::scatter,     op::attn_norm, op::qkv_proj,   op::attn_scores, op::attn_softmax, op::attn_values,
             op::out_proj,    op::mlp_norm,  op::mlp_up,     op::mlp_act,     op::mlp_down};
    g.capacity = {0.125, 0.25, 0.5, 1.0};
    g.experts = {8};
    if (gpu) {
      g.dtypes = {kernels::dtype::bf16};
      g.batch = {1, 8};
      g.seq_len = {512, 2048};
      g.d_model = {1024, 2048};
      g.n_heads = {16};
      g.d_ff = {4096, 8192};
    } else {
      g.dtypes = {kernels::dtype::fp32};
      g.batch = {1, 2};
      g.seq_len = {256, 1024};
      g.d_model = {256, 768};
      g.n_heads = {8};
      g.d_ff = {1024, 3072};
    }
    return g;
  }
  if (name == "decode") {
    // KV-cached decode steps (docs/contracts.md "Decode measurements"): one dense and one routed
    // layer over batches, cached contexts and widths, both routing strategies (and CUDA
    // graphs on a GPU); decode_step of the models given with --model. About 7 minutes on a
    // 2-core CPU (fp32, with mod-60m and dense-60m); on a GPU (bf16) about 220 points with
    // caches of at most 256K tokens per layer, meant to take under 5 minutes on an H100 (not
    // yet run on one).
    g.ops = {op::decode_dense, op::decode_mod, op::decode_step};
    g.capacity = {0.125, 0.5};
    g.experts = {0};
    g.n_heads = {gpu ? 16 : 8};
    if (gpu) {
      g.dtypes = {kernels::dtype::bf16};
      g.batch = {1, 8, 64};
      g.seq_len = {512, 4096};
      g.d_model = {1024, 2048};
      g.d_ff = {4096, 8192};
      g.decode_routing = {decode_run::sync, decode_run::pad, decode_run::pad_graph};
      g.max_cached_tokens = 262144;
    } else {
      g.dtypes = {kernels::dtype::fp32};
      g.batch = {1, 2, 4, 8, 16};
      g.seq_len = {256, 2048};
      g.d_model = {512, 1024};
      g.d_ff = {2048, 4096};
      g.decode_routing = {decode_run::sync, decode_run::pad};
    }
    return g;
  }
  if (name == "train") {
    // One layer's forward + backward (docs/contracts.md "Training rows"): dense and MoD layers
    // of two widths with gelu and one swiglu GQA layer, capacities 1/8 and 1/2, recompute none
    // and full; 72 points either way. preset_parts adds the AdamW steps (optimizer_steps). CPU (fp32): batches 1 and 2,
    // sequences of 256 and 512 tokens, 45 s with one thread on the quiet 2-core EPYC VM. GPU (bf16): batches 1 and 4,
    // sequences of 1024 and 2048 tokens, widths 1024 and 2048 (16 heads), meant to take under 4 minutes on an H100/H200
    // (not yet run on one).
    g.ops = {op::block_dense_train, op::block_mod_train};
    g.capacity = {0.125, 0.5};
    g.experts = {0};
    g.recompute = {modsim::recompute::none, modsim::recompute::full};
    if (gpu) {
      g.dtypes = {kernels::dtype::bf16};
      g.batch = {1, 4};
      g.seq_len = {1024, 2048};
      g.shapes = {{1024, 16, 0, 4096, kernels::mlp_kind::gelu, "train preset"},
                  {2048, 16, 0, 8192, kernels::mlp_kind::gelu, "train preset"},
                  {2048, 16, 4, 5632, kernels::mlp_kind::swiglu, "train preset (GQA, 4 kv heads)"}};
      return g;
    }
    g.dtypes = {kernels::dtype::fp32};
    g.batch = {1, 2};
    g.seq_len = {256, 512};
    g.shapes = {{256, 8, 0, 1024, kernels::mlp_kind::gelu, "train preset"},
                {512, 8, 0, 2048, kernels::mlp_kind::gelu, "train preset"},
                {512, 8, 2, 1536, kernels::mlp_kind::swiglu, "train preset (GQA, 2 kv heads)"}};
    return g;
  }
  if (name == "calibration")
    throw input_error("", "--preset", "calibration is two grids with their own timing (profiler::preset_parts)");
  throw input_error("", "--preset",
                    "unknown preset '" + std::string(name) + "' (expected quick, full, decode, calibration or train)");
}

namespace {

// configs/grids/calibration-5-cpu.json: the in-family CPU calibration grid (see that file's
// notes and configs/grids/README.md), its blocks timed in_block.
grid calibration_blocks_cpu() {
  using kernels::mlp_kind;
  using kernels::op;
  grid g = preset_defaults();
  g.ops = {op::block_dense, op::block_mod};
  g.dtypes = {kernels::dtype::fp32};
  g.batch = {1, 4};
  g.seq_len = {256, 1024};
  g.capacity = {0.125, 0.25, 0.5};
  g.experts = {0};
  g.shapes = {{256, 8, 0, 1024, mlp_kind::gelu, ""},   {256, 8, 0, 3072, mlp_kind::gelu, ""},
              {768, 8, 0, 1024, mlp_kind::gelu, ""},   {768, 8, 0, 3072, mlp_kind::gelu, ""},
              {256, 8, 2, 1024, mlp_kind::swiglu, ""}, {768, 8, 2, 3072, mlp_kind::swiglu, ""}};
  return g;
}

// configs/grids/gemm-rows-cpu.json: the layer's four dense GEMMs alone at every row count from
// 256 to 284 and 504 to 524 (calibrate fits what the rows left over past a group of four cost).
grid gemm_rows_cpu() {
  using kernels::mlp_kind;
  using kernels::op;
  grid g = preset_defaults();
  g.ops = {op::qkv_proj, op::out_proj, op::mlp_up, op::mlp_down};
  g.dtypes = {kernels::dtype::fp32};
  g.batch = {1};
  g.seq_len.clear();
  for (std::int64_t s = 256; s <= 284; ++s) g.seq_len.push_back(s);
  for (std::int64_t s = 504; s <= 524; ++s) g.seq_len.push_back(s);
  g.capacity = {1.0};
  g.experts = {0};
  g.shapes = {{640, 8, 0, 2560, mlp_kind::gelu, ""}, {768, 8, 0, 3072, mlp_kind::gelu, ""}};
  return g;
}

// The train preset's second grid: the AdamW step (op adamw) over one layer's parameters of
// widths past what the CPU's layer grid runs, so that every row streams far more than any cache
// holds, as a model's optimizer step does (the layer grid's own widths, 22 to 88 MB of optimizer
// traffic, ran up to 2.8 times faster than 1.4 GB in a first pass on the EPYC, one thread: its
// 32 MB L3): 3 shapes of 0.35 to 1.4 GB, and on a GPU a fourth of 5.6 GB. The step does not
// depend on the batch or the sequence: one short sequence keeps the training workspace small.
grid optimizer_steps(bool gpu) {
  using kernels::mlp_kind;
  using kernels::op;
  grid g = preset_defaults();
  g.ops = {op::adamw};
  g.dtypes = {gpu ? kernels::dtype::bf16 : kernels::dtype::fp32};
  g.batch = {1};
  g.seq_len = {gpu ? 256 : 64};
  g.capacity = {1.0};
  g.experts = {0};
  g.shapes = {{1024, 16, 0, 4096, mlp_kind::gelu, "adamw"},
              {2048, 16, 0, 8192, mlp_kind::gelu, "adamw"},
              {2048, 16, 4, 5632, mlp_kind::swiglu, "adamw (GQA, 4 kv heads)"}};
  if (gpu) g.shapes.push_back({4096, 32, 0, 16384, mlp_kind::gelu, "adamw"});
  return g;
}

}  // namespace

bool preset_fixes_timing(std::string_view name) { return name == "calibration"; }

std::vector<preset_part> preset_parts(std::string_view name, backend_kind backend) {
  if (name == "train")
    return {{preset(name, backend), std::nullopt}, {optimizer_steps(backend == backend_kind::cuda), std::nullopt}};
  if (name != "calibration") return {{preset(name, backend), std::nullopt}};
  if (backend == backend_kind::cuda)
    throw input_error("", "--preset",
                      "calibration is the CPU's procedure; on a GPU calibrate on --preset full and --preset decode "
                      "(the grids h100-sxm-calibrated was fitted on)");
  return {{calibration_blocks_cpu(), timing_mode::in_block}, {gemm_rows_cpu(), timing_mode::isolated}};
}

expansion expand_parts(const std::vector<preset_part>& parts, timing_mode t) {
  expansion all;
  for (const preset_part& part : parts) {
    expansion e = with_timing(expand(part.g), part.timing.value_or(t));
    for (point& p : e.points) all.points.push_back(std::move(p));
    for (skipped_point& s : e.skipped) all.skipped.push_back(std::move(s));
  }
  return all;
}

}  // namespace modsim::profiler
