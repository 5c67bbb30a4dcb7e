// Fits collectives to nccl-tests' output (sim/parallel/comm_calibrate.hpp).
#include "sim/parallel/comm_calibrate.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <set>
#include <system_error>

#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/common/io.hpp"

namespace modsim::sim {

namespace json = boost::json;

line_fit fit_relative_line(const std::vector<double>& x, const std::vector<double>& t) {
  // Weighted normal equations with weights w_i = 1 / t_i^2.
  double sw = 0, sx = 0, sxx = 0, st = 0, sxt = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = 1.0 / (t[i] * t[i]);
    sw += w;
    sx += w * x[i];
    sxx += w * x[i] * x[i];
    st += w * t[i];
    sxt += w * x[i] * t[i];
  }
  line_fit f;
  const double det = sw * sxx - sx * sx;
  if (det > 0) {
    f.alpha = (sxx * st - sx * sxt) / det;
    f.beta = (sw * sxt - sx * st) / det;
  }
  if (det <= 0 || f.alpha < 0) {  // through the origin
    f.alpha = 0;
    f.beta = sxx > 0 ? sxt / sxx : 0;
  }
  return f;
}

link_class table_link(const nccl_table& t, const interconnect_spec& ic) {
  if (t.nodes > 1) return link_class::inter_node;
  if (t.nodes == 1) return link_class::intra_node;
  return link_for(t.gpus, ic);
}

namespace {

// Every `every`-th row of the file (counting all its rows from 0) from `offset`, then those in
// the size range.
std::vector<const nccl_row*> rows_in_range(const nccl_table& t, const comm_fit_options& o) {
  const std::size_t every = static_cast<std::size_t>(std::max(1, o.every));
  const std::size_t offset = static_cast<std::size_t>(std::max(0, o.offset)) % every;
  std::vector<const nccl_row*> out;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const nccl_row& r = t.rows[i];
    if (i % every == offset && r.bytes >= o.min_bytes && r.bytes <= o.max_bytes && r.bytes > 0) out.push_back(&r);
  }
  return out;
}

collective op_of(const nccl_table& t, const comm_fit_options& o) {
  if (o.op) return *o.op;
  if (t.op) return *t.op;
  throw input_error(t.file, "",
                    "cannot tell which collective this is (no '# Collective test starting' line, and the file name "
                    "names none); name the file after it (e.g. all_reduce_perf.txt) or give --collective");
}

int gpus_of(const nccl_table& t, const comm_fit_options& o) {
  const int g = o.gpus > 0 ? o.gpus : t.gpus;
  if (g < 2)
    throw input_error(
        t.file, "",
        g == 0 ? "cannot tell the GPU count (no '# nThread .. nGpus ..' header or '# Rank' lines); give --gpus"
               : "ran on one GPU; a collective needs at least 2");
  return g;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A line whose time per bus byte goes from beta_lo (sizes <= from) to beta_hi (sizes >= to),
// straight in log2(size) between (to = 0: no ramp, beta_lo = beta_hi).
struct ramp_fit {
  double alpha = 0, beta_lo = 0, beta_hi = 0;
  std::int64_t from = 0, to = 0;
  double ssr = std::numeric_limits<double>::infinity();  // sum of squared relative residuals
};

double ramp_weight(std::int64_t n, std::int64_t from, std::int64_t to) {
  if (to <= 0 || n <= from) return 0;
  if (n >= to) return 1;
  return (std::log2(static_cast<double>(n)) - std::log2(static_cast<double>(from))) /
         (std::log2(static_cast<double>(to)) - std::log2(static_cast<double>(from)));
}

double predict_ramp(const ramp_fit& f, double x, std::int64_t n) {
  const double w = ramp_weight(n, f.from, f.to);
  return f.alpha + x * ((1 - w) * f.beta_lo + w * f.beta_hi);
}

double ssr_of(const ramp_fit& f, const std::vector<double>& x, const std::vector<std::int64_t>& n,
              const std::vector<double>& t) {
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double r = (predict_ramp(f, x[i], n[i]) - t[i]) / t[i];
    s += r * r;
  }
  return s;
}

// Solves the k x k system a z = b (k <= 3) by Gaussian elimination; false when singular.
bool solve(double a[3][3], double b[3], int k, double z[3]) {
  for (int c = 0; c < k; ++c) {
    int p = c;
    for (int r = c + 1; r < k; ++r)
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    if (std::abs(a[p][c]) < 1e-300) return false;
    std::swap(a[p], a[c]);
    std::swap(b[p], b[c]);
    for (int r = c + 1; r < k; ++r) {
      const double m = a[r][c] / a[c][c];
      for (int j = c; j < k; ++j) a[r][j] -= m * a[c][j];
      b[r] -= m * b[c];
    }
  }
  for (int c = k - 1; c >= 0; --c) {
    double v = b[c];
    for (int j = c + 1; j < k; ++j) v -= a[c][j] * z[j];
    z[c] = v / a[c][c];
  }
  return true;
}

