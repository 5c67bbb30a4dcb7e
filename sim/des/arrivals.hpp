#pragma once
// The requests a serving run serves: token-count distributions, a Poisson arrival process
// and request traces read from CSV.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/des/step.hpp"

namespace modsim::sim::des {

struct request {
  std::int64_t id = 0;
  double arrival_s = 0;
  std::int64_t prompt_tokens = 1;
  std::int64_t output_tokens = 1;  // tokens generated, the first one by the prefill
};

// A token-count distribution: "N" (always N), "uniform:A:B" (integers A..B), "exp:M"
// (exponential with mean M, rounded up, at least 1 and at most 10·M).
struct length_dist {
  enum class kind { fixed, uniform, exponential };
  kind k = kind::fixed;
  double a = 1, b = 1;
  std::int64_t sample(rng& r) const;
  std::int64_t max() const;  // the largest value it can give
};
// Throws modsim::error(bad_input) naming `key` for a malformed text.
length_dist parse_length_dist(std::string_view text, const std::string& key);

// n requests with exponential inter-arrival times of mean 1/rate_per_s, starting from 0;
// ids 0..n-1. Deterministic for a seed.
std::vector<request> poisson_arrivals(double rate_per_s, std::int64_t n, const length_dist& prompt,
                                      const length_dist& output, std::uint64_t seed);
// A CSV trace with the header `arrival_s,prompt_tokens,output_tokens` (more columns are
// ignored); ids are row numbers from 0. Throws bad_input naming `file` and the line.
std::vector<request> parse_arrivals_csv(std::string_view text, const std::string& file);

}  // namespace modsim::sim::des
