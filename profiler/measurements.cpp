#include "profiler/measurements.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "profiler/measure.hpp"
#include "core/error.hpp"
#include "sim/config.hpp"
#include "sim/des/decode.hpp"
#include "sim/flops.hpp"
#include "sim/io.hpp"

namespace modsim::profiler {
namespace {

constexpr const char* k_columns[] = {
    "backend", "device",    "op",      "dtype",          "batch",           "seq_len",
    "d_model", "n_heads",   "d_ff",    "capacity",       "tokens",          "matmul_flops",
    "bytes",   "median_s",  "p10_s",   "p90_s",          "samples",         "n_kv_heads",
    "mlp",     "variant",   "experts", "noop_experts",   "capacity_factor", "other_flops",
    "timing",  "attention", "block",   "decode_routing", "pad_capacity",    "predictor_hidden",
    "model"};
constexpr std::size_t k_column_count = sizeof(k_columns) / sizeof(k_columns[0]);
// The columns every file has, in this order (the contract's and those of the first files).
constexpr std::size_t k_base_columns = 24;

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
      return sim::csv_field(r.backend);
    case 1:
      return sim::csv_field(r.device);
    case 2:
      return std::string(modsim::to_string(r.op));
    case 3:
      return r.dtype;
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
      return r.mlp;
    case 19:
      return r.variant;
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
      return r.block;
    case 27:
      return r.decode_routing;
    case 28:
      return num(r.pad_capacity);
    case 29:
      return std::to_string(r.predictor_hidden);
    case 30:
      return sim::csv_field(r.model);
  }
  return "";
}

}  // namespace

std::string format_row(const measurement_row& r, const csv_layout& layout) {
  std::string line;
  for (std::size_t i = 0; i < layout.columns.size(); ++i) line += (i ? "," : "") + field(r, layout.columns[i]);
  return line;
}

measurement_row parse_row(const std::string& line, const std::string& file, int line_no, const csv_layout& layout) {
  std::vector<std::string> f = split_csv(line);
  const std::string where = file + ":" + std::to_string(line_no);
  if (f.size() != layout.columns.size())
    throw input_error(
        where, "", "expected " + std::to_string(layout.columns.size()) + " columns, found " + std::to_string(f.size()));
  measurement_row r;
  for (std::size_t i = 0; i < f.size(); ++i) {
    const std::size_t c = layout.columns[i];
    const std::string& v = f[i];
    auto integer = [&]() -> std::int64_t {
      std::int64_t x = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (ec != std::errc() || p != v.data() + v.size())
        throw input_error(where, k_columns[c], "expected an integer, got '" + v + "'");
      return x;
    };
    auto real = [&]() -> double {
      char* end = nullptr;
      errno = 0;
      double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || errno != 0)
        throw input_error(where, k_columns[c], "expected a number, got '" + v + "'");
      return x;
    };
    auto one_of = [&](std::initializer_list<const char*> allowed) {
      for (const char* a : allowed)
        if (v == a) return v;
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      throw input_error(where, k_columns[c], "expected one of " + list + ", got '" + v + "'");
    };
    switch (c) {
      case 0:
        r.backend = v;
        break;
      case 1:
        r.device = v;
        break;
      case 2:
        if (const std::optional<modsim::op> o = modsim::find_op(v))
          r.op = *o;
        else
          throw input_error(where, k_columns[c], "unknown op '" + v + "'");
        break;
      case 3:
        r.dtype = v;
        break;
      case 4:
        r.batch = integer();
        break;
      case 5:
        r.seq_len = integer();
        break;
      case 6:
        r.d_model = integer();
        break;
      case 7:
        r.n_heads = integer();
        break;
      case 8:
        r.d_ff = integer();
        break;
      case 9:
        r.capacity = real();
        break;
      case 10:
        r.tokens = integer();
        break;
      case 11:
        r.matmul_flops = integer();
        break;
      case 12:
        r.bytes = integer();
        break;
      case 13:
        r.median_s = real();
        break;
      case 14:
        r.p10_s = real();
        break;
      case 15:
        r.p90_s = real();
        break;
      case 16:
        r.samples = static_cast<int>(integer());
        break;
      case 17:
        r.n_kv_heads = integer();
        break;
      case 18:
        r.mlp = v;
        break;
      case 19:
        r.variant = v;
        break;
      case 20:
        r.experts = static_cast<int>(integer());
        break;
      case 21:
        r.noop_experts = static_cast<int>(integer());
        break;
      case 22:
        r.capacity_factor = real();
        break;
      case 23:
        r.other_flops = integer();
        break;
      case 24:
        r.timing = parse_timing(one_of({"isolated", "in_block"}));
        break;
      case 25:
        r.attention = parse_attention_impl(one_of({"unfused", "fused"}));
        break;
      case 26:
        r.block = v;
        break;
      case 27:
        if (!v.empty()) r.decode_routing = one_of({"sync", "pad", "graph"});
        break;
      case 28:
        r.pad_capacity = real();
        break;
      case 29:
        r.predictor_hidden = integer();
        break;
      case 30:
        r.model = v;
        break;
    }
  }
  if (modsim::is_decode(r.op)) {
    if (r.decode_routing.empty()) r.decode_routing = "sync";
    if (r.op == modsim::op::decode_step && r.model.empty())
      throw input_error(where, "model", "a decode_step row names its model");
  }
  if (r.timing == timing_mode::in_block && r.block != "block_dense" && r.block != "block_mod" &&
      r.block != "layer_mode")
    throw input_error(where, "block",
                      "an in_block row names its block (block_dense, block_mod or layer_mode), got '" + r.block + "'");
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

