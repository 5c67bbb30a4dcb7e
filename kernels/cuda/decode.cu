// The CUDA decode step (kernels/decode.hpp, make_cuda_decode in kernels/cuda_backend.hpp): the
// weights and the paged KV caches on one device, one stream, every buffer allocated here at
// creation. A step is a sequence of cuBLAS GEMMs and the kernels of decode_rows.cuh and
// decode_attention.cuh; the residual stream, the projections' q/k/v, the norms, the predictor's
// logits and the softmax are fp32, the weights, the caches and the GEMMs' other inputs have the
// step's type. With decode_routing::pad nothing in a step needs the host, so with graph = true
// a step is captured at creation in a CUDA graph (instantiated once) that every step replays:
// its decisions and commit flag are read from device memory the host writes before each replay.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/decode_attention.cuh"
#include "kernels/cuda/decode_rows.cuh"
#include "kernels/cuda/device_context.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/mlp_act.cuh"
#include "kernels/cuda_backend.hpp"
#include "kernels/init.hpp"

namespace modsim::kernels {

namespace cuda {
namespace {

using detail::device_buffer;
using detail::device_context;

std::string field(const std::string& name, std::size_t index, const char* member) {
  return name + "[" + std::to_string(index) + "]." + member;
}

void expect_size(const std::string& key, const std::vector<float>& v, std::int64_t n) {
  if (static_cast<std::int64_t>(v.size()) != n)
    throw input_error("", key, "has " + std::to_string(v.size()) + " values, expected " + std::to_string(n));
}

// Page-locked host memory (cudaMallocHost), freed on destruction.
class pinned_buffer {
 public:
  pinned_buffer() = default;
  explicit pinned_buffer(std::size_t bytes) {
    MODSIM_CUDA_CHECK(cudaMallocHost(&m_ptr, bytes));
    std::memset(m_ptr, 0, bytes);
  }
  ~pinned_buffer() {
    if (m_ptr != nullptr) cudaFreeHost(m_ptr);  // errors ignored: a destructor
  }
  pinned_buffer(pinned_buffer&& o) noexcept : m_ptr(std::exchange(o.m_ptr, nullptr)) {}
  pinned_buffer& operator=(pinned_buffer&& o) noexcept {
    if (this != &o) {
      if (m_ptr != nullptr) cudaFreeHost(m_ptr);
      m_ptr = std::exchange(o.m_ptr, nullptr);
    }
    return *this;
  }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;

  template <class T>
  T* as() const {
    return static_cast<T*>(m_ptr);
  }

 private:
  void* m_ptr = nullptr;
};

// One layer on the device. Projection weights row-major [in, out]; w_qkv is [d, d_q + 2·d_kv]
// (W_q, W_k, W_v side by side: one GEMM gives q, k and v).
struct layer_device {
  bool routed = false;
  std::int64_t routed_index = -1;  // among the routed layers, in layer order
  device_buffer attn_norm_g, w_qkv, w_o, mlp_norm_g, w_up, w_gate, w_down;
  device_buffer router_w, pred_w1, pred_w2;  // routed layers
  float pred_b2 = 0.0f;
  device_buffer k_pool, v_pool;  // [B·pages_per_sequence][n_kv_heads][page_tokens][d_head]
  device_buffer block_table;     // [B][pages_per_sequence] int32
  std::vector<std::int32_t> block_table_host;
};

class cuda_decode final : public decode_state {
 public:
  cuda_decode(const decode_shape& shape, const decode_weights& weights, const cuda_decode_options& options)
      : decode_state(shape),
        m_ctx(std::make_shared<device_context>(options.device)),
        m_t(options.type),
        m_graph(options.graph),
        m_e(static_cast<std::size_t>(dtype_bytes(options.type))) {
    const decode_shape& s = this->shape();
    const std::int64_t B = s.batch, d = s.d_model, L = static_cast<std::int64_t>(s.layers.size());
    m_ld_qkv = s.d_q() + 2 * s.d_kv();
    m_splits = decode_splits(s.max_context);
    for (const decode_layer& layer : s.layers)
      if (layer.routed) ++m_routed_layers;
    m_block_rows = s.routing == decode_routing::pad ? s.pad_rows() : B;

    const cudaStream_t st = m_ctx->stream;
    m_layers.resize(s.layers.size());
    for (std::size_t l = 0; l < s.layers.size(); ++l) upload_layer(l, weights.layers[l]);
    if (s.vocab > 0) {
      m_final_norm_g = upload(weights.final_norm_g);
      m_w_vocab = upload(weights.w_vocab);
    }

    m_x = f32_buffer(B * d);
    m_a = typed_buffer(B * d);
    m_qkv = f32_buffer(B * m_ld_qkv);
    m_attn = typed_buffer(B * s.d_q());
    m_h = f32_buffer(B * d);
    m_up = typed_buffer(B * s.d_ff);
    if (s.mlp == mlp_kind::swiglu) m_gate = typed_buffer(B * s.d_ff);
    m_part_o = f32_buffer(B * s.n_heads * m_splits * s.d_head);
    m_part_m = f32_buffer(B * s.n_heads * m_splits);
    m_part_l = f32_buffer(B * s.n_heads * m_splits);
    m_lengths = device_buffer(static_cast<std::size_t>(L * B) * sizeof(std::int32_t), st);
    m_keys = device_buffer(static_cast<std::size_t>(L) * sizeof(std::int64_t), st);
    m_rows_run.assign(static_cast<std::size_t>(L), 0);
    m_iota = device_buffer(static_cast<std::size_t>(B) * sizeof(std::int32_t), st);
    {
      std::vector<std::int32_t> iota(static_cast<std::size_t>(B));
      std::iota(iota.begin(), iota.end(), 0);
      copy_to_device(m_iota.get(), iota.data(), iota.size() * sizeof(std::int32_t));
    }
    if (m_routed_layers > 0) {
      const std::int64_t R = m_routed_layers;
      m_pred_hidden = f32_buffer(B * s.predictor_hidden);
      m_pred_logits = f32_buffer(B);
      m_routed_x = f32_buffer(B * d);
      m_y = f32_buffer(B * d);
      m_r = f32_buffer(B);
      m_seq = device_buffer(static_cast<std::size_t>(R * B) * sizeof(std::int32_t), st);
      m_decisions = device_buffer(static_cast<std::size_t>(R * B), st);
      m_counts = device_buffer(static_cast<std::size_t>(R) * sizeof(std::int32_t), st);
    }
    if (s.vocab > 0) m_logits = f32_buffer(B * s.vocab);
    m_params_bytes = sizeof(decode_step_params) + static_cast<std::size_t>(m_routed_layers * B);
    m_params = device_buffer(m_params_bytes, st);
    m_params_host = pinned_buffer(m_params_bytes);
    m_count_host = pinned_buffer(sizeof(std::int32_t));
    MODSIM_CUDA_CHECK(cudaEventCreateWithFlags(&m_params_copied, cudaEventDisableTiming));

    const decode_heads h = heads();
    const std::size_t smem = decode_attention_smem(h);
    if (smem > std::size_t{48} << 10) decode_attention_reserve_smem(m_t, smem);

    m_length_bound.assign(static_cast<std::size_t>(L * B), 0);
    m_length_exact.assign(static_cast<std::size_t>(L * B), 0);
    m_length_read.assign(static_cast<std::size_t>(L * B), 0);
    if (m_graph) capture();
    m_ctx->synchronize();
  }

