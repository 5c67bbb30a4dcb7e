#pragma once
// Numbers for people: seconds, FLOPs, bytes and ratios with their unit.
#include <QString>
#include <cstdint>

namespace modsim::gui {

QString formatSeconds(double seconds);                // "3.21 ms", "45.2 µs", "1.20 s"
QString formatFlops(double flops);                    // "1.23 TFLOP"
QString formatBytes(double bytes);                    // "1.5 GB"
QString formatRatio(double value, double reference);  // "0.62×", "—" when reference is 0
QString formatCount(double value);                    // "1.2 M"

}  // namespace modsim::gui
