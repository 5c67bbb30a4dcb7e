#include "gui/core/explorer_session.hpp"

#include <QFile>
#include <cmath>
#include <QSaveFile>

#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "sim/model/flops.hpp"
#include "sim/cost/sweep.hpp"
#include "analysis/analysis.hpp"
#include "core/error.hpp"

#include <fmt/format.h>

namespace modsim::gui {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

analysis::configuration analysisConfig(const ExplorerConfig& c) {
  return analysis::configuration{c.model, c.load, c.hardware, c.baseline, c.attention};
}

std::string routingOf(const sim::model_spec& m) { return routingText(m).toStdString(); }

// A model's notes are written for its routing as loaded. Saved with the routing edited, they
// end in this mark, which names both routings; loaded again, the mark gives the routing the notes
// before it describe (ExplorerSession::m_notesRouting).
constexpr std::string_view kNotesMark = " [modsim-gui: the routing was edited to ";
constexpr std::string_view kNotesMarkMiddle = "; the notes before this mark describe ";

struct Notes {
  std::string text;     // without the mark
  std::string routing;  // the routing `text` describes
};

// `m`'s notes without the mark, and the routing they describe: the mark's, else `loaded`.
Notes notesOf(const sim::model_spec& m, const std::string& loaded) {
  const std::size_t at = m.notes.find(kNotesMark);
  const std::size_t middle = at == std::string::npos ? at : m.notes.find(kNotesMarkMiddle, at);
  if (middle == std::string::npos || m.notes.back() != ']') return {m.notes, loaded};
  const std::size_t from = middle + kNotesMarkMiddle.size();
  return {m.notes.substr(0, at), m.notes.substr(from, m.notes.size() - 2 - from)};
}

std::string markedNotes(const Notes& notes, const sim::model_spec& m) {
  const std::string now = routingOf(m);
  if (notes.text.empty() || now == notes.routing) return notes.text;
  return notes.text + std::string(kNotesMark) + now + std::string(kNotesMarkMiddle) + notes.routing + ".]";
}

// The built-in starting point: the paper's 220M MoD model, prefill of 2,048 tokens, H100.
sim::model_spec builtinModel() {
  sim::model_spec m;
  m.name = "mod-220m";
  m.d_model = 1024;
  m.n_layers = 16;
  m.n_heads = 16;
  m.n_kv_heads = 16;
  m.d_head = 64;
  m.d_ff = 4096;
  m.vocab_size = 32000;
  sim::routing_spec r;
  r.capacity = 0.125;
  r.sched.kind = sim::schedule_kind::every_other;
  r.predictor_hidden = 256;
  m.routing = r;
  return m;
}

sim::hardware_spec builtinHardware() {
  sim::hardware_spec h;
  h.name = "h100-sxm (built-in datasheet)";
  h.kind = sim::hardware_kind::gpu;
  h.source = "datasheet";
  h.peak_matmul_flops = {66.9e12, 989.4e12, 989.4e12};
  h.peak_vector_flops = {66.9e12, 133.8e12, 133.8e12};
  h.memory_bandwidth_bytes_s = 3.35e12;
  h.memory_bytes = 80e9;
  h.l2_bytes = 52428800;
  h.sm_count = 132;
  h.kernel_launch_s = 2.5e-6;
  h.host_enqueue_s = 4.0e-6;
  return h;
}

}  // namespace

