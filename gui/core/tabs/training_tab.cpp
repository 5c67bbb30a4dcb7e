#include "gui/core/tabs/training_tab.hpp"

#include <QFont>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <cmath>

#include "gui/core/explorer_session.hpp"
#include "gui/core/format.hpp"
#include "reports/chart_data.hpp"
#include "reports/charts.hpp"

namespace modsim::gui {

namespace {

QString budgetText(double flops) { return QString::number(flops, 'g', 4); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// TrainingModel

int TrainingModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !m_training.available) return 0;
  return m_training.training.budget ? RowCount : BudgetStepsRow;
}
int TrainingModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

namespace {

// One step's figure on `row` (the per-step rows; the budget rows are the caller's).
double step_value(const analysis::training_step& s, int row) {
  switch (row) {
    case TrainingModel::StepRow:
      return s.step_s;
    case TrainingModel::TokensPerSecondRow:
      return s.tokens_per_s;
    case TrainingModel::MfuRow:
      return s.mfu;
    case TrainingModel::ModelFlopsRow:
      return static_cast<double>(s.model_flops);
    case TrainingModel::WeightsRow:
      return s.memory.weights;
    case TrainingModel::GradientsRow:
      return s.memory.gradients;
    case TrainingModel::OptimizerStateRow:
      return s.memory.optimizer_state;
    case TrainingModel::ActivationsRow:
      return s.memory.activations;
    case TrainingModel::MemoryRow:
      return s.memory.total();
    default:
      return 0;
  }
}

}  // namespace

double TrainingModel::modelValue(int row) const {
  const analysis::training_section& t = m_training.training;
  switch (row) {
    case BudgetStepsRow:
      return t.budget ? t.budget->model_steps : 0.0;
    case BudgetTokensRow:
      return t.budget ? t.budget->model_tokens : 0.0;
    case BudgetWallRow:
      return t.budget ? t.budget->model_wall_s : 0.0;
    default:
      return step_value(t.model, row);
  }
}

double TrainingModel::baselineValue(int row) const {
  const analysis::training_section& t = m_training.training;
  switch (row) {
    case BudgetStepsRow:
      return t.budget ? t.budget->baseline_steps : 0.0;
    case BudgetTokensRow:
      return t.budget ? t.budget->baseline_tokens : 0.0;
    case BudgetWallRow:
      return t.budget ? t.budget->baseline_wall_s : 0.0;
    default:
      return step_value(t.baseline, row);
  }
}

namespace {

QString formatValue(int row, double v) {
  switch (row) {
    case TrainingModel::StepRow:
    case TrainingModel::BudgetWallRow:
      return v >= 3600 ? QStringLiteral("%1 h").arg(v / 3600, 0, 'f', 1) : formatSeconds(v);
    case TrainingModel::TokensPerSecondRow:
      return formatCount(v);
    case TrainingModel::MfuRow:
      return QStringLiteral("%1%").arg(100 * v, 0, 'f', 1);
    case TrainingModel::ModelFlopsRow:
      return formatFlops(v);
    case TrainingModel::BudgetStepsRow:
    case TrainingModel::BudgetTokensRow:
      return formatCount(v);
    default:
      return formatBytes(v);
  }
}

QString rowName(int row) {
  switch (row) {
    case TrainingModel::StepRow:
      return QObject::tr("Step time");
    case TrainingModel::TokensPerSecondRow:
      return QObject::tr("Tokens / s");
    case TrainingModel::MfuRow:
      return QObject::tr("MFU (model FLOPs)");
    case TrainingModel::ModelFlopsRow:
      return QObject::tr("Model FLOPs / step");
    case TrainingModel::WeightsRow:
      return QObject::tr("Weights");
    case TrainingModel::GradientsRow:
      return QObject::tr("Gradients");
    case TrainingModel::OptimizerStateRow:
      return QObject::tr("Optimizer state");
    case TrainingModel::ActivationsRow:
      return QObject::tr("Activations");
    case TrainingModel::MemoryRow:
      return QObject::tr("Memory / GPU");
    case TrainingModel::BudgetStepsRow:
      return QObject::tr("Steps at the budget");
    case TrainingModel::BudgetTokensRow:
      return QObject::tr("Tokens at the budget");
    case TrainingModel::BudgetWallRow:
      return QObject::tr("Wall-clock at the budget");
    default:
      return {};
  }
}

}  // namespace

QVariant TrainingModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const int r = index.row();
  const double m = modelValue(r), b = baselineValue(r);
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case MetricColumn:
        return rowName(r);
      case ModelColumn:
        return formatValue(r, m);
      case BaselineColumn:
        return formatValue(r, b);
      case RatioColumn:
        return formatRatio(m, b);
      default:
        return {};
    }
  }
  if (role == ValueRole) return index.column() == MetricColumn ? QVariant(rowName(r)) : QVariant(m);
  if (role == DenseValueRole) return index.column() == MetricColumn ? QVariant(rowName(r)) : QVariant(b);
  if (role == Qt::FontRole && (r == StepRow || r == BudgetWallRow)) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::TextAlignmentRole && index.column() != MetricColumn) return rightAligned();
  return {};
}

