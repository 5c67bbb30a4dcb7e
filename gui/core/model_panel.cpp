#include "gui/core/model_panel.hpp"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMap>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QVBoxLayout>

#include "core/error.hpp"
#include "gui/core/explorer_config.hpp"
#include "gui/core/explorer_session.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/cost/sweep.hpp"

namespace modsim::gui {
namespace {

// Capacity cells edit with four decimals in (0, 1].
class CapacityDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const override {
    auto* spin = new QDoubleSpinBox(parent);
    spin->setDecimals(4);
    spin->setRange(0.0, 1.0);  // 0 is refused with a message, not clamped
    spin->setSingleStep(0.03125);
    spin->setFrame(false);
    return spin;
  }
};

QSpinBox* spinBox(int lo, int hi, int step, QWidget* parent) {
  auto* s = new QSpinBox(parent);
  s->setRange(lo, hi);
  s->setSingleStep(step);
  s->setKeyboardTracking(false);
  s->setAccelerated(true);
  s->setGroupSeparatorShown(true);
  return s;
}

QString qs(const std::string& s) { return QString::fromStdString(s); }

// The Baseline box's item for a baseline kept from the design space (no file).
const QString kKeptBaseline = QStringLiteral("<kept from the design space>");

}  // namespace

ModelPanel::ModelPanel(ExplorerSession* session, QWidget* parent) : QWidget(parent), m_session(session) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(buildModelBox());
  layout->addWidget(buildWorkloadBox());
  layout->addWidget(buildScheduleBox(), 1);
  layout->addWidget(buildVariantBox());
  layout->addWidget(buildHardwareBox());

  connect(session, &ExplorerSession::configChanged, this, &ModelPanel::refresh);
  connect(session, &ExplorerSession::validationChanged, this, &ModelPanel::showValidation);
  connect(session, &ExplorerSession::editRefused, this, &ModelPanel::showValidation);
  refresh();
}

QGroupBox* ModelPanel::buildModelBox() {
  auto* modelBox = new QGroupBox(tr("Model"), this);
  auto* mf = new QFormLayout(modelBox);
  mf->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  m_name = new QLabel(modelBox);
  m_name->setTextInteractionFlags(Qt::TextSelectableByMouse);
  mf->addRow(tr("Name"), m_name);
  m_notesNote = makeNoteLabel(modelBox);
  mf->addRow(m_notesNote);
  addErrorRow(mf, QStringLiteral("model"));
  struct Dim {
    const char* key;
    const char* label;
    int lo, hi, step;
  };
  // The editors accept 0 so that a 0 is refused with a message instead of snapping back.
  const Dim dims[] = {{"d_model", "d_model", 0, 1 << 20, 64}, {"n_layers", "Layers", 0, 1000, 1},
                      {"n_heads", "Heads", 0, 4096, 1},       {"n_kv_heads", "KV heads", 0, 4096, 1},
                      {"d_ff", "d_ff", 0, 1 << 22, 256},      {"vocab_size", "Vocab", 0, 1 << 24, 1000}};
  // Two editors per row, each row followed by a row for the errors of its two fields.
  auto* grid = new QGridLayout;
  grid->setHorizontalSpacing(6);
  grid->setColumnStretch(1, 1);
  grid->setColumnStretch(3, 1);
  int gridRow = 0;
  for (std::size_t i = 0; i < std::size(dims); ++i) {
    const Dim& d = dims[i];
    const QString key = QString::fromLatin1(d.key);
    QSpinBox* s = spinBox(d.lo, d.hi, d.step, modelBox);
    m_dims.insert(key, s);
    const int col = int(i % 2) * 2;
    grid->addWidget(new QLabel(tr(d.label), modelBox), gridRow, col);
    grid->addWidget(s, gridRow, col + 1);
    QLabel* error = makeErrorLabel(key);
    grid->addWidget(error, gridRow + 1, 0, 1, 4);
    connect(s, &QSpinBox::valueChanged, this, [this, key](int v) { m_session->setDimension(key, v); });
    if (i % 2 == 1) gridRow += 2;
  }
  mf->addRow(grid);
  m_mlp = new QComboBox(modelBox);
  m_mlp->addItem(QStringLiteral("gelu"));
  m_mlp->addItem(QStringLiteral("swiglu"));
  mf->addRow(tr("MLP"), m_mlp);
  connect(m_mlp, &QComboBox::currentIndexChanged, this,
          [this](int i) { m_session->setMlp(i == 0 ? sim::mlp_kind::gelu : sim::mlp_kind::swiglu); });
  m_window = new QLabel(modelBox);
  m_window->setTextInteractionFlags(Qt::TextSelectableByMouse);
  mf->addRow(tr("Attention window"), m_window);
  return modelBox;
}

