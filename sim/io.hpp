#pragma once
// Small file and text helpers shared by every writer in modsim (measurements, sweeps,
// reports, traces, calibrated hardware files).
#include <string>
#include <string_view>

namespace modsim::sim {

// Writes `text` to `path` through a temporary file in the same folder renamed over it, so a
// failure (or a kill) never leaves a truncated file and never loses the previous one. Throws
// modsim::error(runtime) naming the file.
void write_file_atomically(const std::string& path, std::string_view text);

// One CSV field (RFC 4180): quoted when it holds a comma, a quote or a newline.
std::string csv_field(std::string_view s);

}  // namespace modsim::sim
