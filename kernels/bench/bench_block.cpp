// modsim-bench-kernels: how fast the CPU backend runs a dense and an MoD block.
// Prints, per shape: the dense block's achieved GFLOP/s next to OpenBLAS sgemm alone at the
// block's GEMM sizes; the MoD block's time as a fraction of the dense block's at capacities
// 1/8, 1/4, 1/2, 1 beside its FLOP fraction; and the routing overhead (router + topk +
// gather + scatter) as a share of the MoD block at capacity 1/8. FLOPs follow shared/
// docs/contracts.md: matmuls 2·m·n·k; attention the full n×n square, 2·n²·d_q for scores and again
// for values; the router 2·d per token. Median of repeats after a warm-up, steady clock.
// A program that prints figures, not a test.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/bench/timing.hpp"

namespace {

using modsim::kernels::block_shape;
using modsim::kernels::op;
using i64 = std::int64_t;

struct options {
  bool quick = false;
  bool ops = false;  // also time every single op of the dense block
  int threads = 0;
  int repeats = 5;
  int only = -1;  // run only this entry of the shape list
};

using modsim::kernels::bench::median;
using modsim::kernels::bench::seconds;

// Timings of several named functions taken round-robin: one warm-up round, then `repeats`
// rounds, each function once per round. On a machine shared with other work, interleaving
// lets every function see the same background load, so their ratios stay meaningful.
struct interleaved {
  std::vector<std::function<void()>> fns;
  std::vector<std::vector<double>> times;
  int add(std::function<void()> f) {
    fns.push_back(std::move(f));
    times.emplace_back();
    return static_cast<int>(fns.size()) - 1;
  }
  void run(int repeats) {
    for (auto& f : fns) f();
    for (int r = 0; r < repeats; ++r)
      for (std::size_t i = 0; i < fns.size(); ++i) times[i].push_back(seconds(fns[i]));
  }
  double median_s(int id) const { return median(times[static_cast<std::size_t>(id)]); }
};

// One GEMM of the block: `count` products of (m×k)·(k×n).
struct gemm_size {
  const char* name;
  i64 m, n, k, count;
  bool b_transposed;
  double flops() const { return 2.0 * static_cast<double>(m * n * k * count); }
};

// The block's matmuls over n tokens per sequence (n = S for the dense block).
std::vector<gemm_size> block_gemms(const block_shape& s, i64 n) {
  const i64 m = s.batch * n, d = s.d_model, dq = s.d_q(), dkv = s.d_kv(), f = s.d_ff;
  std::vector<gemm_size> g = {
      {"q_proj", m, dq, d, 1, false},
      {"kv_proj", m, dkv, d, 2, false},
      {"attn_scores", n, n, s.d_head, s.batch * s.n_heads, true},
      {"attn_values", n, s.d_head, n, s.batch * s.n_heads, false},
      {"out_proj", m, d, dq, 1, false},
      {"mlp_up", m, f, d, s.mlp == modsim::kernels::mlp_kind::swiglu ? 2 : 1, false},
      {"mlp_down", m, d, f, 1, false},
  };
  return g;
}

double block_flops(const block_shape& s, i64 n) {
  double total = 0.0;
  for (const auto& g : block_gemms(s, n)) total += g.flops();
  return total;
}

// FLOPs of an MoD layer: the router over all tokens plus the block over k per sequence.
double mod_flops(const block_shape& s) {
  return 2.0 * static_cast<double>(s.tokens() * s.d_model) + block_flops(s, s.routed_tokens());
}

// sgemm alone at one size, with its own operands; the `count` products of a batched GEMM
// run one after another, as in the block.
struct sgemm_case {
  gemm_size g;
  std::vector<float> a, b, c;
  explicit sgemm_case(const gemm_size& size)
      : g(size),
        a(static_cast<std::size_t>(size.m * size.k)),
        b(static_cast<std::size_t>(size.k * size.n)),
        c(static_cast<std::size_t>(size.m * size.n)) {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f - 0.5f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 104729) % 1000) * 1e-3f - 0.5f;
  }
  void operator()() {
    const bool tb = g.b_transposed;
    for (i64 r = 0; r < g.count; ++r)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(g.m),
                  static_cast<int>(g.n), static_cast<int>(g.k), 1.0f, a.data(), static_cast<int>(g.k), b.data(),
                  static_cast<int>(tb ? g.k : g.n), 0.0f, c.data(), static_cast<int>(g.n));
  }
};

