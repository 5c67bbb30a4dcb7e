#pragma once
// What kernels one step runs, from the shapes that step actually has: a forward pass or a
// training step of B×S tokens, or one serving iteration mixing prefill chunks and decode
// tokens with the routed counts drawn for that step. Costs come from sim/model/flops (one formula
// per op) and times from a device_model.
//
// A serving step, per layer (MoD semantics of docs/contracts.md):
//  - prefill chunks: the router scores each chunk's n tokens and a top-k per sequence keeps
//    k = routed_tokens(capacity, n) of them (`router`, `topk`); decode tokens: the causal
//    predictor (or the router, inference == router) decides per token (`predictor`);
//  - synchronising mode: when decode tokens reach a routed layer the host reads the routed
//    count back (a `routed_count_d2h` kernel the host waits on) before it enqueues the
//    block sized to exactly that count; a routed layer no token routes to runs no block;
//  - padding mode: the block is sized to `pad_slots` decode rows whatever the count, with no
//    sync; the rows beyond the routed count are wasted FLOPs (wasted_matmul_flops);
//  - gather, the block (norms, projections, MLP or MoE over the T block tokens; attention of
//    each sequence's queries over its own keys at that layer) and scatter;
//  - lm_head over the sampled tokens (one per decode sequence and per finished prefill).
// Attention follows the FLOP convention: q queries over L keys cost as an (q × L) square.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

#include "sim/des/execution.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim::des {

using modsim::decode_routing;  // core/types.hpp
using modsim::to_string;

// Every draw the simulator makes: std::mt19937_64 (whose output the C++ standard fixes) with
// the distributions written out here, so a seed gives the same results with any standard
// library.
class rng {
 public:
  explicit rng(std::uint64_t seed) : m_gen(seed) {}
  std::uint64_t next() { return m_gen(); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(m_gen() >> 11) * 0x1.0p-53; }
  bool bernoulli(double p) { return uniform() < p; }
  // Exponential with the given mean (inverse transform).
  double exponential(double mean);
  // Uniform integer in [lo, hi].
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi);

 private:
  std::mt19937_64 m_gen;
};

// One layer after the schedule and the MoE variant are resolved.
struct layer_info {
  int index = 0;
  bool mod_routed = false;  // MoD routing around the block (router/predictor, gather, scatter)
  double capacity = 1.0;    // 1 when not mod_routed
  bool moe = false;         // MoE MLP
  int noop_experts = 0;     // `integrated` no-op experts at this layer
};
std::vector<layer_info> resolve_layers(const model_spec& model);

// One sequence's prefill chunk at one layer.
struct prefill_part {
  std::int64_t tokens = 0;        // n: the chunk's tokens before routing
  std::int64_t block_tokens = 0;  // tokens the block computes (k at a routed layer, else n)
  std::int64_t keys = 0;          // keys each of them attends to (cached + block_tokens)
};

struct layer_load {
  std::int64_t decode_tokens = 0;  // decode sequences in the step (one token each)
  std::int64_t decode_routed = 0;  // of those, tokens the block computes (all at a non-routed layer)
  std::int64_t decode_keys = 0;    // Σ over those tokens of the keys each attends to
  std::int64_t pad_slots = 0;      // padding mode: decode rows the routed block is sized to
  std::int64_t pad_keys = 0;       // padding mode: keys each padding row attends to
  std::vector<prefill_part> prefill;
};

struct step_load {
  std::vector<layer_load> layers;  // one per model layer
  std::int64_t sampled = 0;        // tokens the lm_head computes logits for
};

// Builds kernel lists for one model at one dtype. Keeps a memo of op times by shape, so it is
// not safe to share between threads.
class step_builder {
 public:
  step_builder(const model_spec& model, dtype t, device_model dev);

  const model_spec& model() const { return m_model; }
  // The keys one decode query attends to over `keys` cached entries and itself: `keys`, or the
  // model's sliding window when that is smaller.
  std::int64_t attended(std::int64_t keys) const {
    return m_model.sliding_window > 0 ? std::min(keys, m_model.sliding_window) : keys;
  }
  const std::vector<layer_info>& layers() const { return m_layers; }
  dtype type() const { return m_type; }
  const device_model& device() const { return m_dev; }