QGroupBox* ModelPanel::buildWorkloadBox() {
  auto* loadBox = new QGroupBox(tr("Workload"), this);
  auto* lf = new QFormLayout(loadBox);
  lf->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  m_mode = new QComboBox(loadBox);
  for (sim::run_mode m : {sim::run_mode::train, sim::run_mode::forward, sim::run_mode::decode})
    m_mode->addItem(displayName(m), int(m));
  m_mode->setToolTip(
      tr("Training step (forward + backward), prefill (one forward pass), or one decode step "
         "over a cached context of 'sequence' tokens"));
  lf->addRow(tr("Mode"), m_mode);
  m_seq = spinBox(1, 1 << 22, 256, loadBox);
  lf->addRow(tr("Sequence"), m_seq);
  addErrorRow(lf, QStringLiteral("seq_len"));
  m_batch = spinBox(1, 1 << 20, 1, loadBox);
  lf->addRow(tr("Batch"), m_batch);
  addErrorRow(lf, QStringLiteral("batch"));
  m_dtype = new QComboBox(loadBox);
  m_dtype->addItems({QStringLiteral("fp32"), QStringLiteral("bf16"), QStringLiteral("fp16")});
  lf->addRow(tr("dtype"), m_dtype);
  m_dtypeNote = makeNoteLabel(loadBox);
  lf->addRow(m_dtypeNote);
  m_baseline = new QComboBox(loadBox);
  m_baseline->addItem(tr("the model without routing"), QString());
  for (const QFileInfo& f : QDir(configsDir() + QStringLiteral("/models"))
                                .entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
    try {
      const sim::model_spec m = sim::load_model(f.absoluteFilePath().toStdString());
      if (!m.routing && !m.moe) m_baseline->addItem(f.completeBaseName(), f.absoluteFilePath());
    } catch (const modsim::error&) {
      // not offered
    }
  }
  m_baseline->setToolTip(
      tr("The dense baseline every \"vs dense\" compares with: the model with its routing removed, or a "
         "matched-quality dense model (the paper's sampling speed-up is against one)"));
  lf->addRow(tr("Baseline"), m_baseline);
  m_baselineNote = makeNoteLabel(loadBox);
  lf->addRow(m_baselineNote);
  addErrorRow(lf, QStringLiteral("baseline"));
  connect(m_baseline, &QComboBox::activated, this, [this](int i) {
    const QString path = m_baseline->itemData(i).toString();
    if (path != kKeptBaseline) m_session->setBaseline(path);
  });
  m_attention = new QComboBox(loadBox);
  m_attention->addItem(tr("the hardware's default"), QString());
  m_attention->addItem(tr("fused"), QStringLiteral("fused"));
  m_attention->addItem(tr("unfused"), QStringLiteral("unfused"));
  m_attention->setToolTip(
      tr("How attention runs (modsim --attention): fused, one causal kernel (what training and serving "
         "stacks run on a GPU; the default there); unfused, scores, softmax and values as separate kernels "
         "(modsim's own kernels; the default on a CPU). Where the calibration measured the other, attention "
         "is the datasheet roofline and the prediction has no error band."));
  lf->addRow(tr("Attention"), m_attention);
  connect(m_attention, &QComboBox::activated, this, [this](int i) {
    const QString name = m_attention->itemData(i).toString();
    m_session->setAttention(name.isEmpty() ? std::nullopt : modsim::find_attention_impl(name.toStdString()));
  });
  connect(m_mode, &QComboBox::currentIndexChanged, this,
          [this](int) { m_session->setMode(sim::run_mode(m_mode->currentData().toInt())); });
  connect(m_seq, &QSpinBox::valueChanged, this, [this](int v) { m_session->setSeqLen(v); });
  connect(m_batch, &QSpinBox::valueChanged, this, [this](int v) { m_session->setBatch(v); });
  connect(m_dtype, &QComboBox::currentIndexChanged, this, [this](int i) {
    m_session->setDtype(i == 0 ? sim::dtype::fp32 : i == 1 ? sim::dtype::bf16 : sim::dtype::fp16);
  });
  return loadBox;
}

