#pragma once
// The exact FLOP and byte model of modsim: one formula per operation, used alike by
// `modsim flops`, the profiler's achieved-throughput column and the cost model.
//
// ---------------------------------------------------------------------------------------
// FLOP convention (the reference; docs/contracts.md "FLOP convention" is the contract it follows)
// ---------------------------------------------------------------------------------------
// Notation: B batch (sequences), S seq_len, d d_model, H n_heads, dh d_head, dq = H·dh,
// dkv = n_kv_heads·dh, F d_ff, V vocab, e bytes per element of the dtype (fp32 4, bf16 and
// fp16 2); indices are 4 bytes. In a layer, n = tokens per sequence the block sees (S, or
// k = routed_tokens(capacity, S) at a routed layer), T = B·n, and L = keys each query
// attends to (n in forward/train). A matmul (m×k)(k×n) is 2·m·n·k FLOPs. `matmul_flops`
// counts matmuls only, `other_flops` elementwise work, `bytes` the minimum memory traffic
// of that op alone (inputs incl. weights read once, outputs written once) at e bytes.
//
// Forward ops of one layer, in this order (op: matmul | other | bytes):
//  routed layer (MoD; MoDE `staged`):
//   router       2·B·S·d                | 0                    | e(B·S·d + d + B·S)
//   topk         0                      | B·S                  | e·B·S + 4·B·k
//   gather       0                      | 0                    | 4·B·k + 2e·B·k·(d+1)
//  every layer:
//   attn_norm    0                      | 4·T·d                | e(2·T·d + d)
//   qkv_proj     2·T·d·(dq+2dkv)        | 0                    | e(T·d + d(dq+2dkv) + T(dq+2dkv))
//   attn_scores  2·B·n·L·dq             | 0                    | e(B·n·dq + B·L·dkv + B·H·n·L)
//   attn_softmax 0                      | 5·B·H·n·L            | 2e·B·H·n·L
//   attn_values  2·B·n·L·dq             | 0                    | e(B·H·n·L + B·L·dkv + B·n·dq)
//   out_proj     2·T·dq·d               | T·d (residual)       | e(T·dq + dq·d + 2·T·d)
//   mlp_norm     0                      | 4·T·d                | e(2·T·d + d)
//   mlp_up       2·T·d·F                | 0                    | e(T·d + d·F + T·F)
//   mlp_gate     (swiglu only) as mlp_up
//   mlp_act      0                      | gelu 8·T·F, swiglu 5·T·F | gelu 2e·T·F, swiglu 3e·T·F
//   mlp_down     2·T·F·d                | T·d (residual)       | e(T·F + F·d + 2·T·d)
//  routed layer:
//   scatter      0                      | 3·B·k·d              | 4·B·k + e(3·B·k·d + B·k)
//  (Attention is the full n×L square; the causal mask is not subtracted.)
//  Sliding window W (model_spec::sliding_window > 0): L → min(L, W) in the three attention
//  ops, forward, train and decode alike (each query attends to at most W keys; by the same
//  no-mask convention a query counts min(L, W) keys, so S = 8, W = 3 is 8·3 pairs). At a
//  routed layer L counts routed tokens, so min(L, W) is an upper bound there (the W positions
//  of a window hold at most W routed tokens).
//
// MoE MLP (model.moe present) replaces mlp_up/mlp_gate/mlp_act/mlp_down (mlp_norm stays):
//   expert_router 2·T·d·(E+N)           | 5·T·(E+N)            | e(T·d + d(E+N) + T(E+N))
//   experts      M·c·d·F (c = 4 gelu, 6 swiglu) | M·a + 2·M·d + T·d (a = 8F gelu, 5F swiglu)
//                                                              | e(E·w·d·F + 2·M·d + 2·T·d) (w = 2|3)
//   E experts, N no-op experts (mode.noop_experts at routed layers of `integrated`, else 0),
//   M token-slots: capacity factor cf > 0: E·ceil(cf·T·top_k/(E+N));
//   dropless (cf = 0): ceil(T·top_k·E/(E+N)) (= T·top_k when N = 0).
//   Variants: `moe` = MoE at every layer, no MoD (a routing spec is ignored);
//   `staged` = MoE at every layer + MoD routing (router/topk/gather/scatter, n = k) at routed
//   layers; `integrated` = MoE at every layer, no MoD router/topk, n = S, no-op experts at
//   routed layers.
//
// Once per model: lm_head 2·B·S·d·V | 4·B·S·d (final norm) | e(B·S·d + d·V + B·S·V).
// The embedding lookup costs 0 FLOPs.
//
// Train (run_mode::train): each op of a layer costs its forward, its backward and what
// recomputation runs again (layer_flops::forward/backward/recompute; layer_flops::ops holds
// their sums). Backward of each op (op: matmul | other | bytes; a GEMM's dgrad and wgrad each
// cost its forward's FLOPs, so the matmul column is exactly 2 × the forward's; elementwise
// backward other_flops are 2 × the forward's; bytes the minimum traffic as in forward):
//   router       4·B·S·d (dx += dr·wᵀ, dw = Xᵀ·dr over all S) | 0 | e(3·B·S·d + 2·B·S + 2·d)
//   topk         0 | 0 | 0 (no gradient through top-k)
//   gather       0 | B·k·d (dx[idx] += dx̃) | 4·B·k + e(3·B·k·d + B·k + B·S) (dr of the
//                S tokens written from the k routed ones)
//   attn_norm, mlp_norm (RMSNorm) 0 | 8·T·d | e(4·T·d + 2·d) (x, dy, the residual's gradient
//                read, dx written; g read, dg written)
//   qkv_proj     4·T·d·D (D = dq+2dkv)  | 0 | 2e(T·d + d·D + T·D)
//   attn_scores  4·B·n·L·dq (dQ = dS·K, dK = dSᵀ·Q) | 0 | e(2·B·H·n·L + 2·B·L·dkv + 2·B·n·dq)
//   attn_softmax 0 | 10·B·H·n·L | 3e·B·H·n·L (P, dP read, dS written)
//   attn_values  4·B·n·L·dq (dV = Pᵀ·dO, dP = dO·Vᵀ) | 0 | e(2·B·H·n·L + 2·B·L·dkv + 2·B·n·dq)
//   out_proj     4·T·dq·d | 0 (the residual's gradient passes through) | 2e(T·dq + dq·d + T·d)
//   mlp_up, mlp_gate 4·T·d·F | 0 | 2e(T·d + d·F + T·F)
//   mlp_act      0 | gelu 16·T·F, swiglu 10·T·F | gelu 3e·T·F, swiglu 5e·T·F
//   mlp_down     4·T·F·d | 0 | 2e(T·F + F·d + T·d)
//   scatter      0 | 3·B·k·d (dΔ = r·dy, dr = ⟨dy, Δ⟩) | 4·B·k + e(3·B·k·d + 2·B·k);
//                a skipped token's gradient passes straight through (in place: 0)
//   expert_router 4·T·d·(E+N) | 10·T·(E+N) | 2e(T·d + d(E+N) + T(E+N))
//   experts      2 × forward matmul and other | e(2·E·w·d·F + 3·M·d + 2·T·d)
//   lm_head      4·B·S·d·V | 8·B·S·d + 7·B·S·V + 2·B·S | e(2·B·S·d + 2·d·V + 2·B·S·V) + e(4·B·S·d + 2·d)
//                + 2e·B·S·V: first the cross-entropy loss and its gradient in one fused pass over
//                the B·S·V logits (read them, write dL/dlogits in their place): per logit 7
//                FLOPs (the row's max, subtract it, exp, sum; subtract the log-sum-exp, exp,
//                scale by 1/(B·S)), per row 2 (the log of the sum, the target's −1); then the
//                projection's dgrad and wgrad and the final norm's backward
// Recomputation (workload::recompute) adds, per layer op:
//   none       nothing, except with fused attention (attention_impl::fused, a FlashAttention-
//              style kernel that keeps no probabilities): attn_scores' matmul FLOPs once more
//              (the kernel recomputes the scores: its backward runs 5 matmuls of n·L work
//              where the forward ran 2, 2.5 × the forward's attention matmuls);
//   selective  unfused: attn_scores and attn_softmax run again (the probabilities are not
//              kept); fused: as none;
//   full       every forward op of the layer runs again (+ the fused kernel's scores).
// So with recompute none and unfused attention (what `modsim flops` counts unless told)
// matmul FLOPs are exactly 3 × the forward's; full adds exactly the layers' forward. The LM
// head is never recomputed.
// Optimizer step (AdamW, once per step over the P parameters; optimizer_cost): memory-bound,
//   other 16·P (the two moment updates, bias corrections, the update with weight decay),
//   bytes 28·P: fp32 weights read w, grad, m, v (16) and write w, m, v (12); bf16/fp16
//   weights keep an fp32 master copy: read master, m, v (12) and the e-byte gradient, write
//   master, m, v (12) and the e-byte weights: 24 + 2e = 28 as well.
// It is counted in flops_totals' other_flops and bytes (not in any layer). The profiler's op
// adamw is that step over one dense layer's P = d(dq+2dkv) + dq·d + 2·d + (2|3)·d·F parameters
// (ops::adamw; batch, tokens and capacity play no part).
//
// Decode (run_mode::decode): one step for B sequences whose context is S cached tokens; a
// layer processes B new tokens (n = 1, S → 1 for the lm_head).
//  - Non-routed layer: as forward with n = 1 and attention over L = S+1 cached entries
//    (scores 2·B·(S+1)·dq, softmax 5·B·H·(S+1), values 2·B·(S+1)·dq; the K (resp. V) cache
//    read is e·B·(S+1)·dkv).
//  - Routed layer: no top-k over the future. inference == predictor: a `predictor` op (MLP
//    d→h→1, h = predictor_hidden or d) on all B tokens:
//      predictor  2·B·(d·h + h) | B·(h + 2) | e(B·d + d·h + 2·h + B);
//    inference == router: the `router` op on the B tokens (2·B·d). The expected routed count
//    is m = capacity·B; gather, the block and scatter run at T = m (k → m, S → 1) and the
//    block attends to L = k_ctx + 1 entries, k_ctx = routed_tokens(capacity, S) (a routed
//    layer's KV cache holds only routed tokens). The weight bytes of the block's ops
//    (norms, projections, MLP, experts) are scaled by p = 1 − (1 − capacity)^B, the
//    probability that at least one of the B tokens routes; the router/predictor weights
//    are always read.
//  - Decode values are expectations: each op is computed in double and rounded once
//    (llround) per field. MoE token-slot counts are not rounded up in expectations
//    (M = cf·T·top_k·E/(E+N), resp. T·top_k·E/(E+N)).
// Forward and train values are exact int64 arithmetic (floating point only for k and for
// the capacity-factor slot count, both rounded up robustly); overflow throws.
//
// Parameters (flops_report::params): per layer d(dq+2dkv) + dq·d + 2·d (norms) + MLP
// ((2|3)·d·F, or MoE d(E+N) + E·(2|3)·d·F), + d (router) and + d·h + h (predictor, when
// inference == predictor) at MoD-routed layers; + V·d embedding + V·d lm head + d final norm.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/op_table.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim {

