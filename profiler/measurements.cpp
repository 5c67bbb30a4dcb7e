#include "profiler/measurements.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "profiler/measure.hpp"
#include "sim/error.hpp"
#include "sim/config.hpp"
#include "sim/flops.hpp"
#include "sim/io.hpp"

namespace modsim::profiler {
namespace {

constexpr const char* k_columns[] = {
    "backend", "device",     "op",     "dtype",        "batch",   "seq_len",      "d_model",         "n_heads",
    "d_ff",    "capacity",   "tokens", "matmul_flops", "bytes",   "median_s",     "p10_s",           "p90_s",
    "samples", "n_kv_heads", "mlp",    "variant",      "experts", "noop_experts", "capacity_factor", "other_flops"};
constexpr std::size_t k_column_count = sizeof(k_columns) / sizeof(k_columns[0]);

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

sim::dtype sim_dtype(kernels::dtype t) {
  switch (t) {
    case kernels::dtype::fp32:
      return sim::dtype::fp32;
    case kernels::dtype::bf16:
      return sim::dtype::bf16;
    case kernels::dtype::fp16:
      return sim::dtype::fp16;
  }
  return sim::dtype::fp32;
}

const char* variant_name(kernels::mode_variant v) {
  switch (v) {
    case kernels::mode_variant::none:
      return "none";
    case kernels::mode_variant::staged:
      return "staged";
    case kernels::mode_variant::integrated:
      return "integrated";
  }
  return "none";
}

}  // namespace

const std::string& csv_header() {
  static const std::string header = [] {
    std::string h;
    for (std::size_t i = 0; i < k_column_count; ++i) h += (i ? "," : "") + std::string(k_columns[i]);
    return h;
  }();
  return header;
}

std::string format_row(const measurement_row& r) {
  std::ostringstream s;
  s << sim::csv_field(r.backend) << ',' << sim::csv_field(r.device) << ',' << r.op << ',' << r.dtype << ',' << r.batch
    << ',' << r.seq_len << ',' << r.d_model << ',' << r.n_heads << ',' << r.d_ff << ',' << num(r.capacity) << ','
    << r.tokens << ',' << r.matmul_flops << ',' << r.bytes << ',' << num(r.median_s) << ',' << num(r.p10_s) << ','
    << num(r.p90_s) << ',' << r.samples << ',' << r.n_kv_heads << ',' << r.mlp << ',' << r.variant << ',' << r.experts
    << ',' << r.noop_experts << ',' << num(r.capacity_factor) << ',' << r.other_flops;
  return s.str();
}

measurement_row parse_row(const std::string& line, const std::string& file, int line_no) {
  std::vector<std::string> f = split_csv(line);
  const std::string where = file + ":" + std::to_string(line_no);
  if (f.size() != k_column_count)
    throw input_error(where, "",
                      "expected " + std::to_string(k_column_count) + " columns, found " + std::to_string(f.size()));
  auto integer = [&](std::size_t i) -> std::int64_t {
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(f[i].data(), f[i].data() + f[i].size(), v);
    if (ec != std::errc() || p != f[i].data() + f[i].size())
      throw input_error(where, k_columns[i], "expected an integer, got '" + f[i] + "'");
    return v;
  };
  auto real = [&](std::size_t i) -> double {
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(f[i].c_str(), &end);
    if (f[i].empty() || *end != '\0' || errno != 0)
      throw input_error(where, k_columns[i], "expected a number, got '" + f[i] + "'");
    return v;
  };
  measurement_row r;
  r.backend = f[0];
  r.device = f[1];
  r.op = f[2];
  r.dtype = f[3];
  r.batch = integer(4);
  r.seq_len = integer(5);
  r.d_model = integer(6);
  r.n_heads = integer(7);
  r.d_ff = integer(8);
  r.capacity = real(9);
  r.tokens = integer(10);
  r.matmul_flops = integer(11);
  r.bytes = integer(12);
  r.median_s = real(13);
  r.p10_s = real(14);
  r.p90_s = real(15);
  r.samples = static_cast<int>(integer(16));
  r.n_kv_heads = integer(17);
  r.mlp = f[18];
  r.variant = f[19];
  r.experts = static_cast<int>(integer(20));
  r.noop_experts = static_cast<int>(integer(21));
  r.capacity_factor = real(22);
  r.other_flops = integer(23);
  return r;
}

std::vector<measurement_row> read_measurements(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "", "cannot open file");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<measurement_row> rows;
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
      if (line != csv_header())
        throw input_error(path, "", "header does not match the measurements format (expected: " + csv_header() + ")");
      continue;
    }
    if (line.empty()) continue;
    rows.push_back(parse_row(line, path, line_no));
  }
  if (line_no == 0) throw input_error(path, "", "empty file (no header)");
  return rows;
}

