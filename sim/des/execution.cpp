#include "sim/des/execution.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <deque>
#include <string>
#include <string_view>

#include "sim/des/engine.hpp"
#include "core/error.hpp"

namespace modsim::sim::des {

const char* to_string(step_op s) {
  switch (s) {
    case step_op::d2h_sync:
      return "routed_count_d2h";
    case step_op::tp_all_reduce:
      return "tp_all_reduce";
    case step_op::ep_dispatch:
      return "ep_dispatch";
    case step_op::ep_combine:
      return "ep_combine";
    case step_op::pp_send:
      return "pp_send";
    case step_op::dp_all_reduce:
      return "dp_all_reduce";
    case step_op::optimizer:
      return "optimizer";
  }
  return "?";
}

std::string_view to_string(kernel_op k) {
  if (const std::optional<modsim::op> o = k.model_op()) return modsim::to_string(*o);
  return to_string(*k.step());
}

bool is_comm(const kernel& k) {
  const std::optional<step_op> s = k.op.step();
  return s && *s != step_op::d2h_sync && *s != step_op::optimizer;
}

const char* kernel_class(const kernel& k) {
  if (const std::optional<modsim::op> o = k.op.model_op()) return op_class_of(*o);
  if (k.op == step_op::optimizer) return "optimizer";
  return k.op == step_op::d2h_sync ? "sync" : "comm";
}

namespace {

// Each GPU's host thread and streams as processes on one engine.
class executor {
 public:
  executor(const std::vector<kernel>& ks, const device_model& dev, const exec_options& o, timeline& out)
      : m_ks(ks),
        m_dev(dev),
        m_opt(o),
        m_out(out),
        m_streams(static_cast<std::size_t>(o.streams * o.devices)),
        m_hosts(static_cast<std::size_t>(o.devices)),
        m_gpus(static_cast<std::size_t>(o.devices)) {
    const std::size_t n = ks.size();
    m_launch_cost.resize(n);
    std::vector<char> segment_start(static_cast<std::size_t>(o.devices), 1);
    for (std::size_t i = 0; i < n; ++i) {
      const auto d = static_cast<std::size_t>(ks[i].device);
      m_hosts[d].order.push_back(static_cast<std::uint32_t>(i));
      if (o.cuda_graph) {
        m_launch_cost[i] = segment_start[d] ? dev.launch_s : 0.0;
        segment_start[d] = ks[i].host_waits;
      } else {
        m_launch_cost[i] = dev.launch_s * ks[i].launches;
      }
    }
    m_wait_before.assign(n, 0.0);
    m_enqueued_at.assign(n, 0.0);
    m_start.assign(n, -1.0);
    m_end.assign(n, -1.0);
    m_dependents.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      for (const std::int32_t a : ks[i].after)
        if (a >= 0) m_dependents[static_cast<std::size_t>(a)].push_back(static_cast<std::uint32_t>(i));
  }

  void run() {
    for (std::size_t d = 0; d < m_hosts.size(); ++d) m_eng.schedule(0.0, [this, d] { host_next(d); });
    m_eng.run();
    m_out.events = m_eng.events_run();
  }

  const std::vector<double>& launch_cost() const { return m_launch_cost; }
  const std::vector<double>& wait_before() const { return m_wait_before; }
  const std::vector<double>& start() const { return m_start; }
  const std::vector<double>& end() const { return m_end; }
  // Per GPU: idle time waiting on its host, and on anything else (a dependency).
  double wait_host(std::size_t d) const { return m_gpus[d].wait_host_s; }
  double wait_other(std::size_t d) const { return m_gpus[d].wait_other_s; }

 private:
  struct stream_state {
    std::deque<std::uint32_t> queue;
    bool busy = false;
    double free_at = 0.0;
  };
  struct host_state {
    std::vector<std::uint32_t> order;  // its GPU's kernels, in list order
    std::size_t next = 0;              // the next one it enqueues (index into order)
    std::int64_t waiting_for = -1;     // the kernel it is blocked on
    double wait_start = 0.0;
  };
  struct gpu_state {
    int active = 0;           // streams running a kernel
    double idle_since = 0.0;  // when the last stream went idle
    double wait_host_s = 0.0, wait_other_s = 0.0;
  };

  void add_span(int device, int track, span_kind kind, double start, double dur, std::uint32_t k) {
    if (m_opt.record_spans) m_out.spans.push_back({device, track, kind, start, dur, static_cast<int>(k)});
  }