QGroupBox* ModelPanel::buildScheduleBox() {
  auto* schedBox = new QGroupBox(tr("Schedule (routed layers and their capacity)"), this);
  auto* sl = new QVBoxLayout(schedBox);
  auto* presetRow = new QHBoxLayout;
  m_preset = new QComboBox(schedBox);
  m_preset->addItem(tr("none (dense)"), QStringLiteral("none"));
  m_preset->addItem(tr("all"), QStringLiteral("all"));
  m_preset->addItem(tr("every other"), QStringLiteral("every_other"));
  m_preset->addItem(tr("every n-th"), QStringLiteral("every_nth"));
  m_preset->addItem(tr("custom"), QStringLiteral("custom"));
  m_nth = spinBox(2, 1000, 1, schedBox);
  m_nth->setPrefix(QStringLiteral("n = "));
  m_capacity = new QDoubleSpinBox(schedBox);
  m_capacity->setDecimals(4);
  m_capacity->setRange(0.0, 1.0);  // 0 is refused with a message, not clamped
  m_capacity->setSingleStep(0.03125);
  m_capacity->setKeyboardTracking(false);
  m_capacity->setPrefix(QStringLiteral("c = "));
  m_capacity->setToolTip(
      tr("Capacity of every routed layer: the fraction of each sequence's tokens its block computes"));
  presetRow->addWidget(m_preset, 2);
  presetRow->addWidget(m_nth, 1);
  presetRow->addWidget(m_capacity, 1);
  sl->addLayout(presetRow);
  m_scheduleNote = makeNoteLabel(schedBox);
  sl->addWidget(m_scheduleNote);
  m_scheduleView = new QTableView(schedBox);
  m_scheduleView->setModel(m_session->scheduleModel());
  m_scheduleView->setItemDelegateForColumn(ScheduleModel::CapacityColumn, new CapacityDelegate(m_scheduleView));
  m_scheduleView->verticalHeader()->setVisible(false);
  m_scheduleView->verticalHeader()->setDefaultSectionSize(20);
  m_scheduleView->horizontalHeader()->setStretchLastSection(true);
  // Columns sized by their contents on every reset (a preset, a loaded model), never collapsed.
  for (int c : {ScheduleModel::LayerColumn, ScheduleModel::RoutedColumn, ScheduleModel::CapacityColumn})
    m_scheduleView->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  m_scheduleView->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                                  QAbstractItemView::AnyKeyPressed | QAbstractItemView::SelectedClicked);
  m_scheduleView->setAlternatingRowColors(true);
  m_scheduleView->setMinimumHeight(150);
  sl->addWidget(m_scheduleView, 1);
  auto* schedErrors = new QFormLayout;
  addErrorRow(schedErrors, QStringLiteral("routing"));
  sl->addLayout(schedErrors);
  connect(m_preset, &QComboBox::activated, this, [this](int) {
    m_presetChoice = m_preset->currentData().toString();
    // every_nth with n = 2 is every other layer: start from the first n that differs.
    if (m_presetChoice == QStringLiteral("every_nth") && m_nth->value() == 2 && m_nth->maximum() >= 3) {
      const QSignalBlocker b(m_nth);
      m_nth->setValue(3);
    }
    applyPreset();
  });
  connect(m_nth, &QSpinBox::valueChanged, this, [this](int) {
    if (m_preset->currentData().toString() == QStringLiteral("every_nth")) applyPreset();
  });
  // Integrated MoDE: the capacity is the share of tokens that reach a real expert, so it sets
  // the no-op experts (the session, sim::noop_experts_for) in the same edit.
  connect(m_capacity, &QDoubleSpinBox::valueChanged, this, [this](double) { applyPreset(); });
  return schedBox;
}

