#include "analysis/sampling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <tuple>
#include <atomic>
#include <future>
#include <thread>

#include "core/error.hpp"
#include "sim/cost/decode_fit.hpp"
#include "sim/model/memory.hpp"

namespace modsim::analysis {

const char* to_string(decode_component c) {
  switch (c) {
    case decode_component::kv_read:
      return "kv_read";
    case decode_component::weight_read:
      return "weight_read";
    case decode_component::predictor:
      return "predictor";
    case decode_component::elementwise:
      return "elementwise";
    case decode_component::sync:
      return "sync";
    case decode_component::launch_host:
      return "launch_host";
  }
  return "?";
}

const char* describe(decode_component c) {
  switch (c) {
    case decode_component::kv_read:
      return "KV reads (attention)";
    case decode_component::weight_read:
      return "weight reads (projections, MLP, LM head)";
    case decode_component::predictor:
      return "predictor and routing (gather, scatter)";
    case decode_component::elementwise:
      return "norms and activations";
    case decode_component::sync:
      return "routed-count sync round trips";
    case decode_component::launch_host:
      return "launches and host (GPU waiting on the host)";
  }
  return "?";
}

double part_of(const decode_breakdown& b, decode_component c) {
  switch (c) {
    case decode_component::kv_read:
      return b.kv_read_s;
    case decode_component::weight_read:
      return b.weight_read_s;
    case decode_component::predictor:
      return b.predictor_s;
    case decode_component::elementwise:
      return b.elementwise_s;
    case decode_component::sync:
      return b.sync_s;
    case decode_component::launch_host:
      return b.launch_host_s;
  }
  return 0;
}

namespace {

namespace des = sim::des;

double& slot_of(decode_breakdown& b, const des::kernel& k) {
  const std::string_view cls = des::kernel_class(k);
  if (cls == "attn_core") return b.kv_read_s;
  if (cls == "routing") return b.predictor_s;
  if (cls == "norm" || k.op == modsim::op::mlp_act) return b.elementwise_s;
  return b.weight_read_s;  // attn_proj, mlp, moe, lm_head
}

decode_breakdown& operator+=(decode_breakdown& a, const decode_breakdown& b) {
  a.kv_read_s += b.kv_read_s;
  a.weight_read_s += b.weight_read_s;
  a.predictor_s += b.predictor_s;
  a.elementwise_s += b.elementwise_s;
  a.sync_s += b.sync_s;
  a.launch_host_s += b.launch_host_s;
  return a;
}

decode_breakdown scaled(decode_breakdown b, double f) {
  b.kv_read_s *= f;
  b.weight_read_s *= f;
  b.predictor_s *= f;
  b.elementwise_s *= f;
  b.sync_s *= f;
  b.launch_host_s *= f;
  return b;
}

bool has_routed_layers(const des::step_builder& b) {
  return std::any_of(b.layers().begin(), b.layers().end(), [](const des::layer_info& l) { return l.mod_routed; });
}

}  // namespace

decode_step decode_step_time(const des::step_builder& b, std::int64_t batch, std::int64_t context,
                             const decode_step_options& o) {
  des::check_pad_capacity(o.pad_capacity);
  decode_step out;
  des::rng rng(o.seed);
  std::vector<std::int64_t> routed;
  const des::step_load load =
      des::decode_load(b, batch, context, o.routing, o.pad_capacity, rng, &routed, &out.decisions);
  for (std::size_t i = 0; i < routed.size(); ++i)
    if (b.layers()[i].mod_routed) out.routed += routed[i];
  std::vector<des::kernel> kernels = b.step(load, o.routing);

  // The breakdown: device time by component, then what the syncs add (the same kernels without
  // the round trips) and what launches and the host add over the device time.
  decode_breakdown& br = out.breakdown;
  std::vector<des::kernel> no_sync;
  no_sync.reserve(kernels.size());
  double device_s = 0;
  for (const des::kernel& k : kernels) {
    if (!k.op.model_op()) continue;  // the routed count's read-back
    slot_of(br, k) += k.device_s;
    device_s += k.device_s;
    no_sync.push_back(k);
  }
  des::exec_options eo;
  eo.cuda_graph = o.cuda_graph;
  eo.record_spans = o.record_spans;
  const bool syncs = no_sync.size() != kernels.size();
  des::exec_options quiet = eo;
  quiet.record_spans = false;
  quiet.by_class = false;
  const double no_sync_s = syncs ? des::simulate_execution(std::move(no_sync), b.device(), quiet).summary.step_s : 0.0;
  out.timeline = des::simulate_execution(std::move(kernels), b.device(), eo);
  const double step_s = out.timeline.summary.step_s;
  const double base_s = syncs ? no_sync_s : step_s;
  br.sync_s = step_s - base_s;
  br.launch_host_s = base_s - device_s;
  return out;
}

mean_decode mean_decode_step(const des::step_builder& b, std::int64_t batch, std::int64_t context,
                             const decode_step_options& o, int draws, bool keep_steps) {
  if (draws < 1) throw input_error("", "draws", "must be >= 1");
  mean_decode m;
  m.draws = has_routed_layers(b) ? draws : 1;
  for (int d = 0; d < m.draws; ++d) {
    decode_step_options od = o;
    od.seed = o.seed + static_cast<std::uint64_t>(d);
    decode_step st = decode_step_time(b, batch, context, od);
    m.step_s += st.step_s();
    m.breakdown += st.breakdown;
    if (keep_steps) m.steps.push_back(std::move(st));
  }
  m.step_s /= m.draws;
  m.breakdown = scaled(m.breakdown, 1.0 / m.draws);
  return m;
}

sim::des::device_model decode_step_device(const sim::cost_model& cost, sim::dtype t) {
  des::device_model dev = sim::decode_device_model(cost, t);
  if (!cost.calibration() || cost.attention_measured()) return dev;
  dev.time_of = [fitted = dev.time_of, own = des::device_model_of(cost, t).time_of](const sim::op_cost& c,
                                                                                    const sim::op_shape& s) {
    return std::string_view(sim::op_class_of(c.op)) == "attn_core" ? own(c, s) : fitted(c, s);
  };
  return dev;
}

decode_step decode_step_time(const sim::model_spec& model, const sim::cost_model& cost, sim::dtype t,
                             std::int64_t batch, std::int64_t context, const decode_step_options& o) {
  const des::step_builder b(model, t, decode_step_device(cost, t));
  return decode_step_time(b, batch, context, o);
}

std::string decode_strategy::name() const {
  return std::string(modsim::to_string(routing)) + (cuda_graph ? "+graphs" : "");
}

namespace {

void check_axis(const std::vector<std::int64_t>& v, const char* key, std::int64_t min) {
  if (v.empty()) throw input_error("", key, "needs at least one value");
  for (std::int64_t x : v)
    if (x < min) throw input_error("", key, fmt::format("{} is out of range (must be >= {})", x, min));
}

// "batch >= 64" when `v` is every batch of `all` from some one on, else the list.
std::string batch_list(const std::vector<std::int64_t>& v, const std::vector<std::int64_t>& all) {
  if (!v.empty() && v.size() < all.size() && std::equal(v.rbegin(), v.rend(), all.rbegin()))
    return "batch >= " + std::to_string(v.front());
  if (v.size() == all.size()) return "every batch";
  std::string s = "batch ";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

// One line per strategy, over the cells that fit in memory: where the target is reached (for
// each context, the smallest batch reaching it), the best cell, the component deciding most
// cells, and how many cells were left out because they do not fit.
std::string verdict_of(const sampling_map& m, const sampling_strategy_map& s) {
  const std::size_t nc = m.contexts.size();
  const std::size_t total = s.cells.size();
  const std::size_t fitting = total - static_cast<std::size_t>(s.excluded);
  std::string line = fmt::format("{}: ", s.strategy.name());
  std::string excluded;
  if (s.excluded > 0) {
    double largest = 0;
    for (const sampling_cell& c : s.cells)
      if (!c.fits) largest = std::max(largest, c.needs_bytes);
    excluded = fmt::format("{} of {} cells excluded: they do not fit in {} (need up to {})", s.excluded, total,
                           sim::format_bytes(m.memory_bytes), sim::format_bytes(largest));
  }
  if (s.best < 0) return line + "no cell fits in memory; " + excluded;
  std::array<int, 6> deciding{};
  for (const sampling_cell& c : s.cells)
    if (c.fits && c.reaches == (s.reached > 0)) ++deciding[static_cast<std::size_t>(c.dominant)];
  const auto most =
      static_cast<decode_component>(std::max_element(deciding.begin(), deciding.end()) - deciding.begin());
  const sampling_cell& best = s.cells[static_cast<std::size_t>(s.best)];
  const std::string cells = s.excluded == 0 ? fmt::format("{} cells", total)
                            : fitting == 1  ? std::string("1 cell that fits in memory")
                                            : fmt::format("{} cells that fit in memory", fitting);
  if (s.reached == 0) {
    line += fmt::format(
        "MoD never reaches {:g}x in the {} (best {:.2f}x, ratio {:.3f}, at batch {}, context {}); what keeps it "
        "above 1/{:g} of the baseline in most cells: {}",
        m.target_speedup, cells, best.speedup(), best.ratio(), best.batch, best.context, m.target_speedup,
        describe(most));
    return excluded.empty() ? line : line + "; " + excluded;
  }
  std::vector<std::string> where;
  for (std::size_t c = 0; c < nc; ++c) {
    std::vector<std::int64_t> batches;
    for (std::size_t b = 0; b < m.batches.size(); ++b)
      if (s.cells[b * nc + c].fits && s.cells[b * nc + c].reaches) batches.push_back(m.batches[b]);
    if (!batches.empty()) where.push_back(fmt::format("context {}: {}", m.contexts[c], batch_list(batches, m.batches)));
  }
  line += fmt::format("MoD reaches {:g}x in {} of {} (", m.target_speedup, s.reached, cells);
  for (std::size_t i = 0; i < where.size(); ++i) line += (i ? "; " : "") + where[i];
  line += fmt::format("); best {:.2f}x (ratio {:.3f}) at batch {}, context {}; the saving comes mostly from {}",
                      best.speedup(), best.ratio(), best.batch, best.context, describe(most));
  return excluded.empty() ? line : line + "; " + excluded;
}

}  // namespace

sampling_map make_sampling_map(const sim::model_spec& model, const sim::model_spec& baseline, bool routing_removed,
                               const sim::cost_model& cost, sim::dtype t, const sampling_request& r) {
  sampling_device dev;
  dev.model = decode_step_device(cost, t);
  dev.name = cost.hardware().name;
  dev.gpu = sim::is_gpu(cost.hardware());
  dev.memory_bytes = cost.hardware().memory_bytes;
  dev.attention = cost.attention();
  return make_sampling_map(model, baseline, routing_removed, dev, t, r);
}

sampling_map make_sampling_map(const sim::model_spec& model, const sim::model_spec& baseline, bool routing_removed,
                               const sampling_device& dev, sim::dtype t, const sampling_request& r) {
  // The one check of the request (the command line's flags are these keys).
  check_axis(r.batches, "--batches", 1);
  check_axis(r.contexts, "--contexts", 1);
  if (r.draws < 1) throw input_error("", "--draws", "must be >= 1");
  if (!(r.target_speedup > 1)) throw input_error("", "--target", "must be > 1 (a speed-up)");
  des::check_pad_capacity(r.pad_capacity);

  sampling_map m;
  m.model_name = model.name;
  m.baseline_name = baseline.name;
  m.baseline_is_routing_removed = routing_removed;
  m.hardware_name = dev.name;
  m.type = t;
  m.memory_bytes = dev.memory_bytes;
  m.target_speedup = r.target_speedup;
  m.draws = r.draws;
  m.pad_capacity = r.pad_capacity;
  m.batches = r.batches;
  m.contexts = r.contexts;
  m.measured = r.measured;
  std::vector<decode_strategy> strategies = r.strategies;
  if (strategies.empty()) {
    strategies = {{decode_routing::sync, false}, {decode_routing::pad, false}};
    if (dev.gpu) strategies.push_back({decode_routing::pad, true});
  }
  const std::size_t nb = r.batches.size(), nc = r.contexts.size();
  // The memory each cell needs: the larger of the model's and the baseline's decode step
  // (sim::footprint_of, as `modsim predict --mode decode`), the same for every strategy.
  std::vector<double> needs(nb * nc);
  std::vector<char> fits(nb * nc);
  for (std::size_t bi = 0; bi < nb; ++bi)
    for (std::size_t ci = 0; ci < nc; ++ci) {
      sim::workload w;
      w.batch = r.batches[bi];
      w.seq_len = r.contexts[ci];
      w.run = sim::run_mode::decode;
      w.type = t;
      const sim::memory_footprint a = sim::footprint_of(model, w, dev.attention);
      const sim::memory_footprint z = sim::footprint_of(baseline, w, dev.attention);
      needs[bi * nc + ci] = std::max(a.total(), z.total());
      fits[bi * nc + ci] = sim::fits_in(a, dev.memory_bytes) && sim::fits_in(z, dev.memory_bytes);
    }
  for (const decode_strategy& s : strategies) {
    sampling_strategy_map sm;
    sm.strategy = s;
    sm.cells.resize(nb * nc);
    m.strategies.push_back(std::move(sm));
  }

  // Rows of the grid (one batch, every context, every strategy) on worker threads, each with
  // step builders of its own (they memoise op times and are not shared between threads).
  unsigned threads = r.threads > 0 ? r.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, nb));
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    const des::step_builder bm(model, t, dev.model);
    const des::step_builder bb(baseline, t, dev.model);
    for (std::size_t bi = next++; bi < nb; bi = next++) {
      for (std::size_t ci = 0; ci < nc; ++ci) {
        for (sampling_strategy_map& sm : m.strategies) {
          sampling_cell& cell = sm.cells[bi * nc + ci];
          cell.batch = r.batches[bi];
          cell.context = r.contexts[ci];
          decode_step_options o;
          o.routing = sm.strategy.routing;
          o.cuda_graph = sm.strategy.cuda_graph;
          o.pad_capacity = r.pad_capacity;
          o.seed = r.seed;
          const mean_decode a = mean_decode_step(bm, cell.batch, cell.context, o, r.draws);
          const mean_decode z = mean_decode_step(bb, cell.batch, cell.context, o, r.draws);
          cell.model_s = a.step_s;
          cell.baseline_s = z.step_s;
          cell.model = a.breakdown;
          cell.baseline = z.breakdown;
          cell.reaches = cell.model_s * r.target_speedup <= cell.baseline_s;
          cell.needs_bytes = needs[bi * nc + ci];
          cell.fits = fits[bi * nc + ci] != 0;
          bool first = true;
          for (decode_component c : decode_components) {
            const double excess = part_of(cell.model, c) - part_of(cell.baseline, c) / r.target_speedup;
            if (first || (cell.reaches ? excess < cell.dominant_s : excess > cell.dominant_s)) {
              cell.dominant = c;
              cell.dominant_s = excess;
              first = false;
            }
          }
        }
      }
    }
  };
  std::vector<std::future<void>> pool;
  for (unsigned i = 1; i < threads; ++i) pool.push_back(std::async(std::launch::async, work));
  work();
  for (auto& f : pool) f.get();

  for (sampling_strategy_map& sm : m.strategies) {
    for (std::size_t i = 0; i < sm.cells.size(); ++i) {
      const sampling_cell& c = sm.cells[i];
      if (!c.fits) {
        ++sm.excluded;
        continue;
      }
      if (c.reaches) ++sm.reached;
      if (sm.best < 0 || c.speedup() > sm.cells[static_cast<std::size_t>(sm.best)].speedup())
        sm.best = static_cast<int>(i);
    }
    m.verdict.push_back(verdict_of(m, sm));
  }
  return m;
}

