// modsim-bench-train: one layer's CPU training step (kernels/train.hpp) against this machine's
// sgemm. Prints, per shape and layer (dense, MoD at capacities 1/8 and 1/2, MoDE staged and
// integrated; or one shape and the layers the flags name) and per activation recomputation:
// forward, backward and AdamW times, the step's achieved GFLOP/s, and the activation bytes the
// forward kept; then OpenBLAS sgemm alone at the shape's MLP up projection (T×d·d×d_ff), the
// rate a matmul-bound step could reach. Step FLOPs are the convention of docs/contracts.md for
// `--mode train`: 3× the forward's matmul FLOPs (the router's 2·d per token included; attention
// the full n×n square), so recomputation's extra work shows as a lower rate, not as more FLOPs.
// MoDE rows (staged at capacity 1/2, integrated; 4 experts, one no-op for integrated) are
// counted as the dense MLP. Median of repeats after a warm-up, steady clock. `--csv` prints
// machine-readable rows (scripts/bench-train-peer.py reads them to compare the step with
// PyTorch's in the same run). A program that prints figures, not a test; flags: see `usage`.
#include <cblas.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
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

// "1/8" for 0.125 (a unit fraction), else the value as %g.
std::string format_capacity(double c) {
  const double inv = 1.0 / c;
  char buf[32];
  if (std::abs(inv - std::round(inv)) < 1e-9)
    std::snprintf(buf, sizeof buf, "1/%.0f", inv);
  else
    std::snprintf(buf, sizeof buf, "%g", c);
  return buf;
}

// One layer of the benchmark: a name, its routing and its MLP.
struct layer_case {
  std::string name;
  bool routed;
  double capacity;
  modsim::kernels::moe_variant variant;
};

// What to run for one shape: the layers, the recomputation modes, and how to print.
struct plan {
  std::string blas_core;  // the kernels OpenBLAS runs ("Haswell", "SkylakeX", ...)
  std::vector<layer_case> layers;
  std::vector<recompute> modes;
  int threads = 1;
  int repeats = 5;
  bool csv = false;
};

// Median seconds of OpenBLAS sgemm at the shape's MLP up projection (T×d·d×d_ff), and its FLOPs.
double sgemm_gflops(const block_shape& base, int repeats) {
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
  return 2.0 * static_cast<double>(m * n * k) / median(times) * 1e-9;
}

void bench_shape(const block_shape& base, const plan& pl) {
  const char* mlp_name = base.mlp == mlp_kind::gelu ? "gelu" : "swiglu";
  modsim::kernels::train::cpu_trainer trainer(pl.threads);
  // CSV: the sgemm rate first, so every row carries it.
  const double csv_sgemm = pl.csv ? sgemm_gflops(base, pl.repeats) : 0.0;
  if (!pl.csv) {
    std::printf(
        "\n== B=%lld S=%lld d=%lld heads=%lld kv_heads=%lld d_head=%lld d_ff=%lld mlp=%s, %d threads, OpenBLAS %s\n",
        static_cast<long long>(base.batch), static_cast<long long>(base.seq_len), static_cast<long long>(base.d_model),
        static_cast<long long>(base.n_heads), static_cast<long long>(base.n_kv_heads),
        static_cast<long long>(base.d_head), static_cast<long long>(base.d_ff), mlp_name, pl.threads,
        pl.blas_core.c_str());
    std::printf("  %-14s %-10s %9s %9s %9s %9s %9s %11s\n", "layer", "recompute", "fwd ms", "bwd ms", "adamw ms",
                "step ms", "GFLOP/s", "saved MiB");
  }
  const i64 td = base.tokens() * base.d_model;
  std::vector<float> x(static_cast<std::size_t>(td)), g(x.size()), out(x.size()), dx(x.size());
  modsim::kernels::fill_normal_parallel(x, 1, 1, 0.0, 1.0);
  modsim::kernels::fill_normal_parallel(g, 1, 2, 0.0, 1.0);

  using modsim::kernels::moe_variant;
  for (const layer_case& lc : pl.layers) {
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
    for (const auto mode : pl.modes) {
      modsim::kernels::train::saved_activations saved;
      std::vector<double> fwd, bwd, opt, steps;
      for (int r = 0; r <= pl.repeats; ++r) {
        const double tf = seconds([&] { trainer.forward(params, x, out, saved, mode); });
        const double tb = seconds([&] { trainer.backward(params, saved, g, dx, grads); });
        const double to = seconds([&] { trainer.adamw_step(params, grads, state, {}); });
        if (r == 0) continue;  // warm-up
        fwd.push_back(tf);
        bwd.push_back(tb);
        opt.push_back(to);
        steps.push_back(tf + tb);
      }
      const std::string mode_name(modsim::kernels::train::to_string(mode));
      if (pl.csv) {
        // The step is the median of the repeats' forward + backward sums.
        const double step = median(steps);
        std::printf("%s,%lld,%lld,%lld,%lld,%lld,%lld,%s,%.6g,%s,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.3f,%.3f,%lld,%s\n",
                    lc.name.c_str(), static_cast<long long>(s.batch), static_cast<long long>(s.seq_len),
                    static_cast<long long>(s.d_model), static_cast<long long>(s.n_heads),
                    static_cast<long long>(s.n_kv_heads), static_cast<long long>(s.d_ff), mlp_name, s.capacity,
                    mode_name.c_str(), pl.threads, pl.repeats, median(fwd), median(bwd), median(opt), step, flops,
                    flops / step * 1e-9, csv_sgemm, static_cast<long long>(saved.bytes()), pl.blas_core.c_str());
        std::fflush(stdout);
        continue;
      }
      const double step = median(fwd) + median(bwd);
      std::printf("  %-14s %-10s %9.2f %9.2f %9.2f %9.2f %9.1f %11.2f\n", lc.name.c_str(), mode_name.c_str(),
                  median(fwd) * 1e3, median(bwd) * 1e3, median(opt) * 1e3, step * 1e3, flops / step * 1e-9,
                  static_cast<double>(saved.bytes()) / (1024.0 * 1024.0));
    }
  }
  if (pl.csv) return;

  // sgemm alone at the MLP up projection's size.
  std::printf("  sgemm %lld x %lld x %lld: %.1f GFLOP/s\n", static_cast<long long>(base.tokens()),
              static_cast<long long>(base.d_ff), static_cast<long long>(base.d_model), sgemm_gflops(base, pl.repeats));
}

