#pragma once
// What the kernel benchmark programs time with: one call's wall-clock seconds and a median.
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace modsim::kernels::bench {

// Seconds of one call of f.
inline double seconds(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The upper median of v (0 when empty).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace modsim::kernels::bench
