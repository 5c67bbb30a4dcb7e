#pragma once
// One learnt efficiency curve of the calibrated cost model (sim/cost/cost.hpp says the model and
// why it has this form): per (op, dtype), time_s = fixed_s + q · roofline_s · g(log10
// roofline_s), with the CPU's row-count factors. The calibration record holds them
// (sim/cost/calibration_record.hpp); the cost model evaluates them.
#include <vector>

#include "core/op_table.hpp"
#include "core/types.hpp"

namespace modsim::sim {

// The rows a CPU GEMM kernel computes together (OpenBLAS's register tile along the rows of
// the activations; efficiency_curve::leftover_rows).
inline constexpr int k_row_group = 4;

// One learnt efficiency curve (see the top of sim/cost/cost.hpp).
struct efficiency_curve {
  modsim::op op = modsim::op::router;  // a kernel or model op (op_names())
  dtype type = dtype::fp32;
  double fixed_s = 0;                  // seconds per call, >= 0
  std::vector<double> log10_work;      // knots: log10 of the roofline seconds, ascending
  std::vector<double> inv_efficiency;  // g at each knot: time per roofline second, >= 0
  int samples = 0;                     // measured rows it was fitted on
  double rms_rel_error = 0;            // of the fit on those rows (0.05 = 5%)
  // A GEMM's speed at equal work depends on its row count M (batch × tokens) where a CPU
  // library takes other kernels for a few dozen rows. At each M below 128 rows measured 3
  // times or more (two such M at least), the median of measured / curve; 1 at 128 rows and
  // beyond; interpolated in log2 M and clamped at the ends: it multiplies the curve
  // (sim/cost/efficiency_fit.hpp fit_curve_with_rows; JSON "rows": [{"log2_rows", "factor"}],
  // absent: 1).
  std::vector<double> log2_rows;
  std::vector<double> rows_factor;
  // The CPU library computes a GEMM's rows in groups of k_row_group and takes slower edge
  // kernels for the 1-3 rows left over: a GEMM of M rows costs as much as M + leftover_rows[r - 1]
  // rows would at the curve's speed, r = M mod k_row_group (on the AMD EPYC's OpenBLAS 5.7,
  // 3.4 and 12.2 rows: up to 8 % at 135 rows). Fitted against neighbouring row counts of the same
  // GEMM (sim/cost/efficiency_fit.hpp fit_leftover_rows); JSON "leftover_rows": [r1, r2, r3], absent
  // (empty): none.
  std::vector<double> leftover_rows;

  // g(log10(roofline_s)), clamped at the end knots.
  double inv_efficiency_at(double roofline_s) const;
  // The row-count factor at `rows` (1 without one, or for rows <= 0).
  double rows_factor_at(double rows) const;
  // 1 + leftover_rows[r - 1] / rows for r = rows mod k_row_group > 0; 1 without leftover
  // rows, at a multiple of the group, or for rows < 1.
  double leftover_factor_at(double rows) const;
  // (fixed_s + quantised_roofline_s · g(log10(roofline_s))) · rows_factor_at(rows) · leftover_factor_at(rows).
  double time_s(double roofline_s, double quantised_roofline_s, double rows = 0) const;
};

}  // namespace modsim::sim
