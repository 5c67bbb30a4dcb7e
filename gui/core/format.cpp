#include "gui/core/format.hpp"

#include <cmath>

namespace modsim::gui {

QString formatSeconds(double s) {
  const double a = std::abs(s);
  if (a == 0) return QStringLiteral("0 s");
  if (a < 1e-6) return QStringLiteral("%1 ns").arg(s * 1e9, 0, 'f', 1);
  if (a < 1e-3) return QStringLiteral("%1 µs").arg(s * 1e6, 0, 'f', a < 1e-5 ? 2 : 1);
  if (a < 1) return QStringLiteral("%1 ms").arg(s * 1e3, 0, 'f', a < 1e-2 ? 3 : 2);
  return QStringLiteral("%1 s").arg(s, 0, 'f', 3);
}

static QString scaled(double v, const char* unit) {
  static const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  double a = std::abs(v);
  while (a >= 1000 && p < 6) {
    a /= 1000;
    v /= 1000;
    ++p;
  }
  return QStringLiteral("%1 %2%3")
      .arg(v, 0, 'f',
           a < 10    ? 2
           : a < 100 ? 1
                     : 0)
      .arg(QLatin1String(prefixes[p]))
      .arg(QLatin1String(unit));
}

QString formatFlops(double flops) { return scaled(flops, "FLOP"); }
QString formatBytes(double bytes) { return scaled(bytes, "B"); }
QString formatCount(double value) { return scaled(value, "").trimmed(); }

QString formatRatio(double value, double reference) {
  if (reference == 0) return QStringLiteral("—");
  return QStringLiteral("%1×").arg(value / reference, 0, 'f', 3);
}

}  // namespace modsim::gui
