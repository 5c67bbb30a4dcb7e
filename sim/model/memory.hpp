#pragma once
// What one step keeps in device memory, and whether it fits the hardware's memory_bytes.
//
// The footprint is a lower bound of the step's resident bytes (e = dtype_bytes, P = parameter
// count, n_l = tokens per sequence at layer l: k at a routed layer, S otherwise):
//   weights        P·e
//   gradients      P·e (train only)
//   optimizer      2·P·4 (two fp32 Adam moments), + P·4 (an fp32 master copy) when e < 4
//   state          (train only)
//   KV cache       decode: B·(n_l+1)·2·d_kv·e summed over layers (a routed layer caches
//                  the k = routed_tokens(c, S) tokens its block saw, plus the new one)
//   activations    forward/decode: the largest one layer needs at once,
//                    max over l of B·n_l·(3·d + 2·d_kv + F)·e + attention buffers
//                  train: what every layer's forward keeps for its backward pass, exactly as
//                  the training kernels keep it (activations_kept, below; a routed layer keeps
//                  its k routed tokens' only), by workload::recompute:
//                    none:      the sum over layers;
//                    selective: the sum without the unfused scores, + the largest layer's
//                               scores (rebuilt one layer at a time); fused: as none;
//                    full:      each layer's input B·S·d·e (summed) + the largest layer's
//                               activations (rebuilt while its backward runs)
//   attention      what the attention implementation priced keeps (q_l = queries per sequence:
//   buffers        n_l in forward/train, 1 in decode; L_l = the keys each query reads: n_l in
//                  forward/train, the layer's cached entries in decode):
//                    unfused: the scores B·H·q_l·L_l·e, written and read back
//                    fused:   no scores; the kernel's per-row softmax statistics B·H·q_l·4
//                             (fp32) and its output B·q_l·H·d_head·e (H·d_head = d_q)
// With a sliding window W (model_spec::sliding_window) the KV cache holds min(n_l+1, W)
// entries per sequence and layer and L_l is at most W.
// F = d_ff (2·d_ff for swiglu); an MoE MLP counts top_k·F per token. The LM head's logits
// B·S·V·e (B·V·e in decode) join the activations of the last layer.
#include <cstdint>
#include <string>

#include "sim/model/spec.hpp"

namespace modsim::sim {

struct memory_footprint {
  double weights = 0;          // bytes
  double gradients = 0;        // train: one gradient per parameter, at the dtype
  double optimizer_state = 0;  // train: the fp32 Adam moments and, for e < 4, the fp32 master copy
  double kv_cache = 0;         // decode
  double activations = 0;      // incl. attention buffers and logits
  // The attention buffers of the largest layer (part of activations): the scores when unfused,
  // the row statistics and output when fused.
  double attention_buffers = 0;
  double logits = 0;                                   // the LM head's output (part of activations)
  attention_impl attention = attention_impl::unfused;  // the implementation the buffers are of
  double training_state() const { return gradients + optimizer_state; }
  double total() const { return weights + training_state() + kv_cache + activations; }
};

// What one layer's forward keeps for its backward pass (bytes; kernels/train.hpp's
// saved_activations, e = dtype_bytes, T = B·S, n = k at a MoD-routed layer else S, rows = B·n):
//   input    the layer's input, T·d·e (all that recompute full keeps)
//   routing  MoD: the routed positions B·k·4 (int32) and their router weights B·k·e
//   block    per row: the normed input, q, k, v, the attention output, the residual sum and the
//            normed MLP input (3·d + 2·d_q + 2·d_kv)·e; the MLP's pre-activations and activation
//            (d_ff·e each, and the gate's d_ff·e for swiglu); MoD: the block's output d·e (the
//            router's gradient reads Δ = y − x̃). MoE: the MLP's only for the rows a real expert
//            took (rows·top_k·E/(E + no-op experts)), with each row's expert probabilities
//            (E + no-op)·e, its expert (int32) and its expert's output d·e.
//   scores   unfused: the causal probabilities B·H·n·L·e (L = n, at most the window); fused:
//            the kernel's per-row statistics B·H·n·4. Recompute selective drops the unfused ones.
struct kept_activations {
  double input = 0, routing = 0, block = 0, scores = 0;
  double total() const { return input + routing + block + scores; }
};
kept_activations activations_kept(const model_spec& m, const layer_routing& l, const workload& w,
                                  attention_impl attention);

// Doubles throughout: a footprint that does not fit in 64 bits is still a number to print.
// `attention` is the implementation the step is priced with (cost_model::attention()).
memory_footprint footprint_of(const model_spec& model, const workload& w, attention_impl attention);

// The one memory check: true when fp.total() <= memory_bytes, or memory_bytes <= 0 (unknown).
bool fits_in(const memory_footprint& fp, double memory_bytes);

// Empty when fits_in(fp, memory_bytes); else one sentence: "does not fit in 80 GB: needs
// 35.2 TB, of which the attention scores of one layer (B·H·S² unfused) take 35.2 TB".
std::string memory_verdict(const memory_footprint& fp, double memory_bytes);

// "80 GB", "35.2 TB", "512 MB": decimal units, three significant digits.
std::string format_bytes(double bytes);

}  // namespace modsim::sim
