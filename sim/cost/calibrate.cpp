// The whole calibration (sim/cost/calibrate.hpp): the per-op efficiency curves or, for a GPU, the
// kernel-sequence model, and the launch and in-layer refetch costs fitted on the block rows;
// the device checks.
#include "sim/cost/calibrate.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <ctime>
#include <optional>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/decode_fit.hpp"
#include "sim/cost/kernel_fit.hpp"
#include "sim/common/least_squares.hpp"
#include "sim/common/stats.hpp"

namespace modsim::sim {

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
// The rows come from one device of the hardware's kind (and, on a GPU, of its model).
void check_one_device(const hardware_spec& hw, const std::vector<measured_sample>& samples) {
  const std::string hw_file = hw.source_file.empty() ? hw.name : hw.source_file;
  const measured_sample& first = samples.front();
  const backend_kind expected_backend = backend_of(hw.kind);
  for (const auto& s : samples) {
    if (!same_device_model(s.device, first.device))
      throw input_error(s.where, "device",
                        "measurements from two devices ('" + first.device + "' at " + first.where + " and '" +
                            s.device + "'); calibrate on one device at a time");
    if (s.backend && s.backend != expected_backend)
      throw input_error(s.where, "backend",
                        "rows from backend '" + std::string(to_string(s.backend)) + "' cannot calibrate " +
                            to_string(hw.kind) + " hardware '" + hw.name + "' (" + hw_file + ")");
  }

  // A GPU hardware file names its model (h100-sxm, h200): rows from another GPU model
  // cannot calibrate it (an H100's efficiencies say little about an H200).
  if (is_gpu(hw)) {
    const std::vector<std::string> on_device = model_tokens(first.device);
    for (const std::string& t : model_tokens(hw.name))
      if (std::find(on_device.begin(), on_device.end(), t) == on_device.end())
        throw input_error(first.where, "device",
                          "rows measured on '" + first.device + "' cannot calibrate hardware '" + hw.name + "' (" +
                              hw_file + "); use the hardware file of that device");
  }
}

// One training row split for the backward fit: what the fit leaves alone (the calibrated
// forward, recomputation and launches) and the rule's backward time by class.
struct backward_row {
  double measured = 0, fixed = 0;
  double by_class[3] = {0, 0, 0};
  std::string group;  // shape_group_of: the cross-validation's folds
  std::string key;
};

// The factors (relative least squares, >= 0, pulled weakly towards 1) over `rows`.
std::vector<double> backward_factors(const std::vector<const backward_row*>& rows) {
  matrix A;
  std::vector<double> b;
  for (const backward_row* r : rows) {
    A.push_back({r->by_class[0] / r->measured, r->by_class[1] / r->measured, r->by_class[2] / r->measured});
    b.push_back(1.0 - r->fixed / r->measured);
  }
  for (int k = 0; k < 3; ++k) {
    std::vector<double> pull(3, 0.0);
    pull[k] = k_backward_pull;
    A.push_back(std::move(pull));
    b.push_back(k_backward_pull);
  }
  return nonnegative_least_squares(A, b);
}

double predicted_with(const backward_row& r, const std::vector<double>& f) {
  return r.fixed + f[0] * r.by_class[0] + f[1] * r.by_class[1] + f[2] * r.by_class[2];
}

// A fit's check by shape and its keys (backward_fit, optimizer_fit): the rows' shapes (their
// `group`) in up to 5 folds, each fold's rows priced by `refit` of the other folds' rows (it
// returns a function pricing a row), cv_* from those errors where there are two shapes or more;
// `keys` the rows' keys, sorted and distinct.
template <class Fit, class Row, class Refit>
void check_by_shape(Fit& out, const std::vector<Row>& rows, Refit refit) {
  std::vector<std::string> groups;
  for (const auto& r : rows) groups.push_back(r.group);
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  const int folds = std::min<int>(5, static_cast<int>(groups.size()));
  if (folds >= 2) {
    std::vector<double> errors;
    for (int fold = 0; fold < folds; ++fold) {
      std::vector<const Row*> in, out_of_fold;
      for (const auto& r : rows) {
        const auto g = std::lower_bound(groups.begin(), groups.end(), r.group) - groups.begin();
        (g % folds == fold ? out_of_fold : in).push_back(&r);
      }
      if (in.empty() || out_of_fold.empty()) continue;
      const auto price = refit(in);
      for (const Row* r : out_of_fold) errors.push_back(100.0 * (price(*r) - r->measured) / r->measured);
    }
    const validation_summary v = summarize_errors(errors);
    out.cv_folds = folds;
    out.cv_rows = v.points;
    out.cv_median_abs_pct_error = v.median_abs_pct_error;
    out.cv_p90_abs_pct_error = v.p90_abs_pct_error;
  }
  for (const auto& r : rows) out.keys.push_back(r.key);
  std::sort(out.keys.begin(), out.keys.end());
  out.keys.erase(std::unique(out.keys.begin(), out.keys.end()), out.keys.end());
}

// The backward fit (calibration::backward) on the training rows of `samples` of the first
// such row's dtype, `c` the calibration of their forward; none without training rows.
std::optional<backward_fit> fit_backward(const hardware_spec& hw, const calibration& c,
                                         const std::vector<measured_sample>& samples) {
  std::vector<backward_row> rows;
  std::optional<dtype> type;
  hardware_spec plain = hw;
  plain.calibration_json.clear();
  calibration forward = c;
  forward.backward.reset();
  const cost_model model = with_calibration(plain, forward);
  for (const auto& s : samples) {
    if (!modsim::is_train(s.op) || !(s.median_s > 0)) continue;
    if (!type) type = s.type;
    if (s.type != *type) continue;
    const train_row_prediction p = predict_train_row(s, model);
    backward_row r;
    r.measured = s.median_s;
    r.fixed = p.total_s - p.backward_s;
    for (int k = 0; k < 3; ++k) r.by_class[k] = p.backward_by_class[k];
    r.group = shape_group_of(s);
    r.key = s.key;
    rows.push_back(std::move(r));
  }
  if (rows.empty()) return std::nullopt;
  std::vector<const backward_row*> all;
  for (const auto& r : rows) all.push_back(&r);
  const std::vector<double> f = backward_factors(all);
  backward_fit out;
  out.type = *type;
  for (int k = 0; k < 3; ++k) out.factor[k] = f[k];
  out.rows = static_cast<int>(rows.size());
  double sq = 0;
  for (const auto& r : rows) sq += std::pow(predicted_with(r, f) / r.measured - 1.0, 2);
  out.rms_rel_error = std::sqrt(sq / double(rows.size()));
  // Out of fold by shape: the factors refitted without each fold's shapes.
  check_by_shape(out, rows, [](const std::vector<const backward_row*>& in) {
    const std::vector<double> ff = backward_factors(in);
    return [ff](const backward_row& r) { return predicted_with(r, ff); };
  });
  return out;
}

// s_per_byte by least squares on the seconds over `rows` (bytes, measured seconds): minimises
// Σ(u·bᵢ − tᵢ)², u = Σ bᵢ·tᵢ / Σ bᵢ². The largest rows weigh most: a model's step streams more
// than any row, and a small layer's state may sit in a cache that a model's never does.
double optimizer_s_per_byte(const std::vector<std::pair<double, double>>& rows) {
  double num = 0, den = 0;
  for (const auto& [bytes, seconds] : rows) {
    num += bytes * seconds;
    den += bytes * bytes;
  }
  return den > 0 ? num / den : 0.0;
}

// The optimizer fit (calibration::optimizer) on the adamw rows of `samples` of the first such
// row's dtype; none without adamw rows.
std::optional<optimizer_fit> fit_optimizer(const std::vector<measured_sample>& samples) {
  struct row {
    double bytes = 0, measured = 0;
    std::string group, key;
  };
  std::vector<row> rows;
  std::optional<dtype> type;
  for (const auto& s : samples) {
    if (!modsim::is_optimizer(s.op) || !(s.median_s > 0) || !(s.cost.bytes > 0)) continue;
    if (!type) type = s.type;
    if (s.type != *type) continue;
    rows.push_back({double(s.cost.bytes), s.median_s, shape_group_of(s), s.key});
  }
  if (rows.empty()) return std::nullopt;
  auto fit = [](const std::vector<const row*>& in) {
    std::vector<std::pair<double, double>> bt;
    for (const row* r : in) bt.emplace_back(r->bytes, r->measured);
    return optimizer_s_per_byte(bt);
  };
  std::vector<const row*> all;
  for (const auto& r : rows) all.push_back(&r);
  optimizer_fit out;
  out.type = *type;
  out.s_per_byte = fit(all);
  out.rows = static_cast<int>(rows.size());
  double sq = 0;
  for (const auto& r : rows) sq += std::pow(out.s_per_byte * r.bytes / r.measured - 1.0, 2);
  out.rms_rel_error = std::sqrt(sq / double(rows.size()));
  // Each fold's rows predicted by the rate of the others'.
  check_by_shape(out, rows, [&](const std::vector<const row*>& in) {
    const double u = fit(in);
    return [u](const row& r) { return u * r.bytes; };
  });
  return out;
}

// A GPU's calibration: the kernel-sequence model fitted on every row, and the decode fit.
calibration fit_gpu(const hardware_spec& hw, const std::vector<measured_sample>& samples, calibration c) {
  std::vector<kernel_row> rows;
  std::vector<std::string> keys;
  int blocks = 0;
  for (const auto& s : samples) {
    // Fitted below, on their own.
    if (s.is_decode() || modsim::is_train(s.op) || modsim::is_optimizer(s.op)) continue;
    rows.push_back(kernel_row_of(s));
    if (std::find(c.kernel_dtypes.begin(), c.kernel_dtypes.end(), s.type) == c.kernel_dtypes.end())
      c.kernel_dtypes.push_back(s.type);
    if (s.is_block()) {
      ++blocks;
      keys.push_back(s.key);
    }
  }
  if (rows.empty()) {
    // Decode (or optimizer) rows only: their fits alone (the ops keep the datasheet roofline).
    c.decode = fit_decode(samples, c.decode_keys);
    c.optimizer = fit_optimizer(samples);
    c.launch_s = hw.kernel_launch_s;
    c.launch_source = "hardware file (decode rows only)";
    return c;
  }
  const kernel_fit_result fit = fit_kernel_params(hw, rows);
  c.format = 2;
  c.kernels = fit.params;
  for (const kernel_row& r : rows)
    for (const kernel_work& k : r.kernels)
      c.kernels->max_wave_factor =
          std::max(c.kernels->max_wave_factor, gemm_wave_factor(k, r.type, c.kernels->gemm_tiles, hw));
  c.launch_s = fit.params.gap_s;
  c.launch_blocks = blocks;
  c.launch_source = "kernel-sequence model fitted on " + std::to_string(rows.size()) + " rows (" +
                    std::to_string(blocks) + " blocks): gap_s between kernels, host_s per enqueue";
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  c.block_keys = std::move(keys);
  c.decode = fit_decode(samples, c.decode_keys);
  c.backward = fit_backward(hw, c, samples);
  c.optimizer = fit_optimizer(samples);
  return c;
}

// Launch overhead and in-layer refetch cost from the blocks (`plain`: the hardware without a
// calibration; `all_in_block`: every op was fitted on in-block rows, so no refetch term).
void fit_launch(calibration& c, const hardware_spec& plain, const std::vector<measured_sample>& samples,
                const fit_options& options, bool all_in_block) {
  const hardware_spec& hw = plain;
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
      measured.push_back(s.median_s);
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
      const double m = median(per_kernel);
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
}

}  // namespace

