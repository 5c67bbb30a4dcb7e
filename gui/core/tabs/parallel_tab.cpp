#include "gui/core/tabs/parallel_tab.hpp"

#include <QColor>
#include <QFont>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>

#include "gui/core/explorer_session.hpp"
#include "gui/core/format.hpp"
#include "reports/chart_data.hpp"
#include "reports/charts.hpp"
#include "reports/views.hpp"

namespace modsim::gui {

// ---------------------------------------------------------------------------------------------
// ParallelModel

int ParallelModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(m_parallel.rows.size());
}
int ParallelModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ParallelModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !checkIndex(index, kValidIndex)) return {};
  const ParallelRow& r = row(index.row());
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case SplitColumn:
        return qs(r.split);
      case StepColumn:
        return formatSeconds(r.stepS);
      case BaselineColumn:
        return r.baselineStepS > 0 ? formatSeconds(r.baselineStepS) : QStringLiteral("—");
      case RatioColumn:
        return formatRatio(r.stepS, r.baselineStepS);
      case ComputeColumn:
        return formatSeconds(r.computeS);
      case CommColumn:
        return formatSeconds(r.commS);
      case BubbleColumn:
        return formatSeconds(r.bubbleS);
      case MemoryColumn:
        return formatBytes(r.memoryBytes);
      case FitsColumn:
        return r.fits ? tr("yes") : tr("no");
      default:
        return {};
    }
  }
  if (role == ValueRole) {
    switch (index.column()) {
      case StepColumn:
        return r.stepS;
      case BaselineColumn:
        return r.baselineStepS;
      case RatioColumn:
        return r.baselineStepS > 0 ? r.stepS / r.baselineStepS : 0.0;
      case ComputeColumn:
        return r.computeS;
      case CommColumn:
        return r.commS;
      case BubbleColumn:
        return r.bubbleS;
      case MemoryColumn:
        return r.memoryBytes;
      case FitsColumn:
        return r.fits;
      default:
        return qs(r.split);
    }
  }
  if (role == Qt::FontRole && r.chosen) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::ForegroundRole && !r.fits) return QColor(0x99, 0x99, 0x99);
  if (role == Qt::ToolTipRole)
    return tr("%1: step %2 (compute %3, communication waited for %4, pipeline bubble %5); %6 per GPU%7")
        .arg(qs(r.split), formatSeconds(r.stepS), formatSeconds(r.computeS), formatSeconds(r.commS),
             formatSeconds(r.bubbleS), formatBytes(r.memoryBytes),
             r.fits ? QString() : tr(": does not fit in the GPU's memory"));
  if (role == Qt::TextAlignmentRole && index.column() != SplitColumn && index.column() != FitsColumn)
    return rightAligned();
  return {};
}

QVariant ParallelModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return ResultModel::headerData(section, o, role);
  switch (section) {
    case SplitColumn:
      return tr("Split");
    case StepColumn:
      return tr("Step");
    case BaselineColumn:
      return tr("Baseline step");
    case RatioColumn:
      return tr("Step / baseline");
    case ComputeColumn:
      return tr("Compute");
    case CommColumn:
      return tr("Comm. waited for");
    case BubbleColumn:
      return tr("Bubble");
    case MemoryColumn:
      return tr("Memory / GPU");
    case FitsColumn:
      return tr("Fits");
    default:
      return {};
  }
}

QString ParallelModel::summary() const {
  if (!m_parallel.available) return {};
  const ParallelRow& c = m_parallel.chosen;
  const ParallelRow& b = m_parallel.chosenBaseline;
  QString text =
      tr("<b>%1 on %2</b> (the fastest split that fits): step <b>%3</b> against %4 for %5 (<b>%6</b>) · compute %7, "
         "communication the next op waits for %8, pipeline bubble %9")
          .arg(m_modelName.toHtmlEscaped(), qs(c.split), formatSeconds(c.stepS), formatSeconds(b.stepS),
               qs(m_parallel.baselineName).toHtmlEscaped(), formatRatio(c.stepS, b.stepS), formatSeconds(c.computeS),
               formatSeconds(c.commS), formatSeconds(c.bubbleS));
  text += tr(" · %1 per GPU").arg(formatBytes(c.memoryBytes));
  if (c.pp > 1) {
    QStringList stages;
    for (std::size_t i = 0; i < m_parallel.stageS.size(); ++i)
      stages << tr("%1 from layer %2").arg(formatSeconds(m_parallel.stageS[i])).arg(m_parallel.stageFirstLayer[i]);
    text += tr("<br>Stages of one micro-batch (%1 micro-batches, balanced by predicted time): %2")
                .arg(c.microBatches)
                .arg(stages.join(QStringLiteral(", ")));
  }
  for (const std::string& n : m_parallel.notes) text += QStringLiteral("<br>") + qs(n).toHtmlEscaped();
  return text;
}