QGroupBox* ModelPanel::buildVariantBox() {
  auto* variantBox = new QGroupBox(tr("MoDE variant"), this);
  auto* vf = new QFormLayout(variantBox);
  vf->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  m_variant = new QComboBox(variantBox);
  m_variant->addItem(tr("none (dense MLP)"), QStringLiteral("none"));
  m_variant->addItem(tr("MoE only (no MoD)"), QStringLiteral("moe"));
  m_variant->addItem(tr("staged (MoD, then MoE)"), QStringLiteral("staged"));
  m_variant->addItem(tr("integrated (no-op experts)"), QStringLiteral("integrated"));
  vf->addRow(tr("Variant"), m_variant);
  m_experts = spinBox(1, 1 << 12, 1, variantBox);
  m_topK = spinBox(1, 64, 1, variantBox);
  m_noop = spinBox(0, 1 << 12, 1, variantBox);  // 0 is refused with a message, not clamped
  m_noop->setToolTip(
      tr("Integrated MoDE: no-op experts beside the real ones; a token routed to one skips the MLP. E real and N "
         "no-op experts let E/(E+N) of the tokens compute, so the capacity c sets N = E(1-c)/c"));
  m_capacityFactor = new QDoubleSpinBox(variantBox);
  m_capacityFactor->setRange(0, 16);
  m_capacityFactor->setDecimals(2);
  m_capacityFactor->setSingleStep(0.25);
  m_capacityFactor->setKeyboardTracking(false);
  m_capacityFactor->setSpecialValueText(tr("dropless"));
  m_capacityFactor->setToolTip(tr("Expert capacity factor (0 = dropless)"));
  auto* vgrid = new QGridLayout;
  vgrid->setColumnStretch(1, 1);
  vgrid->setColumnStretch(3, 1);
  vgrid->addWidget(new QLabel(tr("Experts"), variantBox), 0, 0);
  vgrid->addWidget(m_experts, 0, 1);
  vgrid->addWidget(new QLabel(tr("top-k"), variantBox), 0, 2);
  vgrid->addWidget(m_topK, 0, 3);
  vgrid->addWidget(new QLabel(tr("No-op"), variantBox), 1, 0);
  vgrid->addWidget(m_noop, 1, 1);
  vgrid->addWidget(new QLabel(tr("Cap. factor"), variantBox), 1, 2);
  vgrid->addWidget(m_capacityFactor, 1, 3);
  vf->addRow(vgrid);
  m_variantNote = makeNoteLabel(variantBox);
  vf->addRow(m_variantNote);
  addErrorRow(vf, QStringLiteral("mode"));
  connect(m_variant, &QComboBox::currentIndexChanged, this, [this](int) {
    if (m_variant->currentData().toString() == QStringLiteral("integrated")) {
      const QSignalBlocker b(m_noop);
      m_noop->setValue(
          sim::noop_experts_for(m_experts->value(), m_capacity->value() > 0 ? m_capacity->value() : 0.125));
    }
    applyVariant();
  });
  connect(m_experts, &QSpinBox::valueChanged, this, [this](int) {
    if (m_variant->currentData().toString() == QStringLiteral("integrated") && m_capacity->value() > 0) {
      const QSignalBlocker b(m_noop);
      m_noop->setValue(sim::noop_experts_for(m_experts->value(), m_capacity->value()));
    }
    applyVariant();
  });
  connect(m_topK, &QSpinBox::valueChanged, this, [this](int) { applyVariant(); });
  connect(m_noop, &QSpinBox::valueChanged, this, [this](int n) {
    // The no-op experts edited directly: the routed layers' capacity follows, E/(E+N). Fewer
    // than one is refused (the session says why) and leaves the capacity alone.
    applyVariant();
    if (n < 1) return;
    const QSignalBlocker b(m_capacity);
    m_capacity->setValue(double(m_experts->value()) / double(m_experts->value() + n));
    applyPreset();
  });
  connect(m_capacityFactor, &QDoubleSpinBox::valueChanged, this, [this](double) { applyVariant(); });
  return variantBox;
}

QGroupBox* ModelPanel::buildHardwareBox() {
  auto* hwBox = new QGroupBox(tr("Hardware"), this);
  auto* hl = new QVBoxLayout(hwBox);
  auto* hwRow = new QHBoxLayout;
  m_hardware = new QComboBox(hwBox);
  m_hardware->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_addHardware = new QPushButton(tr("Add…"), hwBox);
  m_addHardware->setToolTip(tr("Add a hardware file (e.g. one written by modsim calibrate)"));
  hwRow->addWidget(m_hardware, 1);
  hwRow->addWidget(m_addHardware);
  hl->addLayout(hwRow);
  m_hardwareInfo = new QLabel(hwBox);
  m_hardwareInfo->setWordWrap(true);
  m_hardwareInfo->setStyleSheet(QStringLiteral("QLabel { color: #555; }"));
  hl->addWidget(m_hardwareInfo);
  auto* hwErrors = new QFormLayout;
  addErrorRow(hwErrors, QStringLiteral("hardware"));
  hl->addLayout(hwErrors);
  connect(m_addHardware, &QPushButton::clicked, this, &ModelPanel::addHardwareRequested);
  connect(m_hardware, &QComboBox::activated, this,
          [this](int i) { emit hardwareChosen(m_hardware->itemData(i).toString()); });
  return hwBox;
}

