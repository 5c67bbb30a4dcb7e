#include "sim/cost/kernel_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/error.hpp"
#include "core/op_table.hpp"

namespace modsim::sim {

namespace {

constexpr const char* k_kind_names[kernel_kind_count] = {"gemm",   "batched_gemm", "router", "topk", "gather",
                                                         "norm",   "softmax",      "copy",   "act",  "scatter",
                                                         "choice", "rank",         "memset"};

double up(double v) { return std::ceil(v - 1e-9); }

template <class N>
struct dims {
  double B, n, S, L, d, H, dh, dq, dkv, F, V, e, wr, T;
};

template <class N>
dims<N> dims_of(const basic_op_shape<N>& s) {
  dims<N> x{};
  x.B = static_cast<double>(s.batch);
  x.n = std::max(0.0, static_cast<double>(s.tokens));
  x.S = static_cast<double>(s.seq_len);
  x.L = s.context > 0 ? static_cast<double>(s.context) : x.n;
  if (s.window > 0) x.L = std::min(x.L, static_cast<double>(s.window));
  x.d = s.d_model;
  x.H = s.n_heads;
  x.dh = s.d_head > 0 ? s.d_head : (s.n_heads > 0 ? double(s.d_model) / s.n_heads : 0);
  x.dq = x.H * x.dh;
  x.dkv = (s.n_kv_heads > 0 ? s.n_kv_heads : s.n_heads) * x.dh;
  x.F = s.d_ff;
  x.V = s.vocab_size;
  x.e = s.elem_bytes;
  x.wr = static_cast<double>(s.weight_reads);
  x.T = x.B * x.n;
  return x;
}

kernel_work memory(kernel_kind k, double bytes) {
  kernel_work w;
  w.kind = k;
  w.bytes = bytes;
  return w;
}

// C (m×n) = A (m×k) · W (k×n), `batch` independent products; W read `wr` times, C also read
// when accumulated into (beta = 1).
kernel_work gemm(kernel_kind kind, double m, double n, double k, double batch, double e, double wr, bool accumulate,
                 double c_bytes_per_elem = 0) {
  kernel_work w;
  w.kind = kind;
  w.flops = 2 * m * n * k * batch;
  const double ce = c_bytes_per_elem > 0 ? c_bytes_per_elem : e;
  w.bytes = batch * (e * m * k + e * k * n * wr + ce * m * n * (accumulate ? 2 : 1));
  w.tiles = batch * up(std::max(m, 1.0) / 128) * up(std::max(n, 1.0) / 128);
  w.gemm = gemm_problem{std::max(m, 1.0), std::max(n, 1.0), k, batch};
  return w;
}

// The CUDA backend's test for its pointer-array attention: every (sequence, head) operand of
// q, k, v, the scores and the output starts on a 16-byte boundary. Decode shapes (a context
// apart from the tokens) are the model's expectations, timed as the aligned case.
template <class N>
bool attention_pointers_aligned(const basic_op_shape<N>& s) {
  if constexpr (!std::is_integral_v<N>) {
    return true;
  } else {
    if (s.context > 0) return true;
    const std::int64_t e = s.elem_bytes, n = s.tokens;
    const std::int64_t dh = s.d_head > 0 ? s.d_head : (s.n_heads > 0 ? s.d_model / s.n_heads : 0);
    const std::int64_t dq = s.n_heads * dh, dkv = (s.n_kv_heads > 0 ? s.n_kv_heads : s.n_heads) * dh;
    return (n * n * e) % 16 == 0 && (n * dq * e) % 16 == 0 && (n * dkv * e) % 16 == 0 && (dh * e) % 16 == 0;
  }
}

template <class N>
kernel_work fused_attention_impl(const basic_op_shape<N>& s) {
  const dims<N> x = dims_of(s);
  // The causal mask over all L keys (dims_of's L is already cut to the sliding window).
  const double n = x.n, L = std::max(s.context > 0 ? static_cast<double>(s.context) : x.n, x.n);
  kernel_work w;
  w.kind = kernel_kind::batched_gemm;
  // Query i (of n) sees a_i = L − n + i + 1 keys, at most W with a sliding window W: the
  // m = W − a_0 first queries see fewer than W, the others W.
  const double W = static_cast<double>(s.window);
  const double first = L - n + 1;
  double keys = n * L - n * (n - 1) / 2;
  double read = L;  // keys whose K and V rows are read
  if (W > 0 && W < L) {
    const double m = std::clamp(W - first, 0.0, n);
    keys = m * first + m * (m - 1) / 2 + (n - m) * W;
    read = std::min(L, W + n - 1);
  }
  w.flops = 4 * x.B * x.H * x.dh * keys;
  w.bytes = x.e * (2 * x.B * n * x.dq + 2 * x.B * read * x.dkv);
  w.tiles = x.B * x.H * up(std::max(n, 1.0) / 128);
  return w;
}

// The kernels the CUDA backend launches for each op: the op table's GPU column. The switch
// names every enumerator, so a new op without its kernels does not compile (-Wswitch).
template <class N>
std::vector<kernel_work> kernels_impl(modsim::op op, const basic_op_shape<N>& s, attention_impl attention) {
  using enum modsim::op;
  const dims<N> x = dims_of(s);
  const double e = x.e, T = x.T, B = x.B, d = x.d;
  std::vector<kernel_work> k;
  if (attention == attention_impl::fused && (op == attn_scores || op == attn_softmax || op == attn_values)) {
    if (op == attn_scores) k.push_back(fused_attention_impl(s));
    return k;  // softmax and values are inside the fused kernel
  }
  switch (op) {
    case router: {
      k.push_back(memory(kernel_kind::router, e * (B * x.S * d + d) + 4 * B * x.S));
      break;
    }
    case predictor: {
      const double h = s.predictor_hidden > 0 ? s.predictor_hidden : s.d_model;
      k.push_back(gemm(kernel_kind::gemm, B * x.S, h, d, 1, e, 1, false));
      k.push_back(memory(kernel_kind::router, e * (B * x.S * h + h) + 4 * B * x.S));
      break;
    }
    case topk: {
      kernel_work w;
      w.kind = kernel_kind::topk;
      w.items = x.S;  // one thread block per sequence walks its S scores
      w.tiles = B;    // sequences (thread blocks)
      w.bytes = 4 * B * x.S;
      k.push_back(w);
      break;
    }
    case gather: {
      k.push_back(memory(kernel_kind::gather, 2 * e * T * d + 4 * B * x.S + 8 * T));
      break;
    }
    case attn_norm:
    case mlp_norm: {
      k.push_back(memory(kernel_kind::norm, e * (2 * T * d + d)));
      break;
    }
    case qkv_proj: {
      k.push_back(gemm(kernel_kind::gemm, T, x.dq, d, 1, e, x.wr, false));
      k.push_back(gemm(kernel_kind::gemm, T, x.dkv, d, 1, e, x.wr, false));
      k.push_back(gemm(kernel_kind::gemm, T, x.dkv, d, 1, e, x.wr, false));
      break;
    }
    case attn_scores:
    case attn_values: {
      // One GEMM batched over every (sequence, head) pair through a pointer array when every
      // pair's operands start 16-byte aligned; otherwise strided-batched GEMMs, one per head or,
      // when fewer, one per (sequence, query head of a KV group)
      // (kernels/cuda/attention.cuh unaligned_loops_over_sequences).
      const bool scores = op == attn_scores;
      const double group = x.dkv > 0 ? x.dq / x.dkv : 1;
      const double launches = attention_pointers_aligned(s) ? 1 : B * group < x.H ? B * group : x.H;
      for (int i = 0; i < static_cast<int>(launches); ++i) {
        kernel_work w = scores ? gemm(kernel_kind::batched_gemm, x.n, x.L, x.dh, B * x.H / launches, e, 1, false)
                               : gemm(kernel_kind::batched_gemm, x.n, x.dh, x.L, B * x.H / launches, e, 1, false);
        w.bytes = e * (B * x.n * x.dq + B * x.L * x.dkv + B * x.H * x.n * x.L) / launches;
        k.push_back(w);
      }
      break;
    }
    case attn_softmax: {
      k.push_back(memory(kernel_kind::softmax, 2 * e * B * x.H * x.n * x.L));
      break;
    }
    case out_proj: {
      k.push_back(memory(kernel_kind::copy, 2 * e * T * d));  // the residual into the output
      k.push_back(gemm(kernel_kind::gemm, T, d, x.dq, 1, e, x.wr, true));
      break;
    }
    case mlp_up:
    case mlp_gate: {
      k.push_back(gemm(kernel_kind::gemm, T, x.F, d, 1, e, x.wr, false));
      break;
    }
    case mlp_act: {
      k.push_back(memory(kernel_kind::act, (s.mlp == mlp_kind::swiglu ? 3 : 2) * e * T * x.F));
      break;
    }
    case mlp_down: {
      k.push_back(memory(kernel_kind::copy, 2 * e * T * d));
      k.push_back(gemm(kernel_kind::gemm, T, d, x.F, 1, e, x.wr, true));
      break;
    }
    case scatter: {
      k.push_back(memory(kernel_kind::copy, 2 * e * T * d));  // restore the rows the last call wrote
      k.push_back(memory(kernel_kind::scatter, 4 * e * T * d + 8 * T));
      break;
    }
    case expert_router: {
      const double EN = s.experts + s.noop_experts;
      k.push_back(gemm(kernel_kind::gemm, T, EN, d, 1, e, x.wr, false, 4));
      kernel_work choice;
      choice.kind = kernel_kind::choice;
      choice.items = T;
      choice.bytes = 4 * T * EN + 8 * T;
      k.push_back(choice);
      kernel_work rank;
      rank.kind = kernel_kind::rank;
      rank.items = T;
      rank.bytes = 4 * T;
      k.push_back(rank);
      break;
    }
    case experts: {
      const double E = std::max(1, s.experts);
      const double slots = static_cast<double>(ops::expert_slots(s));
      const double cap = slots / E;
      k.push_back(memory(kernel_kind::memset, 4 * slots));
      kernel_work rank;
      rank.kind = kernel_kind::rank;
      rank.items = T;
      rank.bytes = 8 * T + 4 * slots;
      k.push_back(rank);
      k.push_back(memory(kernel_kind::gather, 2 * e * slots * d));  // dispatch rows to their slots
      k.push_back(gemm(kernel_kind::batched_gemm, cap, x.F, d, E, e, x.wr, false));
      if (s.mlp == mlp_kind::swiglu) k.push_back(gemm(kernel_kind::batched_gemm, cap, x.F, d, E, e, x.wr, false));
      k.push_back(memory(kernel_kind::act, (s.mlp == mlp_kind::swiglu ? 3 : 2) * e * slots * x.F));
      k.push_back(gemm(kernel_kind::batched_gemm, cap, d, x.F, E, e, x.wr, false));
      k.push_back(memory(kernel_kind::scatter, 3 * e * T * d));  // combine
      break;
    }
    case lm_head: {
      const double rows = B * x.S;
      k.push_back(memory(kernel_kind::norm, e * (2 * rows * d + d)));
      k.push_back(gemm(kernel_kind::gemm, rows, x.V, d, 1, e, 1, false));
      break;
    }
    case block_dense:
    case block_mod:
    case layer_mode:
      throw input_error("", "op",
                        "'" + std::string(to_string(op)) + "' is a whole block: its kernels are those of its ops");
    case decode_dense:
    case decode_mod:
    case decode_step:
      throw input_error("", "op",
                        "'" + std::string(to_string(op)) + "' is a decode step: its kernels are those of sim/des/step");
    case block_dense_train:
    case block_mod_train:
      throw input_error("", "op",
                        "'" + std::string(to_string(op)) + "' is a training block (forward + backward), timed whole");
    case adamw:
      throw input_error("", "op",
                        "'adamw' is the optimizer step, timed whole: the calibration's optimizer fit prices it");
  }
  return k;
}

}  // namespace

const char* to_string(kernel_kind k) { return k_kind_names[static_cast<int>(k)]; }

kernel_kind kernel_kind_of(std::string_view name) {
  for (int i = 0; i < kernel_kind_count; ++i)
    if (name == k_kind_names[i]) return static_cast<kernel_kind>(i);
  throw input_error("", "kind", "unknown kernel class '" + std::string(name) + "'");
}

std::vector<kernel_work> gpu_kernels(modsim::op op, const op_shape& s, attention_impl attention) {
  return kernels_impl(op, s, attention);
}
std::vector<kernel_work> gpu_kernels(modsim::op op, const expected_op_shape& s, attention_impl attention) {
  return kernels_impl(op, s, attention);
}
std::vector<kernel_work> gpu_kernels(modsim::op op, const op_shape& s) {
  return kernels_impl(op, s, attention_impl::unfused);
}
std::vector<kernel_work> gpu_kernels(modsim::op op, const expected_op_shape& s) {
  return kernels_impl(op, s, attention_impl::unfused);
}

kernel_work fused_attention_kernel(const op_shape& s) { return fused_attention_impl(s); }
kernel_work fused_attention_kernel(const expected_op_shape& s) { return fused_attention_impl(s); }

kernel_params default_kernel_params(const hardware_spec& hw) {
  kernel_params p;
  p.host_s = hw.host_enqueue_s > 0 ? hw.host_enqueue_s : 4e-6;
  p.gap_s = hw.kernel_launch_s > 0 ? hw.kernel_launch_s * 0.4 : 1e-6;
  p.event_s = 2e-6;
  p.warm_fraction = 0.3;
  p.gemm_tiles = hw.gemm_tiles;
  for (auto& c : p.kinds) c = kernel_class_params{};
  p.of(kernel_kind::batched_gemm).compute_efficiency = 0.5;
  p.of(kernel_kind::topk).per_item_s = 2e-9;
  p.of(kernel_kind::rank).per_item_s = 2e-9;
  p.of(kernel_kind::choice).per_item_s = 1e-10;
  return p;
}

double gemm_wave_factor(const kernel_work& k, dtype t, gemm_tiling tiling, const hardware_spec& hw) {
  if (k.kind != kernel_kind::gemm && k.kind != kernel_kind::batched_gemm) return 1;
  const double sms = hw.sm_count;
  if (tiling == gemm_tiling::chosen && k.gemm.m > 0) return sms > 0 ? choose_gemm_tile(k.gemm, hw, t).q : 1;
  if (sms > 0 && k.tiles >= sms) return std::ceil(k.tiles / sms - 1e-12) * sms / k.tiles;
  return 1;
}

double kernel_device_s(const kernel_work& k, dtype t, const kernel_params& p, const hardware_spec& hw, bool warm,
                       double max_q) {
  const kernel_class_params& c = p.of(k.kind);
  double bytes = k.bytes;
  if (warm && hw.l2_bytes > 0) bytes -= p.warm_fraction * std::min(0.5 * bytes, hw.l2_bytes);
  const double bw = hw.memory_bandwidth_bytes_s * c.bandwidth_efficiency;
  const double mem = bw > 0 ? bytes / bw : 0;
  switch (k.kind) {
    case kernel_kind::gemm:
    case kernel_kind::batched_gemm: {
      double q = gemm_wave_factor(k, t, p.gemm_tiles, hw);
      if (max_q > 0) q = std::min(q, max_q);
      const double peak = hw.peak_matmul_flops.of(t) * c.compute_efficiency;
      const double compute = peak > 0 ? k.flops * q / peak : 0;
      return c.floor_s + std::cbrt(compute * compute * compute + mem * mem * mem);
    }
    case kernel_kind::topk: {
      const double sms = std::max(1, hw.sm_count);
      return c.floor_s + c.per_item_s * k.items * std::ceil(std::max(1.0, k.tiles) / sms - 1e-12);
    }
    case kernel_kind::choice:
    case kernel_kind::rank:
      return c.floor_s + c.per_item_s * k.items;
    default:
      return c.floor_s + mem;
  }
}

double sequence_s(const std::vector<double>& device_s, const kernel_params& p) {
  double host = 0, end = 0;
  bool first = true;
  for (double t : device_s) {
    host += p.host_s;
    const double start = first ? host : std::max(host, end + p.gap_s);
    end = start + t;
    first = false;
  }
  return end;
}

}  // namespace modsim::sim
