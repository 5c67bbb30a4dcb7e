// modsim-bench-decode: how close the CPU decode step comes to this machine's memory bandwidth.
// A decode step of B sequences reads every weight it uses once and the keys and values it
// attends over (kernels/decode.hpp: decode_state::step_bytes); at small B it is bound by those
// reads. Prints the machine's copy bandwidth (memcpy over all threads, STREAM's convention:
// bytes read + bytes written per second, best of repeats) and its read bandwidth, then for each model its step time
// (median of repeats, steady clock around step) and the achieved read bandwidth as a share of
// the copy and the read bandwidth, for the MoD model (forced round(capacity·B) routed tokens per routed
// layer, sync routing) and its dense baseline. A program that prints figures, not a test.
//   modsim-bench-decode [--batch B] [--context L] [--page-tokens P] [--threads N] [--repeats R] [MODEL...]
// MODEL: a name under configs/models/ or a path (default: mod-60m mod-220m).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "kernels/cpu/huge_pages.hpp"
#include "kernels/cpu/vec_math.hpp"  // MODSIM_VECTORIZE
#include "kernels/decode.hpp"
#include "kernels/init.hpp"
#include "sim/model/config.hpp"
#include "sim/model/spec.hpp"

namespace {

using namespace modsim;
using i64 = std::int64_t;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The machine's bandwidths over `threads`, best of five on buffers far larger than the caches
// (on huge pages, as the step's arrays):
// memcpy (STREAM's convention: bytes read + bytes written per second) and a plain read (a sum
// of every float, the ceiling of a step that only reads).
// Σ f[0..n): four independent vector sums, so the loop waits on memory, not on adds.
using v16 = float __attribute__((vector_size(64)));
MODSIM_VECTORIZE float read_all(const float* f, std::size_t n) {
  v16 acc[4] = {};
  for (std::size_t j = 0; j + 64 <= n; j += 64) {
    for (int l = 0; l < 4; ++l) {
      v16 v;
      std::memcpy(&v, f + j + 16 * l, sizeof v);
      acc[l] += v;
    }
  }
  const v16 t = acc[0] + acc[1] + acc[2] + acc[3];
  float s = 0;
  for (int l = 0; l < 16; ++l) s += t[l];
  return s;
}

struct bandwidths {
  double copy = 0, read = 0;
};

bandwidths measure_bandwidths(int threads) {
  const std::size_t n = std::size_t{256} << 20;
  // On 2 MiB pages where the kernel grants them, as the decode step's cache and weights are,
  // so the references and the step read through the same page size.
  const kernels::cpu::huge_vector<char> a(n, 1);
  kernels::cpu::huge_vector<char> b(n, 2);
  const std::size_t chunk = n / static_cast<std::size_t>(threads);
  std::vector<float> sums(static_cast<std::size_t>(threads));
  double best_copy = 1e30, best_read = 1e30;
  for (int r = 0; r < 5; ++r) {
    double t0 = now_s();
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; ++i)
      ts.emplace_back([&, i] { std::memcpy(b.data() + i * chunk, a.data() + i * chunk, chunk); });
    for (auto& t : ts) t.join();
    best_copy = std::min(best_copy, now_s() - t0);
    ts.clear();
    t0 = now_s();
    for (int i = 0; i < threads; ++i) {
      ts.emplace_back([&, i] {
        sums[static_cast<std::size_t>(i)] =
            read_all(reinterpret_cast<const float*>(a.data() + i * chunk), chunk / sizeof(float));
      });
    }
    for (auto& t : ts) t.join();
    best_read = std::min(best_read, now_s() - t0);
  }
  volatile float sink = 0;  // the sums are used, so the reads cannot be dropped
  for (float v : sums) sink = sink + v;
  return {2.0 * static_cast<double>(n) / best_copy, static_cast<double>(n) / best_read};
}

kernels::decode_shape shape_of(const sim::model_spec& m, i64 batch, i64 context, i64 page_tokens) {
  kernels::decode_shape s;
  s.page_tokens = page_tokens;
  s.batch = batch;
  s.max_context = context + 1;
  s.d_model = m.d_model;
  s.n_heads = m.n_heads;
  s.n_kv_heads = m.n_kv_heads > 0 ? m.n_kv_heads : m.n_heads;
  s.d_head = m.d_head > 0 ? m.d_head : m.d_model / m.n_heads;
  s.d_ff = m.d_ff;
  s.mlp = m.mlp;
  s.vocab = m.vocab_size;
  s.predictor_hidden = m.routing ? (m.routing->predictor_hidden > 0 ? m.routing->predictor_hidden : m.d_model) : 0;
  for (const sim::layer_plan& l : sim::plan_layers(m)) s.layers.push_back({l.routed});
  return s;
}

