#pragma once
// The inputs of modsim's charts: plain structs, no Qt. The report (reports/report.hpp) and the
// GUI fill them from sim results and hand them to the builders of reports/charts.hpp, so a
// chart in the report and the same chart in the GUI are drawn by one piece of code. A build
// without Qt still uses these structs for the report's tables.
//
// Units are part of each field's name (seconds `_s`, FLOPs); the builders choose display units
// (ms, GFLOP) and say them on the axes.
#include <string>
#include <utility>
#include <vector>

namespace modsim::reports {

// --- Predicted wall-clock vs FLOPs over a design space, Pareto front as a line. -------------
struct scatter_point {
  std::string label;       // e.g. "MoD c=0.125 every_other" (the tooltip / legend text)
  std::string group;       // one series per group, e.g. the variant "dense", "MoD", "MoE"
  double flops = 0;        // matmul FLOPs per forward pass
  double time_s = 0;       // predicted wall-clock of the forward pass, seconds
  bool pareto = false;     // on the front (joined by a line, in order of flops)
  bool highlight = false;  // drawn as a large star (the paper's point)
};
// A horizontal line at a time (e.g. the baseline's step, or the time a target speed-up needs).
struct time_reference {
  std::string label;  // legend entry
  double time_s = 0;
  bool target = false;  // drawn red (a goal) rather than grey (a reference)
};
struct pareto_chart_input {
  std::string title;
  std::string x_label = "matmul FLOPs per forward pass (GFLOP)";
  std::string y_label = "predicted wall-clock (ms)";
  std::vector<scatter_point> points;
  std::vector<time_reference> references;  // dashed horizontal lines across the plot
};

// --- Bars: grouped (dense vs MoD per op class) or stacked (time per layer by op class). -----
struct bar_set {
  std::string name;            // legend entry
  std::vector<double> values;  // one per category, already in the display unit
  int colour_index = -1;       // palette entry; -1 = the set's position
};
struct bar_chart_input {
  std::string title;
  std::string x_label;                  // category axis, e.g. "op class"
  std::string y_label;                  // value axis with its unit, e.g. "GFLOP"
  std::vector<std::string> categories;  // e.g. op classes, or layers
  std::vector<bar_set> sets;            // grouped side by side, or stacked when `stacked`
  bool stacked = false;
};

// --- Per layer, time stacked by op class, dense beside the current configuration. -----------
struct layer_time_input {
  std::string title;
  std::string y_label = "predicted time (ms)";
  std::string dense_name = "dense";
  std::string current_name = "MoD";
  std::vector<std::string> classes;  // op classes, stacking order
  // [layer][class] in seconds; both have the same number of layers.
  std::vector<std::vector<double>> dense_s;
  std::vector<std::vector<double>> current_s;
};

// --- Waterfall: from the FLOP saving to the wall-clock saving. ------------------------------
struct waterfall_step {
  std::string label;
  double value = 0;    // in the chart's unit (e.g. % of dense time); deltas are signed
  bool total = false;  // a bar from zero (start / end), else a delta from the running sum
};
struct waterfall_input {
  std::string title;
  std::string y_label = "% of the dense forward pass";
  std::vector<waterfall_step> steps;
};

// --- Latency distributions (serving): empirical CDFs, or percentiles when no samples. -------
struct latency_series {
  std::string name;               // e.g. "dense TTFT"
  std::vector<double> samples_s;  // per-request values, seconds (may be empty)
  // Used when samples_s is empty: (quantile in [0,1], value in seconds), ascending.
  std::vector<std::pair<double, double>> quantiles_s;
};
struct latency_chart_input {
  std::string title;
  std::string x_label = "latency (ms)";
  std::string y_label = "fraction of requests";
  std::vector<latency_series> series;
};

// --- Measured vs predicted, log-log, the y = x line, error summary in the title. ------------
struct diagonal_point {
  std::string label;
  std::string group;  // one series per group, e.g. "block_dense", "block_mod"
  double measured_s = 0;
  double predicted_s = 0;
};
struct diagonal_input {
  std::string title;  // the builder appends nothing; put the error summary here
  std::string x_label = "measured (ms)";
  std::string y_label = "predicted (ms)";
  std::vector<diagonal_point> points;
};

// --- Sampling: a ratio against a log₂ x axis, one line per series (e.g. the MoD / baseline ----
// decode step ratio vs batch, one line per context), measured points, a target line. -------
struct ratio_line {
  std::string name;                               // legend entry, e.g. "context 2048"
  std::vector<std::pair<double, double>> points;  // (x > 0, ratio), ascending x
};
struct ratio_chart_input {
  std::string title;
  std::string x_label = "decode batch (sequences)";
  std::string y_label = "time, MoD / baseline";  // short: it must fit a 260 px high chart
  std::vector<ratio_line> lines;
  std::vector<ratio_line> measured;  // drawn as points, no line
  double target_ratio = 0;           // > 0: a dashed line, named target_name
  std::string target_name;
  // Points of the lines that do not count (e.g. cells that do not fit in memory): (x, ratio),
  // drawn over the lines as greyed markers, one legend entry named excluded_name.
  std::vector<std::pair<double, double>> excluded;
  std::string excluded_name;
};

}  // namespace modsim::reports
