#pragma once
// The public interface of modsim's kernels: named operations of one (MoD) transformer block
// and the buffers they read and write. It names operations and buffers, never device types:
// a backend (CPU here, CUDA in kernels/cuda/) owns its workspaces, whose buffers are opaque;
// the host reaches them only through explicit copies (upload/download).
//
// Semantics follow docs/contracts.md "Semantics of a MoD layer" and the paper (Raposo et al.
// 2024, §3): per sequence r_i = w·x_i; k = clamp(ceil(capacity·S), 1, S) tokens with the
// largest r (ties: lower position wins), sorted by position; the block runs on the gathered
// tokens under the ordinary causal mask; out_i = x_i + r_i·Δ_i for routed tokens, with
// Δ = block(x̃) − x̃, and out_i = x_i otherwise (Equation 1).
//
// Layout: activations are row-major [tokens, features] with tokens batch-major
// (row = b·n + position). Weights are row-major [in, out] so a projection is act·W.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/op_table.hpp"
#include "core/types.hpp"

namespace modsim::kernels {

// The operations, their names and the shared enums come from the one op table
// (core/op_table.hpp) and core/types.hpp; a backend runs the ops of kernel_ops().
using modsim::dtype;
using modsim::info;
using modsim::is_block;
using modsim::is_decode;
using modsim::is_optimizer;
using modsim::is_train;
using modsim::kernel_ops;
using modsim::mlp_kind;
using modsim::moe_variant;
using modsim::needs_training_state;
using modsim::op;
using modsim::parse_dtype;
using modsim::parse_op;
using modsim::recompute;
using modsim::routed_tokens;
using modsim::to_string;

struct block_shape {
  std::int64_t batch = 1;
  std::int64_t seq_len = 0;  // S, tokens per sequence
  std::int64_t d_model = 0;
  std::int64_t n_heads = 0;
  std::int64_t n_kv_heads = 0;  // divides n_heads (GQA); equal to n_heads for MHA
  std::int64_t d_head = 0;
  std::int64_t d_ff = 0;
  mlp_kind mlp = mlp_kind::gelu;
  double capacity = 1.0;  // fraction of each sequence routed through the block, in (0, 1]
  // MoE / MoDE
  moe_variant variant = moe_variant::none;
  int experts = 0;               // real experts (> 0 when variant != none)
  int top_k = 1;                 // experts per token; only 1 is implemented
  int noop_experts = 0;          // integrated only
  double capacity_factor = 1.0;  // per-expert capacity factor; <= 0 means dropless

