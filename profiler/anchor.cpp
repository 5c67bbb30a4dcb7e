#include "profiler/anchor.hpp"

#include <chrono>

#include "profiler/measure.hpp"

namespace modsim::profiler {

kernels::block_shape anchor_shape() {
  kernels::block_shape s;
  s.batch = 1;
  s.seq_len = 64;
  s.d_model = 256;
  s.n_heads = 4;
  s.n_kv_heads = 4;
  s.d_head = 64;
  s.d_ff = 1024;
  s.mlp = kernels::mlp_kind::gelu;
  s.capacity = 1.0;
  return s;
}

std::string anchor_text() { return "block_dense fp32 B1 S64 d256 h4 ff1024"; }

anchor::anchor(kernels::backend& be, std::uint64_t seed) : be_(be) {
  const auto t0 = std::chrono::steady_clock::now();
  kernels::workspace_options o;
  o.seed = seed;
  ws_ = be_.make_workspace(anchor_shape(), modsim::dtype::fp32, o);
  setup_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<double> anchor::sample(int repeats) {
  std::vector<double> out;
  be_.prepare(kernels::op::block_dense, *ws_);
  be_.timed_run(kernels::op::block_dense, *ws_);  // warm: caches and clocks as for the samples
  for (int i = 0; i < repeats; ++i) {
    be_.prepare(kernels::op::block_dense, *ws_);
    out.push_back(be_.timed_run(kernels::op::block_dense, *ws_));
  }
  return out;
}

double anchor_of(std::vector<double> samples) {
  if (samples.empty()) return 0;
  return summarize(std::move(samples)).median_s;
}

}  // namespace modsim::profiler