// The cost of one op. FLOPs and bytes; for decode the rounded expectation.
struct op_cost {
  // The op (a block or a decode step for a sum of ops: sum_costs, des::decode_kernels). A
  // name is read into it where a file or the command line gives one and printed at output.
  modsim::op op = modsim::op::router;
  std::int64_t matmul_flops = 0;
  std::int64_t other_flops = 0;
  std::int64_t bytes = 0;
};

// The shape one op runs at. N is std::int64_t for exact counts (forward, train, one real
// decode step) and double for expectations (the decode model). Dimensions are the model's.
template <class N>
struct basic_op_shape {
  N batch = 1;    // B: sequences (expectations: expected sequences that have a token here)
  N tokens = 1;   // n: tokens per sequence the block sees (k at a routed layer; 1 in decode)
  N seq_len = 1;  // S: tokens per sequence before routing (router, topk, predictor, lm_head)
  N context = 0;  // L: keys each query attends to; 0 = tokens (self-attention over the n)
  // The model's sliding window W (model_spec::sliding_window): the attention ops see
  // L = min(L, W); 0 = none.
  std::int64_t window = 0;
  N weight_reads = 1;  // times the op's weights are read (expectations: the probability)
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;  // 0 = n_heads
  int d_head = 0;      // 0 = d_model / n_heads
  int d_ff = 0;
  int vocab_size = 0;
  mlp_kind mlp = mlp_kind::gelu;
  int elem_bytes = 2;  // e: bytes per element (dtype_bytes)
  // MoE MLP (expert_router, experts only).
  int experts = 0;
  int top_k = 1;
  double capacity_factor = 0.0;  // 0 = dropless
  int noop_experts = 0;
  int predictor_hidden = 0;  // h of the causal predictor; 0 = d_model
};
using op_shape = basic_op_shape<std::int64_t>;
using expected_op_shape = basic_op_shape<double>;

