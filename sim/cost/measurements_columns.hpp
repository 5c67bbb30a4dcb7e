#pragma once
// The measurements CSV's columns (sim/cost/measurements.hpp), shared by the files that write
// and read it: every column this version knows, in the full layout's order.
#include <cstddef>

namespace modsim::sim::csv {

inline constexpr const char* k_columns[] = {
    "backend", "device",    "op",       "dtype",          "batch",           "seq_len",
    "d_model", "n_heads",   "d_ff",     "capacity",       "tokens",          "matmul_flops",
    "bytes",   "median_s",  "p10_s",    "p90_s",          "samples",         "n_kv_heads",
    "mlp",     "variant",   "experts",  "noop_experts",   "capacity_factor", "other_flops",
    "timing",  "attention", "block",    "decode_routing", "pad_capacity",    "predictor_hidden",
    "model",   "anchor_s",  "recompute"};
inline constexpr std::size_t k_column_count = sizeof(k_columns) / sizeof(k_columns[0]);
// The columns every file has, in this order (the contract's and those of the first files).
inline constexpr std::size_t k_base_columns = 24;

}  // namespace modsim::sim::csv
