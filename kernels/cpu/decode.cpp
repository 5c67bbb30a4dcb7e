// The CPU decode step (kernels/decode.hpp): fp32; the projections as packed-panel products
// (vec_math.hpp: the B rows of a step against each weight matrix, streamed once; Q, K and V
// in one parallel loop, the MLP's activation applied where its product is computed); the
// thread pool for attention over the paged caches; norms, the predictor's decisions, gather
// and scatter on the calling thread.

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <new>
#include <numeric>
#include <string>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "kernels/cpu/huge_pages.hpp"
#include "kernels/cpu/thread_pool.hpp"
#include "kernels/cpu/vec_math.hpp"
#include "kernels/decode.hpp"
#include "kernels/init.hpp"

namespace modsim::kernels {

bool decode_shape::any_routed() const {
  return std::any_of(layers.begin(), layers.end(), [](const decode_layer& l) { return l.routed; });
}

void decode_shape::validate() const {
  const auto need = [](bool ok, const char* key, const std::string& why) {
    if (!ok) throw input_error("", std::string("decode_shape.") + key, why);
  };
  need(batch >= 1, "batch", "must be >= 1");
  need(max_context >= 1, "max_context", "must be >= 1");
  need(d_model >= 1, "d_model", "must be >= 1");
  need(n_heads >= 1, "n_heads", "must be >= 1");
  need(n_kv_heads >= 1 && n_heads % n_kv_heads == 0, "n_kv_heads", "must divide n_heads");
  need(d_head >= 1, "d_head", "must be >= 1");
  need(d_ff >= 1, "d_ff", "must be >= 1");
  need(vocab >= 0, "vocab", "must be >= 0");
  need(page_tokens >= 1, "page_tokens", "must be >= 1");
  need(!layers.empty(), "layers", "needs at least one layer");
  need(!any_routed() || predictor_hidden >= 1, "predictor_hidden", "must be >= 1 when a layer is routed");
  need(pad_capacity > 0 && pad_capacity <= 1, "pad_capacity", "must be in (0, 1]");
}

namespace {

std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<float> normal(std::int64_t n, std::uint64_t seed, std::uint64_t stream, double mean, double sd) {
  std::vector<float> v(static_cast<std::size_t>(n));
  fill_normal_parallel(v, seed, stream, mean, sd);
  return v;
}

}  // namespace

decode_weights make_decode_weights(const decode_shape& s, std::uint64_t seed) {
  s.validate();
  const std::int64_t d = s.d_model, dq = s.d_q(), dkv = s.d_kv(), f = s.d_ff, h = s.predictor_hidden;
  const auto inv = [](std::int64_t fan_in) { return 1.0 / std::sqrt(static_cast<double>(fan_in)); };
  decode_weights w;
  for (std::size_t l = 0; l < s.layers.size(); ++l) {
    const std::uint64_t base = 10000 + 100 * l;
    decode_layer_weights lw;
    lw.attn_norm_g = normal(d, seed, base + 0, 1.0, 0.1);
    lw.w_q = normal(d * dq, seed, base + 1, 0.0, inv(d));
    lw.w_k = normal(d * dkv, seed, base + 2, 0.0, inv(d));
    lw.w_v = normal(d * dkv, seed, base + 3, 0.0, inv(d));
    lw.w_o = normal(dq * d, seed, base + 4, 0.0, inv(dq));
    lw.mlp_norm_g = normal(d, seed, base + 5, 1.0, 0.1);
    lw.w_up = normal(d * f, seed, base + 6, 0.0, inv(d));
    if (s.mlp == mlp_kind::swiglu) lw.w_gate = normal(d * f, seed, base + 7, 0.0, inv(d));
    lw.w_down = normal(f * d, seed, base + 8, 0.0, inv(f));
    if (s.layers[l].routed) {
      lw.router_w = normal(d, seed, base + 9, 0.0, inv(d));
      lw.pred_w1 = normal(d * h, seed, base + 10, 0.0, inv(d));
      lw.pred_w2 = normal(h, seed, base + 11, 0.0, inv(h));
    }
    w.layers.push_back(std::move(lw));
  }
  if (s.vocab > 0) {
    w.final_norm_g = normal(d, seed, 9000, 1.0, 0.1);
    w.w_vocab = normal(d * s.vocab, seed, 9001, 0.0, inv(d));
  }
  return w;
}

namespace cpu {
namespace {

// C[m×n] = A[m×k]·B[k×n] + beta·C (beta 0 or 1), A and C row-major, B packed into column
// panels (pack_panels). The panels are split evenly over the pool, one contiguous run per
// participant, so a width that is not a multiple of the thread count's panels loses at most
// one panel of balance.
void gemm(thread_pool& pool, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* packed_b,
          float beta, float* c) {
  if (m == 0) return;
  const std::int64_t panels = (n + panel_cols - 1) / panel_cols;
  const std::int64_t grain = (panels + pool.size() - 1) / pool.size();
  pool.parallel_for(panels, grain,
                    [&](std::int64_t p0, std::int64_t p1) { panel_gemm(a, packed_b, c, m, k, n, p0, p1, beta); });
}

// Several products with the same A (m×k) in one parallel loop (one dispatch, one pass of the
// pool): product i is C_i[m×n_i] = A·B_i (B_i packed), their panels numbered one after another
// and split evenly over the pool.
struct product_out {
  const float* packed_b;
  std::int64_t n;
  float* c;
};
void gemm_many(thread_pool& pool, std::int64_t m, std::int64_t k, const float* a,
               std::initializer_list<product_out> outs) {
  if (m == 0) return;
  std::int64_t panels = 0;
  for (const product_out& o : outs) panels += (o.n + panel_cols - 1) / panel_cols;
  const std::int64_t grain = (panels + pool.size() - 1) / pool.size();
  pool.parallel_for(panels, grain, [&](std::int64_t p0, std::int64_t p1) {
    std::int64_t first = 0;  // the first panel of the current product
    for (const product_out& o : outs) {
      const std::int64_t np = (o.n + panel_cols - 1) / panel_cols;
      const std::int64_t b = std::max(p0, first), e = std::min(p1, first + np);
      if (b < e) panel_gemm(a, o.packed_b, o.c, m, k, o.n, b - first, e - first, 0.0f);
      first += np;
    }
  });
}

// The MLP's first product and its activation in one parallel loop: hidden = act(A·W_up) (gelu),
// or silu(A·W_gate)·(A·W_up) (swiglu, gate non-null), each participant applying the activation
// to the columns it computed.
void gemm_act(thread_pool& pool, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, const float* up,
              const float* gate, float* hidden, float* gate_out) {
  if (m == 0) return;
  const std::int64_t panels = (n + panel_cols - 1) / panel_cols;
  const std::int64_t grain = (panels + pool.size() - 1) / pool.size();
  pool.parallel_for(panels, grain, [&](std::int64_t p0, std::int64_t p1) {
    const std::int64_t j0 = p0 * panel_cols, cols = std::min(n, p1 * panel_cols) - j0;
    if (gate != nullptr) panel_gemm(a, gate, gate_out, m, k, n, p0, p1, 0.0f);
    panel_gemm(a, up, hidden, m, k, n, p0, p1, 0.0f);
    for (std::int64_t i = 0; i < m; ++i) {
      if (gate != nullptr) {
        silu_mul_inplace(hidden + i * n + j0, gate_out + i * n + j0, cols);
      } else {
        gelu_inplace(hidden + i * n + j0, cols);
      }
    }
  });
}

void check_size(const std::vector<float>& v, std::int64_t n, const std::string& what) {
  if (static_cast<std::int64_t>(v.size()) != n) {
    throw input_error("", "decode_weights." + what,
                      "has " + std::to_string(v.size()) + " values, the shape needs " + std::to_string(n));
  }
}

// A step dispatches its products and loops back to back; workers poll this long after each
// before sleeping (thread_pool.hpp).
constexpr int pool_spin_us = 200;

class cpu_decode final : public decode_state {
 public:
  cpu_decode(const decode_shape& shape, const decode_weights& weights, int threads)
      : decode_state(shape), m_w(weights), m_pool(threads, pool_spin_us) {
    check_weights();
    pack_weights();
    const decode_shape& s = this->shape();
    const std::int64_t B = s.batch, d = s.d_model;
    const std::int64_t pages = B * s.pages_per_sequence();
    const std::int64_t page_floats = s.n_kv_heads * s.page_tokens * s.d_head;
    m_layers.resize(s.layers.size());
    for (std::size_t l = 0; l < s.layers.size(); ++l) {
      layer_cache& c = m_layers[l];
      c.k.assign(static_cast<std::size_t>(pages * page_floats), 0.0f);
      c.v.assign(static_cast<std::size_t>(pages * page_floats), 0.0f);
      c.length.assign(static_cast<std::size_t>(B), 0);
      // A shuffled block table: sequence b's i-th page is table[b·pages_per_sequence + i].
      c.table.resize(static_cast<std::size_t>(pages));
      std::iota(c.table.begin(), c.table.end(), 0);
      for (std::int64_t i = pages - 1; i > 0; --i) {
        const auto j = static_cast<std::int64_t>(mix(0xdecafULL + 977 * l + static_cast<std::uint64_t>(i)) %
                                                 static_cast<std::uint64_t>(i + 1));
        std::swap(c.table[static_cast<std::size_t>(i)], c.table[static_cast<std::size_t>(j)]);
      }
    }
    const auto sz = [](std::int64_t n) { return static_cast<std::size_t>(n); };
    m_x.assign(sz(B * d), 0.0f);
    m_in.assign(sz(B * d), 0.0f);
    m_norm.assign(sz(B * d), 0.0f);
    m_q.assign(sz(B * s.d_q()), 0.0f);
    m_k.assign(sz(B * s.d_kv()), 0.0f);
    m_v.assign(sz(B * s.d_kv()), 0.0f);
    m_attn.assign(sz(B * s.d_q()), 0.0f);
    m_h.assign(sz(B * d), 0.0f);
    m_hidden.assign(sz(B * s.d_ff), 0.0f);
    if (s.mlp == mlp_kind::swiglu) m_gate.assign(sz(B * s.d_ff), 0.0f);
    m_y.assign(sz(B * d), 0.0f);
    m_pred_hidden.assign(sz(B * std::max<std::int64_t>(1, s.predictor_hidden)), 0.0f);
    m_pred_logit.assign(sz(B), 0.0f);
    m_r.assign(sz(B), 0.0f);
    m_row_seq.assign(sz(B), 0);
    m_order.assign(sz(B), 0);
    m_scores.assign(sz(B * s.n_heads * (s.max_context + 1)), 0.0f);
    if (s.vocab > 0) m_logits.assign(sz(B * s.vocab), 0.0f);
    for (const decode_layer& l : s.layers)
      if (l.routed) m_routed.emplace_back(sz(B), std::uint8_t{0});
    m_rows_run.assign(s.layers.size(), 0);
    m_keys_read.assign(s.layers.size(), 0);
  }

