#pragma once
// The boundaries of one timed block run (backend::timed_block_run), shared by the backends:
// a backend marks a boundary after each op with its clock's reading, in nanoseconds since the
// boundary before the block; the interval that ends at a mark is that op's. No device types.
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/backend.hpp"

namespace modsim::kernels {

class block_timeline {
 public:
  // Forgets the marks of the previous run (keeps the memory).
  void clear() { m_marks.clear(); }
  // The boundary after op `o`, `ns` nanoseconds after the boundary before the block; marks
  // come in the order the ops ran, with non-decreasing `ns`.
  void mark(op o, std::int64_t ns) { m_marks.emplace_back(o, ns); }
  // Fills `ops` (cleared first) with one entry per op in the order the ops first ran, its
  // seconds the sum of the intervals that end at its marks; returns the sum of the entries
  // in that order, the time from the boundary before the block to the last mark.
  double fold(std::vector<backend::op_time>& ops) const;

 private:
  std::vector<std::pair<op, std::int64_t>> m_marks;
};

}  // namespace modsim::kernels
