// libFuzzer target: the profiler's grid reader (profiler/grid_parse.cpp) and the expansion of what it
// read. Any input must parse and expand, or be rejected with modsim::error(bad_input).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "profiler/grid.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const modsim::profiler::grid g = modsim::profiler::parse_grid(text, "fuzz.json");
    // Expanding a grid of a few values per axis is cheap; a hostile one with huge axes is
    // refused by the reader or capped here so that the fuzzer measures the reader, not memory.
    std::size_t points = 1;
    for (std::size_t n : {g.ops.size(), g.dtypes.size(), g.batch.size(), g.seq_len.size(), g.d_model.size(),
                          g.n_heads.size(), g.n_kv_heads.size(), g.d_ff.size(), g.capacity.size(), g.mlp.size(),
                          g.variants.size(), g.experts.size(), g.noop_experts.size(), g.capacity_factor.size()})
      points *= n == 0 ? 1 : n;
    if (points <= 4096) (void)modsim::profiler::expand(g);
  } catch (const modsim::error& e) {
    if (e.kind() != modsim::error_kind::bad_input) __builtin_trap();
  }
  return 0;
}