routing_choice choose_decode_routing(const sampling_map& map, std::int64_t batch, std::int64_t context, bool cuda_graph,
                                     const std::vector<sampling_measurement>& measured) {
  if (map.batches.empty() || map.contexts.empty()) throw runtime_error("choose_decode_routing: an empty map");
  auto nearest = [](const std::vector<std::int64_t>& v, std::int64_t x) {
    // Nearest on a log scale (the axes are powers of two).
    std::size_t best = 0;
    for (std::size_t i = 1; i < v.size(); ++i)
      if (std::abs(std::log(double(std::max<std::int64_t>(v[i], 1)) / double(std::max<std::int64_t>(x, 1)))) <
          std::abs(std::log(double(std::max<std::int64_t>(v[best], 1)) / double(std::max<std::int64_t>(x, 1)))))
        best = i;
    return best;
  };
  const std::size_t bi = nearest(map.batches, batch), ci = nearest(map.contexts, context);
  routing_choice out;
  out.batch = map.batches[bi];
  out.context = map.contexts[ci];
  double sync_s = -1, pad_s = -1;
  for (const sampling_measurement& q : measured) {
    if (q.batch != out.batch || q.context != out.context || !(q.model_s > 0)) continue;
    (q.routing == decode_routing::sync ? sync_s : pad_s) = q.model_s;
  }
  out.measured = sync_s > 0 && pad_s > 0;
  if (!out.measured) {
    sync_s = pad_s = -1;
    for (std::size_t s = 0; s < map.strategies.size(); ++s) {
      const decode_strategy& st = map.strategies[s].strategy;
      const double t = map.cell(s, bi, ci).model_s;
      if (st.routing == decode_routing::sync && (sync_s < 0 || st.cuda_graph == cuda_graph)) sync_s = t;
      if (st.routing == decode_routing::pad && (pad_s < 0 || st.cuda_graph == cuda_graph)) pad_s = t;
    }
  }
  if (sync_s < 0 || pad_s < 0) {
    out.routing = sync_s < 0 ? decode_routing::pad : decode_routing::sync;
    out.other = out.routing == decode_routing::sync ? decode_routing::pad : decode_routing::sync;
    out.step_s = std::max(sync_s, pad_s);
    out.other_step_s = 0;
    return out;
  }
  const bool pad = pad_s < sync_s;
  out.routing = pad ? decode_routing::pad : decode_routing::sync;
  out.other = pad ? decode_routing::sync : decode_routing::pad;
  out.step_s = pad ? pad_s : sync_s;
  out.other_step_s = pad ? sync_s : pad_s;
  return out;
}

