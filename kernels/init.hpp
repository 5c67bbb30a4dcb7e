#pragma once
// How a workspace's weights and inputs are drawn. Every backend fills its workspaces through
// these two functions (host side), so the same seed gives the same data on every backend and
// the parity tests can compare them value for value.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>

#include "kernels/backend.hpp"

namespace modsim::kernels {

// values[i] = mean + std_dev·N(0, 1) for i in [begin, end): a deterministic function of
// (seed, stream, i) alone (splitmix64 + Box-Muller), so any split of the range over threads
// gives the same values. Never writes an exact 0.
void fill_normal(std::span<float> values, std::uint64_t seed, std::uint64_t stream, double mean, double std_dev,
                 std::int64_t begin, std::int64_t end);

// out[i] = the value fill_normal draws at index first + i, for i in [0, out.size()).
void fill_normal_from(std::span<float> out, std::uint64_t seed, std::uint64_t stream, double mean, double std_dev,
                      std::int64_t first);

// fill_normal over all of `values` on every hardware thread (the same values: each is a
// function of its index alone).
void fill_normal_parallel(std::span<float> values, std::uint64_t seed, std::uint64_t stream, double mean,
                          double std_dev);

// Calls body(i) for i in [0, n) on every hardware thread (dynamic, one index at a time); body
// must not throw. Host-side set-up work (weights, caches), never a timed region.
void parallel_indices(std::int64_t n, const std::function<void(std::int64_t)>& body);

struct init_rule {
  std::uint64_t stream = 0;
  double mean = 0.0;
  double std_dev = 1.0;
};

// The rule for a weight or input tensor of `shape`: weights std 1/sqrt(fan_in) (the router
// vector too, so r = w·x is O(1)), norm gains 1 + 0.1·N(0, 1), x N(0, 1) with one stream per
// input copy. nullopt for intermediates and index tensors (written by the ops).
std::optional<init_rule> initial_values(tensor t, const block_shape& shape, int input_copy = 0);

}  // namespace modsim::kernels
