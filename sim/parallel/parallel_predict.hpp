#pragma once
// One step of an MoD model split over tp × pp × dp GPUs (sim/parallel/parallel.hpp for what moves): the
// per-GPU compute of a tensor-parallel shard timed by the cost model, the collectives timed by
// sim/parallel/comm, stages balanced by time and scheduled 1F1B.
//
//   per micro-batch, layer l on one GPU:  t_l = compute(shard, micro-batch)
//                                             + n_TP · all_reduce(tokens·d·e, tp)
//                                             + n_EP · all_to_all(slots·d·e, ep)
//   stage s: Σ t_l over its layers (+ the LM head on the last, + the activations' send_recv to
//   the next stage, B_mb·S·d·e)
//   step = (m + p − 1) · max_s stage_s        (1F1B: m micro-batches through p stages)
//        + DP: the gradient all-reduce less the backward pass it overlaps (at least one 25 MB
//          bucket stays exposed), training only.
// TP all-reduces sit on the critical path (the next op needs their result); so do EP's
// all-to-alls. The DP group's GPUs are on different nodes when tp·pp fills a node, so its
// all-reduce is timed over the inter-node link then.
#include <string>
#include <vector>

#include "sim/parallel/comm.hpp"
#include "sim/cost/cost.hpp"
#include "sim/model/memory.hpp"
#include "sim/parallel/parallel.hpp"

namespace modsim::sim {

struct parallel_prediction {
  parallel_spec split;           // as given, micro_batches resolved
  double step_s = 0;             // the whole step
  double compute_s = 0;          // m × the slowest stage's compute, and the optimizer step (training)
  double optimizer_s = 0;        // training: the largest stage's AdamW step (in compute_s and step_s)
  double tp_comm_s = 0;          // m × the slowest stage's TP all-reduces
  double ep_comm_s = 0;          // m × the slowest stage's EP all-to-alls
  double pp_send_s = 0;          // m × the slowest stage's activation send
  double bubble_s = 0;           // (p − 1) × the slowest stage (1F1B fill and drain)
  double dp_exposed_s = 0;       // the gradient all-reduce not hidden by the backward pass
  double dp_allreduce_s = 0;     // the whole gradient all-reduce
  stage_split stages;            // balanced by time, per micro-batch (compute + communication)
  stage_split naive_stages;      // by layer count
  double naive_step_s = 0;       // the step with the naive split
  double tp_bytes_per_step = 0;  // one GPU's all-reduce buffers summed over the step
  double ep_bytes_per_step = 0;
  double dp_bytes_per_step = 0;
  memory_footprint memory_per_gpu;  // weights, state and KV divided; activations of the stage in flight
  std::string memory_verdict;       // empty when it fits
  std::vector<std::string> notes;

  // The communication the next op waits for: TP, EP, the stage send and DP's exposed part.
  double exposed_comm_s() const { return tp_comm_s + ep_comm_s + pp_send_s + dp_exposed_s; }
};

// A data-parallel gradient bucket (PyTorch DDP's default, 25 MB): buckets all-reduce as the
// backward pass fills them.
inline constexpr double dp_bucket_bytes = 25e6;

// The time of collective `c` of `bytes` over `gpus` GPUs of the hardware's interconnect
// (sim/parallel/comm's choice of algorithm); 0 for fewer than 2 GPUs or no bytes.
double collective_seconds(const hardware_spec& hw, collective c, double bytes, int gpus);
// The data-parallel gradient all-reduce of `bytes` over `dp` replicas of `gpus_per_replica`
// GPUs each: over the inter-node link (every ring hop leaves the node) once a replica fills a
// node, else as collective_seconds.
double dp_allreduce_seconds(const hardware_spec& hw, double bytes, int dp, int gpus_per_replica);

// Throws modsim::error(bad_input) for a split that does not fit the model (validate_parallel),
// a local batch not divisible into micro-batches, or collectives the hardware cannot time
// (no interconnect).
parallel_prediction predict_parallel(const model_spec& model, const workload& w, const cost_model& cost,
                                     const parallel_spec& split);

// Every split of `gpus` GPUs (tp and pp powers of two with tp ≤ gpus per node, dp the rest)
// that the model allows: those that fit in each GPU's memory first, each group fastest first.
std::vector<parallel_prediction> best_splits(const model_spec& model, const workload& w, const cost_model& cost,
                                             int gpus);

}  // namespace modsim::sim