namespace {

// sim/flops's view of point `p`'s shape; tokens = the block's tokens per sequence.
sim::op_shape op_shape_of(const point& p) {
  const kernels::block_shape& k = p.shape;
  sim::op_shape s;
  s.batch = k.batch;
  s.seq_len = k.seq_len;
  s.tokens = k.block_tokens();
  s.d_model = static_cast<int>(k.d_model);
  s.n_heads = static_cast<int>(k.n_heads);
  s.n_kv_heads = static_cast<int>(k.n_kv_heads);
  s.d_head = static_cast<int>(k.d_head);
  s.d_ff = static_cast<int>(k.d_ff);
  s.mlp = k.mlp == kernels::mlp_kind::swiglu ? sim::mlp_kind::swiglu : sim::mlp_kind::gelu;
  s.elem_bytes = sim::dtype_bytes(p.type);
  s.experts = k.experts;
  s.top_k = 1;
  s.capacity_factor = k.capacity_factor;
  s.noop_experts = k.noop_experts;
  return s;
}

// sim/flops's op list of block op `block` on `p`'s shape.
std::vector<sim::op_cost> costs_of_block(kernels::op block, const point& p) {
  const kernels::block_shape& k = p.shape;
  const sim::op_shape s = op_shape_of(p);
  switch (block) {
    case kernels::op::block_dense:
      return sim::block_costs(block, s);
    case kernels::op::block_mod:
      return sim::block_costs(block, s, k.capacity);
    case kernels::op::layer_mode:
      return sim::block_costs(
          block, s, k.capacity,
          k.variant == kernels::mode_variant::integrated ? sim::mode_variant::integrated : sim::mode_variant::staged);
    default:
      break;
  }
  throw input_error("", "op", std::string(kernels::to_string(block)) + " is not a block");
}

}  // namespace

std::vector<modsim::op> block_ops(const point& p) {
  std::vector<modsim::op> ops;
  for (const sim::op_cost& c : costs_of_block(p.block, p)) ops.push_back(c.op);
  return ops;
}

