// modsim-bench-gui: recompute and redraw a ~2,000-point design-space sweep, the work the
// explorer does after an edit. Prints figures (median of several runs); asserts nothing.
//   recompute   computeSweep(): FLOPs + predicted time of every point, Pareto front
//   model       SweepModel::setSweep() (the item model takes its copy; the page rebuilds its
//               chart with reports::make_pareto_chart on the reset)
//   paint       the Design space page rendered into an image (QWidget::grab)
// Goal: recompute + model + paint < 200 ms.
#include <QApplication>
#include <QElapsedTimer>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "gui/core/compute.hpp"
#include "gui/core/explorer_config.hpp"
#include "gui/core/result_models.hpp"
#include "gui/core/tabs/design_space_tab.hpp"
#include "sim/config.hpp"

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  using namespace modsim;
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
    const double a = double(t.nsecsElapsed()) / 1e6;
    points = sweep.points.size();
    model.setSweep(std::move(sweep));
    const double b = double(t.nsecsElapsed()) / 1e6;
    const QPixmap image = page.grab();
    const double c = double(t.nsecsElapsed()) / 1e6;
    if (image.isNull()) return 3;
    recompute.push_back(a);
    reset.push_back(b - a);
    paint.push_back(c - b);
    total.push_back(c);
  }
  std::printf("modsim-bench-gui: design-space sweep of %zu points (mod-220m, h100-sxm, prefill B=1 S=2048), %d runs\n",
              points, runs);
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
