#pragma once
// One step of a model split over tp × pp × dp GPUs as kernels for the executor
// (des/execution): what sim/parallel/parallel_predict computes in closed form, run event by event, with
// communication on streams of its own so that it overlaps compute where the schedule allows.
//
// One data-parallel replica is simulated: device s is pipeline stage s and stands for each of
// its tp ranks (they run the same kernels of the tensor-parallel shard, tp_shard). Streams:
//   0 compute; 1 the layers' collectives (TP all-reduce, EP dispatch and combine);
//   2 the pipeline's sends; 3 the data-parallel gradient buckets.
// - TP: an all-reduce of the block's rows · d_model · e bytes after the attention output and
//   the MLP's down projection (MoE: the experts), and in the backward pass after the QKV and
//   up projections' backward (MoE: the experts'); the next compute kernel waits for it (it needs
//   the reduced activations). Rows are those the block computes: the routed ones at a MoD
//   layer, padded rows included in a padded decode step.
// - EP (MoE, MoDE): an all-to-all of expert_slots · d_model · e bytes before the experts
//   (dispatch) and after them (combine), both on the critical path.
// - PP: layers split into stages by sim/parallel/parallel_predict's time-balanced split; m micro-batches
//   in a 1F1B order (stage s: min(p − s − 1, m) forwards, then one forward and one backward in
//   turn, then the remaining backwards; forward-only steps run the m forwards). A stage's
//   micro-batch ends with a send of B_mb · S · d_model · e bytes (activations forward, input
//   gradients backward) on its send stream; the next stage's first kernel of that micro-batch
//   waits for it. The sender's compute goes on meanwhile.
// - DP (training): the gradients of each layer are ready when the last micro-batch's backward
//   of that layer ends; they fill 25 MB buckets (dp_bucket_bytes), each all-reduced over the dp
//   replicas on the gradient stream as soon as it is full, overlapping the rest of the backward
//   pass; the embedding and LM head (outside the layers) join the last bucket of their stage.
// Collectives are timed by sim/parallel/comm (collective_seconds, dp_allreduce_seconds), the compute
// kernels by the device model given, as a single-GPU step.
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/parallel/comm.hpp"
#include "sim/cost/cost.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/step.hpp"
#include "sim/parallel/parallel.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim::des {

inline constexpr int compute_stream = 0;
inline constexpr int collective_stream = 1;
inline constexpr int send_stream = 2;
inline constexpr int gradient_stream = 3;
inline constexpr int parallel_streams = 4;

// The collectives of one GPU's step, timed once per size.
class collective_timer {
 public:
  collective_timer(const model_spec& model, dtype t, const parallel_spec& split, const hardware_spec& hw);
  // Inserts the TP all-reduces and EP all-to-alls into one GPU's kernel list (built on
  // tp_shard(model)): comm kernels on collective_stream, and the `after` links that put them on
  // the critical path. Kernels keep their device.
  std::vector<kernel> add_layer_collectives(std::vector<kernel> ks, const std::vector<layer_info>& layers) const;
  double send_s(double bytes) const;
  double gradient_allreduce_s(double bytes) const;
  const parallel_spec& split() const { return m_split; }

 private:
  double timed(collective c, double bytes, int gpus) const;
  model_spec m_model;
  double m_e;  // bytes per element
  parallel_spec m_split;
  hardware_spec m_hw;  // a copy: the timer may outlive the cost model it came from
};

struct parallel_step_request {
  parallel_spec split;
  bool cuda_graph = false;
  // Decode steps: each micro-batch's routing drawn as decode_load does.
  decode_routing routing = decode_routing::sync;
  std::optional<double> pad_capacity;
  std::uint64_t seed = 1;
};

struct parallel_step {
  std::vector<kernel> kernels;   // every stage's, device = stage
  exec_options options;          // devices = pp, streams = parallel_streams
  parallel_spec split;           // micro_batches resolved
  std::vector<int> first_layer;  // per stage, its first layer
  std::int64_t micro_batch = 0;  // sequences per micro-batch
  double predicted_step_s = 0;   // sim::predict_parallel's closed form of the same split
};

// The kernels of one step of `model` under `w` (forward, train or decode: B sequences of a
// context of w.seq_len), split by `r.split`, the compute timed by `dev` (a device model of the
// cost model at w.type). Throws modsim::error(bad_input) as predict_parallel for a split the
// model, the batch or the hardware cannot take.
parallel_step build_parallel_step(const model_spec& model, const workload& w, const cost_model& cost,
                                  const device_model& dev, const parallel_step_request& r);

// A serving step over tp × pp GPUs (one data-parallel replica): the TP/EP collectives of each
// layer and, with pp > 1, the step's batch passing through the stages one after another (one
// batch in flight: pipeline parallelism's latency, not its throughput; each stage's send of
// the step's tokens · d_model · e bytes on its send stream).
class parallel_serving_step {
 public:
  parallel_serving_step(const model_spec& model, dtype t, const parallel_spec& split, std::vector<int> first_layer,
                        const hardware_spec& hw);
  // One GPU's kernels of a step of `tokens` tokens (built on tp_shard(model)) with their
  // collectives and stages; sets o.devices and o.streams.
  std::vector<kernel> apply(std::vector<kernel> ks, const std::vector<layer_info>& layers, std::int64_t tokens,
                            exec_options& o) const;
  const parallel_spec& split() const { return m_timer.split(); }
  const std::vector<int>& first_layer() const { return m_first; }

 private:
  collective_timer m_timer;
  std::vector<int> m_first;
  double m_token_bytes;  // d_model · e
};

// The pipeline's order of one stage's micro-batch passes: (backward?, micro-batch) pairs.
std::vector<std::pair<bool, int>> one_f_one_b(int stage, int stages, int micro_batches, bool training);

}  // namespace modsim::sim::des
