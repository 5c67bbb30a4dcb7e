#pragma once
// modsim's charts, shared by `modsim report` (rendered to SVG/PNG) and the Qt GUI (shown in a
// QChartView). Each builder takes a plain struct of reports/chart_data.hpp and returns a new
// QChart with a title, labelled axes (with units) and modsim's style.
//
// Ownership: every builder returns a QChart without parent; the caller owns it (a QChartView
// given it with setChart() takes it over). Builders never return null and never throw for
// empty inputs: an empty input gives an empty chart whose title says "no data".
//
// Qt Charts needs a QApplication (QChart is a QGraphicsWidget). Headless use: set
// QT_QPA_PLATFORM=offscreen before creating it; ensure_application() does both when none
// exists (the CLI calls it).
#include <QByteArray>
#include <QSize>
#include <QtCharts/QChart>

#include "reports/chart_data.hpp"

namespace modsim::reports {

// Predicted wall-clock vs FLOPs: one scatter series per group, the Pareto front as a line
// (points with pareto == true, in order of FLOPs), highlighted points as large stars.
QChart* make_pareto_chart(const pareto_chart_input& in);

// Grouped (or stacked, in.stacked) bars, e.g. FLOPs per forward pass by op class, dense vs MoD.
QChart* make_bar_chart(const bar_chart_input& in);

// Per layer, predicted time stacked by op class: for each layer the dense bar (left,
// unlabelled) and the current configuration's bar (right, labelled with the layer index); the
// legend names the classes, the x-axis title says which bar is which.
QChart* make_layer_time_chart(const layer_time_input& in);

// Waterfall: total bars from zero, delta bars floating on the running sum (green when they
// lower the sum, red when they raise it), the value printed on each bar.
QChart* make_waterfall_chart(const waterfall_input& in);

// Empirical CDFs (step lines) of latency series, one per series; x in ms.
QChart* make_latency_chart(const latency_chart_input& in);

// Measured vs predicted on log-log axes with the y = x line (and ±25% guides).
QChart* make_diagonal_chart(const diagonal_input& in);

// Ratio lines over a log₂ x axis (the sampling map: MoD / baseline step ratio vs batch, one
// line per context), measured points as markers, the target and 1.0 as dashed lines.
QChart* make_ratio_chart(const ratio_chart_input& in);

// Applies modsim's look (fonts, colours, margins, legend at the bottom). The builders call it.
void apply_style(QChart* chart);

// Renders `chart` at `size` (pixels) as an SVG document (QSvgGenerator) / PNG image. The chart
// is not modified beyond being laid out at `size`; it stays owned by the caller. Needs a
// QApplication.
QByteArray render_svg(QChart* chart, QSize size = QSize(900, 520));
QByteArray render_png(QChart* chart, QSize size = QSize(900, 520), qreal device_pixel_ratio = 1.0);

// Creates a QApplication when none exists (QT_QPA_PLATFORM=offscreen unless already set) and
// returns true; false when one cannot be created. For the CLI and tests, not for the GUI.
bool ensure_application();

}  // namespace modsim::reports