QVariant TrainingModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case MetricColumn:
      return tr("Per training step");
    case ModelColumn:
      return m_training.available ? qs(m_training.training.model.name) : tr("Model");
    case BaselineColumn:
      return m_training.available ? qs(m_training.training.baseline.name) : tr("Baseline");
    case RatioColumn:
      return tr("Model / baseline");
    default:
      return {};
  }
}

QString TrainingModel::summary() const {
  if (!m_training.available) return {};
  const analysis::training_section& t = m_training.training;
  QString text =
      tr("For the model FLOPs its baseline trains with, <b>%1</b> takes <b>%2</b> the wall-clock of <b>%3</b> "
         "(step %4, model FLOPs per step %5)")
          .arg(qs(t.model.name).toHtmlEscaped(), formatRatio(t.wall_ratio, 1.0), qs(t.baseline.name).toHtmlEscaped(),
               formatRatio(t.time_ratio, 1.0), formatRatio(t.model_flop_ratio, 1.0));
  if (t.budget)
    text += tr(" · at %1 model FLOPs: %2 against %3")
                .arg(budgetText(t.budget->flops), formatValue(BudgetWallRow, t.budget->model_wall_s),
                     formatValue(BudgetWallRow, t.budget->baseline_wall_s));
  text += tr("<br>Training step: %1, batch %2 × %3 tokens, recompute %4%5")
              .arg(qs(sim::to_string(t.load.type)))
              .arg(t.load.batch)
              .arg(t.load.seq_len)
              .arg(qs(sim::to_string(t.load.recompute)))
              .arg(m_training.asTrained ? tr(" (the workload's batch and sequence, trained)") : QString());
  text += tr("<br>Backward: %1<br>Attention's backward: %2<br>Optimizer: %3<br>%4<br>Memory: %5")
              .arg(qs(t.backward).toHtmlEscaped(), qs(t.attention_backward).toHtmlEscaped(),
                   qs(t.optimizer).toHtmlEscaped(), qs(t.flop_convention).toHtmlEscaped(),
                   qs(t.memory_scope).toHtmlEscaped());
  for (const analysis::training_step* s : {&t.model, &t.baseline})
    if (!s->memory_verdict.empty())
      text += QStringLiteral("<br>") + qs(s->name + ": " + s->memory_verdict).toHtmlEscaped();
  return text;
}

void TrainingModel::setResult(const ComputeResultPtr& result) {
  beginResetModel();
  if (result && result->error.empty()) {
    m_training = result->training;
  } else {
    m_training = TrainingResult{};
    if (result) m_training.unavailable = result->error;
  }
  setAvailability(m_training.available, qs(m_training.unavailable));
  endResetModel();
}

// ---------------------------------------------------------------------------------------------
// TrainingSourcesModel

int TrainingSourcesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_sources.size());
}
int TrainingSourcesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant TrainingSourcesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const analysis::training_source& s = m_sources[static_cast<std::size_t>(index.row())];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case SourceColumn:
        return qs(s.label);
      case ShareColumn:
        return QStringLiteral("%1%2%")
            .arg(s.value >= 0 ? QStringLiteral("+") : QString())
            .arg(100 * s.value, 0, 'f', 2);
      case WhyColumn:
        return qs(s.why);
      default:
        return {};
    }
  }
  if (role == ValueRole) return index.column() == ShareColumn ? QVariant(s.value) : QVariant(qs(s.key));
  if (role == Qt::ToolTipRole) return qs(s.why);
  if (role == Qt::TextAlignmentRole && index.column() == ShareColumn) return rightAligned();
  return {};
}

QVariant TrainingSourcesModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case SourceColumn:
      return tr("Where the difference comes from");
    case ShareColumn:
      return tr("Of the baseline's wall-clock");
    case WhyColumn:
      return tr("Why");
    default:
      return {};
  }
}

void TrainingSourcesModel::setResult(const ComputeResultPtr& result) {
  beginResetModel();
  const bool ok = result && result->error.empty() && result->training.available;
  m_sources = ok ? result->training.training.sources : std::vector<analysis::training_source>{};
  setAvailability(ok, result ? qs(result->error.empty() ? result->training.unavailable : result->error) : QString());
  endResetModel();
}

