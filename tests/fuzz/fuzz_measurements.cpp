// libFuzzer target: the measurements CSV reader (sim/cost/measurements_parse.cpp) and the step every
// reader of it takes next (sim::with_costs, the FLOP model of each row). Any file must read or be
// rejected with modsim::error(bad_input).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "sim/cost/measurements.hpp"
#include "sim/cost/calibrate.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The reader takes a path: the input goes to a file of this process's own.
  static const std::string path = "/tmp/modsim-fuzz-measurements-" + std::to_string(::getpid()) + ".csv";
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    if (size > 0) std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    for (const modsim::sim::measured_sample& p : modsim::sim::read_measured_samples(path)) {
      try {
        (void)modsim::sim::with_costs(p);
      } catch (const modsim::error& e) {
        if (e.kind() != modsim::error_kind::bad_input) __builtin_trap();
      }
    }
  } catch (const modsim::error& e) {
    if (e.kind() != modsim::error_kind::bad_input) __builtin_trap();
  }
  return 0;
}
