#pragma once
// The one op table of modsim: every operation of a (MoD / MoDE) transformer layer that the
// kernels run, the profiler times, the FLOP/byte model counts, the cost model predicts and the
// simulator schedules. Kernels, sim, the profiler and the simulator read their op lists, names,
// classes and launch counts from here; the FLOP/byte formula of each op is the `flops` column,
// defined with the formulas in sim/flops.cpp (a switch over `op` that the compiler checks
// covers every row).
//
// Adding an op: a row here (and an enumerator), its formula and GEMM output tiles in
// sim/flops.cpp and its GPU kernel list in sim/kernel_model.cpp (switches the compiler checks),
// its kernels in kernels/cpu and kernels/cuda. Where it runs inside a layer is sim/flops.cpp's
// layer_costs.
#include <optional>
#include <span>
#include <string_view>

namespace modsim {

// In the order of the kernels' original interface (kernel ops, then whole blocks, then the
// MoE ops), followed by the ops that exist only in the model. The names are a contract shared
// with the profiler's CSV, the grid files and the calibration files (DESIGN.md).
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
};

enum class op_role {
  kernel,  // one op the backends run and the profiler times
  block,   // a whole block of kernel ops, run and timed as one
  model,   // counted by the FLOP/cost model only; no kernel runs it
  decode,  // a decode step (kernels/decode.hpp), run and timed whole; no block backend runs it
};

struct op_info {
  op id;
  std::string_view name;
  std::string_view op_class;  // "routing", "norm", "attn_proj", "attn_core", "mlp", "moe", "lm_head", "block"
  op_role role;
  int layer_order;  // position among a layer's ops (the FLOP model's order); -1 for blocks
  int cpu_kernels;  // launches of the op in the roofline cost model on a CPU
  int gpu_kernels;  // ... and on a GPU
  // The op whose calibration stands in for this one when it was never measured.
  std::optional<op> stand_in;
};

// Every row, indexed by the enum.
std::span<const op_info> op_table();
const op_info& info(op o);
std::string_view to_string(op o);
std::optional<op> find_op(std::string_view name);
// Throws modsim::error (bad_input) "op: unknown op 'x'".
op parse_op(std::string_view name);
bool is_block(op o);
bool is_decode(op o);

// The kernel and block ops in enum order: what backends run and the profiler times.
std::span<const op> kernel_ops();
// The ops of the FLOP model (kernel and model ops) in layer order, lm_head last.
std::span<const op> model_ops();
// The op classes in display order (without "block").
std::span<const std::string_view> op_classes();

}  // namespace modsim
