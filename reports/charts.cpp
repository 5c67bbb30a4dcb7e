#include "reports/charts.hpp"

#include <QApplication>
#include <QGuiApplication>
#include <QBuffer>
#include <QColor>
#include <QCoreApplication>
#include <QFont>
#include <QFontMetricsF>
#include <QGraphicsSceneResizeEvent>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QImage>
#include <QPainter>
#include <QPen>
#include <QScreen>
#include <QSvgGenerator>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QCategoryAxis>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace modsim::reports {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// A colour-blind-friendly qualitative palette (Okabe–Ito, then Tableau fill-ins).
const std::vector<QColor>& palette() {
  static const std::vector<QColor> colours = {
      QColor(0x00, 0x72, 0xB2), QColor(0xE6, 0x9F, 0x00), QColor(0x00, 0x9E, 0x73), QColor(0xCC, 0x79, 0xA7),
      QColor(0x56, 0xB4, 0xE9), QColor(0xD5, 0x5E, 0x00), QColor(0xF0, 0xE4, 0x42), QColor(0x59, 0x59, 0x59),
      QColor(0x8C, 0x56, 0x4B), QColor(0x7F, 0x3C, 0x8D)};
  return colours;
}
QColor colour(std::size_t i) { return palette()[i % palette().size()]; }

const QColor k_text(0x22, 0x22, 0x22);
const QColor k_grid(0xE3, 0xE3, 0xE3);
const QColor k_front(0x22, 0x22, 0x22);
const QColor k_highlight(0xD6, 0x27, 0x28);

void style_axis(QAbstractAxis* axis, const std::string& title) {
  axis->setTitleText(qs(title));
  QFont f = axis->titleFont();
  f.setPointSizeF(10.5);
  f.setBold(false);
  axis->setTitleFont(f);
  QFont l = axis->labelsFont();
  l.setPointSizeF(9.5);
  axis->setLabelsFont(l);
  axis->setLabelsColor(k_text);
  axis->setTitleBrush(k_text);
  axis->setGridLineColor(k_grid);
  axis->setLinePenColor(QColor(0x99, 0x99, 0x99));
}

// ---- Display units and ticks ----------------------------------------------------------------
// Value axes are QCategoryAxis (a QValueAxis whose labels are ours): the data stay in the
// chart's base unit (GFLOP, ms) while the labels are plain numbers (never "5e+04") in the unit
// the range calls for, named in the axis title.

struct unit_choice {
  double divisor = 1;  // display value = base value / divisor
  QString unit;        // "" = no unit family (the title is kept as given)
};

// The axis title's unit family: "(GFLOP)" → FLOPs, "(ms)" → time; anything else is shown as is.
enum class family { none, flops, time };
family family_of(const QString& title) {
  if (title.contains(QStringLiteral("(GFLOP)"))) return family::flops;
  if (title.contains(QStringLiteral("(ms)"))) return family::time;
  return family::none;
}

// The unit that keeps the largest magnitude `max_abs` (in the base unit) within [1, 1000).
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

