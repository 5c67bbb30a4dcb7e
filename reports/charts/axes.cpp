// The chart kit's axes: display units and ticks, value and log axes labelled with plain
// numbers, relabelled (as are the per-layer axis and Qt's log axes) for the room they get.
#include <QFontMetricsF>
#include <QVariant>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QLogValueAxis>
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "reports/charts/kit.hpp"

namespace modsim::reports::chart_kit {
namespace {

// A number as an axis label: fixed notation with `decimals` digits, never an exponent, no "-0".
QString plain_number(double v, int decimals) {
  QString t = QString::number(v, 'f', std::max(0, decimals));
  bool all_zero = true;
  for (QChar c : t)
    if (c != '-' && c != '0' && c != '.') all_zero = false;
  if (all_zero && t.startsWith('-')) t.remove(0, 1);
  return t;
}

// Decimals that print every multiple of `step` exactly (step = m·10^k, m in {1, 2, 2.5, 5}).
int decimals_for(double step) {
  int d = 0;
  while (d < 12 && std::abs(step * std::pow(10.0, d) - std::round(step * std::pow(10.0, d))) > 1e-6) ++d;
  return d;
}

// Evenly spaced ticks at a nice step (1, 2, 2.5 or 5 × 10^k) covering [lo, hi], about `target`
// of them.
std::vector<double> nice_ticks(double lo, double hi, int target = 6) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw * 0.999) {
      step = m * mag;
      break;
    }
  const double first = std::floor(lo / step + 1e-9) * step;
  const double last = std::ceil(hi / step - 1e-9) * step;
  std::vector<double> ticks;
  for (int i = 0; first + i * step <= last + step * 1e-6 && i < 100; ++i) ticks.push_back(first + i * step);
  if (ticks.size() < 2) ticks.push_back(first + step);
  return ticks;
}

// Puts `labels` at `positions` (data coordinates, ascending) on a category axis whose range is
// [lo, hi].
void set_positioned_labels(QCategoryAxis* axis, const std::vector<double>& positions, const QStringList& labels,
                           double lo, double hi) {
  for (const QString& l : axis->categoriesLabels()) axis->remove(l);
  axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
  axis->setStartValue(lo - std::max(hi - lo, 1e-300) * 1e-9);
  for (std::size_t i = 0; i < positions.size(); ++i) axis->append(labels[static_cast<int>(i)], positions[i]);
  axis->setRange(lo, hi);
}

// The values m·10^k for m in `mantissas` and k a multiple of `decade_stride`, in [lo, hi]
// (a relative tolerance of 1e-9).
std::vector<double> log_values(double lo, double hi, const std::vector<double>& mantissas, int decade_stride) {
  std::vector<double> out;
  const int k0 = static_cast<int>(std::floor(std::log10(lo))) - 1;
  const int k1 = static_cast<int>(std::ceil(std::log10(hi))) + 1;
  for (int k = k0; k <= k1; ++k) {
    if (((k % decade_stride) + decade_stride) % decade_stride != 0) continue;
    for (double m : mantissas) {
      const double v = m * std::pow(10.0, k);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
    }
  }
  return out;
}

// Labels of a log axis over [lo, hi] (a log_range): the 1-2-5 values, or 1-3, or the powers of
// ten, or every 2nd, 3rd, 5th power of ten — the first with at most `max_ticks`.
std::vector<double> log_ticks(double lo, double hi, std::size_t max_ticks = 10) {
  struct rule {
    std::vector<double> mantissas;
    int decade_stride;
  };
  const std::vector<rule> rules = {{{1, 2, 5}, 1}, {{1, 3}, 1}, {{1}, 1}, {{1}, 2}, {{1}, 3}, {{1}, 5}};
  std::vector<double> out;
  for (const rule& r : rules) {
    std::vector<double> v = log_values(lo, hi, r.mantissas, r.decade_stride);
    if (v.empty()) continue;
    out = std::move(v);
    if (out.size() <= max_ticks) break;
  }
  if (out.empty()) out = {lo, hi};
  return out;
}

// A number at its own precision, never an exponent: 0.02, 0.5, 2, 50, 2000.
QString plain_log_number(double v) {
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(v) + 1e-9)));
  return plain_number(v, decimals);
}

// How a value axis (a QCategoryAxis with our labels) is labelled, kept on the axis so that the
// number of labels can follow the room it gets: [log (bool), lo, hi (display units), divisor
// (base units per display unit)]. Log axes hold log10 of the display value.
const char* const k_axis_spec = "modsim_axis_spec";

// Labels at most `max_labels` (and at least two) over the axis's range; their positions in data
// coordinates and the range they span.
void axis_labels(const QVariantList& spec, int max_labels, std::vector<double>* positions, QStringList* labels,
                 double* lo_out, double* hi_out) {
  const bool log = spec[0].toBool();
  const double lo = spec[1].toDouble(), hi = spec[2].toDouble(), divisor = spec[3].toDouble();
  positions->clear();
  labels->clear();
  if (log) {
    const auto [range_lo, range_hi] = log_range(lo, hi);
    const std::vector<double> ticks = log_ticks(range_lo, range_hi, static_cast<std::size_t>(std::max(1, max_labels)));
    for (double t : ticks) {
      positions->push_back(std::log10(t));
      *labels << plain_log_number(t);
    }
    *lo_out = std::log10(range_lo);
    *hi_out = std::log10(range_hi);
    return;
  } else {
    std::vector<double> shown;
    for (int target = std::max(2, max_labels); target >= 2; --target) {
      shown = nice_ticks(lo, hi, target);
      if (static_cast<int>(shown.size()) <= std::max(2, max_labels)) break;
    }
    const int decimals = decimals_for(shown.size() > 1 ? shown[1] - shown[0] : 1.0);
    for (double v : shown) {
      positions->push_back(v * divisor);
      *labels << plain_number(v, decimals);
    }
  }
  *lo_out = positions->front();
  *hi_out = positions->back();
}

