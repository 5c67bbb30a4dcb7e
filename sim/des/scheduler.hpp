#pragma once
// The continuous-batching step scheduler of the serving simulator (after vLLM). It holds
// every request's progress (waiting, running, finished) and forms one step at a time:
//  1. the running sequences in admission order, a decode token each or their next prefill
//     chunk, each given the KV blocks its new tokens need; when none are free the most
//     recently admitted running sequence is preempted (its blocks freed, back to the front
//     of the queue to be recomputed: prefill over prompt + tokens generated so far), the
//     sequence itself when it is the last;
//  2. unless that preempted a sequence (and something still runs), waiting requests first-come
//     first-served while a sequence slot, the token budget and blocks (keeping the
//     watermark free unless nothing runs) remain; without chunked prefill a prompt is
//     admitted only whole;
//  3. in padding mode, decode tokens routed beyond the padded size are dropped.
// The routing draws of decode tokens are made here, when the step is planned, so that
// exactly the needed KV blocks are allocated. Semantics: sim/des/serving.hpp.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "sim/des/arrivals.hpp"
#include "sim/des/kv_block_manager.hpp"
#include "sim/des/serving_types.hpp"
#include "sim/des/step.hpp"

namespace modsim::sim::des {

// One request's progress through the server.
struct seq_state {
  request req;
  std::int64_t generated = 0;       // output tokens sampled so far
  std::int64_t prefill_target = 0;  // tokens the current prefill covers (prompt, or prompt + generated)
  std::int64_t prefilled = 0;
  seq_kv kv;  // its KV cache
  std::int64_t preemptions = 0;
  bool in_prefill = true;
  double admitted = -1, first_token = -1;
  // This step's plan.
  std::int64_t nr_add = 0;  // tokens added at non-routed layers (chunk, or 1 for decode)
  bool decode = false;
  std::vector<std::int64_t> add;  // tokens added per routed layer
};

class scheduler {
 public:
  // `requests` in arrival order (sequence i is requests[i]); `layers` the model's layers;
  // `kv` the block pool; `observers` are told of admissions, preemptions, first tokens,
  // resumes and finishes.
  scheduler(const std::vector<request>& requests, const std::vector<layer_info>& layers, const serve_options& o,
            kv_block_manager kv, std::vector<serve_observer*> observers);

  const std::vector<seq_state>& sequences() const { return m_seqs; }
  const kv_block_manager& kv() const { return m_kv; }
  std::int64_t running() const { return static_cast<std::int64_t>(m_running.size()); }
  std::int64_t waiting() const { return static_cast<std::int64_t>(m_waiting.size()); }
  std::size_t routed_layers() const { return m_routed_capacity.size(); }

  // Sequence i arrived: it joins the back of the queue.
  void enqueue(std::size_t i) { m_waiting.push_back(i); }

  // Plans the step starting at `now` (steps 1–3 above); false when nothing can run.
  bool schedule_step(double now);
  // The planned step: its sequences (indices into sequences()), how many of them decode,
  // and the routed decode tokens padding dropped.
  const std::vector<std::size_t>& batch() const { return m_batch; }
  std::int64_t decode_seqs() const { return m_decode_seqs; }
  std::int64_t dropped() const { return m_dropped; }

  // The planned step ended at `now`: its tokens are cached, a prefill that completed samples
  // a token, and sequences with all their output tokens finish (their blocks freed).
  void complete_step(double now);
  // The records of the finished requests, in finishing order; empties them.
  std::vector<request_record> take_finished() { return std::move(m_finished); }

 private:
  // Step 1: plans the running sequences; true when one was preempted.
  bool schedule_running(std::int64_t& tokens_left, double now);
  // Step 2: admits waiting requests.
  void admit_waiting(std::int64_t& tokens_left, double now);
  // Step 3: drops routed decode tokens over the padded size, returning their blocks; the count.
  std::int64_t drop_over_padding();

  // The prefill tokens `s` can take this step.
  std::int64_t next_chunk(const seq_state& s, std::int64_t tokens_left) const;
  void plan_prefill(seq_state& s, std::int64_t n);
  void plan_decode(seq_state& s);
  void clear_plan(seq_state& s);
  // Blocks `s` needs beyond those it holds for its planned tokens.
  std::int64_t blocks_needed(const seq_state& s) const {
    return m_kv.blocks_after(s.kv, s.nr_add, s.add) - s.kv.blocks;
  }
  // Preempts the most recently admitted running sequences until `need` blocks are free for
  // sequence `idx` (setting `preempted` when it preempts one); false when `idx` itself was
  // preempted.
  bool make_room(std::size_t idx, std::int64_t need, double now, bool& preempted);
  void preempt(std::size_t idx, double now);
  // Advances sequence `idx` past the step; true when it has all its output tokens.
  bool advance(std::size_t idx, double now);
  void finish(std::size_t idx, double now);

  serve_options m_o;
  std::vector<serve_observer*> m_obs;
  kv_block_manager m_kv;
  rng m_rng;                              // the decode routing draws
  std::vector<double> m_routed_capacity;  // per routed layer
  std::vector<bool> m_layer_routed;       // per model layer
  std::vector<seq_state> m_seqs;          // by arrival order
  std::deque<std::size_t> m_waiting;
  std::vector<std::size_t> m_running;  // admission order
  std::vector<std::size_t> m_batch;    // this step's sequences
  std::int64_t m_decode_seqs = 0, m_dropped = 0;
  std::vector<request_record> m_finished;
};

}  // namespace modsim::sim::des