// The ramp from `from` to `to` fitted by weighted least squares (weights 1 / t^2) on
// t = alpha + beta_lo x (1 - w) + beta_hi x w; alpha >= 0 (else through the origin), and the
// bandwidth may not fall with the size (beta_hi <= beta_lo), else no fit (ssr infinite).
ramp_fit fit_ramp(const std::vector<double>& x, const std::vector<std::int64_t>& n, const std::vector<double>& t,
                  std::int64_t from, std::int64_t to) {
  ramp_fit f;
  f.from = from;
  f.to = to;
  for (int with_alpha = 1; with_alpha >= 0; --with_alpha) {
    const int k = with_alpha ? 3 : 2;
    double a[3][3] = {}, b[3] = {}, z[3] = {};
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double w = ramp_weight(n[i], from, to);
      const double feat3[3] = {1.0, x[i] * (1 - w), x[i] * w};
      const double* feat = with_alpha ? feat3 : feat3 + 1;
      const double wt = 1.0 / (t[i] * t[i]);
      for (int r = 0; r < k; ++r) {
        for (int c = 0; c < k; ++c) a[r][c] += wt * feat[r] * feat[c];
        b[r] += wt * feat[r] * t[i];
      }
    }
    if (!solve(a, b, k, z)) continue;
    f.alpha = with_alpha ? z[0] : 0.0;
    f.beta_lo = with_alpha ? z[1] : z[0];
    f.beta_hi = with_alpha ? z[2] : z[1];
    if (with_alpha && f.alpha < 0) continue;
    if (!(f.beta_hi > 0) || f.beta_hi > f.beta_lo) break;
    f.ssr = ssr_of(f, x, n, t);
    return f;
  }
  f.ssr = std::numeric_limits<double>::infinity();
  return f;
}

}  // namespace

collective_fit fit_nccl_table(const nccl_table& t, const interconnect_spec& ic, const comm_fit_options& o) {
  const collective op = op_of(t, o);
  const int gpus = gpus_of(t, o);
  const std::vector<const nccl_row*> rows = rows_in_range(t, o);
  std::set<std::int64_t> sizes;
  for (const nccl_row* r : rows) sizes.insert(r->bytes);
  if (sizes.size() < 2)
    throw input_error(t.file, "",
                      "fewer than two distinct sizes to fit (" + std::to_string(rows.size()) + " rows in range)");
  const double factor = busbw_factor(op, gpus);
  std::vector<double> x, y;
  std::vector<std::int64_t> n;
  for (const nccl_row* r : rows) {
    x.push_back(static_cast<double>(r->bytes) * factor);
    y.push_back(r->time_s);
    n.push_back(r->bytes);
  }
  line_fit f;
  if (o.floor_s) {
    // alpha given: minimise sum ((alpha + x_i beta - t_i) / t_i)^2 over beta alone.
    double num = 0, den = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      num += (x[i] / y[i]) * (1 - *o.floor_s / y[i]);
      den += (x[i] / y[i]) * (x[i] / y[i]);
    }
    f.alpha = *o.floor_s;
    f.beta = den > 0 ? num / den : 0;
    if (!(f.beta > 0))
      throw input_error(t.file, "",
                        "with the floor given, the times leave no bandwidth to fit (every row at or below the floor)");
  } else {
    f = fit_relative_line(x, y);
  }
  if (!(f.beta > 0)) throw input_error(t.file, "", "the times do not grow with the size: no bandwidth to fit");
  ramp_fit best;
  best.alpha = f.alpha;
  best.beta_lo = best.beta_hi = f.beta;
  best.ssr = ssr_of(best, x, n, y);
  // A saturating bandwidth (a ramp between two of the sizes) when there are enough sizes to
  // tell it from the line, the line is off by more than 0.1 % rms, and the ramp halves the
  // squared error.
  if (!o.floor_s && sizes.size() >= k_min_sizes_for_ramp &&
      std::sqrt(best.ssr / static_cast<double>(x.size())) > 1e-3) {
    const ramp_fit line = best;
    for (auto a = sizes.begin(); a != sizes.end(); ++a)
      for (auto b = std::next(a); b != sizes.end(); ++b) {
        const ramp_fit r = fit_ramp(x, n, y, *a, *b);
        if (r.ssr < best.ssr) best = r;
      }
    if (!(best.ssr < 0.5 * line.ssr)) best = line;
  }
  collective_fit out;
  out.collective = to_string(op);
  out.gpus = gpus;
  out.link = to_string(t.nodes > 1    ? link_class::inter_node
                       : t.nodes == 1 ? link_class::intra_node
                                      : link_for(gpus, ic));
  out.alpha_s = best.alpha;
  out.floor_source = o.floor_s ? "given" : "fitted";
  out.bus_bytes_s = 1.0 / best.beta_hi;
  if (best.to > 0) {
    out.ramp_bus_bytes_s = 1.0 / best.beta_lo;
    out.ramp_from_bytes = best.from;
    out.ramp_to_bytes = best.to;
  }
  out.points = static_cast<int>(rows.size());
  out.min_bytes = *sizes.begin();
  out.max_bytes = *sizes.rbegin();
  out.file = t.file;
  std::vector<double> all, below, from;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = std::abs((predict_ramp(best, x[i], n[i]) - y[i]) / y[i]) * 100;
    all.push_back(e);
    (n[i] < k_one_mib ? below : from).push_back(e);
  }
  out.median_abs_pct_error = median_of(all);
  if (!below.empty()) {
    out.below_1mib_median_abs_pct_error = median_of(below);
    out.below_1mib_max_abs_pct_error = *std::max_element(below.begin(), below.end());
  }
  if (!from.empty()) out.from_1mib_median_abs_pct_error = median_of(from);
  return out;
}

