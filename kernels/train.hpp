#pragma once
// Training kernels of one transformer layer on the CPU (fp32, the reference): the forward
// pass that keeps what its backward reads, the backward pass, and an AdamW step.
//
// The layer is the block of kernels/backend.hpp (same semantics, same layout: activations
// row-major [tokens, features] batch-major, weights row-major [in, out]):
//  - dense: y = block(x), with block(x) = h + MLP(RMSNorm(h)·g_mlp), h = x + Attn(RMSNorm(x)·g_attn)·W_o;
//  - routed (MoD): r = x·w per token, the k = routed_tokens() largest per sequence (ties: lower
//    position) gathered in position order into x̃, y = block(x̃) on them, and
//    out_i = x_i + r_i·(y_j − x̃_j) for routed tokens, out_i = x_i for the others (Equation 1).
// The backward gives every weight's gradient, the router vector's (dL/dr_i = ⟨dL/dout_i, Δ_i⟩
// for routed tokens, dL/dw = Σ_i dL/dr_i·x_i; top-k itself has no gradient: the routing is held
// fixed) and the input's (skipped tokens pass dL/dout straight through).
//
// MoDE (paper §5): the block's MLP is an MoE of shape.experts real experts, token-choice top-1
// as the backend's expert_router/experts ops run it (largest logit, ties to the lower expert;
// gate = softmax(logits)[chosen]; a real expert keeps at most expert_capacity(m) tokens in
// token order, later ones are dropped; a no-op expert skips the MLP): y = h + gate·expert(u)
// for kept tokens, y = h otherwise. `staged` is a routed layer with that MLP, `integrated` an
// unrouted one whose router has noop_experts no-op experts. The backward gives the experts'
// GEMM gradients over the tokens each took (an expert that took none gets zeros, no-op experts
// run nothing) and the expert router's (through the gate; the choice itself has no gradient).
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "kernels/backend.hpp"

namespace modsim::kernels::train {

// What the forward keeps for the backward (activation recomputation; core/types.hpp):
//  none:      every activation the backward reads;
//  selective: the same without the attention probabilities [B, H, n, n], recomputed per
//             (sequence, head) from q and k in the backward;
//  full:      only the layer's input x; the backward runs the layer's forward again first.
// parse_recompute throws modsim::error (bad_input, key "recompute") for another name.
using modsim::parse_recompute;
using modsim::recompute;
using modsim::to_string;

// The parameters of one layer; gradients have the same form. Sizes (d = d_model, f = d_ff,
// E = experts, E' = router_experts()): router_w [d] (routed layers only, else empty),
// attn_norm_g [d], w_q [d, d_q], w_k and w_v [d, d_kv], w_o [d_q, d], mlp_norm_g [d]; a dense
// MLP (variant none): w_up [d, f], w_gate [d, f] (swiglu only), w_down [f, d]; an MoE MLP
// (staged, integrated): expert_router_w [d, E'], expert_w_up [E, d, f], expert_w_gate
// [E, d, f] (swiglu only), expert_w_down [E, f, d]. Tensors a layer has not are empty.
// routed must be true for staged and false for integrated.
struct layer_params {
  block_shape shape;
  bool routed = false;
  std::vector<float> router_w, attn_norm_g, w_q, w_k, w_v, w_o, mlp_norm_g, w_up, w_gate, w_down;
  std::vector<float> expert_router_w, expert_w_up, expert_w_gate, expert_w_down;

  // Every tensor in one fixed order (the order above), for loops over all parameters.
  std::vector<std::vector<float>*> tensors();
  std::vector<const std::vector<float>*> tensors() const;
  // Σ of the tensors' elements.
  std::int64_t parameter_count() const;
};
using layer_grads = layer_params;

// Tensors of `shape` sized and zero-filled (throws bad_input for an invalid shape, or routed
// not matching the variant).
layer_params zero_params(const block_shape& shape, bool routed);
// Drawn as a workspace's weights are (kernels/init.hpp: std 1/sqrt(fan_in), gains
// 1 + 0.1·N(0, 1)), from `seed`.
layer_params random_params(const block_shape& shape, bool routed, std::uint64_t seed);

// What a forward kept for its backward. m = batch·n rows go through the block, n = S for a
// dense layer and k for a routed one; T = batch·S. Vectors not kept under `mode` are empty.
struct saved_activations {
  recompute mode = recompute::none;
  std::vector<float> x;                    // [T, d]   the layer's input (kept in every mode)
  std::vector<std::int32_t> routed_index;  // [B, k]   routed positions, ascending (routed)
  std::vector<float> routed_r;             // [B·k]    r of the routed tokens (routed)
  std::vector<float> attn_in;              // [m, d]   RMSNorm(x̃)·g_attn
  std::vector<float> q, k, v;              // [m, d_q], [m, d_kv], [m, d_kv]
  std::vector<float> probs;                // [B, H, n, n] causal softmax (none only)
  std::vector<float> attn_out;             // [m, d_q]
  std::vector<float> h;                    // [m, d]   x̃ + attention output
  std::vector<float> mlp_in;               // [m, d]   RMSNorm(h)·g_mlp
  std::vector<float> up, gate;             // [m, f]   pre-activations (gate: swiglu only)
  std::vector<float> act;                  // [m, f]   gelu(up) or silu(gate)·up
  std::vector<float> y;                    // [m, d]   block output (routed only: Δ = y − x̃)
  // MoE MLP only; then up, gate and act hold the `kept` rows that real experts took, grouped
  // by expert, in token order within one ([kept, f]).
  std::vector<float> expert_probs;         // [m, E']  softmax of the expert logits
  std::vector<std::int32_t> expert_index;  // [m]      chosen expert, -1 dropped, >= E no-op
  std::vector<float> expert_out;           // [kept, d] each kept token's expert output

