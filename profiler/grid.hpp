#pragma once
// Sweep axes (nvbench-style): typed, named lists of values whose Cartesian product is the set
// of points the profiler measures. A point that makes no sense (d_model not divisible by
// n_heads, a MoDE layer without experts, ...) is skipped with a reason, never silently.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/backend.hpp"
#include "sim/cost/measured_sample.hpp"
#include "sim/model/spec.hpp"

namespace modsim::profiler {

struct grid {
  std::vector<kernels::op> ops;
  std::vector<kernels::dtype> dtypes;
  std::vector<std::int64_t> batch;
  std::vector<std::int64_t> seq_len;
  std::vector<std::int64_t> d_model;
  std::vector<std::int64_t> n_heads;
  std::vector<std::int64_t> n_kv_heads;  // empty = n_heads (MHA)
  std::vector<std::int64_t> d_ff;
  std::vector<double> capacity;
  std::vector<kernels::mlp_kind> mlp;
  // A list of layer shapes instead of the product of d_model, n_heads, n_kv_heads, d_ff and
  // mlp (grid key "shapes": the dimensions of released models, say); each is crossed with the
  // other axes. Empty: the product.
  struct layer_dims {
    std::int64_t d_model = 0, n_heads = 0, n_kv_heads = 0, d_ff = 0;  // n_kv_heads 0 = n_heads
    kernels::mlp_kind mlp = kernels::mlp_kind::gelu;
    std::string from;  // where the shape comes from (documentation only)
  };
  std::vector<layer_dims> shapes;
  // layer_mode only (MoDE); ignored by the other ops.
  std::vector<kernels::moe_variant> variants;  // staged, integrated
  std::vector<int> experts;
  std::vector<int> noop_experts;  // integrated only
  std::vector<double> capacity_factor;
  // Training ops only (block_dense_train, block_mod_train; ignored by the other ops): what the
  // forward keeps for the backward (grid key "recompute").
  std::vector<modsim::recompute> recompute = {modsim::recompute::none};
  // Decode ops only (decode_dense, decode_mod, decode_step; seq_len is then the cached
  // context per sequence): the routing strategies (sync, pad; graph = pad captured in a CUDA
  // graph, CUDA only), the predictor's hidden width of decode_mod (0 = 256, the shipped
  // models' width, capped at d_model), the padded block's capacity (0 = the default,
  // sim::des::default_pad_capacity), and the models decode_step runs (their dimensions
  // replace the grid's shape axes; set by the command line from the grid's "model" names or
  // --model).
  std::vector<decode_run> decode_routing = {decode_run::sync};
  std::vector<std::int64_t> predictor_hidden = {0};
  std::vector<double> pad_capacity = {0.0};
  std::vector<std::string> model_names;  // as written in the grid file ("model": a name or a path)
  std::vector<std::shared_ptr<const sim::model_spec>> models;  // model_names[i] loaded (by the command line)
  // Decode points whose cache holds more than this many tokens per layer (batch · seq_len) are
  // skipped with the reason; 0 = no bound (the GPU decode preset bounds its memory and set-up).
  std::int64_t max_cached_tokens = 0;
};

// How a point is timed and how its blocks run attention (core/types.hpp; CUDA's fused form
// is cuDNN's fused SDPA, bf16).
using modsim::attention_impl;
using modsim::parse_attention_impl;
using modsim::parse_timing;
using modsim::timing_mode;

// One measurement to make.
struct point {
  kernels::op op = kernels::op::block_dense;
  kernels::dtype type = kernels::dtype::fp32;
  kernels::block_shape shape;
  timing_mode timing = timing_mode::isolated;
  // in_block only: the block whose runs timed this point (op itself for a block point).
  kernels::op block = kernels::op::block_dense;
  attention_impl attention = attention_impl::unfused;
  // Training points (block_dense_train, block_mod_train): what the forward keeps; none otherwise.
  modsim::recompute recompute = modsim::recompute::none;
  // Decode points: shape.seq_len is the cached context per sequence and shape.capacity the
  // routed fraction (the measurement forces round(capacity·batch) tokens into every routed
  // layer); decode_step takes its layers from `model`.
  decode_run decode_routing = decode_run::sync;  // sync | pad | graph
  double pad_capacity = 0;                       // pad, graph: the padded block's capacity (resolved, > 0)
  std::int64_t predictor_hidden = 0;             // decode_mod (decode_step: the model's)
  std::shared_ptr<const sim::model_spec> model;  // decode_step
  std::string model_name;  // decode_step: the model as the grid or --model named it (the CSV's model column)
};

// The forced routed count of a decode point: round(capacity·batch), in [0, batch].
std::int64_t decode_routed_count(const point& p);

struct skipped_point {
  point p;
  std::string reason;
};

struct expansion {
  std::vector<point> points;
  std::vector<skipped_point> skipped;
};

// The Cartesian product in a fixed order (shapes outside, ops innermost, so consecutive
// points share a workspace). block_dense, block_dense_train and router do not depend on
// capacity and appear once per shape, at capacity 1; only MoE ops (layer_mode, expert_router,
// experts) are crossed with the MoDE axes, and only training ops with recompute (innermost).
expansion expand(const grid& g);

// The points of `e` timed `t`. For in_block, points whose op is not a block move to
// `skipped` with the reason (in_block times ops through their block) and block points get
// block = op.
expansion with_timing(expansion e, timing_mode t);

// The points of `e` with attention `a`. For fused, attn_scores, attn_softmax and attn_values
// move to `skipped` with the reason (fused attention is one kernel, timed inside the blocks);
// every other point keeps its place.
expansion with_attention(expansion e, attention_impl a);

// One of `count` shards of `e` (`index` in 1..count): the points are grouped by model shape
// (dtype, batch, seq_len, d_model, heads, kv heads, d_ff, mlp — every capacity, variant and op
// of a shape stays together, so a shard reuses its workspaces as the whole grid would), and
// the groups, in grid order, are dealt round-robin. Every point is in exactly one shard; the
// shards' CSVs together are the grid's (calibrate and validate read several files). `skipped`
// is kept whole in shard 1 only. Throws modsim::error(bad_input) when index is outside 1..count.
expansion shard(expansion e, int index, int count);
// "I/N" (e.g. "2/4") → {I, N}; throws modsim::error(bad_input) naming `key`.
std::pair<int, int> parse_shard(std::string_view text, const std::string& key = "--shard");

// The `--grid FILE.json` format (contract): every key a list or a single value, e.g.
// {"ops": ["block_dense", "block_mod"], "dtype": "fp32", "batch": [1, 2], "seq_len": [512],
//  "d_model": [1024], "n_heads": [16], "d_ff": [4096], "capacity": [0.125, 0.5], "mlp": "gelu"}
// plus the optional "n_kv_heads", "variant", "experts", "noop_experts", "capacity_factor",
// "recompute" (training ops: none, selective, full; default none).
// Throws modsim::error(bad_input) naming the file and key: unknown op, empty axis, wrong type.
grid parse_grid(std::string_view json_text, const std::string& file);
grid load_grid(const std::string& path);

// Built-in grids. quick: a CPU run of under two minutes on two cores; full: the capacity ×
// shape sweep for a GPU (or a patient CPU). `backend` cuda makes GPU grids (they are
// larger and use bf16 too). Throws bad_input for an unknown name, and for a preset of several
// grids (calibration: preset_parts).
grid preset(std::string_view name, backend_kind backend);

// A preset as the grids it measures, each with the timing its points take (nullopt: the
// command line's --timing). quick, full and decode are one grid each; train is the layers'
// forward + backward (preset "train") and then the AdamW steps (op adamw) of layer shapes up to
// and past those; calibration (CPU only)
// is the procedure the CPU model is validated with: configs/grids/calibration-5-cpu.json's 96
// blocks timed in_block (a row per block and per op of it), then configs/grids/gemm-rows-cpu.json's
// 400 dense GEMMs timed isolated, in one file. On cuda calibration throws bad_input naming
// the GPU's grids (the full and decode presets, which h100-sxm-calibrated was fitted on).
struct preset_part {
  grid g;
  std::optional<timing_mode> timing;
};
std::vector<preset_part> preset_parts(std::string_view name, backend_kind backend);
// Whether `name` is a preset whose parts fix their own timing (--timing does not apply).
bool preset_fixes_timing(std::string_view name);

// The points of `parts` in order, each part expanded and timed by its own timing (else `t`),
// the skipped points of all parts together.
expansion expand_parts(const std::vector<preset_part>& parts, timing_mode t);

// The sample a point will yield, before it is timed (no time, no costs): its shape, timing,
// block, attention and decode fields (sim::des::decode_case_of reads a decode point this way).
sim::measured_sample sample_of(const point& p);

// A stable key that identifies a point's shape in a measurements file (used by --resume):
// sim::shape_key of sample_of(p), the key its row reads back with. Isolated points
// keep the keys of files written before timing existed; an in_block point's key is its
// block's key plus "|in_block" and, for an op row, "|" and the op, so the rows of one block,
// and the same op in two blocks of one shape, never collide. A fused-attention point's key
// ends in "|fused" (unfused keys are those of files written before the column).
std::string point_key(const point& p);

}  // namespace modsim::profiler