// ---------------------------------------------------------------------------------------------
// The chart: each step's parts, the model beside its baseline.

namespace {

QChart* makeTrainingChart(const TrainingModel& model, const QString& title) {
  reports::bar_chart_input in;
  in.title = title.toStdString();
  in.x_label = "training step";
  in.y_label = "predicted time (ms)";
  in.stacked = true;
  in.sets = {{"forward", {}, 0}, {"backward", {}, 1}, {"recompute", {}, 2}, {"optimizer", {}, 3}, {"launch", {}, 4}};
  if (model.result().available) {
    const analysis::training_section& t = model.result().training;
    // "model" and "baseline" (the tables above name them): a long name would be cut in a narrow chart.
    for (const analysis::training_step* s : {&t.model, &t.baseline}) {
      in.categories.push_back(s == &t.model ? "model" : "baseline");
      const double parts[] = {s->forward_s, s->backward_s, s->recompute_s, s->optimizer_s, s->overhead_s};
      for (std::size_t i = 0; i < in.sets.size(); ++i) in.sets[i].values.push_back(parts[i] * 1e3);
    }
  }
  return reports::make_bar_chart(in);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TrainingPage::TrainingPage(TrainingModel* model, TrainingSourcesModel* sources, QWidget* parent)
    : QWidget(parent),
      m_model(model),
      m_view(makeChartView(this)),
      m_table(makeTable(model, this)),
      m_sources(makeTable(sources, this)),
      m_budget(new QLineEdit(this)),
      m_summary(new QLabel(this)) {
  m_budget->setText(budgetText(6e18));
  m_budget->setPlaceholderText(tr("none"));
  m_budget->setMaximumWidth(140);
  m_budget->setToolTip(
      tr("A training budget in model FLOPs (3 × the forward pass's matmul FLOPs per step), e.g. the paper's 6e18: "
         "the steps, tokens and wall-clock of the model and its baseline at it. Empty: none."));
  m_summary->setWordWrap(true);
  m_summary->setTextFormat(Qt::RichText);
  wrapToWidth(m_summary);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("FLOP budget"), this));
  top->addWidget(m_budget);
  auto* how = new QLabel(tr("— equal FLOPs, equal wall-clock? Each step is priced op by op: forward, backward, "
                            "what recomputation runs again, one AdamW step"),
                         this);
  how->setWordWrap(true);
  wrapToWidth(how);
  top->addWidget(how, 1);
  auto* content = new QWidget(this);
  auto* cl = new QVBoxLayout(content);
  cl->setContentsMargins(0, 0, 0, 0);
  cl->addWidget(m_summary);
  auto* tables = new QSplitter(Qt::Horizontal, content);
  tables->addWidget(m_table);
  tables->addWidget(m_sources);
  tables->setStretchFactor(0, 1);
  tables->setStretchFactor(1, 1);
  auto* split = new QSplitter(Qt::Vertical, content);
  split->addWidget(tables);
  split->addWidget(m_view);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  cl->addWidget(split, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(top);
  layout->addWidget(new AvailabilityStack(content, model, this), 1);
  connect(m_budget, &QLineEdit::editingFinished, this, [this] { emit flopBudgetEdited(m_budget->text()); });
  rebuildOnReset(this, model, [this] { rebuild(); });
  rebuild();
}

void TrainingPage::setFlopBudget(std::optional<double> flops) {
  const QSignalBlocker block(m_budget);
  m_budget->setText(flops ? budgetText(*flops) : QString());
}

void TrainingPage::rebuild() {
  m_summary->setText(m_model->summary());
  replaceChart(m_view, makeTrainingChart(*m_model, tr("One training step: forward, backward, recompute, optimizer, "
                                                      "launches")));
  m_table->resizeColumnsToContents();
  m_sources->resizeColumnsToContents();
}

// ---------------------------------------------------------------------------------------------

TabSpec trainingTab() {
  return {QStringLiteral("training"), QObject::tr("Training"),
          [](ExplorerSession& session, QWidget* parent) -> QWidget* {
            auto* model = new TrainingModel;
            auto* sources = new TrainingSourcesModel;
            auto* page = new TrainingPage(model, sources, parent);
            model->setParent(page);
            sources->setParent(page);
            session.addResultModel(model);
            session.addResultModel(sources);
            page->setFlopBudget(session.config().flopBudget);
            QObject::connect(page, &TrainingPage::flopBudgetEdited, &session, [&session](const QString& text) {
              const QString t = text.trimmed();
              if (t.isEmpty()) return session.setFlopBudget(std::nullopt);
              bool ok = false;
              const double v = t.toDouble(&ok);
              session.setFlopBudget(ok ? v : std::nan(""));
            });
            return page;
          }};
}

}  // namespace modsim::gui
