#include "gui/core/gantt_view.hpp"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <cmath>

#include "gui/core/format.hpp"
#include "gui/core/tabs/timeline_tab.hpp"

namespace modsim::gui {
namespace {
constexpr int kLaneHeight = 34;
constexpr int kLaneGap = 8;
constexpr int kLeft = 84;
constexpr int kTop = 28;
constexpr int kLegend = 26;
}  // namespace

GanttView::GanttView(TimelineModel* model, QWidget* parent) : QWidget(parent), m_model(model) {
  setMouseTracking(true);
  setAutoFillBackground(true);
  setBackgroundRole(QPalette::Base);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  setFixedHeight(kTop + 2 * (kLaneHeight + kLaneGap) + kLegend + 8);
  connect(model, &QAbstractItemModel::modelReset, this, [this] { fit(); });
}

QColor GanttView::classColour(const QString& c) {
  if (c == QStringLiteral("routing")) return QColor(0xd6, 0x27, 0x28);
  if (c == QStringLiteral("norm")) return QColor(0x9e, 0x9e, 0x9e);
  if (c == QStringLiteral("attn_proj")) return QColor(0x1f, 0x77, 0xb4);
  if (c == QStringLiteral("attn_core")) return QColor(0x17, 0xbe, 0xcf);
  if (c == QStringLiteral("mlp")) return QColor(0x2c, 0xa0, 0x2c);
  if (c == QStringLiteral("moe")) return QColor(0x94, 0x67, 0xbd);
  if (c == QStringLiteral("lm_head")) return QColor(0xff, 0x7f, 0x0e);
  if (c == QStringLiteral("optimizer")) return QColor(0xbc, 0xbd, 0x22);
  if (c == QStringLiteral("launch")) return QColor(0x8c, 0x56, 0x4b);
  if (c == QStringLiteral("sync")) return QColor(0xe3, 0x77, 0xc2);
  if (c == QStringLiteral("idle")) return QColor(0xee, 0xee, 0xee);
  return QColor(0x7f, 0x7f, 0x7f);
}

void GanttView::fit() {
  m_viewStartS = 0;
  m_viewSpanS = 0;
  const int lanes = static_cast<int>(m_model->lanes().size());
  setFixedHeight(kTop + std::max(2, lanes) * (kLaneHeight + kLaneGap) + kLegend + 8);
  update();
}

void GanttView::setWindow(double startS, double spanS) {
  const double makespan = m_model->makespanS();
  if (spanS <= 0 || spanS >= makespan) {
    m_viewStartS = 0;
    m_viewSpanS = 0;
  } else {
    m_viewSpanS = spanS;
    m_viewStartS = std::clamp(startS, 0.0, makespan - spanS);
  }
  update();
}

QRectF GanttView::plotArea() const {
  const int lanes = std::max<int>(1, static_cast<int>(m_model->lanes().size()));
  return QRectF(kLeft, kTop, std::max(10, width() - kLeft - 16), lanes * (kLaneHeight + kLaneGap));
}

double GanttView::xOf(double s) const {
  const QRectF a = plotArea();
  const double span = m_viewSpanS > 0 ? m_viewSpanS : std::max(1e-12, m_model->makespanS());
  return a.left() + (s - m_viewStartS) / span * a.width();
}

double GanttView::secondsAt(double x) const {
  const QRectF a = plotArea();
  const double span = m_viewSpanS > 0 ? m_viewSpanS : std::max(1e-12, m_model->makespanS());
  return m_viewStartS + (x - a.left()) / a.width() * span;
}

void GanttView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  const QRectF area = plotArea();
  const auto& lanes = m_model->lanes();
  const double makespan = m_model->makespanS();
  QFont small = font();
  small.setPointSizeF(font().pointSizeF() * 0.9);
  p.setFont(small);
  if (m_model->rowCount() == 0 || makespan <= 0) {
    p.drawText(rect(), Qt::AlignCenter, tr("No timeline"));
    return;
  }
  // Time axis: ~8 ticks at a round step.
  const double span = m_viewSpanS > 0 ? m_viewSpanS : makespan;
  const double raw = span / 8;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
  p.setPen(palette().color(QPalette::Mid));
  for (double t = std::ceil(m_viewStartS / step) * step; t <= m_viewStartS + span + 1e-15; t += step) {
    const double x = xOf(t);
    p.setPen(QColor(0xdd, 0xdd, 0xdd));
    p.drawLine(QPointF(x, area.top() - 4), QPointF(x, area.bottom()));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRectF(x - 50, 2, 100, kTop - 8), Qt::AlignHCenter | Qt::AlignBottom, formatSeconds(t));
  }
  // Lanes.
  for (std::size_t l = 0; l < lanes.size(); ++l) {
    const double y = area.top() + double(l) * (kLaneHeight + kLaneGap);
    p.fillRect(QRectF(area.left(), y, area.width(), kLaneHeight), QColor(0xf7, 0xf7, 0xf9));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRectF(4, y, kLeft - 10, kLaneHeight), Qt::AlignRight | Qt::AlignVCenter,
               QString::fromStdString(lanes[l]));
  }
  // Spans (clipped to the plot area).
  p.setClipRect(area);
  for (int r = 0; r < m_model->rowCount(); ++r) {
    const TimelineSpan& s = m_model->span(r);
    const double x0 = xOf(s.startS), x1 = xOf(s.endS);
    if (x1 < area.left() || x0 > area.right()) continue;
    const double y = area.top() + double(s.lane) * (kLaneHeight + kLaneGap);
    const QString cls = QString::fromStdString(s.opClass);
    const QColor c = classColour(cls);
    const double inset = cls == QStringLiteral("idle") ? 10 : 2;
    QRectF bar(x0, y + inset, std::max(1.0, x1 - x0), kLaneHeight - 2 * inset);
    p.fillRect(bar, c);
    if (bar.width() > 4) {
      p.setPen(c.darker(140));
      p.drawRect(bar);
    }
    if (cls != QStringLiteral("idle")) {
      // The whole name where it fits, else the op alone ("attn_scores" of "attn_scores L0"),
      // else nothing: a label is never cut (hover shows the span).
      const QString name = QString::fromStdString(s.name);
      const QString op = name.section(QLatin1Char(' '), 0, 0);
      const qreal room = bar.width() - 6;
      const QString label = p.fontMetrics().horizontalAdvance(name) <= room ? name
                            : p.fontMetrics().horizontalAdvance(op) <= room ? op
                                                                            : QString();
      if (!label.isEmpty()) {
        p.setPen(Qt::white);
        p.drawText(bar.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft, label);
      }
    }
  }
  p.setClipping(false);
  // Legend.
  static const char* classes[] = {"routing", "norm",      "attn_proj", "attn_core", "mlp", "moe",
                                  "lm_head", "optimizer", "launch",    "sync",      "idle"};
  bool hasOptimizer = false;  // a training step's: listed only then
  for (int r = 0; r < m_model->rowCount() && !hasOptimizer; ++r) hasOptimizer = m_model->span(r).opClass == "optimizer";
  double x = area.left();
  const double y = area.bottom() + 8;
  for (const char* c : classes) {
    const QString name = QString::fromLatin1(c);
    if (name == QStringLiteral("optimizer") && !hasOptimizer) continue;
    const QString label = name == QStringLiteral("launch") ? tr("host enqueue")
                          : name == QStringLiteral("idle") ? tr("GPU waits on host")
                                                           : name;
    p.fillRect(QRectF(x, y + 3, 12, 12), classColour(name));
    p.setPen(palette().color(QPalette::Text));
    const int w = p.fontMetrics().horizontalAdvance(label);
    p.drawText(QPointF(x + 16, y + 13), label);
    x += 16 + w + 14;
  }
}

