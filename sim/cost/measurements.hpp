#pragma once
// The measurements CSV (contract, docs/contracts.md "Measurements CSV"): its row, its columns
// and layouts, reading a file and a row as the cost model's measured sample. The profiler
// writes these files (profiler/measurements.hpp: the row a point yields, the writer);
// calibrate, validate, the report and the explorer read them through here, so that reading
// measurements needs neither the profiler nor the kernels.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/op_table.hpp"
#include "core/types.hpp"
#include "sim/cost/calibrate.hpp"

namespace modsim::sim {

struct measurement_row {
  // Contract columns, in order.
  std::optional<backend_kind> backend;  // empty: the cell is empty
  std::string device;
  modsim::op op = modsim::op::router;  // parse_row refuses a name the op table does not have
  dtype type = dtype::fp32;            // the CSV's dtype column
  std::int64_t batch = 0;
  std::int64_t seq_len = 0;
  std::int64_t d_model = 0;
  std::int64_t n_heads = 0;
  std::int64_t d_ff = 0;
  double capacity = 1.0;
  std::int64_t tokens = 0;  // tokens the op works on, whole batch (B·k for routed ops and blocks)
  std::int64_t matmul_flops = 0;
  std::int64_t bytes = 0;
  double median_s = 0;
  double p10_s = 0;
  double p90_s = 0;
  int samples = 0;
  // Further columns.
  std::int64_t n_kv_heads = 0;
  mlp_kind mlp = mlp_kind::gelu;
  moe_variant variant = moe_variant::none;  // layer_mode / MoE ops: staged | integrated
  int experts = 0;
  int noop_experts = 0;
  double capacity_factor = 0;
  std::int64_t other_flops = 0;
  // Appended later; a file without them reads as isolated, unfused, "".
  timing_mode timing = timing_mode::isolated;
  attention_impl attention = attention_impl::unfused;  // how the row's blocks ran attention
  // in_block rows: the block whose runs timed the row (the row's own op for the block row);
  // none for isolated rows (the column is empty). Tells apart the same op timed in two blocks
  // of one shape (a block_dense and a block_mod at capacity 1).
  std::optional<modsim::op> block;
  // Decode rows (decode_dense, decode_mod, decode_step); "" / 0 for the others. A file
  // without these columns reads as "".
  std::optional<decode_run> decode_routing;  // sync | pad | graph; empty: the cell is empty
  double pad_capacity = 0;                   // pad, graph: the padded block's capacity
  std::int64_t predictor_hidden = 0;
  std::string model;  // decode_step: the model (a name under configs/models/, or a path)
  // The machine's speed while the row was measured: the median seconds of the anchor
  // (profiler/anchor.hpp), a fixed small block timed just before and just after the row's
  // point, so that a slow spell of the machine can be told from the op. 0 (an empty column,
  // or a file without it): not measured.
  double anchor_s = 0;
  // Training rows (block_dense_train, block_mod_train): what the forward kept for the backward
  // (none for every other row; an empty column, or a file without it, reads as none).
  modsim::recompute recompute = modsim::recompute::none;
};

// The columns a measurements file has, in its header's order: the contract columns through
// other_flops, then any of timing, attention, block, decode_routing, pad_capacity,
// predictor_hidden, model, anchor_s, recompute. Files written before those columns
// existed have only the first part and are still read and resumed.
struct csv_layout {
  std::vector<std::size_t> columns;  // indices into the full column list
  bool has(std::string_view column) const;
};
// Every column this version writes (new files).
const csv_layout& full_layout();
// The layout a header line declares; throws bad_input naming `file` for a header that is not
// the contract columns followed by known optional ones.
csv_layout parse_header(const std::string& line, const std::string& file);

// The header line (no newline) of `layout` (default: every column).
std::string csv_header(const csv_layout& layout = full_layout());
std::string format_row(const measurement_row& r, const csv_layout& layout = full_layout());
// Parses one data line; throws modsim::error(bad_input) naming file:line and the column.
measurement_row parse_row(const std::string& line, const std::string& file, int line_no,
                          const csv_layout& layout = full_layout());
// All rows of a measurements file (header checked; its layout stored in `layout` when not
// null). A partial last line (a run killed while writing) is ignored.
std::vector<measurement_row> read_measurements(const std::string& path, csv_layout* layout = nullptr);

// A measurements file as the cost model's measured samples (calibrate, validate, the report
// and the GUI read it this way), each with its key (sim::shape_key) and, for decode_step, its
// model loaded; sim::with_costs adds their shapes and costs. Throws bad_input naming
// file:line for a bad row and for a file with no rows.
std::vector<sim::measured_sample> read_measured_samples(const std::string& path);
// One row as the cost model's measured sample (`where` = "FILE:LINE"), without its key
// (sim::shape_key of it), its costs and a decode_step row's model loaded: the one conversion
// from the file's row to the sample.
sim::measured_sample sample_of(const measurement_row& r, const std::string& where);

}  // namespace modsim::sim