  // GPU d's host enqueues its next kernel (eager) or its next graph (up to the next sync).
  void host_next(std::size_t d) {
    host_state& h = m_hosts[d];
    const std::size_t n = h.order.size();
    if (h.next >= n) return;
    const std::size_t first = h.next;
    std::size_t last = first;
    double cost = 0.0;
    if (m_opt.cuda_graph) {
      while (last + 1 < n && !m_ks[h.order[last]].host_waits) ++last;
      cost = m_dev.host_enqueue_s;
      m_out.summary.launches += 1;
    } else {
      cost = m_dev.host_enqueue_s * m_ks[h.order[first]].launches;
      m_out.summary.launches += m_ks[h.order[first]].launches;
    }
    h.next = last + 1;
    m_out.summary.host_busy_s += cost;
    add_span(static_cast<int>(d), 0, span_kind::enqueue, m_eng.now(), cost, h.order[last]);
    m_eng.schedule(cost, [this, d, first, last] { enqueued(d, first, last); });
  }

  void enqueued(std::size_t d, std::size_t first, std::size_t last) {
    host_state& h = m_hosts[d];
    for (std::size_t j = first; j <= last; ++j) {
      const std::uint32_t i = h.order[j];
      m_enqueued_at[i] = m_eng.now();
      const std::size_t s = stream_of(i);
      m_streams[s].queue.push_back(i);
      try_start(s);
    }
    const std::uint32_t k = h.order[last];
    if (m_ks[k].host_waits && m_end[k] < 0) {
      h.waiting_for = static_cast<std::int64_t>(k);
      h.wait_start = m_eng.now();
    } else {
      host_next(d);
    }
  }

  std::size_t stream_of(std::uint32_t i) const {
    return static_cast<std::size_t>(m_ks[i].device * m_opt.streams + m_ks[i].stream);
  }

  bool ready(std::uint32_t i) const {
    for (const std::int32_t a : m_ks[i].after)
      if (a >= 0 && m_end[static_cast<std::size_t>(a)] < 0) return false;
    return true;
  }

  void try_start(std::size_t s) {
    stream_state& st = m_streams[s];
    if (st.busy || st.queue.empty()) return;
    const std::uint32_t i = st.queue.front();
    if (!ready(i)) return;  // stream order: the stream waits on the dependency
    st.queue.pop_front();
    const double now = m_eng.now();
    const auto d = static_cast<std::size_t>(m_ks[i].device);
    gpu_state& g = m_gpus[d];
    if (g.active == 0 && now > g.idle_since) {
      // Idle since idle_since: waiting on the host until the kernel was enqueued, on a
      // dependency after that.
      const double host = std::max(0.0, std::min(now, m_enqueued_at[i]) - g.idle_since);
      g.wait_host_s += host;
      g.wait_other_s += (now - g.idle_since) - host;
      m_wait_before[i] += now - g.idle_since;
    }
    const int stream = m_ks[i].stream;
    if (now > st.free_at) add_span(m_ks[i].device, 1 + stream, span_kind::idle, st.free_at, now - st.free_at, i);
    ++g.active;
    st.busy = true;
    m_start[i] = now;
    const double dur = m_launch_cost[i] + m_ks[i].device_s;
    m_eng.schedule(dur, [this, i] { done(i); });
  }

  void done(std::uint32_t i) {
    const std::size_t s = stream_of(i);
    stream_state& st = m_streams[s];
    const double now = m_eng.now();
    const auto d = static_cast<std::size_t>(m_ks[i].device);
    const double dur = m_launch_cost[i] + m_ks[i].device_s;
    add_span(m_ks[i].device, 1 + m_ks[i].stream, span_kind::run, now - dur, dur, i);
    m_end[i] = now;
    st.busy = false;
    st.free_at = now;
    gpu_state& g = m_gpus[d];
    if (--g.active == 0) g.idle_since = now;
    if (now > m_out.summary.step_s) m_out.summary.step_s = now;
    host_state& h = m_hosts[d];
    if (h.waiting_for == static_cast<std::int64_t>(i)) {
      h.waiting_for = -1;
      m_out.summary.host_sync_wait_s += now - h.wait_start;
      m_out.summary.syncs += 1;
      add_span(m_ks[i].device, 0, span_kind::sync_wait, h.wait_start, now - h.wait_start, i);
      host_next(d);
    }
    try_start(s);
    for (const std::uint32_t j : m_dependents[i]) try_start(stream_of(j));
  }

