#pragma once
// MoD across GPUs: what tensor, pipeline, data and expert parallelism move and how a pipeline's
// stages balance. Pure arithmetic on the model and the workload (no timing of links here:
// the collectives' times come from sim/parallel/comm).
//
// Tensor parallel (Megatron): QKV and the MLP's up/gate projections are column-parallel, the
// attention output and the MLP's down projection row-parallel, the LM head vocabulary-parallel;
// each GPU holds n_heads/tp heads (n_kv_heads/tp, or every KV head when n_kv_heads < tp) and
// d_ff/tp of the MLP (tp_shard). A layer all-reduces its block's output twice per forward
// pass (after attention, after the MLP), each of tokens · d_model · e bytes, tokens being those
// the block really computes: B·k at a MoD-routed layer, B·S at a dense one (B·c·... expected in
// decode). Training adds the two all-reduces of the input gradients in the backward pass. The
// router and the causal predictor stay replicated: they read the residual, which every rank
// holds after the all-reduce, and move nothing.
//
// Expert parallel (MoE, MoDE): dispatch and combine are all-to-alls of the token-slots that
// reach real experts, slots · d_model · e bytes each (slots as sim/model/flops counts them: with N
// no-op experts of MoDE integrated only E/(E+N) of tokens·top_k move; MoDE staged moves the
// routed k). Training doubles them.
//
// Data parallel: the gradient all-reduce of every weight a GPU holds, P/(tp·pp) · e bytes per
// step, whatever the routing (MoD skips tokens, not weights).
//
// Pipeline parallel: layers split into contiguous stages; the LM head runs on the last one.
// A 1F1B schedule of m micro-batches over p stages idles (p − 1)/(m + p − 1) of the step when
// the stages are equal; a step takes (m + p − 1) × the slowest stage's micro-batch time.
#include <string>
#include <vector>

#include "sim/model/spec.hpp"

namespace modsim::sim {

struct parallel_spec {
  int tp = 1;             // tensor parallel ranks
  int pp = 1;             // pipeline stages
  int dp = 1;             // data parallel replicas
  int ep = 1;             // expert parallel ranks (within the dp·tp GPUs of a stage)
  int micro_batches = 0;  // per step with pp > 1; 0 = 4·pp (or the local batch when smaller)
  int gpus() const { return tp * pp * dp; }
};

// The same GPUs doing the same parts (micro-batches aside).
bool same_split(const parallel_spec& a, const parallel_spec& b);
// "TP 2 × PP 1 × DP 4", with " (EP 2)" when experts are split.
std::string to_string(const parallel_spec& p);

// Checks the split against the model and workload; throws modsim::error(bad_input) naming the
// flag ("--tp: n_heads 16 is not divisible by 3").
void validate_parallel(const model_spec& model, const workload& w, const parallel_spec& p);

// The model one tensor-parallel rank computes (heads, KV heads, d_ff and vocabulary divided).
model_spec tp_shard(const model_spec& model, int tp);

struct layer_traffic {
  int index = 0;
  bool routed = false;             // MoD-routed (tokens = the routed ones)
  double tokens = 0;               // tokens the block computes, whole batch (expected in decode)
  double tp_allreduce_bytes = 0;   // one all-reduce's buffer: tokens · d_model · e
  int tp_allreduces = 0;           // per step: 2 forward, 4 with the backward pass, 6 recomputed (full)
  double ep_all_to_all_bytes = 0;  // one all-to-all's slots · d_model · e (0 without MoE)
  int ep_all_to_alls = 0;          // per step: 2 forward (dispatch, combine), 4 training, 6 recomputed (full)
};

// The token-slots of `tokens` tokens that reach real experts (and move in an expert-parallel
// all-to-all): tokens · top_k · E/(E + N) with N no-op experts, or with a capacity factor f the
// experts' capacity E · ceil(f · tokens · top_k/(E + N)).
double expert_slots(const moe_spec& moe, double tokens, int noop_experts);

// Per layer, for the whole batch `w` (divide by dp for one replica's share).
std::vector<layer_traffic> layer_traffic_of(const model_spec& model, const workload& w);

// The data-parallel gradient all-reduce per step: P/(tp·pp) weights of e bytes (0 unless
// training).
double dp_gradient_bytes(const model_spec& model, const workload& w, const parallel_spec& p);

// (p − 1) / (m + p − 1).
double bubble_fraction(int stages, int micro_batches);

struct stage_split {
  std::vector<int> first_layer;  // per stage, its first layer (stage i runs first_layer[i] ..)
  std::vector<double> stage_s;   // per stage, its time (the last one with the LM head)
  double max_s() const;
  double mean_s() const;
  double imbalance() const { return mean_s() > 0 ? max_s() / mean_s() : 1.0; }
};

// Equal layer counts (the first n mod p stages one layer more).
stage_split naive_split(const std::vector<double>& layer_s, double head_s, int stages);
// Contiguous stages whose slowest is as fast as possible (the LM head's time on the last).
stage_split balanced_split(const std::vector<double>& layer_s, double head_s, int stages);

// The parameters of `model` (one GPU's TP shard) outside its layers: the embedding's, which the
// first pipeline stage holds and whose gradient the backward pass completes last; the LM head's
// and the final norm's, which the last stage holds and whose gradients it completes first.
std::int64_t embedding_parameter_count(const model_spec& model);
std::int64_t head_parameter_count(const model_spec& model);
// Those that stage `stage` of `stages` holds. Tied embeddings (model_spec::tie_embeddings): one
// stage holds the matrix once; over several, the first and the last each hold it.
std::int64_t stage_outside_parameter_count(const model_spec& model, int stage, int stages);
// Every parameter stage `stage` holds: its layers' (first_layer[stage] up to the next stage's
// first layer) and stage_outside_parameter_count. What its gradient all-reduce and its optimizer
// step cover.
std::int64_t stage_parameter_count(const model_spec& model, const std::vector<int>& first_layer, int stage);

}  // namespace modsim::sim