  std::int64_t length(int layer, std::int64_t b) const override {
    return m_layers.at(static_cast<std::size_t>(layer)).length.at(static_cast<std::size_t>(b));
  }

  void fill_cache(std::span<const std::int64_t> context, std::span<const std::int64_t> routed,
                  std::uint64_t seed) override {
    const decode_shape& s = shape();
    const std::int64_t B = s.batch;
    if (static_cast<std::int64_t>(context.size()) != B || static_cast<std::int64_t>(routed.size()) != B) {
      throw input_error("", "decode_state.fill_cache", "needs one context and one routed length per sequence");
    }
    for (std::int64_t b = 0; b < B; ++b) {
      const auto i = static_cast<std::size_t>(b);
      if (context[i] < 0 || context[i] > s.max_context || routed[i] < 0 || routed[i] > s.max_context) {
        throw input_error("", "decode_state.fill_cache",
                          "sequence " + std::to_string(b) +
                              ": lengths must be in [0, max_context = " + std::to_string(s.max_context) + "]");
      }
    }
    const std::int64_t dkv = s.d_kv(), dh = s.d_head;
    for (std::size_t l = 0; l < m_layers.size(); ++l) {
      layer_cache& c = m_layers[l];
      for (std::int64_t b = 0; b < B; ++b) {
        c.length[static_cast<std::size_t>(b)] =
            s.layers[l].routed ? routed[static_cast<std::size_t>(b)] : context[static_cast<std::size_t>(b)];
      }
      // One task per (sequence, page); each token's K and V rows drawn at their index.
      const std::int64_t pps = s.pages_per_sequence();
      m_pool.parallel_for(B * pps, 1, [&](std::int64_t t0, std::int64_t t1) {
        std::vector<float> row(static_cast<std::size_t>(dkv));
        for (std::int64_t t = t0; t < t1; ++t) {
          const std::int64_t b = t / pps, p = t % pps;
          const std::int64_t len = c.length[static_cast<std::size_t>(b)];
          for (std::int64_t pos = p * s.page_tokens; pos < std::min(len, (p + 1) * s.page_tokens); ++pos) {
            for (int kv = 0; kv < 2; ++kv) {
              fill_normal_from(row, seed, 7000 + 2 * l + static_cast<std::uint64_t>(kv), 0.0, 0.5,
                               (b * s.max_context + pos) * dkv);
              float* dst = slot(c, s, kv == 0 ? c.k : c.v, b, pos);
              for (std::int64_t g = 0; g < s.n_kv_heads; ++g)
                std::copy_n(row.data() + g * dh, dh, dst + g * s.page_tokens * dh);
            }
          }
        }
      });
    }
  }

