#pragma once
// The one op table of modsim: every operation of a (MoD / MoDE) transformer layer that the
// kernels run, the profiler times, the FLOP/byte model counts, the cost model predicts and the
// simulator schedules. Kernels, sim, the profiler and the simulator read their op lists, names,
// classes and launch counts from here.
//
// Adding an op: docs/architecture.md's recipe "Adding an op" lists the files (an enumerator and a row
// here; each other file holds a switch over `op` with no default, which the compiler checks;
// tests/sim/test_recipes.cpp checks that the list names every such switch).
#include <array>
#include <optional>
#include <span>
#include <string_view>

namespace modsim {

// In the order of the kernels' original interface (kernel ops, then whole blocks, then the
// MoE ops), followed by the ops that exist only in the model. The names are a contract shared
// with the profiler's CSV, the grid files and the calibration files (docs/contracts.md).
enum class op {
  router,         // r = x·w over all B·S tokens
  topk,           // per sequence: k positions with the largest r, sorted by position
  gather,         // x̃ = x[idx], r̃ = r[idx]
  attn_norm,      // RMSNorm(block input)·g_attn
  qkv_proj,       // Q, K, V projections (GQA: K, V have n_kv_heads heads)
  attn_scores,    // S = Q·Kᵀ/sqrt(d_head) per (sequence, head)
  attn_softmax,   // causal softmax of S
  attn_values,    // O = P·V per (sequence, head)
  out_proj,       // h = block input + O·W_o
  mlp_norm,       // RMSNorm(h)·g_mlp
  mlp_up,         // u·W_up
  mlp_gate,       // u·W_gate (swiglu only)
  mlp_act,        // gelu(up) or silu(gate)·up
  mlp_down,       // y = h + hidden·W_down
  scatter,        // out_i = x_i + r_i·(y_j − x̃_j) for routed i (Equation 1)
  block_dense,    // the whole block over all S tokens
  block_mod,      // router → topk → gather → block on x̃ → scatter
  layer_mode,     // a MoDE layer (staged or integrated)
  expert_router,  // MoE: logits, top-1 choice, gate, per-expert capacity
  experts,        // MoE: y = h + gate·expert(u) for tokens an expert kept
  predictor,      // model only: the causal predictor MLP d → h → 1 of MoD decoding
  lm_head,        // model only: final norm and the vocabulary projection, once per model
  // Decode steps (kernels/decode.hpp), run and timed whole by the profiler; the cost model
  // prices them as the simulator's decode step (sim/des/step.hpp).
  decode_dense,  // one dense layer's decode step for B sequences
  decode_mod,    // one routed layer's decode step: predictor, routing, the block on the routed rows, scatter
  decode_step,   // a whole model's decode step (its layers, the final norm and the LM head)
  // Training (kernels/train.hpp), run and timed whole: one layer's forward and backward for
  // the shape (router, top-k, gather, scatter and their backward included), no optimizer step.
  block_dense_train,  // block_dense's forward + backward
  block_mod_train,    // block_mod's forward + backward (the routing held fixed)
  // One AdamW step over one dense layer's parameters of the shape (kernels/train.hpp; fp32
  // moments, on CUDA an fp32 master copy refreshing the dtype's weights), run and timed whole;
  // it does not depend on the batch, the sequence or the capacity.
  adamw,
};

enum class op_role {
  kernel,     // one op the backends run and the profiler times
  block,      // a whole block of kernel ops, run and timed as one
  model,      // counted by the FLOP/cost model only; no kernel runs it
  decode,     // a decode step (kernels/decode.hpp), run and timed whole; no block backend runs it
  train,      // one layer's forward + backward (kernels/train.hpp), run and timed whole
  optimizer,  // one optimizer step over one layer's parameters (kernels/train.hpp), run and timed whole
};

struct op_info {
  op id;
  std::string_view name;
  std::string_view
      op_class;  // "routing", "norm", "attn_proj", "attn_core", "mlp", "moe", "lm_head", "block", "decode", "train"
  op_role role;
  int layer_order;  // position among a layer's ops (the FLOP model's order); -1 for blocks
  int cpu_kernels;  // launches of the op in the roofline cost model on a CPU
  int gpu_kernels;  // ... and on a GPU
  // The op whose calibration stands in for this one when it was never measured.
  std::optional<op> stand_in;
};

// The table itself, in enum order. Adding an op: its enumerator above and its row here; the
// static_asserts below stop the build when a row is missing or out of order.
namespace op_rows_detail {
using enum op;
inline constexpr op_role K = op_role::kernel, BLK = op_role::block, M = op_role::model, DEC = op_role::decode,
                         TRN = op_role::train, OPT = op_role::optimizer;
inline constexpr std::optional<op> none = std::nullopt;

// id, name, class, role, layer order, CPU launches, GPU launches, stand-in
inline constexpr std::array op_rows = {
    op_info{router, "router", "routing", K, 0, 1, 1, none},
    op_info{topk, "topk", "routing", K, 1, 1, 2, none},
    op_info{gather, "gather", "routing", K, 2, 1, 1, none},
    op_info{attn_norm, "attn_norm", "norm", K, 4, 1, 1, mlp_norm},
    op_info{qkv_proj, "qkv_proj", "attn_proj", K, 5, 1, 1, none},
    op_info{attn_scores, "attn_scores", "attn_core", K, 6, 1, 1, none},
    op_info{attn_softmax, "attn_softmax", "attn_core", K, 7, 1, 1, none},
    op_info{attn_values, "attn_values", "attn_core", K, 8, 1, 1, none},
    op_info{out_proj, "out_proj", "attn_proj", K, 9, 1, 1, none},
    op_info{mlp_norm, "mlp_norm", "norm", K, 10, 1, 1, attn_norm},
    op_info{mlp_up, "mlp_up", "mlp", K, 11, 1, 1, none},
    op_info{mlp_gate, "mlp_gate", "mlp", K, 12, 1, 1, mlp_up},
    op_info{mlp_act, "mlp_act", "mlp", K, 13, 1, 1, none},
    op_info{mlp_down, "mlp_down", "mlp", K, 14, 1, 1, none},
    op_info{scatter, "scatter", "routing", K, 17, 1, 1, none},
    op_info{block_dense, "block_dense", "block", BLK, -1, 1, 1, none},
    op_info{block_mod, "block_mod", "block", BLK, -1, 1, 1, none},
    op_info{layer_mode, "layer_mode", "block", BLK, -1, 1, 1, none},
    op_info{expert_router, "expert_router", "moe", K, 15, 2, 2, router},
    op_info{experts, "experts", "moe", K, 16, 1, 1, mlp_up},
    op_info{predictor, "predictor", "routing", M, 3, 2, 2, router},
    op_info{lm_head, "lm_head", "lm_head", M, 18, 2, 2, mlp_up},
    op_info{decode_dense, "decode_dense", "decode", DEC, -1, 1, 1, none},
    op_info{decode_mod, "decode_mod", "decode", DEC, -1, 1, 1, none},
    op_info{decode_step, "decode_step", "decode", DEC, -1, 1, 1, none},
    op_info{block_dense_train, "block_dense_train", "train", TRN, -1, 1, 1, none},
    op_info{block_mod_train, "block_mod_train", "train", TRN, -1, 1, 1, none},
    op_info{adamw, "adamw", "train", OPT, -1, 1, 1, none},
};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < op_rows.size(); ++i)
    if (static_cast<std::size_t>(op_rows[i].id) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "op_table: one row per op, in enum order");
static_assert(op_rows.back().id == adamw, "op_table: every op has a row");
}  // namespace op_rows_detail
using op_rows_detail::op_rows;

// Every row, indexed by the enum.
std::span<const op_info> op_table();
const op_info& info(op o);
std::string_view to_string(op o);
std::optional<op> find_op(std::string_view name);
// Throws modsim::error (bad_input) "op: unknown op 'x'".
op parse_op(std::string_view name);
bool is_block(op o);
bool is_decode(op o);
// block_dense_train, block_mod_train: one layer's forward + backward, timed whole.
bool is_train(op o);
// adamw: one optimizer step over one layer's parameters, timed whole.
bool is_optimizer(op o);
// The ops whose workspace holds a layer's training state (weights, gradients, moments): the
// training blocks and the optimizer step.
bool needs_training_state(op o);

// The kernel and block ops in enum order: what backends run and the profiler times.
std::span<const op> kernel_ops();
// The ops of the FLOP model (kernel and model ops) in layer order, lm_head last.
std::span<const op> model_ops();
// The op classes in display order (without "block").
std::span<const std::string_view> op_classes();

}  // namespace modsim
