#include "sim/calibrate.hpp"

#include <algorithm>
#include <cctype>
#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#include "sim/config.hpp"
#include "sim/error.hpp"
#include "sim/kernel_fit.hpp"

namespace modsim::sim {

namespace json = boost::json;

// ------------------------------------------------------------------------------------------
// Samples
// ------------------------------------------------------------------------------------------

calibration_sample sample_of(const measured_point& p) {
  auto bad = [&](const std::string& key, const std::string& reason) { return input_error(p.where, key, reason); };
  if (p.batch < 1) throw bad("batch", "must be >= 1");
  if (p.seq_len < 1) throw bad("seq_len", "must be >= 1");
  if (p.d_model < 1) throw bad("d_model", "must be >= 1");
  if (p.n_heads < 1 || p.d_model % p.n_heads != 0) throw bad("n_heads", "must divide d_model");
  if (p.d_ff < 1) throw bad("d_ff", "must be >= 1");
  if (!(p.capacity > 0 && p.capacity <= 1)) throw bad("capacity", "must be in (0, 1]");
  if (!(p.median_s > 0) || !std::isfinite(p.median_s)) throw bad("median_s", "must be > 0");
  calibration_sample s;
  s.op = p.op;
  s.type = p.type;
  s.capacity = p.capacity;
  s.measured_s = p.median_s;
  s.backend = p.backend;
  s.device = p.device;
  s.key = p.key;
  s.where = p.where;
  s.timing = p.timing;
  s.attention = p.attention;
  if (p.variant == "integrated")
    s.variant = mode_variant::integrated;
  else if (p.variant == "staged")
    s.variant = mode_variant::staged;
  else if (p.variant == "none" || p.variant.empty())
    s.variant = mode_variant::staged;
  else
    throw bad("variant", "unknown variant '" + p.variant + "' (expected none, staged or integrated)");
  op_shape& x = s.shape;
  x.batch = p.batch;
  x.seq_len = p.seq_len;
  x.d_model = p.d_model;
  x.n_heads = p.n_heads;
  x.n_kv_heads = p.n_kv_heads > 0 ? p.n_kv_heads : p.n_heads;
  x.d_head = p.d_model / p.n_heads;
  x.d_ff = p.d_ff;
  x.mlp = p.mlp;
  x.elem_bytes = dtype_bytes(p.type);
  x.experts = p.experts;
  x.top_k = 1;
  x.capacity_factor = std::max(0.0, p.capacity_factor);
  x.noop_experts = p.noop_experts;
  x.tokens = p.variant == "integrated" ? p.seq_len : routed_tokens(p.capacity, p.seq_len);
  try {
    if (s.is_block()) {
      if (p.op == "block_dense") x.tokens = p.seq_len;
      s.cost = sum_costs(block_costs(p.op, x, p.capacity, s.variant));
      s.cost.op = p.op;
    } else {
      s.cost = cost_of(p.op, x);
    }
  } catch (const error& e) {
    throw bad("op", e.what());
  }
  return s;
}

kernel_row kernel_row_of(const calibration_sample& s) {
  kernel_row r;
  r.type = s.type;
  r.measured_s = s.measured_s;
  try {
    if (s.is_block()) {
      const op_shape x = block_op_shape(s.op, s.shape, s.capacity, s.variant);
      for (const op_cost& c : block_costs(s.op, s.shape, s.capacity, s.variant)) {
        const std::vector<kernel_work> k = gpu_kernels(c.op, x);
        r.kernels.insert(r.kernels.end(), k.begin(), k.end());
      }
      r.timing = kernel_row::kind::block;
      r.weight = 3;
    } else {
      r.kernels = gpu_kernels(s.op, s.shape);
      r.timing = s.timing == "in_block" ? kernel_row::kind::in_block_op : kernel_row::kind::isolated_op;
    }
  } catch (const error& e) {
    throw input_error(s.where, "op", e.what());
  }
  return r;
}

block_prediction predict_sample(const calibration_sample& s, const cost_model& model) {
  block_prediction b;
  if (const std::optional<dtype> kt = model.kernel_model_dtype(s.type)) {
    kernel_row r = kernel_row_of(s);
    r.type = *kt;
    const kernel_params& p = *model.kernel_model();
    for (const kernel_work& k : r.kernels) b.ops_s += kernel_device_s(k, r.type, p, model.hardware(), true);
    b.kernels = static_cast<int>(r.kernels.size());
    b.total_s = predict_row(r, p, model.hardware());
    b.overhead_s = b.total_s - b.ops_s;
    return b;
  }
  if (!s.is_block()) {
    const op_time t = model.time_of(s.cost, s.shape, s.type);
    // An op row is the op measured alone: no launch overhead, no in-layer refetch.
    b.ops_s = t.isolated_s;
    b.kernels = t.kernels;
    b.total_s = b.ops_s;
    return b;
  }
  for (const op_cost& c : block_costs(s.op, s.shape, s.capacity, s.variant)) {
    const op_time t = model.time_of(c, s.shape, s.type);
    b.ops_s += t.time_s;
    b.kernels += t.kernels;
  }
  b.overhead_s = b.kernels * model.launch_s();
  b.total_s = b.ops_s + b.overhead_s;
  return b;
}

// ------------------------------------------------------------------------------------------
// Least squares
// ------------------------------------------------------------------------------------------

namespace {

using matrix = std::vector<std::vector<double>>;

// Solves min ||A x − b||² over the columns in `active` (others fixed at 0): columns scaled
// to unit norm (the intercept and the g columns differ by orders of magnitude), then
// Householder QR; a column dependent on the previous ones gets 0.
std::vector<double> least_squares(const matrix& A, const std::vector<double>& b, const std::vector<bool>& active) {
  const std::size_t n = active.size();
  const std::size_t rows = A.size();
  std::vector<std::size_t> cols;
  for (std::size_t j = 0; j < n; ++j)
    if (active[j]) cols.push_back(j);
  const std::size_t m = cols.size();
  std::vector<double> x(n, 0.0);
  if (m == 0 || rows == 0) return x;
  // Q·R in place, column-major copy of the active columns.
  std::vector<std::vector<double>> R(m, std::vector<double>(rows));
  std::vector<double> scale(m, 1.0);
  for (std::size_t p = 0; p < m; ++p) {
    double norm = 0;
    for (std::size_t i = 0; i < rows; ++i) norm += A[i][cols[p]] * A[i][cols[p]];
    norm = std::sqrt(norm);
    scale[p] = norm > 0 ? 1.0 / norm : 1.0;
    for (std::size_t i = 0; i < rows; ++i) R[p][i] = A[i][cols[p]] * scale[p];
  }
  std::vector<double> y = b;
  std::vector<double> diag(m, 0.0);
  std::vector<bool> dependent(m, false);
  for (std::size_t p = 0; p < m && p < rows; ++p) {
    double norm = 0;
    for (std::size_t i = p; i < rows; ++i) norm += R[p][i] * R[p][i];
    norm = std::sqrt(norm);
    if (norm < 1e-10) {  // unit-norm columns: this one lies in the span of the previous ones
      dependent[p] = true;
      continue;
    }
    const double alpha = R[p][p] > 0 ? -norm : norm;
    std::vector<double> v(rows, 0.0);
    for (std::size_t i = p; i < rows; ++i) v[i] = R[p][i];
    v[p] -= alpha;
    double vv = 0;
    for (std::size_t i = p; i < rows; ++i) vv += v[i] * v[i];
    if (vv == 0) {
      diag[p] = R[p][p];
      continue;
    }
    for (std::size_t q = p; q < m; ++q) {
      double dot = 0;
      for (std::size_t i = p; i < rows; ++i) dot += v[i] * R[q][i];
      const double f = 2 * dot / vv;
      for (std::size_t i = p; i < rows; ++i) R[q][i] -= f * v[i];
    }
    double dot = 0;
    for (std::size_t i = p; i < rows; ++i) dot += v[i] * y[i];
    const double f = 2 * dot / vv;
    for (std::size_t i = p; i < rows; ++i) y[i] -= f * v[i];
    diag[p] = R[p][p];
  }
  std::vector<double> z(m, 0.0);
  for (std::size_t pp = m; pp-- > 0;) {
    if (dependent[pp] || pp >= rows || diag[pp] == 0) continue;
    double s = y[pp];
    for (std::size_t q = pp + 1; q < m; ++q) s -= R[q][pp] * z[q];
    z[pp] = s / diag[pp];
  }
  for (std::size_t p = 0; p < m; ++p) x[cols[p]] = z[p] * scale[p];
  return x;
}

// Non-negative least squares for a handful of unknowns: solve, drop the most negative
// unknown (fix it at 0), repeat.
std::vector<double> nonnegative_least_squares(const matrix& A, const std::vector<double>& b) {
  const std::size_t n = A.empty() ? 0 : A.front().size();
  std::vector<bool> active(n, true);
  for (;;) {
    std::vector<double> x = least_squares(A, b, active);
    std::size_t worst = n;
    for (std::size_t j = 0; j < n; ++j)
      if (active[j] && x[j] < 0 && (worst == n || x[j] < x[worst])) worst = j;
    if (worst == n) return x;
    active[worst] = false;
  }
}

// Hat functions of the knots at x (clamped beyond the ends).
std::vector<double> hats(const std::vector<double>& knots, double x) {
  std::vector<double> phi(knots.size(), 0.0);
  if (knots.size() == 1 || x <= knots.front()) {
    phi.front() = 1;
    return phi;
  }
  if (x >= knots.back()) {
    phi.back() = 1;
    return phi;
  }
  std::size_t j = 1;
  while (j + 1 < knots.size() && x > knots[j]) ++j;
  const double w = (x - knots[j - 1]) / (knots[j] - knots[j - 1]);
  phi[j - 1] = 1 - w;
  phi[j] = w;
  return phi;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

efficiency_curve fit_curve(const std::string& op, dtype type, const std::vector<double>& roofline_s,
                           const std::vector<double>& measured_s, const fit_options& options,
                           const std::vector<double>& quantised_s) {
  if (roofline_s.empty() || roofline_s.size() != measured_s.size() ||
      (!quantised_s.empty() && quantised_s.size() != roofline_s.size()))
    throw input_error("", op, "fit_curve needs as many roofline as measured times, at least one");
  const std::size_t n = roofline_s.size();
  const std::vector<double>& q = quantised_s.empty() ? roofline_s : quantised_s;
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!(roofline_s[i] > 0) || !(measured_s[i] > 0))
      throw input_error("", op, "fit_curve needs positive roofline and measured times");
    x[i] = std::log10(roofline_s[i]);
  }
  // Knots at quantiles of the distinct x (closer than 0.02 decades count as one).
  std::vector<double> xs = x;
  std::sort(xs.begin(), xs.end());
  std::vector<double> distinct;
  for (double v : xs)
    if (distinct.empty() || v - distinct.back() > 0.02) distinct.push_back(v);
  const int k = std::max(1, std::min<int>(options.max_knots, static_cast<int>(distinct.size() + 1) / 2));
  std::vector<double> knots;
  if (k == 1) {
    knots.push_back(distinct.front());
  } else {
    for (int j = 0; j < k; ++j) {
      const double pos = double(j) * double(xs.size() - 1) / double(k - 1);
      const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
      const std::size_t hi = std::min(lo + 1, xs.size() - 1);
      const double v = xs[lo] + (pos - double(lo)) * (xs[hi] - xs[lo]);
      if (knots.empty() || v - knots.back() > 0.02) knots.push_back(v);
    }
    if (knots.back() < xs.back() - 1e-12) knots.back() = xs.back();
  }
  const std::size_t K = knots.size();

