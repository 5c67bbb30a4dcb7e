// libFuzzer target: the strict JSON reader of model and hardware files (sim/model/config.cpp,
// sim/common/json_reader.cpp, the calibration block of sim/cost/cost.cpp). Any input must either parse or
// be rejected with modsim::error(bad_input): never a crash, a hang, another exception or a
// sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/model/config.hpp"
#include "sim/cost/cost.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)modsim::sim::parse_model(text, "fuzz.json");
  } catch (const modsim::error& e) {
    if (e.kind() != modsim::error_kind::bad_input) __builtin_trap();
  }
  try {
    const modsim::sim::hardware_spec hw = modsim::sim::parse_hardware(text, "fuzz.json");
    const modsim::sim::cost_model model(hw);  // reads the calibration block, if any
    (void)model.label();
  } catch (const modsim::error& e) {
    if (e.kind() != modsim::error_kind::bad_input) __builtin_trap();
  }
  return 0;
}