int GanttView::spanAt(const QPointF& pos) const {
  const QRectF area = plotArea();
  if (!area.contains(pos)) return -1;
  const int lane = int((pos.y() - area.top()) / (kLaneHeight + kLaneGap));
  const double t = secondsAt(pos.x());
  const double slack = (secondsAt(pos.x() + 2) - t);
  int best = -1;
  for (int r = 0; r < m_model->rowCount(); ++r) {
    const TimelineSpan& s = m_model->span(r);
    if (s.lane != lane) continue;
    if (t >= s.startS - slack && t <= s.endS + slack) {
      best = r;
      if (s.opClass != "idle") break;
    }
  }
  return best;
}

bool GanttView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const int r = spanAt(help->pos());
    if (r >= 0) {
      const TimelineSpan& s = m_model->span(r);
      QToolTip::showText(help->globalPos(),
                         tr("%1\n%2 · starts %3 · lasts %4")
                             .arg(QString::fromStdString(s.name), QString::fromStdString(s.opClass),
                                  formatSeconds(s.startS), formatSeconds(s.endS - s.startS)),
                         this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  return QWidget::event(e);
}

void GanttView::wheelEvent(QWheelEvent* e) {
  const double makespan = m_model->makespanS();
  if (makespan <= 0) return;
  const double span = m_viewSpanS > 0 ? m_viewSpanS : makespan;
  const double at = secondsAt(e->position().x());
  const double factor = e->angleDelta().y() > 0 ? 0.8 : 1.25;
  const double next = std::clamp(span * factor, makespan / 5000, makespan);
  m_viewStartS = std::clamp(at - (at - m_viewStartS) * next / span, 0.0, makespan - next);
  m_viewSpanS = next >= makespan ? 0 : next;
  update();
}

void GanttView::mousePressEvent(QMouseEvent* e) {
  m_dragFrom = e->position();
  m_dragStartS = m_viewStartS;
}

void GanttView::mouseMoveEvent(QMouseEvent* e) {
  if (!(e->buttons() & Qt::LeftButton) || m_viewSpanS <= 0) return;
  const double perPixel = m_viewSpanS / plotArea().width();
  m_viewStartS = std::clamp(m_dragStartS - (e->position().x() - m_dragFrom.x()) * perPixel, 0.0,
                            m_model->makespanS() - m_viewSpanS);
  update();
}

void GanttView::mouseDoubleClickEvent(QMouseEvent*) { fit(); }

}  // namespace modsim::gui