calibration fit_calibration(const hardware_spec& hw, const std::vector<measured_sample>& samples,
                            std::vector<calibration_source> sources, const std::string& date,
                            const fit_options& options) {
  if (samples.empty()) throw input_error("", "--measurements", "no measured rows to calibrate on");
  const measured_sample& first = samples.front();
  check_one_device(hw, samples);

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
  if (is_gpu(hw)) return fit_gpu(hw, samples, std::move(c));

  hardware_spec plain = hw;
  plain.calibration_json.clear();
  const cost_model roofline(plain);

  struct group {
    modsim::op op = modsim::op::router;
    std::vector<double> roof, quant, meas, rows;
    std::vector<double> measured;  // as measured (meas has the leftover rows taken out)
  };
  // An op measured inside its block (timing in_block) is fitted on those rows only: they are
  // what the op costs in a layer, so no in-layer refetch term is fitted on top of them.
  std::set<std::pair<modsim::op, int>> in_block_ops;
  for (const auto& s : samples)
    if (!s.is_whole() && s.timing == timing_mode::in_block) in_block_ops.insert({s.op, static_cast<int>(s.type)});
  const bool all_in_block = [&] {
    for (const auto& s : samples)
      if (!s.is_whole() && !in_block_ops.count({s.op, static_cast<int>(s.type)})) return false;
    return !in_block_ops.empty();
  }();
  // The row GEMMs measured at neighbouring row counts, all else equal (any timing): what the
  // rows left over past a row group cost, per dtype; their rows are fitted with it taken out.
  std::map<int, efficiency_curve> leftover;  // dtype -> a curve holding only its leftover_rows
  {
    // (dtype, op, timing, d_model, d_ff, heads, kv heads, mlp): a series over its row counts.
    std::map<std::tuple<int, int, int, int, int, int, int, int>, row_series> series;
    for (const auto& s : samples) {
      if (s.is_whole() || !row_gemm(s.op)) continue;
      series[{static_cast<int>(s.type), static_cast<int>(s.op), static_cast<int>(s.timing), s.d_model, s.d_ff,
              s.n_heads, s.n_kv_heads, static_cast<int>(s.mlp)}]
          .emplace_back(static_cast<double>(s.shape.batch) * static_cast<double>(s.shape.tokens), s.median_s);
    }
    std::map<int, std::vector<row_series>> by_type;
    for (auto& [key, one] : series) by_type[std::get<0>(key)].push_back(std::move(one));
    for (const auto& [type, all] : by_type)
      if (std::vector<double> fit = fit_leftover_rows(all); !fit.empty()) leftover[type].leftover_rows = std::move(fit);
  }
  const auto leftover_factor = [&](const measured_sample& s) {
    const auto it = leftover.find(static_cast<int>(s.type));
    if (it == leftover.end() || !row_gemm(s.op)) return 1.0;
    return it->second.leftover_factor_at(static_cast<double>(s.shape.batch) * static_cast<double>(s.shape.tokens));
  };
  // By the op's name and dtype: the curves come out in name order.
  std::map<std::pair<std::string_view, int>, group> groups;
  for (const auto& s : samples) {
    if (s.is_whole()) continue;
    if (s.timing != timing_mode::in_block && in_block_ops.count({s.op, static_cast<int>(s.type)})) continue;
    const op_time t = roofline.time_of(s.cost, s.shape, s.type);
    if (!(t.roofline_s > 0)) continue;
    group& g = groups[{to_string(s.op), static_cast<int>(s.type)}];
    g.op = s.op;
    g.roof.push_back(t.roofline_s);
    g.quant.push_back(std::max(t.compute_s * t.waves, t.memory_s));
    g.meas.push_back(s.median_s / leftover_factor(s));
    g.rows.push_back(static_cast<double>(s.shape.batch) * static_cast<double>(s.shape.tokens));
    g.measured.push_back(s.median_s);
  }
  c.decode = fit_decode(samples, c.decode_keys);
  if (groups.empty() && c.decode.empty())
    throw input_error(first.where, "op",
                      "no single-op rows (only blocks or training rows): nothing to fit the per-op curves on");
  for (const auto& [key, g] : groups) {
    const dtype type = static_cast<dtype>(key.second);
    c.curves.push_back(options.rows_factor && row_gemm(g.op)
                           ? fit_curve_with_rows(g.op, type, g.roof, g.meas, g.rows, options, g.quant)
                           : fit_curve(g.op, type, g.roof, g.meas, options, g.quant));
    if (const auto it = leftover.find(key.second); it != leftover.end() && row_gemm(g.op))
      c.curves.back().leftover_rows = it->second.leftover_rows;
  }

  // The stand-ins checked: every measured op whose stand-in was measured too, its rows
  // predicted with the stand-in's curve as an op never measured would be.
  for (const auto& [key, g] : groups) {
    const std::optional<modsim::op> as = stand_in_of(g.op);
    const efficiency_curve* curve = as ? c.curve(*as, static_cast<dtype>(key.second)) : nullptr;
    if (!curve) continue;
    std::vector<double> errors;
    for (std::size_t i = 0; i < g.measured.size(); ++i)
      errors.push_back(100.0 * (curve->time_s(g.roof[i], g.quant[i], g.rows[i]) - g.measured[i]) / g.measured[i]);
    const validation_summary v = summarize_errors(errors);
    c.stand_in_checks.push_back(
        {g.op, *as, static_cast<dtype>(key.second), v.points, v.median_abs_pct_error, v.p90_abs_pct_error});
  }

  fit_launch(c, plain, samples, options, all_in_block);
  // The backward on the training rows, after the forward it is measured against.
  c.backward = fit_backward(plain, c, samples);
  c.optimizer = fit_optimizer(samples);
  return c;
}

bool same_device_model(std::string_view a, std::string_view b) {
  if (a == b) return true;
  const std::vector<std::string> ta = model_tokens(a), tb = model_tokens(b);
  for (const auto& t : ta)
    if (std::find(tb.begin(), tb.end(), t) != tb.end()) return true;
  return false;
}

bool same_machine_kind(std::string_view a, std::string_view b) {
  if (same_device_model(a, b)) return true;
  if (!model_tokens(a).empty() || !model_tokens(b).empty()) return false;
  const std::string_view name_a = a.substr(0, a.find(',')), name_b = b.substr(0, b.find(','));
  return !name_a.empty() && name_a == name_b;
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
