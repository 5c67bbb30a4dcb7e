#pragma once
// The measurements CSV (contract): one row per (op or whole block, shape), appended and
// flushed one at a time, so a killed run loses at most the row in progress; --resume skips
// the rows already present and never writes one twice.
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "profiler/grid.hpp"
#include "sim/calibrate.hpp"

namespace modsim::profiler {

struct measurement_row {
  // Contract columns, in order.
  std::string backend;
  std::string device;
  std::string op;
  std::string dtype;
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
  std::string mlp = "gelu";
  std::string variant = "none";  // layer_mode / MoE ops: staged | integrated
  int experts = 0;
  int noop_experts = 0;
  double capacity_factor = 0;
  std::int64_t other_flops = 0;
};

// The header line (no newline).
const std::string& csv_header();
std::string format_row(const measurement_row& r);
// Parses one data line; throws modsim::error(bad_input) naming file:line and the column.
measurement_row parse_row(const std::string& line, const std::string& file, int line_no);
// All rows of a measurements file (header checked). A partial last line (a run killed while
// writing) is ignored.
std::vector<measurement_row> read_measurements(const std::string& path);

// A measurements file as the cost model's measured points (calibrate, validate, the report
// and the GUI read it this way). Throws bad_input naming file:line for a bad row and for a
// file with no rows.
std::vector<sim::measured_point> read_measured_points(const std::string& path);

// The point a row measured (for resume keys and for re-running a shape).
point point_of(const measurement_row& r);
// The row for point `p` measured with `stats` on `backend`/`device`; FLOPs and bytes come
// from sim/flops (the same functions as `modsim flops`).
struct sample_stats;
measurement_row make_row(const point& p, const std::string& backend, const std::string& device,
                         const sample_stats& stats);
// matmul_flops, other_flops, bytes and tokens of point `p` per sim/flops.
void fill_costs(const point& p, measurement_row& row);

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
  // The device recorded in the rows already there ("" when none).
  const std::string& existing_device() const { return m_device; }
  // Writes one row and flushes it to the file.
  void append(const measurement_row& r);

 private:
  std::string m_path;
  std::FILE* m_file = nullptr;
  std::set<std::string> m_keys;
  std::size_t m_existing = 0;
  std::string m_device;
};

}  // namespace modsim::profiler