block_shape shape(i64 batch, i64 seq, i64 d, i64 heads, i64 kv_heads, i64 d_ff, mlp_kind mlp) {
  block_shape s;
  s.batch = batch;
  s.seq_len = seq;
  s.d_model = d;
  s.n_heads = heads;
  s.n_kv_heads = kv_heads;
  s.d_head = heads > 0 ? d / heads : 0;
  s.d_ff = d_ff;
  s.mlp = mlp;
  return s;
}

// A bad command line: one line on stderr naming the flag, exit 2.
struct usage_error {
  std::string message;
};

const char* const usage =
    "usage: modsim-bench-train [--quick] [--threads N] [--repeats N] [--csv]\n"
    "         [--batch B] [--seq S] [--d-model D] [--heads H] [--kv-heads K] [--d-ff F] [--mlp gelu|swiglu]\n"
    "         [--capacity C]... [--recompute none|selective|full]...\n"
    "  Prints one layer's CPU training step (forward + backward; AdamW apart) per layer and\n"
    "  recomputation, with its achieved GFLOP/s and this machine's sgemm rate at the MLP up\n"
    "  projection. Without shape flags: two built-in shapes (--quick: the first only), layers\n"
    "  dense, MoD at capacities 1/8 and 1/2, MoDE staged and integrated. A shape flag benches one\n"
    "  shape (unset ones: B 1, S 512, d 512, 8 heads, kv heads = heads, d_ff 2048, gelu; d_head =\n"
    "  d / heads). --capacity C (repeatable): only these layers, dense for C = 1, MoD otherwise.\n"
    "  --recompute (repeatable): only these modes (default all three). --threads: 0 or unset is one\n"
    "  per hardware thread. --csv: one header and one row per layer and mode (seconds; step_s is\n"
    "  the median of the repeats' forward + backward; blas_core: the kernels OpenBLAS runs, its\n"
    "  choice or OPENBLAS_CORETYPE's). Exit 2 on a bad flag or shape, 1 on a failure while running.\n";

long long parse_int(const std::string& flag, const char* value, long long min) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < min)
    throw usage_error{flag + ": expected an integer >= " + std::to_string(min) + ", got '" + value + "'"};
  return v;
}