// An op_shape with the model's dimensions, the workload's batch, seq_len (n = S) and
// dtype, and the model's MoE settings (noop_experts left 0). Throws modsim::error
// (bad_input) when the workload's batch or seq_len is < 1.
op_shape shape_of(const model_spec& model, const workload& w);

// One formula per op (see the table above). Each has an exact and an expectation overload;
// the expectation is rounded to the nearest integer once per field.
namespace ops {
#define MODSIM_FLOPS_DECLARE_OP(name) \
  op_cost name(const op_shape& s);    \
  op_cost name(const expected_op_shape& s);
MODSIM_FLOPS_DECLARE_OP(router)
MODSIM_FLOPS_DECLARE_OP(topk)
MODSIM_FLOPS_DECLARE_OP(gather)
MODSIM_FLOPS_DECLARE_OP(predictor)
MODSIM_FLOPS_DECLARE_OP(attn_norm)
MODSIM_FLOPS_DECLARE_OP(qkv_proj)
MODSIM_FLOPS_DECLARE_OP(attn_scores)
MODSIM_FLOPS_DECLARE_OP(attn_softmax)
MODSIM_FLOPS_DECLARE_OP(attn_values)
MODSIM_FLOPS_DECLARE_OP(out_proj)
MODSIM_FLOPS_DECLARE_OP(mlp_norm)
MODSIM_FLOPS_DECLARE_OP(mlp_up)
MODSIM_FLOPS_DECLARE_OP(mlp_gate)
MODSIM_FLOPS_DECLARE_OP(mlp_act)
MODSIM_FLOPS_DECLARE_OP(mlp_down)
MODSIM_FLOPS_DECLARE_OP(scatter)
MODSIM_FLOPS_DECLARE_OP(expert_router)
MODSIM_FLOPS_DECLARE_OP(experts)
MODSIM_FLOPS_DECLARE_OP(lm_head)
MODSIM_FLOPS_DECLARE_OP(adamw)
#undef MODSIM_FLOPS_DECLARE_OP

// M, the token-slots the experts compute for T = batch·tokens tokens (see above).
std::int64_t expert_slots(const op_shape& s);
double expert_slots(const expected_op_shape& s);
}  // namespace ops