std::vector<comm_check_row> check_nccl_table(const nccl_table& t, const hardware_spec& hw, const comm_fit_options& o) {
  comm_request req;
  req.op = op_of(t, o);
  req.gpus = gpus_of(t, o);
  std::vector<comm_check_row> out;
  for (const nccl_row* r : rows_in_range(t, o)) {
    req.bytes = r->bytes;
    const comm_prediction p = predict_collective(hw, req);
    comm_check_row c;
    c.bytes = r->bytes;
    c.measured_s = r->time_s;
    c.predicted_s = p.time_s;
    c.pct_error = 100.0 * (p.time_s - r->time_s) / r->time_s;
    out.push_back(c);
  }
  return out;
}

double median_abs_pct_error(const std::vector<comm_check_row>& rows) {
  std::vector<double> e;
  for (const comm_check_row& r : rows) e.push_back(std::abs(r.pct_error));
  return median_of(e);
}

json::object collective_fit_json(const collective_fit& f) {
  json::object j;
  j["collective"] = f.collective;
  j["link"] = f.link;
  j["gpus"] = f.gpus;
  j["alpha_s"] = f.alpha_s;
  j["floor_source"] = f.floor_source;
  j["bus_bytes_s"] = f.bus_bytes_s;
  if (f.ramp_to_bytes > 0) {
    j["ramp_bus_bytes_s"] = f.ramp_bus_bytes_s;
    j["ramp_from_bytes"] = f.ramp_from_bytes;
    j["ramp_to_bytes"] = f.ramp_to_bytes;
  }
  j["points"] = f.points;
  j["min_bytes"] = f.min_bytes;
  j["max_bytes"] = f.max_bytes;
  j["median_abs_pct_error"] = f.median_abs_pct_error;
  if (f.below_1mib_median_abs_pct_error) j["below_1mib_median_abs_pct_error"] = *f.below_1mib_median_abs_pct_error;
  if (f.below_1mib_max_abs_pct_error) j["below_1mib_max_abs_pct_error"] = *f.below_1mib_max_abs_pct_error;
  if (f.from_1mib_median_abs_pct_error) j["from_1mib_median_abs_pct_error"] = *f.from_1mib_median_abs_pct_error;
  j["file"] = f.file;
  return j;
}

void write_comm_calibrated_hardware(const std::string& hardware_path, const std::vector<collective_fit>& fits,
                                    const std::string& source, const std::string& date, const std::string& out_path) {
  // Parse it strictly first: a broken hardware file is reported as such.
  const hardware_spec hw = load_hardware(hardware_path);
  if (!hw.interconnect)
    throw input_error(hardware_path, "interconnect",
                      "absent: the calibration goes into the interconnect object (gpus_per_node, intra_node, ...)");
  json::value v = json::parse(read_text_file(hardware_path));
  json::object& o = v.as_object();
  if (auto* name = o.if_contains("name"); name && name->is_string()) {
    std::string n(name->as_string());
    const std::string suffix = "-calibrated";
    if (n.size() < suffix.size() || n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0) n += suffix;
    *name = n;
  }
  json::array arr;
  for (const collective_fit& f : fits) {
    arr.push_back(collective_fit_json(f));
  }
  json::object cal;
  cal["source"] = source;
  cal["date"] = date;
  cal["fits"] = std::move(arr);
  o["interconnect"].as_object()["calibration"] = std::move(cal);

  namespace fs = std::filesystem;
  fs::path dir = fs::path(out_path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw input_error(out_path, "", "folder does not exist");
  write_file_atomically(out_path, pretty_json(v) + "\n");
}

}  // namespace modsim::sim
