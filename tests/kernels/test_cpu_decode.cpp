// kernels/cpu/decode.cpp: one KV-cached decode step against a float64 loop reference, and
// incremental decoding (a prompt prefilled by the forward block, then decode steps) against
// one forward pass over the whole sequence with the same routing decisions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kernels/backend.hpp"
#include "kernels/decode.hpp"
#include "kernels/init.hpp"
#include "reference.hpp"

namespace modsim::kernels {
namespace {

using ref::i64;
using ref::mat;

decode_shape tiny(mlp_kind mlp, std::int64_t kv_heads, decode_routing routing = decode_routing::sync) {
  decode_shape s;
  s.batch = 3;
  s.max_context = 24;
  s.d_model = 32;
  s.n_heads = 4;
  s.n_kv_heads = kv_heads;
  s.d_head = 8;
  s.d_ff = 48;
  s.mlp = mlp;
  s.predictor_hidden = 8;
  s.vocab = 40;
  s.page_tokens = 4;  // several pages per sequence, shuffled
  s.layers = {{false}, {true}, {false}, {true}};
  s.routing = routing;
  return s;
}

// ---- float64 reference of one step, from the header's semantics -------------------------

struct ref_cache {
  // [layer][b] -> keys and values per position, each d_kv.
  std::vector<std::vector<std::vector<mat>>> k, v;
};

ref_cache drawn_cache(const decode_shape& s, const std::vector<i64>& ctx, const std::vector<i64>& routed,
                      std::uint64_t seed) {
  ref_cache c;
  const i64 dkv = s.d_kv();
  c.k.resize(s.layers.size());
  c.v.resize(s.layers.size());
  for (std::size_t l = 0; l < s.layers.size(); ++l) {
    c.k[l].resize(static_cast<std::size_t>(s.batch));
    c.v[l].resize(static_cast<std::size_t>(s.batch));
    for (i64 b = 0; b < s.batch; ++b) {
      const i64 len = s.layers[l].routed ? routed[static_cast<std::size_t>(b)] : ctx[static_cast<std::size_t>(b)];
      for (i64 t = 0; t < len; ++t) {
        std::vector<float> kr(static_cast<std::size_t>(dkv)), vr(static_cast<std::size_t>(dkv));
        fill_normal_from(kr, seed, 7000 + 2 * l, 0.0, 0.5, (b * s.max_context + t) * dkv);
        fill_normal_from(vr, seed, 7001 + 2 * l, 0.0, 0.5, (b * s.max_context + t) * dkv);
        c.k[l][static_cast<std::size_t>(b)].push_back(ref::to_double(kr));
        c.v[l][static_cast<std::size_t>(b)].push_back(ref::to_double(vr));
      }
    }
  }
  return c;
}

mat vec(const std::vector<float>& v) { return ref::to_double(v); }

// One block (attention over cache + new token, MLP) for a single row of sequence b.
mat ref_block(const decode_shape& s, const decode_layer_weights& w, const mat& x, const std::vector<mat>& keys,
              const std::vector<mat>& values) {
  const i64 d = s.d_model, dq = s.d_q(), dkv = s.d_kv(), dh = s.d_head, f = s.d_ff;
  const mat a = ref::rms_norm(x, vec(w.attn_norm_g), 1, d);
  const mat q = ref::matmul(a, vec(w.w_q), 1, d, dq);
  const mat k = ref::matmul(a, vec(w.w_k), 1, d, dkv);
  const mat v = ref::matmul(a, vec(w.w_v), 1, d, dkv);
  std::vector<mat> K = keys, V = values;
  K.push_back(k);
  V.push_back(v);
  const i64 L = static_cast<i64>(K.size());
  const i64 group = s.n_heads / s.n_kv_heads;
  mat o(static_cast<std::size_t>(dq), 0.0);
  for (i64 h = 0; h < s.n_heads; ++h) {
    const i64 g = h / group;
    std::vector<double> sc(static_cast<std::size_t>(L));
    double mx = -1e300;
    for (i64 t = 0; t < L; ++t) {
      double dot = 0;
      for (i64 i = 0; i < dh; ++i) dot += q[h * dh + i] * K[t][g * dh + i];
      sc[t] = dot / std::sqrt(static_cast<double>(dh));
      mx = std::max(mx, sc[t]);
    }
    double sum = 0;
    for (auto& e : sc) sum += (e = std::exp(e - mx));
    for (i64 t = 0; t < L; ++t)
      for (i64 i = 0; i < dh; ++i) o[h * dh + i] += sc[t] / sum * V[t][g * dh + i];
  }
  mat h = ref::matmul(o, vec(w.w_o), 1, dq, d);
  for (i64 i = 0; i < d; ++i) h[i] += x[i];
  const mat u = ref::rms_norm(h, vec(w.mlp_norm_g), 1, d);
  mat up = ref::matmul(u, vec(w.w_up), 1, d, f);
  if (s.mlp == mlp_kind::swiglu) {
    const mat gate = ref::matmul(u, vec(w.w_gate), 1, d, f);
    for (i64 i = 0; i < f; ++i) up[i] *= ref::silu(gate[i]);
  } else {
    for (i64 i = 0; i < f; ++i) up[i] = ref::gelu(up[i]);
  }
  mat y = ref::matmul(up, vec(w.w_down), 1, f, d);
  for (i64 i = 0; i < d; ++i) y[i] += h[i];
  return y;
}

double predictor_logit(const decode_shape& s, const decode_layer_weights& w, const mat& x) {
  const mat hid = ref::matmul(x, vec(w.pred_w1), 1, s.d_model, s.predictor_hidden);
  double p = w.pred_b2;
  for (i64 i = 0; i < s.predictor_hidden; ++i) p += std::max(hid[i], 0.0) * w.pred_w2[static_cast<std::size_t>(i)];
  return p;
}

struct ref_step {
  mat hidden, logits;
  std::vector<std::vector<std::uint8_t>> routed;
};

// mask: per routed layer, B decisions; empty = the predictor decides.
ref_step reference_step(const decode_shape& s, const decode_weights& w, const ref_cache& c, const mat& x_in,
                        const std::vector<std::vector<std::uint8_t>>& mask) {
  const i64 B = s.batch, d = s.d_model;
  mat x = x_in;
  ref_step out;
  std::size_t ri = 0;
  for (std::size_t l = 0; l < s.layers.size(); ++l) {
    const decode_layer_weights& lw = w.layers[l];
    std::vector<std::uint8_t> taken(static_cast<std::size_t>(B), 1);
    if (s.layers[l].routed) {
      for (i64 b = 0; b < B; ++b) {
        const mat xb(x.begin() + b * d, x.begin() + (b + 1) * d);
        taken[static_cast<std::size_t>(b)] =
            mask.empty() ? predictor_logit(s, lw, xb) > 0.0 : mask[ri][static_cast<std::size_t>(b)];
      }
    }
    mat next = x;
    for (i64 b = 0; b < B; ++b) {
      if (!taken[static_cast<std::size_t>(b)]) continue;
      const mat xb(x.begin() + b * d, x.begin() + (b + 1) * d);
      const mat y = ref_block(s, lw, xb, c.k[l][static_cast<std::size_t>(b)], c.v[l][static_cast<std::size_t>(b)]);
      if (s.layers[l].routed) {
        double r = 0;
        for (i64 i = 0; i < d; ++i) r += lw.router_w[static_cast<std::size_t>(i)] * xb[i];
        for (i64 i = 0; i < d; ++i) next[b * d + i] = xb[i] + r * (y[i] - xb[i]);
      } else {
        for (i64 i = 0; i < d; ++i) next[b * d + i] = y[i];
      }
    }
    if (s.layers[l].routed) out.routed.push_back(taken), ++ri;
    x = next;
  }
  out.hidden = x;
  const mat n = ref::rms_norm(x, vec(w.final_norm_g), B, d);
  out.logits = ref::matmul(n, vec(w.w_vocab), B, d, s.vocab);
  return out;
}

std::vector<float> inputs(const decode_shape& s, std::uint64_t seed) {
  return ref::random_floats(static_cast<std::size_t>(s.batch * s.d_model), seed);
}

struct step_case {
  const char* name;
  decode_shape shape;
};

void PrintTo(const step_case& c, std::ostream* os) { *os << c.name; }

class DecodeStep : public ::testing::TestWithParam<step_case> {};

TEST_P(DecodeStep, MatchesTheFloat64ReferenceOnARaggedPagedCache) {
  const decode_shape s = GetParam().shape;
  const decode_weights w = make_decode_weights(s, 11);
  auto st = make_cpu_decode(s, w, 2);
  // Ragged, one empty sequence (and more of the same beyond three sequences).
  std::vector<i64> ctx = {5, 0, 17}, routed = {2, 0, 9};
  for (i64 b = 3; b < s.batch; ++b) ctx.push_back(b % 7), routed.push_back(b % 3);
  st->fill_cache(ctx, routed, 3);
  const ref_cache c = drawn_cache(s, ctx, routed, 3);
  const std::vector<float> x = inputs(s, 5);
  st->set_input(x);

  // Forced decisions: sequences 0 and 2 enter the first routed layer, only 1 the second.
  decode_decisions forced;
  forced.from = decode_decisions::source::forced_mask;
  forced.mask = {{1, 0, 1}, {0, 1, 0}};
  for (i64 b = 3; b < s.batch; ++b) forced.mask[0].push_back(b % 2 == 1), forced.mask[1].push_back(b % 3 == 0);
  st->step(forced, false);
  const ref_step want = reference_step(s, w, c, vec(x), forced.mask);
  EXPECT_LT(ref::relative_error(st->hidden(), want.hidden), 1e-4);
  EXPECT_LT(ref::relative_error(st->logits(), want.logits), 1e-4);
  EXPECT_EQ(st->routed(), want.routed);

  // commit = false left the lengths alone, so the predictor's step sees the same cache.
  for (i64 b = 0; b < s.batch; ++b) EXPECT_EQ(st->length(1, b), routed[static_cast<std::size_t>(b)]);
  st->set_input(x);
  st->step({}, false);
  const ref_step by_predictor = reference_step(s, w, c, vec(x), {});
  EXPECT_EQ(st->routed(), by_predictor.routed);
  EXPECT_LT(ref::relative_error(st->hidden(), by_predictor.hidden), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Shapes, DecodeStep,
                         ::testing::Values(step_case{"mha_gelu", tiny(mlp_kind::gelu, 4)},
                                           step_case{"gqa_swiglu", tiny(mlp_kind::swiglu, 2)},
                                           step_case{"mqa_gelu", tiny(mlp_kind::gelu, 1)},
                                           // More rows than one pass of the panel product takes.
                                           step_case{"batch20_gelu",
                                                     [] {
                                                       decode_shape s = tiny(mlp_kind::gelu, 2);
                                                       s.batch = 20;
                                                       return s;
                                                     }()},
                                           // Heads of 64 and 128 take the attention kernels'
                                           // fixed-width paths; widths not a multiple of the
                                           // panel width leave a partial last panel.
                                           step_case{"head64_gqa_swiglu",
                                                     [] {
                                                       decode_shape s = tiny(mlp_kind::swiglu, 2);
                                                       s.d_model = 72;
                                                       s.d_head = 64;
                                                       s.d_ff = 100;
                                                       s.batch = 9;
                                                       return s;
                                                     }()},
                                           // Three KV heads: a task's run of heads does not
                                           // divide them evenly for every row count.
                                           step_case{"kv3_gelu",
                                                     [] {
                                                       decode_shape s = tiny(mlp_kind::gelu, 3);
                                                       s.n_heads = 6;
                                                       s.d_model = 48;
                                                       return s;
                                                     }()},
                                           step_case{"head128_mha_gelu",
                                                     [] {
                                                       decode_shape s = tiny(mlp_kind::gelu, 2);
                                                       s.n_heads = 2;
                                                       s.d_model = 48;
                                                       s.d_head = 128;
                                                       return s;
                                                     }()}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(DecodeStep, ForcedCountRoutesTheLargestPredictorLogits) {
  decode_shape s = tiny(mlp_kind::gelu, 2);
  s.batch = 5;
  s.layers = {{true}};
  const decode_weights w = make_decode_weights(s, 2);
  auto st = make_cpu_decode(s, w, 1);
  const std::vector<float> x = inputs(s, 9);
  st->set_input(x);
  decode_decisions d;
  d.from = decode_decisions::source::forced_count;
  d.count = 2;
  st->step(d, true);
  // Rank the logits here, in float64.
  std::vector<std::pair<double, i64>> p;
  for (i64 b = 0; b < s.batch; ++b) {
    const mat xb(x.begin() + b * s.d_model, x.begin() + (b + 1) * s.d_model);
    p.push_back({-predictor_logit(s, w.layers[0], xb), b});
  }
  std::sort(p.begin(), p.end());
  std::vector<std::uint8_t> want(5, 0);
  want[static_cast<std::size_t>(p[0].second)] = want[static_cast<std::size_t>(p[1].second)] = 1;
  EXPECT_EQ(st->routed()[0], want);
  // commit = true: the two routed sequences hold one key at the routed layer, the others none.
  for (i64 b = 0; b < s.batch; ++b) EXPECT_EQ(st->length(0, b), want[static_cast<std::size_t>(b)]);
}

TEST(DecodeStep, PadKeepsTheFirstRowsDropsTheRestAndAppendsNothingForPadding) {
  decode_shape s = tiny(mlp_kind::gelu, 2, decode_routing::pad);
  s.batch = 4;
  s.pad_capacity = 0.5;  // 2 rows
  s.layers = {{true}};
  const decode_weights w = make_decode_weights(s, 4);
  const std::vector<float> x = inputs(s, 1);
  // Three routed tokens for two rows: sequence 3 is dropped (skips the block).
  {
    auto st = make_cpu_decode(s, w, 2);
    st->set_input(x);
    decode_decisions d;
    d.from = decode_decisions::source::forced_mask;
    d.mask = {{1, 1, 0, 1}};
    st->step(d, true);
    const std::vector<std::uint8_t> taken = {1, 1, 0, 0};
    EXPECT_EQ(st->routed()[0], taken);
    const ref_step want = reference_step(s, w, drawn_cache(s, {0, 0, 0, 0}, {0, 0, 0, 0}, 1), vec(x), {taken});
    EXPECT_LT(ref::relative_error(st->hidden(), want.hidden), 1e-4);
    EXPECT_EQ(st->length(0, 3), 0);
  }
  // One routed token, one padding row: padding is computed, never scattered or cached.
  {
    auto st = make_cpu_decode(s, w, 2);
    st->set_input(x);
    decode_decisions d;
    d.from = decode_decisions::source::forced_mask;
    d.mask = {{0, 0, 1, 0}};
    st->step(d, true);
    const ref_step want = reference_step(s, w, drawn_cache(s, {0, 0, 0, 0}, {0, 0, 0, 0}, 1), vec(x), d.mask);
    EXPECT_LT(ref::relative_error(st->hidden(), want.hidden), 1e-4);
    for (i64 b = 0; b < s.batch; ++b) EXPECT_EQ(st->length(0, b), b == 2 ? 1 : 0);
  }
}

TEST(DecodeStep, RefusesBadShapesWeightsDecisionsAndAFullCache) {
  decode_shape s = tiny(mlp_kind::gelu, 3);  // 3 does not divide 4 heads
  EXPECT_THROW(make_decode_weights(s, 1), modsim::error);
  s = tiny(mlp_kind::gelu, 2);
  decode_weights w = make_decode_weights(s, 1);
  w.layers[1].pred_w2.pop_back();
  EXPECT_THROW(make_cpu_decode(s, w, 1), modsim::error);
  w = make_decode_weights(s, 1);
  auto st = make_cpu_decode(s, w, 1);
  decode_decisions d;
  d.from = decode_decisions::source::forced_count;
  d.count = 4;  // > batch
  EXPECT_THROW(st->step(d, false), modsim::error);
  d.from = decode_decisions::source::forced_mask;
  d.mask = {{1, 1, 1}};  // two routed layers
  EXPECT_THROW(st->step(d, false), modsim::error);
  const std::vector<i64> full(3, s.max_context);
  st->fill_cache(full, full, 1);
  EXPECT_THROW(st->step({}, false), modsim::error);
}

// ---- incremental decoding against one forward pass ------------------------------------

// The forward block (kernels/backend.hpp) over rows `in` of one or more sequences of n tokens
// each, with this layer's weights; returns y and leaves k, v in `k_out`, `v_out`.
std::vector<float> forward_block(backend& be, const decode_shape& s, const decode_layer_weights& lw, i64 batch, i64 n,
                                 const std::vector<float>& in, std::vector<float>& k_out, std::vector<float>& v_out) {
  block_shape bs;
  bs.batch = batch;
  bs.seq_len = n;
  bs.d_model = s.d_model;
  bs.n_heads = s.n_heads;
  bs.n_kv_heads = s.n_kv_heads;
  bs.d_head = s.d_head;
  bs.d_ff = s.d_ff;
  bs.mlp = s.mlp;
  auto ws = be.make_workspace(bs, dtype::fp32);
  ws->upload(tensor::attn_norm_g, lw.attn_norm_g);
  ws->upload(tensor::w_q, lw.w_q);
  ws->upload(tensor::w_k, lw.w_k);
  ws->upload(tensor::w_v, lw.w_v);
  ws->upload(tensor::w_o, lw.w_o);
  ws->upload(tensor::mlp_norm_g, lw.mlp_norm_g);
  ws->upload(tensor::w_up, lw.w_up);
  if (s.mlp == mlp_kind::swiglu) ws->upload(tensor::w_gate, lw.w_gate);
  ws->upload(tensor::w_down, lw.w_down);
  ws->upload(tensor::x, in);
  be.run(op::block_dense, *ws);
  be.synchronize();
  const i64 rows = batch * n;
  k_out = ws->download(tensor::k);
  v_out = ws->download(tensor::v);
  k_out.resize(static_cast<std::size_t>(rows * s.d_kv()));
  v_out.resize(static_cast<std::size_t>(rows * s.d_kv()));
  std::vector<float> y = ws->download(tensor::y);
  y.resize(static_cast<std::size_t>(rows * s.d_model));
  return y;
}

class Incremental : public ::testing::TestWithParam<step_case> {};

TEST_P(Incremental, PrefillThenDecodeStepsEqualOneForwardPass) {
  const decode_shape s = GetParam().shape;
  const i64 B = s.batch, d = s.d_model, dkv = s.d_kv(), P = 6, T = 5, N = P + T;
  const decode_weights w = make_decode_weights(s, 21);
  auto be = make_cpu_backend(2);
  // Token embeddings [B, N, d] and the routing decisions of every token at every routed layer.
  const std::vector<float> emb = ref::random_floats(static_cast<std::size_t>(B * N * d), 77);
  std::vector<std::vector<std::vector<std::uint8_t>>> route;  // [routed layer][b][t]
  std::uint64_t bits = 0x9e3779b97f4a7c15ULL;
  for (const decode_layer& l : s.layers) {
    if (!l.routed) continue;
    route.emplace_back(static_cast<std::size_t>(B), std::vector<std::uint8_t>(static_cast<std::size_t>(N)));
    for (auto& seq : route.back())
      for (auto& r : seq) {
        bits = bits * 6364136223846793005ULL + 1442695040888963407ULL;
        r = (bits >> 61) < 3;  // about 3/8 routed
      }
  }

  // One forward pass over all N tokens per layer: dense layers as block_dense over [B, N];
  // routed layers as block_dense over each sequence's routed tokens, then Equation 1.
  auto st = make_cpu_decode(s, w, 2);
  std::vector<float> x = emb;
  std::size_t ri = 0;
  for (std::size_t l = 0; l < s.layers.size(); ++l) {
    const decode_layer_weights& lw = w.layers[l];
    std::vector<float> k, v;
    if (!s.layers[l].routed) {
      const std::vector<float> y = forward_block(*be, s, lw, B, N, x, k, v);
      for (i64 b = 0; b < B; ++b)
        for (i64 t = 0; t < P; ++t) {
          const auto at = static_cast<std::size_t>((b * N + t) * dkv);
          st->write_cache(static_cast<int>(l), b, {k.data() + at, static_cast<std::size_t>(dkv)},
                          {v.data() + at, static_cast<std::size_t>(dkv)});
        }
      x = y;
      continue;
    }
    std::vector<float> next = x;
    for (i64 b = 0; b < B; ++b) {
      std::vector<i64> pos;
      for (i64 t = 0; t < N; ++t)
        if (route[ri][static_cast<std::size_t>(b)][static_cast<std::size_t>(t)]) pos.push_back(t);
      if (pos.empty()) continue;
      std::vector<float> xt;
      for (i64 t : pos) xt.insert(xt.end(), x.begin() + (b * N + t) * d, x.begin() + (b * N + t + 1) * d);
      const std::vector<float> y = forward_block(*be, s, lw, 1, static_cast<i64>(pos.size()), xt, k, v);
      for (std::size_t j = 0; j < pos.size(); ++j) {
        const i64 row = b * N + pos[j];
        double r = 0;
        for (i64 i = 0; i < d; ++i) r += static_cast<double>(lw.router_w[static_cast<std::size_t>(i)]) * xt[j * d + i];
        for (i64 i = 0; i < d; ++i)
          next[static_cast<std::size_t>(row * d + i)] =
              static_cast<float>(xt[j * d + i] + r * (y[j * d + i] - xt[j * d + i]));
        if (pos[j] < P) {
          st->write_cache(static_cast<int>(l), b, {k.data() + j * dkv, static_cast<std::size_t>(dkv)},
                          {v.data() + j * dkv, static_cast<std::size_t>(dkv)});
        }
      }
    }
    x = next;
    ++ri;
  }
  const mat final_norm = ref::rms_norm(ref::to_double(x), vec(w.final_norm_g), B * N, d);
  const mat logits = ref::matmul(final_norm, vec(w.w_vocab), B * N, d, s.vocab);

  // The prompt's keys and values came from the forward pass; now decode tokens P..N-1.
  for (i64 t = P; t < N; ++t) {
    std::vector<float> in;
    for (i64 b = 0; b < B; ++b) in.insert(in.end(), emb.begin() + (b * N + t) * d, emb.begin() + (b * N + t + 1) * d);
    decode_decisions dec;
    dec.from = decode_decisions::source::forced_mask;
    for (const auto& layer : route) {
      dec.mask.emplace_back();
      for (i64 b = 0; b < B; ++b)
        dec.mask.back().push_back(layer[static_cast<std::size_t>(b)][static_cast<std::size_t>(t)]);
    }
    st->set_input(in);
    st->step(dec, true);
    std::vector<double> want_h, want_l;
    for (i64 b = 0; b < B; ++b) {
      want_h.insert(want_h.end(), x.begin() + (b * N + t) * d, x.begin() + (b * N + t + 1) * d);
      want_l.insert(want_l.end(), logits.begin() + (b * N + t) * s.vocab, logits.begin() + (b * N + t + 1) * s.vocab);
    }
    EXPECT_LT(ref::relative_error(st->hidden(), want_h), 1e-4) << "token " << t;
    EXPECT_LT(ref::relative_error(st->logits(), want_l), 1e-4) << "token " << t;
    EXPECT_EQ(st->routed(), dec.mask) << "token " << t;
  }
  // Every dense layer now holds N keys per sequence, every routed layer its routed count.
  ri = 0;
  for (std::size_t l = 0; l < s.layers.size(); ++l) {
    for (i64 b = 0; b < B; ++b) {
      i64 want = N;
      if (s.layers[l].routed) {
        want = 0;
        for (auto r : route[ri][static_cast<std::size_t>(b)]) want += r;
      }
      EXPECT_EQ(st->length(static_cast<int>(l), b), want);
    }
    if (s.layers[l].routed) ++ri;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, Incremental,
                         ::testing::Values(step_case{"mha_gelu", tiny(mlp_kind::gelu, 4)},
                                           step_case{"gqa_swiglu", tiny(mlp_kind::swiglu, 2)}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace modsim::kernels
