#include "profiler/runner.hpp"

#include <chrono>
#include <memory>

#include "sim/error.hpp"

namespace modsim::profiler {
namespace {

bool same_workspace_shape(const point& a, const point& b) {
  const kernels::block_shape& x = a.shape;
  const kernels::block_shape& y = b.shape;
  return a.type == b.type && x.batch == y.batch && x.seq_len == y.seq_len && x.d_model == y.d_model &&
         x.n_heads == y.n_heads && x.n_kv_heads == y.n_kv_heads && x.d_head == y.d_head && x.d_ff == y.d_ff &&
         x.mlp == y.mlp && x.capacity == y.capacity && x.variant == y.variant && x.experts == y.experts &&
         x.top_k == y.top_k && x.noop_experts == y.noop_experts && x.capacity_factor == y.capacity_factor;
}

}  // namespace

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
  out.ops = block_op_names(p);
  out.op_s.resize(out.ops.size());
  std::vector<kernels::backend::op_time> times;
  auto check_ops = [&] {
    bool same = times.size() == out.ops.size();
    for (std::size_t i = 0; same && i < times.size(); ++i) same = kernels::to_string(times[i].o) == out.ops[i];
    if (same) return;
    std::string ran, listed;
    for (const auto& t : times) ran += " " + std::string(kernels::to_string(t.o));
    for (const auto& o : out.ops) listed += " " + o;
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
  const auto start = std::chrono::steady_clock::now();
  auto report = [&](std::size_t done, const point* current) {
    if (!options.on_progress) return;
    run_progress p;
    p.done = done;
    p.total = points.size();
    p.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    p.current = current;
    options.on_progress(p);
  };
  std::unique_ptr<kernels::workspace> ws;
  const point* ws_point = nullptr;
  kernels::workspace_options wo;
  wo.seed = options.seed;
  wo.input_copies = options.input_copies;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const point& p = points[i];
    if (options.stop && options.stop->load()) {
      result.interrupted = true;
      break;
    }
    // The rows this point writes: itself, and for an in_block block its ops.
    std::vector<point> rows_of_point = {p};
    if (p.timing == timing_mode::in_block) {
      if (!kernels::is_block(p.op) || p.block != p.op)
        throw input_error("", "op", std::string(kernels::to_string(p.op)) + ": in_block points are blocks");
      for (const std::string& name : block_op_names(p)) {
        point o = p;
        o.op = kernels::parse_op(name);
        rows_of_point.push_back(o);
      }
    }
    bool present = true;
    for (const point& r : rows_of_point) present = present && out.contains(r);
    if (present) {
      ++result.already_present;
      continue;
    }
    if (!out.accepts(p.timing))
      throw input_error("", "timing",
                        "the measurements file has no timing/block columns (an old header): it can take only "
                        "isolated rows; write in_block rows to a new file");
    report(i, &p);
    if (!ws || !ws_point || !same_workspace_shape(*ws_point, p)) {
      ws.reset();  // free the previous buffers before allocating the next
      ws = be.make_workspace(p.shape, p.type, wo);
      ws_point = &p;
    }
    kernels::workspace& w = *ws;
    const std::string backend_name(be.name());
    const std::string device = be.device();
    auto write = [&](const point& r, const sample_stats& stats) {
      if (out.contains(r)) return;  // resume: written by an earlier run
      measurement_row row = make_row(r, backend_name, device, stats);
      out.append(row);
      result.rows.push_back(std::move(row));
    };
    if (p.timing == timing_mode::in_block) {
      block_samples samples = sample_in_block(be, p, w, options.rule, &result.dropped_throttled);
      write(p, samples.stats);
      for (std::size_t k = 0; k < samples.ops.size(); ++k) write(rows_of_point[k + 1], summarize(samples.op_s[k]));
      if (options.keep_block_samples) result.in_block_samples.push_back(std::move(samples));
    } else {
      write(p, measure([&] { return time_once(be, p.op, w, &result.dropped_throttled); }, options.rule));
    }
    ++result.measured;
  }
  report(points.size(), nullptr);
  return result;
}

}  // namespace modsim::profiler
