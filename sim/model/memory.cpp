#include "sim/model/memory.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/model/flops.hpp"

namespace modsim::sim {

kept_activations activations_kept(const model_spec& m, const layer_routing& l, const workload& w,
                                  attention_impl attention) {
  const double e = dtype_bytes(w.type);
  const double B = static_cast<double>(w.batch), S = static_cast<double>(w.seq_len);
  const double d = m.d_model, dq = m.d_q(), dkv = m.d_kv(), H = m.n_heads, f = m.d_ff;
  const double n = l.mod_routed ? double(routed_tokens(l.capacity, w.seq_len)) : S;
  const double rows = B * n;  // rows through the block
  kept_activations k;
  k.input = B * S * d * e;
  if (l.mod_routed) k.routing = B * n * 4.0 + B * n * e;  // routed positions (int32) and their r
  // Per row: the normed input, q, k, v, the attention output, the residual sum, the normed MLP
  // input, the MLP's pre-activations (up, and gate for swiglu) and its activation.
  const double up = m.mlp == mlp_kind::swiglu ? 2.0 * f : f;
  double mlp_rows = rows;
  if (m.moe) {
    // Only the rows a real expert took keep MLP activations, with each row's expert
    // probabilities, its chosen expert (int32) and its expert's output.
    const double real = m.moe->experts, all = real + l.noop_experts;
    mlp_rows = rows * m.moe->top_k * real / all;
    k.block += rows * all * e + rows * 4.0 + mlp_rows * d * e;
  }
  k.block += rows * (d + dq + 2 * dkv + dq + d + d) * e + mlp_rows * (up + f) * e;
  if (l.mod_routed) k.block += rows * d * e;  // the block's output: Δ = y − x̃ for the router's gradient
  // Unfused: the causal softmax probabilities B·H·n·L (L = n, or the window); fused: the
  // kernel's per-row statistics (fp32).
  const double keys = m.sliding_window > 0 ? std::min(n, double(m.sliding_window)) : n;
  k.scores = attention == attention_impl::fused ? B * H * n * 4.0 : B * H * n * keys * e;
  return k;
}

memory_footprint footprint_of(const model_spec& m, const workload& w, attention_impl attention) {
  memory_footprint fp;
  fp.attention = attention;
  const double e = dtype_bytes(w.type);
  const double P = static_cast<double>(parameter_count(m));
  const double B = static_cast<double>(w.batch), S = static_cast<double>(w.seq_len);
  const double d = m.d_model, dkv = m.d_kv(), H = m.n_heads, dq = m.d_q();
  double F = m.mlp == mlp_kind::swiglu ? 2.0 * m.d_ff : double(m.d_ff);
  if (m.moe) F *= m.moe->top_k;
  const bool decode = w.run == run_mode::decode;
  const bool train = w.run == run_mode::train;
  const double window = static_cast<double>(m.sliding_window);

  fp.weights = P * e;
  // Gradients (e bytes), two fp32 moments, and an fp32 master copy of narrower weights.
  if (train) {
    fp.gradients = P * e;
    fp.optimizer_state = 2.0 * P * 4.0 + (e < 4 ? P * 4.0 : 0.0);
  }
  const recompute_mode recompute = train ? w.recompute : recompute_mode::none;

  double largest = 0, sum = 0, checkpoints = 0, largest_scores = 0, largest_kept = 0;
  for (const layer_routing& l : route_layers(m)) {
    // MoD routing shrinks the block's tokens; the integrated and moe variants do not.
    const bool mod = l.mod_routed;
    const double cached = mod ? double(routed_tokens(l.capacity, w.seq_len)) : S;
    // A sliding window keeps at most W positions per sequence in the cache and W keys per query.
    const auto windowed = [&](double keys) { return window > 0 ? std::min(keys, window) : keys; };
    double tokens = 0, keys = 0;
    if (decode) {
      fp.kv_cache += B * windowed(cached + 1) * 2 * dkv * e;
      tokens = 1;
      keys = windowed(cached + 1);
    } else {
      tokens = cached;
      keys = windowed(cached);
    }
    const double buffers =
        attention == attention_impl::fused ? B * H * tokens * 4 + B * tokens * dq * e : B * H * tokens * keys * e;
    if (!train) {
      const double layer = B * tokens * (3 * d + 2 * dkv + F) * e + buffers;
      if (layer > largest) {
        largest = layer;
        fp.attention_buffers = buffers;
      }
      continue;
    }
    // Train: what each layer's forward keeps for its backward, as the kernels keep it.
    const kept_activations k = activations_kept(m, l, w, attention);
    if (k.total() > largest_kept) {
      largest_kept = k.total();
      fp.attention_buffers = k.scores;
    }
    // Selective recomputation keeps no unfused scores (one layer's are rebuilt at a time).
    const bool drop_scores = recompute == recompute_mode::selective && attention == attention_impl::unfused;
    sum += drop_scores ? k.total() - k.scores : k.total();
    largest_scores = std::max(largest_scores, drop_scores ? k.scores : 0.0);
    // Full recomputation keeps each layer's input (all S tokens of the residual stream).
    checkpoints += k.input;
  }
  fp.logits = B * (decode ? 1.0 : S) * m.vocab_size * e;
  // Train: every layer's activations kept for the backward pass (MoD layers keep those of their
  // routed tokens only), less what recomputation rebuilds; full keeps the layer inputs and one
  // layer's activations, rebuilt while its backward runs.
  double kept = largest;
  if (train) kept = recompute == recompute_mode::full ? checkpoints + largest_kept : sum + largest_scores;
  fp.activations = kept + fp.logits;
  return fp;
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
  int u = 0;
  double v = bytes;
  while (std::abs(v) >= 1000 && u < 8) v /= 1000, ++u;
  char out[64];
  if (u == 0 || std::abs(v) >= 100)
    std::snprintf(out, sizeof out, "%.0f %s", v, units[u]);
  else
    std::snprintf(out, sizeof out, "%.3g %s", v, units[u]);
  return out;
}

bool fits_in(const memory_footprint& fp, double memory_bytes) {
  return memory_bytes <= 0 || fp.total() <= memory_bytes;
}

std::string memory_verdict(const memory_footprint& fp, double memory_bytes) {
  if (fits_in(fp, memory_bytes)) return {};
  struct part {
    const char* what;
    double bytes;
  };
  const part parts[] = {
      {"the weights", fp.weights},
      {"the gradients", fp.gradients},
      {"the optimizer state (Adam moments, fp32 master copy)", fp.optimizer_state},
      {"the KV cache", fp.kv_cache},
      {fp.attention == attention_impl::fused ? "the fused attention's row statistics and output of one layer"
                                             : "the attention scores of one layer (B·H·S² unfused)",
       fp.attention_buffers},
      {"the LM head's logits", fp.logits},
      {"the other activations", fp.activations - fp.attention_buffers - fp.logits}};
  const part* big = std::max_element(std::begin(parts), std::end(parts),
                                     [](const part& a, const part& b) { return a.bytes < b.bytes; });
  return "does not fit in " + format_bytes(memory_bytes) + ": needs at least " + format_bytes(fp.total()) +
         ", of which " + big->what + " take " + format_bytes(big->bytes);
}

}  // namespace modsim::sim