struct result {
  double step_s = 0;
  i64 bytes = 0;
};

result time_step(const sim::model_spec& m, i64 batch, i64 context, i64 page_tokens, int threads, int repeats) {
  const kernels::decode_shape s = shape_of(m, batch, context, page_tokens);
  auto st = kernels::make_cpu_decode(s, kernels::make_decode_weights(s, 1), threads);
  double capacity = 1.0;
  for (const sim::layer_plan& l : sim::plan_layers(m))
    if (l.routed) capacity = std::min(capacity, l.capacity);
  const std::vector<i64> dense(static_cast<std::size_t>(batch), context);
  const std::vector<i64> routed(static_cast<std::size_t>(batch), routed_tokens(capacity, context));
  st->fill_cache(dense, routed, 2);
  std::vector<float> x(static_cast<std::size_t>(batch * s.d_model));
  kernels::fill_normal(x, 1, 3000, 0.0, 1.0, 0, static_cast<i64>(x.size()));
  st->set_input(x);
  kernels::decode_decisions d;
  d.from = kernels::decode_decisions::source::forced_count;
  d.count = std::clamp<i64>(static_cast<i64>(std::llround(capacity * static_cast<double>(batch))), 0, batch);
  std::vector<double> t;
  for (int r = 0; r < repeats + 1; ++r) {
    const double t0 = now_s();
    st->step(d, false);
    if (r > 0) t.push_back(now_s() - t0);  // the first is a warm-up
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], st->step_bytes()};
}

int run(int argc, char** argv) {
  i64 batch = 8, context = 2048, page_tokens = 16;
  int threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  int repeats = 7;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw input_error("", a, "needs a value");
      return argv[++i];
    };
    if (a == "--batch") {
      batch = std::stoll(value());
    } else if (a == "--context") {
      context = std::stoll(value());
    } else if (a == "--page-tokens") {
      page_tokens = std::stoll(value());
    } else if (a == "--threads") {
      threads = std::stoi(value());
    } else if (a == "--repeats") {
      repeats = std::stoi(value());
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: modsim-bench-decode [--batch B] [--context L] [--page-tokens P] [--threads N] [--repeats R] "
          "[MODEL...]\n");
      return 0;
    } else {
      models.push_back(a);
    }
  }
  if (batch < 1 || context < 1 || page_tokens < 1 || threads < 1 || repeats < 1)
    throw input_error("", "arguments", "batch, context, page tokens, threads and repeats must be >= 1");
  if (models.empty()) models = {"mod-60m", "mod-220m"};
  const bandwidths bw_machine = measure_bandwidths(threads);
  const double copy = bw_machine.copy;
  std::printf("copy bandwidth (memcpy, %d threads, read + write, 2 MiB pages): %.1f GB/s\n", threads, copy / 1e9);
  std::printf("read bandwidth (sum of floats, %d threads, 2 MiB pages): %.1f GB/s\n", threads, bw_machine.read / 1e9);
  std::printf("decode step, B = %lld, context = %lld, %lld-token KV pages, fp32, %d threads\n",
              static_cast<long long>(batch), static_cast<long long>(context), static_cast<long long>(page_tokens),
              threads);
  std::printf("%-22s %10s %10s %10s %8s %8s\n", "model", "step ms", "MB read", "GB/s", "of copy", "of read");
  for (const std::string& name : models) {
    const sim::model_spec m = sim::load_model(sim::resolve_config(name, "models"));
    const std::vector<sim::model_spec> pair = {m, sim::dense_baseline(m)};
    for (std::size_t k = 0; k < pair.size(); ++k) {
      const result r = time_step(pair[k], batch, context, page_tokens, threads, repeats);
      const double bw = static_cast<double>(r.bytes) / r.step_s;
      const std::string label = k == 0 ? m.name : m.name + " (dense)";
      std::printf("%-22s %10.3f %10.1f %10.1f %7.0f%% %7.0f%%\n", label.c_str(), r.step_s * 1e3,
                  static_cast<double>(r.bytes) / 1e6, bw / 1e9, 100.0 * bw / copy, 100.0 * bw / bw_machine.read);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "modsim-bench-decode: %s\n", e.what());
    return 2;
  }
}
