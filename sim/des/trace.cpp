#include "sim/des/trace.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <functional>

namespace modsim::sim::des {

std::string json_escape(const std::string& s) {
  // Boost.JSON's serializer, without the quotes it adds.
  const std::string quoted = boost::json::serialize(boost::json::string_view(s));
  return quoted.substr(1, quoted.size() - 2);
}

namespace {

double us(double s) { return s * 1e6; }

std::string meta(const char* what, int pid, int tid, const std::string& name) {
  if (tid < 0) {
    return fmt::format(R"({{"name":"{}","ph":"M","pid":{},"args":{{"name":"{}"}}}})", what, pid, json_escape(name));
  }
  return fmt::format(R"({{"name":"{}","ph":"M","pid":{},"tid":{},"args":{{"name":"{}"}}}})", what, pid, tid,
                     json_escape(name));
}

std::string sort_index(int pid, int tid, std::int64_t index) {
  return fmt::format(R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", pid,
                     tid, index);
}

std::string complete(const std::string& name, const char* cat, int pid, std::int64_t tid, double start_s, double dur_s,
                     const std::string& args) {
  return fmt::format(R"({{"name":"{}","cat":"{}","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
                     json_escape(name), cat, pid, tid, us(start_s), us(dur_s), args);
}

std::string join(const std::vector<std::string>& events) {
  std::string out = "{\"traceEvents\":[\n";
  for (std::size_t i = 0; i < events.size(); ++i) {
    out += events[i];
    out += i + 1 < events.size() ? ",\n" : "\n";
  }
  out += "],\"displayTimeUnit\":\"ns\"}\n";
  return out;
}

}  // namespace

namespace {

// The events of the spans of `tl`; pid_of(device) names the process of a GPU.
void span_events(const timeline& tl, const std::function<int(int)>& pid_of, std::vector<std::string>& ev) {
  for (const span& sp : tl.spans) {
    const int tid = sp.track + 1;
    const int pid = pid_of(sp.device);
    const kernel& k = tl.kernels[static_cast<std::size_t>(sp.kernel)];
    const std::string op = std::string(to_string(k.op)) + (k.backward ? " (bwd)" : "");
    const std::string where = k.layer >= 0 ? fmt::format("\"layer\":{}", k.layer) : std::string("\"layer\":null");
    switch (sp.kind) {
      case span_kind::enqueue:
        ev.push_back(complete("enqueue " + op, "host", pid, tid, sp.start_s, sp.dur_s, where));
        break;
      case span_kind::sync_wait:
        ev.push_back(complete("sync wait (routed count)", "sync", pid, tid, sp.start_s, sp.dur_s, where));
        break;
      case span_kind::idle: {
        // Idle because the host had not enqueued it yet, or (several GPUs, collectives) because
        // it waited on another stream or GPU.
        const bool dep = k.after[0] >= 0 || k.after[1] >= 0;
        ev.push_back(complete(dep ? "idle (waiting)" : "idle (waiting on host)", "idle", pid, tid, sp.start_s, sp.dur_s,
                              where + fmt::format(",\"before\":\"{}\"", json_escape(op))));
        break;
      }
      case span_kind::run:
        ev.push_back(
            complete(op, kernel_class(k), pid, tid, sp.start_s, sp.dur_s,
                     where + fmt::format(",\"tokens\":{},\"matmul_flops\":{},\"bytes\":{},\"launches\":{},"
                                         "\"wasted_matmul_flops\":{}",
                                         k.tokens, k.matmul_flops, k.bytes, k.launches, k.wasted_matmul_flops)));
        break;
    }
  }
}

}  // namespace

std::string chrome_trace(const timeline& tl, const std::string& title, int streams) {
  std::vector<std::string> ev;
  ev.push_back(meta("process_name", 1, -1, title));
  // tid 1 the host, 2 + s stream s (span tracks are 0 and 1 + s).
  ev.push_back(meta("thread_name", 1, 1, "host"));
  ev.push_back(sort_index(1, 1, 0));
  for (int s = 0; s < streams; ++s) {
    ev.push_back(meta("thread_name", 1, 2 + s, "stream " + std::to_string(s)));
    ev.push_back(sort_index(1, 2 + s, 1 + s));
  }
  span_events(
      tl, [](int) { return 1; }, ev);
  return join(ev);
}

std::string chrome_trace_parallel(const timeline& tl, const std::string& title) {
  int devices = 1;
  for (const kernel& k : tl.kernels) devices = std::max(devices, k.device + 1);
  std::vector<std::string> ev;
  static const char* const streams[] = {"compute", "TP/EP collectives", "pipeline sends", "DP gradient buckets"};
  for (int d = 0; d < devices; ++d) {
    const int pid = 1 + d;
    ev.push_back(meta("process_name", pid, -1,
                      devices > 1 ? fmt::format("GPU {} (stage {}) · {}", d, d, title) : "GPU 0 · " + title));
    ev.push_back(
        fmt::format(R"({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})", pid, d));
    ev.push_back(meta("thread_name", pid, 1, "host"));
    ev.push_back(sort_index(pid, 1, 0));
    for (int s = 0; s < 4; ++s) {
      ev.push_back(meta("thread_name", pid, 2 + s, streams[s]));
      ev.push_back(sort_index(pid, 2 + s, 1 + s));
    }
  }
  span_events(
      tl, [](int d) { return 1 + d; }, ev);
  return join(ev);
}

void serve_trace::open(std::int64_t id, std::string name, double t) {
  const auto i = static_cast<std::size_t>(id);
  if (i >= m_open.size()) m_open.resize(i + 1);
  m_open[i] = {std::move(name), t};
}

void serve_trace::close(std::int64_t id, double t) {
  open_span& o = m_open[static_cast<std::size_t>(id)];
  if (o.name.empty()) return;
  m_events.push_back(
      complete(o.name, "request", 2, id + 1, o.start_s, t - o.start_s, fmt::format("\"request\":{}", id)));
  o.name.clear();
}

void serve_trace::on_arrival(const request& r) {
  m_ids.push_back(r.id);
  open(r.id, "queued", r.arrival_s);
}

void serve_trace::on_admit(std::int64_t id, double t, bool recompute) {
  close(id, t);
  open(id, recompute ? "prefill (recompute)" : "prefill", t);
}

void serve_trace::on_first_token(std::int64_t id, double t) {
  close(id, t);
  open(id, "decode", t);
}

void serve_trace::on_resume(std::int64_t id, double t) {
  close(id, t);
  open(id, "decode", t);
}

void serve_trace::on_preempt(std::int64_t id, double t) {
  close(id, t);
  open(id, "queued (preempted)", t);
}

void serve_trace::on_finish(const request_record& r) { close(r.id, r.finish_s); }

void serve_trace::on_step(const step_record& s) {
  const std::string name = s.prefill_seqs > 0
                               ? fmt::format("step: {} decode + {} prefill", s.decode_seqs, s.prefill_seqs)
                               : fmt::format("step: {} decode", s.decode_seqs);
  m_replicas = std::max(m_replicas, s.replica + 1);
  m_events.push_back(complete(
      name, "step", 1, 1 + s.replica, s.start_s, s.dur_s,
      fmt::format("\"step\":{},\"decode_seqs\":{},\"prefill_seqs\":{},\"prefill_tokens\":{},\"routed_decode\":{},"
                  "\"dropped\":{},\"kernels\":{},\"launches\":{},\"gpu_wait_host_us\":{},\"host_sync_wait_us\":{}",
                  s.index, s.decode_seqs, s.prefill_seqs, s.prefill_tokens, s.routed_decode, s.dropped, s.exec.kernels,
                  s.exec.launches, us(s.exec.gpu_wait_host_s), us(s.exec.host_sync_wait_s))));
  m_events.push_back(
      fmt::format(R"({{"name":"batch","ph":"C","pid":1,"ts":{},"args":{{"running":{},"waiting":{},"kv_blocks":{}}}}})",
                  us(s.start_s), s.running, s.waiting, s.kv_blocks));
}

std::string serve_trace::json() const {
  std::vector<std::string> ev;
  ev.push_back(meta("process_name", 1, -1, m_title));
  if (m_replicas <= 1) {
    ev.push_back(meta("thread_name", 1, 1, "steps (GPU)"));
  } else {
    for (int r = 0; r < m_replicas; ++r)
      ev.push_back(meta("thread_name", 1, 1 + r, "steps (replica " + std::to_string(r) + ")"));
  }
  ev.push_back(meta("process_name", 2, -1, "requests"));
  std::vector<std::int64_t> ids = m_ids;
  std::sort(ids.begin(), ids.end());
  for (const std::int64_t id : ids) {
    const auto tid = static_cast<int>(id + 1);
    ev.push_back(meta("thread_name", 2, tid, "request " + std::to_string(id)));
    ev.push_back(sort_index(2, tid, id));
  }
  ev.insert(ev.end(), m_events.begin(), m_events.end());
  return join(ev);
}

}  // namespace modsim::sim::des
