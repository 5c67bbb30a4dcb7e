#include "sim/des/serving.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <string>

#include "sim/des/engine.hpp"
#include "sim/error.hpp"
#include "sim/flops.hpp"

namespace modsim::sim::des {

// ---- request generation ----------------------------------------------------------------

std::int64_t length_dist::sample(rng& r) const {
  switch (k) {
    case kind::fixed:
      return static_cast<std::int64_t>(a);
    case kind::uniform:
      return r.uniform_int(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b));
    case kind::exponential: {
      const double x = std::ceil(r.exponential(a));
      return std::clamp(static_cast<std::int64_t>(x), std::int64_t{1}, max());
    }
  }
  return 1;
}

std::int64_t length_dist::max() const {
  switch (k) {
    case kind::fixed:
      return static_cast<std::int64_t>(a);
    case kind::uniform:
      return static_cast<std::int64_t>(b);
    case kind::exponential:
      return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(10 * a)));
  }
  return 1;
}

namespace {

bool parse_number(std::string_view t, double& out) {
  if (t.empty()) return false;
  const std::string s(t);
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

bool parse_int(std::string_view t, std::int64_t& out) {
  if (t.empty()) return false;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), out);
  return r.ec == std::errc() && r.ptr == t.data() + t.size();
}

std::string_view trim(std::string_view t) {
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
  return t;
}

std::vector<std::string_view> split(std::string_view t, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t pos = t.find(sep, start);
    out.push_back(trim(t.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start)));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

}  // namespace

length_dist parse_length_dist(std::string_view text, const std::string& key) {
  const std::string expected = " (expected N, uniform:A:B or exp:MEAN with integers >= 1)";
  const auto bad = [&](const std::string& why) {
    return input_error("", key, "'" + std::string(text) + "': " + why + expected);
  };
  const std::vector<std::string_view> parts = split(text, ':');
  length_dist d;
  std::int64_t a = 0, b = 0;
  double m = 0;
  if (parts.size() == 1) {
    if (!parse_int(parts[0], a) || a < 1) throw bad("not an integer >= 1");
    d.k = length_dist::kind::fixed;
    d.a = d.b = static_cast<double>(a);
  } else if (parts.size() == 3 && parts[0] == "uniform") {
    if (!parse_int(parts[1], a) || !parse_int(parts[2], b) || a < 1 || b < a) throw bad("needs 1 <= A <= B");
    d.k = length_dist::kind::uniform;
    d.a = static_cast<double>(a);
    d.b = static_cast<double>(b);
  } else if (parts.size() == 2 && parts[0] == "exp") {
    if (!parse_number(parts[1], m) || m < 1) throw bad("needs a mean >= 1");
    d.k = length_dist::kind::exponential;
    d.a = d.b = m;
  } else {
    throw bad("unknown form");
  }
  return d;
}

std::vector<request> poisson_arrivals(double rate_per_s, std::int64_t n, const length_dist& prompt,
                                      const length_dist& output, std::uint64_t seed) {
  if (!(rate_per_s > 0) || !std::isfinite(rate_per_s)) throw input_error("", "--rate", "must be > 0");
  if (n < 1) throw input_error("", "--requests", "must be >= 1");
  rng r(seed);
  std::vector<request> out;
  out.reserve(static_cast<std::size_t>(n));
  double t = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    t += r.exponential(1.0 / rate_per_s);
    request q;
    q.id = i;
    q.arrival_s = t;
    q.prompt_tokens = prompt.sample(r);
    q.output_tokens = output.sample(r);
    out.push_back(q);
  }
  return out;
}