// The range of a log axis showing [lo, hi] (> 0): from the largest 1-2-5 value <= lo to the
// smallest >= hi.
std::pair<double, double> log_range(double lo, double hi) {
  const std::vector<double> below = log_values(lo / 10, lo, {1, 2, 5}, 1);
  const std::vector<double> above = log_values(hi, hi * 10, {1, 2, 5}, 1);
  return {below.empty() ? lo : below.back(), above.empty() ? hi : above.front()};
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

// (Re)labels a value axis for `room` pixels along it: as many labels as Qt can draw whole (it
// gives each label the axis length / (labels + 1), less 2 × 5 px of padding).
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

// The layer axis of the per-layer chart: labels "0", "s", "2s", ... under the middle of each
// layer's pair of bars (indices 3·layer and 3·layer + 1; 3·layer + 2 is the empty slot that
// keeps one layer's bars apart from the next's), the stride s the smallest of 1, 2, 5, 10, 20,
// 50... that Qt can draw whole in `room` pixels; the range spans every bar.
const char* const k_layer_axis = "modsim_layer_axis";
constexpr int k_layer_slots = 3;  // bar slots per layer: baseline, current, gap

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

// A linear value axis over [lo, hi] (base units), labelled with plain numbers in the unit the
// range calls for.
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

// A log10 axis over [lo, hi] (display units, > 0) at 1-2-5 steps.
QCategoryAxis* log_axis(const QString& title, double lo, double hi) {
  auto* axis = new QCategoryAxis();
  axis->setProperty(k_axis_spec, QVariantList{true, lo, hi, 1.0});
  style_axis(axis, title.toStdString());
  relabel(axis, 400, false);
  return axis;
}

// ---- Fitting text to the size the chart is drawn at -------------------------------------------
// Qt elides a title, axis title, category label or legend entry that is wider than its room
// ("mem-b…"). A fitted_chart keeps the full texts and, whenever it is resized (render_svg/png,
// a QChartView), wraps them into lines and steps their fonts down until they fit.

const char* const k_full_text = "modsim_full_text";      // an axis's title as given
const char* const k_full_labels = "modsim_full_labels";  // a bar category axis's labels ('\n' = line break)
const char* const k_fitted_text = "modsim_fitted_text";  // what fit() last set (to see a caller's change)

constexpr double k_title_pt = 13.0;
constexpr double k_axis_title_pt = 10.5;
constexpr double k_labels_pt = 9.5;
constexpr double k_legend_pt = 9.5;

QFont sized(QFont f, double pt) {
  f.setPointSizeF(pt);
  return f;
}

// `word` cut into pieces no wider than `width`, each but the last ending in a hyphen ("atten-",
// "tion"); a piece keeps at least three characters.
QStringList hyphenated(const QString& word, const QFontMetricsF& fm, double width) {
  QStringList out;
  QString rest = word;
  while (fm.horizontalAdvance(rest) > width && rest.size() > 5) {
    int n = static_cast<int>(rest.size()) - 3;
    while (n > 3 && fm.horizontalAdvance(rest.left(n) + '-') > width) --n;
    out << rest.left(n) + '-';
    rest = rest.mid(n);
  }
  out << rest;
  return out;
}

// `text` broken at spaces (and after hyphens) into lines no wider than `width`; a word wider
// than `width` stays whole on its line, or with `hyphenate` is cut with hyphens.
QStringList wrap_words(const QString& text, const QFontMetricsF& fm, double width, bool hyphenate = false) {
  QStringList words;
  QString word;
  for (QChar c : text) {
    if (c == ' ') {
      if (!word.isEmpty()) words << word;
      word.clear();
      continue;
    }
    word += c;
    if (c == '-' && word.size() > 1) {
      words << word + QChar(0x1);  // 0x1: joined to the next word without a space
      word.clear();
    }
  }
  if (!word.isEmpty()) words << word;
  if (hyphenate) {
    QStringList cut;
    for (const QString& w : words) {
      const bool glued = w.endsWith(QChar(0x1));
      const QString bare = glued ? w.chopped(1) : w;
      const QStringList pieces = fm.horizontalAdvance(bare) <= width ? QStringList{bare} : hyphenated(bare, fm, width);
      for (int i = 0; i < pieces.size(); ++i)
        cut << pieces[i] + (i + 1 < pieces.size() || glued ? QString(QChar(0x1)) : QString());
    }
    words = cut;
  }
  QStringList lines;
  QString line;
  for (const QString& w : words) {
    const bool glued = !line.isEmpty() && line.endsWith(QChar(0x1));
    const QString base = glued ? line.chopped(1) : line;
    const QString candidate = line.isEmpty() ? w : base + (glued ? "" : " ") + w;
    if (line.isEmpty() || fm.horizontalAdvance(QString(candidate).remove(QChar(0x1))) <= width) {
      line = candidate;
    } else {
      lines << line.remove(QChar(0x1));
      line = w;
    }
  }
  if (!line.isEmpty()) lines << line.remove(QChar(0x1));
  return lines;
}

double widest(const QStringList& lines, const QFontMetricsF& fm) {
  double w = 0;
  for (const QString& l : lines) w = std::max(w, fm.horizontalAdvance(l));
  return w;
}

// Lines as the rich text Qt Charts draws: escaped, joined by <br>; one line stays plain text.
QString as_lines(const QStringList& lines) {
  if (lines.size() == 1) return lines.front();
  QStringList escaped;
  for (const QString& l : lines) escaped << l.toHtmlEscaped();
  return escaped.join(QStringLiteral("<br>"));
}

struct fitted_text {
  QString text;
  double pt = 0;
  int lines = 1;
  bool fits = false;
};

// The largest of `sizes` at which `text` (its own line breaks kept) wraps into at most
// `max_lines` lines no wider than `width`; the smallest size when none does.
fitted_text fit_text(const QString& text, const QFont& font, const std::vector<double>& sizes, double width,
                     int max_lines, bool hyphenate = false) {
  fitted_text out;
  for (double pt : sizes) {
    const QFontMetricsF fm(sized(font, pt));
    QStringList lines;
    for (const QString& part : text.split('\n')) lines << wrap_words(part, fm, width, hyphenate);
    out = {as_lines(lines), pt, static_cast<int>(lines.size()),
           static_cast<int>(lines.size()) <= max_lines && widest(lines, fm) <= width};
    if (out.fits) break;
  }
  return out;
}

// A horizontal log axis labelled at the powers of its base (Qt's QLogValueAxis): with too little
// room for every power Qt cuts the labels ("1…"), so the base steps up to base², base⁴... (the
// labels stay powers of the first base: 1, 4, 16, 64, 256 for 2) until each label fits. Qt gives
// a label the axis length / labels, less 2 × 5 px of padding and 2 × 4 px of text margin.
const char* const k_log_base = "modsim_log_base";  // the base the caller gave
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

// What is left of the chart for the plot area, estimated before Qt lays it out (the tests lay
// charts out at the report's and the explorer's sizes and check that nothing is elided).
void fitted_chart::fit(const QSizeF& size) {
  const double w = size.width(), h = size.height();
  if (w < 120 || h < 120) return;
  const QMargins m = margins();
  const double inner_w = w - m.left() - m.right() - 16;

  // Title: up to two lines, then smaller; in a narrow chart three, then four lines at the
  // smallest sizes rather than a cut title.
  if (title() != m_fitted_title) m_title = title();  // set by the caller since
  int title_lines = 0;
  double title_pt = k_title_pt;
  if (!m_title.isEmpty()) {
    // Qt draws the title a little narrower than the chart's inner width: 12 px to spare.
    const double title_w = inner_w - 12;
    fitted_text t = fit_text(m_title, titleFont(), {13, 12, 11, 10, 9, 8}, title_w, 2);
    if (!t.fits) t = fit_text(m_title, titleFont(), {9, 8}, title_w, 3);
    if (!t.fits) t = fit_text(m_title, titleFont(), {8}, title_w, 4);
    title_lines = t.lines;
    title_pt = t.pt;
    setTitleFont(sized(titleFont(), t.pt));
    m_fitted_title = t.text;
    setTitle(t.text);
  }

  // Legend (bottom): one row; smaller, then its entries in two lines, then to the right.
  double legend_h = 0, legend_w = 0;
  QLegend* legend = this->legend();
  std::vector<QLegendMarker*> shown;
  QStringList names;
  for (QLegendMarker* marker : legend->markers()) {
    if (!marker->isVisible()) continue;
    if (!marker->property(k_full_text).isValid() || marker->label() != marker->property(k_fitted_text).toString())
      marker->setProperty(k_full_text, marker->label());
    shown.push_back(marker);
    names << marker->property(k_full_text).toString();
  }
  if (legend->isVisible() && !shown.empty()) {
    // Qt gives an entry its text, 8 px of text margins and about 20 px for the marker and spacing.
    auto row = [&](double pt, double wrap_at, QStringList* texts, int* lines) {
      const QFontMetricsF fm(sized(legend->font(), pt));
      double total = 24;
      *lines = 1;
      texts->clear();
      for (const QString& n : names) {
        const QStringList l = wrap_at > 0 ? wrap_words(n, fm, wrap_at) : QStringList{n};
        *lines = std::max(*lines, static_cast<int>(l.size()));
        total += widest(l, fm) + fm.height() + 16;
        *texts << as_lines(l);
      }
      return total;
    };
    QStringList texts;
    int lines = 1;
    double pt = 0;
    for (double p : {9.5, 8.5, 7.5})
      if (row(p, 0, &texts, &lines) <= inner_w) {
        pt = p;
        break;
      }
    for (double p : {8.5, 7.5})
      for (double wrap_at = 160; pt == 0 && wrap_at >= 50; wrap_at -= 10)
        if (row(p, wrap_at, &texts, &lines) <= inner_w && lines <= 2) pt = p;
    if (pt > 0) {
      legend->setAlignment(Qt::AlignBottom);
      legend_h = lines * QFontMetricsF(sized(legend->font(), pt)).lineSpacing() + 14;
    } else {  // a column on the right
      pt = 8.0;
      const QFontMetricsF fm(sized(legend->font(), pt));
      texts.clear();
      for (const QString& n : names) {
        const QStringList l = wrap_words(n, fm, std::max(60.0, w * 0.22));
        legend_w = std::max(legend_w, widest(l, fm) + fm.height() + 30);
        texts << as_lines(l);
      }
      legend->setAlignment(Qt::AlignRight);
    }
    legend->setFont(sized(legend->font(), pt));
    for (std::size_t i = 0; i < shown.size(); ++i) {
      shown[i]->setProperty(k_fitted_text, texts[static_cast<int>(i)]);
      if (shown[i]->label() != texts[static_cast<int>(i)]) shown[i]->setLabel(texts[static_cast<int>(i)]);
    }
  }

  // The plot area, roughly: the y axis's labels and title on the left, the x axis's below.
  const double title_h = title_lines * QFontMetricsF(sized(titleFont(), title_pt)).lineSpacing() + 12;
  double x_labels_h = 24;
  for (QAbstractAxis* a : axes(Qt::Horizontal))
    if (a->property(k_full_labels).isValid()) x_labels_h = 3 * QFontMetricsF(a->labelsFont()).lineSpacing() + 8;
  const double plot_w = w - m.left() - m.right() - 100 - legend_w;
  const double plot_h = h - m.top() - m.bottom() - title_h - legend_h - x_labels_h - 40;

  for (QAbstractAxis* a : axes()) {
    const bool horizontal = a->orientation() == Qt::Horizontal;
    // The estimate's error (about 5%) and the text item's 2 × 4 px of document margin.
    const double room = std::max(40.0, 0.95 * (horizontal ? plot_w : plot_h) - 12);
    QVariant full = a->property(k_full_text);
    if (a->titleText() != a->property(k_fitted_text).toString()) full = a->titleText();
    const QString text = full.toString();
    if (!text.isEmpty()) {
      // One line: Qt cuts an axis title of two lines back to one (its axis gets no more room).
      const fitted_text t = fit_text(text, a->titleFont(), {10.5, 9.5, 8.5, 7.5, 7.0}, room, 1);
      a->setTitleFont(sized(a->titleFont(), t.pt));
      a->setProperty(k_full_text, text);
      a->setProperty(k_fitted_text, t.text);
      a->setTitleText(t.text);
    }
    if (auto* values = qobject_cast<QCategoryAxis*>(a)) {
      relabel(values, horizontal ? plot_w : plot_h, horizontal);
      relabel_layers(values, horizontal ? plot_w : plot_h);
    }
    if (auto* log = qobject_cast<QLogValueAxis*>(a); log && horizontal) thin_log_labels(log, plot_w);
    // Category labels: each within its category's width, wrapped into up to three lines, one
    // font size for all.
    auto* cat = qobject_cast<QBarCategoryAxis*>(a);
    if (cat == nullptr || !cat->property(k_full_labels).isValid()) continue;
    const QStringList labels = cat->property(k_full_labels).toStringList();
    if (labels.isEmpty()) continue;
    // Qt gives each label the axis length / (categories + 1), less 2 × 5 px of padding; the text
    // item adds 4 px of document margin on each side.
    const double cell = (horizontal ? plot_w : plot_h) / double(labels.size() + 1) - 20;
    // Whole words first; when no size fits them, long words cut with a hyphen ("atten-" "tion").
    QStringList fitted;
    double chosen = 6.0;
    bool ok = false;
    for (bool hyphenate : {false, true}) {
      for (double pt : {9.5, 8.5, 7.5, 6.5, 6.0}) {
        fitted.clear();
        ok = true;
        const QFont f = sized(cat->labelsFont(), pt);
        for (const QString& l : labels) {
          const fitted_text t = fit_text(l, f, {pt}, cell, hyphenate ? 4 : 3, hyphenate);
          ok = ok && t.fits;
          fitted << t.text;
        }
        chosen = pt;
        if (ok) break;
      }
      if (ok) break;
    }
    cat->setLabelsFont(sized(cat->labelsFont(), chosen));
    if (cat->categories() != fitted) cat->setCategories(fitted);
  }
}

// A new chart of modsim's: fitted to its size (above) and styled.
fitted_chart* new_chart(const std::string& title) {
  auto* chart = new fitted_chart();
  chart->set_full_title(qs(title));
  apply_style(chart);
  return chart;
}

// A category axis whose labels are fitted to the room each category gets; '\n' in a label is
// a line break.
QBarCategoryAxis* category_axis(const std::vector<std::string>& labels) {
  auto* axis = new QBarCategoryAxis();
  QStringList full;
  for (const auto& l : labels) full << qs(l);
  axis->setProperty(k_full_labels, full);
  QStringList shown;
  for (const QString& l : full) shown << as_lines(l.split('\n'));
  axis->append(shown);
  return axis;
}

QChart* empty_chart(const std::string& title) {
  return new_chart(title.empty() ? std::string("no data") : title + " (no data)");
}

void attach(QChart* chart, QAbstractSeries* series, QAbstractAxis* x, QAbstractAxis* y) {
  chart->addSeries(series);
  series->attachAxis(x);
  series->attachAxis(y);
}

// Finite, strictly positive (for log axes) values only.
bool usable(double v) { return std::isfinite(v); }
bool usable_positive(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

void apply_style(QChart* chart) {
  chart->setTheme(QChart::ChartThemeLight);
  chart->setBackgroundBrush(Qt::white);
  chart->setBackgroundRoundness(0);
  chart->setDropShadowEnabled(false);
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->setMargins(QMargins(8, 6, 12, 6));
  QFont title = chart->titleFont();
  title.setPointSizeF(13);
  title.setBold(true);
  chart->setTitleFont(title);
  chart->setTitleBrush(k_text);
  chart->legend()->setAlignment(Qt::AlignBottom);
  QFont lf = chart->legend()->font();
  lf.setPointSizeF(9.5);
  chart->legend()->setFont(lf);
  chart->legend()->setLabelColor(k_text);
}

QChart* make_pareto_chart(const pareto_chart_input& in) {
  std::vector<const scatter_point*> pts;
  for (const auto& p : in.points)
    if (usable(p.flops) && usable(p.time_s)) pts.push_back(&p);
  if (pts.empty()) return empty_chart(in.title);

  fitted_chart* chart = new_chart(in.title);
  double max_x = 0, max_y = 0;
  for (const auto* p : pts) {
    max_x = std::max(max_x, p->flops / 1e9);
    max_y = std::max(max_y, p->time_s * 1e3);
  }
  for (const time_reference& r : in.references)
    if (usable(r.time_s)) max_y = std::max(max_y, r.time_s * 1e3);
  QValueAxis* x = value_axis(in.x_label, 0.0, max_x * 1.06);
  QValueAxis* y = value_axis(in.y_label, 0.0, max_y * 1.08);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);

  // Reference times under the points: the baseline, a target.
  for (const time_reference& r : in.references) {
    if (!usable(r.time_s)) continue;
    auto* line = new QLineSeries();
    line->setName(qs(r.label));
    QPen pen(r.target ? QColor(0xd6, 0x27, 0x28) : QColor(0x88, 0x88, 0x88));
    pen.setWidthF(1.4);
    pen.setStyle(Qt::DashLine);
    line->setPen(pen);
    line->append(0.0, r.time_s * 1e3);
    line->append(max_x * 1.06, r.time_s * 1e3);
    attach(chart, line, x, y);
  }

  // One series per group, in order of first appearance.
  std::vector<std::string> groups;
  for (const auto* p : pts)
    if (std::find(groups.begin(), groups.end(), p->group) == groups.end()) groups.push_back(p->group);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    auto* s = new QScatterSeries();
    s->setName(qs(groups[g].empty() ? std::string("points") : groups[g]));
    s->setMarkerSize(8.0);
    s->setColor(colour(g));
    s->setBorderColor(colour(g).darker(130));
    for (const auto* p : pts)
      if (p->group == groups[g]) s->append(p->flops / 1e9, p->time_s * 1e3);
    attach(chart, s, x, y);
  }

  std::vector<const scatter_point*> front;
  for (const auto* p : pts)
    if (p->pareto) front.push_back(p);
  std::sort(front.begin(), front.end(), [](const scatter_point* a, const scatter_point* b) {
    return a->flops != b->flops ? a->flops < b->flops : a->time_s < b->time_s;
  });
  if (!front.empty()) {
    auto* line = new QLineSeries();
    line->setName("Pareto front");
    QPen pen(k_front);
    pen.setWidthF(1.6);
    pen.setStyle(Qt::DashLine);
    line->setPen(pen);
    for (const auto* p : front) line->append(p->flops / 1e9, p->time_s * 1e3);
    attach(chart, line, x, y);
  }

  for (const auto* p : pts) {
    if (!p->highlight) continue;
    auto* star = new QScatterSeries();
    star->setName(qs(p->label));
    star->setMarkerShape(QScatterSeries::MarkerShapeStar);
    star->setMarkerSize(20.0);
    star->setColor(k_highlight);
    star->setBorderColor(k_highlight.darker(140));
    star->append(p->flops / 1e9, p->time_s * 1e3);
    attach(chart, star, x, y);
  }
  return chart;
}

