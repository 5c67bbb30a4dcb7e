#include "sim/des/execution.hpp"

#include <cmath>
#include <deque>
#include <string>
#include <string_view>

#include "sim/des/engine.hpp"
#include "core/error.hpp"

namespace modsim::sim::des {

const char* kernel_class(const kernel& k) {
  if (k.op == d2h_sync_op) return "sync";
  return op_class_of(k.op);
}

namespace {

// The host thread and the streams as processes on one engine.
class executor {
 public:
  executor(const std::vector<kernel>& ks, const device_model& dev, const exec_options& o, timeline& out)
      : m_ks(ks), m_dev(dev), m_opt(o), m_out(out), m_streams(static_cast<std::size_t>(o.streams)) {
    m_launch_cost.resize(ks.size());
    bool segment_start = true;
    for (std::size_t i = 0; i < ks.size(); ++i) {
      if (o.cuda_graph) {
        m_launch_cost[i] = segment_start ? dev.launch_s : 0.0;
        segment_start = ks[i].host_waits;
      } else {
        m_launch_cost[i] = dev.launch_s * ks[i].launches;
      }
    }
    m_wait_before.assign(ks.size(), 0.0);
  }

  void run() {
    m_eng.schedule(0.0, [this] { host_next(); });
    m_eng.run();
    m_out.events = m_eng.events_run();
  }

  const std::vector<double>& launch_cost() const { return m_launch_cost; }
  const std::vector<double>& wait_before() const { return m_wait_before; }

 private:
  struct stream_state {
    std::deque<std::uint32_t> queue;
    bool busy = false;
    double free_at = 0.0;
  };

  void add_span(int track, span_kind kind, double start, double dur, std::uint32_t k) {
    if (m_opt.record_spans) m_out.spans.push_back({track, kind, start, dur, static_cast<int>(k)});
  }

  // The host enqueues the next kernel (eager) or the next graph (up to the next sync).
  void host_next() {
    const std::size_t n = m_ks.size();
    if (m_next >= n) return;
    const auto first = static_cast<std::uint32_t>(m_next);
    std::uint32_t last = first;
    double cost = 0.0;
    if (m_opt.cuda_graph) {
      while (last + 1 < n && !m_ks[last].host_waits) ++last;
      cost = m_dev.host_enqueue_s;
      m_out.summary.launches += 1;
    } else {
      cost = m_dev.host_enqueue_s * m_ks[first].launches;
      m_out.summary.launches += m_ks[first].launches;
    }
    m_next = last + 1;
    m_out.summary.host_busy_s += cost;
    add_span(0, span_kind::enqueue, m_eng.now(), cost, last);
    m_eng.schedule(cost, [this, first, last] { enqueued(first, last); });
  }

  void enqueued(std::uint32_t first, std::uint32_t last) {
    for (std::uint32_t i = first; i <= last; ++i) {
      const auto s = static_cast<std::size_t>(m_ks[i].stream);
      m_streams[s].queue.push_back(i);
      try_start(s);
    }
    if (m_ks[last].host_waits) {
      m_waiting_for = static_cast<std::int64_t>(last);
      m_wait_start = m_eng.now();
    } else {
      host_next();
    }
  }

  void try_start(std::size_t s) {
    stream_state& st = m_streams[s];
    if (st.busy || st.queue.empty()) return;
    const std::uint32_t i = st.queue.front();
    st.queue.pop_front();
    const double now = m_eng.now();
    if (m_active == 0 && now > m_idle_since) {
      m_out.summary.gpu_wait_host_s += now - m_idle_since;
      m_wait_before[i] += now - m_idle_since;
    }
    if (now > st.free_at) add_span(1 + static_cast<int>(s), span_kind::idle, st.free_at, now - st.free_at, i);
    ++m_active;
    st.busy = true;
    const double dur = m_launch_cost[i] + m_ks[i].device_s;
    m_eng.schedule(dur, [this, i] { done(i); });
  }

  void done(std::uint32_t i) {
    const auto s = static_cast<std::size_t>(m_ks[i].stream);
    stream_state& st = m_streams[s];
    const double now = m_eng.now();
    const double dur = m_launch_cost[i] + m_ks[i].device_s;
    add_span(1 + static_cast<int>(s), span_kind::run, now - dur, dur, i);
    st.busy = false;
    st.free_at = now;
    if (--m_active == 0) m_idle_since = now;
    if (now > m_out.summary.step_s) m_out.summary.step_s = now;
    if (m_waiting_for == static_cast<std::int64_t>(i)) {
      m_waiting_for = -1;
      m_out.summary.host_sync_wait_s += now - m_wait_start;
      m_out.summary.syncs += 1;
      add_span(0, span_kind::sync_wait, m_wait_start, now - m_wait_start, i);
      host_next();
    }
    try_start(s);
  }