QLabel* ModelPanel::makeErrorLabel(const QString& key) {
  auto* label = new QLabel(this);
  label->setWordWrap(true);
  label->setObjectName(QStringLiteral("error:") + key);
  label->setStyleSheet(QStringLiteral("QLabel { color: #b00020; font-size: 9pt; }"));
  label->setVisible(false);
  m_errors.insert(key, label);
  return label;
}

QLabel* ModelPanel::makeNoteLabel(QWidget* parent) {
  auto* label = new QLabel(parent);
  label->setWordWrap(true);
  label->setStyleSheet(QStringLiteral("QLabel { color: #555; font-size: 9pt; }"));
  label->setVisible(false);
  return label;
}

QString ModelPanel::noteText(const QString& which) const {
  const QLabel* l = which == QStringLiteral("schedule")   ? m_scheduleNote
                    : which == QStringLiteral("variant")  ? m_variantNote
                    : which == QStringLiteral("dtype")    ? m_dtypeNote
                    : which == QStringLiteral("baseline") ? m_baselineNote
                    : which == QStringLiteral("notes")    ? m_notesNote
                                                          : nullptr;
  return l && !l->isHidden() ? l->text() : QString();
}

void ModelPanel::setNote(QLabel* label, const QString& text) {
  label->setText(text);
  label->setVisible(!text.isEmpty());
}

QLabel* ModelPanel::addErrorRow(QFormLayout* form, const QString& key) {
  QLabel* label = makeErrorLabel(key);
  form->addRow(label);
  return label;
}

QString ModelPanel::errorFor(const QString& key) const {
  const QLabel* l = m_errors.value(key);
  return l && !l->isHidden() ? l->text() : QString();
}

void ModelPanel::showValidation(const QString& key, const QString& message) {
  for (QLabel* l : std::as_const(m_errors)) {
    l->clear();
    l->setVisible(false);
  }
  if (key.isEmpty() && message.isEmpty()) return;
  QString target = key;
  if (!m_errors.contains(target)) {
    if (key.startsWith(QStringLiteral("routing")))
      target = QStringLiteral("routing");
    else if (key.startsWith(QStringLiteral("mode")))
      target = QStringLiteral("mode");
    else if (key == QStringLiteral("d_head"))
      target = QStringLiteral("n_heads");
    else if (key == QStringLiteral("workload"))
      target = QStringLiteral("batch");
    else
      target = QStringLiteral("model");
  }
  QLabel* l = m_errors.value(target);
  l->setText(key.isEmpty() || key == target ? message : key + QStringLiteral(": ") + message);
  l->setVisible(true);
}

void ModelPanel::setHardwareFiles(const QStringList& files) {
  const QSignalBlocker block(m_hardware);
  m_hardware->clear();
  for (const QString& f : files) {
    QString name = QFileInfo(f).completeBaseName();
    if (name.contains(QStringLiteral("calibrated"))) name += tr("  (measured)");
    m_hardware->addItem(name, f);
    m_hardware->setItemData(m_hardware->count() - 1, f, Qt::ToolTipRole);
  }
  refresh();
}

void ModelPanel::applyVariant() {
  const QString v = m_variant->currentData().toString();
  const bool moe = v != QStringLiteral("none");
  m_experts->setEnabled(moe);
  m_topK->setEnabled(moe);
  m_capacityFactor->setEnabled(moe);
  m_noop->setEnabled(v == QStringLiteral("integrated"));
  m_session->setVariant(v, m_experts->value(), m_topK->value(), m_noop->value(), m_capacityFactor->value());
}

void ModelPanel::applyPreset() {
  const QString preset = m_preset->currentData().toString();
  m_nth->setEnabled(preset == QStringLiteral("every_nth"));
  ScheduleModel* model = m_session->scheduleModel();
  if (preset == QStringLiteral("custom")) {
    // Keep the routed set; give every routed layer the capacity, in one edit.
    model->setRoutedCapacity(m_capacity->value());
    return;
  }
  model->applyPreset(preset, m_nth->value(), m_capacity->value());
}

