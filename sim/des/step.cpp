#include "sim/des/step.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace modsim::sim::des {

double rng::exponential(double mean) { return -mean * std::log1p(-uniform()); }

std::int64_t rng::uniform_int(std::int64_t lo, std::int64_t hi) {
  if (hi <= lo) return lo;
  const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
  // Rejection sampling: no modulo bias.
  const std::uint64_t limit = span == 0 ? 0 : (~std::uint64_t{0} / span) * span;
  std::uint64_t x = m_gen();
  while (span != 0 && x >= limit) x = m_gen();
  return lo + static_cast<std::int64_t>(span == 0 ? x : x % span);
}

std::vector<layer_info> resolve_layers(const model_spec& model) {
  std::vector<layer_info> out;
  for (const layer_routing& r : route_layers(model)) {
    layer_info li;
    li.index = r.index;
    li.mod_routed = r.mod_routed;
    li.capacity = r.mod_routed ? r.capacity : 1.0;
    li.moe = r.moe;
    li.noop_experts = r.noop_experts;
    out.push_back(li);
  }
  return out;
}

namespace {

// Dense memo tables cover T below this.
constexpr std::int64_t k_dense_T = 16384;

kernel backward_of(kernel k) {
  // The backward of an op where the device model has no backward_time_of: twice its forward
  // work (gradients of inputs and of weights).
  k.backward = true;
  k.device_s *= 2;
  k.launches *= 2;
  k.matmul_flops *= 2;
  k.other_flops *= 2;
  k.bytes *= 2;
  k.wasted_matmul_flops *= 2;
  return k;
}

}  // namespace

std::size_t step_builder::memo_hash::operator()(const memo_key& k) const {
  std::uint64_t h = static_cast<std::uint64_t>(k.table) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<std::uint64_t>(k.T) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return static_cast<std::size_t>(h);
}

step_builder::step_builder(const model_spec& model, dtype t, device_model dev)
    : m_model(model), m_type(t), m_dev(std::move(dev)), m_layers(resolve_layers(model)) {
  if (!m_dev.time_of) throw runtime_error("des::step_builder: the device model has no time_of");
  workload w;
  w.batch = 1;
  w.seq_len = 1;
  w.type = t;
  m_base = shape_of(model, w);
  // The attention formulas are affine in L at n = 1: a = c(1) - (c(2) - c(1)), b = c(2) - c(1).
  const std::array<modsim::op, 3> attn = {modsim::op::attn_scores, modsim::op::attn_softmax, modsim::op::attn_values};
  for (std::size_t i = 0; i < attn.size(); ++i) {
    op_shape s = m_base;
    s.batch = 1;
    s.tokens = 1;
    s.seq_len = 1;
    s.window = 0;  // the affine parts; callers pass keys already within the window (attended)
    s.context = 1;
    const op_cost c1 = cost_of(attn[i], s);
    s.context = 2;
    const op_cost c2 = cost_of(attn[i], s);
    m_attn_b[i] = {attn[i], c2.matmul_flops - c1.matmul_flops, c2.other_flops - c1.other_flops, c2.bytes - c1.bytes};
    m_attn_a[i] = {attn[i], c1.matmul_flops - m_attn_b[i].matmul_flops, c1.other_flops - m_attn_b[i].other_flops,
                   c1.bytes - m_attn_b[i].bytes};
  }
  m_dense.resize(2 * op_table().size());
}

kernel step_builder::make(const op_cost& c, const op_shape& s, modsim::op id, int layer, std::int64_t tokens) const {
  const op_time t = m_dev.time_of(c, s);
  kernel k;
  k.op = id;
  k.layer = layer;
  k.device_s = t.time_s;
  k.launches = t.kernels;
  k.tokens = tokens;
  k.matmul_flops = c.matmul_flops;
  k.other_flops = c.other_flops;
  k.bytes = c.bytes;
  k.roofline_s = t.roofline_s;
  k.memory_bound = t.memory_bound() || c.matmul_flops == 0;
  k.calibrated = t.calibrated;
  return k;
}

