#include "sim/cost/decode_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "sim/des/decode.hpp"
#include "sim/model/flops.hpp"
#include "sim/common/least_squares.hpp"

namespace modsim::sim {

namespace {

// The attention kernels (the op table's attention-core class): they read the KV cache.
bool is_attention(modsim::op op) { return std::string_view(op_class_of(op)) == "attn_core"; }
// The same for a simulator kernel (the routed count's read-back is none).
bool is_attention(des::kernel_op k) { return k.model_op() && is_attention(*k.model_op()); }

}  // namespace

double decode_features::weight_bytes() const {
  double b = 0;
  for (const auto& [bytes, rows] : weight) b += bytes;
  return b;
}

decode_features features_of_decode(const measured_sample& s) {
  if (!s.is_decode()) throw input_error(s.where, "op", "'" + std::string(to_string(s.op)) + "' is not a decode row");
  const des::decode_case c = des::decode_case_of(s);
  decode_features f;
  f.whole_model = c.lm_head;
  for (const des::kernel& k : des::decode_kernels(c, s.type)) {
    f.kernels += k.launches;  // the read-back is launched like a kernel
    if (k.host_waits) {
      f.syncs += 1;
      continue;
    }
    // A weight kernel's FLOPs grow with its rows: w(rows) carries them. The FLOP columns are
    // the attention kernels' (their work grows with the keys, not the rows).
    if (is_attention(k.op)) {
      f.kv_bytes += static_cast<double>(k.bytes);
      f.matmul_flops += static_cast<double>(k.matmul_flops);
      f.other_flops += static_cast<double>(k.other_flops);
    } else {
      f.weight.push_back({static_cast<double>(k.bytes), static_cast<double>(std::max<std::int64_t>(1, k.tokens))});
    }
  }
  return f;
}

namespace {

// Knots in log2(rows): every power of two from the smallest to the largest row count of the
// data (the ends rounded outwards), at most `max` of them (then every other one, and so on).
std::vector<double> row_knots(const std::vector<double>& log2_rows, std::size_t max) {
  if (log2_rows.empty()) return {0.0};
  const auto [lo, hi] = std::minmax_element(log2_rows.begin(), log2_rows.end());
  const double first = std::floor(*lo + 1e-9), last = std::ceil(*hi - 1e-9);
  double step = 1;
  while ((last - first) / step + 1 > static_cast<double>(max)) step *= 2;
  std::vector<double> k;
  for (double x = first; x < last + step - 1e-9; x += step) k.push_back(std::min(x, last));
  k.erase(std::unique(k.begin(), k.end()), k.end());
  return k;
}

}  // namespace

std::vector<decode_fit> fit_decode(const std::vector<measured_sample>& samples, std::vector<std::string>& keys) {
  std::map<int, std::vector<const measured_sample*>> by_type;
  for (const auto& s : samples)
    if (s.is_decode() && s.median_s > 0) by_type[static_cast<int>(s.type)].push_back(&s);
  std::vector<decode_fit> out;
  for (const auto& [type, rows] : by_type) {
    std::vector<decode_features> fs;
    std::vector<double> log2_rows;
    for (const measured_sample* s : rows) {
      fs.push_back(features_of_decode(*s));
      for (const auto& [bytes, r] : fs.back().weight) log2_rows.push_back(std::log2(r));
      keys.push_back(s->key);
    }
    const std::vector<double> knots = row_knots(log2_rows, 9);
    const std::size_t K = knots.size();
    // Columns: w at each knot, then kv, matmul, other, kernels, syncs, the whole-model term as
    // +m and -m; rows relative to the measured time.
    matrix A;
    std::vector<double> b;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const decode_features& f = fs[i];
      const double m = rows[i]->median_s;
      std::vector<double> a(K + 7, 0.0);
      for (const auto& [bytes, r] : f.weight) {
        const std::vector<double> h = hats(knots, std::log2(r));
        for (std::size_t k = 0; k < K; ++k) a[k] += h[k] * bytes / m;
      }
      a[K] = f.kv_bytes / m;
      a[K + 1] = f.matmul_flops / m;
      a[K + 2] = f.other_flops / m;
      a[K + 3] = f.kernels / m;
      a[K + 4] = f.syncs / m;
      // The whole-model term may take either sign (two non-negative columns): a step streaming
      // the whole model can also cost less per byte than its layers timed alone.
      a[K + 5] = f.whole_model ? (f.weight_bytes() + f.kv_bytes) / m : 0.0;
      a[K + 6] = -a[K + 5];
      A.push_back(std::move(a));
      b.push_back(1.0);
    }
    const std::vector<double> x = nonnegative_least_squares(A, b);
    decode_fit d;
    d.type = static_cast<dtype>(type);
    d.weight_log2_rows = knots;
    d.weight_s_per_byte.assign(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(K));
    d.kv_s_per_byte = x[K];
    d.s_per_matmul_flop = x[K + 1];
    d.s_per_other_flop = x[K + 2];
    d.kernel_s = x[K + 3];
    d.sync_s = x[K + 4];
    d.model_s_per_byte = x[K + 5] - x[K + 6];
    double ss = 0;
    for (std::size_t i = 0; i < A.size(); ++i) {
      double p = 0;
      for (std::size_t j = 0; j < x.size(); ++j) p += A[i][j] * x[j];
      ss += (p - 1.0) * (p - 1.0);
    }
    d.rows = static_cast<int>(rows.size());
    d.rms_rel_error = std::sqrt(ss / static_cast<double>(A.size()));
    out.push_back(d);
  }
  return out;
}

des::device_model decode_device_model(const cost_model& model, dtype t, bool whole_model) {
  des::device_model base = des::device_model_of(model, t);
  const calibration* cal = model.calibration();
  const decode_fit* fit = cal ? cal->decode_for(t) : nullptr;
  if (!fit) return base;
  const decode_fit d = *fit;
  const double model_per_byte = whole_model ? d.model_s_per_byte : 0.0;
  base.time_of = [d, model_per_byte, roofline = base.time_of](const op_cost& c, const op_shape& s) {
    // The roofline's fields (roofline, compute and memory terms) as the cost model gives
    // them; the time from the decode fit.
    op_time r = roofline(c, s);
    const double rows = static_cast<double>(std::max<std::int64_t>(1, s.batch * s.tokens));
    const double per_byte = (is_attention(c.op) ? d.kv_s_per_byte : calibration::weight_rate(d, rows)) + model_per_byte;
    r.time_s = per_byte * static_cast<double>(c.bytes);
    if (is_attention(c.op))
      r.time_s += d.s_per_matmul_flop * static_cast<double>(c.matmul_flops) +
                  d.s_per_other_flop * static_cast<double>(c.other_flops);
    r.time_s = std::max(r.time_s, 0.0);  // a negative whole-model term never makes a kernel free
    r.kernels = 1;                       // one launch per op, as the fit counted them
    r.calibrated = true;                 // by the decode fit, no op's curve: calibrated_as stays empty
    r.calibrated_dtype = d.type;
    return r;
  };
  base.launch_s = d.kernel_s;
  base.d2h_sync_s = d.sync_s;
  return base;
}

}  // namespace modsim::sim