  void clear() override {
    for (layer_cache& c : m_layers) std::fill(c.length.begin(), c.length.end(), 0);
  }

  void write_cache(int layer, std::int64_t b, std::span<const float> k, std::span<const float> v) override {
    const decode_shape& s = shape();
    if (layer < 0 || layer >= static_cast<int>(m_layers.size()) || b < 0 || b >= s.batch) {
      throw input_error("", "decode_state.write_cache", "layer or sequence out of range");
    }
    if (static_cast<std::int64_t>(k.size()) != s.d_kv() || static_cast<std::int64_t>(v.size()) != s.d_kv()) {
      throw input_error("", "decode_state.write_cache", "needs d_kv = " + std::to_string(s.d_kv()) + " values each");
    }
    layer_cache& c = m_layers[static_cast<std::size_t>(layer)];
    std::int64_t& len = c.length[static_cast<std::size_t>(b)];
    if (len >= s.max_context) throw input_error("", "decode_state.write_cache", "the cache is full");
    float* kd = slot(c, s, c.k, b, len);
    float* vd = slot(c, s, c.v, b, len);
    for (std::int64_t g = 0; g < s.n_kv_heads; ++g) {
      std::copy_n(k.data() + g * s.d_head, s.d_head, kd + g * s.page_tokens * s.d_head);
      std::copy_n(v.data() + g * s.d_head, s.d_head, vd + g * s.page_tokens * s.d_head);
    }
    ++len;
  }