point point_of(const measurement_row& r) {
  point p;
  p.op = kernels::parse_op(r.op);
  p.type = kernels::parse_dtype(r.dtype);
  kernels::block_shape& s = p.shape;
  s.batch = r.batch;
  s.seq_len = r.seq_len;
  s.d_model = r.d_model;
  s.n_heads = r.n_heads;
  s.n_kv_heads = r.n_kv_heads > 0 ? r.n_kv_heads : r.n_heads;
  s.d_head = r.n_heads > 0 ? r.d_model / r.n_heads : 0;
  s.d_ff = r.d_ff;
  s.capacity = r.capacity;
  s.mlp = r.mlp == "swiglu" ? kernels::mlp_kind::swiglu : kernels::mlp_kind::gelu;
  if (r.variant == "staged")
    s.variant = kernels::mode_variant::staged;
  else if (r.variant == "integrated")
    s.variant = kernels::mode_variant::integrated;
  s.experts = r.experts;
  s.noop_experts = r.noop_experts;
  s.capacity_factor = r.capacity_factor;
  return p;
}

void fill_costs(const point& p, measurement_row& row) {
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
  s.elem_bytes = sim::dtype_bytes(sim_dtype(p.type));
  s.experts = k.experts;
  s.top_k = 1;
  s.capacity_factor = k.capacity_factor;
  s.noop_experts = k.noop_experts;
  sim::op_cost c;
  std::int64_t tokens = k.batch * k.block_tokens();
  switch (p.op) {
    case kernels::op::block_dense:
      c = sim::sum_costs(sim::block_costs("block_dense", s));
      tokens = k.batch * k.seq_len;
      break;
    case kernels::op::block_mod:
      c = sim::sum_costs(sim::block_costs("block_mod", s, k.capacity));
      tokens = k.batch * k.routed_tokens();
      break;
    case kernels::op::layer_mode:
      c = sim::sum_costs(sim::block_costs(
          "layer_mode", s, k.capacity,
          k.variant == kernels::mode_variant::integrated ? sim::mode_variant::integrated : sim::mode_variant::staged));
      break;
    case kernels::op::router:
    case kernels::op::topk:
      c = sim::cost_of(kernels::to_string(p.op), s);
      tokens = k.batch * k.seq_len;
      break;
    default:
      c = sim::cost_of(kernels::to_string(p.op), s);
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
  r.op = std::string(kernels::to_string(p.op));
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
  r.variant = variant_name(s.variant);
  r.experts = s.experts;
  r.noop_experts = s.noop_experts;
  r.capacity_factor = s.variant == kernels::mode_variant::none ? 0.0 : s.capacity_factor;
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
    std::vector<measurement_row> rows = read_measurements(path);  // checks the header
    for (const auto& r : rows) {
      m_keys.insert(point_key(point_of(r)));
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
    m_file = std::fopen(path.c_str(), "wbx");  // x: never clobber a file created meanwhile
    if (m_file) {
      std::fprintf(m_file, "%s\n", csv_header().c_str());
      std::fflush(m_file);
    }
  }
  if (!m_file) throw input_error(path, "", std::string("cannot open for writing: ") + std::strerror(errno));
}

measurement_writer::~measurement_writer() {
  if (m_file) std::fclose(m_file);
}

void measurement_writer::append(const measurement_row& r) {
  const std::string line = format_row(r) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), m_file) != line.size() || std::fflush(m_file) != 0)
    throw runtime_error(m_path + ": write failed: " + std::strerror(errno));
  m_keys.insert(point_key(point_of(r)));
}

std::vector<sim::measured_point> read_measured_points(const std::string& path) {
  const std::vector<measurement_row> rows = read_measurements(path);
  if (rows.empty()) throw input_error(path, "", "no measurement rows (only a header)");
  std::vector<sim::measured_point> out;
  out.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const measurement_row& r = rows[i];
    const std::string where = path + ":" + std::to_string(i + 2);
    sim::measured_point p;
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
    p.key = point_key(point_of(r));
    p.where = where;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace modsim::profiler
