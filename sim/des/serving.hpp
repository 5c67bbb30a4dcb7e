#pragma once
// Serving a MoD model: requests arrive (Poisson or a trace), a continuous-batching scheduler
// forms one step at a time under limits on sequences and batched tokens (optionally with
// chunked prefill), a paged KV cache with a byte budget admits and preempts sequences, and
// each step's duration is the simulated execution (des/execution) of the kernels of its
// actual shapes (des/step).
//
// The parts: request generation (des/arrivals), the step scheduler (des/scheduler), the paged
// KV cache (des/kv_block_manager), the run's statistics (des/serving_stats); serving.cpp is
// the event loop that wires them together.
//
// Semantics (docs/contracts.md "Semantics of a MoD layer"):
//  - Prefill: top-k per sequence at routed layers, so a routed layer caches
//    k = routed_tokens(capacity, n) of a chunk's n tokens (with chunked prefill the top-k is
//    taken per chunk). A prefill that completes samples the next token.
//  - Decode: each sequence's token routes at each routed layer with probability = the
//    layer's capacity (the causal predictor), drawn from one seeded rng in the order
//    (step, sequence in running order, layer); a token skipped at a layer writes no K/V there.
//    The draws are made when the step is scheduled so that exactly the needed KV blocks are
//    allocated (in synchronising mode the host knows the count before it sizes the block).
//    Padding mode: the routed block is sized to routed_tokens(pad_capacity, decode
//    sequences) rows; tokens beyond that are dropped (they skip the layer, no K/V).
//  - KV cache: blocks of block_tokens tokens of one layer (2·d_kv·dtype bytes per token and
//    layer); budget = kv_budget_bytes / block bytes. A sequence holds, per layer,
//    ceil(cached / block_tokens) blocks.
//  - Scheduling (after vLLM): each step first serves the running sequences in admission
//    order (a decode token each, or the next prefill chunk); a sequence that needs a block
//    when none is free preempts the most recently admitted running sequence (which frees all
//    its blocks and goes back to the front of the queue to be recomputed: prefill over
//    prompt + tokens generated so far), itself when it is the last. Then waiting requests
//    are admitted first-come first-served while a sequence slot, token budget and blocks
//    (keeping `watermark` of the blocks free, unless nothing runs) remain; without chunked
//    prefill a prompt is admitted only whole.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sim/des/arrivals.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/kv_block_manager.hpp"
#include "sim/des/serving_types.hpp"
#include "sim/des/step.hpp"
#include "sim/model/spec.hpp"
#include "sim/common/stats.hpp"

namespace modsim::sim::des {

// Serving by `replicas` independent data-parallel replicas behind a round-robin dispatcher: the
// requests in arrival order go to replica 0, 1, ..., each replica is simulated as
// simulate_serving (routing seed o.seed + replica), and their events are merged in time order
// into one summary and the observers (step records name their replica). Latency percentiles,
// throughput and requests in system are over all requests; GPU and FLOP totals add up over the
// replicas; the KV peak is the largest replica's.
serve_result simulate_replicas(const step_builder& builder, std::vector<request> requests, const serve_options& o,
                               int replicas, std::span<serve_observer* const> observers = {});

// Simulates serving `requests` (any order; ids unique) with the model and device of
// `builder`. Throws modsim::error(bad_input) for options out of range, a request that could
// never be served (prompt + output over max_batched_tokens without chunked prefill, or more
// KV blocks than the budget), or duplicate ids.
serve_result simulate_serving(const step_builder& builder, std::vector<request> requests, const serve_options& o,
                              std::span<serve_observer* const> observers = {});

}  // namespace modsim::sim::des