ExplorerSession::ExplorerSession(QObject* parent)
    : QObject(parent),
      m_pendingTimer(new QTimer(this)),
      m_schedule(new ScheduleModel(this)),
      m_summary(new SummaryModel(this)),
      m_worker(new ComputeWorker(this)) {
  m_pendingTimer->setSingleShot(true);
  m_pendingTimer->setInterval(250);
  connect(m_pendingTimer, &QTimer::timeout, this, [this] { markPending(0); });
  // The start-up model is the shipped mod-220m file (its notes included); the built-in copy
  // only when the file is missing or does not load.
  m_config.model = builtinModel();
  const QString startup = resolveConfig(QStringLiteral("mod-220m"), QStringLiteral("models"));
  try {
    if (QFile::exists(startup)) {
      m_config.model = sim::load_model(startup.toStdString());
      m_modelPath = startup;
    }
  } catch (const modsim::error&) {
    // the built-in copy; opening the file shows its error
  }
  m_config.load.batch = 1;
  m_config.load.seq_len = 2048;
  m_config.load.run = sim::run_mode::forward;
  m_config.hardware = builtinHardware();
  // The H100 calibrated on the committed measurements, else its datasheet file, else the
  // built-in datasheet numbers.
  for (const QString& name : {QStringLiteral("h100-sxm-calibrated"), QStringLiteral("h100-sxm")}) {
    const QString h100 = resolveConfig(name, QStringLiteral("hardware"));
    try {
      if (QFile::exists(h100)) {
        m_config.hardware = sim::load_hardware(h100.toStdString());
        break;
      }
    } catch (const modsim::error&) {
      // try the next; the hardware editor shows the file's error when chosen
    }
  }
  m_config.load.type = sim::default_dtype(m_config.hardware);
  m_draft = m_config;
  markSaved();
  m_notesRouting = notesOf(m_config.model, routingOf(m_config.model)).routing;
  scheduleFromModel(m_config.model);
  m_schedule->setSeqLen(m_config.load.seq_len);
  m_schedule->setWorkload(m_config.load.run == sim::run_mode::decode, m_config.load.batch);

  connect(m_schedule, &ScheduleModel::scheduleEdited, this, &ExplorerSession::applyScheduleToDraft);
  connect(m_schedule, &ScheduleModel::editRejected, this, [this](const QString& message, bool reverted) {
    const ErrorParts parts = splitError(message);
    if (reverted)
      emit editRefused(parts.key, parts.reason);
    else
      emit validationChanged(parts.key, parts.reason);
  });
  connect(m_worker, &ComputeWorker::resultReady, this, &ExplorerSession::onResult);
}

void ExplorerSession::scheduleFromModel(const sim::model_spec& model) {
  std::vector<std::optional<double>> layers;
  for (const sim::layer_plan& l : sim::plan_layers(model))
    layers.push_back(l.routed ? std::optional<double>(l.capacity) : std::nullopt);
  // A routing spec whose schedule routes nothing still has a capacity for the presets.
  m_schedule->setLayers(std::move(layers));
}

void ExplorerSession::applyScheduleToDraft() {
  const auto& caps = m_schedule->layers();
  std::vector<bool> routed;
  std::vector<int> indices;
  bool uniform = true;
  std::optional<double> first;
  for (std::size_t i = 0; i < caps.size(); ++i) {
    routed.push_back(caps[i].has_value());
    if (!caps[i]) continue;
    indices.push_back(static_cast<int>(i));
    if (!first)
      first = caps[i];
    else if (*caps[i] != *first)
      uniform = false;
  }
  sim::model_spec& m = m_draft.model;
  const bool integrated = m.moe && m.moe->variant == sim::mode_variant::integrated;
  if (integrated && !uniform) {
    // Integrated MoDE has one count of no-op experts, so one capacity, for every routed layer:
    // a layer of its own capacity is refused, and the table shows the configuration's again.
    const sim::moe_spec& mo = *m.moe;
    emit editRefused(QStringLiteral("routing.layer_capacities"),
                     tr("integrated MoDE has one capacity for every routed layer: %1 no-op experts beside %2 "
                        "(capacity %3) serve them all; change c for every layer, or choose the staged variant for "
                        "per-layer capacities")
                         .arg(mo.noop_experts)
                         .arg(mo.experts)
                         .arg(double(mo.experts) / double(mo.experts + mo.noop_experts), 0, 'g', 3));
    QMetaObject::invokeMethod(
        this, [this] { scheduleFromModel(m_config.model); }, Qt::QueuedConnection);
    return;
  }
  if (!first) {
    m.routing.reset();
  } else {
    // Integrated: the capacity is the share of tokens that reach a real expert, E/(E+N); N
    // follows a capacity it does not already give (to the editor's four decimals).
    if (integrated) {
      sim::moe_spec& mo = *m.moe;
      if (std::abs(double(mo.experts) / double(mo.experts + mo.noop_experts) - *first) > 5e-5)
        mo.noop_experts = sim::noop_experts_for(mo.experts, *first);
    }
    sim::routing_spec r = m.routing.value_or(sim::routing_spec{});
    r.capacity = *first;
    const std::string preset = sim::schedule_preset(routed);
    if (uniform && !preset.empty()) {
      r.layer_capacities.clear();
      r.sched = sim::parse_schedule(preset, m.n_layers, "", "routing.schedule");
    } else {
      r.layer_capacities = caps;
      r.sched = sim::schedule{sim::schedule_kind::list, 0, indices};
    }
    m.routing = r;
  }
  commitDraft();
}