  std::int64_t tokens() const { return batch * seq_len; }
  std::int64_t d_q() const { return n_heads * d_head; }
  std::int64_t d_kv() const { return n_kv_heads * d_head; }
  // k = clamp(ceil(capacity·S), 1, S), robust to the rounding of capacity·S (0.1 of 30 is 3).
  std::int64_t routed_tokens() const;
  // Tokens per sequence that the single block ops (attn_norm ... mlp_down, expert_router,
  // experts) work on: S for `integrated`, else k (= S at capacity 1).
  std::int64_t block_tokens() const;
  // Experts the expert router chooses among: experts + noop_experts for integrated, else experts.
  int router_experts() const;
  // Tokens one real expert may take out of `moe_tokens` (all rows the MoE sees, the whole
  // batch): ceil(capacity_factor·moe_tokens/router_experts()), moe_tokens when dropless.
  std::int64_t expert_capacity(std::int64_t moe_tokens) const;
  // Throws modsim::error (bad_input) naming the field ("block_shape.capacity", ...).
  void validate() const;
};

// The buffers of a workspace. Row counts use T = batch·S, n = tokens per sequence of the
// last block that ran (S for block_dense / integrated, k for routed blocks; block_tokens()
// for single ops), m = batch·n. Buffers hold their maximal size (T rows); rows [0, m) are
// the live ones. Index buffers (is_index) hold int32.
enum class tensor {
  // inputs (x rotates, see workspace::rotate)
  x,    // [T, d]   residual stream entering the layer
  out,  // [T, d]   x^{l+1} after scatter (block_mod, staged layer_mode). Updated
        //          like an in-place residual stream: scatter writes only the rows
        //          routed now (and resets to x those the previous scatter wrote);
        //          the others already equal x. Uploading x resets out to x.
  // routing
  router_w,       // [d]
  router_logits,  // [T]      r
  routed_index,   // [B, k]   int32 positions in 0..S-1, ascending per sequence
  routed_x,       // [B·k, d] x̃
  routed_r,       // [B·k]    r̃
  // attention
  attn_norm_g,  // [d]
  attn_in,      // [T, d]   normed block input
  w_q,          // [d, d_q]
  w_k,          // [d, d_kv]
  w_v,          // [d, d_kv]
  q,            // [T, d_q]
  k,            // [T, d_kv]
  v,            // [T, d_kv]
  scores,       // [B, H, n, n] scores, then probabilities (softmax in place)
  attn_out,     // [T, d_q]
  w_o,          // [d_q, d]
  h,            // [T, d]   block input + attention output
  // MLP
  mlp_norm_g,       // [d]
  mlp_in,           // [T, d]   normed h (u)
  w_up,             // [d, d_ff]
  w_gate,           // [d, d_ff] swiglu only
  w_down,           // [d_ff, d]
  mlp_hidden,       // [T, d_ff] up projection, activated in place by mlp_act
  mlp_gate_hidden,  // [T, d_ff] gate projection (swiglu only)
  y,                // [T, d]   block output y = block input + Δ (block_dense's result)
  // MoE (variant != none)
  expert_router_w,  // [d, E+N]
  expert_logits,    // [T, E+N]
  expert_index,     // [T] int32 chosen expert (>= experts: a no-op expert), -1 = dropped
  expert_gate,      // [T]      softmax probability of the chosen expert
  expert_w_up,      // [E, d, d_ff]
  expert_w_gate,    // [E, d, d_ff] swiglu only
  expert_w_down,    // [E, d_ff, d]
};
inline constexpr int tensor_count = 34;

std::string_view to_string(tensor t);
bool is_index(tensor t);
// Elements of tensor `t` for `shape` (0 where the shape has no such buffer): the one place
// every backend sizes its workspaces from.
std::int64_t tensor_elements(tensor t, const block_shape& shape);
// Where an op leaves the layer's output x^{l+1}: `y` for block_dense and integrated
// layer_mode, `out` for block_mod and staged layer_mode.
tensor result_tensor(op o, const block_shape& shape);

struct workspace_options {
  std::uint64_t seed = 1;  // all weights and inputs are drawn from it
  int input_copies = 1;    // independent copies of x (and out) that rotate() cycles through
  // Blocks run attention as one fused kernel (scores, causal softmax and values; no n×n scores
  // in memory) instead of the attn_scores → attn_softmax → attn_values ops. Only the CUDA
  // backend has one (cuDNN, bf16; it refuses fp32 as bad_input and a missing cuDNN as a
  // runtime error); the CPU backend has none (callers must not ask it: the profiler refuses
  // --attention fused there). The single attention ops stay the unfused ones.
  bool fused_attention = false;
  // The workspace also holds one layer's training state (weights, their gradients, what the
  // forward keeps, dL/dout, dL/dx) so that block_dense_train and block_mod_train run on it;
  // `recompute` is what their forward keeps. Both backends train dense and MoD layers (a MoDE
  // variant is bad_input); the CUDA backend's training ops (kernels/cuda_train.hpp) run the
  // unfused attention whatever fused_attention says.
  bool training = false;
  modsim::recompute recompute = modsim::recompute::none;
};

// Everything one block needs, allocated once by a backend: weights, inputs, intermediates.
// Weights have std 1/sqrt(fan_in), norm gains are 1 + 0.1·N(0, 1), inputs N(0, 1) and the
// router vector has std 1/sqrt(d), so that r = w·x is O(1); nothing is zero. On creation the workspace
// runs the whole layer once, so every intermediate holds the data a single op would see in
// a real forward pass, and `backend::run(op, ws)` never allocates.
class workspace {
 public:
  virtual ~workspace() = default;
  workspace(const workspace&) = delete;
  workspace& operator=(const workspace&) = delete;

  const block_shape& shape() const { return m_shape; }
  dtype type() const { return m_type; }

  // Elements allocated for `t` (0 when this shape has no such buffer).
  virtual std::int64_t size(tensor t) const = 0;
  // Device memory held, in bytes.
  virtual std::int64_t bytes() const = 0;
  // Host copies; `values.size()` must not exceed size(t) (a prefix is written). Writing x
  // also resets out to x (for the current input copy). Throws modsim::error on a mismatch.
  virtual void upload(tensor t, std::span<const float> values) = 0;
  virtual std::vector<float> download(tensor t) const = 0;
  virtual void upload_indices(tensor t, std::span<const std::int32_t> values) = 0;
  virtual std::vector<std::int32_t> download_indices(tensor t) const = 0;
  // Switches x and out to the next input copy, so that repeats do not time a warm cache.
  virtual void rotate() = 0;