void ParallelModel::setResult(const ComputeResultPtr& result) {
  beginResetModel();
  if (result && result->error.empty()) {
    m_parallel = result->parallel;
    m_modelName = qs(result->model.name);
  } else {
    m_parallel = ParallelResult{};
    if (result) m_parallel.unavailable = result->error;
  }
  setAvailability(m_parallel.available, qs(m_parallel.unavailable));
  endResetModel();
}

// ---------------------------------------------------------------------------------------------
// Charts

namespace {

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

}  // namespace

// ---------------------------------------------------------------------------------------------

ParallelPage::ParallelPage(ParallelModel* model, QWidget* parent)
    : QWidget(parent),
      m_model(model),
      m_view(makeChartView(this)),
      m_table(makeTable(model, this)),
      m_gpus(new QSpinBox(this)),
      m_summary(new QLabel(this)) {
  m_gpus->setRange(1, 4096);
  m_gpus->setValue(8);
  m_gpus->setKeyboardTracking(false);
  m_gpus->setToolTip(
      tr("GPUs the step is split over: every tensor × pipeline × data parallel split of them "
         "(tp and pp powers of two, tp within a node) is ranked"));
  m_summary->setWordWrap(true);
  m_summary->setTextFormat(Qt::RichText);
  wrapToWidth(m_summary);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("GPUs"), this));
  top->addWidget(m_gpus);
  auto* how = new QLabel(tr("— each GPU computes a tensor-parallel shard; a layer's all-reduces carry only the "
                            "tokens its block computes (a routed layer's k); stages are balanced by time, 1F1B"),
                         this);
  how->setWordWrap(true);
  wrapToWidth(how);
  top->addStretch(1);
  auto* content = new QWidget(this);
  auto* cl = new QVBoxLayout(content);
  cl->setContentsMargins(0, 0, 0, 0);
  cl->addWidget(m_summary);
  auto* split = new QSplitter(Qt::Vertical, content);
  split->addWidget(m_view);
  split->addWidget(m_table);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  cl->addWidget(split, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addLayout(top);
  layout->addWidget(how);  // its own line: the whole width to wrap in
  layout->addWidget(new AvailabilityStack(content, model, this), 1);
  connect(m_gpus, &QSpinBox::valueChanged, this, &ParallelPage::gpusChosen);
  rebuildOnReset(this, model, [this] { rebuild(); });
  rebuild();
}

void ParallelPage::setGpus(int gpus) {
  const QSignalBlocker block(m_gpus);
  m_gpus->setValue(gpus);
}

void ParallelPage::rebuild() {
  m_summary->setText(m_model->summary());
  replaceChart(m_view, makeParallelChart(*m_model, tr("The step by split: compute, communication waited for, "
                                                      "pipeline bubble (splits that fit in memory)")));
  m_table->resizeColumnsToContents();
}

// ---------------------------------------------------------------------------------------------

TabSpec parallelTab() {
  return {QStringLiteral("parallel"), QObject::tr("Parallelism"),
          [](ExplorerSession& session, QWidget* parent) -> QWidget* {
            auto* model = new ParallelModel;
            auto* page = new ParallelPage(model, parent);
            model->setParent(page);
            session.addResultModel(model);
            QObject::connect(page, &ParallelPage::gpusChosen, &session, &ExplorerSession::setGpus);
            return page;
          }};
}

}  // namespace modsim::gui
