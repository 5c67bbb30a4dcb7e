// modsim-bench-gui: how long the explorer makes a user wait, and the design-space sweep's
// recompute + redraw. Prints figures (medians of several runs); asserts nothing.
//
//   first result     the main window created (mod-220m, prefill, its start-up hardware) → the
//                    headline and the visible tab hold the first configuration's figures and
//                    the window is painted (QWidget::grab). Goal ≤ 1 s.
//   edit → repaint   an edit (the sequence length in prefill, the batch in decode), as the
//                    panel makes it → the headline and the visible tab hold the edited
//                    configuration's figures and the window is painted; the worker's debounce
//                    is included. Goal ≤ 250 ms.
//   edit → settled   the same edit → every tab holds the edited configuration's figures.
//   sweep            computeSweep() of ~2,000 points, the model reset and the page's paint.
//
//   parts            (--parts) each part of a result computed alone (with the headline's).
//
// modsim-bench-gui [--size WxH] [--edits N] [--tab NAME]... [--parts] [--no-sweep]
//   --tab: the tab visible while editing (default design-space; repeat for several, `all` for
//   every tab).
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gui/core/compute.hpp"
#include "gui/core/explorer_config.hpp"
#include "gui/core/explorer_session.hpp"
#include "gui/core/main_window.hpp"
#include "gui/core/result_models.hpp"
#include "gui/core/tabs/design_space_tab.hpp"
#include "sim/model/config.hpp"

