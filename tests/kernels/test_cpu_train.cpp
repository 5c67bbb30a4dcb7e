// kernels/cpu/train.cpp: one layer's forward and backward (dense and MoD, MHA and GQA, gelu
// and swiglu), activation recomputation and AdamW, against values computed here: central
// finite differences of a float64 forward, a float64 loop reference of the backward, and
// cases worked by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <tuple>

#include "kernels/train.hpp"
#include "core/error.hpp"
#include "reference.hpp"

namespace modsim::kernels {
namespace {

using ref::i64;
using ref::mat;
using train::layer_params;
using train::recompute;

// ---- a float64 layer, written from the paper's Equation 1 with plain loops ----

ref::weights to_weights(const layer_params& p) {
  ref::weights w;
  w.router_w = ref::to_double(p.router_w);
  w.attn_g = ref::to_double(p.attn_norm_g);
  w.wq = ref::to_double(p.w_q);
  w.wk = ref::to_double(p.w_k);
  w.wv = ref::to_double(p.w_v);
  w.wo = ref::to_double(p.w_o);
  w.mlp_g = ref::to_double(p.mlp_norm_g);
  w.wup = ref::to_double(p.w_up);
  w.wgate = ref::to_double(p.w_gate);
  w.wdown = ref::to_double(p.w_down);
  w.expert_router_w = ref::to_double(p.expert_router_w);
  w.expert_up = ref::to_double(p.expert_w_up);
  w.expert_gate = ref::to_double(p.expert_w_gate);
  w.expert_down = ref::to_double(p.expert_w_down);
  return w;
}

// The parameters of ref::weights in layer_params::tensors() order.
std::vector<mat*> weight_tensors(ref::weights& w) {
  return {
      &w.router_w, &w.attn_g,          &w.wq,        &w.wk,          &w.wv,         &w.wo, &w.mlp_g, &w.wup, &w.wgate,
      &w.wdown,    &w.expert_router_w, &w.expert_up, &w.expert_gate, &w.expert_down};
}

// The layer's output for x, the routing held at `routed` ([B, k] positions) for a routed layer.
mat layer_out(const block_shape& s, bool routed_layer, const ref::weights& w, const mat& x,
              const std::vector<int>& routed) {
  if (!routed_layer) return ref::block(s, w, x, s.seq_len);
  const i64 S = s.seq_len, k = s.routed_tokens(), d = s.d_model;
  const mat r = ref::router_logits(s, x, w.router_w);
  mat xt(static_cast<std::size_t>(s.batch * k * d));
  for (i64 j = 0; j < s.batch * k; ++j)
    for (i64 c = 0; c < d; ++c) xt[j * d + c] = x[((j / k) * S + routed[static_cast<std::size_t>(j)]) * d + c];
  const mat y = ref::block(s, w, xt, k);
  mat out = x;
  for (i64 j = 0; j < s.batch * k; ++j) {
    const i64 row = (j / k) * S + routed[static_cast<std::size_t>(j)];
    for (i64 c = 0; c < d; ++c) out[row * d + c] = x[row * d + c] + r[row] * (y[j * d + c] - xt[j * d + c]);
  }
  return out;
}

double loss(const mat& out, const mat& g) {
  double l = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) l += out[i] * g[i];
  return l;
}

// Central differences of L = Σ out·G with respect to every element of `v` (step eps).
mat finite_differences(mat& v, const std::function<double()>& l, double eps = 1e-6) {
  mat grad(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + eps;
    const double up = l();
    v[i] = keep - eps;
    const double down = l();
    v[i] = keep;
    grad[i] = (up - down) / (2.0 * eps);
  }
  return grad;
}

// Aᵀ·B for A [r×m], B [r×n].
mat matmul_tn(const mat& a, const mat& b, i64 r, i64 m, i64 n) {
  mat c(static_cast<std::size_t>(m * n), 0.0);
  for (i64 l = 0; l < r; ++l)
    for (i64 i = 0; i < m; ++i)
      for (i64 j = 0; j < n; ++j) c[i * n + j] += a[l * m + i] * b[l * n + j];
  return c;
}

// A·Bᵀ for A [m×k], B [n×k].
mat matmul_nt(const mat& a, const mat& b, i64 m, i64 k, i64 n) {
  mat c(static_cast<std::size_t>(m * n), 0.0);
  for (i64 i = 0; i < m; ++i)
    for (i64 j = 0; j < n; ++j)
      for (i64 l = 0; l < k; ++l) c[i * n + j] += a[i * k + l] * b[j * k + l];
  return c;
}

// RMSNorm's backward, row by row: d_in += inv·(ĝ − n̂·mean(ĝ·n̂)), ĝ = d_out·g, n̂ = in·inv.
void rms_norm_backward(const mat& in, const mat& g, const mat& d_out, mat& d_in, mat& d_g, i64 rows, i64 d) {
  d_g.assign(static_cast<std::size_t>(d), 0.0);
  for (i64 r = 0; r < rows; ++r) {
    double ss = 0.0;
    for (i64 c = 0; c < d; ++c) ss += in[r * d + c] * in[r * d + c];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + 1e-6);
    double mean = 0.0;
    for (i64 c = 0; c < d; ++c) mean += d_out[r * d + c] * g[c] * in[r * d + c] * inv;
    mean /= static_cast<double>(d);
    for (i64 c = 0; c < d; ++c) {
      d_in[r * d + c] += inv * (d_out[r * d + c] * g[c] - in[r * d + c] * inv * mean);
      d_g[c] += d_out[r * d + c] * in[r * d + c] * inv;
    }
  }
}

