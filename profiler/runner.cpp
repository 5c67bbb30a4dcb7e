#include "profiler/runner.hpp"

#include <chrono>
#include <memory>

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
    if (out.contains(p)) {
      ++result.already_present;
      continue;
    }
    report(i, &p);
    if (!ws || !ws_point || !same_workspace_shape(*ws_point, p)) {
      ws.reset();  // free the previous buffers before allocating the next
      ws = be.make_workspace(p.shape, p.type, wo);
      ws_point = &p;
    }
    kernels::workspace& w = *ws;
    const sample_stats stats = measure([&] { return time_once(be, p.op, w, &result.dropped_throttled); }, options.rule);
    measurement_row row = make_row(p, std::string(be.name()), be.device(), stats);
    out.append(row);
    result.rows.push_back(std::move(row));
    ++result.measured;
  }
  report(points.size(), nullptr);
  return result;
}

}  // namespace modsim::profiler
