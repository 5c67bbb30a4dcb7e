#include "gui/core/chart_inputs.hpp"

#include <QtCharts/QChart>
#include <QtCharts/QChartView>

#include "gui/core/result_models.hpp"

#include "reports/chart_data.hpp"
#include "reports/charts.hpp"
#include "reports/views.hpp"

namespace modsim::gui {

void replaceChart(QChartView* view, QChart* chart) {
  QChart* old = view->chart();
  view->setChart(chart);
  delete old;
}

QChart* makeDesignSpaceChart(const SweepModel& model, const QString& title) {
  reports::pareto_chart_input in;
  in.title = title.toStdString();
  in.x_label = "matmul FLOPs per step (GFLOP)";
  in.y_label = "predicted wall-clock (ms)";
  in.points.reserve(static_cast<std::size_t>(model.rowCount()));
  for (int r = 0; r < model.rowCount(); ++r) {
    const SweepPoint& p = model.point(r);
    reports::scatter_point s;
    s.label = "current: " + model.label(r).toStdString();
    s.group = p.variant;
    s.flops = double(p.matmulFlops);
    s.time_s = p.timeS;
    s.pareto = p.pareto;
    s.highlight = p.current;
    in.points.push_back(std::move(s));
  }
  // The baseline every ratio compares with, and in decode the step a 1.5x faster sampling
  // needs (the paper's claim): which points reach it is read off the chart.
  if (model.denseTimeS() > 0) {
    in.references.push_back({"baseline: " + model.baselineName().toStdString(), model.denseTimeS(), false});
    if (model.decode()) in.references.push_back({"1.5x faster than the baseline", model.denseTimeS() / 1.5, true});
  }
  return reports::make_pareto_chart(in);
}

QChart* makeLayerTimeChart(const LayerTimesModel& model, const QString& title) {
  reports::layer_time_input in;
  in.title = title.toStdString();
  in.current_name = "current";
  const int classes = model.classCount();
  for (int c = 0; c < classes; ++c) in.classes.push_back(model.className(c).toStdString());
  for (int r = 0; r < model.layerCount(); ++r) {
    std::vector<double> dense, cur;
    for (int c = 0; c < classes; ++c) {
      const QModelIndex idx = model.index(r, model.firstClassColumn() + c);
      cur.push_back(idx.data(ValueRole).toDouble());
      dense.push_back(idx.data(DenseValueRole).toDouble());
    }
    in.dense_s.push_back(std::move(dense));
    in.current_s.push_back(std::move(cur));
  }
  return reports::make_layer_time_chart(in);
}

QChart* makeGapChart(const GapModel& model, const QString& title) {
  reports::waterfall_input in;
  in.title = title.toStdString();
  in.y_label = "% of the dense step";
  for (int r = 0; r < model.rowCount(); ++r) {
    reports::waterfall_step s;
    s.label = model.index(r, GapModel::TermColumn).data().toString().toStdString();
    s.value = model.index(r, GapModel::PercentColumn).data(ValueRole).toDouble();
    s.total = model.isTotal(r);
    in.steps.push_back(std::move(s));
  }
  return reports::make_waterfall_chart(in);
}

QChart* makeLatencyChart(const ServingModel& model, const QString& title) {
  reports::latency_chart_input in;
  in.title = title.toStdString();
  auto add = [&in](const std::string& name, const std::vector<double>& samples, const sim::des::percentiles& q) {
    reports::latency_series s;
    s.name = name;
    s.samples_s = samples;
    if (samples.empty() && q.p99 > 0) s.quantiles_s = {{0.5, q.p50}, {0.9, q.p90}, {0.99, q.p99}};
    if (!s.samples_s.empty() || !s.quantiles_s.empty()) in.series.push_back(std::move(s));
  };
  {
    add("dense TTFT", model.dense().ttftSamplesS, model.dense().summary.ttft_s);
    add("current TTFT", model.current().ttftSamplesS, model.current().summary.ttft_s);
    add("dense TPOT", model.dense().tpotSamplesS, model.dense().summary.tpot_s);
    add("current TPOT", model.current().tpotSamplesS, model.current().summary.tpot_s);
  }
  return reports::make_latency_chart(in);
}

QChart* makeValidationChart(const ValidationModel& model, const QString& title) {
  reports::diagonal_input in;
  in.title = title.toStdString();
  for (int r = 0; r < model.rowCount(); ++r) {
    const ValidationRow& row = model.row(r);
    in.points.push_back({row.op + " " + row.shape, row.op, row.measuredS, row.predictedS});
  }
  return reports::make_diagonal_chart(in);
}

QChart* makeParallelChart(const ParallelModel& model, const QString& title) {
  reports::bar_chart_input in;
  in.title = title.toStdString();
  in.x_label = "split (tp x pp x dp)";
  in.y_label = "predicted step (ms)";
  in.stacked = true;
  in.sets = {{"compute", {}, 0}, {"communication waited for", {}, 3}, {"pipeline bubble", {}, 1}};
  for (int r = 0; r < model.rowCount(); ++r) {
    const ParallelRow& p = model.row(r);
    if (!p.fits) continue;
    in.categories.push_back(std::to_string(p.tp) + "x" + std::to_string(p.pp) + "x" + std::to_string(p.dp));
    in.sets[0].values.push_back(p.computeS * 1e3);
    in.sets[1].values.push_back(p.commS * 1e3);
    in.sets[2].values.push_back(p.bubbleS * 1e3);
  }
  return reports::make_bar_chart(in);
}

QChart* makeSamplingChart(const SamplingModel& model) {
  if (!model.available()) return reports::make_ratio_chart(reports::ratio_chart_input{});
  return reports::make_ratio_chart(reports::sampling_chart(model.map(), static_cast<std::size_t>(model.strategy())));
}

}  // namespace modsim::gui