// The FLOP, byte and parameter counts are exact 64-bit integers: a workload whose counts do
// not fit is refused at the field that makes it so, with the product that overflows.
void ExplorerSession::checkCounts(const ExplorerConfig& c, const QString& lastWorkloadKey) {
  try {
    (void)sim::evaluate_flops(c.model, c.load);
  } catch (const modsim::error&) {
    const double tokens = double(c.load.batch) * double(c.load.seq_len);
    throw input_error("", lastWorkloadKey.isEmpty() ? "batch" : lastWorkloadKey.toStdString(),
                      QStringLiteral("batch × sequence = %L1 × %L2 = %3 tokens: a FLOP or byte count of this step "
                                     "does not fit in 64 bits")
                          .arg(c.load.batch)
                          .arg(c.load.seq_len)
                          .arg(tokens, 0, 'g', 3)
                          .toStdString());
  }
}

bool ExplorerSession::commitDraft() {
  if (m_draft.baselineOrigin == ExplorerConfig::BaselineOrigin::DesignSpace) {
    // The kept baseline follows the model's dimensions; its MoE (or dense MLP) and its name stay.
    const std::string name = m_draft.baseline ? m_draft.baseline->name : std::string();
    sim::model_spec kept = sim::dense_baseline(m_draft.model);
    kept.moe = m_draft.keptBaselineMoe;
    kept.name = name;
    m_draft.baseline = std::move(kept);
  }
  try {
    validateEditedModel(m_draft.model);
    if (m_draft.load.batch < 1) throw input_error("", "batch", "must be >= 1");
    if (m_draft.load.seq_len < 1) throw input_error("", "seq_len", "must be >= 1");
    checkCounts(m_draft, m_lastWorkloadKey);
  } catch (const modsim::error& e) {
    const ErrorParts parts = splitError(qs(e.what()));
    emit validationChanged(parts.key.isEmpty() ? QStringLiteral("model") : parts.key, parts.reason);
    return false;
  }
  emit validationChanged({}, {});
  m_config = m_draft;
  m_modified = sim::model_to_json(m_config.model) != m_savedJson;
  m_schedule->setSeqLen(m_config.load.seq_len);
  m_schedule->setWorkload(m_config.load.run == sim::run_mode::decode, m_config.load.batch);
  emit configChanged();
  m_worker->request(m_config);
  // Every figure shown is now of an earlier configuration: the hidden tabs say so at once, the
  // visible one when its figures take longer than an edit should.
  m_currentParts = 0;
  markPending(m_visible);
  m_pendingTimer->start();
  return true;
}

void ExplorerSession::markPending(ResultParts except) {
  m_results.removeAll(nullptr);
  for (const QPointer<ResultModel>& m : m_results)
    if (!(m->parts() & (except | m_currentParts)) && !m->isPending()) m->setPending();
}

void ExplorerSession::setVisibleParts(ResultParts parts) {
  m_visible = parts;
  m_worker->setVisibleParts(parts);
  // A tab shown before its figures are computed says so (the worker computes them next).
  markPending(~parts);
}

