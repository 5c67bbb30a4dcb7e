#pragma once
// A result tab of the explorer, and what its pages share. Each tab is one file pair under
// gui/core/tabs/: its item models (over its part of the ComputeResult), its page (the widgets
// and charts that show them) and its TabSpec. The registry (tabs.hpp) lists the tabs in order.
//
// A page is a view over its item models: it rebuilds its chart from a model when the model
// resets and sends requests (adopt a point, choose a file) to the session; it holds no data of
// its own. When its part of the result is not available (a module missing from this build, a
// failed computation) it says so instead.
#include <QAbstractItemModel>
#include <QStackedWidget>
#include <QString>
#include <QVariant>
#include <functional>
#include <string>

class QChart;
class QChartView;
class QLabel;
class QTableView;
class QWidget;

namespace modsim::gui {

class ExplorerSession;
class ResultModel;

// One tab: its name, its title and how its page is built.
struct TabSpec {
  QString name;   // for --tab NAME and the screenshots: "parallel"
  QString title;  // the tab's text and its View menu entry: "Parallelism"
  // Builds the page under `parent`: its item models, registered with the session (which hands
  // each new result to them, ExplorerSession::addResultModel), and the widgets that show them.
  // Requests from the page go to the session.
  std::function<QWidget*(ExplorerSession& session, QWidget* parent)> makePage;
};

// The content, or a message saying why there is none.
class AvailabilityStack : public QStackedWidget {
  Q_OBJECT
 public:
  AvailabilityStack(QWidget* content, ResultModel* model, QWidget* parent = nullptr);
  QString message() const;

 private:
  void update(bool available, const QString& reason);
  QLabel* m_message;
};

// Connects `model`'s reset to `rebuild` (the page's charts drawn from the model): run at once
// while `page` is shown or its window is not, else the next time the page is shown, so a hidden
// tab does not redraw its charts for every result and shows the latest one when it appears.
void rebuildOnReset(QWidget* page, QAbstractItemModel* model, std::function<void()> rebuild);

// Makes `label` wrap its words to whatever width the layout gives it and ask for the height its
// lines then need (height for width), so that a narrow window never clips it.
void wrapToWidth(QLabel* label);

// A read-only table over `model`, rows selected whole, at least kMinTableRows rows high.
inline constexpr int kMinTableRows = 5;
QTableView* makeTable(QAbstractItemModel* model, QWidget* parent);
// An antialiased chart view (its chart is set by replaceChart).
QChartView* makeChartView(QWidget* parent);
// Gives `chart` to `view` and deletes the chart it showed before. Every chart of the explorer
// is drawn by the report's builders (reports/charts.hpp), so a chart in the GUI and the same
// chart in a report are one piece of code.
void replaceChart(QChartView* view, QChart* chart);

// For the item models: the checkIndex() options of a table cell, right-aligned numbers, and
// std::string to QString.
inline constexpr auto kValidIndex =
    QAbstractItemModel::CheckIndexOption::IndexIsValid | QAbstractItemModel::CheckIndexOption::ParentIsInvalid;
inline QVariant rightAligned() { return int(Qt::AlignRight | Qt::AlignVCenter); }
inline QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace modsim::gui