void fill_costs(const point& p, measurement_row& row) {
  if (kernels::is_decode(p.op)) {
    // The simulator's kernels of this step (FLOPs and bytes do not depend on the times).
    const sim::des::decode_case c = sim::des::decode_case_of(sample_of(p));
    sim::op_cost cost;
    sim::des::decode_kernels(c, p.type, &cost);
    row.tokens = c.batch;
    row.matmul_flops = cost.matmul_flops;
    row.other_flops = cost.other_flops;
    row.bytes = cost.bytes;
    return;
  }
  const kernels::block_shape& k = p.shape;
  const sim::op_shape s = op_shape_of(p);
  sim::op_cost c;
  std::int64_t tokens = k.batch * k.block_tokens();
  switch (p.op) {
    case kernels::op::block_dense:
      c = sim::sum_costs(costs_of_block(p.op, p), p.op);
      tokens = k.batch * k.seq_len;
      break;
    case kernels::op::block_mod:
      c = sim::sum_costs(costs_of_block(p.op, p), p.op);
      tokens = k.batch * k.routed_tokens();
      break;
    case kernels::op::layer_mode:
      c = sim::sum_costs(costs_of_block(p.op, p), p.op);
      break;
    case kernels::op::router:
    case kernels::op::topk:
      c = sim::cost_of(p.op, s);
      tokens = k.batch * k.seq_len;
      break;
    default:
      c = sim::cost_of(p.op, s);
      break;
  }
  row.tokens = tokens;
  row.matmul_flops = c.matmul_flops;
  row.other_flops = c.other_flops;
  row.bytes = c.bytes;
}

measurement_row make_row(const point& p, const std::string& backend, const std::string& device,
                         const sample_stats& stats) {
  measurement_row r;
  r.backend = backend;
  r.device = device;
  r.op = p.op;
  r.dtype = std::string(kernels::to_string(p.type));
  const kernels::block_shape& s = p.shape;
  r.batch = s.batch;
  r.seq_len = s.seq_len;
  r.d_model = s.d_model;
  r.n_heads = s.n_heads;
  r.d_ff = s.d_ff;
  r.capacity = s.capacity;
  r.n_kv_heads = s.n_kv_heads;
  r.mlp = s.mlp == kernels::mlp_kind::swiglu ? "swiglu" : "gelu";
  r.variant = modsim::to_string(s.variant);
  r.experts = s.experts;
  r.noop_experts = s.noop_experts;
  r.capacity_factor = s.variant == kernels::mode_variant::none ? 0.0 : s.capacity_factor;
  r.timing = p.timing;
  if (p.timing == timing_mode::in_block) r.block = std::string(kernels::to_string(p.block));
  r.attention = p.attention;
  if (kernels::is_decode(p.op)) {
    r.decode_routing = p.decode_routing;
    r.pad_capacity = p.pad_capacity;
    r.predictor_hidden = p.predictor_hidden;
    r.model = p.model_name;
  }
  fill_costs(p, r);
  r.median_s = stats.median_s;
  r.p10_s = stats.p10_s;
  r.p90_s = stats.p90_s;
  r.samples = stats.samples;
  return r;
}