  std::vector<double> ratio(n);
  for (std::size_t i = 0; i < n; ++i) ratio[i] = measured_s[i] / q[i];
  const double g_ref = median_of(ratio);
  double t_min = measured_s.front();
  for (double t : measured_s) t_min = std::min(t_min, t);

  std::vector<double> weight(n, 1.0);
  std::vector<double> theta;
  for (int iter = 0; iter <= options.huber_iterations; ++iter) {
    matrix A;
    std::vector<double> b;
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<double> row(K + 1, 0.0);
      const double w = weight[i] / measured_s[i];
      row[0] = w;
      const std::vector<double> phi = hats(knots, x[i]);
      for (std::size_t j = 0; j < K; ++j) row[j + 1] = w * q[i] * phi[j];
      A.push_back(std::move(row));
      b.push_back(weight[i]);
    }
    // Smoothness: second differences of g (per unit of log-work spacing).
    for (std::size_t j = 1; j + 1 < K; ++j) {
      std::vector<double> row(K + 1, 0.0);
      const double h1 = knots[j] - knots[j - 1], h2 = knots[j + 1] - knots[j];
      // s · ((g[j+1] − g[j])/h2 − (g[j] − g[j−1])/h1) · (h1 + h2)/2, relative to g_ref.
      const double s = options.smoothing * std::sqrt(double(n)) / g_ref * 0.5 * (h1 + h2);
      row[j] = s / h1;  // column 0 is fixed_s, g_j is column j + 1
      row[j + 1] = -s * (1 / h1 + 1 / h2);
      row[j + 2] = s / h2;
      A.push_back(std::move(row));
      b.push_back(0.0);
    }
    // A tiny ridge on fixed_s keeps it determined when all shapes are alike.
    {
      std::vector<double> row(K + 1, 0.0);
      row[0] = 1e-3 / t_min;
      A.push_back(std::move(row));
      b.push_back(0.0);
    }
    theta = nonnegative_least_squares(A, b);
    if (iter == options.huber_iterations) break;
    // Huber weights from the relative residuals.
    std::vector<double> res(n), absres(n);
    for (std::size_t i = 0; i < n; ++i) {
      double pred = theta[0];
      const std::vector<double> phi = hats(knots, x[i]);
      for (std::size_t j = 0; j < K; ++j) pred += q[i] * phi[j] * theta[j + 1];
      res[i] = (pred - measured_s[i]) / measured_s[i];
      absres[i] = std::abs(res[i]);
    }
    const double mad = median_of(absres);
    const double c = std::max(1.5 * 1.4826 * mad, 0.02);
    for (std::size_t i = 0; i < n; ++i) weight[i] = absres[i] <= c ? 1.0 : std::sqrt(c / absres[i]);
  }