// Every op name, in layer order, then lm_head.
const std::vector<std::string_view>& op_names();

// The op's class for summaries: "routing" (router, topk, gather, scatter, predictor),
// "norm", "attn_proj" (qkv_proj, out_proj), "attn_core" (scores, softmax, values), "mlp",
// "moe" (expert_router, experts), "lm_head"; "block" for block_dense, block_mod and
// layer_mode.
const char* op_class_of(modsim::op o);
// The classes in display order (the op table's).
using modsim::op_classes;

// Op `o` at shape `s` (the op table's `flops` column). Throws modsim::error (bad_input) for a
// whole block or a decode step.
op_cost cost_of(modsim::op o, const op_shape& s);
op_cost cost_of(modsim::op o, const expected_op_shape& s);

// The output tiles (tile × tile elements) of the GEMMs op `o` runs at shape `s`: what a GPU
// deals over its SMs (the cost model's wave quantisation, gemm_waves). 0 for an op that is not
// such a GEMM (bandwidth-bound ops; router, predictor and expert router, a few output columns;
// whole blocks). Expected shapes count whole sequences and tokens (rounded up).
double gemm_output_tiles(modsim::op o, const op_shape& s, double tile);
double gemm_output_tiles(modsim::op o, const expected_op_shape& s, double tile);

