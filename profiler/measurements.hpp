#pragma once
// The measurements CSV (contract): one row per (op or whole block, shape), appended and
// flushed one at a time, so a killed run loses at most the row in progress; --resume skips
// the rows already present and never writes one twice.
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "profiler/grid.hpp"
#include "sim/cost/calibrate.hpp"
#include "sim/cost/measurements.hpp"

namespace modsim::profiler {

// The file's row, columns and reader are sim's (sim/cost/measurements.hpp).
using sim::csv_header;
using sim::csv_layout;
using sim::format_row;
using sim::full_layout;
using sim::measurement_row;
using sim::parse_header;
using sim::parse_row;
using sim::read_measured_samples;
using sim::read_measurements;
using sim::sample_of;

// The row for point `p` measured with `stats` on `backend`/`device`; FLOPs and bytes come
// from sim/model/flops (the same functions as `modsim flops`).
struct sample_stats;
measurement_row make_row(const point& p, backend_kind backend, const std::string& device, const sample_stats& stats);
// matmul_flops, other_flops, bytes and tokens of point `p` per sim/model/flops. An in_block op
// point has the costs and tokens of the same op measured isolated on the block's shape.
void fill_costs(const point& p, measurement_row& row);
// The names of the ops of block point `p.block` on `p.shape`, as sim::block_costs lists
// them: the op rows an in_block run writes after the block's own row. Throws bad_input for
// an invalid block shape.
std::vector<modsim::op> block_ops(const point& p);

// sim/model/flops's view of point `p`'s shape (tokens = the block's tokens per sequence).
sim::op_shape op_shape_of(const point& p);

// Appends rows to a measurements file. Opening checks everything first and never truncates a
// file the user has: an existing file without `resume` is refused; with `resume` its header
// must match and a partial last line (from a killed run) is cut off.
class measurement_writer {
 public:
  measurement_writer(const std::string& path, bool resume);
  ~measurement_writer();
  measurement_writer(const measurement_writer&) = delete;
  measurement_writer& operator=(const measurement_writer&) = delete;

  bool contains(const point& p) const { return m_keys.count(point_key(p)) > 0; }
  std::size_t existing_rows() const { return m_existing; }
  // The file's columns: full_layout() for a new file, the existing header's on resume.
  const csv_layout& layout() const { return m_layout; }
  // Whether rows timed `t` fit the file's columns (an old header has no timing column, so
  // only isolated rows).
  bool accepts(timing_mode t) const;
  // The device recorded in the rows already there ("" when none).
  const std::string& existing_device() const { return m_device; }
  // Writes one row and flushes it to the file. Throws bad_input for an in_block row when the
  // file has no timing column.
  void append(const measurement_row& r);

 private:
  std::string m_path;
  std::FILE* m_file = nullptr;
  csv_layout m_layout;
  std::set<std::string> m_keys;
  std::size_t m_existing = 0;
  std::string m_device;
};

}  // namespace modsim::profiler