  // A forward pass of w.batch sequences of w.seq_len tokens (top-k per sequence at routed
  // layers, lm_head over every position, as sim/model/flops' forward mode). run_mode::train adds
  // the backward pass: layers in reverse, each op's recomputation (workload::recompute) and
  // its backward (sim/model/flops' backward FLOPs and bytes, timed by device_model::backward_time_of;
  // without one, twice the forward's time and launches), then the optimizer step over the
  // model's parameters (optimizer(), when the device model times one). run_mode::decode is
  // rejected (use decode_load + step).
  std::vector<kernel> forward(const workload& w) const;

  // One AdamW step over `params` parameters of this dtype (sim/model/flops' adamw_cost, timed by
  // device_model::optimizer_time_of), on the compute stream outside the layers; nothing when the
  // device model times no optimizer.
  std::optional<kernel> optimizer(std::int64_t params) const;

  // One serving / decode iteration.
  std::vector<kernel> step(const step_load& load, decode_routing routing) const;

 private:
  // An op's time and cost at one shape.
  struct timed {
    double time_s = 0;
    int kernels = 1;
    std::int64_t matmul = 0, other = 0, bytes = 0;
    double roofline_s = 0;
    bool memory_bound = false, calibrated = false;
    bool set = false;
  };
  struct memo_key {
    int table;
    std::int64_t T;
    bool operator==(const memo_key&) const = default;
  };
  struct memo_hash {
    std::size_t operator()(const memo_key& k) const;
  };

  kernel make(const op_cost& c, const op_shape& s, modsim::op id, int layer, std::int64_t tokens) const;
  // A token-wise op over T rows (memoised by op, T and whether the layer has no-op experts).
  kernel token_op(modsim::op id, std::int64_t T, int layer) const;
  kernel attention_op(modsim::op id, const layer_load& l, bool padded, int layer, std::int64_t* matmul_unpadded) const;
  void append_layer(std::vector<kernel>& out, const layer_info& info, const layer_load& l, decode_routing r) const;

  model_spec m_model;
  dtype m_type;
  device_model m_dev;
  std::vector<layer_info> m_layers;
  op_shape m_base;  // the model's dimensions at batch 1, dtype m_type
  // One query over L keys costs a + b·L for each attention op (scores, softmax, values).
  std::array<op_cost, 3> m_attn_a, m_attn_b;
  // Memo of token-wise ops: dense tables by T for small T, a hash map beyond.
  mutable std::vector<std::vector<timed>> m_dense;
  mutable std::unordered_map<memo_key, timed, memo_hash> m_sparse;
};

// Rows a routed layer's block is sized to in padding mode, for `batch` decode tokens at a layer
// of capacity `capacity`. With a pad capacity: routed_tokens(*pad_capacity, batch). Without one
// (the default everywhere): the expected routed count plus three standard deviations of the
// binomial routed count, rounded up to whole rows, at least 1 and at most the batch,
//   min(B, max(1, ceil(c·B + 3·sqrt(B·c·(1 − c))))),
// i.e. a pad capacity of min(1, c + 3·sqrt(c(1 − c)/B)): a token is dropped only when more than
// about 3 sigma of the batch route (at most ~0.15 % of steps at a layer, normal approximation).
std::int64_t pad_rows(std::optional<double> pad_capacity, double capacity, std::int64_t batch);

// Throws modsim::error(bad_input) naming --pad-capacity unless it is empty or in (0, 1].
void check_pad_capacity(std::optional<double> pad_capacity);

// The load of one decode step of `batch` sequences each with `context` cached tokens (routed
// layers hold routed_tokens(capacity, context) of them, as after a top-k prefill). Each
// sequence's token routes at each routed layer with probability = capacity (drawn from `r`);
// in padding mode the block is sized to pad_rows(pad_capacity, capacity, batch) rows and tokens
// beyond that are dropped. `routed` (if not null) receives the routed count per layer
// (after drops) and `decisions` the routing decisions made.
step_load decode_load(const step_builder& b, std::int64_t batch, std::int64_t context, decode_routing routing,
                      std::optional<double> pad_capacity, rng& r, std::vector<std::int64_t>* routed = nullptr,
                      std::int64_t* decisions = nullptr);

}  // namespace modsim::sim::des