  void set_input(std::span<const float> x) override {
    if (x.size() != m_x.size()) {
      throw input_error(
          "", "decode_state.set_input",
          "needs batch·d_model = " + std::to_string(m_x.size()) + " values, got " + std::to_string(x.size()));
    }
    std::copy(x.begin(), x.end(), m_x.begin());
  }

  void step(const decode_decisions& dec, bool commit) override {
    const decode_shape& s = shape();
    check_decisions(dec);
    for (std::size_t l = 0; l < m_layers.size(); ++l) {
      for (std::int64_t len : m_layers[l].length) {
        if (len >= s.max_context) {
          throw input_error("", "decode_state.step",
                            "layer " + std::to_string(l) + ": a sequence's cache is full (max_context " +
                                std::to_string(s.max_context) + ")");
        }
      }
    }
    std::size_t routed_index = 0;
    for (std::size_t l = 0; l < m_layers.size(); ++l) {
      if (s.layers[l].routed) {
        routed_layer(l, routed_index, dec, commit);
        ++routed_index;
      } else {
        dense_layer(l, commit);
      }
    }
    if (s.vocab > 0) {
      rms_rows(m_x.data(), m_w.final_norm_g.data(), m_norm.data(), s.batch);
      gemm(m_pool, s.batch, s.vocab, s.d_model, m_norm.data(), m_w_vocab, 0.0f, m_logits.data());
    }
  }

  void synchronize() override {}

  std::vector<float> hidden() const override { return m_x; }
  std::vector<float> logits() const override { return m_logits; }
  std::vector<std::vector<std::uint8_t>> routed() const override { return m_routed; }

  std::int64_t step_bytes() const override {
    const decode_shape& s = shape();
    const std::int64_t d = s.d_model, dq = s.d_q(), dkv = s.d_kv(), f = s.d_ff;
    const std::int64_t block_w = d * dq + 2 * d * dkv + dq * d + d * f * (s.mlp == mlp_kind::swiglu ? 3 : 2) + 2 * d;
    std::int64_t floats = 0;
    for (std::size_t l = 0; l < m_layers.size(); ++l) {
      if (s.layers[l].routed) floats += d * s.predictor_hidden + s.predictor_hidden + d;
      if (m_rows_run[l] > 0) floats += block_w + m_keys_read[l] * 2 * dkv;
    }
    if (s.vocab > 0) floats += d + d * s.vocab;
    return floats * 4;
  }

