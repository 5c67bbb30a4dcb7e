#pragma once
// A naive float64 reference of one (MoD / MoDE) transformer block, written from the paper
// and docs/contracts.md independently of kernels/cpu: plain loops, no BLAS, no tricks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/backend.hpp"

namespace modsim::kernels::ref {

using i64 = std::int64_t;
using mat = std::vector<double>;  // row-major

inline mat to_double(const std::vector<float>& v) { return mat(v.begin(), v.end()); }

inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double scale = 1.0) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(dist(gen));
  return v;
}

// ‖a − b‖₂ / ‖b‖₂ over the first `count` elements (all when count is 0).
template <class A, class B>
double relative_error(const A& a, const B& b, std::size_t count = 0) {
  if (count == 0) count = b.size();
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    const double diff = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    num += diff * diff;
    den += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-300);
}

// C[m×n] = A[m×k]·B[k×n]
inline mat matmul(const mat& a, const mat& b, i64 m, i64 k, i64 n) {
  mat c(static_cast<std::size_t>(m * n), 0.0);
  for (i64 i = 0; i < m; ++i)
    for (i64 j = 0; j < n; ++j) {
      double s = 0.0;
      for (i64 l = 0; l < k; ++l) s += a[i * k + l] * b[l * n + j];
      c[i * n + j] = s;
    }
  return c;
}

inline mat rms_norm(const mat& x, const mat& gain, i64 rows, i64 d, double eps = 1e-6) {
  mat out(static_cast<std::size_t>(rows * d));
  for (i64 r = 0; r < rows; ++r) {
    double ss = 0.0;
    for (i64 c = 0; c < d; ++c) ss += x[r * d + c] * x[r * d + c];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + eps);
    for (i64 c = 0; c < d; ++c) out[r * d + c] = x[r * d + c] * inv * gain[c];
  }
  return out;
}

