#include "sim/decode_fit.hpp"

#include <cmath>
#include <map>

#include "core/error.hpp"
#include "sim/des/decode.hpp"
#include "sim/least_squares.hpp"

namespace modsim::sim {

namespace {

bool is_attention(std::string_view op) { return op == "attn_scores" || op == "attn_softmax" || op == "attn_values"; }

}  // namespace

decode_features features_of_decode(const calibration_sample& s) {
  if (!s.decode_row) throw input_error(s.where, "op", "'" + s.op + "' is not a decode row");
  const des::decode_case c = des::decode_case_of(*s.decode_row);
  des::device_model zero;
  zero.time_of = [](const op_cost&, const op_shape&) { return op_time{}; };
  const des::step_builder b(c.model, s.type, zero);
  decode_features f;
  for (const des::kernel& k : b.step(des::forced_decode_load(b, c), c.routing)) {
    f.kernels += k.launches;  // the read-back is launched like a kernel
    if (k.host_waits) {
      f.syncs += 1;
      continue;
    }
    (is_attention(k.op) ? f.kv_bytes : f.weight_bytes) += static_cast<double>(k.bytes);
    f.matmul_flops += static_cast<double>(k.matmul_flops);
    f.other_flops += static_cast<double>(k.other_flops);
  }
  return f;
}

std::vector<decode_fit> fit_decode(const std::vector<calibration_sample>& samples, std::vector<std::string>& keys) {
  std::map<int, std::vector<const calibration_sample*>> by_type;
  for (const auto& s : samples)
    if (s.is_decode() && s.measured_s > 0) by_type[static_cast<int>(s.type)].push_back(&s);
  std::vector<decode_fit> out;
  for (const auto& [type, rows] : by_type) {
    matrix A;
    std::vector<double> b;
    std::vector<decode_features> fs;
    for (const calibration_sample* s : rows) {
      const decode_features f = features_of_decode(*s);
      const double m = s->measured_s;
      A.push_back(
          {f.weight_bytes / m, f.kv_bytes / m, f.matmul_flops / m, f.other_flops / m, f.kernels / m, f.syncs / m});
      b.push_back(1.0);
      fs.push_back(f);
      keys.push_back(s->key);
    }
    // Relative least squares (columns scaled inside the solver), then the rows off by more
    // than three times the median error are down-weighted once (a disturbed sample).
    std::vector<double> x = nonnegative_least_squares(A, b);
    decode_fit d;
    d.type = static_cast<dtype>(type);
    auto assign = [&](const std::vector<double>& v) {
      d.weight_s_per_byte = v[0];
      d.kv_s_per_byte = v[1];
      d.s_per_matmul_flop = v[2];
      d.s_per_other_flop = v[3];
      d.kernel_s = v[4];
      d.sync_s = v[5];
    };
    assign(x);
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

des::device_model decode_device_model(const cost_model& model, dtype t) {
  des::device_model base = des::device_model_of(model, t);
  const calibration* cal = model.calibration();
  const decode_fit* fit = cal ? cal->decode_for(t) : nullptr;
  if (!fit) return base;
  const decode_fit d = *fit;
  base.time_of = [d, roofline = base.time_of](const op_cost& c, const op_shape& s) {
    // The roofline's fields (roofline, compute and memory terms) as the cost model gives
    // them; the time from the decode fit.
    op_time r = roofline(c, s);
    const double per_byte = is_attention(c.op) ? d.kv_s_per_byte : d.weight_s_per_byte;
    r.time_s = per_byte * static_cast<double>(c.bytes) + d.s_per_matmul_flop * static_cast<double>(c.matmul_flops) +
               d.s_per_other_flop * static_cast<double>(c.other_flops);
    r.kernels = 1;  // one launch per op, as the fit counted them
    r.calibrated = true;
    r.calibrated_as = "decode";
    r.calibrated_dtype = d.type;
    return r;
  };
  base.launch_s = d.kernel_s;
  base.d2h_sync_s = d.sync_s;
  return base;
}

}  // namespace modsim::sim