QChart* make_bar_chart(const bar_chart_input& in) {
  if (in.categories.empty() || in.sets.empty()) return empty_chart(in.title);
  fitted_chart* chart = new_chart(in.title);

  QAbstractBarSeries* series = in.stacked ? static_cast<QAbstractBarSeries*>(new QStackedBarSeries())
                                          : static_cast<QAbstractBarSeries*>(new QBarSeries());
  double lo = 0, hi = 0;
  std::vector<double> pos(in.categories.size(), 0.0), neg(in.categories.size(), 0.0);
  for (std::size_t i = 0; i < in.sets.size(); ++i) {
    const std::size_t ci = in.sets[i].colour_index >= 0 ? static_cast<std::size_t>(in.sets[i].colour_index) : i;
    auto* set = new QBarSet(qs(in.sets[i].name));
    set->setColor(colour(ci));
    set->setBorderColor(colour(ci).darker(115));
    for (std::size_t c = 0; c < in.categories.size(); ++c) {
      const double v = c < in.sets[i].values.size() && usable(in.sets[i].values[c]) ? in.sets[i].values[c] : 0.0;
      set->append(v);
      if (in.stacked) {
        (v >= 0 ? pos[c] : neg[c]) += v;
      } else {
        hi = std::max(hi, v);
        lo = std::min(lo, v);
      }
    }
    series->append(set);
  }
  if (in.stacked) {
    for (double v : pos) hi = std::max(hi, v);
    for (double v : neg) lo = std::min(lo, v);
  }
  series->setBarWidth(in.stacked ? 0.7 : 0.8);
  QBarCategoryAxis* x = category_axis(in.categories);
  style_axis(x, in.x_label);
  x->setGridLineVisible(false);
  QValueAxis* y = value_axis(in.y_label, lo < 0 ? lo * 1.08 : 0.0, hi * 1.08);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  attach(chart, series, x, y);
  if (in.sets.size() == 1) chart->legend()->setVisible(false);
  return chart;
}