  ~cuda_decode() override {
    cudaSetDevice(m_ctx->device);  // errors ignored: a destructor
    cudaStreamSynchronize(m_ctx->stream);
    if (m_exec != nullptr) cudaGraphExecDestroy(m_exec);
    if (m_graph_captured != nullptr) cudaGraphDestroy(m_graph_captured);
    if (m_params_copied != nullptr) cudaEventDestroy(m_params_copied);
  }

  std::int64_t length(int layer, std::int64_t b) const override {
    check_layer(layer);
    if (b < 0 || b >= shape().batch)
      throw input_error("", "b",
                        "sequence " + std::to_string(b) + " out of [0, " + std::to_string(shape().batch) + ")");
    if (!m_exact_valid) read_lengths();
    return m_length_exact[index(layer, b)];
  }

  void fill_cache(std::span<const std::int64_t> context, std::span<const std::int64_t> routed,
                  std::uint64_t seed) override {
    const decode_shape& s = shape();
    const std::int64_t B = s.batch;
    check_lengths("context", context);
    check_lengths("routed", routed);
    m_ctx->make_current();
    m_ctx->synchronize();
    std::vector<std::int32_t> lengths(static_cast<std::size_t>(B) * s.layers.size());
    for (std::size_t l = 0; l < s.layers.size(); ++l) {
      const auto per_layer = s.layers[l].routed ? routed : context;
      for (std::int64_t b = 0; b < B; ++b)
        lengths[l * static_cast<std::size_t>(B) + static_cast<std::size_t>(b)] =
            static_cast<std::int32_t>(per_layer[static_cast<std::size_t>(b)]);
      dispatch_dtype(m_t, [&](auto tag) {
        using T = decltype(tag);
        fill_pool<T>(l, 0, per_layer, seed);
        fill_pool<T>(l, 1, per_layer, seed);
      });
    }
    copy_to_device(m_lengths.get(), lengths.data(), lengths.size() * sizeof(std::int32_t));
    for (std::size_t i = 0; i < lengths.size(); ++i) m_length_bound[i] = m_length_exact[i] = lengths[i];
    m_exact_valid = true;
  }

  void clear() override {
    m_ctx->make_current();
    MODSIM_CUDA_CHECK(cudaMemsetAsync(m_lengths.get(), 0, m_lengths.bytes(), m_ctx->stream));
    m_ctx->synchronize();
    std::fill(m_length_bound.begin(), m_length_bound.end(), 0);
    std::fill(m_length_exact.begin(), m_length_exact.end(), 0);
    m_exact_valid = true;
  }

  void set_input(std::span<const float> x) override {
    const decode_shape& s = shape();
    if (static_cast<std::int64_t>(x.size()) != s.batch * s.d_model)
      throw input_error(
          "", "decode_state.set_input",
          "needs batch·d_model = " + std::to_string(s.batch * s.d_model) + " values, got " + std::to_string(x.size()));
    m_ctx->make_current();
    copy_to_device(m_x.get(), x.data(), x.size_bytes());
  }

