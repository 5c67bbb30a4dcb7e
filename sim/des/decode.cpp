#include "sim/des/decode.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace modsim::sim::des {

double default_pad_capacity(double capacity, std::int64_t batch) {
  if (batch < 1) throw input_error("", "--batch", "must be >= 1");
  return static_cast<double>(pad_rows(std::nullopt, capacity, batch)) / static_cast<double>(batch);
}

model_spec decode_layer_model(int d_model, int n_heads, int n_kv_heads, int d_ff, mlp_kind mlp, bool routed,
                              double capacity, int predictor_hidden) {
  model_spec m;
  m.name = routed ? "decode_mod" : "decode_dense";
  m.d_model = d_model;
  m.n_layers = 1;
  m.n_heads = n_heads;
  m.n_kv_heads = n_kv_heads > 0 ? n_kv_heads : n_heads;
  m.d_head = n_heads > 0 ? d_model / n_heads : 0;
  m.d_ff = d_ff;
  m.vocab_size = 0;
  m.mlp = mlp;
  if (routed) {
    routing_spec r;
    r.capacity = capacity;
    r.sched.kind = schedule_kind::all;
    r.inference = inference_routing::predictor;
    r.predictor_hidden = predictor_hidden;
    m.routing = r;
  }
  return m;
}

step_load forced_decode_load(const step_builder& b, const decode_case& c) {
  if (c.batch < 1) throw input_error("", "batch", "must be >= 1");
  if (c.context < 0) throw input_error("", "seq_len", "the cached context must be >= 0");
  if (c.routed < 0 || c.routed > c.batch) throw input_error("", "capacity", "the routed count must be in [0, batch]");
  step_load load;
  load.sampled = c.lm_head ? c.batch : 0;
  load.layers.resize(b.layers().size());
  for (std::size_t i = 0; i < b.layers().size(); ++i) {
    const layer_info& info = b.layers()[i];
    layer_load& l = load.layers[i];
    l.decode_tokens = c.batch;
    if (!info.mod_routed) {
      l.decode_routed = c.batch;
      l.decode_keys = c.batch * b.attended(c.context + 1);
      continue;
    }
    const std::int64_t cached = c.context > 0 ? routed_tokens(info.capacity, c.context) : 0;
    std::int64_t m = c.routed;
    if (c.routing == decode_routing::pad) {
      l.pad_slots = routed_tokens(c.pad_capacity, c.batch);
      l.pad_keys = b.attended(cached + 1);
      m = std::min(m, l.pad_slots);
    }
    l.decode_routed = m;
    l.decode_keys = m * b.attended(cached + 1);
  }
  return load;
}

decode_case decode_case_of(const measured_sample& p) {
  decode_case c;
  if (p.op == modsim::op::decode_step) {
    if (!p.model) throw input_error(p.where, "model", "decode_step row: model '" + p.model_name + "' is not loaded");
    c.model = *p.model;
  } else if (p.op == modsim::op::decode_dense || p.op == modsim::op::decode_mod) {
    c.model = decode_layer_model(p.d_model, p.n_heads, p.n_kv_heads, p.d_ff, p.mlp, p.op == modsim::op::decode_mod,
                                 p.capacity, p.predictor_hidden);
  } else {
    throw input_error(p.where, "op", "'" + std::string(to_string(p.op)) + "' is not a decode op");
  }
  c.batch = p.batch;
  c.context = p.seq_len;
  c.routing = routing_of(p.decode_routing);
  c.cuda_graph = in_cuda_graph(p.decode_routing);
  c.pad_capacity = p.pad_capacity > 0 ? p.pad_capacity : 1.0;
  const double m = std::round(p.capacity * static_cast<double>(p.batch));
  c.routed = std::clamp<std::int64_t>(static_cast<std::int64_t>(m), 0, p.batch);
  c.lm_head = p.op == modsim::op::decode_step;
  return c;
}

std::vector<kernel> decode_kernels(const decode_case& c, dtype t, op_cost* cost) {
  device_model untimed;
  untimed.time_of = [](const op_cost&, const op_shape&) { return op_time{}; };
  const step_builder b(c.model, t, untimed);
  std::vector<kernel> ks = b.step(forced_decode_load(b, c), c.routing);
  if (cost) {
    *cost = op_cost{};
    for (const kernel& k : ks) {
      cost->matmul_flops += k.matmul_flops;
      cost->other_flops += k.other_flops;
      cost->bytes += k.bytes;
    }
  }
  return ks;
}

timeline decode_timeline(const decode_case& c, dtype t, const device_model& dev) {
  if (c.cuda_graph && c.routing == decode_routing::sync)
    throw input_error("", "decode_routing", "a CUDA graph cannot hold sync routing (it reads the routed count back)");
  const step_builder b(c.model, t, dev);
  exec_options o;
  o.cuda_graph = c.cuda_graph;
  o.record_spans = false;
  return simulate_execution(b.step(forced_decode_load(b, c), c.routing), dev, o);
}

}  // namespace modsim::sim::des