 private:
  // A layer's product matrices, packed (pack_panels), in m_weights (null: not used).
  struct packed_layer {
    const float *pred_w1 = nullptr, *w_q = nullptr, *w_k = nullptr, *w_v = nullptr, *w_o = nullptr, *w_up = nullptr,
                *w_gate = nullptr, *w_down = nullptr;
  };

  struct layer_cache {
    huge_vector<float> k, v;           // [pages][n_kv][page_tokens][d_head]
    std::vector<std::int32_t> table;   // [B][pages_per_sequence]
    std::vector<std::int64_t> length;  // [B]
  };

  // Every matrix a product reads, packed (pack_panels) into one array in the order a step reads
  // them, so the weights are one stream; the row-major copies in m_w are released.
  void pack_weights() {
    const decode_shape& s = shape();
    const std::int64_t d = s.d_model, dq = s.d_q(), dkv = s.d_kv(), f = s.d_ff, h = s.predictor_hidden;
    struct item {
      std::vector<float>* w;
      std::int64_t k, n;
      const float** to;
    };
    std::vector<item> items;
    m_packed.resize(m_w.layers.size());
    for (std::size_t l = 0; l < m_w.layers.size(); ++l) {
      decode_layer_weights& w = m_w.layers[l];
      packed_layer& p = m_packed[l];
      items.push_back({&w.pred_w1, d, h, &p.pred_w1});
      items.push_back({&w.w_q, d, dq, &p.w_q});
      items.push_back({&w.w_k, d, dkv, &p.w_k});
      items.push_back({&w.w_v, d, dkv, &p.w_v});
      items.push_back({&w.w_o, dq, d, &p.w_o});
      items.push_back({&w.w_up, d, f, &p.w_up});
      items.push_back({&w.w_gate, d, f, &p.w_gate});
      items.push_back({&w.w_down, f, d, &p.w_down});
    }
    items.push_back({&m_w.w_vocab, d, s.vocab, &m_w_vocab});
    std::int64_t total = 0;
    for (const item& it : items)
      if (!it.w->empty()) total += packed_size(it.k, it.n);
    m_weights.resize(static_cast<std::size_t>(total));
    float* at = m_weights.data();
    for (const item& it : items) {
      if (it.w->empty()) continue;
      pack_panels(it.w->data(), it.k, it.n, at);
      *it.to = at;
      at += packed_size(it.k, it.n);
      std::vector<float>().swap(*it.w);
    }
  }

  void check_weights() const {
    const decode_shape& s = shape();
    s.validate();
    const std::int64_t d = s.d_model, dq = s.d_q(), dkv = s.d_kv(), f = s.d_ff, h = s.predictor_hidden;
    if (m_w.layers.size() != s.layers.size()) {
      throw input_error(
          "", "decode_weights.layers",
          "has " + std::to_string(m_w.layers.size()) + " layers, the shape " + std::to_string(s.layers.size()));
    }
    for (std::size_t l = 0; l < s.layers.size(); ++l) {
      const decode_layer_weights& w = m_w.layers[l];
      const std::string p = "layers[" + std::to_string(l) + "].";
      check_size(w.attn_norm_g, d, p + "attn_norm_g");
      check_size(w.w_q, d * dq, p + "w_q");
      check_size(w.w_k, d * dkv, p + "w_k");
      check_size(w.w_v, d * dkv, p + "w_v");
      check_size(w.w_o, dq * d, p + "w_o");
      check_size(w.mlp_norm_g, d, p + "mlp_norm_g");
      check_size(w.w_up, d * f, p + "w_up");
      check_size(w.w_gate, s.mlp == mlp_kind::swiglu ? d * f : 0, p + "w_gate");
      check_size(w.w_down, f * d, p + "w_down");
      if (s.layers[l].routed) {
        check_size(w.router_w, d, p + "router_w");
        check_size(w.pred_w1, d * h, p + "pred_w1");
        check_size(w.pred_w2, h, p + "pred_w2");
      }
    }
    if (s.vocab > 0) {
      check_size(m_w.final_norm_g, d, "final_norm_g");
      check_size(m_w.w_vocab, d * s.vocab, "w_vocab");
    }
  }

