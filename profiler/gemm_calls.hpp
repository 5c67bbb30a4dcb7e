#pragma once
// The GEMMs a profiled point makes the CUDA backend call, and what a GEMM library would run
// for each next to the kernel the cost model picks (sim/cost/gemm_tiles.hpp): the profiler's
// metadata ("gemm_choices") so that the tile chooser can be checked against the library where
// the library can be asked (the CUDA backend: cuBLASLt's heuristic).
#include <optional>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "kernels/backend.hpp"
#include "profiler/grid.hpp"

namespace modsim::profiler {

struct gemm_call {
  std::string ops;  // the ops that make this call, comma-separated ("qkv_proj,out_proj")
  kernels::backend::gemm_query query;
};

// The GEMM calls of point `p` (every op of a block point; the op of a single-op point), as the
// CUDA backend makes them: qkv_proj three (Q, then K and V: one call of each shape), out_proj,
// mlp_up, mlp_gate, mlp_down one each (rows = the op's tokens, batch × k for routed ops), the
// attention scores (batch × heads products of n×n over d_head, keys transposed) and values
// (n×d_head over n), the experts' products (sim::op_gemm). Decode points: none (their GEMMs
// are the decode kernels'). Calls of one shape are listed once.
std::vector<gemm_call> gemm_calls(const point& p);

// The distinct calls over `points`, in the order first met.
std::vector<gemm_call> distinct_gemm_calls(const std::vector<point>& points);

// The metadata object: per call its shape, the library's choice (`choices`, one per call;
// tile as rows × columns of the call's row-major output, i.e. cuBLAS's n×m) and the cost
// model's (sim::choose_gemm_tile on `sm_count` SMs, the split-K element cost of a hardware
// file without bandwidth numbers; omitted when sm_count is 0), and how often they agree:
//   {"library": ..., "sm_count": N, "calls": [...], "known": K, "same_tile": T, "same_split_k": S}
boost::json::object gemm_choices_json(const std::vector<gemm_call>& calls,
                                      const std::vector<kernels::backend::gemm_choice>& choices, int sm_count);

// The SM count a CUDA device description names ("..., 132 SMs, ..."); 0 when none.
int sm_count_of(const std::string& device);

}  // namespace modsim::profiler