QChart* make_layer_time_chart(const layer_time_input& in) {
  const std::size_t layers = std::min(in.dense_s.size(), in.current_s.size());
  if (layers == 0 || in.classes.empty()) return empty_chart(in.title);
  bar_chart_input bars;
  bars.title = in.title;
  bars.y_label = in.y_label;
  bars.stacked = true;
  // Each layer has a dense bar (left) and the current configuration's bar (right), then an
  // empty slot before the next layer's (not after the last), so that neighbouring layers' bars
  // do not run together. The categories are unique runs of zero-width spaces: the axis is
  // replaced below by one numbered by layer.
  bars.x_label = "layer (left bar: " + in.dense_name + ", right bar: " + in.current_name + ")";
  const std::size_t bar_slots = k_layer_slots * layers - 1;  // no gap after the last layer
  std::string blank;
  for (std::size_t i = 0; i < bar_slots; ++i) {
    blank += "\u200B";
    bars.categories.push_back(blank);
  }
  for (std::size_t c = 0; c < in.classes.size(); ++c) {
    bar_set set{in.classes[c], {}, static_cast<int>(c)};
    bool any = false;
    for (std::size_t l = 0; l < layers; ++l) {
      const double dv = c < in.dense_s[l].size() ? in.dense_s[l][c] * 1e3 : 0.0;
      const double cv = c < in.current_s[l].size() ? in.current_s[l][c] * 1e3 : 0.0;
      any = any || dv != 0 || cv != 0;
      set.values.push_back(dv);
      set.values.push_back(cv);
      if (l + 1 < layers) set.values.push_back(0.0);  // the gap slot
    }
    if (any) bars.sets.push_back(std::move(set));
  }
  QChart* chart = make_bar_chart(bars);
  // The x axis numbered by layer under each pair of bars, every so many layers to fit (fit());
  // the bars sit at their index, 3·layer (dense) and 3·layer + 1 (current). Wide bars keep a
  // pair together, the empty slot keeps layers apart.
  const auto horizontal = chart->axes(Qt::Horizontal);
  if (horizontal.isEmpty() || chart->series().isEmpty()) return chart;
  if (auto* series = qobject_cast<QAbstractBarSeries*>(chart->series().first())) series->setBarWidth(0.85);
  QAbstractAxis* old_axis = horizontal.first();
  const QString title = old_axis->titleText();
  chart->removeAxis(old_axis);
  delete old_axis;
  auto* x = new QCategoryAxis();
  x->setProperty(k_layer_axis, static_cast<int>(layers));
  style_axis(x, title.toStdString());
  x->setGridLineVisible(false);
  relabel_layers(x, 800);
  chart->addAxis(x, Qt::AlignBottom);
  chart->series().first()->attachAxis(x);
  return chart;
}

