#pragma once
// Small file and text helpers shared by every writer in modsim (measurements, sweeps,
// reports, traces, calibrated hardware files).
#include <boost/json/fwd.hpp>
#include <cstddef>
#include <string>
#include <string_view>

namespace modsim::sim {

// Writes `text` to `path` through a temporary file in the same folder renamed over it, so a
// failure (or a kill) never leaves a truncated file and never loses the previous one. Throws
// modsim::error(runtime) naming the file.
void write_file_atomically(const std::string& path, std::string_view text);

// One CSV field (RFC 4180): quoted when it holds a comma, a quote or a newline.
std::string csv_field(std::string_view s);

// How pretty_json lays out small values.
struct pretty_options {
  std::size_t flat_object_max = 4;  // objects of at most this many scalar members on one line
  bool flat_scalar_arrays = false;  // arrays of scalars on one line ([0.5, null, 0.25])
};

// JSON for people to read and diff (the calibrated hardware files, model files): by default
// an object of at most four scalar members (strings of at most 40 characters) on one line
// ({ "a": 1, "b": 2 }), other objects and all arrays one member per line, indented by two
// spaces per level; a double as the shortest text that reads back to it, with ".0" when it
// would read as an integer. No trailing newline.
std::string pretty_json(const boost::json::value& v, const pretty_options& options = {});

}  // namespace modsim::sim