kernel step_builder::token_op(modsim::op id, std::int64_t T, int layer) const {
  // Ops whose cost depends only on the T rows they compute (and the no-op experts).
  const int noop = layer >= 0 ? m_layers[static_cast<std::size_t>(layer)].noop_experts : 0;
  const int table = 2 * static_cast<int>(id) + (noop > 0 ? 1 : 0);
  timed* e = nullptr;
  if (T < k_dense_T) {
    std::vector<timed>& d = m_dense[static_cast<std::size_t>(table)];
    if (static_cast<std::int64_t>(d.size()) <= T) d.resize(static_cast<std::size_t>(std::min(k_dense_T, 2 * T + 64)));
    e = &d[static_cast<std::size_t>(T)];
  } else {
    e = &m_sparse[memo_key{table, T}];
  }
  if (!e->set) {
    op_shape s = m_base;
    s.batch = 1;
    s.tokens = T;
    s.seq_len = T;
    s.noop_experts = noop;
    const op_cost c = cost_of(id, s);
    const op_time t = m_dev.time_of(c, s);
    *e = timed{t.time_s,
               t.kernels,
               c.matmul_flops,
               c.other_flops,
               c.bytes,
               t.roofline_s,
               t.memory_bound() || c.matmul_flops == 0,
               t.calibrated,
               true};
  }
  kernel k;
  k.op = id;
  k.layer = layer;
  k.device_s = e->time_s;
  k.launches = e->kernels;
  k.tokens = T;
  k.matmul_flops = e->matmul;
  k.other_flops = e->other;
  k.bytes = e->bytes;
  k.roofline_s = e->roofline_s;
  k.memory_bound = e->memory_bound;
  k.calibrated = e->calibrated;
  return k;
}

kernel step_builder::attention_op(modsim::op id, const layer_load& l, bool padded, int layer,
                                  std::int64_t* matmul_unpadded) const {
  std::int64_t m = 0, o = 0, by = 0;  // matmul FLOPs, other FLOPs, bytes
  std::int64_t parts = 0, queries = 0, query_keys = 0;
  op_shape s = m_base;
  s.batch = 1;
  if (!l.prefill.empty()) {
    for (const prefill_part& p : l.prefill) {
      if (p.block_tokens <= 0) continue;
      s.tokens = p.block_tokens;
      s.seq_len = p.tokens;
      s.context = p.keys;
      const op_cost c = cost_of(id, s);
      m += c.matmul_flops;
      o += c.other_flops;
      by += c.bytes;
      ++parts;
      queries += p.block_tokens;
      query_keys += p.block_tokens * p.keys;
    }
  }
  // One query over L keys costs a + b·L, so the decode rows cost rows·a + b·ΣL exactly.
  const std::size_t ai = id == modsim::op::attn_scores ? 0 : id == modsim::op::attn_softmax ? 1 : 2;
  const op_cost& a = m_attn_a[ai];
  const op_cost& b = m_attn_b[ai];
  const auto add_rows = [&](std::int64_t rows, std::int64_t keys) {
    m += rows * a.matmul_flops + keys * b.matmul_flops;
    o += rows * a.other_flops + keys * b.other_flops;
    by += rows * a.bytes + keys * b.bytes;
    parts += rows;
    queries += rows;
    query_keys += keys;
  };
  add_rows(l.decode_routed, l.decode_keys);
  *matmul_unpadded = m;
  if (padded && l.pad_slots > l.decode_routed) {
    const std::int64_t rows = l.pad_slots - l.decode_routed;
    add_rows(rows, rows * l.pad_keys);
  }
  const op_cost total{id, m, o, by};
  // The shape the time model sees: the mean query count and key count per sequence.
  s.batch = std::max<std::int64_t>(parts, 1);
  s.tokens = std::max<std::int64_t>(1, (queries + s.batch / 2) / s.batch);
  s.seq_len = s.tokens;
  s.context = std::max<std::int64_t>(1, queries > 0 ? (query_keys + queries / 2) / queries : 1);
  return make(total, s, id, layer, queries);
}

