#pragma once
// The calibrated hardware file: a copy of a hardware file with the fitted `calibration`
// block, written for people to read and diff.
#include <string>

#include "sim/cost/cost.hpp"

namespace modsim::sim {

// Writes a copy of the hardware file `hardware_path` with `calibration` set to `c` (named
// `name`, or when that is empty the stem of `out_path` — cpu-mine.json → "cpu-mine" — so that
// every output names the calibration the user made; a note says where the block's numbers
// come from) to
// `out_path`, through a temporary file in the same folder renamed over it: a failure never
// leaves a truncated file (sim/common/io's write_file_atomically); the JSON is laid out by
// sim/common/io's pretty_json. Throws modsim::error (bad_input: unreadable input or a missing
// folder; runtime: the write failed).
void write_calibrated_hardware(const std::string& hardware_path, const calibration& c, const std::string& out_path,
                               const std::string& name = {});

}  // namespace modsim::sim
