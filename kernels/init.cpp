#include "kernels/init.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

namespace modsim::kernels {

namespace {

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

init_rule weight(tensor t, std::int64_t fan_in) {
  return {static_cast<std::uint64_t>(t), 0.0, 1.0 / std::sqrt(static_cast<double>(fan_in))};
}

}  // namespace

namespace {

float draw(std::uint64_t key, std::int64_t i, double mean, double std_dev) {
  const std::uint64_t bits = splitmix64(key + static_cast<std::uint64_t>(i));
  // Box-Muller from two 32-bit uniforms, u1 in (0, 1], u2 in [0, 1).
  const double u1 = (static_cast<double>(bits >> 32) + 1.0) / 4294967296.0;
  const double u2 = static_cast<double>(bits & 0xffffffffULL) / 4294967296.0;
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  double value = mean + std_dev * z;
  if (value == 0.0) value = std_dev * 1e-3;
  return static_cast<float>(value);
}

std::uint64_t key_of(std::uint64_t seed, std::uint64_t stream) {
  return splitmix64(seed ^ splitmix64(stream + 0x1234567ULL));
}

}  // namespace

void fill_normal(std::span<float> values, std::uint64_t seed, std::uint64_t stream, double mean, double std_dev,
                 std::int64_t begin, std::int64_t end) {
  const std::uint64_t key = key_of(seed, stream);
  for (std::int64_t i = begin; i < end; ++i) values[static_cast<std::size_t>(i)] = draw(key, i, mean, std_dev);
}

void parallel_indices(std::int64_t n, const std::function<void(std::int64_t)>& body) {
  const auto threads = static_cast<std::int64_t>(std::max(1U, std::thread::hardware_concurrency()));
  std::atomic<std::int64_t> next{0};
  auto work = [&] {
    for (std::int64_t i = next++; i < n; i = next++) body(i);
  };
  std::vector<std::thread> helpers;
  for (std::int64_t t = 1; t < std::min(threads, n); ++t) helpers.emplace_back(work);
  work();
  for (auto& h : helpers) h.join();
}

void fill_normal_parallel(std::span<float> values, std::uint64_t seed, std::uint64_t stream, double mean,
                          double std_dev) {
  constexpr std::int64_t chunk = std::int64_t{1} << 16;
  const auto n = static_cast<std::int64_t>(values.size());
  parallel_indices((n + chunk - 1) / chunk, [&](std::int64_t c) {
    fill_normal(values, seed, stream, mean, std_dev, c * chunk, std::min(n, (c + 1) * chunk));
  });
}

void fill_normal_from(std::span<float> out, std::uint64_t seed, std::uint64_t stream, double mean, double std_dev,
                      std::int64_t first) {
  const std::uint64_t key = key_of(seed, stream);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = draw(key, first + static_cast<std::int64_t>(i), mean, std_dev);
}

std::optional<init_rule> initial_values(tensor t, const block_shape& s, int input_copy) {
  switch (t) {
    case tensor::x:
      return init_rule{2000 + static_cast<std::uint64_t>(input_copy), 0.0, 1.0};
    case tensor::attn_norm_g:
      return init_rule{1001, 1.0, 0.1};
    case tensor::mlp_norm_g:
      return init_rule{1002, 1.0, 0.1};
    case tensor::router_w:
    case tensor::w_q:
    case tensor::w_k:
    case tensor::w_v:
    case tensor::w_up:
    case tensor::w_gate:
    case tensor::expert_router_w:
    case tensor::expert_w_up:
    case tensor::expert_w_gate:
      return weight(t, s.d_model);
    case tensor::w_o:
      return weight(t, s.d_q());
    case tensor::w_down:
    case tensor::expert_w_down:
      return weight(t, s.d_ff);
    default:
      return std::nullopt;
  }
}

}  // namespace modsim::kernels
