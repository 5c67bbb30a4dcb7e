#pragma once
// Measures a list of points on one backend and appends one row per point to a measurements
// file as soon as it is measured.
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "profiler/decode_runner.hpp"
#include "profiler/grid.hpp"
#include "profiler/measure.hpp"
#include "profiler/measurements.hpp"

namespace modsim::profiler {

struct run_progress {
  std::size_t done = 0;      // points finished (measured, or already present), passes counted apart
  std::size_t measured = 0;  // of which measured in this run (the rest were in the file)
  std::size_t total = 0;     // points × passes; at the end done < total when the run was stopped
  double elapsed_s = 0;
  const point* current = nullptr;  // the point about to be measured; null at the end
  std::size_t retaken = 0;         // takes measured again so far (run_result::retaken)
};

struct run_options {
  stop_rule rule;
  int input_copies = 4;  // isolated: rotated between samples so a repeat does not time a warm cache
  std::uint64_t seed = 1;
  const std::atomic<bool>* stop = nullptr;               // set (e.g. by SIGINT) to stop after the current point
  std::function<void(const run_progress&)> on_progress;  // may be empty
  bool keep_block_samples = false;  // in_block points: keep every sample in run_result::in_block_samples
  // Passes over the points (>= 1): each pass measures every point in the same order (the
  // blocks first, then the decode points); a point's row is written in the last pass from all
  // of its passes (combine_passes), so a slow spell of the machine that falls on one pass of a
  // point is outvoted. A run stopped early (or failing) writes each point measured so far with the passes
  // it had. in_block_samples then holds one entry per pass.
  int passes = 1;
  // Decode points (decode_dense, decode_mod, decode_step) run on states this makes; without it
  // a decode point is refused (bad_input).
  decode_factory make_decode;
  // Time the anchor (profiler/anchor.hpp) just before and just after every point and record
  // its median in each of the point's rows (anchor_s; with several passes, the median of the
  // passes' anchors).
  bool anchor = true;
  // With the anchor: a point whose anchor ran more than this many percent slower than the
  // machine's recent speed (the median anchor of the last k_speed_window points kept) was
  // measured in a slow spell and is measured again, up to `retakes` times, after waiting
  // retake_wait_s (spells last seconds); the last take is kept whatever its speed (its row
  // records its anchor). 0: never retake.
  double retake_slower_pct = 10;
  int retakes = 2;
  double retake_wait_s = 0.5;
};

// The recent speed a take's anchor is compared with: the median of the last k_speed_window
// kept anchors, once there are k_speed_min.
inline constexpr int k_speed_window = 16;
inline constexpr int k_speed_min = 4;

// The samples of one in_block point, all from the same boundaries of each run of the block:
// sample j's op times op_s[0][j], op_s[1][j], ... add up (in this order) to block_s[j].
struct block_samples {
  point block;                            // the in_block block point
  std::vector<kernels::op> ops;           // the block's ops as sim::block_costs lists them
  std::vector<double> block_s;            // seconds of each sample of the block
  std::vector<std::vector<double>> op_s;  // op_s[i][j]: seconds of ops[i] in sample j
  sample_stats stats;                     // of block_s, with the stopping rule's verdict
};

struct run_result {
  std::size_t measured = 0;
  std::size_t workspaces_made = 0;  // backend::make_workspace calls (see plan_workspaces)
  double setup_s = 0;               // wall seconds in make_workspace (buffers, weights, one layer)
  double sampling_s = 0;            // wall seconds measuring (warm-up, samples, retakes)
  std::size_t already_present = 0;  // skipped because --resume found them in the file
  bool interrupted = false;
  std::size_t dropped_throttled = 0;  // samples retaken because the device was throttled
  std::size_t retaken = 0;    // takes measured again because the anchor ran slow around them (retake_slower_pct)
  std::size_t kept_slow = 0;  // points kept slow after their last retake
  std::size_t sampled_past_max_time = 0;  // points still imprecise at max_time_s, sampled on (noisy_max_time_s)
  // With several passes: each point's pass_spread_pct (blocks and decode points; an in_block
  // point's block row), in the order written.
  std::vector<double> pass_spread_pct;
  // With the anchor: each point's anchor seconds (its block row's), in the order written.
  std::vector<double> anchor_s;
  std::vector<measurement_row> rows;            // the rows written by this run
  std::vector<block_samples> in_block_samples;  // in_block points, with options.keep_block_samples
};

// The order run_points measures points in and the workspace each one runs on. Points are
// taken shape group by shape group (a run of consecutive points with the same model shape:
// dtype, batch, seq_len, d_model, heads, kv heads, d_head, d_ff, mlp), and inside a group
// workspace by workspace, so that each workspace is made once (weights drawn, buffers
// allocated, the layer run once) and serves every point of its shape. The ops that do not
// depend on the capacity (block_dense, router: they read x and weights only and write every
// buffer they read afterwards) run on the group's first non-MoE workspace at whatever capacity
// it has, after the points of that capacity, so no other point sees what they leave behind;
// where the group has no such workspace they get one of their own. Inside a workspace the
// points keep their grid order. The rows written are the same (same keys, same columns) as
// for the grid order; only their order in the file may differ inside a shape group.
struct workspace_plan {
  struct step {
    std::size_t point = 0;      // index into the points given
    std::size_t workspace = 0;  // index into `workspaces`
  };
  std::vector<step> steps;        // every point exactly once; a workspace's steps are consecutive
  std::vector<point> workspaces;  // the shape and dtype each workspace is made with
};
workspace_plan plan_workspaces(const std::vector<point>& points);

// One timed repeat of `o` in seconds: rotate the inputs, flush the device cache, time with the
// backend's clock (CUDA events on a GPU); samples taken while the device reports throttling
// are retaken and counted in `dropped` (may be null).
double time_once(kernels::backend& be, kernels::op o, kernels::workspace& ws, std::size_t* dropped = nullptr);

// Times in_block point `p` (a block) on `ws` warm: the whole block again and again (warm-up,
// then samples under `rule`), no input rotation and no cache flush, as in a forward pass;
// every sample times each op of the block from the block's own timeline
// (kernels::backend::timed_block_run). Samples taken while the device reports throttling are
// retaken and counted in `dropped` (may be null). Throws modsim::error (runtime) when the
// backend ran other ops, or in another order, than sim::block_costs lists.
block_samples sample_in_block(kernels::backend& be, const point& p, kernels::workspace& ws, const stop_rule& rule,
                              std::size_t* dropped = nullptr);

// Measures `points`, skipping those `out` already holds: block and op points in order, then the
// decode points (profiler/decode_runner.hpp), each on a decode state of its own. An isolated point is timed
// alone (time_once) and writes one row. An in_block point (a block, see with_timing) writes the
// block's row and one row per op of the block (sample_in_block), each with the block's shape
// columns and the costs of that op measured isolated on it; on resume only the rows missing
// are written. Throws bad_input before measuring an in_block point when `out` cannot hold
// in_block rows (an old header).
run_result run_points(kernels::backend& be, const std::vector<point>& points, measurement_writer& out,
                      const run_options& options);

}  // namespace modsim::profiler
