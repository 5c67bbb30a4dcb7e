#include "sim/parallel/parallel_predict.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "sim/model/flops.hpp"
#include "sim/parallel/comm.hpp"
#include "sim/cost/predict.hpp"

namespace modsim::sim {
double collective_seconds(const hardware_spec& hw, collective c, double bytes, int gpus) {
  if (gpus < 2 || bytes <= 0) return 0;
  comm_request r;
  r.op = c;
  r.bytes = static_cast<std::int64_t>(std::llround(bytes));
  r.gpus = gpus;
  return predict_collective(hw, r).time_s;
}

double dp_allreduce_seconds(const hardware_spec& hw, double bytes, int dp, int gpus_per_replica) {
  if (dp < 2 || bytes <= 0) return 0;
  const interconnect_spec ic = effective_interconnect(hw);
  if (ic.gpus_per_node > 0 && gpus_per_replica >= ic.gpus_per_node && ic.inter_node) {
    interconnect_spec across = ic;
    across.gpus_per_node = 1;  // every ring hop leaves the node
    across.calibration.clear();
    return collective_time(collective::all_reduce, comm_algorithm::ring, std::llround(bytes), dp, across,
                           hw.source_file);
  }
  return collective_seconds(hw, collective::all_reduce, bytes, dp);
}

parallel_prediction predict_parallel(const model_spec& model, const workload& w, const cost_model& cost,
                                     const parallel_spec& split) {
  validate_parallel(model, w, split);
  const hardware_spec& hw = cost.hardware();
  parallel_prediction out;
  out.split = split;
  const std::int64_t local_batch = w.batch / split.dp;
  int m = 1;
  if (split.pp > 1)
    m = split.micro_batches > 0 ? split.micro_batches : int(std::min<std::int64_t>(4 * split.pp, local_batch));
  if (local_batch % m != 0)
    throw input_error("", "--micro-batches",
                      "the batch of one replica (" + std::to_string(local_batch) + ") is not divisible into " +
                          std::to_string(m) + " micro-batches");
  out.split.micro_batches = m;
  workload mb = w;
  mb.batch = local_batch / m;

  // Compute of one TP shard per layer, launch overhead spread over the ops.
  const model_spec shard = tp_shard(model, split.tp);
  const model_time mt = time_model(shard, mb, cost);
  // (over the passes: the optimizer step, priced below per stage, is one kernel launch)
  const double passes_s = mt.ops_s - mt.optimizer.time_s;
  const double overhead_scale = passes_s > 0 ? (mt.total_s - mt.optimizer.time_s) / passes_s : 1.0;
  const std::vector<layer_traffic> traffic = layer_traffic_of(model, mb);
  std::vector<double> layer_s, compute, tp, ep;
  for (std::size_t i = 0; i < mt.layers.size(); ++i) {
    const double c = mt.layers[i].time_s * overhead_scale;
    const layer_traffic& t = traffic[i];
    const double tp_s =
        split.tp > 1 ? t.tp_allreduces * collective_seconds(hw, collective::all_reduce, t.tp_allreduce_bytes, split.tp)
                     : 0.0;
    const double ep_s = split.ep > 1 ? t.ep_all_to_alls * collective_seconds(hw, collective::all_to_all,
                                                                             t.ep_all_to_all_bytes, split.ep)
                                     : 0.0;
    compute.push_back(c);
    tp.push_back(tp_s);
    ep.push_back(ep_s);
    layer_s.push_back(c + tp_s + ep_s);
    if (split.tp > 1) out.tp_bytes_per_step += m * t.tp_allreduces * t.tp_allreduce_bytes;
    if (split.ep > 1) out.ep_bytes_per_step += m * t.ep_all_to_alls * t.ep_all_to_all_bytes;
  }
  const double head_s = mt.lm_head.time_s * overhead_scale;
  // Activations handed to the next stage per micro-batch (and the gradients back in training).
  const double act_bytes =
      double(mb.batch) * double(w.run == run_mode::decode ? 1 : w.seq_len) * model.d_model * dtype_bytes(w.type);
  const double send_s =
      split.pp > 1 ? (w.run == run_mode::train ? 2 : 1) * collective_seconds(hw, collective::send_recv, act_bytes, 2)
                   : 0.0;

  // A stage's micro-batch: its layers, and the send to the next stage (none from the last).
  auto stage_with_send = [&](const stage_split& s, std::size_t i) {
    return s.stage_s[i] + (i + 1 < s.stage_s.size() ? send_s : 0.0);
  };
  auto slowest_of = [&](const stage_split& s) {
    std::size_t worst = 0;
    for (std::size_t i = 1; i < s.stage_s.size(); ++i)
      if (stage_with_send(s, i) >= stage_with_send(s, worst)) worst = i;
    return worst;
  };
  out.stages = balanced_split(layer_s, head_s, split.pp);
  out.naive_stages = naive_split(layer_s, head_s, split.pp);
  const std::size_t worst = slowest_of(out.stages);
  const double slowest = stage_with_send(out.stages, worst);
  const double pipeline_s = (m + split.pp - 1) * slowest;
  out.naive_step_s = (m + split.pp - 1) * stage_with_send(out.naive_stages, slowest_of(out.naive_stages));

  // The slowest stage's parts.
  const int first = out.stages.first_layer[worst];
  const int last =
      worst + 1 < out.stages.first_layer.size() ? out.stages.first_layer[worst + 1] : static_cast<int>(layer_s.size());
  double c = 0, t = 0, e = 0;
  for (int l = first; l < last; ++l) c += compute[l], t += tp[l], e += ep[l];
  if (worst + 1 == out.stages.stage_s.size()) c += head_s;
  out.compute_s = m * c;
  out.tp_comm_s = m * t;
  out.ep_comm_s = m * e;
  out.pp_send_s = worst + 1 < out.stages.stage_s.size() ? m * send_s : 0.0;
  out.bubble_s = (split.pp - 1) * slowest;

  // DP: gradients accumulate over the micro-batches and all-reduce, bucket by bucket, as the last
  // micro-batch's backward pass fills them (its recomputation included: the share of a
  // micro-batch's device time the per-op pricing gives them), which they overlap; the last bucket
  // is always exposed: the first stage's, which holds the embedding, whose gradient the backward
  // pass completes last.
  out.dp_bytes_per_step = dp_gradient_bytes(model, w, split);
  out.dp_allreduce_s = dp_allreduce_seconds(hw, out.dp_bytes_per_step, split.dp, split.tp * split.pp);
  if (out.dp_allreduce_s > 0) {
    const double last_bytes =
        std::max(dp_bucket_bytes, double(embedding_parameter_count(shard)) * double(dtype_bytes(w.type)));
    const double bucket = out.dp_allreduce_s * std::min(1.0, last_bytes / out.dp_bytes_per_step);
    const double backward_share = passes_s > 0 ? (mt.backward_s + mt.recompute_s) / passes_s : 0.0;
    out.dp_exposed_s = std::max(bucket, out.dp_allreduce_s - slowest * backward_share);
  }
  // Training: then each stage's optimizer step over the parameters it holds (the largest stage's
  // is the step's), once its gradients are reduced: nothing overlaps it.
  auto optimizer_of = [&](const stage_split& st) {
    if (w.run != run_mode::train) return 0.0;
    double largest = 0;
    for (int s = 0; s < split.pp; ++s) {
      const optimizer_cost oc = adamw_cost(stage_parameter_count(shard, st.first_layer, s), dtype_bytes(w.type));
      largest = std::max(largest, cost.optimizer_time_of(oc, w.type).time_s);
    }
    return largest;
  };
  out.optimizer_s = optimizer_of(out.stages);
  out.compute_s += out.optimizer_s;
  out.step_s = pipeline_s + out.dp_exposed_s + out.optimizer_s;
  out.naive_step_s += out.dp_exposed_s + optimizer_of(out.naive_stages);

  // Memory per GPU: the shard's weights, state and cache over pp stages; the activations of the
  // micro-batches a stage holds at once (1F1B: up to p in training, one otherwise).
  workload local = w;
  local.batch = local_batch;
  const memory_footprint whole = footprint_of(shard, local, cost.attention());
  const memory_footprint one = footprint_of(shard, mb, cost.attention());
  out.memory_per_gpu.weights = whole.weights / split.pp;
  out.memory_per_gpu.gradients = whole.gradients / split.pp;
  out.memory_per_gpu.optimizer_state = whole.optimizer_state / split.pp;
  out.memory_per_gpu.kv_cache = whole.kv_cache / split.pp;
  const double in_flight = w.run == run_mode::train ? std::min(m, split.pp) : 1;
  out.memory_per_gpu.activations =
      (w.run == run_mode::train ? (one.activations - one.logits) / split.pp : one.activations - one.logits) *
          in_flight +
      one.logits;
  out.memory_per_gpu.attention_buffers = one.attention_buffers;
  out.memory_per_gpu.attention = one.attention;
  out.memory_per_gpu.logits = one.logits;
  out.memory_verdict = memory_verdict(out.memory_per_gpu, hw.memory_bytes);
  if (split.pp > 1 && out.naive_stages.max_s() > out.stages.max_s() * (1 + 1e-9))
    out.notes.push_back("a split by layer count would make the slowest stage " +
                        std::to_string(out.naive_stages.max_s() / out.stages.max_s()) +
                        "x slower; the stages above are balanced by predicted time");
  return out;
}

std::vector<parallel_prediction> best_splits(const model_spec& model, const workload& w, const cost_model& cost,
                                             int gpus) {
  const interconnect_spec ic = effective_interconnect(cost.hardware());
  const int per_node = ic.gpus_per_node > 0 ? ic.gpus_per_node : gpus;
  std::vector<parallel_prediction> out;
  for (int tp = 1; tp <= std::min(gpus, per_node); tp *= 2) {
    for (int pp = 1; tp * pp <= gpus; pp *= 2) {
      if (gpus % (tp * pp) != 0) continue;
      parallel_spec s;
      s.tp = tp;
      s.pp = pp;
      s.dp = gpus / (tp * pp);
      try {
        out.push_back(predict_parallel(model, w, cost, s));
      } catch (const modsim::error&) {
        // a split the model does not allow
      }
    }
  }
  // Splits whose GPUs hold the step first, each group fastest first.
  std::sort(out.begin(), out.end(), [](const parallel_prediction& a, const parallel_prediction& b) {
    const bool fa = a.memory_verdict.empty(), fb = b.memory_verdict.empty();
    return fa != fb ? fa : a.step_s < b.step_s;
  });
  return out;
}

}  // namespace modsim::sim