inline double gelu(double x) {
  const double c = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
inline double silu(double x) { return x / (1.0 + std::exp(-x)); }

// Scores [B, H, n, n] = Q·Kᵀ/sqrt(d_head) for each sequence and head (GQA: head h reads kv
// head h / (H / H_kv)).
inline mat attention_scores(const block_shape& s, const mat& q, const mat& k, i64 n) {
  const i64 H = s.n_heads, dh = s.d_head, dq = s.d_q(), dkv = s.d_kv(), group = s.n_heads / s.n_kv_heads;
  mat sc(static_cast<std::size_t>(s.batch * H * n * n));
  for (i64 b = 0; b < s.batch; ++b)
    for (i64 h = 0; h < H; ++h)
      for (i64 i = 0; i < n; ++i)
        for (i64 j = 0; j < n; ++j) {
          double dot = 0.0;
          for (i64 e = 0; e < dh; ++e)
            dot += q[(b * n + i) * dq + h * dh + e] * k[(b * n + j) * dkv + (h / group) * dh + e];
          sc[((b * H + h) * n + i) * n + j] = dot / std::sqrt(static_cast<double>(dh));
        }
  return sc;
}

// Row i of each n×n matrix: softmax over columns 0..i, zero after.
inline mat causal_softmax(const mat& sc, i64 matrices, i64 n) {
  mat p(sc.size(), 0.0);
  for (i64 m = 0; m < matrices; ++m)
    for (i64 i = 0; i < n; ++i) {
      const double* row = &sc[static_cast<std::size_t>((m * n + i) * n)];
      double mx = row[0];
      for (i64 j = 0; j <= i; ++j) mx = std::max(mx, row[j]);
      double sum = 0.0;
      for (i64 j = 0; j <= i; ++j) sum += std::exp(row[j] - mx);
      for (i64 j = 0; j <= i; ++j) p[static_cast<std::size_t>((m * n + i) * n + j)] = std::exp(row[j] - mx) / sum;
    }
  return p;
}

// O [B·n, d_q] = P·V per sequence and head.
inline mat attention_values(const block_shape& s, const mat& p, const mat& v, i64 n) {
  const i64 H = s.n_heads, dh = s.d_head, dq = s.d_q(), dkv = s.d_kv(), group = s.n_heads / s.n_kv_heads;
  mat o(static_cast<std::size_t>(s.batch * n * dq), 0.0);
  for (i64 b = 0; b < s.batch; ++b)
    for (i64 h = 0; h < H; ++h)
      for (i64 i = 0; i < n; ++i)
        for (i64 e = 0; e < dh; ++e) {
          double acc = 0.0;
          for (i64 j = 0; j < n; ++j)
            acc += p[((b * H + h) * n + i) * n + j] * v[(b * n + j) * dkv + (h / group) * dh + e];
          o[(b * n + i) * dq + h * dh + e] = acc;
        }
  return o;
}

// The weights of one block, read back from a workspace.
struct weights {
  mat router_w, attn_g, wq, wk, wv, wo, mlp_g, wup, wgate, wdown;
  mat expert_router_w, expert_up, expert_gate, expert_down;
};

inline weights read_weights(const workspace& ws) {
  weights w;
  w.router_w = to_double(ws.download(tensor::router_w));
  w.attn_g = to_double(ws.download(tensor::attn_norm_g));
  w.wq = to_double(ws.download(tensor::w_q));
  w.wk = to_double(ws.download(tensor::w_k));
  w.wv = to_double(ws.download(tensor::w_v));
  w.wo = to_double(ws.download(tensor::w_o));
  w.mlp_g = to_double(ws.download(tensor::mlp_norm_g));
  w.wup = to_double(ws.download(tensor::w_up));
  w.wgate = to_double(ws.download(tensor::w_gate));
  w.wdown = to_double(ws.download(tensor::w_down));
  w.expert_router_w = to_double(ws.download(tensor::expert_router_w));
  w.expert_up = to_double(ws.download(tensor::expert_w_up));
  w.expert_gate = to_double(ws.download(tensor::expert_w_gate));
  w.expert_down = to_double(ws.download(tensor::expert_w_down));
  return w;
}

// One MLP (up/gate/down slices of d_ff columns) on rows u [m, d]: returns [m, d].
inline mat mlp(const block_shape& s, const mat& u, i64 m, const double* up, const double* gate, const double* down) {
  const i64 d = s.d_model, f = s.d_ff;
  mat a(static_cast<std::size_t>(m * f));
  for (i64 i = 0; i < m; ++i)
    for (i64 j = 0; j < f; ++j) {
      double su = 0.0, sg = 0.0;
      for (i64 l = 0; l < d; ++l) {
        su += u[i * d + l] * up[l * f + j];
        if (s.mlp == mlp_kind::swiglu) sg += u[i * d + l] * gate[l * f + j];
      }
      a[i * f + j] = s.mlp == mlp_kind::swiglu ? silu(sg) * su : gelu(su);
    }
  mat out(static_cast<std::size_t>(m * d), 0.0);
  for (i64 i = 0; i < m; ++i)
    for (i64 c = 0; c < d; ++c) {
      double acc = 0.0;
      for (i64 j = 0; j < f; ++j) acc += a[i * f + j] * down[j * d + c];
      out[i * d + c] = acc;
    }
  return out;
}

// Token-choice top-1 MoE assignment: chosen expert per row (-1: dropped over capacity),
// gate = softmax probability of the chosen expert.
struct moe_assignment {
  std::vector<int> expert;
  std::vector<double> gate;
};

inline moe_assignment assign_experts(const block_shape& s, const mat& logits, i64 m) {
  const i64 Et = s.router_experts();
  const i64 cap =
      s.capacity_factor <= 0.0
          ? m
          : static_cast<i64>(std::ceil(s.capacity_factor * static_cast<double>(m) / static_cast<double>(Et) - 1e-9));
  moe_assignment a;
  std::vector<i64> taken(static_cast<std::size_t>(Et), 0);
  for (i64 t = 0; t < m; ++t) {
    int best = 0;
    for (int e = 1; e < Et; ++e)
      if (logits[t * Et + e] > logits[t * Et + best]) best = e;
    double sum = 0.0;
    for (i64 e = 0; e < Et; ++e) sum += std::exp(logits[t * Et + e] - logits[t * Et + best]);
    a.gate.push_back(1.0 / sum);
    if (best >= s.experts) {
      a.expert.push_back(best);  // no-op
    } else if (taken[static_cast<std::size_t>(best)] < cap) {
      ++taken[static_cast<std::size_t>(best)];
      a.expert.push_back(best);
    } else {
      a.expert.push_back(-1);
    }
  }
  return a;
}

// y = h + gate·expert(u) for rows kept by a real expert, y = h otherwise.
inline mat moe_apply(const block_shape& s, const weights& w, const mat& u, const mat& h, i64 m,
                     const std::vector<int>& expert, const std::vector<double>& gate) {
  const i64 d = s.d_model, f = s.d_ff;
  mat y = h;
  for (i64 t = 0; t < m; ++t) {
    const int e = expert[static_cast<std::size_t>(t)];
    if (e < 0 || e >= s.experts) continue;
    const mat row(u.begin() + t * d, u.begin() + (t + 1) * d);
    const mat out = mlp(s, row, 1, &w.expert_up[static_cast<std::size_t>(e * d * f)],
                        w.expert_gate.empty() ? nullptr : &w.expert_gate[static_cast<std::size_t>(e * d * f)],
                        &w.expert_down[static_cast<std::size_t>(e * f * d)]);
    for (i64 c = 0; c < d; ++c) y[t * d + c] += gate[static_cast<std::size_t>(t)] * out[c];
  }
  return y;
}

// The block on `in` [B·n, d] (n tokens per sequence): pre-norm causal attention and MLP
// (dense or MoE), each with its residual. Returns y = in + Δ.
inline mat block(const block_shape& s, const weights& w, const mat& in, i64 n, bool moe = false) {
  const i64 m = s.batch * n, d = s.d_model, dq = s.d_q(), dkv = s.d_kv();
  const mat a = rms_norm(in, w.attn_g, m, d);
  const mat q = matmul(a, w.wq, m, d, dq), k = matmul(a, w.wk, m, d, dkv), v = matmul(a, w.wv, m, d, dkv);
  const mat p = causal_softmax(attention_scores(s, q, k, n), s.batch * s.n_heads, n);
  const mat o = attention_values(s, p, v, n);
  mat h = matmul(o, w.wo, m, dq, d);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] += in[i];
  const mat u = rms_norm(h, w.mlp_g, m, d);
  if (moe) {
    const mat logits = matmul(u, w.expert_router_w, m, d, s.router_experts());
    const moe_assignment as = assign_experts(s, logits, m);
    return moe_apply(s, w, u, h, m, as.expert, as.gate);
  }
  mat y = mlp(s, u, m, w.wup.data(), w.wgate.empty() ? nullptr : w.wgate.data(), w.wdown.data());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += h[i];
  return y;
}

