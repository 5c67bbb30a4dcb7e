// The memory model's training activations (sim/model/memory.hpp activations_kept) against what
// the CPU training kernels keep (kernels/train.hpp saved_activations::bytes) for the same layer:
// two independent writings of one count, one by the code that keeps the tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/init.hpp"
#include "kernels/train.hpp"
#include "sim/model/memory.hpp"

namespace {

using modsim::attention_impl;
using modsim::mlp_kind;
using modsim::recompute;
namespace kernels = modsim::kernels;
namespace sim = modsim::sim;

struct layer_case {
  const char* name;
  std::int64_t heads, kv_heads;
  mlp_kind mlp;
  bool routed;
  double capacity;
};

std::int64_t kernel_bytes(const kernels::block_shape& s, bool routed, recompute mode) {
  kernels::train::cpu_trainer trainer(1);
  kernels::train::saved_activations saved;
  const kernels::train::layer_params p = kernels::train::random_params(s, routed, 7);
  std::vector<float> x(static_cast<std::size_t>(s.tokens() * s.d_model));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * double(i)));
  std::vector<float> out(x.size());
  trainer.forward(p, x, out, saved, mode);
  return saved.bytes();
}

double model_bytes(const kernels::block_shape& s, bool routed, recompute mode) {
  sim::model_spec m;
  m.d_model = static_cast<int>(s.d_model);
  m.n_layers = 1;
  m.n_heads = static_cast<int>(s.n_heads);
  m.n_kv_heads = static_cast<int>(s.n_kv_heads);
  m.d_head = static_cast<int>(s.d_head);
  m.d_ff = static_cast<int>(s.d_ff);
  m.mlp = s.mlp;
  sim::layer_routing l;
  l.routed = l.mod_routed = routed;
  l.capacity = routed ? s.capacity : 1.0;
  sim::workload w;
  w.run = sim::run_mode::train;
  w.batch = s.batch;
  w.seq_len = s.seq_len;
  w.type = modsim::dtype::fp32;
  w.recompute = mode;
  const sim::kept_activations k = sim::activations_kept(m, l, w, attention_impl::unfused);
  if (mode == recompute::full) return k.input;
  return mode == recompute::selective ? k.total() - k.scores : k.total();
}

}  // namespace

TEST(TrainMemory, TheModelKeepsWhatTheKernelsKeepForEveryLayerAndRecomputation) {
  const layer_case cases[] = {
      {"dense MHA gelu", 4, 4, mlp_kind::gelu, false, 1.0},
      {"dense GQA swiglu", 4, 2, mlp_kind::swiglu, false, 1.0},
      {"MoD MHA gelu, c = 1/4", 4, 4, mlp_kind::gelu, true, 0.25},
      {"MoD GQA swiglu, c = 0.3 (k rounded up)", 4, 1, mlp_kind::swiglu, true, 0.3},
  };
  for (const layer_case& c : cases)
    for (const recompute mode : {recompute::none, recompute::selective, recompute::full}) {
      kernels::block_shape s;
      s.batch = 2;
      s.seq_len = 10;
      s.d_model = 16;
      s.n_heads = c.heads;
      s.n_kv_heads = c.kv_heads;
      s.d_head = 4;
      s.d_ff = 24;
      s.mlp = c.mlp;
      s.capacity = c.capacity;
      SCOPED_TRACE(std::string(c.name) + ", recompute " + modsim::to_string(mode));
      EXPECT_EQ(model_bytes(s, c.routed, mode), double(kernel_bytes(s, c.routed, mode)));
    }
}