namespace {

using namespace modsim;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double ms(const QElapsedTimer& t) { return double(t.nsecsElapsed()) / 1e6; }

// Runs the event loop until `done()` holds (checked on every result the session applies and
// every 5 ms); false after `timeout_ms`.
bool waitFor(gui::ExplorerSession* session, const std::function<bool()>& done, int timeout_ms = 120000) {
  if (done()) return true;
  QEventLoop loop;
  QTimer poll, limit;
  QObject::connect(session, &gui::ExplorerSession::resultApplied, &loop, [&] {
    if (done()) loop.quit();
  });
  QObject::connect(&poll, &QTimer::timeout, &loop, [&] {
    if (done()) loop.quit();
  });
  QObject::connect(&limit, &QTimer::timeout, &loop, [&] { loop.exit(1); });
  poll.start(5);
  limit.setSingleShot(true);
  limit.start(timeout_ms);
  return loop.exec() == 0;
}

// The last result applied is of `load`, with the headline's and the visible tab's parts in it.
bool visibleShows(const gui::MainWindow& window, const sim::workload& load) {
  const gui::ComputeResultPtr r = window.session()->lastResult();
  return r && r->load.batch == load.batch && r->load.seq_len == load.seq_len && r->load.run == load.run &&
         window.visibleTabIsCurrent();
}

// Every tab holds `load`'s figures: the worker is idle and its last result is of `load`.
bool allShow(const gui::MainWindow& window, const sim::workload& load) {
  const gui::ComputeResultPtr r = window.session()->lastResult();
  return r && r->load.batch == load.batch && r->load.seq_len == load.seq_len && r->load.run == load.run &&
         !window.session()->worker()->isBusy();
}

struct EditFigures {
  std::vector<double> repaint, settled;
};

// `edits` edits through `edit(i)`, each from a settled window: edit → visible tab painted, and
// edit → every tab computed.
EditFigures timeEdits(gui::MainWindow& window, int edits, const std::function<void(int)>& edit) {
  EditFigures f;
  gui::ExplorerSession* session = window.session();
  for (int i = 0; i < edits; ++i) {
    QElapsedTimer t;
    t.start();
    edit(i);
    const sim::workload load = session->draftWorkload();
    if (!waitFor(session, [&] { return visibleShows(window, load); })) {
      std::fprintf(stderr, "modsim-bench-gui: no result for edit %d within 120 s\n", i);
      return f;
    }
    (void)window.grab();
    f.repaint.push_back(ms(t));
    waitFor(session, [&] { return allShow(window, load); });
    f.settled.push_back(ms(t));
  }
  return f;
}

void printEdits(const char* what, const QString& tab, const EditFigures& f) {
  if (f.repaint.empty()) return;
  const std::string name = tab.toStdString();
  std::printf("  edit -> repaint, %-8s %-13s median %7.1f ms   min %7.1f   max %7.1f   (goal <= 250 ms: %s)\n", what,
              name.c_str(), median(f.repaint), *std::min_element(f.repaint.begin(), f.repaint.end()),
              *std::max_element(f.repaint.begin(), f.repaint.end()), median(f.repaint) <= 250 ? "met" : "NOT met");
  std::printf("  edit -> settled, %-8s %-13s median %7.1f ms   (every tab computed)\n", what, name.c_str(),
              median(f.settled));
}

// The time of each part of a result alone (compute.hpp, computeParts), median of `runs`, for
// mod-220m on the start-up hardware in prefill and in decode.
void partsBench(const gui::ExplorerConfig& start, int runs) {
  const std::pair<gui::ResultPart, const char*> parts[] = {
      {gui::PredictionPart, "prediction (headline, Layers)"},
      {gui::SweepPart, "design-space sweep"},
      {gui::TrainingPart, "training step (Training tab)"},
      {gui::TimelinePart, "timeline"},
      {gui::SamplingPart, "sampling map"},
      {gui::ServingPart, "serving simulation"},
      {gui::ParallelPart, "parallel splits"},
      {gui::ValidationPart, "validation (cached after the first)"}};
  std::printf("compute per part alone (%s on %s), median of %d\n", start.model.name.c_str(),
              start.hardware.name.c_str(), runs);
  for (sim::run_mode mode : {sim::run_mode::forward, sim::run_mode::decode}) {
    gui::ExplorerConfig c = start;
    c.load.run = mode;
    c.load.batch = mode == sim::run_mode::decode ? 16 : 1;
    for (const auto& [part, name] : parts) {
      std::vector<double> t;
      for (int r = 0; r < runs; ++r) {
        gui::ComputeResult result;
        QElapsedTimer timer;
        timer.start();
        gui::computeParts(c, gui::PredictionPart | part, result);
        t.push_back(ms(timer));
      }
      std::printf("  %-8s %-36s %8.1f ms\n", mode == sim::run_mode::decode ? "decode" : "prefill", name, median(t));
    }
  }
}

int sweepBench() {
  gui::ExplorerConfig config;
  config.model =
      sim::load_model(gui::resolveConfig(QStringLiteral("mod-220m"), QStringLiteral("models")).toStdString());
  config.hardware =
      sim::load_hardware(gui::resolveConfig(QStringLiteral("h100-sxm"), QStringLiteral("hardware")).toStdString());
  config.load.batch = 1;
  config.load.seq_len = 2048;
  config.load.run = sim::run_mode::forward;
  config.load.type = sim::dtype::bf16;

  // 42 capacities × 16 schedules × 3 routed variants + dense + MoE = 2,018 points.
  sim::sweep_space axes;
  for (int i = 1; i <= 42; ++i) axes.capacities.push_back(i / 42.0);
  for (const std::string s : {"every_other", "all"})
    axes.schedules.push_back(sim::parse_schedule(s, config.model.n_layers, "", "schedules"));
  for (int n = 3; n <= 16; ++n)
    axes.schedules.push_back(
        sim::parse_schedule("every_nth:" + std::to_string(n), config.model.n_layers, "", "schedules"));
  axes.variants = {sim::sweep_variant::dense, sim::sweep_variant::mod, sim::sweep_variant::moe,
                   sim::sweep_variant::mode_staged, sim::sweep_variant::mode_integrated};

  gui::SweepModel model;
  gui::DesignSpacePage page(&model);
  page.resize(1200, 800);
  page.show();
  QApplication::processEvents();

  const int runs = 7;
  std::vector<double> recompute, reset, paint, total;
  std::size_t points = 0;
  for (int r = 0; r < runs; ++r) {
    // Alternate the capacity of the base so every run computes a different space.
    config.model.routing->capacity = r % 2 ? 0.125 : 0.25;
    QElapsedTimer t;
    t.start();
    gui::SweepResult sweep = gui::computeSweep(config, axes);
    const double a = ms(t);
    points = sweep.points.size();
    model.setSweep(std::move(sweep));
    const double b = ms(t);
    const QPixmap image = page.grab();
    const double c = ms(t);
    if (image.isNull()) return 3;
    recompute.push_back(a);
    reset.push_back(b - a);
    paint.push_back(c - b);
    total.push_back(c);
  }
  std::printf("design-space sweep of %zu points (mod-220m, h100-sxm, prefill B=1 S=2048), %d runs\n", points, runs);
  std::printf("  recompute (sweep + Pareto)     median %8.1f ms   min %8.1f ms\n", median(recompute),
              *std::min_element(recompute.begin(), recompute.end()));
  std::printf("  model reset + chart rebuild    median %8.1f ms   min %8.1f ms\n", median(reset),
              *std::min_element(reset.begin(), reset.end()));
  std::printf("  paint (1200x800 page)          median %8.1f ms   min %8.1f ms\n", median(paint),
              *std::min_element(paint.begin(), paint.end()));
  std::printf("  total                          median %8.1f ms   min %8.1f ms   (goal < 200 ms: %s)\n", median(total),
              *std::min_element(total.begin(), total.end()), median(total) < 200 ? "met" : "NOT met");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QCoreApplication::setOrganizationName(QStringLiteral("modsim"));
  QCoreApplication::setApplicationName(QStringLiteral("modsim-bench-gui"));
  int width = 1280, height = 800, edits = 7;
  bool sweep = true, parts = false;
  QStringList tabs;
  const QStringList args = QCoreApplication::arguments();
  for (int i = 1; i < args.size(); ++i) {
    const QString a = args[i];
    const bool hasValue = i + 1 < args.size();
    if (a == QStringLiteral("--size") && hasValue) {
      const QStringList wh = args[++i].split(QLatin1Char('x'));
      width = wh.size() == 2 ? wh[0].toInt() : 0;
      height = wh.size() == 2 ? wh[1].toInt() : 0;
    } else if (a == QStringLiteral("--edits") && hasValue) {
      edits = args[++i].toInt();
    } else if (a == QStringLiteral("--tab") && hasValue) {
      const QString t = args[++i];
      if (t == QStringLiteral("all"))
        tabs << gui::MainWindow::tabNames();
      else
        tabs << t;
    } else if (a == QStringLiteral("--no-sweep")) {
      sweep = false;
    } else if (a == QStringLiteral("--parts")) {
      parts = true;
    } else {
      std::fprintf(stderr,
                   "modsim-bench-gui: error: unknown argument '%s'\n"
                   "usage: modsim-bench-gui [--size WxH] [--edits N] [--tab NAME|all]... [--parts] [--no-sweep]\n",
                   a.toLocal8Bit().constData());
      return 2;
    }
  }
  if (width < 200 || height < 200 || edits < 1) {
    std::fprintf(stderr, "modsim-bench-gui: error: --size WxH (each >= 200) and --edits N (>= 1)\n");
    return 2;
  }
  if (tabs.isEmpty()) tabs << QStringLiteral("design-space");
  for (const QString& t : tabs)
    if (!gui::MainWindow::tabNames().contains(t)) {
      std::fprintf(stderr, "modsim-bench-gui: error: --tab: unknown tab '%s'\n", t.toLocal8Bit().constData());
      return 2;
    }

  // First result: from the window's creation (which starts the first computation) to the
  // headline and the visible tab painted with its figures.
  std::printf("modsim-bench-gui: the explorer at %dx%d (offscreen), mod-220m\n", width, height);
  QElapsedTimer t;
  t.start();
  gui::MainWindow window;
  window.setRememberFiles(false);
  window.resize(width, height);
  window.show();
  gui::ExplorerSession* session = window.session();
  const sim::workload start = session->config().load;
  if (!waitFor(session, [&] { return visibleShows(window, start); })) {
    std::fprintf(stderr, "modsim-bench-gui: error: no first result within 120 s\n");
    return 3;
  }
  (void)window.grab();
  const double first = ms(t);
  waitFor(session, [&] { return allShow(window, start); });
  const double firstAll = ms(t);
  std::printf("  first result (window created -> headline and %s painted)   %7.1f ms   (goal <= 1000 ms: %s)\n",
              window.tabs()->currentWidget()->objectName().toLocal8Bit().constData(), first,
              first <= 1000 ? "met" : "NOT met");
  std::printf("  first result, every tab computed                                   %7.1f ms\n", firstAll);

  for (const QString& tab : tabs) {
    window.setCurrentTab(tab);
    // Prefill: the sequence length, 2,048 ↔ 1,536.
    session->setMode(sim::run_mode::forward);
    session->setSeqLen(2048);
    waitFor(session, [&] { return allShow(window, session->draftWorkload()); });
    printEdits("prefill", tab, timeEdits(window, edits, [&](int i) { session->setSeqLen(i % 2 ? 2048 : 1536); }));
    // Decode: the batch, 16 ↔ 12 (context 2,048).
    session->setMode(sim::run_mode::decode);
    session->setBatch(16);
    waitFor(session, [&] { return allShow(window, session->draftWorkload()); });
    printEdits("decode", tab, timeEdits(window, edits, [&](int i) { session->setBatch(i % 2 ? 16 : 12); }));
    session->setBatch(1);
    session->setMode(sim::run_mode::forward);
    waitFor(session, [&] { return allShow(window, session->draftWorkload()); });
  }
  if (parts) partsBench(session->config(), 3);
  return sweep ? sweepBench() : 0;
}
