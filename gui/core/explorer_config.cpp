#include "gui/core/explorer_config.hpp"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>

#include <fmt/format.h>

#include <map>

#include "analysis/analysis.hpp"
#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/sweep.hpp"
#include "core/error.hpp"

namespace modsim::gui {

QString displayName(sim::run_mode mode) {
  switch (mode) {
    case sim::run_mode::train:
      return QStringLiteral("Training step");
    case sim::run_mode::forward:
      return QStringLiteral("Prefill");
    case sim::run_mode::decode:
      return QStringLiteral("Decode / serving");
  }
  return {};
}

QString configsDir() {
  const std::string program = QCoreApplication::instance() ? QCoreApplication::applicationDirPath().toStdString() : "";
  return QString::fromStdString(sim::configs_root(program).string());
}

QString resolveConfig(const QString& nameOrPath, const QString& kind) {
  const std::string program = QCoreApplication::instance() ? QCoreApplication::applicationDirPath().toStdString() : "";
  try {
    return QString::fromStdString(sim::resolve_config(nameOrPath.toStdString(), kind.toStdString().c_str(), program));
  } catch (const modsim::error&) {
    return nameOrPath;  // opening it shows the file's error
  }
}

QStringList hardwareFiles(const QStringList& extra) {
  QStringList out;
  QDir dir(configsDir() + QStringLiteral("/hardware"));
  const QFileInfoList files = dir.entryInfoList({QStringLiteral("*.json")}, QDir::Files | QDir::Readable, QDir::Name);
  for (const QFileInfo& f : files) out << f.absoluteFilePath();
  for (const QString& e : extra) {
    const QString abs = QFileInfo(e).absoluteFilePath();
    if (!out.contains(abs)) out << abs;
  }
  return out;
}

ErrorParts splitError(const QString& message, const QString& file) {
  QString rest = message;
  if (!file.isEmpty() && rest.startsWith(file + QStringLiteral(": "))) rest = rest.mid(file.size() + 2);
  const qsizetype colon = rest.indexOf(QStringLiteral(": "));
  if (colon > 0) {
    const QString key = rest.left(colon);
    // A key path is an identifier with dots and brackets, never a sentence.
    static const QRegularExpression keyPattern(QStringLiteral("^[A-Za-z_][A-Za-z0-9_.\\[\\]-]*$"));
    if (keyPattern.match(key).hasMatch()) return {key, rest.mid(colon + 2)};
  }
  return {QString(), rest};
}

QString routingText(const sim::model_spec& m) {
  const sim::sweep_variant v = sim::variant_of(m);
  std::string out = sim::display_name(v);
  if (m.routing && v != sim::sweep_variant::moe) {
    std::map<double, int> layers;  // routed layers per capacity
    for (const sim::layer_plan& l : sim::plan_layers(m))
      if (l.routed) ++layers[l.capacity];
    if (layers.size() > 1) {
      out += " c=";
      for (auto it = layers.begin(); it != layers.end(); ++it)
        out += fmt::format("{}{:g}×{}", it == layers.begin() ? "" : " ", it->first, it->second);
    } else {
      out += fmt::format(" c={:g}", analysis::capacity_of(m));
    }
    out += " " + analysis::schedule_of(m);
  }
  if (m.moe) {
    out += fmt::format(" E={} top-{}", m.moe->experts, m.moe->top_k);
    if (m.moe->noop_experts > 0) out += fmt::format(" +{} no-op", m.moe->noop_experts);
  }
  return QString::fromStdString(out);
}

void validateEditedModel(const sim::model_spec& m) {
  if (m.n_heads < 1) throw input_error("", "n_heads", "must be >= 1");
  if (m.d_model % m.n_heads != 0)
    throw input_error(
        "", "n_heads",
        "d_model " + std::to_string(m.d_model) + " is not divisible by n_heads " + std::to_string(m.n_heads));
  if (m.n_kv_heads < 1) throw input_error("", "n_kv_heads", "must be >= 1");
  if (m.routing) {
    for (std::size_t i = 0; i < m.routing->layer_capacities.size(); ++i) {
      const auto& c = m.routing->layer_capacities[i];
      if (c && !(*c > 0 && *c <= 1))
        throw input_error("", "routing.layer_capacities[" + std::to_string(i) + "]",
                          "capacity must be in (0, 1], got " + std::to_string(*c));
    }
  }
  sim::validate_model(m, "");
}

}  // namespace modsim::gui