  void check_decisions(const decode_decisions& dec) const {
    const decode_shape& s = shape();
    if (dec.from == decode_decisions::source::forced_count && (dec.count < 0 || dec.count > s.batch)) {
      throw input_error("", "decode_decisions.count", "must be in [0, batch = " + std::to_string(s.batch) + "]");
    }
    if (dec.from == decode_decisions::source::forced_mask) {
      if (dec.mask.size() != m_routed.size()) {
        throw input_error("", "decode_decisions.mask",
                          "needs one entry per routed layer (" + std::to_string(m_routed.size()) + ")");
      }
      for (const auto& m : dec.mask) {
        if (static_cast<std::int64_t>(m.size()) != s.batch) {
          throw input_error("", "decode_decisions.mask", "each entry needs batch values");
        }
      }
    }
  }

  // The address of (b, pos)'s KV head 0 in `pool` (K or V of cache c); KV head g is
  // g·page_tokens·d_head further.
  static float* slot(const layer_cache& c, const decode_shape& s, const huge_vector<float>& pool, std::int64_t b,
                     std::int64_t pos) {
    const std::int64_t page = c.table[static_cast<std::size_t>(b * s.pages_per_sequence() + pos / s.page_tokens)];
    const std::int64_t page_floats = s.n_kv_heads * s.page_tokens * s.d_head;
    return const_cast<float*>(pool.data()) + page * page_floats + (pos % s.page_tokens) * s.d_head;
  }

  // On the calling thread: a step's few rows take less time than waking the pool.
  void rms_rows(const float* in, const float* g, float* out, std::int64_t rows) {
    cpu::rms_norm_rows(in, g, out, rows, shape().d_model);
  }

  // The block on `rows` input rows `in` (row j belongs to sequence m_row_seq[j]; rows at and
  // beyond `real` are padding: they attend over their sequence's cache but append nothing),
  // leaving y in m_y.
  void block(std::size_t l, const float* in, std::int64_t rows, std::int64_t real, bool commit) {
    const decode_shape& s = shape();
    const decode_layer_weights& w = m_w.layers[l];
    const packed_layer& pw = m_packed[l];
    layer_cache& c = m_layers[l];
    const std::int64_t d = s.d_model, dq = s.d_q(), dkv = s.d_kv(), dh = s.d_head, f = s.d_ff;
    rms_rows(in, w.attn_norm_g.data(), m_norm.data(), rows);
    gemm_many(m_pool, rows, d, m_norm.data(),
              {{pw.w_q, dq, m_q.data()}, {pw.w_k, dkv, m_k.data()}, {pw.w_v, dkv, m_v.data()}});
    // Append the real rows' keys and values at their sequence's next slot.
    for (std::int64_t j = 0; j < real; ++j) {
      const std::int64_t b = m_row_seq[static_cast<std::size_t>(j)];
      const std::int64_t pos = c.length[static_cast<std::size_t>(b)];
      float* kd = slot(c, s, c.k, b, pos);
      float* vd = slot(c, s, c.v, b, pos);
      for (std::int64_t g = 0; g < s.n_kv_heads; ++g) {
        std::copy_n(m_k.data() + j * dkv + g * dh, dh, kd + g * s.page_tokens * dh);
        std::copy_n(m_v.data() + j * dkv + g * dh, dh, vd + g * s.page_tokens * dh);
      }
    }
    attention(c, rows);
    std::int64_t keys = 0;
    for (std::int64_t j = 0; j < rows; ++j)
      keys += c.length[static_cast<std::size_t>(m_row_seq[static_cast<std::size_t>(j)])] + 1;
    m_keys_read[l] = keys;
    if (commit) {
      for (std::int64_t j = 0; j < real; ++j)
        ++c.length[static_cast<std::size_t>(m_row_seq[static_cast<std::size_t>(j)])];
    }
    // h = in + O·W_o; y = h + MLP(RMSNorm(h)·g_mlp).
    std::copy_n(in, rows * d, m_h.data());
    gemm(m_pool, rows, d, dq, m_attn.data(), pw.w_o, 1.0f, m_h.data());
    rms_rows(m_h.data(), w.mlp_norm_g.data(), m_norm.data(), rows);
    gemm_act(m_pool, rows, f, d, m_norm.data(), pw.w_up, pw.w_gate, m_hidden.data(), m_gate.data());
    std::copy_n(m_h.data(), rows * d, m_y.data());
    gemm(m_pool, rows, d, f, m_hidden.data(), pw.w_down, 1.0f, m_y.data());
    m_rows_run[l] = rows;
  }