namespace ops {
// The backward of op `o` at shape `s` (the table above); 0 FLOPs and bytes for topk. Throws
// modsim::error (bad_input) for a whole block or a decode step.
op_cost backward_of(modsim::op o, const op_shape& s);
// The cross-entropy loss and its gradient that begin the LM head's backward at shape `s` (a
// part of backward_of(lm_head, s): 7·B·S·V + 2·B·S FLOPs, 2e·B·S·V bytes; op lm_head). The cost
// model prices it as a kernel of its own.
op_cost lm_head_loss(const op_shape& s);
// What recomputation `r` runs again for op `o` of a layer at shape `s`, with attention `a`
// (the table above).
op_cost recompute_of(modsim::op o, const op_shape& s, recompute_mode r, attention_impl a);
}  // namespace ops

// The cross-entropy loss and its gradient, at the head of the LM head's backward (see above):
// FLOPs per logit and per row (a token).
inline constexpr std::int64_t k_loss_flops_per_logit = 7;
inline constexpr std::int64_t k_loss_flops_per_row = 2;

// One AdamW step over `params` parameters whose weights are `elem_bytes` bytes (see above).
struct optimizer_cost {
  std::int64_t params = 0;
  std::int64_t other_flops = 0;
  std::int64_t bytes = 0;
};
inline constexpr std::int64_t k_adamw_flops_per_param = 16;
// 28 for fp32 weights, and for bf16/fp16 weights with their fp32 master copy (24 + 2e).
std::int64_t adamw_bytes_per_param(int elem_bytes);
optimizer_cost adamw_cost(std::int64_t params, int elem_bytes);

// What one layer runs around and inside its block.
struct layer_kind {
  bool mod_routing = false;  // router, topk, gather before and scatter after the block
  bool moe = false;          // expert_router + experts instead of the dense MLP
};

// The ops of one layer in the order they run: the one statement of it. The FLOP model (forward,
// training and decode), the cost model and the simulator's steps read it. Routed: router,
// topk, gather, the block, scatter; the block: attention norm, QKV, scores, softmax, values,
// output projection, MLP norm, then the MLP (up, gate with swiglu, activation, down) or the
// MoE (expert router, experts).
std::vector<modsim::op> layer_ops(layer_kind kind, mlp_kind mlp);

// The forward ops of one layer at shape `s`, in order: s.tokens is n (k when routed),
// s.seq_len is S; the MoE fields of `s` are used when kind.moe.
std::vector<op_cost> layer_costs(const op_shape& s, layer_kind kind);

// The shape every op of `block` runs at (tokens = k at a routed block, no-op experts only in
// an integrated layer): what block_costs evaluates its ops at.
op_shape block_op_shape(modsim::op block, const op_shape& s, double capacity = 1.0,
                        moe_variant variant = moe_variant::staged);
// The ops of a measured block (the profiler's `op` column) at shape `s` (s.tokens is
// ignored): block_dense = a dense layer over S tokens; block_mod = a routed layer at
// `capacity` (k = routed_tokens(capacity, S)); layer_mode = one MoE layer of `variant`
// (`moe`: no routing; `staged`: MoD routing at `capacity` + MoE; `integrated`: MoE with
// s.noop_experts no-op experts over all S tokens). Throws modsim::error (bad_input) for
// another op, or layer_mode without experts.
std::vector<op_cost> block_costs(modsim::op block, const op_shape& s, double capacity = 1.0,
                                 moe_variant variant = moe_variant::staged);

// Sum of a list of ops, as the cost of `as` (the block they make up).
op_cost sum_costs(const std::vector<op_cost>& ops, modsim::op as);