std::vector<request> parse_arrivals_csv(std::string_view text, const std::string& file) {
  std::vector<request> out;
  int col_arrival = -1, col_prompt = -1, col_output = -1;
  std::size_t line_no = 0;
  bool header = true;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = text.find('\n', pos);
    std::string_view line = trim(text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    pos = end == std::string_view::npos ? text.size() + 1 : end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> cells = split(line, ',');
    const std::string where = "line " + std::to_string(line_no);
    if (header) {
      for (std::size_t i = 0; i < cells.size(); ++i) {
        if (cells[i] == "arrival_s") col_arrival = static_cast<int>(i);
        if (cells[i] == "prompt_tokens") col_prompt = static_cast<int>(i);
        if (cells[i] == "output_tokens") col_output = static_cast<int>(i);
      }
      if (col_arrival < 0 || col_prompt < 0 || col_output < 0) {
        throw input_error(file, where, "the header must name arrival_s, prompt_tokens and output_tokens");
      }
      header = false;
      continue;
    }
    const auto need = static_cast<std::size_t>(std::max({col_arrival, col_prompt, col_output}));
    if (cells.size() <= need) throw input_error(file, where, "too few columns");
    request q;
    q.id = static_cast<std::int64_t>(out.size());
    if (!parse_number(cells[static_cast<std::size_t>(col_arrival)], q.arrival_s) || q.arrival_s < 0) {
      throw input_error(file, where + ": arrival_s", "must be a number >= 0");
    }
    if (!parse_int(cells[static_cast<std::size_t>(col_prompt)], q.prompt_tokens) || q.prompt_tokens < 1) {
      throw input_error(file, where + ": prompt_tokens", "must be an integer >= 1");
    }
    if (!parse_int(cells[static_cast<std::size_t>(col_output)], q.output_tokens) || q.output_tokens < 1) {
      throw input_error(file, where + ": output_tokens", "must be an integer >= 1");
    }
    out.push_back(q);
  }
  if (header) throw input_error(file, "", "no header line arrival_s,prompt_tokens,output_tokens");
  if (out.empty()) throw input_error(file, "", "no requests");
  return out;
}

double default_kv_budget_bytes(const model_spec& model, const hardware_spec& hw, dtype t) {
  const double weights = static_cast<double>(parameter_count(model)) * dtype_bytes(t);
  return std::max(0.0, hw.memory_bytes - weights);
}

