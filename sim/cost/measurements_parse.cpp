// The measurements CSV (sim/cost/measurements.hpp): reading a header, a row and a file.
#include "sim/cost/measurements.hpp"

#include <cerrno>
#include <charconv>
#include <fstream>
#include <optional>

#include "core/error.hpp"
#include "sim/cost/measurements_columns.hpp"
#include "sim/model/config.hpp"

namespace modsim::sim {
using csv::k_base_columns;
using csv::k_column_count;
using csv::k_columns;

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

csv_layout parse_header(const std::string& line, const std::string& file) {
  const std::vector<std::string> names = split_csv(line);
  auto bad = [&](const std::string& why) {
    return input_error(file, "",
                       "header does not match the measurements format (" + why + "; expected: " + csv_header() +
                           ", the last " + std::to_string(k_column_count - k_base_columns) + " optional)");
  };
  if (names.size() < k_base_columns) throw bad("too few columns");
  csv_layout l;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::size_t c = 0;
    while (c < k_column_count && names[i] != k_columns[c]) ++c;
    if (i < k_base_columns ? c != i : (c < k_base_columns || c == k_column_count || l.has(names[i])))
      throw bad("column " + std::to_string(i + 1) + " is '" + names[i] + "'");
    l.columns.push_back(c);
  }
  return l;
}

namespace {

// One field of a data line: its text, its column and where it is, read as the column's type.
struct field {
  const std::string& v;
  std::size_t c;  // the column (an index into k_columns)
  const std::string& where;

  std::int64_t integer() const {
    std::int64_t x = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || p != v.data() + v.size())
      throw input_error(where, k_columns[c], "expected an integer, got '" + v + "'");
    return x;
  }
  double real() const {
    char* end = nullptr;
    errno = 0;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || errno != 0)
      throw input_error(where, k_columns[c], "expected a number, got '" + v + "'");
    return x;
  }
  std::string one_of(std::initializer_list<const char*> allowed) const {
    for (const char* a : allowed)
      if (v == a) return v;
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw input_error(where, k_columns[c], "expected one of " + list + ", got '" + v + "'");
  }
};

// Stores field `f` in its column of `r` (the block column as written in `block_name`, converted
// once the whole line is read).
void store(const field& f, measurement_row& r, std::string& block_name) {
  switch (f.c) {
    case 0:
      if (!f.v.empty()) r.backend = parse_backend(f.v, f.where, k_columns[f.c]);
      break;
    case 1:
      r.device = f.v;
      break;
    case 2:
      if (const std::optional<modsim::op> o = modsim::find_op(f.v))
        r.op = *o;
      else
        throw input_error(f.where, k_columns[f.c], "unknown op '" + f.v + "'");
      break;
    case 3:
      r.type = parse_dtype(f.v, f.where, "dtype");
      break;
    case 4:
      r.batch = f.integer();
      break;
    case 5:
      r.seq_len = f.integer();
      break;
    case 6:
      r.d_model = f.integer();
      break;
    case 7:
      r.n_heads = f.integer();
      break;
    case 8:
      r.d_ff = f.integer();
      break;
    case 9:
      r.capacity = f.real();
      break;
    case 10:
      r.tokens = f.integer();
      break;
    case 11:
      r.matmul_flops = f.integer();
      break;
    case 12:
      r.bytes = f.integer();
      break;
    case 13:
      r.median_s = f.real();
      break;
    case 14:
      r.p10_s = f.real();
      break;
    case 15:
      r.p90_s = f.real();
      break;
    case 16:
      r.samples = static_cast<int>(f.integer());
      break;
    case 17:
      r.n_kv_heads = f.integer();
      break;
    case 18:
      r.mlp = f.v.empty() ? mlp_kind::gelu : *find_mlp_kind(f.one_of({"gelu", "swiglu"}));
      break;
    case 19:
      r.variant = f.v.empty() ? moe_variant::none : *find_moe_variant(f.one_of({"none", "staged", "integrated"}));
      break;
    case 20:
      r.experts = static_cast<int>(f.integer());
      break;
    case 21:
      r.noop_experts = static_cast<int>(f.integer());
      break;
    case 22:
      r.capacity_factor = f.real();
      break;
    case 23:
      r.other_flops = f.integer();
      break;
    case 24:
      r.timing = parse_timing(f.one_of({"isolated", "in_block"}));
      break;
    case 25:
      r.attention = parse_attention_impl(f.one_of({"unfused", "fused"}));
      break;
    case 26:
      block_name = f.v;
      break;
    case 27:
      if (!f.v.empty()) r.decode_routing = find_decode_run(f.one_of({"sync", "pad", "graph"}));
      break;
    case 28:
      r.pad_capacity = f.real();
      break;
    case 29:
      r.predictor_hidden = f.integer();
      break;
    case 30:
      r.model = f.v;
      break;
    case 31:
      if (!f.v.empty()) {
        r.anchor_s = f.real();
        if (!(r.anchor_s > 0)) throw input_error(f.where, "anchor_s", "must be a positive number of seconds or empty");
      }
      break;
    case 32:
      if (!f.v.empty()) r.recompute = parse_recompute(f.one_of({"none", "selective", "full"}));
      break;
  }
}

}  // namespace

measurement_row parse_row(const std::string& line, const std::string& file, int line_no, const csv_layout& layout) {
  std::vector<std::string> f = split_csv(line);
  const std::string where = file + ":" + std::to_string(line_no);
  if (f.size() != layout.columns.size())
    throw input_error(
        where, "", "expected " + std::to_string(layout.columns.size()) + " columns, found " + std::to_string(f.size()));
  measurement_row r;
  std::string block_name;  // the block column as written, converted after the loop
  for (std::size_t i = 0; i < f.size(); ++i) store(field{f[i], layout.columns[i], where}, r, block_name);
  if (modsim::is_decode(r.op)) {
    if (!r.decode_routing) r.decode_routing = decode_run::sync;
    if (r.op == modsim::op::decode_step && r.model.empty())
      throw input_error(where, "model", "a decode_step row names its model");
  }
  // The block column names an op of the table; only in_block rows need one (an isolated row's
  // column is empty and, if not, ignored as before).
  if (const std::optional<modsim::op> b = modsim::find_op(block_name); b && modsim::is_block(*b)) r.block = *b;
  if (r.timing == timing_mode::in_block && !r.block)
    throw input_error(
        where, "block",
        "an in_block row names its block (block_dense, block_mod or layer_mode), got '" + block_name + "'");
  if (r.timing != timing_mode::in_block) r.block.reset();
  return r;
}

std::vector<measurement_row> read_measurements(const std::string& path, csv_layout* layout_out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "", "cannot open file");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<measurement_row> rows;
  csv_layout layout;
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < content.size()) {
    std::size_t nl = content.find('\n', pos);
    if (nl == std::string::npos) break;  // a partial last line: a run killed mid-write
    std::string line = content.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line_no == 1) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      layout = parse_header(line, path);
      continue;
    }
    if (line.empty()) continue;
    rows.push_back(parse_row(line, path, line_no, layout));
  }
  if (line_no == 0) throw input_error(path, "", "empty file (no header)");
  if (layout_out != nullptr) *layout_out = layout;
  return rows;
}

}  // namespace modsim::sim