QChart* make_waterfall_chart(const waterfall_input& in) {
  if (in.steps.empty()) return empty_chart(in.title);
  fitted_chart* chart = new_chart(in.title);

  auto* series = new QStackedBarSeries();
  auto* base = new QBarSet("base");
  auto* total = new QBarSet("total");
  auto* down = new QBarSet("saves time");
  auto* up = new QBarSet("costs time");
  base->setColor(Qt::transparent);
  base->setBorderColor(Qt::transparent);
  total->setColor(QColor(0x59, 0x59, 0x59));
  total->setBorderColor(QColor(0x59, 0x59, 0x59));
  down->setColor(QColor(0x00, 0x9E, 0x73));
  down->setBorderColor(QColor(0x00, 0x9E, 0x73).darker(120));
  up->setColor(QColor(0xD5, 0x5E, 0x00));
  up->setBorderColor(QColor(0xD5, 0x5E, 0x00).darker(120));
  std::vector<std::string> labels;
  double running = 0, hi = 0, lo = 0;
  for (const auto& s : in.steps) {
    const double v = usable(s.value) ? s.value : 0.0;
    double b = 0, t = 0, dn = 0, u = 0;
    if (s.total) {
      t = v;
      running = v;
    } else if (v < 0) {
      b = running + v;
      dn = -v;
      running += v;
    } else {
      b = running;
      u = v;
      running += v;
    }
    base->append(b);
    total->append(t);
    down->append(dn);
    up->append(u);
    hi = std::max({hi, b + t + dn + u, running});
    lo = std::min({lo, running, b});
    char value[32];
    std::snprintf(value, sizeof value, s.total || v < 0 ? "%.1f" : "+%.1f", v);
    labels.push_back(s.label + "\n" + value);
  }
  series->append(base);
  series->append(total);
  series->append(down);
  series->append(up);
  series->setBarWidth(0.6);
  QBarCategoryAxis* x = category_axis(labels);
  style_axis(x, "");
  x->setGridLineVisible(false);
  QValueAxis* y = value_axis(in.y_label, lo < 0 ? lo * 1.1 : 0.0, hi * 1.08);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  attach(chart, series, x, y);
  for (QLegendMarker* marker : chart->legend()->markers(series))
    if (marker->label() == "base") marker->setVisible(false);
  return chart;
}

