#pragma once
// What one step keeps in device memory, and whether it fits the hardware's memory_bytes.
//
// The footprint is a lower bound of the step's resident bytes (e = dtype_bytes, P = parameter
// count, n_l = tokens per sequence at layer l: k at a routed layer, S otherwise):
//   weights        P·e
//   training state P·e (gradients) + 2·P·4 (two fp32 Adam moments)       (train only)
//   KV cache       decode: B·(n_l+1)·2·d_kv·e summed over layers (a routed layer caches
//                  the k = routed_tokens(c, S) tokens its block saw, plus the new one)
//   activations    forward/decode: the largest one layer needs at once,
//                    max over l of B·n_l·(3·d + 2·d_kv + F)·e + scores
//                  train: every layer's, kept for the backward pass (summed over l)
//   scores         unfused attention: B·H·n_l·L_l·e, L_l the keys each query reads
//                  (n_l in forward/train, the layer's cached entries in decode)
// With a sliding window W (model_spec::sliding_window) the KV cache holds min(n_l+1, W)
// entries per sequence and layer and L_l is at most W.
// F = d_ff (2·d_ff for swiglu); an MoE MLP counts top_k·F per token. The LM head's logits
// B·S·V·e (B·V·e in decode) join the activations of the last layer.
#include <cstdint>
#include <string>

#include "sim/spec.hpp"

namespace modsim::sim {

struct memory_footprint {
  double weights = 0;         // bytes
  double training_state = 0;  // gradients and optimizer moments (train)
  double kv_cache = 0;        // decode
  double activations = 0;     // incl. scores and logits
  double scores = 0;          // the attention scores of the largest layer (part of activations)
  double logits = 0;          // the LM head's output (part of activations)
  double total() const { return weights + training_state + kv_cache + activations; }
};

// Doubles throughout: a footprint that does not fit in 64 bits is still a number to print.
memory_footprint footprint_of(const model_spec& model, const workload& w);

// Empty when `fp` fits in `memory_bytes` (or memory_bytes is 0: unknown); else one sentence:
// "does not fit in 80 GB: needs 35.2 TB, of which the attention scores of one layer (B·H·S²)
// take 35.2 TB".
std::string memory_verdict(const memory_footprint& fp, double memory_bytes);

// "80 GB", "35.2 TB", "512 MB": decimal units, three significant digits.
std::string format_bytes(double bytes);

}  // namespace modsim::sim