void step_builder::append_layer(std::vector<kernel>& out, const layer_info& info, const layer_load& l,
                                decode_routing routing) const {
  const int layer = info.index;
  std::int64_t sum_n = 0, sum_k = 0;
  for (const prefill_part& p : l.prefill) {
    sum_n += p.tokens;
    sum_k += p.block_tokens;
  }
  const bool decode = l.decode_tokens > 0;
  const bool padded = info.mod_routed && decode && routing == decode_routing::pad;
  std::int64_t decode_rows = l.decode_routed;
  if (padded) decode_rows = std::max(l.pad_slots, l.decode_routed);
  const std::int64_t T = sum_k + decode_rows;
  const std::int64_t T_used = sum_k + l.decode_routed;  // rows that are not padding

  auto token_wise = [&](modsim::op id) {
    kernel k = token_op(id, T, layer);
    if (T_used != T)
      k.wasted_matmul_flops = k.matmul_flops - (T_used > 0 ? token_op(id, T_used, layer).matmul_flops : 0);
    out.push_back(std::move(k));
  };
  auto attention = [&](modsim::op id) {
    std::int64_t unpadded = 0;
    kernel k = attention_op(id, l, padded, layer, &unpadded);
    k.wasted_matmul_flops = k.matmul_flops - unpadded;
    out.push_back(std::move(k));
  };
  op_shape prefill = m_base;  // the routing decision over the prefill chunks' n tokens
  prefill.batch = 1;
  prefill.seq_len = sum_n;
  prefill.tokens = sum_k;

  // The layer's ops in sim/model/flops' order (layer_ops); each runs at this step's shapes.
  for (const modsim::op id : layer_ops({info.mod_routed, info.moe}, m_model.mlp)) {
    switch (id) {
      case modsim::op::router:
        if (sum_n > 0) out.push_back(make(ops::router(prefill), prefill, id, layer, sum_n));
        break;
      case modsim::op::topk:
        if (sum_n > 0) out.push_back(make(ops::topk(prefill), prefill, id, layer, sum_n));
        // Decode tokens: the causal predictor (or the router) decides per token; in
        // synchronising mode the host reads the routed count back before it sizes the block.
        if (decode) {
          const bool by_router = m_model.routing && m_model.routing->inference == inference_routing::router;
          out.push_back(token_op(by_router ? modsim::op::router : modsim::op::predictor, l.decode_tokens, layer));
          if (routing == decode_routing::sync) {
            kernel k;
            k.op = step_op::d2h_sync;
            k.layer = layer;
            k.device_s = m_dev.d2h_sync_s;
            k.launches = 1;
            k.host_waits = true;
            k.tokens = l.decode_tokens;
            k.bytes = 4;
            out.push_back(std::move(k));
          }
        }
        if (T == 0) return;  // no token routed here this step: the host skips the block
        break;
      case modsim::op::attn_scores:
      case modsim::op::attn_softmax:
      case modsim::op::attn_values:
        attention(id);
        break;
      case modsim::op::gather:
      case modsim::op::attn_norm:
      case modsim::op::qkv_proj:
      case modsim::op::out_proj:
      case modsim::op::mlp_norm:
      case modsim::op::mlp_up:
      case modsim::op::mlp_gate:
      case modsim::op::mlp_act:
      case modsim::op::mlp_down:
      case modsim::op::expert_router:
      case modsim::op::experts:
      case modsim::op::scatter:
        token_wise(id);
        break;
      case modsim::op::block_dense:
      case modsim::op::block_mod:
      case modsim::op::layer_mode:
      case modsim::op::predictor:
      case modsim::op::lm_head:
      case modsim::op::decode_dense:
      case modsim::op::decode_mod:
      case modsim::op::decode_step:
      case modsim::op::block_dense_train:
      case modsim::op::block_mod_train:
      case modsim::op::adamw:
        throw runtime_error("des::step_builder: " + std::string(to_string(id)) + " is not an op inside a layer");
    }
  }
}

std::vector<kernel> step_builder::step(const step_load& load, decode_routing routing) const {
  if (load.layers.size() != m_layers.size()) {
    throw runtime_error("des::step_builder::step: the load has " + std::to_string(load.layers.size()) +
                        " layers, the model " + std::to_string(m_layers.size()));
  }
  std::vector<kernel> out;
  out.reserve(m_layers.size() * 18 + 1);
  for (std::size_t i = 0; i < m_layers.size(); ++i) append_layer(out, m_layers[i], load.layers[i], routing);
  if (load.sampled > 0) out.push_back(token_op(modsim::op::lm_head, load.sampled, -1));
  return out;
}