double gelu_derivative(double x) {
  const double c = std::sqrt(2.0 / 3.14159265358979323846), t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

mat moe_block(const block_shape& s, const ref::weights& w, const mat& in, i64 n, const std::vector<int>& expert);

struct reference_grads {
  ref::weights dw;  // router_w .. w_down
  mat dx;
};

// The dense MLP's backward on u [m, d] given dy: returns du, fills its weights' gradients.
mat dense_mlp_backward(const block_shape& s, const ref::weights& w, const mat& u, i64 m, const mat& dy,
                       ref::weights& dw) {
  const i64 d = s.d_model, f = s.d_ff;
  const bool swiglu = s.mlp == mlp_kind::swiglu;
  const mat z = ref::matmul(u, w.wup, m, d, f);
  const mat zg = swiglu ? ref::matmul(u, w.wgate, m, d, f) : mat();
  mat act(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) act[i] = swiglu ? ref::silu(zg[i]) * z[i] : ref::gelu(z[i]);

  dw.wdown = matmul_tn(act, dy, m, f, d);
  const mat dact = matmul_nt(dy, w.wdown, m, d, f);
  mat dz(z.size()), dzg(swiglu ? z.size() : 0);
  for (std::size_t i = 0; i < z.size(); ++i) {
    if (swiglu) {
      const double sg = sigmoid(zg[i]);
      dz[i] = dact[i] * ref::silu(zg[i]);
      dzg[i] = dact[i] * z[i] * sg * (1.0 + zg[i] * (1.0 - sg));
    } else {
      dz[i] = dact[i] * gelu_derivative(z[i]);
    }
  }
  dw.wup = matmul_tn(u, dz, m, d, f);
  mat du = matmul_nt(dz, w.wup, m, f, d);
  if (swiglu) {
    dw.wgate = matmul_tn(u, dzg, m, d, f);
    const mat du_gate = matmul_nt(dzg, w.wgate, m, f, d);
    for (std::size_t i = 0; i < du.size(); ++i) du[i] += du_gate[i];
  } else {
    dw.wgate.clear();
  }
  return du;
}

// The MoE MLP's backward, row by row, each row's expert held at expert[row]: y_t = h_t +
// gate_t·expert_e(u_t), gate_t = softmax(u_t·W_router)[e]. Returns du, fills the experts' and
// the expert router's gradients.
mat moe_mlp_backward(const block_shape& s, const ref::weights& w, const mat& u, i64 m, const mat& dy,
                     const std::vector<int>& expert, ref::weights& dw) {
  const i64 d = s.d_model, f = s.d_ff, Et = s.router_experts();
  const bool swiglu = s.mlp == mlp_kind::swiglu;
  const mat logits = ref::matmul(u, w.expert_router_w, m, d, Et);
  mat du(static_cast<std::size_t>(m * d), 0.0);
  dw.expert_router_w.assign(w.expert_router_w.size(), 0.0);
  dw.expert_up.assign(w.expert_up.size(), 0.0);
  dw.expert_gate.assign(w.expert_gate.size(), 0.0);
  dw.expert_down.assign(w.expert_down.size(), 0.0);
  for (i64 t = 0; t < m; ++t) {
    const int e = expert[static_cast<std::size_t>(t)];
    if (e < 0 || e >= s.experts) continue;
    std::vector<double> prob(static_cast<std::size_t>(Et));
    double sum = 0.0;
    for (i64 j = 0; j < Et; ++j) sum += prob[j] = std::exp(logits[t * Et + j]);
    for (auto& pj : prob) pj /= sum;
    const double gate = prob[static_cast<std::size_t>(e)];
    const double* up = &w.expert_up[static_cast<std::size_t>(e * d * f)];
    const double* gt = swiglu ? &w.expert_gate[static_cast<std::size_t>(e * d * f)] : nullptr;
    const double* down = &w.expert_down[static_cast<std::size_t>(e * f * d)];
    std::vector<double> z(static_cast<std::size_t>(f), 0.0), zg(z.size(), 0.0), act(z.size());
    for (i64 j = 0; j < f; ++j) {
      for (i64 l = 0; l < d; ++l) {
        z[j] += u[t * d + l] * up[l * f + j];
        if (swiglu) zg[j] += u[t * d + l] * gt[l * f + j];
      }
      act[j] = swiglu ? ref::silu(zg[j]) * z[j] : ref::gelu(z[j]);
    }
    double dgate = 0.0;
    for (i64 c = 0; c < d; ++c) {
      double out = 0.0;
      for (i64 j = 0; j < f; ++j) out += act[j] * down[j * d + c];
      dgate += dy[t * d + c] * out;
    }
    for (i64 j = 0; j < f; ++j) {
      double dact = 0.0;
      for (i64 c = 0; c < d; ++c) {
        dact += gate * dy[t * d + c] * down[j * d + c];
        dw.expert_down[static_cast<std::size_t>(e * f * d + j * d + c)] += act[j] * gate * dy[t * d + c];
      }
      double dz = 0.0, dzg = 0.0;
      if (swiglu) {
        const double sg = sigmoid(zg[j]);
        dz = dact * ref::silu(zg[j]);
        dzg = dact * z[j] * sg * (1.0 + zg[j] * (1.0 - sg));
      } else {
        dz = dact * gelu_derivative(z[j]);
      }
      for (i64 l = 0; l < d; ++l) {
        dw.expert_up[static_cast<std::size_t>(e * d * f + l * f + j)] += u[t * d + l] * dz;
        du[t * d + l] += dz * up[l * f + j];
        if (swiglu) {
          dw.expert_gate[static_cast<std::size_t>(e * d * f + l * f + j)] += u[t * d + l] * dzg;
          du[t * d + l] += dzg * gt[l * f + j];
        }
      }
    }
    for (i64 j = 0; j < Et; ++j) {
      const double dl = dgate * gate * ((j == e ? 1.0 : 0.0) - prob[static_cast<std::size_t>(j)]);
      for (i64 l = 0; l < d; ++l) {
        dw.expert_router_w[static_cast<std::size_t>(l * Et + j)] += u[t * d + l] * dl;
        du[t * d + l] += dl * w.expert_router_w[static_cast<std::size_t>(l * Et + j)];
      }
    }
  }
  return du;
}

// The block's backward on `in` [B·n, d] given dy: returns d_in and fills the weight grads
// (an MoE MLP's rows held at `expert`).
mat block_backward(const block_shape& s, const ref::weights& w, const mat& in, i64 n, const mat& dy, ref::weights& dw,
                   const std::vector<int>& expert = {}) {
  const i64 m = s.batch * n, d = s.d_model, dq = s.d_q(), dkv = s.d_kv(), H = s.n_heads, dh = s.d_head;
  const i64 group = s.n_heads / s.n_kv_heads;
  // The forward again, keeping its intermediates.
  const mat a = ref::rms_norm(in, w.attn_g, m, d);
  const mat q = ref::matmul(a, w.wq, m, d, dq), k = ref::matmul(a, w.wk, m, d, dkv),
            v = ref::matmul(a, w.wv, m, d, dkv);
  const mat p = ref::causal_softmax(ref::attention_scores(s, q, k, n), s.batch * H, n);
  const mat o = ref::attention_values(s, p, v, n);
  mat h = ref::matmul(o, w.wo, m, dq, d);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] += in[i];
  const mat u = ref::rms_norm(h, w.mlp_g, m, d);
  const mat du = s.variant == moe_variant::none ? dense_mlp_backward(s, w, u, m, dy, dw)
                                                : moe_mlp_backward(s, w, u, m, dy, expert, dw);
  mat dhh = dy;
  rms_norm_backward(h, w.mlp_g, du, dhh, dw.mlp_g, m, d);

  dw.wo = matmul_tn(o, dhh, m, dq, d);
  const mat d_o = matmul_nt(dhh, w.wo, m, d, dq);
  mat dqm(q.size(), 0.0), dkm(k.size(), 0.0), dvm(v.size(), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  for (i64 b = 0; b < s.batch; ++b)
    for (i64 hd = 0; hd < H; ++hd) {
      const i64 kv = hd / group;
      auto P = [&](i64 i, i64 j) { return p[static_cast<std::size_t>(((b * H + hd) * n + i) * n + j)]; };
      for (i64 i = 0; i < n; ++i) {
        // dP_ij = dO_i·V_j; dS_ij = P_ij(dP_ij − Σ_l P_il dP_il)
        mat dp(static_cast<std::size_t>(n), 0.0);
        double rowdot = 0.0;
        for (i64 j = 0; j <= i; ++j) {
          for (i64 e = 0; e < dh; ++e)
            dp[j] += d_o[(b * n + i) * dq + hd * dh + e] * v[(b * n + j) * dkv + kv * dh + e];
          rowdot += P(i, j) * dp[j];
        }
        for (i64 j = 0; j <= i; ++j) {
          const double ds = P(i, j) * (dp[j] - rowdot) * scale;
          for (i64 e = 0; e < dh; ++e) {
            dqm[(b * n + i) * dq + hd * dh + e] += ds * k[(b * n + j) * dkv + kv * dh + e];
            dkm[(b * n + j) * dkv + kv * dh + e] += ds * q[(b * n + i) * dq + hd * dh + e];
            dvm[(b * n + j) * dkv + kv * dh + e] += P(i, j) * d_o[(b * n + i) * dq + hd * dh + e];
          }
        }
      }
    }
  dw.wq = matmul_tn(a, dqm, m, d, dq);
  dw.wk = matmul_tn(a, dkm, m, d, dkv);
  dw.wv = matmul_tn(a, dvm, m, d, dkv);
  mat da = matmul_nt(dqm, w.wq, m, dq, d);
  const mat da_k = matmul_nt(dkm, w.wk, m, dkv, d), da_v = matmul_nt(dvm, w.wv, m, dkv, d);
  for (std::size_t i = 0; i < da.size(); ++i) da[i] += da_k[i] + da_v[i];
  mat d_in = dhh;
  rms_norm_backward(in, w.attn_g, da, d_in, dw.attn_g, m, d);
  return d_in;
}

// The layer's backward for L = Σ out·G (routing held at `routed`).
reference_grads layer_backward(const block_shape& s, bool routed_layer, const ref::weights& w, const mat& x,
                               const std::vector<int>& routed, const mat& g, const std::vector<int>& expert = {}) {
  reference_grads res;
  if (!routed_layer) {
    res.dx = block_backward(s, w, x, s.seq_len, g, res.dw, expert);
    return res;
  }
  const i64 S = s.seq_len, k = s.routed_tokens(), d = s.d_model, m = s.batch * k;
  const mat r = ref::router_logits(s, x, w.router_w);
  mat xt(static_cast<std::size_t>(m * d)), dy(xt.size());
  std::vector<i64> rows;
  for (i64 j = 0; j < m; ++j) {
    rows.push_back((j / k) * S + routed[static_cast<std::size_t>(j)]);
    for (i64 c = 0; c < d; ++c) {
      xt[j * d + c] = x[rows.back() * d + c];
      dy[j * d + c] = r[rows.back()] * g[rows.back() * d + c];
    }
  }
  const mat y = s.variant == moe_variant::none ? ref::block(s, w, xt, k) : moe_block(s, w, xt, k, expert);
  const mat dxt = block_backward(s, w, xt, k, dy, res.dw, expert);
  res.dx = g;
  res.dw.router_w.assign(static_cast<std::size_t>(d), 0.0);
  for (i64 j = 0; j < m; ++j) {
    const i64 row = rows[static_cast<std::size_t>(j)];
    double dr = 0.0;
    for (i64 c = 0; c < d; ++c) dr += g[row * d + c] * (y[j * d + c] - xt[j * d + c]);
    for (i64 c = 0; c < d; ++c) {
      res.dx[row * d + c] += dxt[j * d + c] - r[row] * g[row * d + c] + dr * w.router_w[c];
      res.dw.router_w[c] += dr * xt[j * d + c];
    }
  }
  return res;
}

// ---- the kernels' side ----

struct kernel_run {
  std::vector<float> out, dx;
  layer_params grads;
  train::saved_activations saved;
};

kernel_run run_kernels(const layer_params& p, const std::vector<float>& x, const std::vector<float>& g,
                       recompute mode = recompute::none) {
  train::cpu_trainer trainer(2);
  kernel_run k;
  k.out.resize(x.size());
  k.dx.resize(x.size());
  trainer.forward(p, x, k.out, k.saved, mode);
  trainer.backward(p, k.saved, g, k.dx, k.grads);
  return k;
}

std::vector<int> routing_of(const train::saved_activations& s) {
  return std::vector<int>(s.routed_index.begin(), s.routed_index.end());
}

// (routed, mlp, n_kv_heads)
using layer_case = std::tuple<bool, mlp_kind, int>;

std::string case_name(const ::testing::TestParamInfo<layer_case>& info) {
  const auto [routed, mlp, kv] = info.param;
  return std::string(routed ? "Mod" : "Dense") + (mlp == mlp_kind::swiglu ? "Swiglu" : "Gelu") +
         (kv == 2 ? "Mha" : "Gqa");
}

block_shape tiny_shape(mlp_kind mlp, int kv_heads) {
  block_shape s;
  s.batch = 2;
  s.seq_len = 5;
  s.d_model = 8;
  s.n_heads = 2;
  s.n_kv_heads = kv_heads;
  s.d_head = 4;
  s.d_ff = 12;
  s.mlp = mlp;
  s.capacity = 0.5;  // k = ceil(2.5) = 3 of 5
  return s;
}

// x for a routed tiny layer with a tie at the top-k boundary of sequence 0: rows 1, 2 and 4
// are the same vector v (equal router weights), row 3 is v + 2·w/|w|² (r larger by 2) and
// row 0 is v − 2·w/|w|² (smaller by 2), so the top 3 are row 3, then two of the three tied
// rows: 1 and 2 (the lower positions win), 4 is skipped. Sequence 1 is random.
std::vector<float> tiny_input(const block_shape& s, const layer_params& p) {
  auto x = ref::random_floats(static_cast<std::size_t>(s.tokens() * s.d_model), 31);
  if (!p.routed) return x;
  const i64 d = s.d_model;
  double w2 = 0.0;
  for (const float wi : p.router_w) w2 += static_cast<double>(wi) * wi;
  for (i64 c = 0; c < d; ++c) {
    const float v = x[static_cast<std::size_t>(1 * d + c)];
    const auto shift = static_cast<float>(2.0 * p.router_w[static_cast<std::size_t>(c)] / w2);
    x[static_cast<std::size_t>(2 * d + c)] = v;
    x[static_cast<std::size_t>(4 * d + c)] = v;
    x[static_cast<std::size_t>(3 * d + c)] = v + shift;
    x[static_cast<std::size_t>(0 * d + c)] = v - shift;
  }
  return x;
}

class TrainLayer : public ::testing::TestWithParam<layer_case> {};

TEST_P(TrainLayer, EveryGradientMatchesCentralFiniteDifferences) {
  const auto [routed, mlp, kv] = GetParam();
  const block_shape s = tiny_shape(mlp, kv);
  const layer_params p = train::random_params(s, routed, 5);
  const auto x = tiny_input(s, p);
  const auto g = ref::random_floats(x.size(), 37);
  const kernel_run k = run_kernels(p, x, g);
  const auto routed_at = routing_of(k.saved);
  if (routed) {
    ASSERT_EQ(routed_at.size(), 6u);
    EXPECT_EQ(std::vector<int>(routed_at.begin(), routed_at.begin() + 3), (std::vector<int>{1, 2, 3}));
  }

  ref::weights w = to_weights(p);
  mat xd = ref::to_double(x);
  const mat gd = ref::to_double(g);
  const auto l = [&] { return loss(layer_out(s, routed, w, xd, routed_at), gd); };
  EXPECT_LE(ref::relative_error(k.out, layer_out(s, routed, w, xd, routed_at)), 1e-5);
  const auto wt = weight_tensors(w);
  const auto kt = k.grads.tensors();
  const reference_grads loops = layer_backward(s, routed, w, xd, routed_at, gd);
  ref::weights loop_w = loops.dw;
  const auto lt = weight_tensors(loop_w);
  for (std::size_t i = 0; i < wt.size(); ++i) {
    SCOPED_TRACE("parameter tensor " + std::to_string(i));
    ASSERT_EQ(kt[i]->size(), wt[i]->size());
    if (wt[i]->empty()) continue;
    const mat fd = finite_differences(*wt[i], l);
    EXPECT_LE(ref::relative_error(*kt[i], fd), 1e-4);
    EXPECT_LE(ref::relative_error(*lt[i], fd), 1e-6);  // the loop reference itself
  }
  const mat fd_x = finite_differences(xd, l);
  EXPECT_LE(ref::relative_error(k.dx, fd_x), 1e-4);
  EXPECT_LE(ref::relative_error(loops.dx, fd_x), 1e-6);
}

// Every parameter's gradient and dL/dx of the kernels against the float64 loop reference's
// (fp32: 1e-4 relative).
void expect_grads_match(const kernel_run& k, reference_grads& loops) {
  const auto lt = weight_tensors(loops.dw);
  const auto kt = k.grads.tensors();
  for (std::size_t i = 0; i < lt.size(); ++i) {
    SCOPED_TRACE("parameter tensor " + std::to_string(i));
    ASSERT_EQ(kt[i]->size(), lt[i]->size());
    if (!lt[i]->empty()) {
      EXPECT_LE(ref::relative_error(*kt[i], *lt[i]), 1e-4);
    }
  }
  EXPECT_LE(ref::relative_error(k.dx, loops.dx), 1e-4);
}

// The kernels' output (1e-5) and every gradient (1e-4, relative) against the float64 loop
// reference of the same layer, input, output gradient and routing.
void expect_loop_reference(const block_shape& s, bool routed, const layer_params& p, const std::vector<float>& x,
                           const std::vector<float>& g, const std::vector<int>& routed_at, const kernel_run& k) {
  ref::weights w = to_weights(p);
  const mat xd = ref::to_double(x);
  EXPECT_LE(ref::relative_error(k.out, layer_out(s, routed, w, xd, routed_at)), 1e-5);
  reference_grads loops = layer_backward(s, routed, w, xd, routed_at, ref::to_double(g));
  expect_grads_match(k, loops);
}

TEST_P(TrainLayer, EveryGradientMatchesTheFloat64LoopReferenceOnALargerShape) {
  const auto [routed, mlp, kv] = GetParam();
  block_shape s;
  s.batch = 2;
  s.seq_len = 24;
  s.d_model = 48;
  s.n_heads = 6;
  s.n_kv_heads = kv == 2 ? 6 : 2;
  s.d_head = 8;
  s.d_ff = 96;
  s.mlp = mlp;
  s.capacity = 0.375;  // k = 9 of 24
  const layer_params p = train::random_params(s, routed, 11);
  const auto x = ref::random_floats(static_cast<std::size_t>(s.tokens() * s.d_model), 41);
  const auto g = ref::random_floats(x.size(), 43);
  const kernel_run k = run_kernels(p, x, g);
  const auto routed_at = routed ? routing_of(k.saved) : std::vector<int>{};
  if (routed) {
    EXPECT_EQ(routed_at, ref::top_k(s, ref::router_logits(s, ref::to_double(x), ref::to_double(p.router_w))));
  }
  expect_loop_reference(s, routed, p, x, g, routed_at, k);
}

// Sequences longer than one causal block (the kernels split attention into blocks of 64 rows
// past 128 tokens: 200 tokens are blocks of 64, 64, 64 and 8; the routed layer's k = 140 of
// 200 too), with every head its own task; the GQA case has 4 query heads on 1 kv head, whose
// dK and dV add up over the group. Under none and selective (probabilities recomputed).
TEST_P(TrainLayer, CausalBlocksOfALongSequenceMatchTheFloat64LoopReference) {
  const auto [routed, mlp, kv] = GetParam();
  block_shape s;
  s.batch = 2;
  s.seq_len = 200;
  s.d_model = 16;
  s.n_heads = 4;
  s.n_kv_heads = kv == 2 ? 4 : 1;
  s.d_head = 4;
  s.d_ff = 24;
  s.mlp = mlp;
  s.capacity = 0.7;  // k = 140 of 200
  const layer_params p = train::random_params(s, routed, 13);
  const auto x = ref::random_floats(static_cast<std::size_t>(s.tokens() * s.d_model), 47);
  const auto g = ref::random_floats(x.size(), 53);
  for (const auto mode : {recompute::none, recompute::selective}) {
    SCOPED_TRACE(std::string(train::to_string(mode)));
    const kernel_run k = run_kernels(p, x, g, mode);
    const auto routed_at = routed ? routing_of(run_kernels(p, x, g).saved) : std::vector<int>{};
    expect_loop_reference(s, routed, p, x, g, routed_at, k);
  }
}

TEST_P(TrainLayer, SelectiveAndFullRecomputationGiveTheGradientsOfNone) {
  const auto [routed, mlp, kv] = GetParam();
  const block_shape s = tiny_shape(mlp, kv);
  const layer_params p = train::random_params(s, routed, 5);
  const auto x = tiny_input(s, p);
  const auto g = ref::random_floats(x.size(), 37);
  const kernel_run none = run_kernels(p, x, g, recompute::none);
  for (const auto mode : {recompute::selective, recompute::full}) {
    SCOPED_TRACE(std::string(train::to_string(mode)));
    const kernel_run other = run_kernels(p, x, g, mode);
    EXPECT_EQ(other.out, none.out);
    EXPECT_LT(other.saved.bytes(), none.saved.bytes());
    const auto a = none.grads.tensors(), b = other.grads.tensors();
    for (std::size_t i = 0; i < a.size(); ++i)
      for (std::size_t j = 0; j < a[i]->size(); ++j) EXPECT_NEAR((*b[i])[j], (*a[i])[j], 1e-6);
    for (std::size_t j = 0; j < x.size(); ++j) EXPECT_NEAR(other.dx[j], none.dx[j], 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Layers, TrainLayer,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(mlp_kind::gelu, mlp_kind::swiglu),
                                            ::testing::Values(2, 1)),
                         case_name);

// ---- MoDE: the MLP is an MoE; the experts' choice is held fixed as top-k is ----

// The block on `in` with the MoE MLP, each row's expert held at expert[row] (-1 dropped,
// >= experts no-op); gate = softmax(u·W_router)[expert] recomputed from the weights.
mat moe_block(const block_shape& s, const ref::weights& w, const mat& in, i64 n, const std::vector<int>& expert) {
  const i64 m = s.batch * n, d = s.d_model, dq = s.d_q(), dkv = s.d_kv(), Et = s.router_experts();
  const mat a = ref::rms_norm(in, w.attn_g, m, d);
  const mat q = ref::matmul(a, w.wq, m, d, dq), k = ref::matmul(a, w.wk, m, d, dkv),
            v = ref::matmul(a, w.wv, m, d, dkv);
  const mat p = ref::causal_softmax(ref::attention_scores(s, q, k, n), s.batch * s.n_heads, n);
  mat h = ref::matmul(ref::attention_values(s, p, v, n), w.wo, m, dq, d);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] += in[i];
  const mat u = ref::rms_norm(h, w.mlp_g, m, d);
  const mat logits = ref::matmul(u, w.expert_router_w, m, d, Et);
  std::vector<double> gate(static_cast<std::size_t>(m), 0.0);
  for (i64 t = 0; t < m; ++t) {
    const int e = expert[static_cast<std::size_t>(t)];
    if (e < 0) continue;
    double sum = 0.0;
    for (i64 j = 0; j < Et; ++j) sum += std::exp(logits[t * Et + j] - logits[t * Et + e]);
    gate[static_cast<std::size_t>(t)] = 1.0 / sum;
  }
  return ref::moe_apply(s, w, u, h, m, expert, gate);
}

// The MoDE layer: staged routes (Equation 1) around moe_block, integrated runs it on all tokens.
mat mode_layer_out(const block_shape& s, const ref::weights& w, const mat& x, const std::vector<int>& routed,
                   const std::vector<int>& expert) {
  if (s.variant == moe_variant::integrated) return moe_block(s, w, x, s.seq_len, expert);
  const i64 S = s.seq_len, k = s.routed_tokens(), d = s.d_model;
  const mat r = ref::router_logits(s, x, w.router_w);
  mat xt(static_cast<std::size_t>(s.batch * k * d));
  for (i64 j = 0; j < s.batch * k; ++j)
    for (i64 c = 0; c < d; ++c) xt[j * d + c] = x[((j / k) * S + routed[static_cast<std::size_t>(j)]) * d + c];
  const mat y = moe_block(s, w, xt, k, expert);
  mat out = x;
  for (i64 j = 0; j < s.batch * k; ++j) {
    const i64 row = (j / k) * S + routed[static_cast<std::size_t>(j)];
    for (i64 c = 0; c < d; ++c) out[row * d + c] = x[row * d + c] + r[row] * (y[j * d + c] - xt[j * d + c]);
  }
  return out;
}

using mode_case = std::tuple<moe_variant, mlp_kind>;

std::string mode_case_name(const ::testing::TestParamInfo<mode_case>& info) {
  const auto [variant, mlp] = info.param;
  return std::string(variant == moe_variant::staged ? "Staged" : "Integrated") +
         (mlp == mlp_kind::swiglu ? "Swiglu" : "Gelu");
}

class TrainMoDe : public ::testing::TestWithParam<mode_case> {
 protected:
  // Tiny GQA shape; 2 real experts at capacity factor 0.5 (staged: m = 6 rows, 2 kept per
  // expert; integrated: one no-op expert, m = 10 rows, 2 kept per expert), so tokens drop.
  static block_shape shape() {
    const auto [variant, mlp] = GetParam();
    block_shape s = tiny_shape(mlp, 1);
    s.variant = variant;
    s.experts = 2;
    s.noop_experts = variant == moe_variant::integrated ? 1 : 0;
    s.capacity_factor = 0.5;
    return s;
  }
};

TEST_P(TrainMoDe, EveryGradientMatchesCentralFiniteDifferences) {
  const block_shape s = shape();
  const bool routed = s.variant == moe_variant::staged;
  const layer_params p = train::random_params(s, routed, 9);
  const auto x = ref::random_floats(static_cast<std::size_t>(s.tokens() * s.d_model), 47);
  const auto g = ref::random_floats(x.size(), 53);
  const kernel_run k = run_kernels(p, x, g);
  const auto routed_at = routing_of(k.saved);
  const std::vector<int> expert(k.saved.expert_index.begin(), k.saved.expert_index.end());
  // The kernels' expert choice is the reference's for the same logits (float64 here).
  const i64 m = static_cast<i64>(expert.size());
  EXPECT_EQ(m, s.batch * (routed ? s.routed_tokens() : s.seq_len));
  EXPECT_EQ(expert, ref::assign_experts(s, ref::to_double(k.saved.expert_probs), m).expert);
  // The case covers a dropped token, and for integrated a no-op expert's.
  EXPECT_TRUE(std::count(expert.begin(), expert.end(), -1) > 0);
  if (s.variant == moe_variant::integrated) {
    EXPECT_TRUE(std::count(expert.begin(), expert.end(), s.experts) > 0);
  }

  ref::weights w = to_weights(p);
  mat xd = ref::to_double(x);
  const mat gd = ref::to_double(g);
  const auto l = [&] { return loss(mode_layer_out(s, w, xd, routed_at, expert), gd); };
  EXPECT_LE(ref::relative_error(k.out, mode_layer_out(s, w, xd, routed_at, expert)), 1e-5);
  const auto wt = weight_tensors(w);
  const auto kt = k.grads.tensors();
  for (std::size_t i = 0; i < wt.size(); ++i) {
    SCOPED_TRACE("parameter tensor " + std::to_string(i));
    ASSERT_EQ(kt[i]->size(), wt[i]->size());
    if (wt[i]->empty()) continue;
    EXPECT_LE(ref::relative_error(*kt[i], finite_differences(*wt[i], l)), 1e-4);
  }
  EXPECT_LE(ref::relative_error(k.dx, finite_differences(xd, l)), 1e-4);
}

TEST_P(TrainMoDe, EveryGradientMatchesTheFloat64LoopReferenceOnALargerShape) {
  block_shape s = shape();
  s.seq_len = 24;
  s.d_model = 48;
  s.n_heads = 6;
  s.n_kv_heads = 2;
  s.d_head = 8;
  s.d_ff = 96;
  s.capacity = 0.375;  // k = 9 of 24
  s.experts = 4;
  const bool routed = s.variant == moe_variant::staged;
  const layer_params p = train::random_params(s, routed, 13);
  const auto x = ref::random_floats(static_cast<std::size_t>(s.tokens() * s.d_model), 59);
  const auto g = ref::random_floats(x.size(), 61);
  const kernel_run k = run_kernels(p, x, g);
  const auto routed_at = routing_of(k.saved);
  const std::vector<int> expert(k.saved.expert_index.begin(), k.saved.expert_index.end());
  const ref::weights w = to_weights(p);
  const mat xd = ref::to_double(x);
  EXPECT_LE(ref::relative_error(k.out, mode_layer_out(s, w, xd, routed_at, expert)), 1e-5);
  reference_grads loops = layer_backward(s, routed, w, xd, routed_at, ref::to_double(g), expert);
  expect_grads_match(k, loops);
}

TEST_P(TrainMoDe, SelectiveAndFullRecomputationGiveTheGradientsOfNone) {
  const block_shape s = shape();
  const layer_params p = train::random_params(s, s.variant == moe_variant::staged, 9);
  const auto x = ref::random_floats(static_cast<std::size_t>(s.tokens() * s.d_model), 47);
  const auto g = ref::random_floats(x.size(), 53);
  const kernel_run none = run_kernels(p, x, g, recompute::none);
  for (const auto mode : {recompute::selective, recompute::full}) {
    SCOPED_TRACE(std::string(train::to_string(mode)));
    const kernel_run other = run_kernels(p, x, g, mode);
    EXPECT_EQ(other.out, none.out);
    const auto a = none.grads.tensors(), b = other.grads.tensors();
    for (std::size_t i = 0; i < a.size(); ++i)
      for (std::size_t j = 0; j < a[i]->size(); ++j) EXPECT_NEAR((*b[i])[j], (*a[i])[j], 1e-6);
    for (std::size_t j = 0; j < x.size(); ++j) EXPECT_NEAR(other.dx[j], none.dx[j], 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, TrainMoDe,
                         ::testing::Combine(::testing::Values(moe_variant::staged, moe_variant::integrated),
                                            ::testing::Values(mlp_kind::gelu, mlp_kind::swiglu)),
                         mode_case_name);

// Two tokens, d = 2, one head (d_head 2), d_ff 2, capacity 0.5 (k = 1), gains 1, W_q = W_k = 0,
// W_v = I, W_o = 0.5·I, W_up = 0 (so the MLP adds gelu(0)·W_down = 0), W_down all ones,
// router w = (1, 0). x_1 = (1, −1), x_2 = (0, 2): r = (1, 0), token 1 is routed.
//   Block on x̃ = x_1: RMSNorm (mean square 1) gives a = (1, −1); v = a; one token attends to
//   itself, o = v; h = x̃ + 0.5·o = (1.5, −1.5); MLP adds 0, y = h; Δ = y − x̃ = (0.5, −0.5).
//   out_1 = x_1 + r_1·Δ = (1.5, −1.5); out_2 = x_2.
// With L = Σ out·G, G_1 = (2, 1), G_2 = (−1, 3):
//   dL/dr_1 = ⟨G_1, Δ⟩ = 2·0.5 − 1·0.5 = 0.5; dL/dw = dL/dr_1·x_1 = (0.5, −0.5) (token 2 skipped).
//   dy = r_1·G_1 = (2, 1); the MLP passes dh = dy (its input gradient is through W_up = 0);
//   dO = dh·W_oᵀ = (1, 0.5) = dV (P = 1); dS = P(dP − P·dP) = 0, so dq = dk = 0; da = (1, 0.5).
//   RMSNorm backward at n̂ = (1, −1): mean(da·n̂) = 0.25, dx̃ = (1 − 0.25, 0.5 + 0.25) + dh =
//   (2.75, 1.75). dx_1 = G_1 + dx̃ − r_1·G_1 + dL/dr_1·w = (2, 1) + (2.75, 1.75) − (2, 1) +
//   (0.5, 0) = (3.25, 1.75); dx_2 = G_2 = (−1, 3).
//   dW_o = oᵀ·dh = [[2, 1], [−2, −1]]; dW_up = uᵀ·(dy·W_downᵀ·gelu'(0)) with u = (1, −1),
//   dy·W_downᵀ = (3, 3), gelu'(0) = 0.5: [[1.5, 1.5], [−1.5, −1.5]].
TEST(TrainRouter, GradientWorkedByHandOnTwoTokens) {
  block_shape s;
  s.batch = 1;
  s.seq_len = 2;
  s.d_model = 2;
  s.n_heads = 1;
  s.n_kv_heads = 1;
  s.d_head = 2;
  s.d_ff = 2;
  s.capacity = 0.5;
  layer_params p = train::zero_params(s, true);
  p.router_w = {1, 0};
  p.attn_norm_g = {1, 1};
  p.mlp_norm_g = {1, 1};
  p.w_v = {1, 0, 0, 1};
  p.w_o = {0.5f, 0, 0, 0.5f};
  p.w_down = {1, 1, 1, 1};
  const kernel_run k = run_kernels(p, {1, -1, 0, 2}, {2, 1, -1, 3});
  const auto near = [](const std::vector<float>& got, const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
  };
  near(k.out, {1.5, -1.5, 0, 2});
  near(k.grads.router_w, {0.5, -0.5});
  near(k.dx, {3.25, 1.75, -1, 3});
  near(k.grads.w_o, {2, 1, -2, -1});
  near(k.grads.w_up, {1.5, 1.5, -1.5, -1.5});
}

// B = 1, S = 4, d = 2, one head of 2 (d_q = d_kv = 2), d_ff 3, gelu, capacity 0.5 (k = 2).
// Floats kept (4 bytes each):
//   routed, none: x T·d = 8, routed index 2 (int32) and r̃ 2, then per routed row (m = 2):
//     attn_in 2·2, q, k, v 3·2·2, probs B·H·k² = 4, attn_out 2·2, h 2·2, mlp_in 2·2,
//     up and act 2·2·3, y 2·2 = 4 + 12 + 4 + 4 + 4 + 4 + 12 + 4 = 48 → 60 elements, 240 bytes;
//   selective: the same without probs, 56 → 224 bytes; full: x only, 8 → 32 bytes.
//   dense (m = 4, no index, r or y), none: 8 + 8 + 24 + 16 + 8 + 8 + 8 + 24 = 104 → 416 bytes.
//   integrated MoDE, one real expert and one no-op, dropless, the expert router all zeros (every
//   logit ties, the lower expert wins: all 4 tokens go to the real one, kept = 4): the dense
//   layer's 8 + 8 + 24 + 16 + 8 + 8 + 8 = 80 up to mlp_in, then expert probabilities 4·2,
//   expert index 4 (int32), up and act 4·3 each, expert outputs 4·2 → 124 elements, 496 bytes.
// The skipped tokens keep nothing but their row of x.
TEST(TrainSaved, ActivationBytesMatchAHandCount) {
  block_shape s;
  s.batch = 1;
  s.seq_len = 4;
  s.d_model = 2;
  s.n_heads = 1;
  s.n_kv_heads = 1;
  s.d_head = 2;
  s.d_ff = 3;
  s.capacity = 0.5;
  const auto x = ref::random_floats(8, 3);
  const auto bytes = [&](bool routed, recompute mode) {
    train::cpu_trainer trainer(1);
    train::saved_activations saved;
    std::vector<float> out(8);
    layer_params p = train::random_params(s, routed, 2);
    std::fill(p.expert_router_w.begin(), p.expert_router_w.end(), 0.0f);
    trainer.forward(p, x, out, saved, mode);
    return saved.bytes();
  };
  EXPECT_EQ(bytes(true, recompute::none), 240);
  EXPECT_EQ(bytes(true, recompute::selective), 224);
  EXPECT_EQ(bytes(true, recompute::full), 32);
  EXPECT_EQ(bytes(false, recompute::none), 416);
  s.variant = moe_variant::integrated;
  s.experts = 1;
  s.noop_experts = 1;
  s.capacity_factor = 0.0;
  EXPECT_EQ(bytes(false, recompute::none), 496);
}

TEST(TrainSaved, RecomputeNamesRoundTripAndOthersAreRefused) {
  for (const auto r : {recompute::none, recompute::selective, recompute::full})
    EXPECT_EQ(train::parse_recompute(train::to_string(r)), r);
  EXPECT_THROW(train::parse_recompute("partial"), modsim::error);
}

TEST(TrainSaved, MoDeLayersOfTheWrongRoutingAndMismatchedSizesAreRefused) {
  block_shape s = tiny_shape(mlp_kind::gelu, 1);
  s.variant = moe_variant::staged;
  s.experts = 2;
  EXPECT_THROW(train::zero_params(s, false), modsim::error);
  s.variant = moe_variant::integrated;
  s.noop_experts = 1;
  EXPECT_THROW(train::zero_params(s, true), modsim::error);
  layer_params p = train::zero_params(tiny_shape(mlp_kind::gelu, 1), true);
  p.w_q.pop_back();
  train::cpu_trainer trainer(1);
  train::saved_activations saved;
  std::vector<float> x(80), out(80);
  EXPECT_THROW(trainer.forward(p, x, out, saved), modsim::error);
}

// The predictor's mean BCE in float64, plain loops: p_i = relu(x_i·W_1)·w_2 + b, target 1 at
// the routed positions.
double predictor_loss(const block_shape& s, const mat& w1, const mat& w2, double b, const mat& x,
                      const std::vector<std::int32_t>& routed, i64 hidden) {
  const i64 T = s.tokens(), d = s.d_model, k = s.routed_tokens();
  std::vector<double> t(static_cast<std::size_t>(T), 0.0);
  for (i64 j = 0; j < s.batch * k; ++j) t[static_cast<std::size_t>((j / k) * s.seq_len + routed[j])] = 1.0;
  double loss = 0.0;
  for (i64 i = 0; i < T; ++i) {
    double p = b;
    for (i64 c = 0; c < hidden; ++c) {
      double pre = 0.0;
      for (i64 e = 0; e < d; ++e) pre += x[i * d + e] * w1[e * hidden + c];
      p += std::max(pre, 0.0) * w2[c];
    }
    const double sig = 1.0 / (1.0 + std::exp(-p));
    loss -= t[i] * std::log(sig) + (1.0 - t[i]) * std::log(1.0 - sig);
  }
  return loss / static_cast<double>(T);
}

TEST(TrainPredictor, BceGradientsMatchCentralFiniteDifferences) {
  const block_shape s = tiny_shape(mlp_kind::gelu, 1);
  const i64 hidden = 6;
  train::predictor_params p;
  p.d_model = s.d_model;
  p.hidden = hidden;
  p.w1 = ref::random_floats(static_cast<std::size_t>(s.d_model * hidden), 61, 0.5);
  p.w2 = ref::random_floats(static_cast<std::size_t>(hidden), 67);
  p.bias = 0.3f;
  const auto x = ref::random_floats(static_cast<std::size_t>(s.tokens() * s.d_model), 71);
  const std::vector<std::int32_t> routed = {0, 2, 3, 1, 3, 4};  // k = 3 per sequence
  train::cpu_trainer trainer(2);
  train::predictor_grads g;
  const double loss = trainer.predictor_backward(p, s, x, routed, g);
  mat w1 = ref::to_double(p.w1), w2 = ref::to_double(p.w2);
  double b = p.bias;
  const mat xd = ref::to_double(x);
  const auto l = [&] { return predictor_loss(s, w1, w2, b, xd, routed, hidden); };
  EXPECT_NEAR(loss, l(), 1e-6);
  EXPECT_LE(ref::relative_error(g.w1, finite_differences(w1, l)), 1e-4);
  EXPECT_LE(ref::relative_error(g.w2, finite_differences(w2, l)), 1e-4);
  mat bias = {b};
  const auto lb = [&] { return predictor_loss(s, w1, w2, bias[0], xd, routed, hidden); };
  EXPECT_NEAR(g.bias, finite_differences(bias, lb)[0], 1e-6);
}

// d = 1, hidden 1, W_1 = 1, w_2 = 2, b = −1; one sequence x = (1, −1), k = 1, token 0 routed
// (targets 1, 0). Hidden relu(x) = (1, 0), p = (1, −1), σ(p) = (0.7310586, 0.2689414).
// L = mean(log(1 + e^−1), log(1 + e^−1)) = 0.3132617. dL/dp = (σ(p) − t)/2 = (−0.1344707,
// 0.1344707): dL/db = 0, dL/dw_2 = 1·(−0.1344707) + 0 = −0.1344707, dL/dW_1 =
// x_0·w_2·dL/dp_0 (token 1's relu is off) = −0.2689414.
TEST(TrainPredictor, BceWorkedByHandOnTwoTokens) {
  block_shape s;
  s.batch = 1;
  s.seq_len = 2;
  s.d_model = 1;
  s.n_heads = 1;
  s.n_kv_heads = 1;
  s.d_head = 1;
  s.d_ff = 1;
  s.capacity = 0.5;
  train::predictor_params p;
  p.d_model = 1;
  p.hidden = 1;
  p.w1 = {1};
  p.w2 = {2};
  p.bias = -1;
  train::cpu_trainer trainer(1);
  train::predictor_grads g;
  EXPECT_NEAR(trainer.predictor_backward(p, s, std::vector<float>{1, -1}, std::vector<std::int32_t>{0}, g), 0.3132617,
              1e-6);
  EXPECT_NEAR(g.bias, 0.0, 1e-7);
  EXPECT_NEAR(g.w2[0], -0.1344707, 1e-6);
  EXPECT_NEAR(g.w1[0], -0.2689414, 1e-6);
  // Inputs that do not fit the layer are refused, each named (both trainers check them so).
  auto refusal = [&](train::predictor_params q, std::vector<float> x, std::vector<std::int32_t> routed) {
    try {
      trainer.predictor_backward(q, s, x, routed, g);
    } catch (const error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(refusal(p, {1, -1}, {2}), "routed_index: holds position 2");
  EXPECT_EQ(refusal(p, {1}, {0}), "x: has 1 elements, the layer needs 2");
  train::predictor_params wide = p;
  wide.d_model = 2;
  EXPECT_EQ(refusal(wide, {1, -1}, {0}), "predictor_params.d_model: is 2, the layer's d_model is 1");
}

// Every parameter 1, gradient 0.5 then −0.25; lr 0.01, β = (0.9, 0.999), eps 1e-8, weight
// decay 0.1. Step 1: m = 0.05, v = 2.5e-4, m̂ = 0.5, v̂ = 0.25, p = 1 − 0.01·(0.5/(0.5 + 1e-8) +
// 0.1·1) = 0.9890000002. Step 2: m = 0.045 − 0.025 = 0.02, v = 2.4975e-4 + 6.25e-5 = 3.1225e-4,
// m̂ = 0.02/0.19 = 0.1052632, v̂ = 3.1225e-4/0.001999 = 0.1562031, p = 0.989 − 0.01·(0.1052632/
// 0.3952253 + 0.1·0.989) = 0.9853476.
TEST(TrainAdamW, TwoStepsMatchAHandComputation) {
  const block_shape s = tiny_shape(mlp_kind::swiglu, 1);
  layer_params p = train::zero_params(s, true);
  for (auto* t : p.tensors()) std::fill(t->begin(), t->end(), 1.0f);
  layer_params g = p;
  train::adamw_state state;
  train::adamw_options o;
  o.lr = 0.01;
  o.weight_decay = 0.1;
  train::cpu_trainer trainer(2);
  for (const auto& [grad, want] : {std::pair{0.5f, 0.9890000002}, std::pair{-0.25f, 0.9853476299}}) {
    for (auto* t : g.tensors()) std::fill(t->begin(), t->end(), grad);
    trainer.adamw_step(p, g, state, o);
    for (const auto* t : p.tensors())
      for (const float v : *t) ASSERT_NEAR(v, want, 1e-6);
  }
  EXPECT_EQ(state.step, 2);
  EXPECT_EQ(state.bytes(), 2 * 4 * p.parameter_count());
}

}  // namespace
}  // namespace modsim::kernels
