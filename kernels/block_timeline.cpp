#include "kernels/block_timeline.hpp"

#include <algorithm>

namespace modsim::kernels {

double block_timeline::fold(std::vector<backend::op_time>& ops) const {
  // Intervals are summed per op in integer nanoseconds, so the ops partition the block's
  // time exactly; only the conversion to seconds rounds.
  std::vector<std::int64_t> ns;
  ops.clear();
  std::int64_t previous = 0;
  for (const auto& mark : m_marks) {
    // Named copies: a lambda cannot capture a structured binding before clang 16.
    const auto o = mark.first;
    const std::int64_t at = mark.second;
    auto it = std::find_if(ops.begin(), ops.end(), [&](const backend::op_time& t) { return t.o == o; });
    if (it == ops.end()) {
      ops.push_back({o, 0.0});
      ns.push_back(0);
      it = ops.end() - 1;
    }
    ns[static_cast<std::size_t>(it - ops.begin())] += at - previous;
    previous = at;
  }
  double total = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    ops[i].seconds = static_cast<double>(ns[i]) * 1e-9;
    total += ops[i].seconds;
  }
  return total;
}

}  // namespace modsim::kernels
