// Sweep grids (profiler/grid.hpp): one shard of an expansion (`--shard I/N`).
#include "profiler/grid.hpp"

#include <string>

#include "core/error.hpp"

namespace modsim::profiler {

expansion shard(expansion e, int index, int count) {
  if (count < 1 || index < 1 || index > count)
    throw input_error("", "--shard",
                      "shard " + std::to_string(index) + "/" + std::to_string(count) + ": need 1 <= I <= N");
  auto same_shape = [](const point& a, const point& b) {
    const kernels::block_shape& x = a.shape;
    const kernels::block_shape& y = b.shape;
    return a.type == b.type && x.batch == y.batch && x.seq_len == y.seq_len && x.d_model == y.d_model &&
           x.n_heads == y.n_heads && x.n_kv_heads == y.n_kv_heads && x.d_ff == y.d_ff && x.mlp == y.mlp;
  };
  std::vector<point> firsts;  // the first point of each shape group, in grid order
  expansion out;
  for (point& p : e.points) {
    std::size_t g = 0;
    while (g < firsts.size() && !same_shape(firsts[g], p)) ++g;
    if (g == firsts.size()) firsts.push_back(p);
    if (static_cast<int>(g % static_cast<std::size_t>(count)) == index - 1) out.points.push_back(std::move(p));
  }
  if (index == 1) out.skipped = std::move(e.skipped);
  return out;
}

std::pair<int, int> parse_shard(std::string_view text, const std::string& key) {
  const std::size_t slash = text.find('/');
  auto number = [&](std::string_view t) {
    if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string_view::npos)
      throw input_error("", key, "expected I/N (e.g. 2/4), got '" + std::string(text) + "'");
    return std::stoi(std::string(t));
  };
  if (slash == std::string_view::npos)
    throw input_error("", key, "expected I/N (e.g. 2/4), got '" + std::string(text) + "'");
  const int i = number(text.substr(0, slash)), n = number(text.substr(slash + 1));
  if (n < 1 || i < 1 || i > n) throw input_error("", key, "shard " + std::string(text) + ": need 1 <= I <= N");
  return {i, n};
}

}  // namespace modsim::profiler
