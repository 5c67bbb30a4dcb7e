#include "sim/des/parallel_step.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "core/error.hpp"
#include "sim/model/flops.hpp"
#include "sim/parallel/parallel_predict.hpp"

namespace modsim::sim::des {
namespace {

void add_dependency(kernel& k, std::int32_t on) {
  for (std::int32_t& a : k.after) {
    if (a == on) return;
    if (a < 0) {
      a = on;
      return;
    }
  }
  throw runtime_error("des::parallel_step: kernel " + std::string(to_string(k.op)) + " waits on more than two kernels");
}

bool is(const kernel& k, modsim::op o) { return k.op == o; }

// A communication kernel on `stream` of GPU `device` that waits for kernel `after` (the one whose
// output it moves), moving `bytes` in `seconds`.
kernel comm_kernel(step_op op, int stream, int device, std::int32_t after, double seconds, double bytes, int layer,
                   bool backward, std::int64_t tokens) {
  kernel k;
  k.op = op;
  k.layer = layer;
  k.backward = backward;
  k.stream = stream;
  k.device = device;
  k.device_s = seconds;
  k.launches = 1;
  k.tokens = tokens;
  k.bytes = static_cast<std::int64_t>(std::llround(bytes));
  k.memory_bound = true;
  k.after[0] = after;
  return k;
}

}  // namespace

collective_timer::collective_timer(const model_spec& model, dtype t, const parallel_spec& split,
                                   const hardware_spec& hw)
    : m_model(model), m_e(static_cast<double>(dtype_bytes(t))), m_split(split), m_hw(hw) {}

double collective_timer::timed(collective c, double bytes, int gpus) const {
  return collective_seconds(m_hw, c, bytes, gpus);
}

double collective_timer::send_s(double bytes) const { return timed(collective::send_recv, bytes, 2); }

double collective_timer::gradient_allreduce_s(double bytes) const {
  return dp_allreduce_seconds(m_hw, bytes, m_split.dp, m_split.tp * m_split.pp);
}

std::vector<kernel> collective_timer::add_layer_collectives(std::vector<kernel> ks,
                                                            const std::vector<layer_info>& layers) const {
  const bool tp = m_split.tp > 1, ep = m_split.ep > 1 && m_model.moe.has_value();
  if (!tp && !ep) return ks;
  // Collectives of one size recur at every layer of a step: time each size once.
  std::map<std::tuple<int, std::int64_t, int>, double> memo;
  auto seconds = [&](collective c, double bytes, int gpus) {
    const auto key = std::make_tuple(static_cast<int>(c), static_cast<std::int64_t>(std::llround(bytes)), gpus);
    const auto it = memo.find(key);
    if (it != memo.end()) return it->second;
    return memo[key] = timed(c, bytes, gpus);
  };
  std::vector<kernel> out;
  out.reserve(ks.size() + ks.size() / 3 + 4);
  std::vector<std::int32_t> remap(ks.size(), -1);
  std::int32_t pending = -1;  // the collective the next compute kernel waits for
  auto last = [&] { return static_cast<std::int32_t>(out.size()) - 1; };
  auto push_comm = [&](step_op op, const kernel& src, collective c, double bytes, int gpus) {
    out.push_back(comm_kernel(op, collective_stream, src.device, last(), seconds(c, bytes, gpus), bytes, src.layer,
                              src.backward, src.tokens));
    pending = last();
  };
  auto slots_bytes = [&](const kernel& k) {
    const int noop = k.layer >= 0 ? layers[static_cast<std::size_t>(k.layer)].noop_experts : 0;
    return expert_slots(*m_model.moe, static_cast<double>(k.tokens), noop) * m_model.d_model * m_e;
  };
  for (std::size_t i = 0; i < ks.size(); ++i) {
    kernel k = ks[i];
    const bool experts = is(k, modsim::op::experts);
    if (ep && experts) push_comm(step_op::ep_dispatch, k, collective::all_to_all, slots_bytes(k), m_split.ep);
    for (std::int32_t& a : k.after)
      if (a >= 0) a = remap[static_cast<std::size_t>(a)];
    if (pending >= 0) add_dependency(k, pending);
    pending = -1;
    out.push_back(k);
    remap[i] = last();
    if (ep && experts) push_comm(step_op::ep_combine, k, collective::all_to_all, slots_bytes(k), m_split.ep);
    // Megatron: row-parallel outputs reduce forward, column-parallel inputs' gradients backward.
    const bool reduce = !k.backward ? is(k, modsim::op::out_proj) || is(k, modsim::op::mlp_down) || experts
                                    : is(k, modsim::op::qkv_proj) || is(k, modsim::op::mlp_up) || experts;
    if (tp && reduce)
      push_comm(step_op::tp_all_reduce, k, collective::all_reduce, double(k.tokens) * m_model.d_model * m_e,
                m_split.tp);
  }
  return out;
}

parallel_serving_step::parallel_serving_step(const model_spec& model, dtype t, const parallel_spec& split,
                                             std::vector<int> first_layer, const hardware_spec& hw)
    : m_timer(model, t, split, hw),
      m_first(std::move(first_layer)),
      m_token_bytes(double(model.d_model) * static_cast<double>(dtype_bytes(t))) {
  if (m_first.empty()) m_first.push_back(0);
}

std::vector<kernel> parallel_serving_step::apply(std::vector<kernel> ks, const std::vector<layer_info>& layers,
                                                 std::int64_t tokens, exec_options& o) const {
  o.streams = parallel_streams;
  o.devices = static_cast<int>(m_first.size());
  std::vector<kernel> in = m_timer.add_layer_collectives(std::move(ks), layers);
  if (o.devices == 1) return in;
  const int p = o.devices;
  auto stage_of = [&](int layer) {
    if (layer < 0) return p - 1;
    return static_cast<int>(std::upper_bound(m_first.begin(), m_first.end(), layer) - m_first.begin()) - 1;
  };
  const double bytes = double(tokens) * m_token_bytes;
  const double send_s = m_timer.send_s(bytes);
  std::vector<kernel> out;
  out.reserve(in.size() + static_cast<std::size_t>(p));
  std::vector<std::int32_t> remap(in.size(), -1);
  int stage = 0;
  std::int32_t send = -1;  // the send the next stage's first kernel waits for
  for (std::size_t i = 0; i < in.size(); ++i) {
    kernel k = in[i];
    const int s = std::max(stage, stage_of(k.layer));
    if (s != stage) {
      out.push_back(comm_kernel(step_op::pp_send, send_stream, stage, static_cast<std::int32_t>(out.size()) - 1, send_s,
                                bytes, out.empty() ? -1 : out.back().layer, false, tokens));
      send = static_cast<std::int32_t>(out.size()) - 1;
      stage = s;
    }
    k.device = stage;
    const std::array<std::int32_t, 2> after = k.after;
    k.after = {-1, -1};
    for (const std::int32_t a : after) {
      if (a < 0) continue;
      const std::int32_t g = remap[static_cast<std::size_t>(a)];
      if (out[static_cast<std::size_t>(g)].device == stage) add_dependency(k, g);  // across stages: the send
    }
    if (send >= 0) {
      add_dependency(k, send);
      send = -1;
    }
    remap[i] = static_cast<std::int32_t>(out.size());
    out.push_back(k);
  }
  return out;
}

std::vector<std::pair<bool, int>> one_f_one_b(int stage, int stages, int micro_batches, bool training) {
  std::vector<std::pair<bool, int>> out;
  if (!training) {
    for (int j = 0; j < micro_batches; ++j) out.emplace_back(false, j);
    return out;
  }
  const int warm = std::min(stages - stage - 1, micro_batches);
  for (int j = 0; j < warm; ++j) out.emplace_back(false, j);
  for (int j = 0; j < micro_batches - warm; ++j) {
    out.emplace_back(false, warm + j);
    out.emplace_back(true, j);
  }
  for (int j = micro_batches - warm; j < micro_batches; ++j) out.emplace_back(true, j);
  return out;
}

parallel_step build_parallel_step(const model_spec& model, const workload& w, const cost_model& cost,
                                  const device_model& dev, const parallel_step_request& r) {
  // The split's checks, its micro-batch count and its stages balanced by predicted time.
  const parallel_prediction pred = predict_parallel(model, w, cost, r.split);
  parallel_step out;
  out.split = pred.split;
  out.first_layer = pred.stages.first_layer;
  out.predicted_step_s = pred.step_s;
  const int p = out.split.pp, m = out.split.micro_batches;
  const bool training = w.run == run_mode::train, decode = w.run == run_mode::decode;
  workload mb = w;
  mb.batch = w.batch / out.split.dp / m;
  out.micro_batch = mb.batch;

  const model_spec shard = tp_shard(model, out.split.tp);
  const step_builder b(shard, w.type, dev);
  const collective_timer ct(model, w.type, out.split, cost.hardware());
  auto stage_of = [&](int layer) {
    if (layer < 0) return p - 1;  // the LM head
    return static_cast<int>(std::upper_bound(out.first_layer.begin(), out.first_layer.end(), layer) -
                            out.first_layer.begin()) -
           1;
  };

  // Each micro-batch's kernels on one GPU, collectives inserted.
  std::vector<std::vector<kernel>> lists;
  rng draws(r.seed);
  std::vector<kernel> same;
  if (!decode) same = ct.add_layer_collectives(b.forward(mb), b.layers());
  for (int j = 0; j < m; ++j) {
    if (decode) {
      const step_load load = decode_load(b, mb.batch, w.seq_len, r.routing, r.pad_capacity, draws);
      lists.push_back(ct.add_layer_collectives(b.step(load, r.routing), b.layers()));
    } else {
      lists.push_back(same);
    }
  }

  // Gradient parameters per layer and outside the layers of one GPU's shard: the LM head's (and
  // the final norm's) complete first on the last stage, the embedding's last on the first. Tied
  // on one stage, the LM head's weight is the embedding's: complete with it, last.
  const double e = static_cast<double>(dtype_bytes(w.type));
  const std::vector<std::int64_t> layer_params = layer_parameter_counts(shard);
  const double head_params =
      double(p == 1 && shard.tie_embeddings ? std::int64_t{shard.d_model} : head_parameter_count(shard));
  const double embedding_params = double(embedding_parameter_count(shard));

  const double send_bytes = double(mb.batch) * double(decode ? 1 : w.seq_len) * model.d_model * e;
  const double send_s = ct.send_s(send_bytes);

  std::vector<kernel>& G = out.kernels;
  // send[dir][stage][micro-batch]: the index of that chunk's send (-1: none).
  std::vector<std::vector<std::vector<std::int32_t>>> send(
      2, std::vector<std::vector<std::int32_t>>(static_cast<std::size_t>(p),
                                                std::vector<std::int32_t>(static_cast<std::size_t>(m), -1)));
  struct fixup {
    std::size_t kernel;
    int dir, stage, micro_batch;
  };
  std::vector<fixup> fixups;
  for (int s = 0; s < p; ++s) {
    std::int32_t last_gradients = -1;  // the stage's last gradient all-reduce (its optimizer waits for it)
    for (const auto& [bwd, j] : one_f_one_b(s, p, m, training)) {
      const std::vector<kernel>& list = lists[static_cast<std::size_t>(j)];
      std::vector<std::int32_t> global(list.size(), -1);
      const std::size_t chunk_start = G.size();
      const bool last_backward = training && bwd && j == m - 1 && out.split.dp > 1;
      double bucket = 0;
      int layer_open = -2;  // the layer whose backward is running, -1 the LM head's (last micro-batch only)
      auto flush_bucket = [&] {
        if (bucket <= 0) return;
        G.push_back(comm_kernel(step_op::dp_all_reduce, gradient_stream, s, static_cast<std::int32_t>(G.size()) - 1,
                                ct.gradient_allreduce_s(bucket), bucket, G.back().layer, true, 0));
        last_gradients = static_cast<std::int32_t>(G.size()) - 1;
        bucket = 0;
      };
      for (std::size_t i = 0; i < list.size(); ++i) {
        const kernel& src = list[i];
        if (src.op == step_op::optimizer) continue;  // each stage's own, below
        if (src.backward != bwd || stage_of(src.layer) != s) continue;
        if (last_backward && !is_comm(src) && src.layer != layer_open) {
          // The previous layer's gradients are complete.
          if (layer_open >= 0) bucket += double(layer_params[static_cast<std::size_t>(layer_open)]) * e;
          if (layer_open == -1) bucket += head_params * e;
          if (bucket >= dp_bucket_bytes) flush_bucket();
          layer_open = src.layer;
        }
        kernel k = src;
        k.device = s;
        k.after = {-1, -1};
        for (const std::int32_t a : src.after) {
          if (a < 0) continue;
          const std::int32_t g = global[static_cast<std::size_t>(a)];
          if (g >= 0) add_dependency(k, g);  // within the chunk; across stages the send stands for it
        }
        global[i] = static_cast<std::int32_t>(G.size());
        G.push_back(k);
      }
      if (G.size() == chunk_start) continue;
      const auto computed = static_cast<std::int32_t>(G.size()) - 1;  // the chunk's last kernel
      // The chunk's input arrives from the previous stage (forward) or the next (backward).
      const int from = bwd ? s + 1 : s - 1;
      if (from >= 0 && from < p) fixups.push_back({chunk_start, bwd ? 1 : 0, from, j});
      if (last_backward) {
        if (layer_open >= 0) bucket += double(layer_params[static_cast<std::size_t>(layer_open)]) * e;
        if (layer_open == -1) bucket += head_params * e;
        if (s == 0) bucket += embedding_params * e;
        flush_bucket();
      }
      const int to = bwd ? s - 1 : s + 1;
      if (to >= 0 && to < p) {
        send[bwd ? 1 : 0][static_cast<std::size_t>(s)][static_cast<std::size_t>(j)] =
            static_cast<std::int32_t>(G.size());
        // The send waits for the chunk's compute, not for the gradient buckets flushed after it.
        G.push_back(comm_kernel(step_op::pp_send, send_stream, s, computed, send_s, send_bytes,
                                G[static_cast<std::size_t>(computed)].layer, bwd, mb.batch * (decode ? 1 : w.seq_len)));
      }
    }
    // Training: the stage's optimizer step over its parameters, once its gradients are reduced.
    if (std::optional<kernel> o =
            training ? b.optimizer(stage_parameter_count(shard, out.first_layer, s)) : std::nullopt) {
      o->device = s;
      if (last_gradients >= 0) add_dependency(*o, last_gradients);
      G.push_back(*o);
    }
  }
  for (const fixup& f : fixups) {
    const std::int32_t from = send[static_cast<std::size_t>(f.dir)][static_cast<std::size_t>(f.stage)]
                                  [static_cast<std::size_t>(f.micro_batch)];
    if (from < 0) throw runtime_error("des::build_parallel_step: a stage's input has no send");
    add_dependency(G[f.kernel], from);
  }
  out.options.cuda_graph = r.cuda_graph;
  out.options.devices = p;
  out.options.streams = parallel_streams;
  return out;
}

}  // namespace modsim::sim::des
