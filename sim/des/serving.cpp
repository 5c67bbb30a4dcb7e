// The serving simulation loop (sim/des/serving.hpp): arrivals and step ends as events of the
// discrete-event engine; each step is planned by the scheduler (des/scheduler), turned into
// the kernel load of its actual shapes (des/step) and timed by the execution simulation
// (des/execution); observers see every arrival, step and request.
#include "sim/des/serving.hpp"

#include <functional>

#include "sim/des/parallel_step.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "sim/des/engine.hpp"
#include "sim/des/scheduler.hpp"
#include "sim/des/serving_stats.hpp"

namespace modsim::sim::des {

namespace {

// Throws bad_input for options out of range; returns them.
const serve_options& validated(const serve_options& o) {
  if (o.max_seqs < 1) throw input_error("", "--max-seqs", "must be >= 1");
  if (o.max_batched_tokens < 1) throw input_error("", "--max-batched-tokens", "must be >= 1");
  if (o.chunked_prefill < 0) throw input_error("", "--chunked-prefill", "must be >= 0 (0 = off)");
  if (o.block_tokens < 1) throw input_error("", "--block-tokens", "must be >= 1");
  if (!(o.kv_budget_bytes > 0))
    throw input_error("", "--kv-budget",
                      "the KV budget must be > 0 bytes (is the model larger than the device memory?)");
  if (!(o.watermark >= 0 && o.watermark < 1)) throw input_error("", "--watermark", "must be in [0, 1)");
  check_pad_capacity(o.pad_capacity);
  return o;
}

// Throws bad_input for a request that could never be served (or is malformed) and for
// duplicate ids.
void validate_requests(const std::vector<request>& reqs, const serve_options& o, const kv_block_manager& kv,
                       std::int64_t n_layers) {
  std::vector<std::int64_t> ids;
  for (const request& q : reqs) {
    const std::string who = "request " + std::to_string(q.id);
    ids.push_back(q.id);
    if (q.id < 0) throw input_error("", who, "request ids must be >= 0");
    if (!(q.arrival_s >= 0) || !std::isfinite(q.arrival_s)) throw input_error("", who, "arrival time must be >= 0");
    if (q.prompt_tokens < 1 || q.output_tokens < 1) throw input_error("", who, "prompt and output tokens must be >= 1");
    if (o.chunked_prefill == 0 && q.prompt_tokens > o.max_batched_tokens) {
      throw input_error("", who,
                        "a prompt of " + std::to_string(q.prompt_tokens) + " tokens exceeds --max-batched-tokens " +
                            std::to_string(o.max_batched_tokens) + " without --chunked-prefill");
    }
    const std::int64_t worst = n_layers * kv.blocks_for(q.prompt_tokens + q.output_tokens);
    if (worst > kv.total_blocks()) {
      throw input_error("", who,
                        "may need " + std::to_string(worst) + " KV blocks, more than the budget of " +
                            std::to_string(kv.total_blocks()) + " (--kv-budget)");
    }
  }
  std::sort(ids.begin(), ids.end());
  if (std::adjacent_find(ids.begin(), ids.end()) != ids.end())
    throw input_error("", "requests", "duplicate request ids");
}

std::vector<request> by_arrival(std::vector<request> reqs) {
  std::stable_sort(reqs.begin(), reqs.end(), [](const request& x, const request& y) {
    return x.arrival_s != y.arrival_s ? x.arrival_s < y.arrival_s : x.id < y.id;
  });
  return reqs;
}

kv_block_manager kv_pool(const step_builder& b, const serve_options& o) {
  const auto& layers = b.layers();
  const auto routed = std::count_if(layers.begin(), layers.end(), [](const layer_info& l) { return l.mod_routed; });
  return kv_block_manager(o.block_tokens, kv_block_bytes(o.block_tokens, b.model().d_kv(), b.type()), o.kv_budget_bytes,
                          o.watermark, static_cast<std::int64_t>(layers.size()) - routed);
}

class server {
 public:
  server(const step_builder& b, std::vector<request> reqs, const serve_options& o,
         std::vector<serve_observer*> observers)
      : m_b(b),
        m_o(validated(o)),
        m_obs(std::move(observers)),
        m_reqs(by_arrival(std::move(reqs))),
        m_sched(m_reqs, b.layers(), m_o, kv_pool(b, m_o), m_obs) {
    validate_requests(m_reqs, m_o, m_sched.kv(), static_cast<std::int64_t>(b.layers().size()));
    m_load.layers.resize(b.layers().size());
  }

