#include "profiler/runner.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "core/error.hpp"
#include "profiler/anchor.hpp"
#include "kernels/init.hpp"

namespace modsim::profiler {
namespace {

bool same_workspace_shape(const point& a, const point& b) {
  const kernels::block_shape& x = a.shape;
  const kernels::block_shape& y = b.shape;
  return a.type == b.type && x.batch == y.batch && x.seq_len == y.seq_len && x.d_model == y.d_model &&
         x.n_heads == y.n_heads && x.n_kv_heads == y.n_kv_heads && x.d_head == y.d_head && x.d_ff == y.d_ff &&
         x.mlp == y.mlp && x.capacity == y.capacity && x.variant == y.variant && x.experts == y.experts &&
         x.top_k == y.top_k && x.noop_experts == y.noop_experts && x.capacity_factor == y.capacity_factor &&
         a.attention == b.attention && kernels::needs_training_state(a.op) == kernels::needs_training_state(b.op) &&
         a.recompute == b.recompute;
}

// The model shape a workspace serves (what --shard groups by); capacity and MoE axes aside.
bool same_model_shape(const point& a, const point& b) {
  const kernels::block_shape& x = a.shape;
  const kernels::block_shape& y = b.shape;
  return a.type == b.type && x.batch == y.batch && x.seq_len == y.seq_len && x.d_model == y.d_model &&
         x.n_heads == y.n_heads && x.n_kv_heads == y.n_kv_heads && x.d_head == y.d_head && x.d_ff == y.d_ff &&
         x.mlp == y.mlp && a.attention == b.attention;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Ops that read only x and weights and rewrite every intermediate they read (the dense block
// over all S tokens, the router over all B·S tokens): their data and results are the same on
// a workspace of any capacity of their model shape.
bool runs_at_any_capacity(const point& p) {
  return (p.op == kernels::op::block_dense || p.op == kernels::op::router) &&
         p.shape.variant == kernels::moe_variant::none;
}

}  // namespace

workspace_plan plan_workspaces(const std::vector<point>& points) {
  workspace_plan plan;
  std::size_t begin = 0;
  while (begin < points.size()) {
    std::size_t end = begin + 1;
    while (end < points.size() && same_model_shape(points[begin], points[end])) ++end;
    // The workspaces of this group, each with its points in grid order.
    struct bucket {
      point shape;
      std::vector<std::size_t> members;
      std::size_t first = 0;  // the smallest member index: buckets run in this order
    };
    std::vector<bucket> buckets;
    std::vector<std::size_t> any_capacity;
    for (std::size_t i = begin; i < end; ++i) {
      if (runs_at_any_capacity(points[i])) {
        any_capacity.push_back(i);
        continue;
      }
      std::size_t b = 0;
      while (b < buckets.size() && !same_workspace_shape(buckets[b].shape, points[i])) ++b;
      if (b == buckets.size()) buckets.push_back({points[i], {}, i});
      buckets[b].members.push_back(i);
    }
    if (!any_capacity.empty()) {
      std::size_t host = 0;
      while (host < buckets.size() && buckets[host].shape.shape.variant != kernels::moe_variant::none) ++host;
      if (host == buckets.size()) buckets.push_back({points[any_capacity.front()], {}, any_capacity.front()});
      bucket& h = buckets[host];
      h.first = std::min(h.first, any_capacity.front());
      h.members.insert(h.members.end(), any_capacity.begin(), any_capacity.end());  // last: see the header
    }
    std::stable_sort(buckets.begin(), buckets.end(),
                     [](const bucket& a, const bucket& b) { return a.first < b.first; });
    for (const bucket& b : buckets) {
      const std::size_t w = plan.workspaces.size();
      plan.workspaces.push_back(b.shape);
      for (std::size_t i : b.members) plan.steps.push_back({i, w});
    }
    begin = end;
  }
  return plan;
}

double time_once(kernels::backend& be, kernels::op o, kernels::workspace& ws, std::size_t* dropped) {
  // A sample taken while the device was throttled is taken again (a few times at most: a
  // device that stays throttled is measured as it is, and the drops are counted).
  for (int attempt = 0;; ++attempt) {
    ws.rotate();
    be.prepare(o, ws);
    be.flush_cache();
    const double t = be.timed_run(o, ws);
    const kernels::backend::clock_state c = be.clocks();
    if (!c.known || !c.throttled || attempt == 3) return t;
    if (dropped) ++*dropped;
  }
}

block_samples sample_in_block(kernels::backend& be, const point& p, kernels::workspace& ws, const stop_rule& rule,
                              std::size_t* dropped) {
  block_samples out;
  out.block = p;
  out.ops = block_ops(p);
  out.op_s.resize(out.ops.size());
  std::vector<kernels::backend::op_time> times;
  auto check_ops = [&] {
    bool same = times.size() == out.ops.size();
    for (std::size_t i = 0; same && i < times.size(); ++i) same = times[i].o == out.ops[i];
    if (same) return;
    std::string ran, listed;
    for (const auto& t : times) ran += " " + std::string(kernels::to_string(t.o));
    for (const auto o : out.ops) listed += " " + std::string(kernels::to_string(o));
    throw runtime_error(std::string(to_string(be.kind())) + " backend: " + std::string(kernels::to_string(p.block)) +
                        " ran ops" + ran + "; sim/model/flops lists" + listed);
  };
  int calls = 0;
  auto sample = [&] {
    double block = 0;
    for (int attempt = 0;; ++attempt) {
      block = be.timed_block_run(p.block, ws, times);
      const kernels::backend::clock_state c = be.clocks();
      if (!c.known || !c.throttled || attempt == 3) break;
      if (dropped) ++*dropped;
    }
    check_ops();
    if (calls++ < rule.warmup) return block;  // measure() discards its warm-up samples
    out.block_s.push_back(block);
    for (std::size_t i = 0; i < times.size(); ++i) out.op_s[i].push_back(times[i].seconds);
    return block;
  };
  out.stats = measure(sample, rule);
  return out;
}

namespace {

// One run of run_points: what has been measured and written so far, the anchors, and the
// steps shared by the block and the decode points. A stopped or failing run reports and
// writes what it measured.
class point_run {
 public:
  // With several passes a point's rows are written in the last one, from every pass's stats
  // (combine_passes); the passes before keep them here. rows[0] is the point itself.
  struct pending {
    std::vector<point> rows;
    std::vector<std::vector<sample_stats>> stats;  // stats[row][pass]
    std::vector<double> anchors;                   // the anchor of each pass (with options.anchor)
    bool written = false;
  };

  point_run(kernels::backend& be, measurement_writer& out, const run_options& options, std::size_t total)
      : m_be(be),
        m_out(out),
        m_options(options),
        m_backend(be.kind()),
        m_passes(std::max(1, options.passes)),
        m_total(total * static_cast<std::size_t>(m_passes)) {}

  void run_blocks(const std::vector<point>& block_points);
  void run_decode(const std::vector<point>& decode_points);
  run_result finish() {
    report(nullptr);
    return std::move(m_result);
  }

 private:
  bool stopping() const { return m_options.stop && m_options.stop->load(); }
  void report(const point* current) const;
  std::vector<double> anchor_samples();
  double recent_speed() const;
  template <class Measure>
  void anchored(pending& q, Measure&& measure_point);
  void write_point(pending& q);
  // Stopped (or failed) before the last pass: the points measured so far are written with the
  // passes they had (their samples column says how many samples), so nothing measured is lost.
  void write_unwritten(std::vector<pending>& all) {
    for (pending& q : all)
      if (!q.written && !q.stats.empty() && !q.stats.front().empty()) write_point(q);
  }
  // The point is already in the file (resume): counted, skipped.
  bool already_written(const std::vector<point>& rows, int pass);
  void measure_block_point(const point& p, const workspace_plan& plan, std::size_t step, pending& q);
  void measure_decode_point(const point& p, pending& q);
  void count_take(std::chrono::steady_clock::time_point sampling) {
    m_result.sampling_s += seconds_since(sampling);
    ++m_finished;
    ++m_measured_takes;
  }

  kernels::backend& m_be;
  measurement_writer& m_out;
  const run_options& m_options;
  const backend_kind m_backend;
  const int m_passes;
  const std::size_t m_total;  // points × passes
  const std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
  run_result m_result;
  // What has been finished, counted as it happens: a stopped run reports what it measured.
  std::size_t m_finished = 0, m_measured_takes = 0;
  std::string m_device;  // asked once: a CUDA device query takes milliseconds
  // The anchor, made at the first point measured.
  std::unique_ptr<anchor> m_anchor;
  // The anchors of the takes kept so far, the last k_speed_window of which set the speed a
  // take is compared with (their median; none before k_speed_min of them).
  std::vector<double> m_kept_anchors;
  // The block points' current workspace (index into the plan's workspaces; none yet: their count).
  std::unique_ptr<kernels::workspace> m_ws;
  std::size_t m_ws_index = 0;
};

void point_run::report(const point* current) const {
  if (!m_options.on_progress) return;
  run_progress p;
  p.done = m_finished;
  p.measured = m_measured_takes;
  p.total = m_total;
  p.elapsed_s = seconds_since(m_start);
  p.current = current;
  p.retaken = m_result.retaken;
  m_options.on_progress(p);
}

std::vector<double> point_run::anchor_samples() {
  if (!m_options.anchor) return {};
  if (!m_anchor) {
    m_anchor = std::make_unique<anchor>(m_be, m_options.seed);
    m_result.setup_s += m_anchor->setup_s();
  }
  return m_anchor->sample();
}

double point_run::recent_speed() const {
  if (m_kept_anchors.size() < static_cast<std::size_t>(k_speed_min)) return 0;
  const std::size_t n = std::min(m_kept_anchors.size(), static_cast<std::size_t>(k_speed_window));
  return anchor_of(std::vector<double>(m_kept_anchors.end() - static_cast<std::ptrdiff_t>(n), m_kept_anchors.end()));
}

// Times `measure_point` between two takes of the anchor and keeps their median in q. A take
// whose anchor ran more than options.retake_slower_pct slower than the recent speed fell in
// a slow spell of the machine: it is measured again (measure_point overwrites what the take
// before left), up to options.retakes times, the last take kept whatever its speed.
template <class Measure>
void point_run::anchored(pending& q, Measure&& measure_point) {
  for (int take = 0;; ++take) {
    std::vector<double> around = anchor_samples();
    measure_point();
    for (const double t : anchor_samples()) around.push_back(t);
    if (around.empty()) return;
    const double a = anchor_of(std::move(around));
    const double speed = recent_speed();
    const bool slow =
        m_options.retake_slower_pct > 0 && speed > 0 && a > speed * (1 + m_options.retake_slower_pct / 100);
    if (slow && take < m_options.retakes && !stopping()) {
      ++m_result.retaken;
      if (m_options.retake_wait_s > 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(m_options.retake_wait_s));
      continue;
    }
    if (slow) ++m_result.kept_slow;
    q.anchors.push_back(a);
    m_kept_anchors.push_back(a);
    return;
  }
}

void point_run::write_point(pending& q) {
  const double anchor_s = anchor_of(q.anchors);
  for (std::size_t r = 0; r < q.rows.size(); ++r) {
    const sample_stats all = combine_passes(q.stats[r]);
    if (r == 0) m_result.sampled_past_max_time += all.extended ? 1 : 0;
    if (m_out.contains(q.rows[r])) continue;  // resume: written by an earlier run
    measurement_row row = make_row(q.rows[r], m_backend, m_device, all);
    row.anchor_s = anchor_s;
    m_out.append(row);
    m_result.rows.push_back(std::move(row));
  }
  if (q.stats.front().size() > 1) m_result.pass_spread_pct.push_back(pass_spread_pct(q.stats.front()));
  if (anchor_s > 0) m_result.anchor_s.push_back(anchor_s);
  q.written = true;
  ++m_result.measured;
}

bool point_run::already_written(const std::vector<point>& rows, int pass) {
  bool present = true;
  for (const point& r : rows) present = present && m_out.contains(r);
  if (!present) return false;
  if (pass == 0) ++m_result.already_present;
  ++m_finished;
  return true;
}

// The rows a block point writes: itself, and for an in_block block its ops.
std::vector<point> rows_of(const point& p) {
  std::vector<point> rows = {p};
  if (p.timing != timing_mode::in_block) return rows;
  if (!kernels::is_block(p.op) || p.block != p.op)
    throw input_error("", "op", std::string(kernels::to_string(p.op)) + ": in_block points are blocks");
  for (const kernels::op op : block_ops(p)) {
    point o = p;
    o.op = op;
    rows.push_back(o);
  }
  return rows;
}

void point_run::measure_block_point(const point& p, const workspace_plan& plan, std::size_t step, pending& q) {
  if (!m_ws || m_ws_index != plan.steps[step].workspace) {
    m_ws.reset();  // free the previous buffers before allocating the next
    m_ws_index = plan.steps[step].workspace;
    const point& shape = plan.workspaces[m_ws_index];
    kernels::workspace_options wo;
    wo.seed = m_options.seed;
    wo.input_copies = m_options.input_copies;
    wo.fused_attention = shape.attention == attention_impl::fused;
    wo.training = kernels::needs_training_state(shape.op);
    wo.recompute = shape.recompute;
    const auto made = std::chrono::steady_clock::now();
    m_ws = m_be.make_workspace(shape.shape, shape.type, wo);
    ++m_result.workspaces_made;
    m_result.setup_s += seconds_since(made);
  }
  kernels::workspace& w = *m_ws;
  if (m_device.empty()) m_device = m_be.device();
  const auto sampling = std::chrono::steady_clock::now();
  // The take kept (anchored may measure the point again): its samples go into q after.
  block_samples samples;
  sample_stats isolated;
  anchored(q, [&] {
    if (p.timing == timing_mode::in_block)
      samples = sample_in_block(m_be, p, w, m_options.rule, &m_result.dropped_throttled);
    else
      isolated = measure([&] { return time_once(m_be, p.op, w, &m_result.dropped_throttled); }, m_options.rule);
  });
  if (p.timing == timing_mode::in_block) {
    q.stats[0].push_back(samples.stats);
    for (std::size_t k = 0; k < samples.ops.size(); ++k) q.stats[k + 1].push_back(summarize(samples.op_s[k]));
    if (m_options.keep_block_samples) m_result.in_block_samples.push_back(std::move(samples));
  } else {
    q.stats[0].push_back(isolated);
  }
  count_take(sampling);
}

void point_run::run_blocks(const std::vector<point>& block_points) {
  const workspace_plan plan = plan_workspaces(block_points);
  std::vector<pending> kept(plan.steps.size());
  try {
    for (int pass = 0; pass < m_passes && !m_result.interrupted; ++pass) {
      const bool last_pass = pass + 1 == m_passes;
      m_ws.reset();  // each pass makes its workspaces again
      m_ws_index = plan.workspaces.size();
      for (std::size_t i = 0; i < plan.steps.size(); ++i) {
        const point& p = block_points[plan.steps[i].point];
        if (stopping()) {
          m_result.interrupted = true;
          break;
        }
        std::vector<point> rows = rows_of(p);
        if (already_written(rows, pass)) continue;
        if (!m_out.accepts(p.timing))
          throw input_error("", "timing",
                            "the measurements file has no timing/block columns (an old header): it can take only "
                            "isolated rows; write in_block rows to a new file");
        report(&p);
        pending& q = kept[i];
        if (q.rows.empty()) {
          q.stats.resize(rows.size());
          q.rows = std::move(rows);
        }
        measure_block_point(p, plan, i, q);
        if (last_pass) write_point(q);
      }
    }
  } catch (...) {
    write_unwritten(kept);
    throw;
  }
  write_unwritten(kept);
  m_ws.reset();
}

void point_run::measure_decode_point(const point& p, pending& q) {
  const auto made = std::chrono::steady_clock::now();
  const kernels::decode_shape shape = decode_shape_of(p);
  std::unique_ptr<kernels::decode_state> st = m_options.make_decode(
      shape, kernels::make_decode_weights(shape, m_options.seed), p.type, in_cuda_graph(p.decode_routing));
  const decode_lengths lengths = decode_lengths_of(p);
  st->fill_cache(lengths.dense, lengths.routed, m_options.seed + 1);
  // Rotating new-token inputs, one set per input copy.
  std::vector<std::vector<float>> inputs;
  for (int c = 0; c < std::max(1, m_options.input_copies); ++c) {
    std::vector<float> x(static_cast<std::size_t>(shape.batch * shape.d_model));
    kernels::fill_normal(x, m_options.seed, 3000 + static_cast<std::uint64_t>(c), 0.0, 1.0, 0,
                         static_cast<std::int64_t>(x.size()));
    inputs.push_back(std::move(x));
  }
  kernels::decode_decisions forced;
  forced.from = kernels::decode_decisions::source::forced_count;
  forced.count = decode_routed_count(p);
  ++m_result.workspaces_made;
  m_result.setup_s += seconds_since(made);
  if (m_device.empty()) m_device = m_be.device();
  const auto sampling = std::chrono::steady_clock::now();
  std::size_t next = 0;
  // A cold sample costs an eviction that the sampled time does not count: bound the samples
  // by count, not by sampled time.
  stop_rule rule = m_options.rule;
  if (p.op != kernels::op::decode_step) {
    rule.min_time_s = 0;
    rule.min_samples = std::max(rule.min_samples, 10);
    rule.max_samples = std::min(rule.max_samples, 40);
  }
  sample_stats stats;
  anchored(q, [&] {
    stats = measure(
        [&] {
          st->set_input(inputs[next++ % inputs.size()]);
          if (p.op != kernels::op::decode_step) {
            m_be.flush_cache();
            m_be.synchronize();
            if (m_backend == backend_kind::cpu) evict_host_caches();
          }
          const auto t0 = std::chrono::steady_clock::now();
          st->step(forced, false);
          st->synchronize();
          return seconds_since(t0);
        },
        rule);
  });
  q.stats[0].push_back(stats);
  count_take(sampling);
}

void point_run::run_decode(const std::vector<point>& decode_points) {
  std::vector<pending> kept(decode_points.size());
  for (std::size_t i = 0; i < decode_points.size(); ++i) {
    kept[i].rows = {decode_points[i]};
    kept[i].stats.resize(1);
  }
  try {
    for (int pass = 0; pass < m_passes && !m_result.interrupted; ++pass) {
      const bool last_pass = pass + 1 == m_passes;
      for (std::size_t i = 0; i < decode_points.size() && !m_result.interrupted; ++i) {
        const point& p = decode_points[i];
        if (stopping()) {
          m_result.interrupted = true;
          break;
        }
        if (already_written({p}, pass)) continue;
        report(&p);
        measure_decode_point(p, kept[i]);
        if (last_pass) write_point(kept[i]);
      }
    }
  } catch (...) {
    write_unwritten(kept);
    throw;
  }
  write_unwritten(kept);
}

}  // namespace

run_result run_points(kernels::backend& be, const std::vector<point>& points, measurement_writer& out,
                      const run_options& options) {
  // Decode points run on decode states, after the others (decode_runner.hpp).
  std::vector<point> block_points, decode_points;
  for (const point& p : points) (kernels::is_decode(p.op) ? decode_points : block_points).push_back(p);
  if (!decode_points.empty() && !options.make_decode)
    throw input_error("", "op", "decode points need a decode backend (this run has none)");
  point_run run(be, out, options, points.size());
  run.run_blocks(block_points);
  run.run_decode(decode_points);
  return run.finish();
}

}  // namespace modsim::profiler
