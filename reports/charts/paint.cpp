// A chart drawn into SVG or PNG bytes (render_svg, render_png), and the offscreen QApplication
// that drawing needs (ensure_application).
#include <QApplication>
#include <QBuffer>
#include <QCoreApplication>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QScreen>
#include <QSvgGenerator>
#include <cstdio>
#include <cstdlib>

#include "reports/charts.hpp"
#include "reports/charts/kit.hpp"

namespace modsim::reports {

using chart_kit::fitted_chart;

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
