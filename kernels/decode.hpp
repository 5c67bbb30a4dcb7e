#pragma once
// A KV-cached decode step of a MoD transformer: B sequences, one new token each, through a
// stack of dense and routed layers, then the final norm and the LM head. The forward block of
// kernels/backend.hpp is the prefill; this is sampling (docs/contracts.md "Decode measurements", the
// paper's §3.5).
//
// Per layer, for the B new tokens x [B, d]:
//  - dense layer: attn_in = RMSNorm(x)·g_attn; q, k, v = attn_in·W_q, ·W_k, ·W_v; k and v are
//    appended to the layer's paged KV cache at each sequence's next slot; attention of each
//    sequence's query over its own cache (its earlier tokens at this layer, then the new one),
//    causal by construction, GQA (query head h reads KV head h / (n_heads / n_kv_heads));
//    h = x + O·W_o; y = h + MLP(RMSNorm(h)·g_mlp) (gelu or swiglu); x ← y.
//  - routed layer: the causal predictor p = relu(x·P_1)·p_2 + b (d → h → 1) decides per token
//    (sigmoid(p) > 0.5, i.e. p > 0) whether it enters the block; the routed tokens are
//    gathered (x̃), their router weight r = w_router·x̃ computed, the same block runs on them
//    over this layer's cache, which holds only the tokens routed here, and
//    x_i ← x_i + r_i·(y_j − x̃_j) (Equation 1); the others pass unchanged.
//    decode_routing::sync sizes the block to exactly the routed count (on a GPU the count is
//    read back to the host); decode_routing::pad sizes it to pad_rows() =
//    routed_tokens(pad_capacity, B) rows whatever the count (no host sync: a whole step can be
//    captured in a CUDA graph): rows beyond the routed count are padding (computed, not
//    scattered, appending nothing), and routed tokens beyond pad_rows() are dropped (they skip
//    the block, as the simulator's padding mode).
//  - the LM head: logits = RMSNorm(x)·g_final·W_vocab, [B, vocab] (when vocab > 0).
//
// The KV cache is paged: each layer has a pool of pages of page_tokens tokens ([page][kv_head]
// [slot][d_head] for K and for V) and each sequence a block table of the pages it owns, in a
// shuffled order so that a sequence's pages are not contiguous (as in a serving engine). A
// sequence owns max_context tokens' worth of pages at every layer.
//
// Routing decisions come from the predictor, or are forced: a forced count m (the m tokens
// with the largest predictor logits, ties to the lower sequence index: what the profiler
// measures, so a timing does not depend on random predictor weights) or a forced mask per
// routed layer (the tests: the same decisions as a full recomputation).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace modsim::kernels {

struct decode_layer {
  bool routed = false;
};

struct decode_shape {
  std::int64_t batch = 1;
  std::int64_t max_context = 0;  // tokens a sequence may hold in its cache at any layer
  std::int64_t d_model = 0;
  std::int64_t n_heads = 0;
  std::int64_t n_kv_heads = 0;  // divides n_heads
  std::int64_t d_head = 0;
  std::int64_t d_ff = 0;
  mlp_kind mlp = mlp_kind::gelu;
  std::int64_t predictor_hidden = 0;  // h of the causal predictor (> 0 when a layer is routed)
  std::int64_t vocab = 0;             // 0: no LM head
  std::int64_t page_tokens = 16;      // tokens per KV page
  std::vector<decode_layer> layers;   // at least one
  decode_routing routing = decode_routing::sync;
  double pad_capacity = 1.0;  // pad: the routed block has routed_tokens(pad_capacity, batch) rows

  std::int64_t d_q() const { return n_heads * d_head; }
  std::int64_t d_kv() const { return n_kv_heads * d_head; }
  std::int64_t pages_per_sequence() const { return (max_context + page_tokens - 1) / page_tokens; }
  std::int64_t pad_rows() const { return routed_tokens(pad_capacity, batch); }
  bool any_routed() const;
  // Throws modsim::error (bad_input) naming the field ("decode_shape.batch", ...).
  void validate() const;
};

// The weights of one layer, row-major [in, out] (a projection is act·W). Routed layers also
// have the router vector and the predictor; dense layers leave them empty.
struct decode_layer_weights {
  std::vector<float> attn_norm_g, w_q, w_k, w_v, w_o;   // [d], [d,d_q], [d,d_kv] ×2, [d_q,d]
  std::vector<float> mlp_norm_g, w_up, w_gate, w_down;  // [d], [d,d_ff] ×2 (gate: swiglu), [d_ff,d]
  std::vector<float> router_w;                          // [d]
  std::vector<float> pred_w1, pred_w2;                  // [d,h], [h]
  float pred_b2 = 0.0f;
};