percentiles percentiles_of(std::vector<double> v) {
  percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  const auto at = [&](double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  double sum = 0;
  for (double x : v) sum += x;
  p.mean = sum / static_cast<double>(v.size());
  return p;
}

// ---- the server ------------------------------------------------------------------------

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct seq_state {
  request req;
  std::int64_t generated = 0;       // output tokens sampled so far
  std::int64_t prefill_target = 0;  // tokens the current prefill covers (prompt, or prompt + generated)
  std::int64_t prefilled = 0;
  std::int64_t cached = 0;       // tokens cached at each non-routed layer
  std::vector<std::int64_t> rc;  // tokens cached at each routed layer
  std::int64_t blocks = 0;       // KV blocks held
  std::int64_t preemptions = 0;
  bool in_prefill = true;
  double admitted = -1, first_token = -1;
  // This step's plan.
  std::int64_t nr_add = 0;  // tokens added at non-routed layers (chunk, or 1 for decode)
  bool decode = false;
  std::vector<std::int64_t> add;  // tokens added per routed layer
};

// The statistics of a run, gathered as an observer.
class summary_observer final : public serve_observer {
 public:
  void on_arrival(const request& r) override {
    advance(r.arrival_s);
    if (!m_started) {
      m_first_arrival = r.arrival_s;
      m_started = true;
    }
    ++m_in_system;
  }
  void on_step(const step_record& s) override {
    ++m_sum.steps;
    m_sum.kv_peak_blocks = std::max(m_sum.kv_peak_blocks, s.kv_blocks);
    m_sum.decode_decisions += s.decode_decisions;
    m_sum.decode_routed += s.routed_decode;
    m_sum.dropped += s.dropped;
    m_sum.gpu_busy_s += s.exec.gpu_busy_s;
    m_sum.gpu_wait_host_s += s.exec.gpu_wait_host_s;
    m_sum.host_sync_wait_s += s.exec.host_sync_wait_s;
    m_sum.matmul_flops += s.exec.matmul_flops;
    m_sum.wasted_matmul_flops += s.exec.wasted_matmul_flops;
    if (s.decode_seqs > 0) {
      ++m_decode_steps;
      m_decode_seqs += s.decode_seqs;
    }
  }
  void on_preempt(std::int64_t, double) override { ++m_sum.preemptions; }
  void on_finish(const request_record& r) override {
    advance(r.finish_s);
    --m_in_system;
    m_last_finish = r.finish_s;
    ++m_sum.completed;
    m_sum.output_tokens += r.output_tokens;
    m_ttft.push_back(r.ttft_s());
    m_latency.push_back(r.latency_s());
    if (r.output_tokens > 1) m_tpot.push_back(r.tpot_s());
  }

  serve_summary finish(std::int64_t requests) {
    serve_summary s = m_sum;
    s.requests = requests;
    s.ttft_s = percentiles_of(m_ttft);
    s.tpot_s = percentiles_of(m_tpot);
    s.latency_s = percentiles_of(m_latency);
    s.duration_s = m_started ? m_last_finish - m_first_arrival : 0.0;
    s.throughput_tok_s = s.duration_s > 0 ? static_cast<double>(s.output_tokens) / s.duration_s : 0.0;
    s.mean_in_system = s.duration_s > 0 ? m_area / s.duration_s : 0.0;
    s.mean_decode_batch =
        m_decode_steps > 0 ? static_cast<double>(m_decode_seqs) / static_cast<double>(m_decode_steps) : 0.0;
    s.decode_routed_fraction =
        s.decode_decisions > 0 ? static_cast<double>(s.decode_routed) / static_cast<double>(s.decode_decisions) : 0.0;
    return s;
  }

 private:
  void advance(double t) {
    if (m_started) m_area += static_cast<double>(m_in_system) * (t - m_last_t);
    m_last_t = t;
  }
  serve_summary m_sum;
  bool m_started = false;
  double m_first_arrival = 0, m_last_finish = 0, m_last_t = 0, m_area = 0;
  std::int64_t m_in_system = 0, m_decode_steps = 0, m_decode_seqs = 0;
  std::vector<double> m_ttft, m_tpot, m_latency;
};

class server {
 public:
  server(const step_builder& b, std::vector<request> reqs, const serve_options& o,
         std::vector<serve_observer*> observers)
      : m_b(b), m_o(o), m_obs(std::move(observers)), m_rng(o.seed) {
    const auto& layers = b.layers();
    for (const layer_info& l : layers) {
      if (l.mod_routed) {
        m_routed.push_back(l.index);
        m_routed_capacity.push_back(l.capacity);
      }
    }
    m_nr_layers = static_cast<std::int64_t>(layers.size() - m_routed.size());
    const model_spec& m = b.model();
    m_block_bytes = o.block_tokens * 2 * static_cast<std::int64_t>(m.d_kv()) * dtype_bytes(b.type());
    m_total_blocks = static_cast<std::int64_t>(std::floor(o.kv_budget_bytes / static_cast<double>(m_block_bytes)));
    m_free = m_total_blocks;
    m_watermark_blocks = static_cast<std::int64_t>(std::floor(o.watermark * static_cast<double>(m_total_blocks)));
    std::stable_sort(reqs.begin(), reqs.end(), [](const request& x, const request& y) {
      return x.arrival_s != y.arrival_s ? x.arrival_s < y.arrival_s : x.id < y.id;
    });
    m_seqs.resize(reqs.size());
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      seq_state& s = m_seqs[i];
      s.req = reqs[i];
      s.prefill_target = s.req.prompt_tokens;
      s.rc.assign(m_routed.size(), 0);
      s.add.assign(m_routed.size(), 0);
    }
    m_load.layers.resize(layers.size());
    validate();
  }

  serve_result run(summary_observer& stats) {
    if (!m_seqs.empty()) m_eng.schedule_at(m_seqs[0].req.arrival_s, [this] { arrive(0); });
    m_eng.run();
    serve_result r;
    r.requests = std::move(m_records);
    std::sort(r.requests.begin(), r.requests.end(),
              [](const request_record& a, const request_record& b) { return a.id < b.id; });
    r.summary = stats.finish(static_cast<std::int64_t>(m_seqs.size()));
    r.summary.kv_block_bytes = m_block_bytes;
    r.summary.kv_budget_blocks = m_total_blocks;
    r.summary.kv_peak_bytes = r.summary.kv_peak_blocks * m_block_bytes;
    r.summary.events = m_eng.events_run() + m_exec_events;
    return r;
  }

 private:
  void validate() const {
    const serve_options& o = m_o;
    if (o.max_seqs < 1) throw input_error("", "--max-seqs", "must be >= 1");
    if (o.max_batched_tokens < 1) throw input_error("", "--max-batched-tokens", "must be >= 1");
    if (o.chunked_prefill < 0) throw input_error("", "--chunked-prefill", "must be >= 0 (0 = off)");
    if (o.block_tokens < 1) throw input_error("", "--block-tokens", "must be >= 1");
    if (!(o.kv_budget_bytes > 0))
      throw input_error("", "--kv-budget",
                        "the KV budget must be > 0 bytes (is the model larger than the device memory?)");
    if (!(o.watermark >= 0 && o.watermark < 1)) throw input_error("", "--watermark", "must be in [0, 1)");
    if (!(o.pad_capacity > 0 && o.pad_capacity <= 1)) throw input_error("", "--pad-capacity", "must be in (0, 1]");
    std::vector<std::int64_t> ids;
    const auto n_layers = static_cast<std::int64_t>(m_b.layers().size());
    for (const seq_state& s : m_seqs) {
      const request& q = s.req;
      const std::string who = "request " + std::to_string(q.id);
      ids.push_back(q.id);
      if (q.id < 0) throw input_error("", who, "request ids must be >= 0");
      if (!(q.arrival_s >= 0) || !std::isfinite(q.arrival_s)) throw input_error("", who, "arrival time must be >= 0");
      if (q.prompt_tokens < 1 || q.output_tokens < 1)
        throw input_error("", who, "prompt and output tokens must be >= 1");
      if (o.chunked_prefill == 0 && q.prompt_tokens > o.max_batched_tokens) {
        throw input_error("", who,
                          "a prompt of " + std::to_string(q.prompt_tokens) + " tokens exceeds --max-batched-tokens " +
                              std::to_string(o.max_batched_tokens) + " without --chunked-prefill");
      }
      const std::int64_t worst = n_layers * ceil_div(q.prompt_tokens + q.output_tokens, o.block_tokens);
      if (worst > m_total_blocks) {
        throw input_error("", who,
                          "may need " + std::to_string(worst) + " KV blocks, more than the budget of " +
                              std::to_string(m_total_blocks) + " (--kv-budget)");
      }
    }
    std::sort(ids.begin(), ids.end());
    if (std::adjacent_find(ids.begin(), ids.end()) != ids.end())
      throw input_error("", "requests", "duplicate request ids");
  }

  // Blocks `s` holds once this step's plan is written.
  std::int64_t blocks_after(const seq_state& s) const {
    std::int64_t b = m_nr_layers * ceil_div(s.cached + s.nr_add, m_o.block_tokens);
    for (std::size_t j = 0; j < s.rc.size(); ++j) b += ceil_div(s.rc[j] + s.add[j], m_o.block_tokens);
    return b;
  }

  void clear_plan(seq_state& s) {
    s.nr_add = 0;
    s.decode = false;
    std::fill(s.add.begin(), s.add.end(), 0);
  }

  void plan_prefill(seq_state& s, std::int64_t n) {
    s.decode = false;
    s.nr_add = n;
    for (std::size_t j = 0; j < m_routed.size(); ++j) s.add[j] = routed_tokens(m_routed_capacity[j], n);
  }

  void plan_decode(seq_state& s) {
    s.decode = true;
    s.nr_add = 1;
    for (std::size_t j = 0; j < m_routed.size(); ++j) s.add[j] = m_rng.bernoulli(m_routed_capacity[j]) ? 1 : 0;
  }

  void notify_arrival(const request& r) {
    for (serve_observer* o : m_obs) o->on_arrival(r);
  }

  void arrive(std::size_t i) {
    seq_state& s = m_seqs[i];
    notify_arrival(s.req);
    m_waiting.push_back(i);
    // The next arrival first, so arrivals at the same time join the same step.
    if (i + 1 < m_seqs.size()) m_eng.schedule_at(m_seqs[i + 1].req.arrival_s, [this, i] { arrive(i + 1); });
    if (!m_busy) {
      m_busy = true;
      m_eng.schedule(0.0, [this] { start_step(); });
    }
  }

  void preempt(std::size_t idx) {
    seq_state& s = m_seqs[idx];
    m_free += s.blocks;
    s.blocks = 0;
    s.cached = 0;
    std::fill(s.rc.begin(), s.rc.end(), 0);
    s.prefilled = 0;
    s.prefill_target = s.req.prompt_tokens + s.generated;
    s.in_prefill = true;
    ++s.preemptions;
    clear_plan(s);
    m_waiting.push_front(idx);
    for (serve_observer* o : m_obs) o->on_preempt(s.req.id, m_eng.now());
  }

  void start_step() {
    const std::int64_t chunk_cap = m_o.chunked_prefill > 0 ? m_o.chunked_prefill : m_o.max_batched_tokens;
    std::int64_t tokens_left = m_o.max_batched_tokens;
    m_batch.clear();
    bool preempted = false;
    // 1. Running sequences, in admission order.
    for (std::size_t i = 0; i < m_running.size();) {
      const std::size_t idx = m_running[i];
      seq_state& s = m_seqs[idx];
      if (tokens_left == 0) break;
      if (s.in_prefill) {
        plan_prefill(s, std::min({s.prefill_target - s.prefilled, chunk_cap, tokens_left}));
      } else {
        plan_decode(s);
      }
      const std::int64_t need = blocks_after(s) - s.blocks;
      bool self = false;
      while (need > m_free) {
        const std::size_t victim = m_running.back();
        m_running.pop_back();
        preempt(victim);
        preempted = true;
        if (victim == idx) {
          self = true;
          break;
        }
      }
      if (self) break;
      m_free -= need;
      s.blocks += need;
      tokens_left -= s.nr_add;
      m_batch.push_back(idx);
      ++i;
    }
    // 2. Admissions, first come first served (none after a preemption unless nothing runs).
    if (!preempted || m_batch.empty()) {
      while (!m_waiting.empty() && static_cast<std::int64_t>(m_running.size()) < m_o.max_seqs && tokens_left > 0) {
        const std::size_t idx = m_waiting.front();
        seq_state& s = m_seqs[idx];
        const std::int64_t remaining = s.prefill_target - s.prefilled;
        std::int64_t n = std::min({remaining, chunk_cap, tokens_left});
        // Without chunked prefill a prompt goes whole; a recompute longer than the token
        // limit is the exception and goes in pieces.
        if (m_o.chunked_prefill == 0 && remaining > tokens_left && remaining <= m_o.max_batched_tokens) break;
        plan_prefill(s, n);
        const std::int64_t need = blocks_after(s) - s.blocks;
        const std::int64_t reserve = m_running.empty() ? 0 : m_watermark_blocks;
        if (need > m_free - reserve) {
          clear_plan(s);
          break;
        }
        m_waiting.pop_front();
        m_running.push_back(idx);
        m_free -= need;
        s.blocks += need;
        tokens_left -= n;
        m_batch.push_back(idx);
        const bool recompute = s.preemptions > 0;
        if (s.admitted < 0) s.admitted = m_eng.now();
        for (serve_observer* o : m_obs) o->on_admit(s.req.id, m_eng.now(), recompute);
      }
    }
    if (m_batch.empty()) {
      m_busy = false;  // nothing to run: wait for an arrival
      return;
    }

    // Padding mode: tokens routed beyond the padded size are dropped (no K/V at that layer).
    std::int64_t decode_seqs = 0;
    for (std::size_t idx : m_batch) decode_seqs += m_seqs[idx].decode ? 1 : 0;
    std::int64_t dropped = 0;
    if (m_o.routing == decode_routing::pad && decode_seqs > 0) {
      const std::int64_t slots = routed_tokens(m_o.pad_capacity, decode_seqs);
      for (std::size_t j = 0; j < m_routed.size(); ++j) {
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
          const std::int64_t b = blocks_after(s);
          m_free += s.blocks - b;
          s.blocks = b;
        }
      }
    }

    build_load(decode_seqs);
    exec_options eo;
    eo.cuda_graph = m_o.cuda_graph;
    eo.record_spans = false;
    eo.by_class = false;
    timeline tl = simulate_execution(m_b.step(m_load, m_o.routing), m_b.device(), eo);
    m_exec_events += tl.events;

    step_record rec;
    rec.index = m_step_index++;
    rec.start_s = m_eng.now();
    rec.dur_s = tl.summary.step_s;
    rec.decode_seqs = decode_seqs;
    rec.prefill_seqs = static_cast<std::int64_t>(m_batch.size()) - decode_seqs;
    for (std::size_t idx : m_batch) {
      const seq_state& s = m_seqs[idx];
      if (!s.decode) rec.prefill_tokens += s.nr_add;
      if (s.decode) {
        for (std::int64_t a : s.add) rec.routed_decode += a;
      }
    }
    rec.decode_decisions = decode_seqs * static_cast<std::int64_t>(m_routed.size());
    rec.dropped = dropped;
    rec.running = static_cast<std::int64_t>(m_running.size());
    rec.waiting = static_cast<std::int64_t>(m_waiting.size());
    rec.kv_blocks = m_total_blocks - m_free;
    rec.exec = std::move(tl.summary);
    for (serve_observer* o : m_obs) o->on_step(rec);
    m_eng.schedule(rec.dur_s, [this] { end_step(); });
  }

  void build_load(std::int64_t decode_seqs) {
    std::size_t j = 0;  // routed layer counter
    std::int64_t sampled = 0;
    for (std::size_t idx : m_batch) {
      const seq_state& s = m_seqs[idx];
      if (s.decode || s.prefilled + s.nr_add == s.prefill_target) ++sampled;
    }
    m_load.sampled = sampled;
    for (std::size_t li = 0; li < m_b.layers().size(); ++li) {
      const layer_info& info = m_b.layers()[li];
      layer_load& L = m_load.layers[li];
      L.decode_tokens = L.decode_routed = L.decode_keys = L.pad_slots = L.pad_keys = 0;
      L.prefill.clear();
      if (!info.mod_routed) {
        for (std::size_t idx : m_batch) {
          const seq_state& s = m_seqs[idx];
          if (s.decode) {
            ++L.decode_tokens;
            ++L.decode_routed;
            L.decode_keys += s.cached + 1;
          } else {
            L.prefill.push_back({s.nr_add, s.nr_add, s.cached + s.nr_add});
          }
        }
        continue;
      }
      std::int64_t cached_sum = 0;
      for (std::size_t idx : m_batch) {
        const seq_state& s = m_seqs[idx];
        if (s.decode) {
          ++L.decode_tokens;
          cached_sum += s.rc[j];
          if (s.add[j] > 0) {
            ++L.decode_routed;
            L.decode_keys += s.rc[j] + 1;
          }
        } else {
          L.prefill.push_back({s.nr_add, s.add[j], s.rc[j] + s.add[j]});
        }
      }
      if (m_o.routing == decode_routing::pad && decode_seqs > 0) {
        L.pad_slots = routed_tokens(m_o.pad_capacity, decode_seqs);
        L.pad_keys = (cached_sum + decode_seqs / 2) / decode_seqs + 1;
      }
      ++j;
    }
  }

  void end_step() {
    const double now = m_eng.now();
    for (std::size_t idx : m_batch) {
      seq_state& s = m_seqs[idx];
      s.cached += s.nr_add;
      for (std::size_t j = 0; j < s.rc.size(); ++j) s.rc[j] += s.add[j];
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
      if (s.generated >= s.req.output_tokens) finish(idx, now);
    }
    start_step();
  }

  void finish(std::size_t idx, double now) {
    seq_state& s = m_seqs[idx];
    m_free += s.blocks;
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
    for (const layer_info& info : m_b.layers()) r.kv_tokens.push_back(info.mod_routed ? s.rc[j++] : s.cached);
    s.blocks = 0;
    m_running.erase(std::find(m_running.begin(), m_running.end(), idx));
    for (serve_observer* o : m_obs) o->on_finish(r);
    m_records.push_back(std::move(r));
  }

  const step_builder& m_b;
  serve_options m_o;
  std::vector<serve_observer*> m_obs;
  engine m_eng;
  rng m_rng;
  std::vector<seq_state> m_seqs;  // by arrival order
  std::deque<std::size_t> m_waiting;
  std::vector<std::size_t> m_running;  // admission order
  std::vector<std::size_t> m_batch;    // this step's sequences
  std::vector<int> m_routed;           // indices of the routed layers
  std::vector<double> m_routed_capacity;
  std::int64_t m_nr_layers = 0;
  std::int64_t m_block_bytes = 0, m_total_blocks = 0, m_free = 0, m_watermark_blocks = 0;
  std::int64_t m_step_index = 0;
  std::uint64_t m_exec_events = 0;
  bool m_busy = false;
  step_load m_load;
  std::vector<request_record> m_records;
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

}  // namespace modsim::sim::des