void ExplorerSession::recompute() { m_worker->computeNow(m_config); }

void ExplorerSession::onResult(const ComputeResultPtr& result) {
  m_lastResult = result;
  m_currentParts |= result->updated;
  if (m_currentParts == kAllParts) m_pendingTimer->stop();
  if (result->updated & m_summary->parts()) m_summary->setResult(result);
  m_results.removeAll(nullptr);
  for (const QPointer<ResultModel>& m : m_results)
    if (result->updated & m->parts()) m->setResult(result);
  emit resultApplied(result);
}

void ExplorerSession::addResultModel(ResultModel* model) {
  m_results.append(model);
  if (m_lastResult) model->setResult(m_lastResult);
}

bool ExplorerSession::loadModelFile(const QString& path, QString* error) {
  sim::model_spec m;
  try {
    m = sim::load_model(path.toStdString());
  } catch (const modsim::error& e) {
    if (error) *error = qs(e.what());
    return false;
  }
  m_modelPath = path;
  // The baseline follows the model opened: one chosen for the previous model (or kept from its
  // design space) is dropped, and the notice says so.
  m_baselineNotice.clear();
  if (m_draft.baselineOrigin != ExplorerConfig::BaselineOrigin::Model) {
    const QString before = qs(analysis::baseline_label(analysisConfig(m_config)));
    const QString now = qs(analysis::baseline_label(
        analysis::configuration{m, m_config.load, m_config.hardware, std::nullopt, m_config.attention}));
    m_baselineNotice = tr("Baseline: %1, the model opened with its routing removed; %2, the baseline of %3, was "
                          "dropped")
                           .arg(now, before, qs(m_config.model.name));
    m_draft.baseline.reset();
    m_draft.baselinePath.clear();
    m_draft.keptBaselineMoe.reset();
    m_draft.baselineOrigin = ExplorerConfig::BaselineOrigin::Model;
  }
  setModel(m);
  markSaved();
  m_notesRouting = notesOf(m, routingOf(m)).routing;
  emit configChanged();
  return true;
}

bool ExplorerSession::saveModelFile(const QString& path, QString* error) {
  // Notes written for another routing than the model's now are saved marked as such.
  sim::model_spec model = m_config.model;
  model.notes = markedNotes(notesOf(model, m_notesRouting), model);
  try {
    sim::save_model(model, path.toStdString());
  } catch (const modsim::error& e) {
    if (error) *error = qs(e.what());
    return false;
  }
  m_modelPath = path;
  m_config.model.notes = model.notes;
  m_draft.model.notes = model.notes;
  markSaved();
  emit configChanged();
  return true;
}

QString ExplorerSession::notesStatus() const {
  const Notes notes = notesOf(m_config.model, m_notesRouting);
  if (notes.text.empty()) return {};
  const std::string now = routingOf(m_config.model);
  if (now == notes.routing) return {};
  return tr("The model's notes describe %1; the routing is now %2 (saving marks the notes so)")
      .arg(qs(notes.routing), qs(now));
}

void ExplorerSession::markSaved() {
  m_savedJson = sim::model_to_json(m_config.model);
  m_modified = false;
}

bool ExplorerSession::loadHardwareFile(const QString& path, QString* error) {
  try {
    sim::hardware_spec hw = sim::load_hardware(path.toStdString());
    const sim::cost_model check(hw);  // a malformed calibration block throws here
    const bool kindChanged = hw.kind != m_config.hardware.kind;
    m_draft.hardware = std::move(hw);
    if (kindChanged) {
      const sim::dtype before = m_draft.load.type;
      m_draft.load.type = sim::default_dtype(m_draft.hardware);
      if (before != m_draft.load.type)
        m_dtypeNotice = tr("dtype %1 → %2: the default on %3 hardware")
                            .arg(qs(sim::to_string(before)), qs(sim::to_string(m_draft.load.type)),
                                 qs(sim::to_string(m_draft.hardware.kind)));
    }
  } catch (const modsim::error& e) {
    if (error) *error = qs(e.what());
    return false;
  }
  // When the model draft is invalid the new hardware waits in the draft and applies with the
  // next valid edit; the file itself was fine.
  commitDraft();
  return true;
}