const char* const k_log_base = "modsim_log_base";  // the base the caller gave

}  // namespace

family family_of(const QString& title) {
  if (title.contains(QStringLiteral("(GFLOP)"))) return family::flops;
  if (title.contains(QStringLiteral("(ms)"))) return family::time;
  return family::none;
}

unit_choice unit_for(family f, double max_abs) {
  if (f == family::flops) {
    if (max_abs >= 1e6) return {1e6, QStringLiteral("PFLOP")};
    if (max_abs >= 1e3) return {1e3, QStringLiteral("TFLOP")};
    if (max_abs > 0 && max_abs < 1) return {1e-3, QStringLiteral("MFLOP")};
    return {1, QStringLiteral("GFLOP")};
  }
  if (f == family::time) {
    if (max_abs >= 1e3) return {1e3, QStringLiteral("s")};
    if (max_abs > 0 && max_abs < 1) return {1e-3, QStringLiteral("µs")};
    return {1, QStringLiteral("ms")};
  }
  return {1, QString()};
}

QString titled_with_unit(const QString& title, family f, const unit_choice& u) {
  if (f == family::none) return title;
  QString t = title;
  return t.replace(f == family::flops ? QStringLiteral("(GFLOP)") : QStringLiteral("(ms)"), "(" + u.unit + ")");
}

std::pair<double, double> log_range(double lo, double hi) {
  const std::vector<double> below = log_values(lo / 10, lo, {1, 2, 5}, 1);
  const std::vector<double> above = log_values(hi, hi * 10, {1, 2, 5}, 1);
  return {below.empty() ? lo : below.back(), above.empty() ? hi : above.front()};
}

void relabel(QCategoryAxis* axis, double room, bool horizontal) {
  const QVariantList spec = axis->property(k_axis_spec).toList();
  if (spec.size() != 4) return;
  const QFontMetricsF fm(axis->labelsFont());
  std::vector<double> positions;
  QStringList labels;
  double lo = 0, hi = 1;
  for (int n = 10; n >= 2; --n) {
    axis_labels(spec, n, &positions, &labels, &lo, &hi);
    double need = fm.height() + 8;
    if (horizontal)
      for (const QString& l : labels) need = std::max(need, fm.horizontalAdvance(l) + 8);
    if (room / double(labels.size() + 1) - 12 >= need) break;
  }
  QStringList current;
  for (const QString& l : axis->categoriesLabels()) current << l;
  if (current != labels || axis->min() != lo || axis->max() != hi)
    set_positioned_labels(axis, positions, labels, lo, hi);
}

void relabel_layers(QCategoryAxis* axis, double room) {
  const int layers = axis->property(k_layer_axis).toInt();
  if (layers <= 0) return;
  const QFontMetricsF fm(axis->labelsFont());
  const double need = fm.horizontalAdvance(QString::number(layers - 1)) + 8;
  int stride = 1;
  for (int s : {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}) {
    stride = s;
    const int n = (layers + s - 1) / s;
    if (room / (n + 1) - 12 >= need) break;
  }
  std::vector<double> positions;
  QStringList labels;
  for (int l = 0; l < layers; l += stride) {
    positions.push_back(k_layer_slots * l + 0.5);
    labels << QString::number(l);
  }
  QStringList current;
  for (const QString& l : axis->categoriesLabels()) current << l;
  if (current != labels) set_positioned_labels(axis, positions, labels, -0.5, k_layer_slots * layers - 1.5);
}

QCategoryAxis* value_axis(const std::string& title, double lo, double hi) {
  auto* axis = new QCategoryAxis();
  if (!(hi > lo)) hi = lo + 1.0;
  const QString t = qs(title);
  const family f = family_of(t);
  const unit_choice u = unit_for(f, std::max(std::abs(lo), std::abs(hi)));
  axis->setProperty(k_axis_spec, QVariantList{false, lo / u.divisor, hi / u.divisor, u.divisor});
  style_axis(axis, titled_with_unit(t, f, u).toStdString());
  relabel(axis, 400, false);
  return axis;
}

QCategoryAxis* log_axis(const QString& title, double lo, double hi) {
  auto* axis = new QCategoryAxis();
  axis->setProperty(k_axis_spec, QVariantList{true, lo, hi, 1.0});
  style_axis(axis, title.toStdString());
  relabel(axis, 400, false);
  return axis;
}

void thin_log_labels(QLogValueAxis* axis, double room) {
  if (!axis->property(k_log_base).isValid()) axis->setProperty(k_log_base, axis->base());
  const double first = axis->property(k_log_base).toDouble();
  const double lo = axis->min(), hi = axis->max();
  if (!(first > 1) || !(lo > 0) || !(hi > lo)) return;
  const QFontMetricsF fm(axis->labelsFont());
  double base = first;
  for (int i = 0; i < 6; ++i, base *= base) {
    const double k0 = std::ceil(std::log(lo) / std::log(base) - 1e-9),
                 k1 = std::floor(std::log(hi) / std::log(base) + 1e-9);
    const int labels = std::max(1, static_cast<int>(k1 - k0) + 1);
    double need = 0;
    for (double k = k0; k <= k1; ++k)
      need = std::max(
          need, fm.horizontalAdvance(QString::asprintf(axis->labelFormat().toLatin1().constData(), std::pow(base, k))));
    if (0.95 * room / labels - 18 >= need || labels <= 2) break;
  }
  if (axis->base() != base) axis->setBase(base);
}

}  // namespace modsim::reports::chart_kit