measurement_writer::measurement_writer(const std::string& path, bool resume) : m_path(path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (exists && !resume)
    throw input_error(path, "", "already exists; pass --resume to continue it, or choose another --out");
  if (exists) {
    std::vector<measurement_row> rows = read_measurements(path, &m_layout);  // checks the header
    for (const auto& r : rows) {
      m_keys.insert(sim::shape_key(sample_of(r, path)));
      if (m_device.empty()) m_device = r.device;
    }
    m_existing = rows.size();
    // Cut a partial last line left by a killed run, so the next row starts on its own line.
    const auto size = fs::file_size(path, ec);
    std::ifstream in(path, std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto last_nl = content.find_last_of('\n');
    if (!ec && last_nl != std::string::npos && last_nl + 1 < size) fs::resize_file(path, last_nl + 1, ec);
    if (ec) throw input_error(path, "", "cannot repair the partial last line: " + ec.message());
    m_file = std::fopen(path.c_str(), "ab");
  } else {
    m_layout = full_layout();
    m_file = std::fopen(path.c_str(), "wbx");  // x: never clobber a file created meanwhile
    if (m_file) {
      std::fprintf(m_file, "%s\n", csv_header(m_layout).c_str());
      std::fflush(m_file);
    }
  }
  if (!m_file) throw input_error(path, "", std::string("cannot open for writing: ") + std::strerror(errno));
}

measurement_writer::~measurement_writer() {
  if (m_file) std::fclose(m_file);
}

bool measurement_writer::accepts(timing_mode t) const {
  return t == timing_mode::isolated || (m_layout.has("timing") && m_layout.has("block"));
}

void measurement_writer::append(const measurement_row& r) {
  if (!accepts(r.timing))
    throw input_error(m_path, "timing",
                      "the file's header has no timing/block columns (written before they existed): only isolated "
                      "rows can be added; write in_block rows to a new file");
  const std::string line = format_row(r, m_layout) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), m_file) != line.size() || std::fflush(m_file) != 0)
    throw runtime_error(m_path + ": write failed: " + std::strerror(errno));
  m_keys.insert(sim::shape_key(sample_of(r, m_path)));
}

sim::measured_sample sample_of(const measurement_row& r, const std::string& where) {
  sim::measured_sample p;
  p.op = r.op;
  p.type = sim::parse_dtype(r.dtype, where, "dtype");
  p.batch = r.batch;
  p.seq_len = r.seq_len;
  p.d_model = static_cast<int>(r.d_model);
  p.n_heads = static_cast<int>(r.n_heads);
  p.n_kv_heads = static_cast<int>(r.n_kv_heads);
  p.d_ff = static_cast<int>(r.d_ff);
  p.mlp = r.mlp == "swiglu" ? sim::mlp_kind::swiglu : sim::mlp_kind::gelu;
  p.capacity = r.capacity;
  p.variant = r.variant;
  p.experts = r.experts;
  p.noop_experts = r.noop_experts;
  p.capacity_factor = r.capacity_factor;
  p.median_s = r.median_s;
  p.backend = r.backend;
  p.device = r.device;
  p.where = where;
  p.timing = r.timing;
  p.attention = r.attention;
  if (r.timing == timing_mode::in_block) {
    const std::optional<modsim::op> block = modsim::find_op(r.block);
    if (!block) throw input_error(where, "block", "unknown block '" + r.block + "'");
    p.block = *block;
  }
  if (modsim::is_decode(r.op)) {
    p.decode_routing = r.decode_routing.empty() ? "sync" : r.decode_routing;
    p.pad_capacity = r.pad_capacity;
    p.predictor_hidden = static_cast<int>(r.predictor_hidden);
    p.model_name = r.model;
  }
  return p;
}

std::vector<sim::measured_sample> read_measured_samples(const std::string& path) {
  const std::vector<measurement_row> rows = read_measurements(path);
  if (rows.empty()) throw input_error(path, "", "no measurement rows (only a header)");
  std::vector<sim::measured_sample> out;
  out.reserve(rows.size());
  std::map<std::string, std::shared_ptr<const sim::model_spec>> models;  // decode_step rows' models, loaded once
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const measurement_row& r = rows[i];
    const std::string where = path + ":" + std::to_string(i + 2);
    sim::measured_sample p = sample_of(r, where);
    p.key = sim::shape_key(p);
    if (r.op == modsim::op::decode_step) {
      auto& m = models[r.model];
      if (!m) {
        try {
          m = std::make_shared<const sim::model_spec>(sim::load_model(sim::resolve_config(r.model, "models")));
        } catch (const error& e) {
          throw input_error(where, "model", "decode_step row: cannot load model '" + r.model + "': " + e.what());
        }
      }
      p.model = m;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace modsim::profiler