  efficiency_curve curve;
  curve.op = op;
  curve.type = type;
  curve.fixed_s = theta[0];
  curve.log10_work = knots;
  curve.inv_efficiency.assign(theta.begin() + 1, theta.end());
  curve.samples = static_cast<int>(n);
  double sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double pred = curve.time_s(roofline_s[i], q[i]);
    const double r = (pred - measured_s[i]) / measured_s[i];
    sq += r * r;
  }
  curve.rms_rel_error = std::sqrt(sq / double(n));
  return curve;
}

// ------------------------------------------------------------------------------------------
// The whole calibration
// ------------------------------------------------------------------------------------------

namespace {
// The GPU model tokens of a device string: a letter and three digits standing alone ("h100",
// "a100", "h200"), lower-cased.
std::vector<std::string> model_tokens(std::string_view device) {
  std::vector<std::string> out;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t i = 0; i + 4 <= device.size(); ++i) {
    if (i > 0 && alnum(device[i - 1])) continue;
    if (!std::isalpha(static_cast<unsigned char>(device[i]))) continue;
    bool digits = true;
    for (std::size_t j = 1; j < 4; ++j) digits = digits && std::isdigit(static_cast<unsigned char>(device[i + j]));
    if (!digits || (i + 4 < device.size() && std::isdigit(static_cast<unsigned char>(device[i + 4])))) continue;
    std::string t(device.substr(i, 4));
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.push_back(t);
  }
  return out;
}
}  // namespace

