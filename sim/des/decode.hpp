#pragma once
// A measured decode step as the simulator sees it (docs/contracts.md "Decode measurements"): the
// profiler's decode_dense, decode_mod and decode_step rows, each the model it ran (a one-layer
// model for the single-layer ops), its batch, cached context, routing strategy and the forced
// routed count the measurement used. Its predicted time comes from the same code as
// `modsim simulate forward --mode decode` (step_builder::step, then simulate_execution); only
// the routed counts differ: forced here, drawn there.
#include <cstdint>
#include <string>

#include "core/types.hpp"
#include "sim/cost/measured_sample.hpp"
#include "sim/des/execution.hpp"
#include "sim/des/step.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim::des {

// The padded block's default capacity as a fraction of the batch: pad_rows' default rule
// (sim/des/step.hpp: the expected routed count plus three standard deviations, whole rows) / B,
// so that routed_tokens(it, B) gives those rows back. What the profiler records in its CSV.
double default_pad_capacity(double capacity, std::int64_t batch);

struct decode_case {
  model_spec model;
  std::int64_t batch = 1;
  std::int64_t context = 0;  // cached tokens per sequence at a dense layer
  decode_routing routing = decode_routing::sync;
  bool cuda_graph = false;    // the step captured in a CUDA graph (pad only)
  double pad_capacity = 1.0;  // pad: the block has routed_tokens(pad_capacity, batch) rows
  std::int64_t routed = 0;    // tokens entering every routed layer (forced), in [0, batch]
  bool lm_head = true;        // the step ends with the final norm and the LM head
};

// The one-layer models of decode_dense and decode_mod: `routed` = one MoD-routed layer at
// `capacity` with the causal predictor of `predictor_hidden` (decode_mod), else one dense
// layer. No LM head (vocab_size 0).
model_spec decode_layer_model(int d_model, int n_heads, int n_kv_heads, int d_ff, mlp_kind mlp, bool routed,
                              double capacity, int predictor_hidden);

// The forced load of `c`: every routed layer takes `routed` tokens (capped at the padded rows
// in padding mode), over routed_tokens(capacity, context) cached keys as after a top-k
// prefill; dense layers take all B over `context`.
step_load forced_decode_load(const step_builder& b, const decode_case& c);

// The decode step a measured decode row ran (decode_dense, decode_mod, decode_step): its
// model (one layer, or p.model), batch, context, routing (graph = pad in a CUDA graph), the
// padded capacity and the forced routed count round(capacity·batch). Throws bad_input naming
// p.where for another op or a decode_step row without its model.
decode_case decode_case_of(const measured_sample& p);

// The kernels of `c` at dtype `t` untimed (device_s 0): what they compute and read (FLOPs,
// bytes, rows, launches, read-backs), which do not depend on the device. `cost` (if not null)
// receives their sum, op `c`'s name left empty.
std::vector<kernel> decode_kernels(const decode_case& c, dtype t, op_cost* cost = nullptr);

// The kernels and the timeline of `c` at dtype `t` under `dev`.
timeline decode_timeline(const decode_case& c, dtype t, const device_model& dev);

}  // namespace modsim::sim::des
