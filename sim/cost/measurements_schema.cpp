// The measurements CSV (sim/cost/measurements.hpp): its columns, layouts and header, and a
// row as a line of text.
#include "sim/cost/measurements.hpp"

#include <cstdio>

#include "sim/cost/measurements_columns.hpp"
#include "sim/common/io.hpp"

namespace modsim::sim {
using csv::k_column_count;
using csv::k_columns;

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

bool csv_layout::has(std::string_view column) const {
  for (std::size_t c : columns)
    if (k_columns[c] == column) return true;
  return false;
}

const csv_layout& full_layout() {
  static const csv_layout layout = [] {
    csv_layout l;
    for (std::size_t c = 0; c < k_column_count; ++c) l.columns.push_back(c);
    return l;
  }();
  return layout;
}

std::string csv_header(const csv_layout& layout) {
  std::string h;
  for (std::size_t i = 0; i < layout.columns.size(); ++i)
    h += (i ? "," : "") + std::string(k_columns[layout.columns[i]]);
  return h;
}

namespace {

// The text of column `c` of row `r`.
std::string field(const measurement_row& r, std::size_t c) {
  switch (c) {
    case 0:
      return sim::csv_field(to_string(r.backend));
    case 1:
      return sim::csv_field(r.device);
    case 2:
      return std::string(modsim::to_string(r.op));
    case 3:
      return to_string(r.type);
    case 4:
      return std::to_string(r.batch);
    case 5:
      return std::to_string(r.seq_len);
    case 6:
      return std::to_string(r.d_model);
    case 7:
      return std::to_string(r.n_heads);
    case 8:
      return std::to_string(r.d_ff);
    case 9:
      return num(r.capacity);
    case 10:
      return std::to_string(r.tokens);
    case 11:
      return std::to_string(r.matmul_flops);
    case 12:
      return std::to_string(r.bytes);
    case 13:
      return num(r.median_s);
    case 14:
      return num(r.p10_s);
    case 15:
      return num(r.p90_s);
    case 16:
      return std::to_string(r.samples);
    case 17:
      return std::to_string(r.n_kv_heads);
    case 18:
      return to_string(r.mlp);
    case 19:
      return to_string(r.variant);
    case 20:
      return std::to_string(r.experts);
    case 21:
      return std::to_string(r.noop_experts);
    case 22:
      return num(r.capacity_factor);
    case 23:
      return std::to_string(r.other_flops);
    case 24:
      return modsim::to_string(r.timing);
    case 25:
      return modsim::to_string(r.attention);
    case 26:
      return r.block ? std::string(modsim::to_string(*r.block)) : std::string();
    case 27:
      return r.decode_routing ? std::string(modsim::to_string(*r.decode_routing)) : std::string();
    case 28:
      return num(r.pad_capacity);
    case 29:
      return std::to_string(r.predictor_hidden);
    case 30:
      return sim::csv_field(r.model);
    case 31:
      return r.anchor_s > 0 ? num(r.anchor_s) : std::string();
    case 32:
      return modsim::to_string(r.recompute);
  }
  return "";
}

}  // namespace

std::string format_row(const measurement_row& r, const csv_layout& layout) {
  std::string line;
  for (std::size_t i = 0; i < layout.columns.size(); ++i) line += (i ? "," : "") + field(r, layout.columns[i]);
  return line;
}

}  // namespace modsim::sim
