#pragma once
// Model -> chart: the plain inputs of reports/charts.hpp built from the explorer's item models,
// and the one helper that swaps a chart into a view. Every chart of the explorer is drawn by
// the report's builders (reports/charts.hpp), so a chart in the GUI and the same chart in a
// report are one piece of code; the views keep no data, they are rebuilt from the models.
#include <QString>

class QChartView;
class QChart;

namespace modsim::gui {

class SweepModel;
class LayerTimesModel;
class GapModel;
class ServingModel;
class SamplingModel;
class ValidationModel;
class ParallelModel;

// New charts, drawn by the report's chart builders (caller owns; never null).
QChart* makeDesignSpaceChart(const SweepModel& model, const QString& title);
QChart* makeLayerTimeChart(const LayerTimesModel& model, const QString& title);
QChart* makeGapChart(const GapModel& model, const QString& title);
QChart* makeLatencyChart(const ServingModel& model, const QString& title);
QChart* makeValidationChart(const ValidationModel& model, const QString& title);
// Per split that fits in memory: the step stacked as compute, communication waited for, bubble.
QChart* makeParallelChart(const ParallelModel& model, const QString& title);
// The sampling map's shown strategy: MoD / baseline step ratio vs batch, one line per context.
QChart* makeSamplingChart(const SamplingModel& model);

// Gives `chart` to `view` and deletes the chart it showed before.
void replaceChart(QChartView* view, QChart* chart);

}  // namespace modsim::gui
