#include "reports/charts.hpp"

#include <QApplication>
#include <QGuiApplication>
#include <QBuffer>
#include <QColor>
#include <QCoreApplication>
#include <QFont>
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
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <cmath>
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

QChart* empty_chart(const std::string& title) {
  auto* chart = new QChart();
  chart->setTitle(qs(title.empty() ? std::string("no data") : title + " (no data)"));
  apply_style(chart);
  return chart;
}

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

QValueAxis* value_axis(const std::string& title, double lo, double hi) {
  auto* axis = new QValueAxis();
  if (!(hi > lo)) hi = lo + 1.0;
  axis->setRange(lo, hi);
  axis->applyNiceNumbers();
  axis->setLabelFormat("%.4g");
  style_axis(axis, title);
  return axis;
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

  auto* chart = new QChart();
  chart->setTitle(qs(in.title));
  apply_style(chart);
  double max_x = 0, max_y = 0;
  for (const auto* p : pts) {
    max_x = std::max(max_x, p->flops / 1e9);
    max_y = std::max(max_y, p->time_s * 1e3);
  }
  QValueAxis* x = value_axis(in.x_label, 0.0, max_x * 1.06);
  QValueAxis* y = value_axis(in.y_label, 0.0, max_y * 1.08);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);

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
  auto* chart = new QChart();
  chart->setTitle(qs(in.title));
  apply_style(chart);

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
  auto* x = new QBarCategoryAxis();
  for (const auto& c : in.categories) x->append(qs(c));
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
  // Each layer has a dense bar (left, unlabelled: a unique run of zero-width spaces) and the
  // current configuration's bar (right, labelled with the layer index).
  bars.x_label = "layer (left bar: " + in.dense_name + ", right bar: " + in.current_name + ")";
  for (std::size_t l = 0; l < layers; ++l) {
    std::string blank;
    for (std::size_t i = 0; i <= l; ++i) blank += "\u200B";
    bars.categories.push_back(blank);
    bars.categories.push_back(std::to_string(l));
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
    }
    if (any) bars.sets.push_back(std::move(set));
  }
  QChart* chart = make_bar_chart(bars);
  if (layers > 8) {  // two-digit layer numbers under narrow bars
    for (QAbstractAxis* a : chart->axes(Qt::Horizontal)) {
      QFont f = a->labelsFont();
      f.setPointSizeF(layers > 24 ? 6.0 : 7.5);
      a->setLabelsFont(f);
    }
  }
  return chart;
}

QChart* make_waterfall_chart(const waterfall_input& in) {
  if (in.steps.empty()) return empty_chart(in.title);
  auto* chart = new QChart();
  chart->setTitle(qs(in.title));
  apply_style(chart);

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
  auto* x = new QBarCategoryAxis();
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
    x->append(qs(s.label + (s.total ? "\n" : (v < 0 ? "\n" : "\n+")) + [&] {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", v);
      return std::string(buf);
    }()));
  }
  series->append(base);
  series->append(total);
  series->append(down);
  series->append(up);
  series->setBarWidth(0.6);
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
  auto* chart = new QChart();
  chart->setTitle(qs(in.title));
  apply_style(chart);
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
  y->setRange(0.0, 1.0);
  y->setTickCount(6);
  y->setLabelFormat("%.1f");
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
  auto* chart = new QChart();
  chart->setTitle(qs(in.title));
  apply_style(chart);
  double lo = 1e300, hi = 0;
  for (const auto* p : pts) {
    lo = std::min({lo, p->measured_s * 1e3, p->predicted_s * 1e3});
    hi = std::max({hi, p->measured_s * 1e3, p->predicted_s * 1e3});
  }
  lo = std::pow(10.0, std::floor(std::log10(lo)));
  hi = std::pow(10.0, std::ceil(std::log10(hi)));
  if (!(hi > lo)) hi = lo * 10;
  auto make_axis = [&](const std::string& title) {
    auto* a = new QLogValueAxis();
    a->setBase(10.0);
    a->setRange(lo, hi);
    a->setLabelFormat("%g");
    a->setMinorTickCount(8);
    a->setMinorGridLineColor(QColor(0xF2, 0xF2, 0xF2));
    style_axis(a, title);
    return a;
  };
  QLogValueAxis* x = make_axis(in.x_label);
  QLogValueAxis* y = make_axis(in.y_label);
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);

  auto guide = [&](double factor, const char* name, Qt::PenStyle style, const QColor& c) {
    auto* line = new QLineSeries();
    line->setName(name);
    QPen pen(c);
    pen.setWidthF(style == Qt::SolidLine ? 1.4 : 1.0);
    pen.setStyle(style);
    line->setPen(pen);
    line->append(lo, lo * factor);
    line->append(hi, hi * factor);
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
      if (p->group == groups[g]) s->append(p->measured_s * 1e3, p->predicted_s * 1e3);
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
  auto* chart = new QChart();
  chart->setTitle(qs(in.title));
  apply_style(chart);
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
  gen.setTitle(chart->title());
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

bool ensure_application() {
  if (QCoreApplication::instance() != nullptr)
    return qobject_cast<QApplication*>(QCoreApplication::instance()) != nullptr;
  if (std::getenv("QT_QPA_PLATFORM") == nullptr) ::setenv("QT_QPA_PLATFORM", "offscreen", 0);
  // QApplication keeps references to argc/argv for its lifetime: static storage.
  static int argc = 1;
  static char name[] = "modsim";
  static char* argv[] = {name, nullptr};
  // Deliberately never deleted: destroying a QApplication after main() races Qt's own statics.
  static QApplication* app = new QApplication(argc, argv);
  return app != nullptr;
}

}  // namespace modsim::reports
