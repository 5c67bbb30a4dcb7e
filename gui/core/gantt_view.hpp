#pragma once
// The Gantt chart of one step: one lane per host thread / GPU stream, one bar per span,
// coloured by op class. It paints the TimelineModel directly and keeps only view state
// (zoom and pan). Wheel zooms around the cursor, drag pans, double-click fits.
#include <QColor>
#include <QWidget>

namespace modsim::gui {

class TimelineModel;

class GanttView : public QWidget {
  Q_OBJECT
 public:
  explicit GanttView(TimelineModel* model, QWidget* parent = nullptr);
  QSize sizeHint() const override { return {900, 260}; }
  QSize minimumSizeHint() const override { return {300, 160}; }
  // The colour of an op class ("attn_core", "launch", ...), shared with the legend.
  static QColor classColour(const QString& opClass);

 public slots:
  void fit();
  // Shows [startS, startS + spanS] of the step (spanS <= 0: the whole step).
  void setWindow(double startS, double spanS);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  QRectF plotArea() const;
  double xOf(double seconds) const;
  double secondsAt(double x) const;
  int spanAt(const QPointF& pos) const;

  TimelineModel* m_model;
  double m_viewStartS = 0;  // visible time window
  double m_viewSpanS = 0;   // 0 = the whole step
  QPointF m_dragFrom;
  double m_dragStartS = 0;
};

}  // namespace modsim::gui
