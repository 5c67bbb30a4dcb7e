// modsim-gui [MODEL] [--screenshot FILE.png [--tab NAME] [--size WxH]]
// modsim-gui --list-tabs
//
// The design-space explorer. MODEL is a model file, a HuggingFace config.json, or the name of
// a shipped model (configs/models/NAME.json). With --screenshot the main window is rendered
// to FILE.png after the first computation and the program exits (0; 2 for bad input, 3 when
// the computation or the image failed); it works with QT_QPA_PLATFORM=offscreen. --list-tabs
// prints the names --tab takes, one a line, in the tabs' order (scripts/gui-screenshots.sh).
// --help, --version and --list-tabs need no display: they are answered before the
// QApplication (which does need one) is made.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QTimer>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "gui/core/explorer_config.hpp"
#include "gui/core/explorer_session.hpp"
#include "gui/core/main_window.hpp"
#include "sim/model/config.hpp"

namespace {

void nameApplication() {
  QCoreApplication::setOrganizationName(QStringLiteral("modsim"));
  QCoreApplication::setApplicationName(QStringLiteral("modsim-gui"));
  QCoreApplication::setApplicationVersion(QStringLiteral("0.1.0"));
}

// Whether the command line asks only for text: help, the version or the tab names.
bool asksForTextOnly(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const char* flag : {"-h", "-?", "--help", "--help-all", "-v", "--version", "--list-tabs"})
      if (std::strcmp(argv[i], flag) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("modsim-gui: explore Mixture-of-Depths designs"));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("MODEL"),
                               QStringLiteral("model file, HF config.json, or shipped model name"));
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QStringLiteral("Render the window after the first computation to FILE.png and exit."),
      QStringLiteral("FILE.png"));
  const QCommandLineOption tab(
      QStringLiteral("tab"),
      QStringLiteral("Tab to show: %1.").arg(modsim::gui::MainWindow::tabNames().join(QStringLiteral(", "))),
      QStringLiteral("NAME"), QStringLiteral("design-space"));
  const QCommandLineOption size(QStringLiteral("size"),
                                QStringLiteral("Window size for --screenshot (default 1600x1000)."),
                                QStringLiteral("WxH"), QStringLiteral("1600x1000"));
  const QCommandLineOption hardware(QStringLiteral("hardware"), QStringLiteral("Hardware file or shipped name."),
                                    QStringLiteral("HW"));
  const QCommandLineOption mode(QStringLiteral("mode"), QStringLiteral("forward (prefill), train or decode."),
                                QStringLiteral("MODE"));
  const QCommandLineOption measurements(QStringLiteral("measurements"),
                                        QStringLiteral("Measurements CSV for the Validation tab."),
                                        QStringLiteral("CSV"));
  const QCommandLineOption baseline(
      QStringLiteral("baseline"),
      QStringLiteral("Dense baseline model (file or shipped name, e.g. dense-220m), kept until another model is "
                     "opened; default: MODEL without routing."),
      QStringLiteral("MODEL"));
  const QCommandLineOption listTabs(QStringLiteral("list-tabs"),
                                    QStringLiteral("Print the tab names, one a line, in order, and exit."));
  parser.addOptions({screenshot, tab, size, hardware, mode, measurements, baseline, listTabs});
  const auto printTabs = [] {
    for (const QString& name : modsim::gui::MainWindow::tabNames()) std::printf("%s\n", name.toLocal8Bit().constData());
  };
  if (asksForTextOnly(argc, argv)) {
    // Without a display QApplication aborts: help, version (process() prints them and exits)
    // and the tab names come from a QCoreApplication.
    QCoreApplication core(argc, argv);
    nameApplication();
    parser.process(core);
    if (parser.isSet(listTabs)) {
      printTabs();
      return 0;
    }
  }

  QApplication app(argc, argv);
  nameApplication();
  parser.process(app);
  if (parser.isSet(listTabs)) {
    printTabs();
    return 0;
  }

  auto fail = [](const QString& message, int code) {
    std::fprintf(stderr, "modsim-gui: error: %s\n", message.toLocal8Bit().constData());
    return code;
  };
  if (parser.positionalArguments().size() > 1) return fail(QStringLiteral("at most one MODEL"), 2);
  if (!modsim::gui::MainWindow::tabNames().contains(parser.value(tab).toLower()))
    return fail(QStringLiteral("--tab: unknown tab '%1' (expected %2)")
                    .arg(parser.value(tab), modsim::gui::MainWindow::tabNames().join(QStringLiteral(", "))),
                2);
  const QStringList wh = parser.value(size).split(QLatin1Char('x'));
  const int width = wh.size() == 2 ? wh[0].toInt() : 0, height = wh.size() == 2 ? wh[1].toInt() : 0;
  if (width < 200 || height < 200) return fail(QStringLiteral("--size: expected WxH, e.g. 1600x1000"), 2);

  modsim::gui::MainWindow window;
  modsim::gui::ExplorerSession* session = window.session();
  const bool shot = parser.isSet(screenshot);
  window.setRememberFiles(!shot);  // a screenshot run leaves the recent files and folders alone
  if (!parser.positionalArguments().isEmpty()) {
    const QString path = modsim::gui::resolveConfig(parser.positionalArguments().first(), QStringLiteral("models"));
    if (!window.openModelFile(path) && shot) return fail(window.errorText().section(QLatin1Char('\n'), 1), 2);
  }
  if (parser.isSet(hardware)) {
    const QString path = modsim::gui::resolveConfig(parser.value(hardware), QStringLiteral("hardware"));
    if (!window.openHardwareFile(path) && shot) return fail(window.errorText().section(QLatin1Char('\n'), 1), 2);
  }
  if (parser.isSet(mode)) {
    // The run mode's one parser; "prefill" is the explorer's word for a forward pass.
    const QString m = parser.value(mode);
    try {
      session->setMode(
          modsim::sim::parse_run_mode(m == QStringLiteral("prefill") ? "forward" : m.toStdString(), "", "--mode"));
    } catch (const modsim::error& e) {
      return fail(QString::fromStdString(e.what()), 2);
    }
  }
  if (parser.isSet(measurements)) session->setMeasurementsFile(parser.value(measurements));
  if (parser.isSet(baseline)) {
    const QString path = modsim::gui::resolveConfig(parser.value(baseline), QStringLiteral("models"));
    if (!QFileInfo::exists(path)) return fail(QStringLiteral("--baseline: no model file '%1'").arg(path), 2);
    session->setBaseline(QFileInfo(path).absoluteFilePath());
  }
  window.setCurrentTab(parser.value(tab));
  window.resize(width, height);
  window.show();

  if (!shot) {
    session->recompute();
    return app.exec();
  }

  // Screenshot: compute now, wait for every tab's figures (a settled window: the status bar says
  // what was computed, no progress bar), let the pages lay out, grab, exit.
  const QString file = parser.value(screenshot);
  int code = 0;
  bool grabbing = false;
  QObject::connect(
      session, &modsim::gui::ExplorerSession::resultApplied, &window, [&](const modsim::gui::ComputeResultPtr& r) {
        if (grabbing || !r->complete() || !window.visibleTabIsCurrent()) return;
        grabbing = true;
        if (!r->error.empty()) code = 3;
        QTimer::singleShot(300, &window, [&] {
          if (!window.grab().save(file)) {
            std::fprintf(stderr, "modsim-gui: error: %s: cannot write the image\n", file.toLocal8Bit().constData());
            code = 3;
          }
          app.exit(code);
        });
      });
  QTimer::singleShot(120000, &app, [&] {
    std::fprintf(stderr, "modsim-gui: error: no result after 120 s\n");
    app.exit(3);
  });
  session->recompute();
  return app.exec();
}