  serve_result run(const summary_observer& stats) {
    if (!m_reqs.empty()) m_eng.schedule_at(m_reqs[0].arrival_s, [this] { arrive(0); });
    m_eng.run();
    serve_result r;
    r.requests = m_sched.take_finished();
    std::sort(r.requests.begin(), r.requests.end(),
              [](const request_record& a, const request_record& b) { return a.id < b.id; });
    r.summary = stats.finish(static_cast<std::int64_t>(m_reqs.size()));
    r.summary.kv_block_bytes = m_sched.kv().block_bytes();
    r.summary.kv_budget_blocks = m_sched.kv().total_blocks();
    r.summary.kv_peak_bytes = r.summary.kv_peak_blocks * m_sched.kv().block_bytes();
    r.summary.events = m_eng.events_run() + m_exec_events;
    return r;
  }

 private:
  void arrive(std::size_t i) {
    for (serve_observer* o : m_obs) o->on_arrival(m_reqs[i]);
    m_sched.enqueue(i);
    // The next arrival first, so arrivals at the same time join the same step.
    if (i + 1 < m_reqs.size()) m_eng.schedule_at(m_reqs[i + 1].arrival_s, [this, i] { arrive(i + 1); });
    if (!m_busy) {
      m_busy = true;
      m_eng.schedule(0.0, [this] { start_step(); });
    }
  }

  void start_step() {
    if (!m_sched.schedule_step(m_eng.now())) {
      m_busy = false;  // nothing to run: wait for an arrival
      return;
    }
    build_load();
    exec_options eo;
    eo.cuda_graph = m_o.cuda_graph;
    eo.record_spans = false;
    eo.by_class = false;
    std::vector<kernel> ks = m_b.step(m_load, m_o.routing);
    if (m_o.split) {
      std::int64_t tokens = 0;  // the step's tokens, as the first layer sees them
      if (!m_load.layers.empty()) {
        tokens = m_load.layers[0].decode_tokens;
        for (const prefill_part& q : m_load.layers[0].prefill) tokens += q.tokens;
      }
      ks = m_o.split->apply(std::move(ks), m_b.layers(), tokens, eo);
    }
    timeline tl = simulate_execution(std::move(ks), m_b.device(), eo);
    m_exec_events += tl.events;
    step_record rec = record_step(tl.summary.step_s);
    rec.exec = std::move(tl.summary);
    for (serve_observer* o : m_obs) o->on_step(rec);
    m_eng.schedule(rec.dur_s, [this] { end_step(); });
  }

  // The step's record (without its execution summary).
  step_record record_step(double dur_s) {
    const std::vector<seq_state>& seqs = m_sched.sequences();
    const std::vector<std::size_t>& batch = m_sched.batch();
    step_record rec;
    rec.index = m_step_index++;
    rec.start_s = m_eng.now();
    rec.dur_s = dur_s;
    rec.decode_seqs = m_sched.decode_seqs();
    rec.prefill_seqs = static_cast<std::int64_t>(batch.size()) - rec.decode_seqs;
    for (std::size_t idx : batch) {
      const seq_state& s = seqs[idx];
      if (!s.decode) rec.prefill_tokens += s.nr_add;
      if (s.decode) {
        for (std::int64_t a : s.add) rec.routed_decode += a;
      }
    }
    rec.decode_decisions = rec.decode_seqs * static_cast<std::int64_t>(m_sched.routed_layers());
    rec.dropped = m_sched.dropped();
    rec.running = m_sched.running();
    rec.waiting = m_sched.waiting();
    rec.kv_blocks = m_sched.kv().used_blocks();
    return rec;
  }