calibration fit_calibration(const hardware_spec& hw, const std::vector<calibration_sample>& samples,
                            std::vector<calibration_source> sources, const std::string& date,
                            const fit_options& options) {
  const std::string hw_file = hw.source_file.empty() ? hw.name : hw.source_file;
  if (samples.empty()) throw input_error("", "--measurements", "no measured rows to calibrate on");
  const calibration_sample& first = samples.front();
  const std::string expected_backend = hw.kind == "gpu" ? "cuda" : "cpu";
  for (const auto& s : samples) {
    if (!same_device_model(s.device, first.device))
      throw input_error(s.where, "device",
                        "measurements from two devices ('" + first.device + "' at " + first.where + " and '" +
                            s.device + "'); calibrate on one device at a time");
    if (!s.backend.empty() && s.backend != expected_backend)
      throw input_error(s.where, "backend",
                        "rows from backend '" + s.backend + "' cannot calibrate " + hw.kind + " hardware '" + hw.name +
                            "' (" + hw_file + ")");
  }

  // A GPU hardware file names its model (h100-sxm, h200): rows from another GPU model
  // cannot calibrate it (an H100's efficiencies say little about an H200).
  if (hw.kind == "gpu") {
    const std::vector<std::string> on_device = model_tokens(first.device);
    for (const std::string& t : model_tokens(hw.name))
      if (std::find(on_device.begin(), on_device.end(), t) == on_device.end())
        throw input_error(first.where, "device",
                          "rows measured on '" + first.device + "' cannot calibrate hardware '" + hw.name + "' (" +
                              hw_file + "); use the hardware file of that device");
  }

  calibration c;
  c.date = date;
  c.device = first.device;
  c.backend = first.backend;
  c.sources = std::move(sources);
  c.peak_matmul_fp32 = hw.peak_matmul_flops.fp32;
  c.peak_matmul_bf16 = hw.peak_matmul_flops.bf16;
  c.peak_matmul_fp16 = hw.peak_matmul_flops.fp16;
  c.peak_vector_fp32 = hw.peak_vector_flops.fp32;
  c.peak_vector_bf16 = hw.peak_vector_flops.bf16;
  c.peak_vector_fp16 = hw.peak_vector_flops.fp16;
  c.memory_bandwidth_bytes_s = hw.memory_bandwidth_bytes_s;

  // A GPU: the kernel-sequence model, fitted on every row (isolated ops, in-block ops and
  // blocks alike).
  if (hw.kind == "gpu") {
    std::vector<kernel_row> rows;
    std::vector<std::string> keys;
    int blocks = 0;
    for (const auto& s : samples) {
      rows.push_back(kernel_row_of(s));
      if (std::find(c.kernel_dtypes.begin(), c.kernel_dtypes.end(), s.type) == c.kernel_dtypes.end())
        c.kernel_dtypes.push_back(s.type);
      if (s.is_block()) {
        ++blocks;
        keys.push_back(s.key);
      }
    }
    const kernel_fit_result fit = fit_kernel_params(hw, rows);
    c.format = 2;
    c.kernels = fit.params;
    c.launch_s = fit.params.gap_s;
    c.launch_blocks = blocks;
    c.launch_source = "kernel-sequence model fitted on " + std::to_string(rows.size()) + " rows (" +
                      std::to_string(blocks) + " blocks): gap_s between kernels, host_s per enqueue";
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    c.block_keys = std::move(keys);
    return c;
  }

  hardware_spec plain = hw;
  plain.calibration_json.clear();
  const cost_model roofline(plain);

  struct group {
    std::vector<double> roof, quant, meas;
  };
  // An op measured inside its block (timing in_block) is fitted on those rows only: they are
  // what the op costs in a layer, so no in-layer refetch term is fitted on top of them.
  std::set<std::pair<std::string, int>> in_block_ops;
  for (const auto& s : samples)
    if (!s.is_block() && s.timing == "in_block") in_block_ops.insert({s.op, static_cast<int>(s.type)});
  const bool all_in_block = [&] {
    for (const auto& s : samples)
      if (!s.is_block() && !in_block_ops.count({s.op, static_cast<int>(s.type)})) return false;
    return !in_block_ops.empty();
  }();
  std::map<std::pair<std::string, int>, group> groups;
  for (const auto& s : samples) {
    if (s.is_block()) continue;
    if (s.timing != "in_block" && in_block_ops.count({s.op, static_cast<int>(s.type)})) continue;
    const op_time t = roofline.time_of(s.cost, s.shape, s.type);
    if (!(t.roofline_s > 0)) continue;
    group& g = groups[{s.op, static_cast<int>(s.type)}];
    g.roof.push_back(t.roofline_s);
    g.quant.push_back(std::max(t.compute_s * t.waves, t.memory_s));
    g.meas.push_back(s.measured_s);
  }
  if (groups.empty())
    throw input_error(first.where, "op", "no single-op rows (only blocks): nothing to fit the per-op curves on");
  for (const auto& [key, g] : groups)
    c.curves.push_back(fit_curve(key.first, static_cast<dtype>(key.second), g.roof, g.meas, options, g.quant));

  // Launch overhead and in-layer refetch cost from the blocks:
  //   measured_i − ops_i ≈ kernels_i · launch_s + bytes_i · in_layer_s_per_byte
  // (relative least squares, both ≥ 0); with fewer than 3 blocks launch_s is the median
  // per-kernel gap and in_layer_s_per_byte 0.
  c.launch_s = hw.kernel_launch_s;
  c.launch_source = "hardware file (no block rows to fit it on)";
  std::vector<double> ops_s, kernels, bytes, measured;
  std::vector<std::string> keys;
  if (options.launch_from_blocks) {
    calibration no_launch = c;
    no_launch.launch_s = 0;
    const cost_model fitted = with_calibration(plain, no_launch);
    for (const auto& s : samples) {
      if (!s.is_block()) continue;
      const block_prediction p = predict_sample(s, fitted);
      if (p.kernels <= 0 || !(p.ops_s > 0)) continue;
      ops_s.push_back(p.ops_s);
      kernels.push_back(p.kernels);
      bytes.push_back(double(s.cost.bytes));
      measured.push_back(s.measured_s);
      keys.push_back(s.key);
    }
  }
  if (!measured.empty()) {
    const std::size_t n = measured.size();
    std::ostringstream src;
    if (n >= 3 && options.fit_in_layer_bytes && !all_in_block) {
      matrix A;
      std::vector<double> b;
      for (std::size_t i = 0; i < n; ++i) {
        A.push_back({kernels[i] / measured[i], bytes[i] / measured[i]});
        b.push_back(1.0 - ops_s[i] / measured[i]);
      }
      const std::vector<double> x = nonnegative_least_squares(A, b);
      c.launch_s = x[0];
      c.in_layer_s_per_byte = x[1];
      src << "least squares over " << n
          << " measured blocks: block - sum of its predicted ops = kernels x launch_s + bytes x in_layer_s_per_byte";
    } else {
      std::vector<double> per_kernel;
      for (std::size_t i = 0; i < n; ++i) per_kernel.push_back((measured[i] - ops_s[i]) / kernels[i]);
      const double m = median_of(per_kernel);
      c.in_layer_s_per_byte = 0;
      c.launch_s = std::max(0.0, m);
      src << "median per-kernel gap between " << n << " measured blocks and the sum of their predicted ops";
      if (all_in_block) src << " (ops fitted on in-block rows: no in-layer refetch term)";
      if (m < 0) src << " (negative, " << m << " s: blocks ran faster than their ops apart; clamped to 0)";
    }
    c.launch_blocks = static_cast<int>(n);
    c.launch_source = src.str();
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    c.block_keys = std::move(keys);
  }
  return c;
}