  // Attention of each row's query heads over its sequence's cached keys (the first length
  // slots) and its own new key (m_k, m_v row j). A task is a row and a run of its KV heads
  // (all of them when there are rows enough to keep the pool busy): it reads each page's K
  // rows of those heads, which lie together in the page, computing the scores, takes the
  // softmax, then reads the V pages the same way. Every run read names the one `ahead` runs
  // later (the last K runs the first V runs) for prefetching, so the scattered pages stream.
  void attention(const layer_cache& c, std::int64_t rows) {
    const decode_shape& s = shape();
    const std::int64_t dh = s.d_head, dq = s.d_q(), dkv = s.d_kv(), P = s.page_tokens, nkv = s.n_kv_heads;
    const std::int64_t group = s.n_heads / s.n_kv_heads, stride = s.max_context + 1;
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    // At least two tasks per participant: split each row's heads into that many runs.
    const std::int64_t splits = std::clamp<std::int64_t>((2 * m_pool.size() + rows - 1) / rows, 1, nkv);
    const std::int64_t per = (nkv + splits - 1) / splits, chunks = (nkv + per - 1) / per;
    constexpr std::int64_t ahead = 2;
    m_pool.parallel_for(rows * chunks, 1, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) {
        const std::int64_t j = t / chunks, g0 = (t % chunks) * per, g1 = std::min(nkv, g0 + per), ng = g1 - g0;
        const std::int64_t b = m_row_seq[static_cast<std::size_t>(j)];
        const std::int64_t L = c.length[static_cast<std::size_t>(b)];
        const std::int64_t pages = (L + P - 1) / P, runs = pages * ng;
        // Run r of this task's reads: K runs (page, head) in order, then the V runs.
        const auto run = [&](std::int64_t r) -> const float* {
          if (r >= 2 * runs) return nullptr;
          const huge_vector<float>& pool = r < runs ? c.k : c.v;
          r %= runs;
          return slot(c, s, pool, b, (r / ng) * P) + (g0 + r % ng) * P * dh;
        };
        const float* qrow = m_q.data() + j * dq;
        float* sc = m_scores.data() + j * s.n_heads * stride;
        float* out = m_attn.data() + j * dq;
        for (std::int64_t r = 0; r < runs; ++r) {
          const std::int64_t p0 = (r / ng) * P, g = g0 + r % ng;
          decode_scores(qrow + g * group * dh, run(r), sc + g * group * stride + p0, std::min(P, L - p0), dh, group,
                        stride, scale, run(r + ahead));
        }
        for (std::int64_t g = g0; g < g1; ++g) {
          decode_scores(qrow + g * group * dh, m_k.data() + j * dkv + g * dh, sc + g * group * stride + L, 1, dh, group,
                        stride, scale);
          for (std::int64_t h = 0; h < group; ++h) softmax_inplace(sc + (g * group + h) * stride, L + 1);
        }
        std::fill_n(out + g0 * group * dh, ng * group * dh, 0.0f);
        for (std::int64_t r = 0; r < runs; ++r) {
          const std::int64_t p0 = (r / ng) * P, g = g0 + r % ng;
          decode_values(sc + g * group * stride + p0, run(runs + r), out + g * group * dh, std::min(P, L - p0), dh,
                        group, stride, run(runs + r + ahead));
        }
        for (std::int64_t g = g0; g < g1; ++g)
          decode_values(sc + g * group * stride + L, m_v.data() + j * dkv + g * dh, out + g * group * dh, 1, dh, group,
                        stride);
      }
    });
  }

  void dense_layer(std::size_t l, bool commit) {
    const std::int64_t B = shape().batch;
    for (std::int64_t j = 0; j < B; ++j) m_row_seq[static_cast<std::size_t>(j)] = j;
    block(l, m_x.data(), B, B, commit);
    std::swap(m_x, m_y);
  }