void ExplorerSession::setMeasurementsFile(const QString& path) {
  m_draft.measurementsPath = path;
  commitDraft();
}

void ExplorerSession::setModel(const sim::model_spec& model) {
  m_draft.model = model;
  if (m_draft.model.d_head == 0 && m_draft.model.n_heads > 0)
    m_draft.model.d_head = m_draft.model.d_model / m_draft.model.n_heads;
  // d_head follows d_model / n_heads while editing unless the file set it otherwise.
  m_headDerived = m_draft.model.d_head * m_draft.model.n_heads == m_draft.model.d_model;
  scheduleFromModel(m_draft.model);
  commitDraft();
}

void ExplorerSession::setDimension(const QString& key, int value) {
  if (value < 1) {
    // Refused before the draft changes: a model of 0 layers or heads has no schedule to keep.
    emit validationChanged(key, tr("must be >= 1, got %1; the last valid value is still used").arg(value));
    return;
  }
  sim::model_spec& m = m_draft.model;
  if (key == QStringLiteral("d_model"))
    m.d_model = value;
  else if (key == QStringLiteral("n_heads"))
    m.n_heads = value;
  else if (key == QStringLiteral("n_kv_heads"))
    m.n_kv_heads = value;
  else if (key == QStringLiteral("d_ff"))
    m.d_ff = value;
  else if (key == QStringLiteral("vocab_size"))
    m.vocab_size = value;
  else if (key == QStringLiteral("n_layers")) {
    m.n_layers = value;
    if (m.routing) {
      sim::routing_spec& r = *m.routing;
      if (!r.layer_capacities.empty()) r.layer_capacities.resize(static_cast<std::size_t>(value));
      std::erase_if(r.sched.layers, [value](int l) { return l >= value; });
      if (r.sched.kind == sim::schedule_kind::every_nth && r.sched.n > value)
        r.sched = {sim::schedule_kind::every_other, 0, {}};
    }
    scheduleFromModel(m);
  } else {
    return;
  }
  if (m_headDerived && m.n_heads > 0 && m.d_model % m.n_heads == 0) m.d_head = m.d_model / m.n_heads;
  commitDraft();
}

void ExplorerSession::setMlp(sim::mlp_kind mlp) {
  m_draft.model.mlp = mlp;
  commitDraft();
}

void ExplorerSession::setSeqLen(qint64 seqLen) {
  m_draft.load.seq_len = seqLen;
  m_lastWorkloadKey = QStringLiteral("seq_len");
  commitDraft();
}

void ExplorerSession::setBatch(qint64 batch) {
  m_draft.load.batch = batch;
  m_lastWorkloadKey = QStringLiteral("batch");
  commitDraft();
}

void ExplorerSession::setDtype(sim::dtype type) {
  m_draft.load.type = type;
  m_dtypeNotice.clear();
  commitDraft();
}

void ExplorerSession::setBaseline(const QString& path) {
  if (path.isEmpty()) {
    m_draft.baseline.reset();
    m_draft.baselinePath.clear();
    m_draft.baselineOrigin = ExplorerConfig::BaselineOrigin::Model;
  } else {
    try {
      m_draft.baseline = sim::load_model(path.toStdString());
      m_draft.baselinePath = path;
      m_draft.baselineOrigin = ExplorerConfig::BaselineOrigin::Chosen;
    } catch (const modsim::error& e) {
      emit validationChanged(QStringLiteral("baseline"), splitError(qs(e.what())).reason);
      return;
    }
  }
  m_draft.keptBaselineMoe.reset();
  m_baselineNotice.clear();
  commitDraft();
}

