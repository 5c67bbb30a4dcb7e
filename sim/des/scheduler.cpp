// The serving simulator's continuous-batching step scheduler (sim/des/scheduler.hpp).
#include "sim/des/scheduler.hpp"

#include <algorithm>

namespace modsim::sim::des {

scheduler::scheduler(const std::vector<request>& requests, const std::vector<layer_info>& layers,
                     const serve_options& o, kv_block_manager kv, std::vector<serve_observer*> observers)
    : m_o(o), m_obs(std::move(observers)), m_kv(kv), m_rng(o.seed) {
  for (const layer_info& l : layers) {
    m_layer_routed.push_back(l.mod_routed);
    if (l.mod_routed) m_routed_capacity.push_back(l.capacity);
  }
  m_seqs.resize(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    seq_state& s = m_seqs[i];
    s.req = requests[i];
    s.prefill_target = s.req.prompt_tokens;
    s.kv.routed.assign(m_routed_capacity.size(), 0);
    s.add.assign(m_routed_capacity.size(), 0);
  }
}

bool scheduler::schedule_step(double now) {
  std::int64_t tokens_left = m_o.max_batched_tokens;
  m_batch.clear();
  const bool preempted = schedule_running(tokens_left, now);
  // No admissions after a preemption unless nothing runs.
  if (!preempted || m_batch.empty()) admit_waiting(tokens_left, now);
  if (m_batch.empty()) return false;
  m_decode_seqs = 0;
  for (std::size_t idx : m_batch) m_decode_seqs += m_seqs[idx].decode ? 1 : 0;
  m_dropped = drop_over_padding();
  return true;
}

bool scheduler::schedule_running(std::int64_t& tokens_left, double now) {
  bool preempted = false;
  for (std::size_t i = 0; i < m_running.size();) {
    if (tokens_left == 0) break;
    const std::size_t idx = m_running[i];
    seq_state& s = m_seqs[idx];
    if (s.in_prefill) {
      plan_prefill(s, next_chunk(s, tokens_left));
    } else {
      plan_decode(s);
    }
    const std::int64_t need = blocks_needed(s);
    if (!make_room(idx, need, now, preempted)) break;
    m_kv.allocate(s.kv, need);
    tokens_left -= s.nr_add;
    m_batch.push_back(idx);
    ++i;
  }
  return preempted;
}

void scheduler::admit_waiting(std::int64_t& tokens_left, double now) {
  while (!m_waiting.empty() && static_cast<std::int64_t>(m_running.size()) < m_o.max_seqs && tokens_left > 0) {
    const std::size_t idx = m_waiting.front();
    seq_state& s = m_seqs[idx];
    const std::int64_t remaining = s.prefill_target - s.prefilled;
    // Without chunked prefill a prompt goes whole; a recompute longer than the token limit
    // is the exception and goes in pieces.
    if (m_o.chunked_prefill == 0 && remaining > tokens_left && remaining <= m_o.max_batched_tokens) break;
    const std::int64_t n = next_chunk(s, tokens_left);
    plan_prefill(s, n);
    const std::int64_t need = blocks_needed(s);
    if (!m_kv.can_admit(need, !m_running.empty())) {
      clear_plan(s);
      break;
    }
    m_waiting.pop_front();
    m_running.push_back(idx);
    m_kv.allocate(s.kv, need);
    tokens_left -= n;
    m_batch.push_back(idx);
    const bool recompute = s.preemptions > 0;
    if (s.admitted < 0) s.admitted = now;
    for (serve_observer* o : m_obs) o->on_admit(s.req.id, now, recompute);
  }
}

std::int64_t scheduler::drop_over_padding() {
  if (m_o.routing != decode_routing::pad || m_decode_seqs == 0) return 0;
  std::int64_t dropped = 0;
  for (std::size_t j = 0; j < m_routed_capacity.size(); ++j) {
    const std::int64_t slots = pad_rows(m_o.pad_capacity, m_routed_capacity[j], m_decode_seqs);
    std::int64_t taken = 0;
    for (std::size_t idx : m_batch) {
      seq_state& s = m_seqs[idx];
      if (!s.decode || s.add[j] == 0) continue;
      if (taken < slots) {
        ++taken;
      } else {
        s.add[j] = 0;
        ++dropped;
      }
    }
  }
  if (dropped > 0) {
    for (std::size_t idx : m_batch) {
      seq_state& s = m_seqs[idx];
      m_kv.shrink(s.kv, m_kv.blocks_after(s.kv, s.nr_add, s.add));
    }
  }
  return dropped;
}

std::int64_t scheduler::next_chunk(const seq_state& s, std::int64_t tokens_left) const {
  const std::int64_t chunk_cap = m_o.chunked_prefill > 0 ? m_o.chunked_prefill : m_o.max_batched_tokens;
  return std::min({s.prefill_target - s.prefilled, chunk_cap, tokens_left});
}

void scheduler::plan_prefill(seq_state& s, std::int64_t n) {
  s.decode = false;
  s.nr_add = n;
  for (std::size_t j = 0; j < m_routed_capacity.size(); ++j) s.add[j] = routed_tokens(m_routed_capacity[j], n);
}

void scheduler::plan_decode(seq_state& s) {
  s.decode = true;
  s.nr_add = 1;
  for (std::size_t j = 0; j < m_routed_capacity.size(); ++j) s.add[j] = m_rng.bernoulli(m_routed_capacity[j]) ? 1 : 0;
}

void scheduler::clear_plan(seq_state& s) {
  s.nr_add = 0;
  s.decode = false;
  std::fill(s.add.begin(), s.add.end(), 0);
}

bool scheduler::make_room(std::size_t idx, std::int64_t need, double now, bool& preempted) {
  while (!m_kv.can_allocate(need)) {
    const std::size_t victim = m_running.back();
    m_running.pop_back();
    preempt(victim, now);
    preempted = true;
    if (victim == idx) return false;
  }
  return true;
}

void scheduler::preempt(std::size_t idx, double now) {
  seq_state& s = m_seqs[idx];
  m_kv.preempt(s.kv);
  s.prefilled = 0;
  s.prefill_target = s.req.prompt_tokens + s.generated;
  s.in_prefill = true;
  ++s.preemptions;
  clear_plan(s);
  m_waiting.push_front(idx);
  for (serve_observer* o : m_obs) o->on_preempt(s.req.id, now);
}

void scheduler::complete_step(double now) {
  for (std::size_t idx : m_batch) {
    if (advance(idx, now)) finish(idx, now);
  }
}

bool scheduler::advance(std::size_t idx, double now) {
  seq_state& s = m_seqs[idx];
  kv_block_manager::append(s.kv, s.nr_add, s.add);
  if (s.decode) {
    ++s.generated;
  } else {
    s.prefilled += s.nr_add;
    if (s.prefilled == s.prefill_target) {
      s.in_prefill = false;
      ++s.generated;
      if (s.first_token < 0) {
        s.first_token = now;
        for (serve_observer* o : m_obs) o->on_first_token(s.req.id, now);
      } else {
        for (serve_observer* o : m_obs) o->on_resume(s.req.id, now);
      }
    }
  }
  clear_plan(s);
  return s.generated >= s.req.output_tokens;
}

void scheduler::finish(std::size_t idx, double now) {
  seq_state& s = m_seqs[idx];
  m_kv.release(s.kv);
  request_record r;
  r.id = s.req.id;
  r.arrival_s = s.req.arrival_s;
  r.admitted_s = s.admitted;
  r.first_token_s = s.first_token;
  r.finish_s = now;
  r.prompt_tokens = s.req.prompt_tokens;
  r.output_tokens = s.req.output_tokens;
  r.preemptions = s.preemptions;
  std::size_t j = 0;
  for (bool routed : m_layer_routed) r.kv_tokens.push_back(routed ? s.kv.routed[j++] : s.kv.cached);
  m_running.erase(std::find(m_running.begin(), m_running.end(), idx));
  for (serve_observer* o : m_obs) o->on_finish(r);
  m_finished.push_back(std::move(r));
}

}  // namespace modsim::sim::des
