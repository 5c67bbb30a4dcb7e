#include "gui/core/tabs/validation_tab.hpp"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>

#include "gui/core/explorer_session.hpp"
#include "gui/core/format.hpp"
#include "reports/chart_data.hpp"
#include "sim/cost/validation_fields.hpp"
#include "reports/charts.hpp"
#include "reports/views.hpp"

namespace modsim::gui {

// ---------------------------------------------------------------------------------------------
// ValidationModel

int ValidationModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_validation.rows.size());
}
int ValidationModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ValidationModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const ValidationRow& r = row(index.row());
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case OpColumn:
        return qs(r.op);
      case ShapeColumn:
        return qs(r.shape);
      case MeasuredColumn:
        return formatSeconds(r.measuredS);
      case PredictedColumn:
        return formatSeconds(r.predictedS);
      case ErrorColumn:
        return QStringLiteral("%1%").arg(r.errorPct, 0, 'f', 1);
      default:
        return {};
    }
  }
  if (role == ValueRole) {
    switch (index.column()) {
      case OpColumn:
        return qs(r.op);
      case ShapeColumn:
        return qs(r.shape);
      case MeasuredColumn:
        return r.measuredS;
      case PredictedColumn:
        return r.predictedS;
      case ErrorColumn:
        return r.errorPct;
      default:
        return {};
    }
  }
  if (role == Qt::TextAlignmentRole && index.column() >= MeasuredColumn) return rightAligned();
  return {};
}

QVariant ValidationModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case OpColumn:
      return tr("Op");
    case ShapeColumn:
      return tr("Shape");
    case MeasuredColumn:
      return tr("Measured");
    case PredictedColumn:
      return tr("Predicted");
    case ErrorColumn:
      return tr("Error");
    default:
      return {};
  }
}

QString ValidationModel::summary() const {
  if (!m_validation.available) return {};
  // The figures as sim/cost/validation_fields.hpp names and prints them, as validate and the report do.
  auto figures = [](const sim::validation_summary& s) {
    QStringList out;
    for (const sim::summary_field& f : sim::summary_fields) out << qs(f.label) + " " + qs(sim::format_field(f, s));
    return out.join(QStringLiteral(" · "));
  };
  const QString blocks = tr("%1 blocks · %2").arg(m_validation.rows.size()).arg(figures(m_validation.summary));
  if (m_validation.folds > 0)
    return tr("%1 · %2 ops: %3 · %4-fold cross-validation by shape: every point predicted by a calibration that never "
              "saw its shape · %5")
        .arg(blocks)
        .arg(m_validation.opSummary.points)
        .arg(figures(m_validation.opSummary))
        .arg(m_validation.folds)
        .arg(qs(m_validation.file));
  return tr("%1 · %2").arg(blocks).arg(qs(m_validation.costLabel));
}

void ValidationModel::setResult(const ComputeResultPtr& result) {
  beginResetModel();
  if (result && result->error.empty())
    m_validation = result->validation;
  else {
    m_validation = ValidationResult{};
    if (result) m_validation.unavailable = result->error;
  }
  setAvailability(m_validation.available, qs(m_validation.unavailable));
  endResetModel();
}

// ---------------------------------------------------------------------------------------------
// Charts

namespace {

QChart* makeValidationChart(const ValidationModel& model, const QString& title) {
  reports::diagonal_input in;
  in.title = title.toStdString();
  for (int r = 0; r < model.rowCount(); ++r) {
    const ValidationRow& row = model.row(r);
    in.points.push_back({row.op + " " + row.shape, row.op, row.measuredS, row.predictedS});
  }
  return reports::make_diagonal_chart(in);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

ValidationPage::ValidationPage(ValidationModel* model, QWidget* parent)
    : QWidget(parent),
      m_model(model),
      m_view(makeChartView(this)),
      m_table(makeTable(model, this)),
      m_summary(new QLabel(this)),
      m_open(new QPushButton(tr("Open measurements CSV…"), this)) {
  m_summary->setWordWrap(true);
  wrapToWidth(m_summary);
  auto* top = new QHBoxLayout;
  top->addWidget(m_open, 0, Qt::AlignTop);
  top->addWidget(m_summary, 1);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(m_view);
  split->addWidget(m_table);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  split->setSizes({1, 1});
  m_view->setMinimumWidth(440);  // the log-log axes and their legend need the room
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(top);
  layout->addWidget(new AvailabilityStack(split, model, this), 1);
  rebuildOnReset(this, model, [this] { rebuild(); });
  connect(m_open, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open measurements"), m_model->file(),
                                                      tr("Measurements (*.csv);;All files (*)"));
    if (!path.isEmpty()) emit measurementsFileChosen(path);
  });
  rebuild();
}

void ValidationPage::rebuild() {
  const QString summary = m_model->summary();
  m_summary->setText(m_model->file().isEmpty() ? tr("No measurements chosen.")
                                               : QStringLiteral("%1 — %2").arg(m_model->file(), summary));
  replaceChart(m_view, makeValidationChart(*m_model, tr("Measured vs predicted block times")));
  m_table->resizeColumnsToContents();
}

// ---------------------------------------------------------------------------------------------

TabSpec validationTab() {
  return {QStringLiteral("validation"), QObject::tr("Validation"),
          [](ExplorerSession& session, QWidget* parent) -> QWidget* {
            auto* model = new ValidationModel;
            auto* page = new ValidationPage(model, parent);
            model->setParent(page);
            session.addResultModel(model);
            QObject::connect(page, &ValidationPage::measurementsFileChosen, &session,
                             &ExplorerSession::setMeasurementsFile);
            return page;
          }};
}

}  // namespace modsim::gui