  // The kernel load of the planned step: per layer, the decode tokens (and the keys they
  // attend to) and the prefill chunks.
  void build_load() {
    const std::vector<seq_state>& seqs = m_sched.sequences();
    const std::vector<std::size_t>& batch = m_sched.batch();
    const std::int64_t decode_seqs = m_sched.decode_seqs();
    std::size_t j = 0;  // routed layer counter
    std::int64_t sampled = 0;
    for (std::size_t idx : batch) {
      const seq_state& s = seqs[idx];
      if (s.decode || s.prefilled + s.nr_add == s.prefill_target) ++sampled;
    }
    m_load.sampled = sampled;
    for (std::size_t li = 0; li < m_b.layers().size(); ++li) {
      const layer_info& info = m_b.layers()[li];
      layer_load& L = m_load.layers[li];
      L.decode_tokens = L.decode_routed = L.decode_keys = L.pad_slots = L.pad_keys = 0;
      L.prefill.clear();
      if (!info.mod_routed) {
        for (std::size_t idx : batch) {
          const seq_state& s = seqs[idx];
          if (s.decode) {
            ++L.decode_tokens;
            ++L.decode_routed;
            L.decode_keys += m_b.attended(s.kv.cached + 1);
          } else {
            L.prefill.push_back({s.nr_add, s.nr_add, s.kv.cached + s.nr_add});
          }
        }
        continue;
      }
      std::int64_t cached_sum = 0;
      for (std::size_t idx : batch) {
        const seq_state& s = seqs[idx];
        if (s.decode) {
          ++L.decode_tokens;
          cached_sum += s.kv.routed[j];
          if (s.add[j] > 0) {
            ++L.decode_routed;
            L.decode_keys += m_b.attended(s.kv.routed[j] + 1);
          }
        } else {
          L.prefill.push_back({s.nr_add, s.add[j], s.kv.routed[j] + s.add[j]});
        }
      }
      if (m_o.routing == decode_routing::pad && decode_seqs > 0) {
        L.pad_slots = pad_rows(m_o.pad_capacity, info.capacity, decode_seqs);
        L.pad_keys = m_b.attended((cached_sum + decode_seqs / 2) / decode_seqs + 1);
      }
      ++j;
    }
  }

  void end_step() {
    m_sched.complete_step(m_eng.now());
    start_step();
  }

  const step_builder& m_b;
  serve_options m_o;
  std::vector<serve_observer*> m_obs;
  std::vector<request> m_reqs;  // by arrival order
  scheduler m_sched;
  engine m_eng;
  std::int64_t m_step_index = 0;
  std::uint64_t m_exec_events = 0;
  bool m_busy = false;
  step_load m_load;
};

}  // namespace

serve_result simulate_serving(const step_builder& builder, std::vector<request> requests, const serve_options& o,
                              std::span<serve_observer* const> observers) {
  summary_observer stats;
  std::vector<serve_observer*> all{&stats};
  for (serve_observer* ob : observers) {
    if (ob) all.push_back(ob);
  }
  server s(builder, std::move(requests), o, std::move(all));
  return s.run(stats);
}

namespace {

// Every event of one replica's run, in the order it was emitted, with its time.
class event_recorder final : public serve_observer {
 public:
  explicit event_recorder(int replica) : m_replica(replica) {}
  void on_arrival(const request& r) override {
    add(r.arrival_s, [r](serve_observer& o) { o.on_arrival(r); });
  }
  void on_admit(std::int64_t id, double t, bool recompute) override {
    add(t, [=](serve_observer& o) { o.on_admit(id, t, recompute); });
  }
  void on_step(const step_record& s) override {
    step_record c = s;
    c.replica = m_replica;
    add(s.start_s, [c](serve_observer& o) { o.on_step(c); });
  }
  void on_first_token(std::int64_t id, double t) override {
    add(t, [=](serve_observer& o) { o.on_first_token(id, t); });
  }
  void on_resume(std::int64_t id, double t) override {
    add(t, [=](serve_observer& o) { o.on_resume(id, t); });
  }
  void on_preempt(std::int64_t id, double t) override {
    add(t, [=](serve_observer& o) { o.on_preempt(id, t); });
  }
  void on_finish(const request_record& r) override {
    add(r.finish_s, [r](serve_observer& o) { o.on_finish(r); });
  }