 protected:
  workspace(const block_shape& shape, dtype type) : m_shape(shape), m_type(type) {}

 private:
  block_shape m_shape;
  dtype m_type;
};

// A backend runs one op at a time: calls on one backend must not overlap.
class backend {
 public:
  virtual ~backend() = default;
  virtual backend_kind kind() const = 0;   // cpu or cuda (core/types.hpp)
  virtual std::string device() const = 0;  // e.g. CPU model and thread count
  // Throws modsim::error (bad_input) for an invalid shape or an unsupported dtype.
  virtual std::unique_ptr<workspace> make_workspace(const block_shape& shape, dtype type,
                                                    const workspace_options& options = {}) = 0;
  // Runs one op on `ws` (made by this backend). May return before the device finished;
  // synchronize() waits. Never allocates.
  virtual void run(op o, workspace& ws) = 0;
  virtual void synchronize() = 0;

  // Restores what an earlier run of `o` overwrote in place, so that repeating `o` measures
  // the same data each time: attn_softmax turns `scores` into probabilities and mlp_act
  // activates `mlp_hidden` in place, so their producers (attn_scores, mlp_up) run again. A
  // no-op for every other op. Not part of any timed region.
  void prepare(op o, workspace& ws);

  // Seconds one run of `o` takes, measured the backend's way, with the device idle before and
  // after: the default is a steady clock around run + synchronize; the CUDA backend records
  // events on its stream around the kernels, so host launch cost stays out of the number.
  virtual double timed_run(op o, workspace& ws);

  // One op's share of a timed block run (timed_block_run).
  struct op_time {
    op o = op::block_dense;
    double seconds = 0;
  };
  // Runs block op `o` (block_dense, block_mod or layer_mode) once on `ws`, the same way
  // run(o, ws) does, with the device idle before and after, and takes the time of every op of
  // the block from boundaries on one timeline: one before the block and one after each op
  // (CPU: a steady-clock reading once the op has finished; CUDA: an event recorded on the
  // stream after the op's kernels, all read after one synchronize at the end). An op's
  // seconds are the intervals that end at its boundaries. `ops` is cleared and filled with one
  // entry per op in the order the ops first ran (the CPU runs attention head by head, so each
  // attention op sums one interval per (sequence, head)). Returns the block's seconds, the sum
  // of the entries in that order: the time from the first boundary to the last. No cache
  // flush, no input rotation. Throws modsim::error (bad_input) for an op that is not a block;
  // the default throws (runtime) for a backend that cannot time inside a block.
  virtual double timed_block_run(op o, workspace& ws, std::vector<op_time>& ops);
  // Evicts device caches between timed repeats (the CUDA backend overwrites a scratch buffer
  // twice the L2 size); the default does nothing (the CPU relies on rotating inputs).
  virtual void flush_cache() {}

  // The device's clock state where readable (NVML on NVIDIA GPUs), so that a sample taken
  // while the device was throttled (power, thermal, hardware slowdown) can be dropped.
  struct clock_state {
    bool known = false;
    double sm_clock_mhz = 0;
    bool throttled = false;
  };
  virtual clock_state clocks() { return {}; }

  // The kernel a GEMM library would pick for a row-major C[m×n] = A[m×k]·op(B), `batch`
  // independent products, of dtype `type` (the way this backend calls it), where the backend
  // can ask its library (the CUDA backend: cuBLASLt's heuristic, which cuBLAS's own GEMMs
  // follow); the default knows none. Asking runs nothing on the device.
  struct gemm_query {
    std::int64_t m = 0, n = 0, k = 0, batch = 1;
    bool b_transposed = false;
    dtype type = dtype::fp32;
  };
  struct gemm_choice {
    bool known = false;          // the library answered
    int tile_m = 0, tile_n = 0;  // its output tile in the library's own (column-major) m×n: 0 unnamed
    int split_k = 1;             // split-K factor (1: none)
    int algo_id = 0, tile_id = 0, stages_id = 0, cluster_shape_id = 0;  // the library's raw ids
    std::string note;                                                   // why not known, or what the ids could not say
  };
  virtual std::vector<gemm_choice> library_gemm_choices(const std::vector<gemm_query>& queries) {
    return std::vector<gemm_choice>(queries.size());
  }
};

// The CPU backend (fp32; OpenBLAS for GEMMs, a thread pool for everything else).
// threads = 0: one per hardware thread.
std::unique_ptr<backend> make_cpu_backend(int threads = 0);

}  // namespace modsim::kernels