void ModelPanel::refresh() {
  const sim::model_spec& m = m_session->draftModel();
  const sim::workload& w = m_session->draftWorkload();
  const QString path = m_session->modelPath();
  m_name->setText(qs(m.name) + (path.isEmpty() ? QString() : QStringLiteral("  (%1)").arg(QFileInfo(path).fileName())));
  m_name->setToolTip(path.isEmpty() ? qs(m.notes) : path + QStringLiteral("\n") + qs(m.notes));
  setNote(m_notesNote, m_session->notesStatus());
  auto set = [](QSpinBox* s, int v) {
    const QSignalBlocker b(s);
    s->setValue(v);
  };
  set(m_dims[QStringLiteral("d_model")], m.d_model);
  set(m_dims[QStringLiteral("n_layers")], m.n_layers);
  set(m_dims[QStringLiteral("n_heads")], m.n_heads);
  set(m_dims[QStringLiteral("n_kv_heads")], m.n_kv_heads);
  set(m_dims[QStringLiteral("d_ff")], m.d_ff);
  set(m_dims[QStringLiteral("vocab_size")], m.vocab_size);
  {
    const QSignalBlocker b(m_mlp);
    m_mlp->setCurrentIndex(m.mlp == sim::mlp_kind::gelu ? 0 : 1);
  }
  if (m.sliding_window > 0) {
    m_window->setText(tr("sliding, %1 positions").arg(m.sliding_window));
    m_window->setToolTip(
        tr("Sliding-window attention (the model file's sliding_window, as in Mistral): each query attends to at most "
           "%1 keys, and a sequence's KV cache holds at most %1 positions per layer. Priced in the attention FLOPs, "
           "bytes and KV memory; at a routed layer the window caps the routed keys (an upper bound). Read from the "
           "model file, not editable here.")
            .arg(m.sliding_window));
  } else {
    m_window->setText(tr("full"));
    m_window->setToolTip(
        tr("Full causal attention: each query attends to every earlier position (the model file has no "
           "sliding_window)."));
  }
  set(m_seq, int(std::min<std::int64_t>(w.seq_len, m_seq->maximum())));
  set(m_batch, int(std::min<std::int64_t>(w.batch, m_batch->maximum())));
  {
    const QSignalBlocker b(m_dtype);
    m_dtype->setCurrentIndex(w.type == sim::dtype::fp32 ? 0 : w.type == sim::dtype::bf16 ? 1 : 2);
  }
  {
    const QSignalBlocker b(m_mode);
    m_mode->setCurrentIndex(m_mode->findData(int(w.run)));
  }
  refreshSchedule(m);
  refreshVariant(m);
  setNote(m_dtypeNote, m_session->dtypeNotice());
  {
    const QSignalBlocker b(m_baseline);
    const ExplorerConfig& c = m_session->config();
    const int kept = m_baseline->findData(kKeptBaseline);
    if (kept >= 0) m_baseline->removeItem(kept);
    int i = m_baseline->findData(c.baselinePath);
    if (c.baselineOrigin == ExplorerConfig::BaselineOrigin::DesignSpace && c.baseline) {
      m_baseline->insertItem(1, tr("%1 (kept from the design space)").arg(qs(c.baseline->name)), kKeptBaseline);
      i = 1;
    }
    m_baseline->setCurrentIndex(i >= 0 ? i : 0);
    setNote(m_baselineNote, m_session->baselineNotice());
  }
  {
    const QSignalBlocker b(m_attention);
    const std::optional<attention_impl>& a = m_session->config().attention;
    const int i = a ? m_attention->findData(QString::fromLatin1(modsim::to_string(*a))) : 0;
    m_attention->setCurrentIndex(i >= 0 ? i : 0);
  }
  {
    const QSignalBlocker b(m_hardware);
    const sim::hardware_spec& hw = m_session->config().hardware;
    const int i = m_hardware->findData(QFileInfo(qs(hw.source_file)).absoluteFilePath());
    if (i >= 0) m_hardware->setCurrentIndex(i);
    const sim::cost_model cm(hw);
    m_hardwareInfo->setText(tr("%1 · %2 SMs/cores · %3 GB/s\ncost model: %4")
                                .arg(qs(hw.name))
                                .arg(hw.sm_count)
                                .arg(hw.memory_bandwidth_bytes_s / 1e9, 0, 'f', 0)
                                .arg(qs(cm.label())));
    m_hardwareInfo->setToolTip(qs(hw.source));
  }
  m_scheduleView->resizeColumnsToContents();
}