inline mat router_logits(const block_shape& s, const mat& x, const mat& w) {
  return matmul(x, w, s.tokens(), s.d_model, 1);
}

// Per sequence, the k positions with the largest r (equal r: lower position first), ascending.
inline std::vector<int> top_k(const block_shape& s, const mat& r) {
  const i64 S = s.seq_len, k = s.routed_tokens();
  std::vector<int> out;
  for (i64 b = 0; b < s.batch; ++b) {
    std::vector<int> order(static_cast<std::size_t>(S));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int i, int j) { return r[b * S + i] > r[b * S + j]; });
    order.resize(static_cast<std::size_t>(k));
    std::sort(order.begin(), order.end());
    out.insert(out.end(), order.begin(), order.end());
  }
  return out;
}

// The MoD layer (Equation 1): out_i = x_i + r_i·Δ_i for routed i, x_i otherwise.
struct mod_result {
  mat out;
  std::vector<int> routed;  // [B, k]
  mat r;
};

inline mod_result mod_layer(const block_shape& s, const weights& w, const mat& x, bool moe = false) {
  const i64 S = s.seq_len, k = s.routed_tokens(), d = s.d_model;
  mod_result res;
  res.r = router_logits(s, x, w.router_w);
  res.routed = top_k(s, res.r);
  mat xt(static_cast<std::size_t>(s.batch * k * d));
  for (i64 j = 0; j < s.batch * k; ++j)
    for (i64 c = 0; c < d; ++c) xt[j * d + c] = x[((j / k) * S + res.routed[static_cast<std::size_t>(j)]) * d + c];
  const mat y = block(s, w, xt, k, moe);
  res.out = x;
  for (i64 j = 0; j < s.batch * k; ++j) {
    const i64 row = (j / k) * S + res.routed[static_cast<std::size_t>(j)];
    for (i64 c = 0; c < d; ++c) res.out[row * d + c] = x[row * d + c] + res.r[row] * (y[j * d + c] - xt[j * d + c]);
  }
  return res;
}

}  // namespace modsim::kernels::ref