  void routed_layer(std::size_t l, std::size_t routed_index, const decode_decisions& dec, bool commit) {
    const decode_shape& s = shape();
    const decode_layer_weights& w = m_w.layers[l];
    const std::int64_t B = s.batch, d = s.d_model, hdim = s.predictor_hidden;
    // The causal predictor: logit = relu(x·P_1)·p_2 + b.
    gemm(m_pool, B, hdim, d, m_x.data(), m_packed[l].pred_w1, 0.0f, m_pred_hidden.data());
    for (std::int64_t b = 0; b < B; ++b) {
      float acc = w.pred_b2;
      const float* hrow = m_pred_hidden.data() + b * hdim;
      for (std::int64_t i = 0; i < hdim; ++i) acc += std::max(hrow[i], 0.0f) * w.pred_w2[static_cast<std::size_t>(i)];
      m_pred_logit[static_cast<std::size_t>(b)] = acc;
    }
    std::vector<std::uint8_t>& taken = m_routed[routed_index];
    switch (dec.from) {
      case decode_decisions::source::predictor:
        for (std::int64_t b = 0; b < B; ++b)
          taken[static_cast<std::size_t>(b)] = m_pred_logit[static_cast<std::size_t>(b)] > 0.0f;
        break;
      case decode_decisions::source::forced_count: {
        // The count tokens with the largest logits, ties to the lower index.
        std::iota(m_order.begin(), m_order.end(), 0);
        std::stable_sort(m_order.begin(), m_order.end(), [&](std::int64_t a, std::int64_t b) {
          return m_pred_logit[static_cast<std::size_t>(a)] > m_pred_logit[static_cast<std::size_t>(b)];
        });
        std::fill(taken.begin(), taken.end(), std::uint8_t{0});
        for (std::int64_t i = 0; i < dec.count; ++i)
          taken[static_cast<std::size_t>(m_order[static_cast<std::size_t>(i)])] = 1;
        break;
      }
      case decode_decisions::source::forced_mask:
        for (std::int64_t b = 0; b < B; ++b)
          taken[static_cast<std::size_t>(b)] = dec.mask[routed_index][static_cast<std::size_t>(b)] != 0;
        break;
    }
    // Rows: the routed tokens in sequence order; pad keeps the first pad_rows() of them.
    std::int64_t real = 0;
    const std::int64_t limit = s.routing == decode_routing::pad ? s.pad_rows() : B;
    for (std::int64_t b = 0; b < B; ++b) {
      if (!taken[static_cast<std::size_t>(b)]) continue;
      if (real < limit) {
        m_row_seq[static_cast<std::size_t>(real++)] = b;
      } else {
        taken[static_cast<std::size_t>(b)] = 0;  // dropped: the padded block is full
      }
    }
    std::int64_t rows = real;
    if (s.routing == decode_routing::pad) {
      // Padding rows repeat sequences 0, 1, ... (computed, never scattered or appended).
      for (; rows < limit; ++rows) m_row_seq[static_cast<std::size_t>(rows)] = (rows - real) % B;
    }
    if (rows == 0) {
      m_rows_run[l] = 0;
      m_keys_read[l] = 0;
      return;  // sync: no token entered; the host skips the block
    }
    // Gather x̃ and the router weights r = w·x̃.
    for (std::int64_t j = 0; j < rows; ++j) {
      const float* src = m_x.data() + m_row_seq[static_cast<std::size_t>(j)] * d;
      std::copy_n(src, d, m_in.data() + j * d);
      m_r[static_cast<std::size_t>(j)] = dot(w.router_w.data(), src, d);
    }
    block(l, m_in.data(), rows, real, commit);
    // Scatter: x_b ← x_b + r·(y − x̃) for the real rows.
    for (std::int64_t j = 0; j < real; ++j) {
      float* xb = m_x.data() + m_row_seq[static_cast<std::size_t>(j)] * d;
      scaled_delta_add(xb, m_y.data() + j * d, m_in.data() + j * d, m_r[static_cast<std::size_t>(j)], xb, d);
    }
  }

  decode_weights m_w;            // norms, routers, predictor outputs (the products' matrices moved to m_packed)
  huge_vector<float> m_weights;  // the packed matrices (pack_weights)
  std::vector<packed_layer> m_packed;
  const float* m_w_vocab = nullptr;
  thread_pool m_pool;
  std::vector<layer_cache> m_layers;
  std::vector<float> m_x, m_in, m_norm, m_q, m_k, m_v, m_attn, m_h, m_hidden, m_gate, m_y;
  std::vector<float> m_pred_hidden, m_pred_logit, m_r, m_scores, m_logits;
  std::vector<std::int64_t> m_row_seq, m_order;
  std::vector<std::vector<std::uint8_t>> m_routed;
  std::vector<std::int64_t> m_rows_run;
  std::vector<std::int64_t> m_keys_read;
};

}  // namespace
}  // namespace cpu

std::unique_ptr<decode_state> make_cpu_decode(const decode_shape& shape, const decode_weights& weights, int threads) {
  if (threads == 0) threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  return std::make_unique<cpu::cpu_decode>(shape, weights, threads);
}

}  // namespace modsim::kernels