// The schedule's preset, n and capacity from the routed layers.
void ModelPanel::refreshSchedule(const sim::model_spec& m) {
  const QSignalBlocker b1(m_preset), b2(m_nth), b3(m_capacity);
  std::vector<bool> routed;
  double cap = m.routing ? m.routing->capacity : 0.125;
  bool first = true;
  QMap<double, int> byCapacity;  // routed layers per capacity
  for (const auto& l : m_session->scheduleModel()->layers()) {
    routed.push_back(l.has_value());
    if (!l) continue;
    if (first) cap = *l, first = false;
    ++byCapacity[*l];
  }
  const int layers = int(routed.size());
  m_nth->setMaximum(std::max(2, layers));
  const std::string preset = sim::schedule_preset(routed);
  QString key = QStringLiteral("custom");
  if (preset.rfind("every_nth:", 0) == 0) {
    key = QStringLiteral("every_nth");
    m_nth->setValue(std::stoi(preset.substr(10)));
  } else if (!preset.empty()) {
    key = qs(preset);
  }
  // The user's own choice stands while the layers are what it routes: every n-th with n = 2
  // routes what every other does, and stays every n-th.
  if (m_presetChoice == QStringLiteral("every_nth") && key == QStringLiteral("every_other") && m_nth->value() == 2)
    key = m_presetChoice;
  if (byCapacity.size() > 1) key = QStringLiteral("custom");
  m_preset->setCurrentIndex(m_preset->findData(key));
  m_nth->setEnabled(key == QStringLiteral("every_nth"));
  m_capacity->setValue(cap);
  QString note;
  if (byCapacity.size() > 1) {
    QStringList parts;
    for (auto it = byCapacity.cbegin(); it != byCapacity.cend(); ++it)
      parts << (it.value() == 1 ? tr("1 layer at %1").arg(it.key(), 0, 'g', 4)
                                : tr("%1 layers at %2").arg(it.value()).arg(it.key(), 0, 'g', 4));
    note = tr("Mixed capacities: %1. Changing c sets every routed layer to it.").arg(parts.join(QStringLiteral(", ")));
  }
  setNote(m_scheduleNote, note);
}

// The MoDE variant's editors and note.
void ModelPanel::refreshVariant(const sim::model_spec& m) {
  const QSignalBlocker b1(m_variant), b2(m_experts), b3(m_topK), b4(m_noop), b5(m_capacityFactor);
  const QString v = m.moe ? qs(sim::to_string(m.moe->variant)) : QStringLiteral("none");
  m_variant->setCurrentIndex(m_variant->findData(v));
  sim::moe_spec fallback;
  fallback.experts = 8;
  fallback.top_k = 1;
  fallback.capacity_factor = 1.25;
  fallback.noop_experts = 1;
  const sim::moe_spec spec = m.moe.value_or(fallback);
  m_experts->setValue(spec.experts);
  m_topK->setValue(spec.top_k);
  m_noop->setValue(m.moe ? spec.noop_experts : 1);
  m_capacityFactor->setValue(spec.capacity_factor);
  m_experts->setEnabled(m.moe.has_value());
  m_topK->setEnabled(m.moe.has_value());
  m_capacityFactor->setEnabled(m.moe.has_value());
  const bool integrated = m.moe && m.moe->variant == sim::moe_variant::integrated;
  m_noop->setEnabled(integrated);
  QString note;
  if (integrated)
    note = tr("Integrated: at the routed layers a token skips the MLP when it is routed to one of the %1 no-op "
              "experts, so %2 of %3 experts compute: capacity %4 (the capacity c sets the no-op experts, "
              "N = E(1-c)/c). Attention runs on every token.")
               .arg(spec.noop_experts)
               .arg(spec.experts)
               .arg(spec.experts + spec.noop_experts)
               .arg(double(spec.experts) / double(spec.experts + spec.noop_experts), 0, 'g', 3);
  else if (m.moe && m.moe->variant == sim::moe_variant::moe && m.routing)
    note = tr("MoE only: the schedule and capacity are not used (no MoD routing).");
  setNote(m_variantNote, note);
}

}  // namespace modsim::gui
