#include "sim/des/serving_fields.hpp"

#include <fmt/format.h>

#include <array>

namespace modsim::sim::des {
namespace {

using S = serve_summary;
constexpr double ms = 1e3, gb = 1e-9;

// A count field / a real field.
constexpr serve_field C(const char* key, const char* label, std::int64_t (*f)(const S&), double scale,
                        const char* format, bool compare = false, bool csv = true) {
  return {key, label, f, nullptr, scale, format, compare, csv};
}
constexpr serve_field R(const char* key, const char* label, double (*f)(const S&), double scale, const char* format,
                        bool compare = false, bool csv = true) {
  return {key, label, nullptr, f, scale, format, compare, csv};
}

const std::array k_fields = {
    C(
        "requests", "requests", [](const S& s) { return s.requests; }, 1, "{:.0f}"),
    C(
        "completed", "completed", [](const S& s) { return s.completed; }, 1, "{:.0f}"),
    R(
        "ttft_s.p50", "TTFT p50", [](const S& s) { return s.ttft_s.p50; }, ms, "{:.2f} ms", true),
    R(
        "ttft_s.p90", "TTFT p90", [](const S& s) { return s.ttft_s.p90; }, ms, "{:.2f} ms", true),
    R(
        "ttft_s.p99", "TTFT p99", [](const S& s) { return s.ttft_s.p99; }, ms, "{:.2f} ms", true),
    R(
        "ttft_s.mean", "TTFT mean", [](const S& s) { return s.ttft_s.mean; }, ms, nullptr),
    R(
        "tpot_s.p50", "TPOT p50", [](const S& s) { return s.tpot_s.p50; }, ms, "{:.2f} ms", true),
    R(
        "tpot_s.p90", "TPOT p90", [](const S& s) { return s.tpot_s.p90; }, ms, "{:.2f} ms", true),
    R(
        "tpot_s.p99", "TPOT p99", [](const S& s) { return s.tpot_s.p99; }, ms, "{:.2f} ms", true),
    R(
        "tpot_s.mean", "TPOT mean", [](const S& s) { return s.tpot_s.mean; }, ms, nullptr),
    R(
        "latency_s.p50", "latency p50", [](const S& s) { return s.latency_s.p50; }, ms, "{:.2f} ms", true),
    R(
        "latency_s.p90", "latency p90", [](const S& s) { return s.latency_s.p90; }, ms, "{:.2f} ms", true),
    R(
        "latency_s.p99", "latency p99", [](const S& s) { return s.latency_s.p99; }, ms, "{:.2f} ms", true),
    R(
        "latency_s.mean", "latency mean", [](const S& s) { return s.latency_s.mean; }, ms, nullptr),
    R(
        "throughput_tok_s", "throughput", [](const S& s) { return s.throughput_tok_s; }, 1, "{:.1f} tok/s", true),
    C(
        "kv_peak_bytes", "KV cache peak", [](const S& s) { return s.kv_peak_bytes; }, gb, "{:.3f} GB", true),
    C(
        "kv_budget_bytes", "KV budget", [](const S& s) { return s.kv_budget_blocks * s.kv_block_bytes; }, gb,
        "{:.3f} GB"),
    C(
        "kv_block_bytes", "KV block", [](const S& s) { return s.kv_block_bytes; }, 1, nullptr, false, false),
    C(
        "output_tokens", "output tokens", [](const S& s) { return s.output_tokens; }, 1, nullptr),
    R(
        "duration_s", "duration", [](const S& s) { return s.duration_s; }, 1, nullptr),
    C(
        "steps", "steps", [](const S& s) { return s.steps; }, 1, "{:.0f}"),
    C(
        "preemptions", "preemptions", [](const S& s) { return s.preemptions; }, 1, "{:.0f}"),
    R(
        "mean_in_system", "in system (mean)", [](const S& s) { return s.mean_in_system; }, 1, "{:.2f}"),
    R(
        "mean_decode_batch", "mean decode batch", [](const S& s) { return s.mean_decode_batch; }, 1, "{:.1f}"),
    R(
        "decode_routed_fraction", "decode tokens routed", [](const S& s) { return s.decode_routed_fraction; }, 100,
        "{:.1f}%"),
    C(
        "decode_routing_decisions", "decode routing decisions", [](const S& s) { return s.decode_decisions; }, 1,
        nullptr, false, false),
    C(
        "dropped_tokens", "dropped by padding", [](const S& s) { return s.dropped; }, 1, "{:.0f}"),
    R(
        "gpu_busy_s", "GPU busy", [](const S& s) { return s.gpu_busy_s; }, 1, "{:.3f} s", true),
    R(
        "gpu_wait_host_s", "GPU waited on host", [](const S& s) { return s.gpu_wait_host_s; }, 1, "{:.3f} s"),
    R(
        "host_sync_wait_s", "host sync waits", [](const S& s) { return s.host_sync_wait_s; }, 1, "{:.3f} s"),
    C(
        "matmul_flops", "matmul GFLOP", [](const S& s) { return s.matmul_flops; }, gb, "{:.1f}", true),
    C(
        "wasted_matmul_flops", "wasted on padding, GFLOP", [](const S& s) { return s.wasted_matmul_flops; }, gb,
        "{:.1f}"),
    C(
        "events", "simulator events", [](const S& s) { return static_cast<std::int64_t>(s.events); }, 1, nullptr, false,
        false),
};

// serve_summary's size when this list was last matched to it, member by member (x86-64): a
// member added there stops the build here until it has its row above (or is declared internal
// by updating this number with a comment saying why).
static_assert(sizeof(void*) != 8 || sizeof(serve_summary) == 280,
              "serve_summary changed: give the new figure a row in serve_fields() (sim/des/serving_fields.cpp)");

}  // namespace

std::span<const serve_field> serve_fields() { return k_fields; }

std::string csv_key(const serve_field& f) {
  std::string k = f.key;
  for (char& c : k)
    if (c == '.') c = '_';
  return k;
}

std::string machine_text(const serve_field& f, const serve_summary& s) {
  return f.count ? std::to_string(f.count(s)) : fmt::format("{}", f.real(s));
}

std::string people_text(const serve_field& f, const serve_summary& s) {
  if (!f.format) return {};
  return fmt::format(fmt::runtime(f.format), f.value(s) * f.scale);
}

boost::json::object serve_json(const serve_summary& s) {
  boost::json::object root;
  for (const serve_field& f : serve_fields()) {
    const std::string key = f.key;
    const std::size_t dot = key.find('.');
    boost::json::object* into = &root;
    std::string name = key;
    if (dot != std::string::npos) {
      boost::json::value& sub = root[key.substr(0, dot)];
      if (!sub.is_object()) sub = boost::json::object();
      into = &sub.as_object();
      name = key.substr(dot + 1);
    }
    if (f.count)
      (*into)[name] = f.count(s);
    else
      (*into)[name] = f.real(s);
  }
  return root;
}

}  // namespace modsim::sim::des