QChart* make_latency_chart(const latency_chart_input& in) {
  fitted_chart* chart = new_chart(in.title);
  double max_x = 0;
  std::vector<std::vector<std::pair<double, double>>> curves;  // (ms, fraction)
  for (const auto& s : in.series) {
    std::vector<std::pair<double, double>> c;
    if (!s.samples_s.empty()) {
      std::vector<double> v;
      for (double x : s.samples_s)
        if (usable(x)) v.push_back(x * 1e3);
      std::sort(v.begin(), v.end());
      const double n = static_cast<double>(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        c.emplace_back(v[i], static_cast<double>(i) / n);
        c.emplace_back(v[i], static_cast<double>(i + 1) / n);
      }
    } else {
      for (const auto& [q, val] : s.quantiles_s)
        if (usable(val)) c.emplace_back(val * 1e3, q);
    }
    for (const auto& p : c) max_x = std::max(max_x, p.first);
    curves.push_back(std::move(c));
  }
  bool any = false;
  for (const auto& c : curves) any = any || !c.empty();
  if (!any) {
    delete chart;
    return empty_chart(in.title);
  }
  QValueAxis* x = value_axis(in.x_label, 0.0, max_x * 1.05);
  QValueAxis* y = value_axis(in.y_label, 0.0, 1.0);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (std::size_t i = 0; i < curves.size(); ++i) {
    if (curves[i].empty()) continue;
    auto* line = new QLineSeries();
    line->setName(qs(in.series[i].name));
    QPen pen(colour(i));
    pen.setWidthF(2.0);
    if (in.series[i].samples_s.empty()) {
      line->setPointsVisible(true);
    }
    line->setPen(pen);
    for (const auto& [ms, f] : curves[i]) line->append(ms, f);
    attach(chart, line, x, y);
  }
  return chart;
}