std::string name_of(op o) { return std::string(modsim::kernels::to_string(o)); }

void bench_shape(modsim::kernels::backend& be, const block_shape& base, const options& opt) {
  using modsim::kernels::dtype;
  const i64 S = base.seq_len;
  std::printf("\n== B=%lld S=%lld d=%lld heads=%lld kv_heads=%lld d_head=%lld d_ff=%lld mlp=%s\n",
              static_cast<long long>(base.batch), static_cast<long long>(S), static_cast<long long>(base.d_model),
              static_cast<long long>(base.n_heads), static_cast<long long>(base.n_kv_heads),
              static_cast<long long>(base.d_head), static_cast<long long>(base.d_ff),
              base.mlp == modsim::kernels::mlp_kind::gelu ? "gelu" : "swiglu");
  modsim::kernels::workspace_options wo;
  wo.input_copies = 2;

  // 1. The dense block against sgemm alone at the block's GEMM sizes, interleaved.
  block_shape dense_shape = base;
  dense_shape.capacity = 1.0;
  auto dense_ws = be.make_workspace(dense_shape, dtype::fp32, wo);
  const auto run_op = [&](op o, modsim::kernels::workspace& ws) {
    return [&be, &ws, o] {
      ws.rotate();
      be.run(o, ws);
      be.synchronize();
    };
  };
  {
    interleaved t;
    const int dense_id = t.add(run_op(op::block_dense, *dense_ws));
    std::vector<std::unique_ptr<sgemm_case>> gemms;
    std::vector<int> gemm_ids;
    for (const auto& g : block_gemms(base, S)) {
      gemms.push_back(std::make_unique<sgemm_case>(g));
      gemm_ids.push_back(t.add([c = gemms.back().get()] { (*c)(); }));
    }
    std::vector<op> single_ops;
    std::vector<int> op_ids;
    if (opt.ops)
      for (op o : {op::attn_norm, op::qkv_proj, op::attn_scores, op::attn_softmax, op::attn_values, op::out_proj,
                   op::mlp_norm, op::mlp_up, op::mlp_gate, op::mlp_act, op::mlp_down}) {
        if (o == op::mlp_gate && base.mlp != modsim::kernels::mlp_kind::swiglu) continue;
        single_ops.push_back(o);
        op_ids.push_back(t.add([&be, &dense_ws, o] {
          be.run(o, *dense_ws);
          be.synchronize();
        }));
      }
    t.run(opt.repeats);

    std::printf("  %-12s %28s %10s %9s\n", "gemm", "m x n x k (count)", "GFLOP", "GFLOP/s");
    double sgemm_s = 0.0;
    for (std::size_t i = 0; i < gemms.size(); ++i) {
      const auto& g = gemms[i]->g;
      const double ts = t.median_s(gemm_ids[i]);
      sgemm_s += ts;
      std::printf("  %-12s %8lld x %5lld x %5lld (%3lld) %10.2f %9.1f\n", g.name, static_cast<long long>(g.m),
                  static_cast<long long>(g.n), static_cast<long long>(g.k), static_cast<long long>(g.count),
                  g.flops() * 1e-9, g.flops() / ts * 1e-9);
    }
    if (opt.ops) {
      double sum = 0.0;
      std::printf("  single ops at capacity 1 (ms):");
      for (std::size_t i = 0; i < single_ops.size(); ++i) {
        sum += t.median_s(op_ids[i]);
        std::printf(" %s %.2f", name_of(single_ops[i]).c_str(), t.median_s(op_ids[i]) * 1e3);
      }
      std::printf("; sum %.1f\n", sum * 1e3);
    }
    const double flops = block_flops(base, S);
    const double dense_s = t.median_s(dense_id);
    std::printf(
        "  dense block: %.2f GFLOP in %.1f ms = %.1f GFLOP/s; sgemm alone at these sizes: %.1f ms = %.1f "
        "GFLOP/s; block/sgemm = %.0f%%\n",
        flops * 1e-9, dense_s * 1e3, flops / dense_s * 1e-9, sgemm_s * 1e3, flops / sgemm_s * 1e-9,
        100.0 * sgemm_s / dense_s);
  }

  // 2. The MoD block at several capacities against the dense block, interleaved.
  const std::vector<double> capacities =
      opt.quick ? std::vector<double>{0.125, 1.0} : std::vector<double>{0.125, 0.25, 0.5, 1.0};
  std::vector<std::unique_ptr<modsim::kernels::workspace>> mod_ws;
  interleaved t;
  const int dense_id = t.add(run_op(op::block_dense, *dense_ws));
  std::vector<int> mod_ids;
  for (double capacity : capacities) {
    block_shape s = base;
    s.capacity = capacity;
    mod_ws.push_back(be.make_workspace(s, dtype::fp32, wo));
    mod_ids.push_back(t.add(run_op(op::block_mod, *mod_ws.back())));
  }
  // Routing ops alone at capacity 1/8 (the first workspace), each timed as one call.
  std::vector<int> routing_ids;
  const std::vector<op> routing = {op::router, op::topk, op::gather, op::scatter};
  for (op o : routing) routing_ids.push_back(t.add(run_op(o, *mod_ws.front())));
  t.run(opt.repeats);

  const double dense_s = t.median_s(dense_id);
  const double dense_flops = block_flops(base, S);
  std::printf("  %-9s %6s %10s %11s %11s %10s\n", "capacity", "k", "time ms", "time/dense", "FLOPs/dense", "GFLOP/s");
  for (std::size_t i = 0; i < capacities.size(); ++i) {
    const auto& s = mod_ws[i]->shape();
    const double ts = t.median_s(mod_ids[i]);
    const double f = mod_flops(s);
    std::printf("  %-9.4g %6lld %10.2f %11.3f %11.3f %10.1f\n", capacities[i],
                static_cast<long long>(s.routed_tokens()), ts * 1e3, ts / dense_s, f / dense_flops, f / ts * 1e-9);
  }
  double routing_s = 0.0;
  std::printf("  routing at capacity 1/8:");
  for (std::size_t i = 0; i < routing.size(); ++i) {
    routing_s += t.median_s(routing_ids[i]);
    std::printf(" %s %.3f ms,", name_of(routing[i]).c_str(), t.median_s(routing_ids[i]) * 1e3);
  }
  const double mod_s = t.median_s(mod_ids.front());
  std::printf(" total %.3f ms = %.2f%% of the MoD block (%.2f ms)\n", routing_s * 1e3, 100.0 * routing_s / mod_s,
              mod_s * 1e3);
}