double parse_capacity(const char* value) {
  char* end = nullptr;
  const double v = std::strtod(value, &end);
  if (end == value || *end != '\0' || !(v > 0.0 && v <= 1.0))
    throw usage_error{std::string("--capacity: expected a fraction in (0, 1], got '") + value + "'"};
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  using modsim::kernels::moe_variant;
  bool quick = false, one_shape = false;
  plan pl;
  pl.threads = 0;
  block_shape custom = shape(1, 512, 512, 8, 0, 2048, mlp_kind::gelu);
  std::vector<double> capacities;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const bool has_value = i + 1 < argc;
      const auto value = [&]() -> const char* {
        if (!has_value) throw usage_error{a + ": needs a value"};
        return argv[++i];
      };
      if (a == "--help" || a == "-h") {
        std::printf("%s", usage);
        return 0;
      }
      if (a == "--quick") {
        quick = true;
      } else if (a == "--csv") {
        pl.csv = true;
      } else if (a == "--threads") {
        pl.threads = static_cast<int>(parse_int(a, value(), 0));
      } else if (a == "--repeats") {
        pl.repeats = static_cast<int>(parse_int(a, value(), 1));
      } else if (a == "--batch") {
        custom.batch = parse_int(a, value(), 1), one_shape = true;
      } else if (a == "--seq") {
        custom.seq_len = parse_int(a, value(), 1), one_shape = true;
      } else if (a == "--d-model") {
        custom.d_model = parse_int(a, value(), 1), one_shape = true;
      } else if (a == "--heads") {
        custom.n_heads = parse_int(a, value(), 1), one_shape = true;
      } else if (a == "--kv-heads") {
        custom.n_kv_heads = parse_int(a, value(), 1), one_shape = true;
      } else if (a == "--d-ff") {
        custom.d_ff = parse_int(a, value(), 1), one_shape = true;
      } else if (a == "--mlp") {
        const std::string m = value();
        if (m != "gelu" && m != "swiglu") throw usage_error{"--mlp: expected gelu or swiglu, got '" + m + "'"};
        custom.mlp = m == "gelu" ? mlp_kind::gelu : mlp_kind::swiglu;
        one_shape = true;
      } else if (a == "--capacity") {
        capacities.push_back(parse_capacity(value()));
      } else if (a == "--recompute") {
        const char* m = value();
        try {
          pl.modes.push_back(modsim::kernels::train::parse_recompute(m));
        } catch (const std::exception&) {
          throw usage_error{std::string("--recompute: expected none, selective or full, got '") + m + "'"};
        }
      } else {
        throw usage_error{"unknown argument '" + a + "'"};
      }
    }
    if (one_shape) {
      if (custom.n_kv_heads == 0) custom.n_kv_heads = custom.n_heads;
      if (custom.d_model % custom.n_heads != 0)
        throw usage_error{"--heads " + std::to_string(custom.n_heads) + " does not divide --d-model " +
                          std::to_string(custom.d_model)};
      custom.d_head = custom.d_model / custom.n_heads;
      try {
        custom.validate();
      } catch (const std::exception& e) {
        throw usage_error{e.what()};
      }
    }
  } catch (const usage_error& e) {
    std::fprintf(stderr, "modsim-bench-train: %s (see --help)\n", e.message.c_str());
    return 2;
  }
  const char* core = openblas_get_corename();
  pl.blas_core = core != nullptr ? core : "unknown";
  if (pl.modes.empty()) pl.modes = {recompute::none, recompute::selective, recompute::full};
  if (capacities.empty()) {
    pl.layers = {{"dense", false, 1.0, moe_variant::none},
                 {"mod c=1/8", true, 0.125, moe_variant::none},
                 {"mod c=1/2", true, 0.5, moe_variant::none},
                 {"staged c=1/2", true, 0.5, moe_variant::staged},
                 {"integrated", false, 1.0, moe_variant::integrated}};
  } else {
    for (const double c : capacities)
      pl.layers.push_back(c >= 1.0
                              ? layer_case{"dense", false, 1.0, moe_variant::none}
                              : layer_case{pl.csv ? "mod" : "mod c=" + format_capacity(c), true, c, moe_variant::none});
  }
  try {
    if (pl.threads == 0) pl.threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
    if (pl.csv)
      std::printf(
          "layer,batch,seq_len,d_model,n_heads,n_kv_heads,d_ff,mlp,capacity,recompute,threads,repeats,fwd_s,bwd_s,"
          "adamw_s,step_s,step_flops,gflops,sgemm_gflops,saved_bytes,blas_core\n");
    if (one_shape) {
      bench_shape(custom, pl);
    } else {
      bench_shape(shape(1, 512, 512, 8, 8, 2048, mlp_kind::gelu), pl);
      if (!quick) bench_shape(shape(1, 1024, 768, 12, 4, 2048, mlp_kind::swiglu), pl);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "modsim-bench-train: %s\n", e.what());
    return 1;
  }
  return 0;
}
