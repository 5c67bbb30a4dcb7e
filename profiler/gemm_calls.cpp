#include "profiler/gemm_calls.hpp"

#include <fmt/format.h>

#include <cmath>
#include <regex>
#include <tuple>

#include "profiler/measurements.hpp"
#include "sim/model/flops.hpp"
#include "sim/cost/gemm_tiles.hpp"

namespace modsim::profiler {
namespace {

using query = kernels::backend::gemm_query;

std::int64_t whole(double x) { return static_cast<std::int64_t>(std::llround(x)); }

void add(std::vector<gemm_call>& calls, modsim::op o, query q) {
  for (gemm_call& c : calls) {
    const query& x = c.query;
    if (std::tie(x.m, x.n, x.k, x.batch, x.b_transposed, x.type) ==
        std::tie(q.m, q.n, q.k, q.batch, q.b_transposed, q.type)) {
      const std::string name(to_string(o));
      if (("," + c.ops + ",").find("," + name + ",") == std::string::npos) c.ops += "," + name;
      return;
    }
  }
  calls.push_back({std::string(to_string(o)), q});
}

// Adds point `p`'s GEMM calls to `calls` (merging those of a shape already there).
void add_calls_of(const point& p, std::vector<gemm_call>& calls) {
  if (kernels::is_decode(p.op)) return;
  const std::vector<modsim::op> ops = kernels::is_block(p.op) ? block_ops(p) : std::vector<modsim::op>{p.op};
  const kernels::block_shape& k = p.shape;
  const sim::op_shape s = op_shape_of(p);
  const std::int64_t T = k.batch * k.block_tokens();
  for (const modsim::op o : ops) {
    query q;
    q.type = p.type;
    if (o == modsim::op::qkv_proj) {
      q.m = T;
      q.k = k.d_model;
      q.n = k.d_q();
      add(calls, o, q);
      q.n = k.d_kv();
      add(calls, o, q);
      continue;
    }
    const std::optional<sim::gemm_problem> g = sim::op_gemm(o, s);
    if (!g) continue;
    q.m = whole(g->m);
    q.n = whole(g->n);
    q.k = whole(g->k);
    q.batch = whole(g->batch);
    q.b_transposed = o == modsim::op::attn_scores;
    add(calls, o, q);
  }
}

}  // namespace

std::vector<gemm_call> gemm_calls(const point& p) {
  std::vector<gemm_call> calls;
  add_calls_of(p, calls);
  return calls;
}

std::vector<gemm_call> distinct_gemm_calls(const std::vector<point>& points) {
  std::vector<gemm_call> out;
  for (const point& p : points) add_calls_of(p, out);
  return out;
}

boost::json::object gemm_choices_json(const std::vector<gemm_call>& calls,
                                      const std::vector<kernels::backend::gemm_choice>& choices, int sm_count) {
  boost::json::object o;
  o["library"] =
      "cuBLASLt's heuristic, first answer, for each GEMM as the CUDA backend calls cuBLAS (tile: rows x columns of the "
      "row-major output); model: sim/cost/gemm_tiles.hpp choose_gemm_tile";
  o["sm_count"] = sm_count;
  boost::json::array rows;
  int known = 0, same_tile = 0, same_split = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const kernels::backend::gemm_query& q = calls[i].query;
    boost::json::object r;
    r["ops"] = calls[i].ops;
    r["m"] = q.m;
    r["n"] = q.n;
    r["k"] = q.k;
    r["batch"] = q.batch;
    r["b_transposed"] = q.b_transposed;
    r["dtype"] = std::string(to_string(q.type));
    const kernels::backend::gemm_choice c = i < choices.size() ? choices[i] : kernels::backend::gemm_choice{};
    boost::json::object lib;
    lib["known"] = c.known;
    if (c.known) {
      // cuBLAS sees the row-major call transposed: its tile_m spans this call's columns.
      if (c.tile_m > 0) lib["tile"] = fmt::format("{}x{}", c.tile_n, c.tile_m);
      lib["split_k"] = c.split_k;
      lib["algo_id"] = c.algo_id;
      lib["tile_id"] = c.tile_id;
      lib["stages_id"] = c.stages_id;
      lib["cluster_shape_id"] = c.cluster_shape_id;
    }
    if (!c.note.empty()) lib["note"] = c.note;
    r["library"] = std::move(lib);
    if (sm_count > 0) {
      const sim::gemm_problem g{double(q.m), double(q.n), double(q.k), double(q.batch)};
      const sim::gemm_tile_choice m = sim::choose_gemm_tile(g, sm_count, 512.0);
      r["model"] = {{"tile", fmt::format("{}x{}", m.tile_m, m.tile_n)}, {"split_k", m.split_k}, {"q", m.q}};
      if (c.known) {
        ++known;
        if (c.tile_m > 0 && c.tile_n == m.tile_m && c.tile_m == m.tile_n) ++same_tile;
        if (c.split_k == m.split_k) ++same_split;
      }
    } else if (c.known) {
      ++known;
    }
    rows.push_back(std::move(r));
  }
  o["calls"] = std::move(rows);
  o["known"] = known;
  if (sm_count > 0) {
    o["same_tile"] = same_tile;
    o["same_split_k"] = same_split;
  }
  return o;
}

int sm_count_of(const std::string& device) {
  static const std::regex sms(R"((\d+) SMs)");
  std::smatch m;
  if (!std::regex_search(device, m, sms)) return 0;
  return std::stoi(m[1].str());
}

}  // namespace modsim::profiler