block_shape make_shape(i64 batch, i64 seq, i64 d, i64 heads, i64 d_ff) {
  block_shape s;
  s.batch = batch;
  s.seq_len = seq;
  s.d_model = d;
  s.n_heads = heads;
  s.n_kv_heads = heads;
  s.d_head = d / heads;
  s.d_ff = d_ff;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      opt.quick = true;
      opt.repeats = 3;
    } else if (a == "--ops") {
      opt.ops = true;
    } else if (a == "--threads" && i + 1 < argc) {
      opt.threads = std::atoi(argv[++i]);
    } else if (a == "--only" && i + 1 < argc) {
      opt.only = std::atoi(argv[++i]);
    } else if (a == "--repeats" && i + 1 < argc) {
      opt.repeats = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: modsim-bench-kernels [--quick] [--ops] [--only I] [--threads N] [--repeats N]\n");
      return 0;
    } else {
      std::fprintf(stderr, "modsim-bench-kernels: unknown argument '%s' (see --help)\n", a.c_str());
      return 2;
    }
  }
  try {
    auto be = modsim::kernels::make_cpu_backend(opt.threads);
    std::printf("modsim-bench-kernels: backend %s, device %s\n", to_string(be->kind()), be->device().c_str());
    std::vector<block_shape> shapes;
    if (opt.quick) {
      shapes = {make_shape(1, 1024, 1024, 16, 4096)};
    } else {
      shapes = {make_shape(1, 2048, 1024, 16, 4096), make_shape(2, 1024, 768, 12, 3072)};
      block_shape gqa = make_shape(1, 1024, 1024, 16, 2816);
      gqa.n_kv_heads = 4;
      gqa.mlp = modsim::kernels::mlp_kind::swiglu;
      shapes.push_back(gqa);
    }
    for (std::size_t i = 0; i < shapes.size(); ++i)
      if (opt.only < 0 || static_cast<std::size_t>(opt.only) == i) bench_shape(*be, shapes[i], opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "modsim-bench-kernels: %s\n", e.what());
    return 3;
  }
  return 0;
}