  struct event {
    double t;
    std::function<void(serve_observer&)> replay;
  };
  std::vector<event> events;

 private:
  void add(double t, std::function<void(serve_observer&)> f) { events.push_back({t, std::move(f)}); }
  int m_replica;
};

}  // namespace

serve_result simulate_replicas(const step_builder& builder, std::vector<request> requests, const serve_options& o,
                               int replicas, std::span<serve_observer* const> observers) {
  if (replicas < 1) throw input_error("", "--dp", "must be >= 1");
  if (replicas == 1) return simulate_serving(builder, std::move(requests), o, observers);
  const std::vector<request> ordered = by_arrival(std::move(requests));
  std::vector<std::vector<request>> parts(static_cast<std::size_t>(replicas));
  for (std::size_t i = 0; i < ordered.size(); ++i) parts[i % parts.size()].push_back(ordered[i]);
  std::vector<event_recorder> recorders;
  for (int r = 0; r < replicas; ++r) recorders.emplace_back(r);
  serve_result out;
  std::uint64_t events = 0;
  for (int r = 0; r < replicas; ++r) {
    serve_options ro = o;
    ro.seed = o.seed + static_cast<std::uint64_t>(r);
    serve_observer* rec[] = {&recorders[static_cast<std::size_t>(r)]};
    serve_result one = simulate_serving(builder, std::move(parts[static_cast<std::size_t>(r)]), ro, rec);
    out.summary.kv_block_bytes = one.summary.kv_block_bytes;
    out.summary.kv_budget_blocks = one.summary.kv_budget_blocks;
    events += one.summary.events;
    for (request_record& q : one.requests) out.requests.push_back(std::move(q));
  }
  // Replay in time order, each replica's own order kept (a k-way merge of their streams).
  summary_observer stats;
  std::vector<serve_observer*> all{&stats};
  for (serve_observer* ob : observers)
    if (ob) all.push_back(ob);
  std::vector<std::size_t> next(recorders.size(), 0);
  for (;;) {
    std::size_t best = recorders.size();
    for (std::size_t r = 0; r < recorders.size(); ++r) {
      if (next[r] >= recorders[r].events.size()) continue;
      if (best == recorders.size() || recorders[r].events[next[r]].t < recorders[best].events[next[best]].t) best = r;
    }
    if (best == recorders.size()) break;
    const auto& e = recorders[best].events[next[best]++];
    for (serve_observer* ob : all) e.replay(*ob);
  }
  const std::int64_t block_bytes = out.summary.kv_block_bytes, budget = out.summary.kv_budget_blocks;
  out.summary = stats.finish(static_cast<std::int64_t>(ordered.size()));
  out.summary.kv_block_bytes = block_bytes;
  out.summary.kv_budget_blocks = budget;
  out.summary.kv_peak_bytes = out.summary.kv_peak_blocks * block_bytes;
  out.summary.events = events;
  std::sort(out.requests.begin(), out.requests.end(),
            [](const request_record& a, const request_record& b) { return a.id < b.id; });
  return out;
}

}  // namespace modsim::sim::des
