#pragma once
// The explorer's input: everything one computation needs, as plain values. The session
// (explorer_session.hpp) owns the current one and hands copies to the worker.
#include <QString>
#include <QStringList>
#include <optional>
#include <string>
#include <vector>

#include "sim/model/spec.hpp"

namespace modsim::gui {

// The three things a user can ask about (DESIGN: training step, prefill, decode/serving), as
// the explorer names them: "Training step", "Prefill", "Decode / serving".
QString displayName(sim::run_mode mode);

struct ExplorerConfig {
  sim::model_spec model;
  sim::workload load;  // batch, seq_len, run mode, dtype
  sim::hardware_spec hardware;
  // The baseline every ratio compares with; empty = the model without routing
  // (analysis::baseline_of), which follows every edit and every model opened.
  std::optional<sim::model_spec> baseline;
  QString baselinePath;  // the baseline's file (empty with no baseline, or one kept from the design space)
  // Why `baseline` is set: the user chose it (the Baseline box, --baseline), or a design point
  // was adopted and the design space's baseline was kept, so that the point reads the ratio it
  // read there. Opening another model returns to Model (the new model's own baseline).
  enum class BaselineOrigin { Model, Chosen, DesignSpace };
  BaselineOrigin baselineOrigin = BaselineOrigin::Model;
  // With DesignSpace: the MoE of the kept baseline (empty: a dense MLP); the rest of it follows
  // the model's dimensions as they are edited.
  std::optional<sim::moe_spec> keptBaselineMoe;
  QString measurementsPath;  // measurements CSV for the Validation tab; empty = none chosen
  bool sweepEnabled = true;  // the design-space sweep (the benchmark and tests may switch it off)
  bool servingEnabled = true;
  // The Parallelism tab: every split of this many GPUs (GPU hardware with an interconnect); 0 or
  // 1 = none.
  int gpus = 8;
  // The Training tab's budget in model FLOPs (analysis::training_request); empty = none. The
  // paper's isoFLOP budget by default.
  std::optional<double> flopBudget = 6e18;
  // How attention runs (modsim --attention): empty = the hardware's default (fused on a GPU,
  // unfused on a CPU; analysis::configuration::attention).
  std::optional<attention_impl> attention;
  // The decode strategy every decode figure shows (the headline, the Design space, the sampling
  // map's strategy): "sync", "pad" or "pad+graphs" (analysis::decode_strategy::name), the user's
  // choice in the sampling map; empty = the fastest for the configuration.
  std::string decodeStrategy;
};

// The folder holding models/, hardware/, workloads/: $MODSIM_CONFIGS, else the source tree's
// configs/ (compiled in), else configs/ next to or above the executable.
QString configsDir();

// "mod-220m" -> configs/models/mod-220m.json when that exists; a path is returned as is.
QString resolveConfig(const QString& nameOrPath, const QString& kind);

// Hardware files offered in the editor: configs/hardware/*.json (shipped and calibrated),
// then `extra` (files the user added), without duplicates; absolute paths.
QStringList hardwareFiles(const QStringList& extra = {});

// The key path of a modsim::error message ("FILE: KEY: reason" or "KEY: reason") and its
// reason; key is empty when the message names none.
struct ErrorParts {
  QString key;
  QString reason;
};
ErrorParts splitError(const QString& message, const QString& file = {});

// A model's routing in one line, for people (export captions, the notes' mark): "MoD c=0.125
// every_other", "MoD c=0.125×7 0.5×1 custom", "MoDE integrated c=0.125 every_other E=8 top-1 +56
// no-op", "dense".
QString routingText(const sim::model_spec& model);

// Checks a model edited in the explorer (d_model divisible by n_heads, then
// sim::validate_model); throws modsim::error(bad_input) with "KEY: reason".
void validateEditedModel(const sim::model_spec& model);

}  // namespace modsim::gui