QChart* make_diagonal_chart(const diagonal_input& in) {
  std::vector<const diagonal_point*> pts;
  for (const auto& p : in.points)
    if (usable_positive(p.measured_s) && usable_positive(p.predicted_s)) pts.push_back(&p);
  if (pts.empty()) return empty_chart(in.title);
  fitted_chart* chart = new_chart(in.title);
  double lo = 1e300, hi = 0;
  for (const auto* p : pts) {
    lo = std::min({lo, p->measured_s * 1e3, p->predicted_s * 1e3});
    hi = std::max({hi, p->measured_s * 1e3, p->predicted_s * 1e3});
  }
  // Both axes log10 of the value in the unit the range calls for (µs, ms or s): the series hold
  // log10 coordinates, the labels say the values at 1-2-5 steps.
  const QString x_title = qs(in.x_label), y_title = qs(in.y_label);
  const unit_choice u = unit_for(family::time, hi);
  lo /= u.divisor;
  hi /= u.divisor;
  if (!(hi > lo)) {
    lo /= 2;
    hi *= 2;
  }
  QCategoryAxis* x = log_axis(titled_with_unit(x_title, family_of(x_title), u), lo, hi);
  QCategoryAxis* y = log_axis(titled_with_unit(y_title, family_of(y_title), u), lo, hi);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  // The guides span the axes' range (the same whatever labels they take; Qt does not clip a
  // line to the plot area).
  const auto [range_lo, range_hi] = log_range(lo, hi);
  const double lo_log = std::log10(range_lo), hi_log = std::log10(range_hi);
  auto at = [&](double seconds) { return std::log10(seconds * 1e3 / u.divisor); };

  auto guide = [&](double factor, const char* name, Qt::PenStyle style, const QColor& c) {
    auto* line = new QLineSeries();
    line->setName(name);
    QPen pen(c);
    pen.setWidthF(style == Qt::SolidLine ? 1.4 : 1.0);
    pen.setStyle(style);
    line->setPen(pen);
    // y = x + f (log10) within the square [lo, hi]².
    const double f = std::log10(factor);
    const double x0 = std::max(lo_log, lo_log - f), x1 = std::min(hi_log, hi_log - f);
    line->append(x0, x0 + f);
    line->append(x1, x1 + f);
    attach(chart, line, x, y);
    return line;
  };
  guide(1.0, "y = x", Qt::SolidLine, k_front);
  QLineSeries* plus = guide(1.25, "±25%", Qt::DashLine, QColor(0x99, 0x99, 0x99));
  QLineSeries* minus = guide(0.8, "-25%", Qt::DashLine, QColor(0x99, 0x99, 0x99));
  (void)plus;
  for (QLegendMarker* m : chart->legend()->markers(minus)) m->setVisible(false);

  std::vector<std::string> groups;
  for (const auto* p : pts)
    if (std::find(groups.begin(), groups.end(), p->group) == groups.end()) groups.push_back(p->group);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    auto* s = new QScatterSeries();
    s->setName(qs(groups[g].empty() ? std::string("points") : groups[g]));
    s->setMarkerSize(9.0);
    s->setColor(colour(g));
    s->setBorderColor(colour(g).darker(130));
    for (const auto* p : pts)
      if (p->group == groups[g]) s->append(at(p->measured_s), at(p->predicted_s));
    attach(chart, s, x, y);
  }
  return chart;
}

QChart* make_ratio_chart(const ratio_chart_input& in) {
  double x_lo = 1e300, x_hi = 0, y_hi = 0;
  auto scan = [&](const std::vector<ratio_line>& ls) {
    for (const auto& l : ls)
      for (const auto& [x, y] : l.points)
        if (usable_positive(x) && usable(y)) {
          x_lo = std::min(x_lo, x);
          x_hi = std::max(x_hi, x);
          y_hi = std::max(y_hi, y);
        }
  };
  scan(in.lines);
  scan(in.measured);
  if (!(x_hi > 0)) return empty_chart(in.title);
  fitted_chart* chart = new_chart(in.title);
  if (!(x_hi > x_lo)) x_hi = x_lo * 2;
  auto* x = new QLogValueAxis();
  x->setBase(2.0);
  x->setRange(x_lo, x_hi);
  x->setLabelFormat("%g");
  x->setMinorTickCount(0);
  style_axis(x, in.x_label);
  QValueAxis* y = value_axis(in.y_label, 0.0, std::max({y_hi, in.target_ratio, 1.0}) * 1.08);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  auto flat = [&](double level, const std::string& name, const QColor& c) {
    auto* line = new QLineSeries();
    line->setName(qs(name));
    QPen pen(c);
    pen.setWidthF(1.4);
    pen.setStyle(Qt::DashLine);
    line->setPen(pen);
    line->append(x_lo, level);
    line->append(x_hi, level);
    attach(chart, line, x, y);
  };
  flat(1.0, "1.0 (no faster)", QColor(0x99, 0x99, 0x99));
  if (in.target_ratio > 0) flat(in.target_ratio, in.target_name, k_highlight);
  for (std::size_t i = 0; i < in.lines.size(); ++i) {
    auto* line = new QLineSeries();
    line->setName(qs(in.lines[i].name));
    QPen pen(colour(i));
    pen.setWidthF(2.0);
    line->setPen(pen);
    line->setPointsVisible(true);
    for (const auto& [px, py] : in.lines[i].points)
      if (usable_positive(px) && usable(py)) line->append(px, py);
    attach(chart, line, x, y);
  }
  for (std::size_t i = 0; i < in.measured.size(); ++i) {
    auto* pts = new QScatterSeries();
    pts->setName(qs(in.measured[i].name));
    pts->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    pts->setMarkerSize(10.0);
    pts->setColor(colour(in.lines.size() + i));
    for (const auto& [px, py] : in.measured[i].points)
      if (usable_positive(px) && usable(py)) pts->append(px, py);
    attach(chart, pts, x, y);
  }
  if (!in.excluded.empty()) {
    auto* pts = new QScatterSeries();
    pts->setName(qs(in.excluded_name));
    pts->setMarkerSize(13.0);
    // Greyed out: a solid grey disc over the line's point (an SVG keeps solid fills; a hatch
    // pattern may not survive the SVG writer).
    pts->setBrush(QColor(0x9A, 0x9A, 0x9A, 220));
    pts->setPen(QPen(QColor(0x55, 0x55, 0x55), 1.2));
    for (const auto& [px, py] : in.excluded)
      if (usable_positive(px) && usable(py)) pts->append(px, py);
    attach(chart, pts, x, y);
  }
  return chart;
}