struct decode_weights {
  std::vector<decode_layer_weights> layers;
  std::vector<float> final_norm_g, w_vocab;  // [d], [d, vocab]
};

// Weights drawn as the block workspaces draw theirs (kernels/init.hpp: std 1/sqrt(fan_in),
// norm gains 1 + 0.1·N(0,1), router std 1/sqrt(d)); a deterministic function of `seed`.
decode_weights make_decode_weights(const decode_shape& shape, std::uint64_t seed);

// How one step decides who enters each routed layer.
struct decode_decisions {
  enum class source { predictor, forced_count, forced_mask };
  source from = source::predictor;
  std::int64_t count = 0;  // forced_count: tokens routed at every routed layer, in [0, B]
  // forced_mask: one entry per routed layer (in layer order), each B values (1 = routed).
  std::vector<std::vector<std::uint8_t>> mask;
};

// One decode state: weights, the paged KV caches, the per-sequence lengths at each layer and
// the step's buffers. Made by a decode backend; never allocates while stepping.
class decode_state {
 public:
  virtual ~decode_state() = default;
  decode_state(const decode_state&) = delete;
  decode_state& operator=(const decode_state&) = delete;

  const decode_shape& shape() const { return m_shape; }

  // Cached tokens of sequence b at layer l.
  virtual std::int64_t length(int layer, std::int64_t b) const = 0;
  // Sets every sequence's cached length at every layer (dense layers: context[b]; routed
  // layers: routed[b]) and fills those slots with keys and values drawn from `seed`: a cache
  // as after a prefill, for measurements. Sizes are B each, ≤ max_context. The value at
  // (layer l, sequence b, position t, KV head g, element i) is the same on every backend:
  // fill_normal(seed, stream 7000 + 2l (keys) or 7001 + 2l (values), mean 0, std 0.5) at index
  // ((b·max_context + t)·n_kv_heads + g)·d_head + i (kernels/init.hpp).
  virtual void fill_cache(std::span<const std::int64_t> context, std::span<const std::int64_t> routed,
                          std::uint64_t seed) = 0;
  // Empties every cache.
  virtual void clear() = 0;
  // Appends one token's key and value rows (d_kv each, KV head-major as a qkv projection
  // writes them) to sequence b's cache at `layer`: how a prefill done by the forward block
  // hands its keys and values to decoding. Throws bad_input when the cache is full.
  virtual void write_cache(int layer, std::int64_t b, std::span<const float> k, std::span<const float> v) = 0;

  // The new tokens' hidden states x [B, d] (the embedding of the sampled tokens).
  virtual void set_input(std::span<const float> x) = 0;
  // Runs one step on the input. commit = true appends the new keys and values for good
  // (lengths grow by one where a token entered the layer); commit = false writes them to the
  // next slot and attends over it but leaves the lengths as they were, so that a step can be
  // repeated on the same cache (the profiler). Throws modsim::error (bad_input) when a
  // sequence's cache is full or a forced decision does not fit the shape.
  virtual void step(const decode_decisions& d, bool commit) = 0;
  virtual void synchronize() = 0;

  // After a step: the last layer's output [B, d], the logits [B, vocab] (vocab > 0), and
  // per routed layer (in layer order) the B decisions actually taken (1 = entered the block).
  virtual std::vector<float> hidden() const = 0;
  virtual std::vector<float> logits() const = 0;
  virtual std::vector<std::vector<std::uint8_t>> routed() const = 0;

  // Bytes one step reads at least: every weight it uses once (routed layers: the block's
  // weights when any token enters it) plus the keys and values it attends over.
  virtual std::int64_t step_bytes() const = 0;

 protected:
  explicit decode_state(decode_shape shape) : m_shape(std::move(shape)) {}

 private:
  decode_shape m_shape;
};

// The CPU decode backend (fp32, OpenBLAS for the projections, a thread pool for the rest).
// threads = 0: one per hardware thread.
std::unique_ptr<decode_state> make_cpu_decode(const decode_shape& shape, const decode_weights& weights,
                                              int threads = 0);

}  // namespace modsim::kernels
