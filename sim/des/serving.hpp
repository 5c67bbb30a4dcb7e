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
#include "sim/des/step.hpp"
#include "sim/model/spec.hpp"
#include "sim/common/stats.hpp"

namespace modsim::sim::des {

class parallel_serving_step;

// Requests and their generation: sim/des/arrivals.hpp; the KV budget and block pool:
// sim/des/kv_block_manager.hpp; percentiles: sim/common/stats.hpp (des::percentiles stays their name
// here).
using sim::percentiles;
using sim::percentiles_of;

struct serve_options {
  std::int64_t max_seqs = 256;
  std::int64_t max_batched_tokens = 8192;
  std::int64_t chunked_prefill = 0;  // 0 = off; else the largest prefill chunk per sequence and step
  std::int64_t block_tokens = 16;
  double kv_budget_bytes = 0;  // > 0 (default_kv_budget_bytes for the contract's budget)
  double watermark = 0.01;     // fraction of the blocks admission leaves free
  decode_routing routing = decode_routing::sync;
  // Padding mode: a routed layer's kernel rows = pad_rows(pad_capacity, its capacity, decode
  // seqs) (step.hpp); empty = the default rule (expected count + 3 sigma).
  std::optional<double> pad_capacity;
  bool cuda_graph = false;
  std::uint64_t seed = 0;  // the routing draws
  // Over several GPUs (sim/des/parallel_step.hpp): each step's kernels get their collectives
  // and stages from it; null = one GPU. Not owned.
  const parallel_serving_step* split = nullptr;
};

struct request_record {
  std::int64_t id = 0;
  double arrival_s = 0;
  double admitted_s = -1;     // first admission
  double first_token_s = -1;  // end of the step that sampled the first token
  double finish_s = -1;       // end of the step that sampled the last token
  std::int64_t prompt_tokens = 0;
  std::int64_t output_tokens = 0;
  std::int64_t preemptions = 0;
  std::vector<std::int64_t> kv_tokens;  // at finish: tokens cached per layer
  double ttft_s() const { return first_token_s - arrival_s; }
  double latency_s() const { return finish_s - arrival_s; }
  // Time per output token after the first; -1 when output_tokens == 1.
  double tpot_s() const {
    return output_tokens > 1 ? (finish_s - first_token_s) / static_cast<double>(output_tokens - 1) : -1.0;
  }
};

struct step_record {
  std::int64_t index = 0;
  double start_s = 0;
  double dur_s = 0;
  std::int64_t decode_seqs = 0;
  std::int64_t prefill_seqs = 0;
  std::int64_t prefill_tokens = 0;
  std::int64_t running = 0;           // sequences holding KV blocks during the step
  std::int64_t waiting = 0;           // requests queued
  std::int64_t kv_blocks = 0;         // blocks in use during the step
  std::int64_t routed_decode = 0;     // decode tokens routed at routed layers (summed over layers)
  std::int64_t decode_decisions = 0;  // decode routing decisions (decode seqs × routed layers)
  std::int64_t dropped = 0;           // padding mode: routed tokens dropped (over the padded size)
  int replica = 0;                    // the data-parallel replica that ran it (simulate_replicas)
  exec_summary exec;
};

// Observers of a serving run (all times in seconds of simulated time). The default does nothing.
class serve_observer {
 public:
  virtual ~serve_observer() = default;
  virtual void on_arrival(const request& /*r*/) {}
  virtual void on_admit(std::int64_t /*id*/, double /*t*/, bool /*recompute*/) {}
  virtual void on_step(const step_record& /*s*/) {}
  virtual void on_first_token(std::int64_t /*id*/, double /*t*/) {}
  // A recompute prefill (after a preemption) completed: decoding resumes.
  virtual void on_resume(std::int64_t /*id*/, double /*t*/) {}
  virtual void on_preempt(std::int64_t /*id*/, double /*t*/) {}
  virtual void on_finish(const request_record& /*r*/) {}
};

struct serve_summary {
  std::int64_t requests = 0;
  std::int64_t completed = 0;
  std::int64_t output_tokens = 0;  // generated by completed requests
  std::int64_t steps = 0;
  std::int64_t preemptions = 0;
  percentiles ttft_s, tpot_s, latency_s;
  double duration_s = 0;         // first arrival to last finish
  double throughput_tok_s = 0;   // output_tokens / duration_s
  double mean_in_system = 0;     // time-averaged requests between arrival and finish over duration_s
  double mean_decode_batch = 0;  // decode sequences per step with any
  std::int64_t kv_block_bytes = 0;
  std::int64_t kv_budget_blocks = 0;
  std::int64_t kv_peak_blocks = 0;
  std::int64_t kv_peak_bytes = 0;  // kv_peak_blocks × kv_block_bytes
  std::int64_t decode_decisions = 0;
  std::int64_t decode_routed = 0;
  std::int64_t dropped = 0;
  double decode_routed_fraction = 0;  // decode_routed / decode_decisions
  double gpu_busy_s = 0, gpu_wait_host_s = 0, host_sync_wait_s = 0;
  std::int64_t matmul_flops = 0, wasted_matmul_flops = 0;
  std::uint64_t events = 0;  // engine events (arrivals, steps); a step's execution runs on the recurrence path
};

struct serve_result {
  serve_summary summary;
  std::vector<request_record> requests;  // by id
};

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