namespace {

// Lays `chart` out at `size` in a private scene and paints it; the chart leaves the scene
// (and keeps its owner) afterwards.
void paint_chart(QChart* chart, QSize size, QPainter& painter) {
  QGraphicsScene scene;
  QGraphicsItem* old_parent = chart->parentItem();
  QGraphicsScene* old_scene = chart->scene();
  if (old_scene) old_scene->removeItem(chart);
  scene.addItem(chart);
  const QRectF rect(0, 0, size.width(), size.height());
  chart->setGeometry(rect);
  scene.setSceneRect(rect);
  if (chart->layout()) chart->layout()->activate();
  QCoreApplication::sendPostedEvents();
  QCoreApplication::processEvents();
  painter.setRenderHint(QPainter::Antialiasing, true);
  painter.setRenderHint(QPainter::TextAntialiasing, true);
  scene.render(&painter, rect, rect);
  scene.removeItem(chart);
  if (old_scene) old_scene->addItem(chart);
  if (old_parent) chart->setParentItem(old_parent);
}

}  // namespace

QByteArray render_svg(QChart* chart, QSize size) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QSvgGenerator gen;
  gen.setOutputDevice(&buffer);
  gen.setSize(size);
  gen.setViewBox(QRect(QPoint(0, 0), size));
  // Text in the SVG at the size the chart was laid out with (the screen's logical DPI).
  if (const QScreen* screen = QGuiApplication::primaryScreen()) gen.setResolution(qRound(screen->logicalDotsPerInch()));
  const auto* fitted = dynamic_cast<const fitted_chart*>(chart);
  gen.setTitle(fitted ? fitted->full_title() : chart->title());
  gen.setDescription("modsim chart");
  {
    QPainter painter(&gen);
    paint_chart(chart, size, painter);
  }
  buffer.close();
  return bytes;
}

QByteArray render_png(QChart* chart, QSize size, qreal device_pixel_ratio) {
  const qreal dpr = device_pixel_ratio > 0 ? device_pixel_ratio : 1.0;
  QImage image(QSize(static_cast<int>(size.width() * dpr), static_cast<int>(size.height() * dpr)),
               QImage::Format_ARGB32_Premultiplied);
  image.setDevicePixelRatio(dpr);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    paint_chart(chart, size, painter);
  }
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  image.save(&buffer, "PNG");
  return bytes;
}

namespace {

QtMessageHandler g_previous_handler = nullptr;

// Drops exactly Qt's notice that XDG_RUNTIME_DIR is unset (a headless CLI run has none, and Qt
// falls back to a private folder of its own); every other message goes on as before.
void quiet_runtime_dir_notice(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  if (type == QtWarningMsg && message.startsWith(QStringLiteral("QStandardPaths: XDG_RUNTIME_DIR not set"))) return;
  if (g_previous_handler != nullptr) {
    g_previous_handler(type, context, message);
  } else {
    const QString line = qFormatLogMessage(type, context, message);
    std::fprintf(stderr, "%s\n", line.toLocal8Bit().constData());
    std::fflush(stderr);
  }
}

}  // namespace

bool ensure_application() {
  if (QCoreApplication::instance() != nullptr)
    return qobject_cast<QApplication*>(QCoreApplication::instance()) != nullptr;
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) ::setenv("QT_QPA_PLATFORM", "offscreen", 0);
  static const bool handler_installed = [] {
    g_previous_handler = qInstallMessageHandler(quiet_runtime_dir_notice);
    return true;
  }();
  (void)handler_installed;
  // QApplication keeps references to argc/argv for its lifetime: static storage.
  static int argc = 1;
  static char name[] = "modsim";
  static char* argv[] = {name, nullptr};
  // Deliberately never deleted: destroying a QApplication after main() races Qt's own statics.
  static QApplication* app = new QApplication(argc, argv);
  return app != nullptr;
}

}  // namespace modsim::reports