namespace {

// Whether two models have the same shape as decode steps see it.
bool same_decode_shape(const sim::model_spec& a, const sim::model_spec& b) {
  const auto kv = [](const sim::model_spec& m) { return m.n_kv_heads > 0 ? m.n_kv_heads : m.n_heads; };
  if (a.d_model != b.d_model || a.n_layers != b.n_layers || a.n_heads != b.n_heads || kv(a) != kv(b) ||
      a.d_ff != b.d_ff || a.vocab_size != b.vocab_size || a.mlp != b.mlp || a.moe.has_value() != b.moe.has_value())
    return false;
  const std::vector<sim::layer_plan> pa = sim::plan_layers(a), pb = sim::plan_layers(b);
  for (std::size_t i = 0; i < pa.size(); ++i)
    if (pa[i].routed != pb[i].routed || (pa[i].routed && std::abs(pa[i].capacity - pb[i].capacity) > 1e-12))
      return false;
  return true;
}

bool routes(const sim::model_spec& m) {
  for (const sim::layer_plan& l : sim::plan_layers(m))
    if (l.routed) return true;
  return false;
}

}  // namespace

std::vector<sampling_measurement> measured_cells(const std::vector<sim::measured_sample>& rows,
                                                 const sim::model_spec& model, const sim::model_spec& baseline) {
  struct key {
    std::int64_t batch, context;
    int routing;
    bool operator<(const key& o) const {
      return std::tie(batch, context, routing) < std::tie(o.batch, o.context, o.routing);
    }
  };
  const bool baseline_routes = routes(baseline);
  std::map<key, double> model_s, baseline_s;
  for (const sim::measured_sample& p : rows) {
    if (p.op != modsim::op::decode_step || !p.model || !(p.median_s > 0)) continue;
    const decode_routing r = routing_of(p.decode_routing);  // a graph row counts as pad
    const key k{p.batch, p.seq_len, static_cast<int>(r)};
    if (same_decode_shape(*p.model, model)) model_s.emplace(k, p.median_s);
    if (same_decode_shape(*p.model, baseline)) baseline_s.emplace(k, p.median_s);
  }
  std::vector<sampling_measurement> out;
  for (const auto& [k, s] : model_s) {
    auto it = baseline_s.find(k);
    if (it == baseline_s.end() && !baseline_routes) {
      // A baseline that routes nothing: any of its rows at this batch and context.
      for (int r : {0, 1})
        if (auto j = baseline_s.find(key{k.batch, k.context, r}); j != baseline_s.end()) it = j;
    }
    if (it == baseline_s.end()) continue;
    sampling_measurement m;
    m.batch = k.batch;
    m.context = k.context;
    m.routing = static_cast<decode_routing>(k.routing);
    m.model_s = s;
    m.baseline_s = it->second;
    out.push_back(m);
  }
  return out;
}

}  // namespace modsim::analysis