  // Bytes of the kept activations (4 per float or int32 element).
  std::int64_t bytes() const;
};

// AdamW (decoupled weight decay), fp32 moments. For each parameter p with gradient g, at step
// t = state.step after the increment:
//   m ← β1·m + (1 − β1)·g;  v ← β2·v + (1 − β2)·g²;
//   p ← p − lr·( (m / (1 − β1^t)) / (sqrt(v / (1 − β2^t)) + eps) + weight_decay·p ).
struct adamw_options {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // applied to every tensor, norm gains included
};
struct adamw_state {
  std::int64_t step = 0;
  layer_params m, v;  // first and second moments; sized on the first step
  // Bytes of the two moments.
  std::int64_t bytes() const;
};

// The causal predictor of a routed layer (as kernels/decode.hpp runs it): p_i = relu(x_i·W_1)·w_2 + b,
// d → hidden → 1, trained to tell whether token i is in its sequence's top-k (the paper's
// §3.5) with binary cross-entropy on stop-gradient inputs: no gradient reaches x or the router.
struct predictor_params {
  std::int64_t d_model = 0;
  std::int64_t hidden = 0;
  std::vector<float> w1;  // [d, hidden]
  std::vector<float> w2;  // [hidden]
  float bias = 0.0f;
};
using predictor_grads = predictor_params;

// A buffer of `size` elements where the layer needs `expected`: throws modsim::error (bad_input)
// naming it. What both trainers check their spans with.
void check_span(std::size_t size, std::int64_t expected, const char* name);
// The predictor's weights, x [T, d] and routed_index [B, k] (positions inside a sequence) checked
// against the layer's shape: throws modsim::error (bad_input) on a mismatch. Both trainers'
// predictor_backward start here.
void check_predictor_inputs(const predictor_params& params, const block_shape& shape, std::span<const float> x,
                            std::span<const std::int32_t> routed_index);

// Runs the layer on the CPU: the projections' and the MLP's GEMMs through OpenBLAS (its own
// threads), every other loop through a thread pool, never both at once; attention runs one
// (sequence, head) per pool task with single-threaded OpenBLAS, in causal blocks of rows that
// skip the masked half of the scores. Holds its scratch buffers (grown on first use); calls on
// one trainer must not overlap.
class cpu_trainer {
 public:
  // threads = 0: one per hardware thread. Sets OpenBLAS's (process-wide) thread count.
  explicit cpu_trainer(int threads = 0);
  ~cpu_trainer();
  cpu_trainer(const cpu_trainer&) = delete;
  cpu_trainer& operator=(const cpu_trainer&) = delete;

  // out [T, d] = the layer on x [T, d]; `saved` receives what backward reads under `mode`.
  // Throws modsim::error (bad_input) on a size mismatch or an unsupported shape.
  void forward(const layer_params& params, std::span<const float> x, std::span<float> out, saved_activations& saved,
               recompute mode = recompute::none);
  // Given dL/dout [T, d], writes dL/dx [T, d] into dx and overwrites every tensor of `grads`
  // (sized like params; resized when not). `saved` comes from forward with the same params;
  // dx must not overlap dout (under `full` it is scratch for the recomputed output first).
  void backward(const layer_params& params, const saved_activations& saved, std::span<const float> dout,
                std::span<float> dx, layer_grads& grads);
  // The predictor's loss L = mean over the T = batch·S tokens of BCE(sigmoid(p_i), t_i) with
  // t_i = 1 for the tokens in routed_index ([B, k] positions per sequence, as
  // saved_activations keeps them under recompute none or selective) and 0 otherwise; returns L and overwrites grads
  // with dL/dW_1, dL/dw_2, dL/db. x is [T, d] (its values only: no gradient flows into it). Throws modsim::error
  // (bad_input) on a size mismatch.
  double predictor_backward(const predictor_params& params, const block_shape& shape, std::span<const float> x,
                            std::span<const std::int32_t> routed_index, predictor_grads& grads);
  // One AdamW step over every tensor of params (the loops through the pool).
  void adamw_step(layer_params& params, const layer_grads& grads, adamw_state& state, const adamw_options& options);

 private:
  struct impl;
  std::unique_ptr<impl> m_impl;
};

}  // namespace modsim::kernels::train