// The cost of a measured training op (block_dense_train, block_mod_train: one layer's forward
// + backward) at shape `s`: its forward block's (block_costs of block_dense, block_mod at
// `capacity`) matmul, other FLOPs and bytes × 3 (the FLOP convention: backward = 2 × forward),
// plus what recomputation runs again in the backward: `full` the forward block once more,
// `selective` its attention scores and softmax once more. Throws modsim::error (bad_input)
// for another op.
op_cost train_block_cost(modsim::op train, const op_shape& s, double capacity, modsim::recompute r);

struct layer_flops {
  int index = 0;
  bool routed = false;           // the schedule routes it (MoD, staged, or integrated no-op experts)
  double capacity = 1.0;         // the layer plan's capacity (1 when not routed)
  std::int64_t tokens = 0;       // tokens the block sees, whole batch (B·n; decode llround(m))
  double expected_tokens = 0.0;  // the same, unrounded (decode: m = capacity·B)
  std::vector<op_cost> ops;      // in execution order (train: forward + backward + recompute)
  // Train only (empty otherwise), in the order of `ops`: each op's forward, backward and
  // recomputation (see the table above).
  std::vector<op_cost> forward, backward, recompute;
  // The shapes the ops ran at, so the cost model times the same ops: `shape` for every op,
  // except in decode at a MoD-routed layer, where ops after the first (the router or
  // predictor, which sees all B tokens at `shape`) run at the expected shape `expected`.
  op_shape shape;
  expected_op_shape expected;
  bool has_expected = false;
  std::int64_t matmul_flops = 0;  // sums over ops
  std::int64_t other_flops = 0;
  std::int64_t bytes = 0;
};

struct flops_totals {
  std::int64_t matmul_flops = 0;  // layers + lm_head
  std::int64_t other_flops = 0;
  std::int64_t bytes = 0;
  // The same workload on dense_baseline(model).
  std::int64_t dense_matmul_flops = 0;
  std::int64_t dense_other_flops = 0;
  std::int64_t dense_bytes = 0;
};

// A training step's parts (run_mode::train), summed over the layers and the LM head; `op`
// is lm_head for want of a step op. matmul + other + bytes of forward + backward + recompute
// + the optimizer's are flops_totals'.
struct train_breakdown {
  recompute_mode recompute = recompute_mode::none;
  attention_impl attention = attention_impl::unfused;
  op_cost forward, backward, recompute_cost;
  optimizer_cost optimizer;
  std::int64_t optimizer_bytes_per_param = 0;
  // The model FLOPs of the step (MFU's numerator): 3 × the forward's matmul FLOPs, whatever
  // is recomputed.
  std::int64_t model_matmul_flops = 0;
};

struct flops_report {
  std::string model_name;
  workload load;
  std::vector<layer_flops> layers;
  op_cost lm_head;  // op "lm_head": the final norm + the vocabulary projection
  // Train only: the LM head's forward and backward (lm_head is their sum).
  op_cost lm_head_forward, lm_head_backward;
  flops_totals totals;
  std::int64_t params = 0;               // weights (see above)
  std::optional<train_breakdown> train;  // run_mode::train only
};

// FLOPs and bytes of `model` under workload `w` (forward, train or one decode step), attention
// run as `attention` (what a training step recomputes; forward and decode counts are the same
// either way). Throws modsim::error (bad_input) for a workload with batch or seq_len < 1, or a
// result that does not fit in int64.
flops_report evaluate_flops(const model_spec& model, const workload& w,
                            attention_impl attention = attention_impl::unfused);
// The same with the dense baseline's FLOPs already evaluated (`dense` = evaluate_flops(
// dense_baseline(model), w, attention)): its totals are totals.dense_*, and it is not evaluated
// again.
flops_report evaluate_flops(const model_spec& model, const workload& w, const flops_report& dense,
                            attention_impl attention = attention_impl::unfused);

// The weight count of `model` (see above): outside_layer_parameter_count (embedding, LM head,
// final norm) plus layer_parameter_counts (per layer, routers and predictors included).
std::int64_t parameter_count(const model_spec& model);
std::vector<std::int64_t> layer_parameter_counts(const model_spec& model);
std::int64_t outside_layer_parameter_count(const model_spec& model);

}  // namespace modsim::sim
