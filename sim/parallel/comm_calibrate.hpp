#pragma once
// Fits collectives to nccl-tests' output (sim/parallel/nccl_tests.hpp) and writes the fits into a
// hardware file as `interconnect.calibration` (`modsim comm calibrate`).
//
// One fit per (collective, link class): the out-of-place times t_i of rows of size N_i are
// fitted by t = alpha + x / B with x_i = N_i x busbw_factor(G) ("bus bytes") by least squares on
// the relative residuals (minimise sum ((alpha + x_i / B - t_i) / t_i)^2, so a 10 us row and a
// 10 ms row weigh alike), alpha >= 0; B (bus_bytes_s) must come out positive. With at least
// k_min_sizes_for_ramp sizes the bus bandwidth may saturate instead (sim/model/spec.hpp's
// collective_fit): every pair of the file's sizes is tried as the ramp's ends, each fitted the
// same way (three terms: alpha, the time per bus byte below and above the ramp; the bandwidth may
// not fall with the size), and the best ramp is kept when it halves the line's squared error
// and the line is off by more than 0.1 % rms. The fit records its error on its own rows, also
// split at 1 MiB. The link class is
// inter_node when the run's Rank lines name more than one host, intra_node when they name one;
// without Rank lines, G > gpus_per_node decides.
#include <boost/json.hpp>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "sim/parallel/comm.hpp"
#include "sim/parallel/nccl_tests.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim {

constexpr std::size_t k_min_sizes_for_ramp = 8;
constexpr std::int64_t k_one_mib = std::int64_t{1} << 20;

struct comm_fit_options {
  std::optional<collective> op;  // overrides the table's own
  int gpus = 0;                  // > 0 overrides the table's own
  std::int64_t min_bytes = 0;    // rows fitted: min_bytes <= size <= max_bytes
  std::int64_t max_bytes = std::numeric_limits<std::int64_t>::max();
  // Rows kept by their index in the file (all its rows, counted from 0): every `every`-th
  // starting at `offset` (every = 1: all of them), so that offset 0 and offset 1 of every 2
  // split a file in two whatever the size range.
  int every = 1;
  int offset = 0;
  // The latency floor, seconds, when the rows cannot show it (a run without small sizes):
  // alpha is fixed at this value, only the bus bandwidth is fitted (a line, no ramp), and the
  // fit records floor_source "given". nullopt: alpha is fitted.
  std::optional<double> floor_s;
};

// The line through (x_i, t_i) minimising the relative residuals, alpha >= 0. Returns
// {alpha, beta} (beta = 1 / bandwidth); beta <= 0 when the times do not grow with x.
struct line_fit {
  double alpha = 0, beta = 0;
};
line_fit fit_relative_line(const std::vector<double>& x, const std::vector<double>& t);

// The link class the table's rows ran over (see above).
link_class table_link(const nccl_table& t, const interconnect_spec& ic);

// Fits one table (o.floor_s: with that floor, see comm_fit_options). Throws modsim::error(bad_input) naming the file
// when the collective or the GPU count is unknown, fewer than two distinct sizes are in range, or the bandwidth is not
// positive.
collective_fit fit_nccl_table(const nccl_table& t, const interconnect_spec& ic, const comm_fit_options& o);

// Predicted vs measured, row by row (the prediction from `hw` as `modsim comm` makes it).
struct comm_check_row {
  std::int64_t bytes = 0;
  double measured_s = 0;
  double predicted_s = 0;
  double pct_error = 0;  // 100 (predicted - measured) / measured
};
std::vector<comm_check_row> check_nccl_table(const nccl_table& t, const hardware_spec& hw, const comm_fit_options& o);

// The median of |pct_error| (0 for none).
double median_abs_pct_error(const std::vector<comm_check_row>& rows);

// A fit as the hardware file's interconnect.calibration.fits[] entry (and `modsim comm`'s JSON).
boost::json::object collective_fit_json(const collective_fit& f);

// Writes a copy of the hardware file at `hardware_path` with interconnect.calibration set to
// `fits` (source: `source`, date `date`), the name given a "-calibrated" suffix, to `out_path`
// (atomically; JSON laid out by sim/common/io's pretty_json). The file must have an interconnect
// object. Throws modsim::error.
void write_comm_calibrated_hardware(const std::string& hardware_path, const std::vector<collective_fit>& fits,
                                    const std::string& source, const std::string& date, const std::string& out_path);

}  // namespace modsim::sim