// ------------------------------------------------------------------------------------------
// Output
// ------------------------------------------------------------------------------------------

namespace {

void pretty(std::ostream& out, const json::value& v, int indent) {
  const std::string pad(indent, ' ');
  switch (v.kind()) {
    case json::kind::object: {
      const auto& o = v.as_object();
      if (o.empty()) {
        out << "{}";
        return;
      }
      // Small objects of scalars on one line (knots, rates).
      bool flat = o.size() <= 4;
      for (const auto& kv : o)
        if (kv.value().is_structured() || (kv.value().is_string() && kv.value().as_string().size() > 40)) flat = false;
      if (flat) {
        out << "{ ";
        bool first = true;
        for (const auto& kv : o) {
          if (!first) out << ", ";
          first = false;
          out << json::serialize(json::value(kv.key())) << ": ";
          pretty(out, kv.value(), indent);
        }
        out << " }";
        return;
      }
      out << "{\n";
      bool first = true;
      for (const auto& kv : o) {
        if (!first) out << ",\n";
        first = false;
        out << pad << "  " << json::serialize(json::value(kv.key())) << ": ";
        pretty(out, kv.value(), indent + 2);
      }
      out << "\n" << pad << "}";
      return;
    }
    case json::kind::array: {
      const auto& a = v.as_array();
      if (a.empty()) {
        out << "[]";
        return;
      }
      out << "[\n";
      for (std::size_t i = 0; i < a.size(); ++i) {
        out << pad << "  ";
        pretty(out, a[i], indent + 2);
        out << (i + 1 < a.size() ? ",\n" : "\n");
      }
      out << pad << "]";
      return;
    }
    case json::kind::double_: {
      // Shortest text that reads back to the same double ("3.328e+11", not "3.328E11").
      const double d = v.as_double();
      char buf[40];
      for (int precision = 15; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, d);
        if (std::strtod(buf, nullptr) == d) break;
      }
      std::string t(buf);
      if (t.find_first_of(".eEn") == std::string::npos) t += ".0";  // keep it a floating-point number
      out << t;
      return;
    }
    default:
      out << json::serialize(v);
  }
}

}  // namespace

