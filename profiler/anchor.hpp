#pragma once
// The machine's speed, measured beside every point: a fixed small block (the anchor) timed
// just before and just after the point on the same backend. A shared machine slows down for
// seconds at a time (a neighbour on the same cores, a lower clock); every sample of the point
// that falls in such a spell is slow together, so the point's own samples cannot show it, but
// the anchor around it can. Each row records the anchor's median seconds (measurements column
// anchor_s), and sim::hold_machine_speed rescales rows to one speed for calibrate and validate.
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.hpp"

namespace modsim::profiler {

// The anchor's shape: one dense block (fp32, GELU MLP) of B 1, S 64, d_model 256, 4 heads of
// 64, d_ff 1024, about 0.11 GFLOP: a few milliseconds on one CPU core, a few dozen kernels on
// a GPU, so that timing it around a point costs a small share of the point.
kernels::block_shape anchor_shape();
// "block_dense fp32 B1 S64 d256 h4 ff1024", for the metadata.
std::string anchor_text();

class anchor {
 public:
  // Makes the anchor's workspace on `be` (once; the same weights for every run).
  explicit anchor(kernels::backend& be, std::uint64_t seed = 1);
  // Times the anchor `repeats` times warm (after one untimed run) and returns the samples.
  std::vector<double> sample(int repeats = 3);
  double setup_s() const { return setup_s_; }

 private:
  kernels::backend& be_;
  std::unique_ptr<kernels::workspace> ws_;
  double setup_s_ = 0;
};

// The anchor of a point from the samples taken before and after it: their median; 0 for none.
double anchor_of(std::vector<double> samples);

}  // namespace modsim::profiler