std::vector<kernel> step_builder::forward(const workload& w) const {
  if (w.run == run_mode::decode) {
    throw input_error("", "--mode", "des::step_builder::forward takes forward or train; decode is a serving step");
  }
  workload wf = w;
  wf.type = m_type;
  const op_shape s0 = shape_of(m_model, wf);
  std::vector<kernel> out;
  struct forward_op {
    op_cost cost;
    op_shape shape;
  };
  std::vector<forward_op> ran;  // each kernel's op, for its backward
  for (const layer_info& info : m_layers) {
    op_shape s = s0;
    if (info.mod_routed) s.tokens = routed_tokens(info.capacity, w.seq_len);
    s.noop_experts = info.noop_experts;
    for (const op_cost& c : layer_costs(s, {info.mod_routed, info.moe})) {
      out.push_back(make(c, s, c.op, info.index, s.batch * s.tokens));
      ran.push_back({c, s});
    }
  }
  out.push_back(make(ops::lm_head(s0), s0, modsim::op::lm_head, -1, s0.batch * s0.seq_len));
  ran.push_back({ops::lm_head(s0), s0});
  if (w.run == run_mode::train) {
    // The layers in reverse: each op's recomputation (as sim/cost/predict prices it) then its
    // backward (sim/model/flops' backward FLOPs and bytes, priced by the device's backward_time_of).
    const std::size_t n = out.size();
    for (std::size_t i = n; i-- > 0;) {
      const op_cost& f = ran[i].cost;
      const op_shape& s = ran[i].shape;
      const bool layer_op = out[i].layer >= 0;
      const bool rerun =
          layer_op && (w.recompute == recompute_mode::full ||
                       (w.recompute == recompute_mode::selective && m_dev.attention == attention_impl::unfused &&
                        (f.op == modsim::op::attn_scores || f.op == modsim::op::attn_softmax)));
      if (rerun) {
        kernel r = out[i];
        r.backward = true;
        out.push_back(r);
      }
      if (!m_dev.backward_time_of) {
        out.push_back(backward_of(out[i]));
        continue;
      }
      const op_cost b = ops::backward_of(f.op, s);
      const op_time t = m_dev.backward_time_of(f, b, s);
      if (b.matmul_flops == 0 && b.other_flops == 0 && b.bytes == 0) continue;  // no gradient (topk)
      kernel k = out[i];
      k.backward = true;
      k.device_s = t.time_s;
      k.launches = t.kernels;
      k.matmul_flops = b.matmul_flops;
      k.other_flops = b.other_flops;
      k.bytes = b.bytes;
      k.wasted_matmul_flops = 0;
      k.roofline_s = t.roofline_s;
      k.memory_bound = t.memory_bound() || b.matmul_flops == 0;
      k.calibrated = t.calibrated;
      out.push_back(k);
    }
    if (const std::optional<kernel> o = optimizer(parameter_count(m_model))) out.push_back(*o);
  }
  return out;
}

std::optional<kernel> step_builder::optimizer(std::int64_t params) const {
  if (!m_dev.optimizer_time_of || params <= 0) return std::nullopt;
  const optimizer_cost c = adamw_cost(params, dtype_bytes(m_type));
  const op_time t = m_dev.optimizer_time_of(c);
  kernel k;
  k.op = step_op::optimizer;
  k.layer = -1;  // outside the layers; neither pass's
  k.device_s = t.time_s;
  k.launches = t.kernels;
  k.other_flops = c.other_flops;
  k.bytes = c.bytes;
  k.roofline_s = t.roofline_s;
  k.memory_bound = true;
  k.calibrated = t.calibrated;
  return k;
}

std::int64_t pad_rows(std::optional<double> pad_capacity, double capacity, std::int64_t batch) {
  if (batch <= 0) return 0;
  if (pad_capacity) return routed_tokens(*pad_capacity, batch);
  const double c = std::clamp(capacity, 0.0, 1.0);
  const double b = static_cast<double>(batch);
  const double rows = std::ceil(c * b + 3.0 * std::sqrt(b * c * (1.0 - c)) - 1e-9);
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(rows), 1, batch);
}

void check_pad_capacity(std::optional<double> pad_capacity) {
  if (pad_capacity && !(*pad_capacity > 0 && *pad_capacity <= 1))
    throw input_error("", "--pad-capacity", "must be in (0, 1]");
}

step_load decode_load(const step_builder& b, std::int64_t batch, std::int64_t context, decode_routing routing,
                      std::optional<double> pad_capacity, rng& r, std::vector<std::int64_t>* routed,
                      std::int64_t* decisions) {
  if (batch < 1) throw input_error("", "--batch", "must be >= 1");
  if (context < 0) throw input_error("", "--seq", "must be >= 0");
  step_load load;
  load.sampled = batch;
  load.layers.resize(b.layers().size());
  if (routed) routed->assign(b.layers().size(), 0);
  if (decisions) *decisions = 0;
  for (std::size_t i = 0; i < b.layers().size(); ++i) {
    const layer_info& info = b.layers()[i];
    layer_load& l = load.layers[i];
    l.decode_tokens = batch;
    if (!info.mod_routed) {
      l.decode_routed = batch;
      l.decode_keys = batch * b.attended(context + 1);
    } else {
      const std::int64_t cached = context > 0 ? routed_tokens(info.capacity, context) : 0;
      std::int64_t m = 0;
      for (std::int64_t j = 0; j < batch; ++j) m += r.bernoulli(info.capacity) ? 1 : 0;
      if (decisions) *decisions += batch;
      if (routing == decode_routing::pad) {
        l.pad_slots = pad_rows(pad_capacity, info.capacity, batch);
        l.pad_keys = b.attended(cached + 1);
        m = std::min(m, l.pad_slots);  // tokens beyond the padded size are dropped
      }
      l.decode_routed = m;
      l.decode_keys = m * b.attended(cached + 1);
    }
    if (routed) (*routed)[i] = l.decode_routed;
  }
  return load;
}

}  // namespace modsim::sim::des