void write_calibrated_hardware(const std::string& hardware_path, const calibration& c, const std::string& out_path) {
  namespace fs = std::filesystem;
  const std::string text = read_text_file(hardware_path);
  json::value v;
  try {
    v = json::parse(text);
  } catch (const std::exception& e) {
    throw input_error(hardware_path, "", std::string("malformed JSON: ") + e.what());
  }
  if (!v.is_object()) throw input_error(hardware_path, "", "expected an object");
  json::object& o = v.as_object();
  if (auto* name = o.if_contains("name"); name && name->is_string()) {
    std::string n(name->as_string());
    const std::string suffix = "-calibrated";
    if (n.size() < suffix.size() || n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0) n += suffix;
    *name = n;
  }
  std::string files;
  for (const auto& s : c.sources) files += (files.empty() ? "" : ", ") + s.file;
  std::string note = "The `calibration` block is measured: fitted by modsim calibrate on " + c.date + " from " + files +
                     " (" + c.device + "); the other numbers are as in the file it was made from.";
  if (auto* notes = o.if_contains("notes"); notes && notes->is_string())
    note = std::string(notes->as_string()) + " " + note;
  o["notes"] = note;
  o["calibration"] = json::parse(calibration_to_json(c));

  std::ostringstream body;
  pretty(body, v, 0);
  body << "\n";

  const fs::path out(out_path);
  fs::path dir = out.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw input_error(out_path, "", "folder does not exist");
  const fs::path tmp = dir / ("." + out.filename().string() + ".tmp" + std::to_string(::getpid()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw runtime_error(tmp.string() + ": cannot create");
    f << body.str();
    f.flush();
    if (!f) {
      f.close();
      fs::remove(tmp, ec);
      throw runtime_error(tmp.string() + ": write failed");
    }
  }
  fs::rename(tmp, out, ec);
  if (ec) {
    std::error_code ec2;
    fs::remove(tmp, ec2);
    throw runtime_error(out_path + ": cannot rename the temporary file over it: " + ec.message());
  }
}

validation_point validate_sample(const calibration_sample& s, const cost_model& model) {
  const block_prediction b = predict_sample(s, model);
  validation_point p;
  p.sample = s;
  p.predicted_s = b.total_s;
  p.ops_s = b.ops_s;
  p.overhead_s = b.overhead_s;
  p.error_pct = 100.0 * (b.total_s - s.measured_s) / s.measured_s;
  return p;
}

std::vector<validation_point> validate_blocks(const std::vector<calibration_sample>& samples, const cost_model& model) {
  std::vector<validation_point> out;
  for (const auto& s : samples)
    if (s.is_block()) out.push_back(validate_sample(s, model));
  return out;
}

validation_summary summarize_errors(const std::vector<double>& error_pct) {
  validation_summary v;
  v.points = static_cast<int>(error_pct.size());
  if (error_pct.empty()) return v;
  std::vector<double> a;
  double sum = 0;
  for (double e : error_pct) {
    a.push_back(std::abs(e));
    sum += e;
  }
  std::sort(a.begin(), a.end());
  auto pct = [&](double q) {
    const double pos = q * double(a.size() - 1);
    const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, a.size() - 1);
    return a[lo] + (pos - double(lo)) * (a[hi] - a[lo]);
  };
  v.median_abs_pct_error = pct(0.5);
  v.p90_abs_pct_error = pct(0.9);
  v.max_abs_pct_error = a.back();
  v.mean_pct_error = sum / double(error_pct.size());
  return v;
}

