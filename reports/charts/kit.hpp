#pragma once
// The chart kit: what the chart builders of reports/charts.hpp share (palette, axes labelled in
// display units, text fitted to the chart's size, the fitted chart itself). Internal to
// reports/charts/: the GUI and the report use reports/charts.hpp, never this header.
//
//   kit.cpp      palette, colours, axis style, new and empty charts, attaching a series
//   axes.cpp     display units and ticks, value and log axes, relabelling for the room they get
//   fitting.cpp  titles, legend entries and category labels wrapped and shrunk to fit
//
// Ownership as in reports/charts.hpp: every axis, series and chart made here is new and without
// parent; adding it to a chart hands it over.
#include <QColor>
#include <QGraphicsSceneResizeEvent>
#include <QSizeF>
#include <QString>
#include <QtCharts/QAbstractAxis>
#include <QtCharts/QAbstractSeries>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QChart>
#include <QtCharts/QLogValueAxis>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace modsim::reports::chart_kit {

QString qs(const std::string& s);

// Entry `i` (modulo its size) of a colour-blind-friendly qualitative palette.
QColor colour(std::size_t i);

const QColor k_front(0x22, 0x22, 0x22);
const QColor k_highlight(0xD6, 0x27, 0x28);

// Titles `axis` and gives it modsim's fonts and colours.
void style_axis(QAbstractAxis* axis, const std::string& title);

// ---- Display units and ticks (axes.cpp) ------------------------------------------------------
// Value axes are QCategoryAxis (a QValueAxis whose labels are ours): the data stay in the
// chart's base unit (GFLOP, ms) while the labels are plain numbers (never "5e+04") in the unit
// the range calls for, named in the axis title.

struct unit_choice {
  double divisor = 1;  // display value = base value / divisor
  QString unit;        // "" = no unit family (the title is kept as given)
};

// The axis title's unit family: "(GFLOP)" → FLOPs, "(ms)" → time; anything else is shown as is.
enum class family { none, flops, time };
family family_of(const QString& title);

// The unit that keeps the largest magnitude `max_abs` (in the base unit) within [1, 1000).
unit_choice unit_for(family f, double max_abs);

// `title` with its unit ("(GFLOP)", "(ms)") replaced by `u`'s.
QString titled_with_unit(const QString& title, family f, const unit_choice& u);

// The range of a log axis showing [lo, hi] (> 0): from the largest 1-2-5 value <= lo to the
// smallest >= hi.
std::pair<double, double> log_range(double lo, double hi);

// (Re)labels a value axis for `room` pixels along it: as many labels as Qt can draw whole (it
// gives each label the axis length / (labels + 1), less 2 × 5 px of padding).
void relabel(QCategoryAxis* axis, double room, bool horizontal);

// The layer axis of the per-layer chart: labels "0", "s", "2s", ... under the middle of each
// layer's pair of bars (indices 3·layer and 3·layer + 1; 3·layer + 2 is the empty slot that
// keeps one layer's bars apart from the next's), the stride s the smallest of 1, 2, 5, 10, 20,
// 50... that Qt can draw whole in `room` pixels; the range spans every bar.
const char* const k_layer_axis = "modsim_layer_axis";
constexpr int k_layer_slots = 3;  // bar slots per layer: baseline, current, gap

void relabel_layers(QCategoryAxis* axis, double room);

// A linear value axis over [lo, hi] (base units), labelled with plain numbers in the unit the
// range calls for.
QCategoryAxis* value_axis(const std::string& title, double lo, double hi);

// A log10 axis over [lo, hi] (display units, > 0) at 1-2-5 steps.
QCategoryAxis* log_axis(const QString& title, double lo, double hi);

// A horizontal log axis labelled at the powers of its base (Qt's QLogValueAxis): with too little
// room for every power Qt cuts the labels ("1…"), so the base steps up to base², base⁴... (the
// labels stay powers of the first base: 1, 4, 16, 64, 256 for 2) until each label fits. Qt gives
// a label the axis length / labels, less 2 × 5 px of padding and 2 × 4 px of text margin.
void thin_log_labels(QLogValueAxis* axis, double room);

// ---- Fitting text to the size the chart is drawn at (fitting.cpp) ----------------------------
// Qt elides a title, axis title, category label or legend entry that is wider than its room
// ("mem-b…"). A fitted_chart keeps the full texts and, whenever it is resized (render_svg/png,
// a QChartView), wraps them into lines and steps their fonts down until they fit.

class fitted_chart : public QChart {
 public:
  void set_full_title(const QString& t) {
    m_title = t;
    setTitle(t);
    m_fitted_title = t;
  }
  QString full_title() const { return title() == m_fitted_title ? m_title : title(); }
  void fit(const QSizeF& size);

 protected:
  void resizeEvent(QGraphicsSceneResizeEvent* event) override {
    QChart::resizeEvent(event);
    fit(event->newSize());
  }

 private:
  QString m_title, m_fitted_title;
};

// A category axis whose labels are fitted to the room each category gets; '\n' in a label is
// a line break.
QBarCategoryAxis* category_axis(const std::vector<std::string>& labels);

// ---- Charts and series (kit.cpp) -------------------------------------------------------------

// A new chart of modsim's: fitted to its size (above) and styled.
fitted_chart* new_chart(const std::string& title);

// A chart titled "TITLE (no data)" ("no data" when `title` is empty), nothing in it.
QChart* empty_chart(const std::string& title);

// Adds `series` to `chart` and attaches it to the axes `x` and `y` (already added).
void attach(QChart* chart, QAbstractSeries* series, QAbstractAxis* x, QAbstractAxis* y);

// Finite, strictly positive (for log axes) values only.
bool usable(double v);
bool usable_positive(double v);

}  // namespace modsim::reports::chart_kit
