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
         a.attention == b.attention;
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
         p.shape.variant == kernels::mode_variant::none;
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
      while (host < buckets.size() && buckets[host].shape.shape.variant != kernels::mode_variant::none) ++host;
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
    throw runtime_error(std::string(be.name()) + " backend: " + std::string(kernels::to_string(p.block)) + " ran ops" +
                        ran + "; sim/flops lists" + listed);
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

run_result run_points(kernels::backend& be, const std::vector<point>& points, measurement_writer& out,
                      const run_options& options) {
  run_result result;
  const int passes = std::max(1, options.passes);
  const auto start = std::chrono::steady_clock::now();
  // What has been finished, counted as it happens: a stopped run reports what it measured.
  std::size_t finished = 0, measured_takes = 0;
  auto report = [&](const point* current) {
    if (!options.on_progress) return;
    run_progress p;
    p.done = finished;
    p.measured = measured_takes;
    p.total = points.size() * static_cast<std::size_t>(passes);
    p.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    p.current = current;
    p.retaken = result.retaken;
    options.on_progress(p);
  };
  // Decode points run on decode states, after the others (decode_runner.hpp).
  std::vector<point> block_points, decode_points;
  for (const point& p : points) (kernels::is_decode(p.op) ? decode_points : block_points).push_back(p);
  if (!decode_points.empty() && !options.make_decode)
    throw input_error("", "op", "decode points need a decode backend (this run has none)");
  const workspace_plan plan = plan_workspaces(block_points);
  std::unique_ptr<kernels::workspace> ws;
  std::size_t ws_index = plan.workspaces.size();  // none yet
  kernels::workspace_options wo;
  wo.seed = options.seed;
  wo.input_copies = options.input_copies;
  const std::string backend_name(be.name());
  std::string device;
  // With several passes a point's rows are written in the last one, from every pass's stats
  // (combine_passes); the passes before keep them here. rows[0] is the point itself.
  struct pending {
    std::vector<point> rows;
    std::vector<std::vector<sample_stats>> stats;  // stats[row][pass]
    std::vector<double> anchors;                   // the anchor of each pass (with options.anchor)
    bool written = false;
  };
  // The anchor, made at the first point measured.
  std::unique_ptr<anchor> anchor_block;
  auto anchor_samples = [&]() -> std::vector<double> {
    if (!options.anchor) return {};
    if (!anchor_block) {
      anchor_block = std::make_unique<anchor>(be, options.seed);
      result.setup_s += anchor_block->setup_s();
    }
    return anchor_block->sample();
  };
  // The anchors of the takes kept so far, the last k_speed_window of which set the speed a
  // take is compared with (their median; none before k_speed_min of them).
  std::vector<double> kept_anchors;
  auto recent_speed = [&]() -> double {
    if (kept_anchors.size() < static_cast<std::size_t>(k_speed_min)) return 0;
    const std::size_t n = std::min(kept_anchors.size(), static_cast<std::size_t>(k_speed_window));
    return anchor_of(std::vector<double>(kept_anchors.end() - static_cast<std::ptrdiff_t>(n), kept_anchors.end()));
  };
  // Times `measure_point` between two takes of the anchor and keeps their median in q. A take
  // whose anchor ran more than options.retake_slower_pct slower than the recent speed fell in
  // a slow spell of the machine: it is measured again (measure_point overwrites what the take
  // before left), up to options.retakes times, the last take kept whatever its speed.
  auto anchored = [&](auto& q, auto&& measure_point) {
    for (int take = 0;; ++take) {
      std::vector<double> around = anchor_samples();
      measure_point();
      for (const double t : anchor_samples()) around.push_back(t);
      if (around.empty()) return;
      const double a = anchor_of(std::move(around));
      const double speed = recent_speed();
      const bool slow = options.retake_slower_pct > 0 && speed > 0 && a > speed * (1 + options.retake_slower_pct / 100);
      const bool stopping = options.stop && options.stop->load();
      if (slow && take < options.retakes && !stopping) {
        ++result.retaken;
        if (options.retake_wait_s > 0)
          std::this_thread::sleep_for(std::chrono::duration<double>(options.retake_wait_s));
        continue;
      }
      if (slow) ++result.kept_slow;
      q.anchors.push_back(a);
      kept_anchors.push_back(a);
      return;
    }
  };
  auto write_point = [&](pending& q) {
    const double anchor_s = anchor_of(q.anchors);
    for (std::size_t r = 0; r < q.rows.size(); ++r) {
      const sample_stats all = combine_passes(q.stats[r]);
      if (r == 0) result.sampled_past_max_time += all.extended ? 1 : 0;
      if (out.contains(q.rows[r])) continue;  // resume: written by an earlier run
      measurement_row row = make_row(q.rows[r], backend_name, device, all);
      row.anchor_s = anchor_s;
      out.append(row);
      result.rows.push_back(std::move(row));
    }
    if (q.stats.front().size() > 1) result.pass_spread_pct.push_back(pass_spread_pct(q.stats.front()));
    if (anchor_s > 0) result.anchor_s.push_back(anchor_s);
    q.written = true;
    ++result.measured;
  };
  // Stopped (or failed) before the last pass: the points measured so far are written with the
  // passes they had (their samples column says how many samples), so nothing measured is lost.
  auto write_unwritten = [&](std::vector<pending>& all) {
    for (pending& q : all)
      if (!q.written && !q.stats.empty() && !q.stats.front().empty()) write_point(q);
  };
  std::vector<pending> kept(plan.steps.size());
  try {
    for (int pass = 0; pass < passes && !result.interrupted; ++pass) {
      const bool last_pass = pass + 1 == passes;
      ws.reset();  // each pass makes its workspaces again
      ws_index = plan.workspaces.size();
      for (std::size_t i = 0; i < plan.steps.size(); ++i) {
        const point& p = block_points[plan.steps[i].point];
        if (options.stop && options.stop->load()) {
          result.interrupted = true;
          break;
        }
        // The rows this point writes: itself, and for an in_block block its ops.
        std::vector<point> rows_of_point = {p};
        if (p.timing == timing_mode::in_block) {
          if (!kernels::is_block(p.op) || p.block != p.op)
            throw input_error("", "op", std::string(kernels::to_string(p.op)) + ": in_block points are blocks");
          for (const kernels::op op : block_ops(p)) {
            point o = p;
            o.op = op;
            rows_of_point.push_back(o);
          }
        }
        bool present = true;
        for (const point& r : rows_of_point) present = present && out.contains(r);
        if (present) {
          if (pass == 0) ++result.already_present;
          ++finished;
          continue;
        }
        if (!out.accepts(p.timing))
          throw input_error("", "timing",
                            "the measurements file has no timing/block columns (an old header): it can take only "
                            "isolated rows; write in_block rows to a new file");
        report(&p);
        if (!ws || ws_index != plan.steps[i].workspace) {
          ws.reset();  // free the previous buffers before allocating the next
          ws_index = plan.steps[i].workspace;
          const point& shape = plan.workspaces[ws_index];
          wo.fused_attention = shape.attention == attention_impl::fused;
          const auto made = std::chrono::steady_clock::now();
          ws = be.make_workspace(shape.shape, shape.type, wo);
          ++result.workspaces_made;
          result.setup_s += seconds_since(made);
        }
        kernels::workspace& w = *ws;
        if (device.empty()) device = be.device();  // once: a CUDA device query takes milliseconds
        pending& q = kept[i];
        if (q.rows.empty()) {
          q.stats.resize(rows_of_point.size());
          q.rows = std::move(rows_of_point);
        }
        const auto sampling = std::chrono::steady_clock::now();
        // The take kept (anchored may measure the point again): its samples go into q after.
        block_samples samples;
        sample_stats isolated;
        anchored(q, [&] {
          if (p.timing == timing_mode::in_block)
            samples = sample_in_block(be, p, w, options.rule, &result.dropped_throttled);
          else
            isolated = measure([&] { return time_once(be, p.op, w, &result.dropped_throttled); }, options.rule);
        });
        if (p.timing == timing_mode::in_block) {
          q.stats[0].push_back(samples.stats);
          for (std::size_t k = 0; k < samples.ops.size(); ++k) q.stats[k + 1].push_back(summarize(samples.op_s[k]));
          if (options.keep_block_samples) result.in_block_samples.push_back(std::move(samples));
        } else {
          q.stats[0].push_back(isolated);
        }
        result.sampling_s += seconds_since(sampling);
        ++finished;
        ++measured_takes;
        if (last_pass) write_point(q);
      }
    }
  } catch (...) {
    write_unwritten(kept);
    throw;
  }
  write_unwritten(kept);

  std::vector<pending> decode_kept(decode_points.size());
  for (std::size_t i = 0; i < decode_points.size(); ++i) {
    decode_kept[i].rows = {decode_points[i]};
    decode_kept[i].stats.resize(1);
  }
  try {
    for (int pass = 0; pass < passes && !result.interrupted; ++pass) {
      const bool last_pass = pass + 1 == passes;
      for (std::size_t i = 0; i < decode_points.size() && !result.interrupted; ++i) {
        const point& p = decode_points[i];
        if (options.stop && options.stop->load()) {
          result.interrupted = true;
          break;
        }
        if (out.contains(p)) {
          if (pass == 0) ++result.already_present;
          ++finished;
          continue;
        }
        report(&p);
        const auto made = std::chrono::steady_clock::now();
        const kernels::decode_shape shape = decode_shape_of(p);
        std::unique_ptr<kernels::decode_state> st = options.make_decode(
            shape, kernels::make_decode_weights(shape, options.seed), p.type, p.decode_routing == "graph");
        const decode_lengths lengths = decode_lengths_of(p);
        st->fill_cache(lengths.dense, lengths.routed, options.seed + 1);
        // Rotating new-token inputs, one set per input copy.
        std::vector<std::vector<float>> inputs;
        for (int c = 0; c < std::max(1, options.input_copies); ++c) {
          std::vector<float> x(static_cast<std::size_t>(shape.batch * shape.d_model));
          kernels::fill_normal(x, options.seed, 3000 + static_cast<std::uint64_t>(c), 0.0, 1.0, 0,
                               static_cast<std::int64_t>(x.size()));
          inputs.push_back(std::move(x));
        }
        kernels::decode_decisions forced;
        forced.from = kernels::decode_decisions::source::forced_count;
        forced.count = decode_routed_count(p);
        ++result.workspaces_made;
        result.setup_s += seconds_since(made);
        if (device.empty()) device = be.device();
        const auto sampling = std::chrono::steady_clock::now();
        std::size_t next = 0;
        // A cold sample costs an eviction that the sampled time does not count: bound the samples
        // by count, not by sampled time.
        stop_rule rule = options.rule;
        if (p.op != kernels::op::decode_step) {
          rule.min_time_s = 0;
          rule.min_samples = std::max(rule.min_samples, 10);
          rule.max_samples = std::min(rule.max_samples, 40);
        }
        sample_stats stats;
        anchored(decode_kept[i], [&] {
          stats = measure(
              [&] {
                st->set_input(inputs[next++ % inputs.size()]);
                if (p.op != kernels::op::decode_step) {
                  be.flush_cache();
                  be.synchronize();
                  if (backend_name == "cpu") evict_host_caches();
                }
                const auto t0 = std::chrono::steady_clock::now();
                st->step(forced, false);
                st->synchronize();
                return seconds_since(t0);
              },
              rule);
        });
        decode_kept[i].stats[0].push_back(stats);
        result.sampling_s += seconds_since(sampling);
        ++finished;
        ++measured_takes;
        if (last_pass) write_point(decode_kept[i]);
      }
    }
  } catch (...) {
    write_unwritten(decode_kept);
    throw;
  }
  write_unwritten(decode_kept);
  report(nullptr);
  return result;
}

}  // namespace modsim::profiler
