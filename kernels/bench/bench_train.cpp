// modsim-bench-train: one layer's CPU training step (kernels/train.hpp) against this machine's
// sgemm. Prints, per shape and layer (dense, MoD at capacities 1/8 and 1/2) and per activation
// recomputation: forward, backward and AdamW times, the step's achieved GFLOP/s, and the
// activation bytes the forward kept; then OpenBLAS sgemm alone at the shape's MLP up
// projection (T×d·d×d_ff), the rate a matmul-bound step could reach. Step FLOPs are the
// convention of docs/contracts.md for `--mode train`: 3× the forward's matmul FLOPs (the
// router's 2·d per token included; attention the full n×n square), so recomputation's extra
// work shows as a lower rate, not as more FLOPs. MoDE rows (staged at capacity 1/2,
// integrated; 4 experts, one no-op for integrated) are counted as the dense MLP. Median of repeats after a warm-up,
// steady clock. A program that prints figures, not a test.
//   modsim-bench-train [--quick] [--threads N] [--repeats N]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/init.hpp"
#include "kernels/train.hpp"
#include "kernels/bench/timing.hpp"

namespace {

using modsim::kernels::block_shape;
using modsim::kernels::mlp_kind;
using modsim::kernels::train::recompute;
using i64 = std::int64_t;

using modsim::kernels::bench::median;
using modsim::kernels::bench::seconds;

// Forward matmul FLOPs of the block over n tokens per sequence (2·m·n·k per matmul).
double block_flops(const block_shape& s, i64 n) {
  const double m = static_cast<double>(s.batch * n), d = static_cast<double>(s.d_model);
  const double dq = static_cast<double>(s.d_q()), dkv = static_cast<double>(s.d_kv());
  const double f = static_cast<double>(s.d_ff), mlp_mats = s.mlp == mlp_kind::swiglu ? 3.0 : 2.0;
  const double attn = 2.0 * 2.0 * static_cast<double>(s.batch) * static_cast<double>(n * n) * dq;
  return 2.0 * m * d * (dq + 2.0 * dkv) + attn + 2.0 * m * dq * d + mlp_mats * 2.0 * m * d * f;
}

double layer_flops(const block_shape& s, bool routed) {
  if (!routed) return block_flops(s, s.seq_len);
  return 2.0 * static_cast<double>(s.tokens() * s.d_model) + block_flops(s, s.routed_tokens());
}

void bench_shape(const block_shape& base, int threads, int repeats) {
  std::printf("\n== B=%lld S=%lld d=%lld heads=%lld kv_heads=%lld d_head=%lld d_ff=%lld mlp=%s, %d threads\n",
              static_cast<long long>(base.batch), static_cast<long long>(base.seq_len),
              static_cast<long long>(base.d_model), static_cast<long long>(base.n_heads),
              static_cast<long long>(base.n_kv_heads), static_cast<long long>(base.d_head),
              static_cast<long long>(base.d_ff), base.mlp == mlp_kind::gelu ? "gelu" : "swiglu", threads);
  modsim::kernels::train::cpu_trainer trainer(threads);
  const i64 td = base.tokens() * base.d_model;
  std::vector<float> x(static_cast<std::size_t>(td)), g(x.size()), out(x.size()), dx(x.size());
  modsim::kernels::fill_normal_parallel(x, 1, 1, 0.0, 1.0);
  modsim::kernels::fill_normal_parallel(g, 1, 2, 0.0, 1.0);

  std::printf("  %-14s %-10s %9s %9s %9s %9s %9s %11s\n", "layer", "recompute", "fwd ms", "bwd ms", "adamw ms",
              "step ms", "GFLOP/s", "saved MiB");
  using modsim::kernels::moe_variant;
  struct layer_case {
    const char* name;
    bool routed;
    double capacity;
    moe_variant variant;
  };
  for (const layer_case lc :
       {layer_case{"dense", false, 1.0, moe_variant::none}, layer_case{"mod c=1/8", true, 0.125, moe_variant::none},
        layer_case{"mod c=1/2", true, 0.5, moe_variant::none},
        layer_case{"staged c=1/2", true, 0.5, moe_variant::staged},
        layer_case{"integrated", false, 1.0, moe_variant::integrated}}) {
    block_shape s = base;
    s.capacity = lc.capacity;
    s.variant = lc.variant;
    if (lc.variant != moe_variant::none) {  // 4 experts (integrated: and one no-op), factor 1.25
      s.experts = 4;
      s.noop_experts = lc.variant == moe_variant::integrated ? 1 : 0;
      s.capacity_factor = 1.25;
    }
    auto params = modsim::kernels::train::random_params(s, lc.routed, 3);
    modsim::kernels::train::layer_grads grads;
    modsim::kernels::train::adamw_state state;
    // An MoE MLP is counted as the dense one (each token through one expert; drops and no-op
    // experts not subtracted), so its rate is an upper bound.
    const double flops = 3.0 * layer_flops(s, lc.routed);
    for (const auto mode : {recompute::none, recompute::selective, recompute::full}) {
      modsim::kernels::train::saved_activations saved;
      std::vector<double> fwd, bwd, opt;
      for (int r = 0; r <= repeats; ++r) {
        const double tf = seconds([&] { trainer.forward(params, x, out, saved, mode); });
        const double tb = seconds([&] { trainer.backward(params, saved, g, dx, grads); });
        const double to = seconds([&] { trainer.adamw_step(params, grads, state, {}); });
        if (r == 0) continue;  // warm-up
        fwd.push_back(tf);
        bwd.push_back(tb);
        opt.push_back(to);
      }
      const double step = median(fwd) + median(bwd);
      std::printf("  %-14s %-10s %9.2f %9.2f %9.2f %9.2f %9.1f %11.2f\n", lc.name,
                  std::string(modsim::kernels::train::to_string(mode)).c_str(), median(fwd) * 1e3, median(bwd) * 1e3,
                  median(opt) * 1e3, step * 1e3, flops / step * 1e-9,
                  static_cast<double>(saved.bytes()) / (1024.0 * 1024.0));
    }
  }

  // sgemm alone at the MLP up projection's size.
  const i64 m = base.tokens(), n = base.d_ff, k = base.d_model;
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)),
      c(static_cast<std::size_t>(m * n));
  modsim::kernels::fill_normal_parallel(a, 1, 3, 0.0, 1.0);
  modsim::kernels::fill_normal_parallel(b, 1, 4, 0.0, 1.0);
  std::vector<double> times;
  for (int r = 0; r <= repeats; ++r) {
    const double t = seconds([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                  static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k), b.data(), static_cast<int>(n), 0.0f,
                  c.data(), static_cast<int>(n));
    });
    if (r > 0) times.push_back(t);
  }
  const double gemm_flops = 2.0 * static_cast<double>(m * n * k);
  std::printf("  sgemm %lld x %lld x %lld: %.1f GFLOP/s\n", static_cast<long long>(m), static_cast<long long>(n),
              static_cast<long long>(k), gemm_flops / median(times) * 1e-9);
}

block_shape shape(i64 batch, i64 seq, i64 d, i64 heads, i64 kv_heads, i64 d_ff, mlp_kind mlp) {
  block_shape s;
  s.batch = batch;
  s.seq_len = seq;
  s.d_model = d;
  s.n_heads = heads;
  s.n_kv_heads = kv_heads;
  s.d_head = d / heads;
  s.d_ff = d_ff;
  s.mlp = mlp;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int threads = 0, repeats = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--repeats" && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: modsim-bench-train [--quick] [--threads N] [--repeats N]\n");
      return 2;
    }
  }
  try {
    if (threads == 0) threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
    bench_shape(shape(1, 512, 512, 8, 8, 2048, mlp_kind::gelu), threads, repeats);
    if (!quick) bench_shape(shape(1, 1024, 768, 12, 4, 2048, mlp_kind::swiglu), threads, repeats);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "modsim-bench-train: %s\n", e.what());
    return 1;
  }
  return 0;
}