void ExplorerSession::adoptDesignPoint(const sim::model_spec& point) {
  sim::model_spec adopted = point;
  adopted.name = m_config.model.name;
  adopted.notes = m_config.model.notes;
  // The design space compared every point with the configuration's baseline; when the point's
  // own baseline would be another one (an MoDE point of a model without MoE: the MoE without
  // MoD routing instead of the dense MLP), that baseline is kept, so that the point reads after
  // adopting the ratio it read in the design space.
  if (m_config.baselineOrigin == ExplorerConfig::BaselineOrigin::Model) {
    const analysis::configuration c = analysisConfig(m_config);
    const sim::model_spec current = analysis::baseline_of(c);
    const sim::model_spec own = sim::dense_baseline(adopted);
    const auto moeText = [](const std::optional<sim::moe_spec>& m) {
      return m ? fmt::format("{} {} {} {}", m->experts, m->top_k, m->capacity_factor, m->noop_experts) : std::string();
    };
    if (moeText(current.moe) != moeText(own.moe)) {
      sim::model_spec kept = current;
      kept.name = analysis::baseline_label(c);
      m_draft.baseline = std::move(kept);
      m_draft.baselinePath.clear();
      m_draft.keptBaselineMoe = current.moe;
      m_draft.baselineOrigin = ExplorerConfig::BaselineOrigin::DesignSpace;
    }
  }
  setModel(adopted);
}

void ExplorerSession::setAttention(std::optional<attention_impl> attention) {
  m_draft.attention = attention;
  commitDraft();
}

void ExplorerSession::setDecodeStrategy(const std::string& name) {
  if (m_draft.decodeStrategy == name) return;
  m_draft.decodeStrategy = name;
  commitDraft();
}

void ExplorerSession::setMode(sim::run_mode mode) {
  m_draft.load.run = mode;
  commitDraft();
}

void ExplorerSession::setVariant(const QString& variant, int experts, int topK, int noopExperts,
                                 double capacityFactor) {
  sim::model_spec& m = m_draft.model;
  if (variant == QStringLiteral("none")) {
    m.moe.reset();
  } else {
    sim::moe_spec mode;
    mode.variant = variant == QStringLiteral("moe")      ? sim::mode_variant::moe
                   : variant == QStringLiteral("staged") ? sim::mode_variant::staged
                                                         : sim::mode_variant::integrated;
    mode.experts = experts;
    mode.top_k = topK;
    mode.noop_experts = 0;
    if (mode.variant == sim::mode_variant::integrated) {
      if (noopExperts < 1) {
        emit validationChanged(QStringLiteral("mode.noop_experts"),
                               tr("must be >= 1, got %1: integrated MoDE skips the MLP for the tokens routed to a "
                                  "no-op expert (E real and N no-op experts compute E/(E+N) of them); the last valid "
                                  "value is still used")
                                   .arg(noopExperts));
        return;
      }
      mode.noop_experts = noopExperts;
    }
    mode.capacity_factor = capacityFactor;
    m.moe = mode;
  }
  commitDraft();
}

void ExplorerSession::setSweepEnabled(bool enabled) {
  m_draft.sweepEnabled = enabled;
  commitDraft();
}

void ExplorerSession::setGpus(int gpus) {
  if (gpus < 1) {
    emit validationChanged(QStringLiteral("gpus"), tr("must be >= 1, got %1").arg(gpus));
    return;
  }
  m_draft.gpus = gpus;
  commitDraft();
}

void ExplorerSession::setFlopBudget(std::optional<double> flops) {
  if (flops && !(std::isfinite(*flops) && *flops > 0)) {
    emit validationChanged(QStringLiteral("flop_budget"),
                           tr("must be a number of FLOPs > 0 (e.g. 6e18), got %1").arg(*flops));
    return;
  }
  m_draft.flopBudget = flops;
  commitDraft();
}

void ExplorerSession::setServingEnabled(bool enabled) {
  m_draft.servingEnabled = enabled;
  commitDraft();
}

}  // namespace modsim::gui
