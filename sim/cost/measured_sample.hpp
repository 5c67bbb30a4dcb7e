#pragma once
// One measured row as the cost model reads it, from the measurements CSV to the fit and the
// validation (sim::measured_sample): the row's columns, profiler-independent, its key
// (sim::shape_key), and the op_shape the profiler ran with its FLOP/byte costs (sim/model/flops),
// filled in by with_costs (sim/cost/sample_costs.hpp, with its kernel sequence and its predicted
// time under a cost model).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/types.hpp"
#include "sim/cost/cost.hpp"
#include "sim/model/flops.hpp"
#include "sim/cost/kernel_fit.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim {

// Whether rows of op `op` are scored as a whole (a block, a decode step or a training layer:
// the op table's block, decode and train roles), not fitted as one op.
bool scored_whole(modsim::op op);

// One measured op, block or decode step.
struct measured_sample {
  // The row (the measurements CSV's columns; profiler::sample_of reads them).
  modsim::op op = modsim::op::router;  // an op, a block or a decode step (the CSV's op column)
  dtype type = dtype::fp32;
  std::int64_t batch = 1;
  std::int64_t seq_len = 1;
  int d_model = 0;
  int n_heads = 0;
  int n_kv_heads = 0;  // 0 = n_heads
  int d_ff = 0;
  mlp_kind mlp = mlp_kind::gelu;
  double capacity = 1.0;
  moe_variant variant = moe_variant::none;  // none | staged | integrated (layer_mode, MoE ops)
  int experts = 0;
  int noop_experts = 0;
  double capacity_factor = 0;
  double median_s = 0;  // the measured time
  // The machine's speed while the row was measured (the measurements' anchor_s column: the
  // seconds of a fixed small block timed around the row's point); 0: not measured.
  double anchor_s = 0;
  std::optional<backend_kind> backend;  // empty: the row names none
  std::string device;
  std::string key;    // a stable identity of the shape: shape_key(*this), set by the reader
  std::string where;  // "FILE:LINE" for messages
  // isolated (the op alone, cold) | in_block (the op inside its block's run, warm)
  timing_mode timing = timing_mode::isolated;
  // in_block rows: the block whose runs timed the row (the row's own op for the block row)
  modsim::op block = modsim::op::block_dense;
  // the attention implementation the attention and block rows ran
  attention_impl attention = attention_impl::unfused;
  // Decode rows (decode_dense, decode_mod, decode_step; seq_len = the cached context), which
  // sim::des::decode_case_of turns into the step the simulator times.
  decode_run decode_routing = decode_run::sync;
  double pad_capacity = 0;
  int predictor_hidden = 0;
  std::string model_name;                   // decode_step: as the row names it
  std::shared_ptr<const model_spec> model;  // decode_step: that model, loaded
  // Training rows (block_dense_train, block_mod_train): what the forward kept for the backward.
  modsim::recompute recompute = modsim::recompute::none;

  // Filled in by with_costs (what the calibration and the validation read).
  op_shape shape;                                   // tokens = the block's tokens per sequence (k at a routed op)
  moe_variant layer_variant = moe_variant::staged;  // layer_mode only: `variant` as a block_costs variant
  op_cost cost;                                     // the op's cost; for a block, the sum of its ops

  bool is_block() const { return modsim::is_block(op); }
  bool is_decode() const { return modsim::is_decode(op); }
  // A row scored as a whole (a block or a decode step), not fitted as one op.
  bool is_whole() const { return scored_whole(op); }
};

// A stable identity of the row's shape, the measurements file's row key (--resume, --check,
// the block rows a calibration records): op|dtype|batch|seq_len|d_model|n_heads|n_kv_heads|
// d_ff|capacity|mlp, then for decode rows |routing|pad_capacity|predictor_hidden (and |model
// for decode_step); for MoE ops (layer_mode, expert_router, experts) |variant|experts|
// noop_experts|capacity_factor, the variant as moe_variant's value (staged or integrated, else
// none); |fused for fused attention; |selective or |full for a training
// row's recompute other than none (so the keys of rows without the column stay). An in_block row's key is its
// block's (isolated, unfused) plus "|in_block", "|" and the op for an op row, and "|fused".
// Unfused and isolated rows keep the keys of files written before those columns existed.
std::string shape_key(const measured_sample& s);

}  // namespace modsim::sim