validation_summary summarize(const std::vector<validation_point>& points) {
  std::vector<double> e;
  for (const auto& p : points) e.push_back(p.error_pct);
  return summarize_errors(e);
}

std::string shape_group_of(const calibration_sample& s) {
  const op_shape& x = s.shape;
  return "B" + std::to_string(x.batch) + " S" + std::to_string(x.seq_len) + " d" + std::to_string(x.d_model) + " h" +
         std::to_string(x.n_heads) + " kv" + std::to_string(x.n_kv_heads) + " ff" + std::to_string(x.d_ff) + " " +
         to_string(x.mlp);
}

cross_validation_summary cross_validation_result::summary() const {
  cross_validation_summary c;
  c.folds = folds;
  const validation_summary b = summarize(blocks), o = summarize(ops);
  c.blocks = b.points;
  c.median_abs_pct_error = b.median_abs_pct_error;
  c.p90_abs_pct_error = b.p90_abs_pct_error;
  c.max_abs_pct_error = b.max_abs_pct_error;
  c.ops = o.points;
  c.op_median_abs_pct_error = o.median_abs_pct_error;
  c.op_p90_abs_pct_error = o.p90_abs_pct_error;
  return c;
}

cross_validation_result cross_validate(const hardware_spec& hw, const std::vector<calibration_sample>& samples,
                                       int folds, const fit_options& options) {
  if (folds < 2) throw input_error("", "--cv", "needs at least 2 folds, got " + std::to_string(folds));
  std::vector<std::string> groups;
  for (const auto& s : samples) groups.push_back(shape_group_of(s));
  std::vector<std::string> distinct = groups;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (static_cast<int>(distinct.size()) < folds)
    throw input_error("", "--cv",
                      std::to_string(folds) + " folds need at least " + std::to_string(folds) +
                          " shapes; the measurements have " + std::to_string(distinct.size()));
  std::vector<int> fold_of(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i)
    fold_of[i] =
        static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), groups[i]) - distinct.begin()) % folds;
  hardware_spec plain = hw;
  plain.calibration_json.clear();
  cross_validation_result out;
  out.folds = folds;
  out.groups = static_cast<int>(distinct.size());
  for (int f = 0; f < folds; ++f) {
    std::vector<calibration_sample> train, test;
    for (std::size_t i = 0; i < samples.size(); ++i) (fold_of[i] == f ? test : train).push_back(samples[i]);
    if (test.empty()) continue;
    const calibration c = fit_calibration(plain, train, {}, "cross-validation fold " + std::to_string(f + 1), options);
    const cost_model model = with_calibration(plain, c);
    for (const auto& s : test) (s.is_block() ? out.blocks : out.ops).push_back(validate_sample(s, model));
  }
  return out;
}

bool same_device_model(std::string_view a, std::string_view b) {
  if (a == b) return true;
  const std::vector<std::string> ta = model_tokens(a), tb = model_tokens(b);
  for (const auto& t : ta)
    if (std::find(tb.begin(), tb.end(), t) != tb.end()) return true;
  return false;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace modsim::sim