  const std::vector<kernel>& m_ks;
  const device_model& m_dev;
  const exec_options& m_opt;
  timeline& m_out;
  engine m_eng;
  std::vector<stream_state> m_streams;  // device · streams + stream
  std::vector<host_state> m_hosts;
  std::vector<gpu_state> m_gpus;
  std::vector<double> m_launch_cost;                  // launch time each kernel pays on its stream
  std::vector<double> m_wait_before;                  // GPU idle right before each kernel started
  std::vector<double> m_enqueued_at, m_start, m_end;  // per kernel; -1 = not yet
  std::vector<std::vector<std::uint32_t>> m_dependents;
};

// Length of the union of intervals.
double union_length(std::vector<std::pair<double, double>> iv) {
  std::sort(iv.begin(), iv.end());
  double total = 0, cur_a = 0, cur_b = -1;
  bool open = false;
  for (const auto& [a, b] : iv) {
    if (!open || a > cur_b) {
      if (open) total += cur_b - cur_a;
      cur_a = a;
      cur_b = b;
      open = true;
    } else {
      cur_b = std::max(cur_b, b);
    }
  }
  if (open) total += cur_b - cur_a;
  return total;
}

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
  if (o.devices < 1) throw runtime_error("des::simulate_execution: devices must be >= 1");
  bool deps = false, comm = false;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const kernel& k = kernels[i];
    if (k.stream < 0 || k.stream >= o.streams) {
      throw runtime_error("des::simulate_execution: kernel " + std::string(to_string(k.op)) + " names stream " +
                          std::to_string(k.stream) + " of " + std::to_string(o.streams));
    }
    if (k.device < 0 || k.device >= o.devices) {
      throw runtime_error("des::simulate_execution: kernel " + std::string(to_string(k.op)) + " names GPU " +
                          std::to_string(k.device) + " of " + std::to_string(o.devices));
    }
    for (const std::int32_t a : k.after) {
      if (a < -1 || a >= static_cast<std::int64_t>(kernels.size()) || a == static_cast<std::int64_t>(i))
        throw runtime_error("des::simulate_execution: kernel " + std::to_string(i) + " (" +
                            std::string(to_string(k.op)) + ") waits on kernel " + std::to_string(a) + " of " +
                            std::to_string(kernels.size()));
      deps = deps || a >= 0;
    }
    comm = comm || is_comm(k);
    if (!(k.device_s >= 0) || !std::isfinite(k.device_s) || k.launches < 0) {
      throw runtime_error("des::simulate_execution: kernel " + std::string(to_string(k.op)) +
                          " has a negative or non-finite time");
    }
  }
  timeline out;
  out.kernels = std::move(kernels);
  std::vector<double> launch_cost, wait_before;
  exec_summary& sum = out.summary;
  if (o.streams == 1 && o.devices == 1 && !deps && !o.record_spans) {
    run_single_stream(out.kernels, dev, o, launch_cost, wait_before, out.summary);
    sum.gpu_busy_s = sum.step_s - sum.gpu_wait_host_s;
  } else {
    executor ex(out.kernels, dev, o, out);
    ex.run();
    launch_cost = ex.launch_cost();
    wait_before = ex.wait_before();
    const std::vector<double>& start = ex.start();
    const std::vector<double>& end = ex.end();
    for (std::size_t i = 0; i < out.kernels.size(); ++i)
      if (end[i] < 0)
        throw runtime_error("des::simulate_execution: kernel " + std::to_string(i) + " (" +
                            std::string(to_string(out.kernels[i].op)) + ") never ran: its dependencies form a cycle");
    double wait_host = 0, busy = 0;
    for (int d = 0; d < o.devices; ++d) {
      device_summary g;
      g.device = d;
      std::vector<std::pair<double, double>> all, compute, comms;
      for (std::size_t i = 0; i < out.kernels.size(); ++i) {
        const kernel& k = out.kernels[i];
        if (k.device != d) continue;
        ++g.kernels;
        all.emplace_back(start[i], end[i]);
        (is_comm(k) ? comms : compute).emplace_back(start[i], end[i]);
        g.end_s = std::max(g.end_s, end[i]);
      }
      g.busy_s = union_length(all);
      g.compute_s = union_length(compute);
      g.comm_s = union_length(comms);
      g.exposed_comm_s = g.busy_s - g.compute_s;
      g.wait_host_s = ex.wait_host(static_cast<std::size_t>(d));
      // Idle after its last kernel until the step ends counts as waiting on the others (a
      // pipeline's drain).
      g.wait_other_s = ex.wait_other(static_cast<std::size_t>(d)) + (g.kernels > 0 ? sum.step_s - g.end_s : sum.step_s);
      wait_host += g.wait_host_s;
      busy += g.busy_s;
      if (o.devices > 1 || comm) sum.devices.push_back(g);
    }
    if (o.devices == 1 && !deps) {
      sum.gpu_wait_host_s = wait_host;
      sum.gpu_busy_s = sum.step_s - sum.gpu_wait_host_s;
    } else {
      sum.gpu_wait_host_s = wait_host / o.devices;
      sum.gpu_busy_s = busy / o.devices;
    }
  }

  sum.kernels = static_cast<int>(out.kernels.size());
  std::vector<class_summary> classes;
  if (o.by_class) {
    for (std::string_view c : op_classes()) classes.push_back({c});
    classes.push_back({"optimizer"});
    classes.push_back({"comm"});
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