  void step(const decode_decisions& d, bool commit) override {
    check_decisions(d);
    m_ctx->make_current();
    check_room();
    write_params(d, commit);
    if (m_graph) {
      MODSIM_CUDA_CHECK(cudaGraphLaunch(m_exec, m_ctx->stream));
    } else {
      enqueue_step();
    }
    if (commit) {
      for (std::size_t l = 0; l < shape().layers.size(); ++l)
        for (std::int64_t b = 0; b < shape().batch; ++b) {
          std::int64_t& bound = m_length_bound[index(static_cast<int>(l), b)];
          bound = std::min(bound + 1, shape().max_context);
        }
      m_exact_valid = false;
    }
    if (m_graph) m_rows_run = m_graph_rows_run;
  }

  void synchronize() override {
    m_ctx->make_current();
    m_ctx->synchronize();
  }

  std::vector<float> hidden() const override {
    return download_f32(m_x, static_cast<std::size_t>(shape().batch * shape().d_model));
  }

  std::vector<float> logits() const override {
    if (shape().vocab == 0) return {};
    return download_f32(m_logits, static_cast<std::size_t>(shape().batch * shape().vocab));
  }

  std::vector<std::vector<std::uint8_t>> routed() const override {
    const std::size_t B = static_cast<std::size_t>(shape().batch);
    std::vector<std::uint8_t> all(static_cast<std::size_t>(m_routed_layers) * B, 0);
    if (!all.empty()) {
      m_ctx->make_current();
      m_ctx->synchronize();
      MODSIM_CUDA_CHECK(cudaMemcpy(all.data(), m_decisions.get(), all.size(), cudaMemcpyDeviceToHost));
    }
    std::vector<std::vector<std::uint8_t>> out;
    for (std::int64_t r = 0; r < m_routed_layers; ++r)
      out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r) * B),
                       all.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r + 1) * B));
    return out;
  }

  // As the CPU step counts them (in the step's element size): per layer the predictor and
  // router of a routed layer, and when its block ran (padding rows included) the block's
  // weights and the keys and values its rows attended over; the final norm and LM head.
  std::int64_t step_bytes() const override {
    const decode_shape& s = shape();
    const std::int64_t d = s.d_model, L = static_cast<std::int64_t>(s.layers.size());
    const std::int64_t block_weights =
        2 * d + d * m_ld_qkv + s.d_q() * d + (s.mlp == mlp_kind::swiglu ? 3 : 2) * d * s.d_ff;
    std::vector<std::int64_t> keys(static_cast<std::size_t>(L));
    m_ctx->make_current();
    m_ctx->synchronize();
    MODSIM_CUDA_CHECK(
        cudaMemcpy(keys.data(), m_keys.get(), keys.size() * sizeof(std::int64_t), cudaMemcpyDeviceToHost));
    std::int64_t elements = 0;
    for (std::size_t l = 0; l < s.layers.size(); ++l) {
      if (s.layers[l].routed) elements += d * s.predictor_hidden + s.predictor_hidden + d;
      if (m_rows_run[l] > 0) elements += block_weights + keys[l] * 2 * s.d_kv();
    }
    if (s.vocab > 0) elements += d + d * s.vocab;
    return elements * static_cast<std::int64_t>(m_e);
  }

  void write_cache(int layer, std::int64_t b, std::span<const float> k, std::span<const float> v) override {
    const decode_shape& s = shape();
    if (layer < 0 || layer >= static_cast<int>(s.layers.size()) || b < 0 || b >= s.batch)
      throw input_error("", "decode_state.write_cache", "layer or sequence out of range");
    if (static_cast<std::int64_t>(k.size()) != s.d_kv() || static_cast<std::int64_t>(v.size()) != s.d_kv())
      throw input_error("", "decode_state.write_cache", "needs d_kv = " + std::to_string(s.d_kv()) + " values each");
    m_ctx->make_current();
    if (!m_exact_valid) read_lengths();
    const std::size_t at = index(layer, b);
    const std::int64_t slot = m_length_exact[at];
    if (slot >= s.max_context) throw input_error("", "decode_state.write_cache", "the cache is full");
    const layer_device& dev = m_layers[static_cast<std::size_t>(layer)];
    const std::int64_t page =
        dev.block_table_host[static_cast<std::size_t>(b * s.pages_per_sequence() + slot / s.page_tokens)];
    dispatch_dtype(m_t, [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> kt(k.size()), vt(v.size());
      for (std::size_t i = 0; i < k.size(); ++i) kt[i] = from_float<T>(k[i]);
      for (std::size_t i = 0; i < v.size(); ++i) vt[i] = from_float<T>(v[i]);
      // KV head g's d_head elements go to ((page·n_kv_heads + g)·page_tokens + slot % page_tokens)·d_head.
      const std::size_t first =
          static_cast<std::size_t>((page * s.n_kv_heads * s.page_tokens + slot % s.page_tokens) * s.d_head) * sizeof(T);
      const std::size_t pitch = static_cast<std::size_t>(s.page_tokens * s.d_head) * sizeof(T);
      const std::size_t width = static_cast<std::size_t>(s.d_head) * sizeof(T);
      const auto rows = static_cast<std::size_t>(s.n_kv_heads);
      MODSIM_CUDA_CHECK(cudaMemcpy2DAsync(dev.k_pool.as<char>() + first, pitch, kt.data(), width, width, rows,
                                          cudaMemcpyHostToDevice, m_ctx->stream));
      MODSIM_CUDA_CHECK(cudaMemcpy2DAsync(dev.v_pool.as<char>() + first, pitch, vt.data(), width, width, rows,
                                          cudaMemcpyHostToDevice, m_ctx->stream));
      m_ctx->synchronize();
    });
    const auto length = static_cast<std::int32_t>(slot + 1);
    copy_to_device(m_lengths.as<std::int32_t>() + at, &length, sizeof length);
    m_length_exact[at] = slot + 1;
    m_length_bound[at] = std::max(m_length_bound[at], slot + 1);
  }

 private:
  // --- creation ---

  decode_heads heads() const { return {shape().n_heads, shape().n_kv_heads, shape().d_head}; }

  device_buffer f32_buffer(std::int64_t count) const {
    return device_buffer(static_cast<std::size_t>(count) * sizeof(float), m_ctx->stream);
  }
  device_buffer typed_buffer(std::int64_t count) const {
    return device_buffer(static_cast<std::size_t>(count) * m_e, m_ctx->stream);
  }

  // Blocking copy of `bytes` host bytes to the device, ordered on the stream.
  void copy_to_device(void* dst, const void* src, std::size_t bytes) const {
    if (bytes == 0) return;
    MODSIM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, m_ctx->stream));
    m_ctx->synchronize();
  }

  // The values in the step's type, on the device.
  device_buffer upload(const std::vector<float>& values) const {
    device_buffer out = typed_buffer(static_cast<std::int64_t>(values.size()));
    dispatch_dtype(m_t, [&](auto tag) {
      using T = decltype(tag);
      std::vector<T> converted(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) converted[i] = from_float<T>(values[i]);
      copy_to_device(out.get(), converted.data(), converted.size() * sizeof(T));
    });
    return out;
  }

  void upload_layer(std::size_t l, const decode_layer_weights& w) {
    const decode_shape& s = shape();
    const std::int64_t d = s.d_model, B = s.batch, P = s.pages_per_sequence();
    layer_device& dev = m_layers[l];
    dev.routed = s.layers[l].routed;
    // w_qkv[i] = [w_q[i], w_k[i], w_v[i]]
    std::vector<float> qkv(static_cast<std::size_t>(d * m_ld_qkv));
    for (std::int64_t i = 0; i < d; ++i) {
      float* row = qkv.data() + i * m_ld_qkv;
      std::copy_n(w.w_q.data() + i * s.d_q(), s.d_q(), row);
      std::copy_n(w.w_k.data() + i * s.d_kv(), s.d_kv(), row + s.d_q());
      std::copy_n(w.w_v.data() + i * s.d_kv(), s.d_kv(), row + s.d_q() + s.d_kv());
    }
    dev.attn_norm_g = upload(w.attn_norm_g);
    dev.w_qkv = upload(qkv);
    dev.w_o = upload(w.w_o);
    dev.mlp_norm_g = upload(w.mlp_norm_g);
    dev.w_up = upload(w.w_up);
    if (s.mlp == mlp_kind::swiglu) dev.w_gate = upload(w.w_gate);
    dev.w_down = upload(w.w_down);
    if (dev.routed) {
      dev.routed_index = 0;
      for (std::size_t k = 0; k < l; ++k)
        if (s.layers[k].routed) ++dev.routed_index;
      dev.router_w = upload(w.router_w);
      dev.pred_w1 = upload(w.pred_w1);
      dev.pred_w2 = upload(w.pred_w2);
      dev.pred_b2 = w.pred_b2;
    }
    const std::int64_t pool = B * P * s.page_tokens * s.d_kv();
    dev.k_pool = typed_buffer(pool);
    dev.v_pool = typed_buffer(pool);
    // The layer's B·P pages dealt to the sequences in a shuffled order (a serving engine's
    // free list): sequence b owns pages block_table[b·P .. b·P + P).
    dev.block_table_host.resize(static_cast<std::size_t>(B * P));
    std::iota(dev.block_table_host.begin(), dev.block_table_host.end(), 0);
    std::mt19937_64 rng(0x6b76636163686531ULL + l);
    std::shuffle(dev.block_table_host.begin(), dev.block_table_host.end(), rng);
    dev.block_table = device_buffer(dev.block_table_host.size() * sizeof(std::int32_t), m_ctx->stream);
    copy_to_device(dev.block_table.get(), dev.block_table_host.data(),
                   dev.block_table_host.size() * sizeof(std::int32_t));
  }

  // Layer l's K (kind 0) or V (kind 1) pool with the first lengths[b] slots of each sequence
  // drawn from `seed` as decode.hpp fixes for every backend: value (b, t, g, i) is
  // fill_normal(seed, stream 7000 + 2l + kind, mean 0, std 0.5) at index
  // ((b·max_context + t)·n_kv_heads + g)·d_head + i.
  template <class T>
  void fill_pool(std::size_t l, int kind, std::span<const std::int64_t> lengths, std::uint64_t seed) {
    const decode_shape& s = shape();
    const std::int64_t B = s.batch, P = s.pages_per_sequence(), d_kv = s.d_kv(), pt = s.page_tokens;
    const layer_device& dev = m_layers[l];
    std::vector<T> pool(static_cast<std::size_t>(B * P * pt * d_kv), from_float<T>(0.0f));
    const std::uint64_t stream = 7000 + 2 * static_cast<std::uint64_t>(l) + static_cast<std::uint64_t>(kind);
    // On every host thread, one page of one sequence at a time (pages belong to one sequence,
    // so no two threads write one place).
    parallel_indices(B * P, [&](std::int64_t unit) {
      const std::int64_t b = unit / P, p0 = (unit % P) * pt;
      const std::int64_t n = std::min(lengths[static_cast<std::size_t>(b)], p0 + pt);
      std::vector<float> row(static_cast<std::size_t>(d_kv));
      for (std::int64_t t = p0; t < n; ++t) {
        fill_normal_from(row, seed, stream, 0.0, 0.5, (b * s.max_context + t) * d_kv);
        const std::int64_t page = dev.block_table_host[static_cast<std::size_t>(b * P + t / pt)];
        for (std::int64_t g = 0; g < s.n_kv_heads; ++g) {
          const float* src = row.data() + g * s.d_head;
          T* dst = pool.data() + ((page * s.n_kv_heads + g) * pt + t % pt) * s.d_head;
          for (std::int64_t i = 0; i < s.d_head; ++i) dst[i] = from_float<T>(src[i]);
        }
      }
    });
    copy_to_device(kind == 0 ? dev.k_pool.get() : dev.v_pool.get(), pool.data(), pool.size() * sizeof(T));
  }

  // --- checks ---

  std::size_t index(int layer, std::int64_t b) const {
    return static_cast<std::size_t>(layer) * static_cast<std::size_t>(shape().batch) + static_cast<std::size_t>(b);
  }

  void check_layer(int layer) const {
    if (layer < 0 || layer >= static_cast<int>(shape().layers.size()))
      throw input_error(
          "", "layer", "layer " + std::to_string(layer) + " out of [0, " + std::to_string(shape().layers.size()) + ")");
  }

  void check_lengths(const char* name, std::span<const std::int64_t> lengths) const {
    const decode_shape& s = shape();
    if (static_cast<std::int64_t>(lengths.size()) != s.batch)
      throw input_error("", "decode_state.fill_cache",
                        std::string(name) + " has " + std::to_string(lengths.size()) +
                            " lengths, expected batch = " + std::to_string(s.batch));
    for (const std::int64_t n : lengths)
      if (n < 0 || n > s.max_context)
        throw input_error("", "decode_state.fill_cache",
                          std::string(name) + " length " + std::to_string(n) +
                              " out of [0, max_context = " + std::to_string(s.max_context) + "]");
  }

  void check_decisions(const decode_decisions& d) const {
    const decode_shape& s = shape();
    switch (d.from) {
      case decode_decisions::source::predictor:
        return;
      case decode_decisions::source::forced_count:
        if (d.count < 0 || d.count > s.batch)
          throw input_error("", "decode_decisions.count",
                            std::to_string(d.count) + " out of [0, batch = " + std::to_string(s.batch) + "]");
        return;
      case decode_decisions::source::forced_mask:
        if (static_cast<std::int64_t>(d.mask.size()) != m_routed_layers)
          throw input_error("", "decode_decisions.mask",
                            "has " + std::to_string(d.mask.size()) + " layers, expected the " +
                                std::to_string(m_routed_layers) + " routed layers");
        for (const auto& layer : d.mask)
          if (static_cast<std::int64_t>(layer.size()) != s.batch)
            throw input_error(
                "", "decode_decisions.mask",
                "a layer has " + std::to_string(layer.size()) + " values, expected batch = " + std::to_string(s.batch));
        return;
    }
    throw input_error("", "decode_decisions.from", "unknown source");
  }

  // Every sequence has a free slot at every layer (a routed layer's length is only bounded on
  // the host between reads: the exact lengths are read back when the bound reaches the end).
  void check_room() {
    const decode_shape& s = shape();
    const auto full = [&](const std::vector<std::int64_t>& lengths) {
      return std::any_of(lengths.begin(), lengths.end(), [&](std::int64_t n) { return n >= s.max_context; });
    };
    if (!full(m_length_bound)) return;
    if (!m_exact_valid) read_lengths();
    m_length_bound = m_length_exact;
    for (std::size_t l = 0; l < s.layers.size(); ++l)
      for (std::int64_t b = 0; b < s.batch; ++b)
        if (m_length_exact[index(static_cast<int>(l), b)] >= s.max_context)
          throw input_error("", "decode_state.step",
                            "sequence " + std::to_string(b) + "'s cache at layer " + std::to_string(l) +
                                " is full (max_context = " + std::to_string(s.max_context) + " tokens)");
  }

  void read_lengths() const {
    m_ctx->make_current();
    m_ctx->synchronize();
    MODSIM_CUDA_CHECK(cudaMemcpy(m_length_read.data(), m_lengths.get(), m_length_read.size() * sizeof(std::int32_t),
                                 cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < m_length_read.size(); ++i) m_length_exact[i] = m_length_read[i];
    m_exact_valid = true;
  }

  std::vector<float> download_f32(const device_buffer& buffer, std::size_t count) const {
    std::vector<float> out(count);
    if (count == 0) return out;
    m_ctx->make_current();
    m_ctx->synchronize();
    MODSIM_CUDA_CHECK(cudaMemcpy(out.data(), buffer.get(), count * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  }

  // --- a step ---

  // The step's decisions into device memory, through the pinned staging buffer (free again
  // once the previous step's copy has run).
  void write_params(const decode_decisions& d, bool commit) {
    MODSIM_CUDA_CHECK(cudaEventSynchronize(m_params_copied));
    auto* p = m_params_host.as<decode_step_params>();
    p->source = d.from == decode_decisions::source::predictor      ? 0
                : d.from == decode_decisions::source::forced_count ? 1
                                                                   : 2;
    p->count = static_cast<std::int32_t>(d.count);
    p->commit = commit ? 1 : 0;
    p->unused = 0;
    auto* staged_mask = m_params_host.as<std::uint8_t>() + sizeof(decode_step_params);
    const std::size_t B = static_cast<std::size_t>(shape().batch);
    for (std::size_t r = 0; r < static_cast<std::size_t>(m_routed_layers); ++r)
      for (std::size_t b = 0; b < B; ++b)
        staged_mask[r * B + b] = d.from == decode_decisions::source::forced_mask && d.mask[r][b] != 0 ? 1 : 0;
    MODSIM_CUDA_CHECK(cudaMemcpyAsync(m_params.get(), m_params_host.as<void>(), m_params_bytes, cudaMemcpyHostToDevice,
                                      m_ctx->stream));
    MODSIM_CUDA_CHECK(cudaEventRecord(m_params_copied, m_ctx->stream));
  }

  // At creation: one uncaptured step first (uncommitted, on a zero input: it loads the
  // kernels and lets cuBLAS pick its algorithms outside the capture; it writes only scratch
  // and the free slot after each cache's length, which a step writes before it reads), its
  // outputs cleared, then the capture of a step and the graph every step() replays.
  void capture() {
    const cudaStream_t st = m_ctx->stream;
    write_params(decode_decisions{}, false);
    enqueue_step();
    MODSIM_CUDA_CHECK(cudaMemsetAsync(m_x.get(), 0, m_x.bytes(), st));
    if (m_logits.get() != nullptr) MODSIM_CUDA_CHECK(cudaMemsetAsync(m_logits.get(), 0, m_logits.bytes(), st));
    if (m_decisions.get() != nullptr) MODSIM_CUDA_CHECK(cudaMemsetAsync(m_decisions.get(), 0, m_decisions.bytes(), st));
    m_ctx->synchronize();
    MODSIM_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue_step();
    } catch (...) {
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(st, &partial);  // ends the failed capture; its error is the one thrown
      if (partial != nullptr) cudaGraphDestroy(partial);
      throw;
    }
    MODSIM_CUDA_CHECK(cudaStreamEndCapture(st, &m_graph_captured));
    MODSIM_CUDA_CHECK(cudaGraphInstantiate(&m_exec, m_graph_captured, 0));
    m_graph_rows_run = m_rows_run;  // what every replay runs
    std::fill(m_rows_run.begin(), m_rows_run.end(), 0);
  }

  const decode_step_params* params() const { return m_params.as<const decode_step_params>(); }
  const std::uint8_t* mask(std::int64_t routed_index) const {
    return m_params.as<const std::uint8_t>() + sizeof(decode_step_params) + routed_index * shape().batch;
  }

  // Every kernel and GEMM of one step, on the stream. Synchronises with the host only for
  // decode_routing::sync (the routed counts).
  void enqueue_step() {
    const decode_shape& s = shape();
    const cudaStream_t st = m_ctx->stream;
    for (std::size_t l = 0; l < s.layers.size(); ++l) {
      if (m_layers[l].routed)
        routed_layer(l);
      else
        block(l, m_x.as<float>(), m_x.as<float>(), m_iota.as<std::int32_t>(), nullptr, s.batch);
    }
    if (s.vocab > 0) {
      decode_rms_norm(m_t, m_x.as<float>(), m_final_norm_g.get(), m_a.get(), s.batch, s.d_model, st);
      project(m_a.get(), s.batch, s.d_model, m_w_vocab.get(), s.vocab, m_logits.get(), dtype::fp32, 0.0f);
    }
  }

  // C[m, n] (type c) = A[m, k]·W[k, n] + beta·C, A and W of the step's type.
  void project(const void* a, std::int64_t m, std::int64_t k, const void* w, std::int64_t n, void* c, dtype c_type,
               float beta) {
    cuda::project(m_ctx->cublas, m_t, a, m, k, w, n, c, c_type, beta);
  }

  void routed_layer(std::size_t l) {
    const decode_shape& s = shape();
    const cudaStream_t st = m_ctx->stream;
    const layer_device& dev = m_layers[l];
    const std::int64_t B = s.batch, d = s.d_model, ri = dev.routed_index;
    std::int32_t* seq = m_seq.as<std::int32_t>() + ri * B;
    std::int32_t* count = m_counts.as<std::int32_t>() + ri;
    // The predictor on every token: logits = relu(x·P_1)·p_2 + b.
    decode_convert(m_t, m_x.as<float>(), m_a.get(), B * d, st);
    project(m_a.get(), B, d, dev.pred_w1.get(), s.predictor_hidden, m_pred_hidden.get(), dtype::fp32, 0.0f);
    decode_predictor_logits(m_t, m_pred_hidden.as<float>(), dev.pred_w2.get(), dev.pred_b2, m_pred_logits.as<float>(),
                            B, s.predictor_hidden, st);
    decode_route(m_pred_logits.as<float>(), params(), mask(ri), B, m_block_rows, B,
                 m_decisions.as<std::uint8_t>() + ri * B, seq, count, st);
    std::int64_t rows = m_block_rows;
    if (s.routing == decode_routing::sync) {
      MODSIM_CUDA_CHECK(
          cudaMemcpyAsync(m_count_host.as<void>(), count, sizeof(std::int32_t), cudaMemcpyDeviceToHost, st));
      m_ctx->synchronize();
      rows = *m_count_host.as<std::int32_t>();
    }
    m_rows_run[l] = rows;
    if (rows == 0) return;  // sync: no token entered, the block is skipped
    decode_gather(m_t, m_x.as<float>(), dev.router_w.get(), seq, m_routed_x.as<float>(), m_r.as<float>(), rows, d, st);
    block(l, m_routed_x.as<float>(), m_y.as<float>(), seq, count, rows);
    decode_scatter(m_y.as<float>(), m_routed_x.as<float>(), m_r.as<float>(), seq, count, m_x.as<float>(), rows, d, st);
  }

  // The transformer block of layer l on `rows` rows: out = h + MLP(RMSNorm(h)), h = in +
  // attention(RMSNorm(in)); row j is sequence seq_of_row[j]; the rows from *real_rows on
  // (device memory; null: none) are padding and append nothing. in and out are fp32 [rows, d]
  // and may be the same buffer.
  void block(std::size_t l, const float* in, float* out, const std::int32_t* seq_of_row, const std::int32_t* real_rows,
             std::int64_t rows) {
    const decode_shape& s = shape();
    const cudaStream_t st = m_ctx->stream;
    const layer_device& dev = m_layers[l];
    const std::int64_t d = s.d_model;
    const std::size_t row_bytes = static_cast<std::size_t>(rows * d) * sizeof(float);
    decode_rms_norm(m_t, in, dev.attn_norm_g.get(), m_a.get(), rows, d, st);
    project(m_a.get(), rows, d, dev.w_qkv.get(), m_ld_qkv, m_qkv.get(), dtype::fp32, 0.0f);
    paged_kv kv;
    kv.k_pool = dev.k_pool.get();
    kv.v_pool = dev.v_pool.get();
    kv.block_table = dev.block_table.as<const std::int32_t>();
    kv.lengths = m_lengths.as<std::int32_t>() + static_cast<std::int64_t>(l) * s.batch;
    kv.pages_per_sequence = s.pages_per_sequence();
    kv.page_tokens = s.page_tokens;
    kv.max_context = s.max_context;
    const decode_heads h = heads();
    decode_append_kv(m_t, kv, h, m_qkv.as<float>(), m_ld_qkv, seq_of_row, real_rows, rows, st);
    decode_attention(m_t, kv, h, m_qkv.as<float>(), m_ld_qkv, seq_of_row, rows,
                     {m_part_o.as<float>(), m_part_m.as<float>(), m_part_l.as<float>(), m_splits}, m_attn.get(), st);
    decode_count_keys(kv, seq_of_row, rows, m_keys.as<std::int64_t>() + l, st);
    m_rows_run[l] = rows;
    MODSIM_CUDA_CHECK(cudaMemcpyAsync(m_h.get(), in, row_bytes, cudaMemcpyDeviceToDevice, st));
    project(m_attn.get(), rows, s.d_q(), dev.w_o.get(), d, m_h.get(), dtype::fp32, 1.0f);
    decode_rms_norm(m_t, m_h.as<float>(), dev.mlp_norm_g.get(), m_a.get(), rows, d, st);
    project(m_a.get(), rows, d, dev.w_up.get(), s.d_ff, m_up.get(), m_t, 0.0f);
    if (s.mlp == mlp_kind::swiglu) {
      project(m_a.get(), rows, d, dev.w_gate.get(), s.d_ff, m_gate.get(), m_t, 0.0f);
      silu_mul(m_t, m_up.get(), m_gate.get(), rows * s.d_ff, st);
    } else {
      gelu(m_t, m_up.get(), rows * s.d_ff, st);
    }
    MODSIM_CUDA_CHECK(cudaMemcpyAsync(out, m_h.get(), row_bytes, cudaMemcpyDeviceToDevice, st));
    project(m_up.get(), rows, s.d_ff, dev.w_down.get(), d, out, dtype::fp32, 1.0f);
    decode_advance_lengths(params(), seq_of_row, real_rows, rows, kv.lengths, s.max_context, st);
  }

  std::shared_ptr<device_context> m_ctx;  // first: released after every buffer
  dtype m_t;
  bool m_graph;
  std::size_t m_e;  // bytes per element of m_t
  std::int64_t m_ld_qkv = 0, m_splits = 0, m_routed_layers = 0;
  std::int64_t m_block_rows = 0;  // rows of a routed layer's block: pad_rows() (pad) or batch (sync, at most)

  std::vector<layer_device> m_layers;
  device_buffer m_final_norm_g, m_w_vocab;

  // fp32: residual stream x, q|k|v, h, partial attention, predictor, gathered rows,
  // block output, router weights, logits. Type t: the GEMMs' inputs a, attention output, MLP hidden.
  device_buffer m_x, m_qkv, m_h, m_part_o, m_part_m, m_part_l, m_pred_hidden, m_pred_logits, m_routed_x, m_y, m_r,
      m_logits;
  device_buffer m_a, m_attn, m_up, m_gate;
  device_buffer m_lengths;                     // [layers][B] int32
  device_buffer m_keys;                        // [layers] int64: cached keys the last step's attention read per layer
  std::vector<std::int64_t> m_rows_run;        // [layers]: rows the last step's block ran (0: skipped)
  std::vector<std::int64_t> m_graph_rows_run;  // [layers]: rows of the captured step
  device_buffer m_iota;                        // [B] int32: row j of a dense layer is sequence j
  device_buffer m_seq;                         // [routed layers][B] int32: sequence of each block row
  device_buffer m_decisions;                   // [routed layers][B] uint8
  device_buffer m_counts;                      // [routed layers] int32: rows that entered
  device_buffer m_params;                      // decode_step_params, then the mask [routed layers][B] uint8
  std::size_t m_params_bytes = 0;
  pinned_buffer m_params_host, m_count_host;
  cudaEvent_t m_params_copied = nullptr;

  cudaGraph_t m_graph_captured = nullptr;
  cudaGraphExec_t m_exec = nullptr;

  // Cached lengths [layer][B]: an upper bound kept on the host (exact for dense layers), and
  // the exact ones read back from the device when m_exact_valid is false.
  std::vector<std::int64_t> m_length_bound;
  mutable std::vector<std::int64_t> m_length_exact;
  mutable std::vector<std::int32_t> m_length_read;  // staging of the device's lengths (no allocation in step())
  mutable bool m_exact_valid = true;
};

// Refusals that need no device: the options, the shape and the weights' sizes.
void check_inputs(const decode_shape& shape, const decode_weights& weights, const cuda_decode_options& options) {
  if (options.graph && shape.routing == decode_routing::sync)
    throw input_error("", "cuda_decode_options.graph",
                      "a CUDA graph needs decode_routing::pad (sync reads the routed count back to the host)");
  if (options.type != dtype::fp32 && options.type != dtype::bf16)
    throw input_error("", "cuda_decode_options.type",
                      std::string("the CUDA decode step supports fp32 and bf16, got ") + to_string(options.type));
  shape.validate();
  const std::int64_t B = shape.batch, d = shape.d_model, P = shape.pages_per_sequence();
  if (B > 65535) throw input_error("", "decode_shape.batch", "at most 65535 sequences on the CUDA decode step");
  if (shape.n_kv_heads > 65535)
    throw input_error("", "decode_shape.n_kv_heads", "at most 65535 kv heads on the CUDA decode step");
  if (B * P > (std::int64_t{1} << 31) - 1)
    throw input_error("", "decode_shape.max_context", "batch·pages_per_sequence does not fit int32 page indices");
  if (weights.layers.size() != shape.layers.size())
    throw input_error(
        "", "decode_weights.layers",
        "has " + std::to_string(weights.layers.size()) + " layers, expected " + std::to_string(shape.layers.size()));
  const std::string name = "decode_weights.layers";
  for (std::size_t l = 0; l < shape.layers.size(); ++l) {
    const decode_layer_weights& w = weights.layers[l];
    expect_size(field(name, l, "attn_norm_g"), w.attn_norm_g, d);
    expect_size(field(name, l, "w_q"), w.w_q, d * shape.d_q());
    expect_size(field(name, l, "w_k"), w.w_k, d * shape.d_kv());
    expect_size(field(name, l, "w_v"), w.w_v, d * shape.d_kv());
    expect_size(field(name, l, "w_o"), w.w_o, shape.d_q() * d);
    expect_size(field(name, l, "mlp_norm_g"), w.mlp_norm_g, d);
    expect_size(field(name, l, "w_up"), w.w_up, d * shape.d_ff);
    if (shape.mlp == mlp_kind::swiglu) expect_size(field(name, l, "w_gate"), w.w_gate, d * shape.d_ff);
    expect_size(field(name, l, "w_down"), w.w_down, shape.d_ff * d);
    if (shape.layers[l].routed) {
      expect_size(field(name, l, "router_w"), w.router_w, d);
      expect_size(field(name, l, "pred_w1"), w.pred_w1, d * shape.predictor_hidden);
      expect_size(field(name, l, "pred_w2"), w.pred_w2, shape.predictor_hidden);
    }
  }
  if (shape.vocab > 0) {
    expect_size("decode_weights.final_norm_g", weights.final_norm_g, d);
    expect_size("decode_weights.w_vocab", weights.w_vocab, d * shape.vocab);
  }
}

}  // namespace
}  // namespace cuda

std::unique_ptr<decode_state> make_cuda_decode(const decode_shape& shape, const decode_weights& weights,
                                               const cuda_decode_options& options) {
  cuda::check_inputs(shape, weights, options);
  const int count = cuda_device_count();
  if (count == 0) throw runtime_error("cuda decode: no CUDA device (no driver or no GPU visible)");
  if (options.device < 0 || options.device >= count)
    throw input_error(
        "", "cuda_decode_options.device",
        "CUDA device " + std::to_string(options.device) + " does not exist (" + std::to_string(count) + " visible)");
  return std::make_unique<cuda::cuda_decode>(shape, weights, options);
}

}  // namespace modsim::kernels