  const std::vector<kernel>& m_ks;
  const device_model& m_dev;
  const exec_options& m_opt;
  timeline& m_out;
  engine m_eng;
  std::vector<stream_state> m_streams;
  std::vector<double> m_launch_cost;  // launch time each kernel pays on its stream
  std::vector<double> m_wait_before;  // GPU idle right before each kernel started
  std::size_t m_next = 0;             // the next kernel the host enqueues
  int m_active = 0;                   // streams running a kernel
  double m_idle_since = 0.0;          // when the last stream went idle
  std::int64_t m_waiting_for = -1;    // the kernel the host is blocked on
  double m_wait_start = 0.0;
};

// The same model without the engine, for one stream and no spans (serving runs it every
// step): with one stream a kernel starts at max(enqueued, stream free), so the timeline is a
// recurrence. DesExecution tests check it against the engine, kernel list by kernel list.
void run_single_stream(const std::vector<kernel>& ks, const device_model& dev, const exec_options& o,
                       std::vector<double>& launch_cost, std::vector<double>& wait_before, exec_summary& sum) {
  const std::size_t n = ks.size();
  launch_cost.assign(n, 0.0);
  wait_before.assign(n, 0.0);
  double host = 0.0, stream_free = 0.0;
  std::size_t i = 0;
  while (i < n) {
    std::size_t last = i;
    if (o.cuda_graph) {
      while (last + 1 < n && !ks[last].host_waits) ++last;
      host += dev.host_enqueue_s;
      sum.host_busy_s += dev.host_enqueue_s;
      sum.launches += 1;
    } else {
      const double cost = dev.host_enqueue_s * ks[i].launches;
      host += cost;
      sum.host_busy_s += cost;
      sum.launches += ks[i].launches;
    }
    for (std::size_t j = i; j <= last; ++j) {
      launch_cost[j] = o.cuda_graph ? (j == i ? dev.launch_s : 0.0) : dev.launch_s * ks[j].launches;
      const double start = host > stream_free ? host : stream_free;
      if (start > stream_free) {
        sum.gpu_wait_host_s += start - stream_free;
        wait_before[j] = start - stream_free;
      }
      stream_free = start + (launch_cost[j] + ks[j].device_s);
    }
    if (ks[last].host_waits) {
      sum.host_sync_wait_s += stream_free - host;
      sum.syncs += 1;
      host = stream_free;
    }
    i = last + 1;
  }
  sum.step_s = stream_free;
}

}  // namespace

timeline simulate_execution(std::vector<kernel> kernels, const device_model& dev, const exec_options& o) {
  if (o.streams < 1) throw runtime_error("des::simulate_execution: streams must be >= 1");
  for (const kernel& k : kernels) {
    if (k.stream < 0 || k.stream >= o.streams) {
      throw runtime_error("des::simulate_execution: kernel " + std::string(k.op) + " names stream " +
                          std::to_string(k.stream) + " of " + std::to_string(o.streams));
    }
    if (!(k.device_s >= 0) || !std::isfinite(k.device_s) || k.launches < 0) {
      throw runtime_error("des::simulate_execution: kernel " + std::string(k.op) +
                          " has a negative or non-finite time");
    }
  }
  timeline out;
  out.kernels = std::move(kernels);
  std::vector<double> launch_cost, wait_before;
  if (o.streams == 1 && !o.record_spans) {
    run_single_stream(out.kernels, dev, o, launch_cost, wait_before, out.summary);
  } else {
    executor ex(out.kernels, dev, o, out);
    ex.run();
    launch_cost = ex.launch_cost();
    wait_before = ex.wait_before();
  }

  exec_summary& sum = out.summary;
  sum.kernels = static_cast<int>(out.kernels.size());
  sum.gpu_busy_s = sum.step_s - sum.gpu_wait_host_s;
  std::vector<class_summary> classes;
  if (o.by_class) {
    for (std::string_view c : op_classes()) classes.push_back({std::string(c)});
    classes.push_back({"sync"});
  }
  for (std::size_t i = 0; i < out.kernels.size(); ++i) {
    const kernel& k = out.kernels[i];
    sum.matmul_flops += k.matmul_flops;
    sum.wasted_matmul_flops += k.wasted_matmul_flops;
    if (!o.by_class) continue;
    const std::string_view cls = kernel_class(k);
    for (class_summary& c : classes) {
      if (c.op_class != cls) continue;
      c.kernels += 1;
      c.launches += k.launches;
      c.device_s += launch_cost[i] + k.device_s;
      c.wait_before_s += wait_before[i];
      c.matmul_flops += k.matmul_flops;
      c.wasted_matmul_flops += k.wasted_matmul_flops;
      break;
    }
  }
  for (class_summary& c : classes) {
    if (c.kernels > 0) sum.by_class.push_back(std::move(c));
  }
  return out;
}

}  // namespace modsim::sim::des
