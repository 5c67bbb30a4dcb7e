#include "sim/cost/cost.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "sim/common/least_squares.hpp"
#include "core/op_table.hpp"
#include "sim/model/config.hpp"
#include "sim/common/json_reader.hpp"

namespace modsim::sim {

namespace json = boost::json;

std::string_view curve_name(const std::optional<modsim::op>& calibrated_as) {
  return calibrated_as ? to_string(*calibrated_as) : std::string_view{};
}

std::optional<modsim::op> stand_in_of(modsim::op op) { return info(op).stand_in; }

int kernels_of(modsim::op op, const hardware_spec& hw) {
  return is_gpu(hw) ? info(op).gpu_kernels : info(op).cpu_kernels;
}

// ------------------------------------------------------------------------------------------
// Wave quantisation
// ------------------------------------------------------------------------------------------

namespace {

constexpr double tile = 128.0;

template <class N>
double waves_impl(modsim::op op, const basic_op_shape<N>& s, const hardware_spec& hw, dtype type, gemm_tiling tiling) {
  if (!is_gpu(hw) || hw.sm_count <= 0) return 1.0;
  if (tiling == gemm_tiling::chosen) {
    const std::optional<gemm_problem> g = op_gemm(op, s);
    // No tiling runs faster than the datasheet's peak: a large tile's efficiency above the
    // 128×128 tile's (gemm_tiles.hpp) decides the choice but cannot take q below 1.
    return g ? std::max(1.0, choose_gemm_tile(*g, hw, type).q) : 1.0;
  }
  const double t = gemm_output_tiles(op, s, tile);
  if (t <= 0) return 1.0;
  const double sms = hw.sm_count;
  return std::ceil(t / sms) * sms / t;
}

}  // namespace

double gemm_waves(modsim::op op, const op_shape& s, const hardware_spec& hw, dtype t, gemm_tiling tiling) {
  return waves_impl(op, s, hw, t, tiling);
}
double gemm_waves(modsim::op op, const expected_op_shape& s, const hardware_spec& hw, dtype t, gemm_tiling tiling) {
  return waves_impl(op, s, hw, t, tiling);
}

// ------------------------------------------------------------------------------------------
// cost_model
// ------------------------------------------------------------------------------------------

namespace {

bool same_rate(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

// fp16 on a GPU whose tensor cores run fp16 and bf16 at one rate (the elements have one size):
// the bf16 calibration times it when it has none of its own.
bool fp16_runs_as_bf16(const hardware_spec& hw, dtype t) {
  return t == dtype::fp16 && is_gpu(hw) && same_rate(hw.peak_matmul_flops.fp16, hw.peak_matmul_flops.bf16) &&
         same_rate(hw.peak_vector_flops.fp16, hw.peak_vector_flops.bf16);
}

void check_roofline(const calibration& c, const hardware_spec& hw) {
  const std::string file = hw.source_file.empty() ? hw.name : hw.source_file;
  auto check = [&](double cal, double now, const char* key) {
    if (!same_rate(cal, now))
      throw input_error(file, std::string("calibration.roofline.") + key,
                        "the curves were fitted against " + fmt_num(cal) + " but the hardware file now says " +
                            fmt_num(now) + "; re-run modsim calibrate");
  };
  check(c.peak_matmul_fp32, hw.peak_matmul_flops.fp32, "peak_matmul_flops.fp32");
  check(c.peak_matmul_bf16, hw.peak_matmul_flops.bf16, "peak_matmul_flops.bf16");
  check(c.peak_matmul_fp16, hw.peak_matmul_flops.fp16, "peak_matmul_flops.fp16");
  check(c.peak_vector_fp32, hw.peak_vector_flops.fp32, "peak_vector_flops.fp32");
  check(c.peak_vector_bf16, hw.peak_vector_flops.bf16, "peak_vector_flops.bf16");
  check(c.peak_vector_fp16, hw.peak_vector_flops.fp16, "peak_vector_flops.fp16");
  check(c.memory_bandwidth_bytes_s, hw.memory_bandwidth_bytes_s, "memory_bandwidth_bytes_s");
}

}  // namespace

attention_impl default_attention(const hardware_spec& hw) {
  return is_gpu(hw) ? default_gpu_attention : attention_impl::unfused;
}

cost_model::cost_model(hardware_spec hw) : m_hw(std::move(hw)) {
  if (!m_hw.calibration_json.empty()) {
    auto c = std::make_shared<sim::calibration>(
        parse_calibration(m_hw.calibration_json, m_hw.source_file.empty() ? m_hw.name : m_hw.source_file));
    check_roofline(*c, m_hw);
    m_cal = std::move(c);
  }
  m_attention = m_cal ? m_cal->attention : default_attention(m_hw);
}

cost_model::cost_model(hardware_spec hw, attention_impl attention) : cost_model(std::move(hw)) {
  m_attention = attention;
}

bool cost_model::attention_measured() const { return m_cal && m_cal->attention == m_attention; }

cost_model with_calibration(const hardware_spec& hw, const calibration& c) {
  hardware_spec h = hw;
  h.calibration_json = calibration_to_json(c);
  return cost_model(std::move(h));
}

bool cost_model::calibrated() const { return m_cal != nullptr; }

std::string cost_model::label() const {
  if (!m_cal) return "datasheet roofline (uncalibrated)";
  // Short enough for a window title: the files' names, the day, the device's name.
  std::string files;
  for (const auto& s : m_cal->sources) {
    const std::size_t slash = s.file.find_last_of('/');
    files += (files.empty() ? "" : ", ") + (slash == std::string::npos ? s.file : s.file.substr(slash + 1));
  }
  if (files.empty()) files = "(no files recorded)";
  const std::string day = m_cal->date.substr(0, 10);
  const std::string device = m_cal->device.substr(0, m_cal->device.find(','));
  return "calibrated on " + files + " (" + day + ", " + device + ")";
}

namespace {

bool is_attention_op(modsim::op op) {
  using enum modsim::op;
  return op == attn_scores || op == attn_softmax || op == attn_values;
}

// The attention ops as the fused kernel runs them (sim/cost/kernel_model.hpp): its FLOPs and bytes
// under attn_scores (the softmax's exp and sums over the causal scores as its other FLOPs),
// nothing under attn_softmax and attn_values. Other ops and unfused: `c`.
template <class Shape>
op_cost priced_attention(const op_cost& c, const Shape& s, attention_impl a) {
  using enum modsim::op;
  if (a != attention_impl::fused || !is_attention_op(c.op)) return c;
  op_cost f;
  f.op = c.op;
  if (c.op != attn_scores) return f;
  const kernel_work k = fused_attention_kernel(s);
  f.matmul_flops = std::llround(k.flops);
  const double dh = s.d_head > 0 ? s.d_head : (s.n_heads > 0 ? double(s.d_model) / s.n_heads : 1.0);
  f.other_flops = std::llround(5.0 * k.flops / (4.0 * std::max(1.0, dh)));  // max, subtract, exp, sum, divide
  f.bytes = std::llround(k.bytes);
  return f;
}

}  // namespace

template <class Shape>
op_time cost_model::time_impl(const op_cost& original, const Shape& s, dtype t) const {
  // Attention is priced as m_attention runs it; fused, attn_softmax and attn_values are part
  // of attn_scores' kernel and launch nothing.
  const attention_impl attention = m_attention;
  const op_cost c = priced_attention(original, s, attention);
  const bool inside_fused =
      attention == attention_impl::fused && is_attention_op(c.op) && c.op != modsim::op::attn_scores;
  op_time r = roofline_of(c, t);
  r.kernels = inside_fused ? 0 : kernels_of(c.op, m_hw);
  // The uncalibrated datasheet roofline tiles GEMMs as hw.roofline_gemm_tiles says (a GPU
  // file without "gemm_tiles": the tile chooser, sim/cost/gemm_tiles.hpp); a calibration keeps the
  // tiling it was fitted with (curves: the fixed 128×128 tile). Attention ops of an
  // implementation the calibration never measured are the datasheet's, tiled as the file's key.
  const bool roofline_attention = m_cal && is_attention_op(c.op) && !attention_measured();
  const gemm_tiling tiling = !m_cal               ? m_hw.roofline_gemm_tiles
                             : roofline_attention ? m_hw.gemm_tiles
                             : m_cal->kernels     ? m_cal->kernels->gemm_tiles
                                                  : gemm_tiling::fixed128;
  r.waves = gemm_waves(c.op, s, m_hw, t, tiling);
  const double quantised = std::max(r.compute_s * r.waves, r.memory_s);
  r.time_s = quantised;
  r.isolated_s = quantised;
  r.wave_s = quantised - std::max(r.compute_s * std::min(r.waves, 1.0), r.memory_s);
  // The datasheet roofline where nothing measured times the op (curve_for).
  const std::optional<curve_choice> use = curve_for(c.op, t);
  if (!use) return r;
  const dtype used = use->type;
  if (kernel_model_dtype(t)) {
    const kernel_params& p = *m_cal->kernels;
    const std::vector<kernel_work> ks = gpu_kernels(c.op, s, attention);
    r.time_s = 0;
    r.wave_s = 0;
    std::vector<double> cold;
    for (const kernel_work& k : ks) {
      r.kernel_s.push_back(kernel_device_s(k, used, p, m_hw, true));
      r.time_s += r.kernel_s.back();
      r.wave_s += r.kernel_s.back() - kernel_device_s(k, used, p, m_hw, true, 1.0);
      cold.push_back(kernel_device_s(k, used, p, m_hw, false));
      const double q = gemm_wave_factor(k, used, p.gemm_tiles, m_hw);
      r.wave_factor = std::max(r.wave_factor, q);
      if (p.max_wave_factor > 0 && q > p.max_wave_factor)
        r.unmeasured_wave_s += r.kernel_s.back() - kernel_device_s(k, used, p, m_hw, true, p.max_wave_factor);
    }
    r.isolated_s = p.event_s + sim::sequence_s(cold, p);
    r.kernels = static_cast<int>(ks.size());
    r.calibrated = true;
    r.calibrated_as = c.op;
    r.calibrated_dtype = used;
    r.from_other_dtype = used != t;
    return r;
  }
  if (const efficiency_curve* curve = m_cal->curve(use->as, used)) {
    r.wave_s = 0;
    r.isolated_s = curve->time_s(r.roofline_s, quantised, static_cast<double>(s.batch) * static_cast<double>(s.tokens));
    r.time_s = r.isolated_s + double(c.bytes) * m_cal->in_layer_s_per_byte;
    r.calibrated = true;
    r.calibrated_as = curve->op;
    r.calibrated_dtype = used;
    r.from_other_dtype = used != t;
  }
  return r;
}

op_cost fused_attention_backward(const op_shape& s) {
  const kernel_work k = fused_attention_kernel(s);
  const double dh = s.d_head > 0 ? s.d_head : (s.n_heads > 0 ? double(s.d_model) / s.n_heads : 1.0);
  const double rows = double(s.batch) * double(s.n_heads) * double(s.tokens);
  op_cost c;
  c.op = modsim::op::attn_scores;
  c.matmul_flops = std::llround(2.5 * k.flops);
  c.other_flops = std::llround(2.0 * 5.0 * k.flops / (4.0 * std::max(1.0, dh)));
  c.bytes = std::llround(2.0 * k.bytes + 2.0 * 4.0 * rows);
  return c;
}

op_time cost_model::roofline_of(const op_cost& c, dtype t) const {
  op_time r;
  r.op = c.op;
  r.matmul_flops = c.matmul_flops;
  r.other_flops = c.other_flops;
  r.bytes = c.bytes;
  const double pm = m_hw.peak_matmul_flops.of(t), pv = m_hw.peak_vector_flops.of(t);
  if (c.matmul_flops > 0 && pm > 0) r.compute_s += double(c.matmul_flops) / pm;
  if (c.other_flops > 0 && pv > 0) r.compute_s += double(c.other_flops) / pv;
  if (c.bytes > 0 && m_hw.memory_bandwidth_bytes_s > 0) r.memory_s = double(c.bytes) / m_hw.memory_bandwidth_bytes_s;
  r.roofline_s = std::max(r.compute_s, r.memory_s);
  r.time_s = r.roofline_s;
  r.isolated_s = r.roofline_s;
  return r;
}

op_time cost_model::backward_time_of(const op_cost& forward, const op_cost& backward, const op_shape& s,
                                     dtype t) const {
  if (backward.op != modsim::op::lm_head) return backward_impl(forward, backward, s, t);
  const op_cost loss = ops::lm_head_loss(s);
  op_cost rest = backward;
  rest.other_flops -= loss.other_flops;
  rest.bytes -= loss.bytes;
  op_time r = backward_impl(forward, rest, s, t);
  const op_time l = roofline_of(loss, t);  // one kernel
  r.other_flops = backward.other_flops;
  r.bytes = backward.bytes;
  r.compute_s += l.compute_s;
  r.memory_s += l.memory_s;
  r.roofline_s += l.roofline_s;
  r.time_s += l.time_s;
  r.isolated_s += l.isolated_s;
  r.kernels += l.kernels;
  return r;
}

op_time cost_model::backward_impl(const op_cost& forward, const op_cost& backward, const op_shape& s, dtype t) const {
  const op_time f = time_impl(forward, s, t);
  const bool fused = m_attention == attention_impl::fused && is_attention_op(backward.op);
  op_cost c = backward;
  if (fused) c = backward.op == modsim::op::attn_scores ? fused_attention_backward(s) : op_cost{backward.op, 0, 0, 0};
  op_time r = roofline_of(c, t);
  r.time_s = 0;
  r.isolated_s = 0;
  if (c.matmul_flops == 0 && c.other_flops == 0 && c.bytes == 0) {
    r.kernels = 0;
    return r;
  }
  r.waves = c.matmul_flops > 0 ? f.waves : 1.0;
  const double quantised = std::max(r.compute_s * r.waves, r.memory_s);
  r.time_s = quantised;
  r.wave_s = quantised - std::max(r.compute_s * std::min(r.waves, 1.0), r.memory_s);
  // dgrad and wgrad for a GEMM op; the fused kernel's preprocessing (rowsum(dO∘O)) and main kernel.
  r.kernels = fused ? 2 : (c.matmul_flops > 0 ? 2 * f.kernels : f.kernels);
  if (f.calibrated) {
    const double fq = std::max(f.compute_s * f.waves, f.memory_s);
    const double ratio = fq > 0 ? quantised / fq : 1.0;
    r.time_s = fq > 0 ? f.time_s * ratio : quantised;
    r.wave_s = f.wave_s * ratio;
    r.unmeasured_wave_s = f.unmeasured_wave_s * ratio;
    r.wave_factor = f.wave_factor;
    r.calibrated = true;
    r.calibrated_as = f.calibrated_as;
    r.calibrated_dtype = f.calibrated_dtype;
    r.from_other_dtype = f.from_other_dtype;
    // The backward fitted on measured training rows: the rule × its class's factor.
    if (m_cal->backward && m_cal->backward->type == t) {
      const double k = m_cal->backward->factor_of(backward_class_of(c.op));
      r.time_s *= k;
      r.wave_s *= k;
      r.unmeasured_wave_s *= k;
      r.backward_fitted = true;
    }
  }
  r.isolated_s = r.time_s;
  return r;
}

backward_class backward_class_of(modsim::op o) {
  const std::string_view c = info(o).op_class;
  if (c == "attn_core") return backward_class::attention;
  if (o == modsim::op::mlp_act || c == "norm" || c == "routing") return backward_class::memory;
  return backward_class::gemm;
}

train_op_time cost_model::train_time_of(const op_cost& forward, const op_cost& backward, const op_shape& s, dtype t,
                                        recompute_mode r) const {
  train_op_time out;
  out.forward = time_impl(forward, s, t);
  out.backward = backward_time_of(forward, backward, s, t);
  out.recompute.kernels = 0;
  const bool reruns =
      r == recompute_mode::full || (r == recompute_mode::selective && m_attention == attention_impl::unfused &&
                                    (forward.op == modsim::op::attn_scores || forward.op == modsim::op::attn_softmax));
  if (reruns) out.recompute = out.forward;
  return out;
}

op_time cost_model::optimizer_time_of(const optimizer_cost& c, dtype t) const {
  op_time r;
  r.other_flops = c.other_flops;
  r.bytes = c.bytes;
  const double pv = m_hw.peak_vector_flops.of(t);
  // The moments and master weights are fp32 whatever the dtype: the fp32 vector rate.
  const double pv32 = m_hw.peak_vector_flops.of(dtype::fp32) > 0 ? m_hw.peak_vector_flops.of(dtype::fp32) : pv;
  if (c.other_flops > 0 && pv32 > 0) r.compute_s = double(c.other_flops) / pv32;
  if (c.bytes > 0 && m_hw.memory_bandwidth_bytes_s > 0) r.memory_s = double(c.bytes) / m_hw.memory_bandwidth_bytes_s;
  r.roofline_s = std::max(r.compute_s, r.memory_s);
  r.time_s = r.roofline_s;
  // Measured: the calibration's optimizer fit (calibration::optimizer), whatever the dtype.
  if (const optimizer_fit* f = fitted_optimizer()) {
    r.time_s = double(c.bytes) * f->s_per_byte;
    r.calibrated = true;
    r.calibrated_as = modsim::op::adamw;
    r.calibrated_dtype = f->type;
  }
  r.isolated_s = r.time_s;
  r.kernels = c.params > 0 ? 1 : 0;
  return r;
}

const optimizer_fit* cost_model::fitted_optimizer() const {
  // Any dtype: the step streams 28 bytes a parameter whatever the weights' dtype (fp32 moments
  // and master copy), so a streaming rate measured with one prices the others.
  if (!m_cal || !m_cal->optimizer) return nullptr;
  return &*m_cal->optimizer;
}

op_time cost_model::time_of(const op_cost& c, const op_shape& s, dtype t) const { return time_impl(c, s, t); }
op_time cost_model::time_of(const op_cost& c, const expected_op_shape& s, dtype t) const { return time_impl(c, s, t); }

std::optional<cost_model::curve_choice> cost_model::curve_for(modsim::op o, dtype t) const {
  if (!m_cal || (is_attention_op(o) && !attention_measured())) return std::nullopt;
  if (const std::optional<dtype> kt = kernel_model_dtype(t)) return curve_choice{o, *kt};
  const bool fp16_as_bf16 = fp16_runs_as_bf16(m_hw, t);
  auto measured = [&](modsim::op as) -> std::optional<curve_choice> {
    if (m_cal->curve(as, t)) return curve_choice{as, t};
    if (fp16_as_bf16 && m_cal->curve(as, dtype::bf16)) return curve_choice{as, dtype::bf16};
    return std::nullopt;
  };
  if (std::optional<curve_choice> own = measured(o)) return own;
  if (const std::optional<modsim::op> alt = stand_in_of(o)) return measured(*alt);
  return std::nullopt;
}

std::optional<dtype> cost_model::kernel_model_dtype(dtype t) const {
  if (!kernel_model()) return std::nullopt;
  if (m_cal->kernel_model_fitted_on(t)) return t;
  if (fp16_runs_as_bf16(m_hw, t) && m_cal->kernel_model_fitted_on(dtype::bf16)) return dtype::bf16;
  return std::nullopt;
}

const kernel_params* cost_model::kernel_model() const { return m_cal && m_cal->kernels ? &*m_cal->kernels : nullptr; }

double cost_model::launch_s() const {
  if (const kernel_params* p = kernel_model()) return p->gap_s;
  return m_cal ? m_cal->launch_s : m_hw.kernel_launch_s;
}
double cost_model::host_enqueue_s() const {
  if (const kernel_params* p = kernel_model()) return p->host_s;
  return m_hw.host_enqueue_s;
}

double cost_model::sequence_s(const std::vector<op_time>& ops) const {
  const kernel_params* p = kernel_model();
  double sum = 0;
  int kernels = 0;
  std::vector<double> device;
  for (const op_time& t : ops) {
    if (p && !t.kernel_s.empty()) {
      device.insert(device.end(), t.kernel_s.begin(), t.kernel_s.end());
    } else {
      sum += t.time_s;
      kernels += t.kernels;
    }
  }
  if (!p) return sum + kernels * launch_s();
  // Ops the kernel model did not time (another dtype, attention it never measured) run as
  // single kernels of their time; those inside the fused attention kernel launch nothing.
  for (const op_time& t : ops)
    if (t.kernel_s.empty() && t.kernels > 0) device.push_back(t.time_s);
  return sim::sequence_s(device, *p);
}

}  // namespace modsim::sim
