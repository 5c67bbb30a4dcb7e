// The CUDA backend: its workspace (device buffers, one allocation per tensor, made once) and
// the backend (one device, one stream, one cuBLAS handle with its own workspace), wiring the
// ops of kernels/backend.hpp to the kernels of this folder. The composition of the blocks
// mirrors the CPU backend's (kernels/cpu/cpu_backend.cpp) op for op.
#include <algorithm>
#include <memory>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/block_timeline.hpp"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_cudnn.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/expert_router.cuh"
#include "kernels/cuda/gather.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/mlp_act.cuh"
#include "kernels/cuda/moe.cuh"
#include "kernels/init.hpp"
#include "kernels/cuda/nvml.hpp"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/router.cuh"
#include "kernels/cuda/scatter.cuh"
#include "kernels/cuda/softmax.cuh"
#include "kernels/cuda/topk.cuh"
#include "kernels/cuda_backend.hpp"

namespace modsim::kernels {

namespace cuda {
namespace {

// cuBLAS's own scratch, given to it once so that no GEMM allocates (NVIDIA recommends
// 32 MiB on Hopper).
constexpr std::size_t cublas_workspace_bytes = std::size_t{32} << 20;

// What one backend owns on its device; shared with its workspaces so that either may be
// destroyed first.
struct device_context {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  void* cublas_workspace = nullptr;

  explicit device_context(int dev) : device(dev) {
    MODSIM_CUDA_CHECK(cudaSetDevice(device));
    try {
      MODSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      MODSIM_CUDA_CHECK(cublasCreate(&cublas));
      MODSIM_CUDA_CHECK(cublasSetStream(cublas, stream));
      // fp32 GEMMs stay fp32 (no TF32); bf16 GEMMs use the tensor cores regardless.
      MODSIM_CUDA_CHECK(cublasSetMathMode(cublas, CUBLAS_DEFAULT_MATH));
      MODSIM_CUDA_CHECK(cublasSetPointerMode(cublas, CUBLAS_POINTER_MODE_HOST));
      MODSIM_CUDA_CHECK(cudaMalloc(&cublas_workspace, cublas_workspace_bytes));
      MODSIM_CUDA_CHECK(cublasSetWorkspace(cublas, cublas_workspace, cublas_workspace_bytes));
    } catch (...) {
      release();
      throw;
    }
  }
  ~device_context() { release(); }
  device_context(const device_context&) = delete;
  device_context& operator=(const device_context&) = delete;

  void make_current() const { MODSIM_CUDA_CHECK(cudaSetDevice(device)); }
  void synchronize() const { MODSIM_CUDA_CHECK(cudaStreamSynchronize(stream)); }

  // The cuDNN handle on `stream`, made on first use (fused attention only): loading cuDNN and
  // making a handle take long enough to keep them out of backends that never ask.
  const cudnn_session& cudnn() {
    if (!m_cudnn) m_cudnn = std::make_unique<cudnn_session>(stream);
    return *m_cudnn;
  }

 private:
  // Errors are ignored: this runs in destructors.
  void release() noexcept {
    cudaSetDevice(device);
    if (stream != nullptr) cudaStreamSynchronize(stream);
    m_cudnn.reset();
    if (cublas != nullptr) cublasDestroy(cublas);
    if (cublas_workspace != nullptr) cudaFree(cublas_workspace);
    if (stream != nullptr) cudaStreamDestroy(stream);
    cublas = nullptr;
    cublas_workspace = nullptr;
    stream = nullptr;
  }

  std::unique_ptr<cudnn_session> m_cudnn;
};

// One cudaMalloc'ed block (256-byte aligned), zeroed on allocation; freed on destruction.
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(std::size_t bytes, cudaStream_t stream) : m_bytes(bytes) {
    if (bytes == 0) return;
    MODSIM_CUDA_CHECK(cudaMalloc(&m_ptr, bytes));
    const cudaError_t status = cudaMemsetAsync(m_ptr, 0, bytes, stream);
    if (status != cudaSuccess) {
      cudaFree(m_ptr);
      m_ptr = nullptr;
      ::modsim::kernels::cuda::check(status, "cudaMemsetAsync(m_ptr, 0, bytes, stream)", __FILE__, __LINE__);
    }
  }
  ~device_buffer() {
    if (m_ptr != nullptr) cudaFree(m_ptr);
  }
  device_buffer(device_buffer&& o) noexcept
      : m_ptr(std::exchange(o.m_ptr, nullptr)), m_bytes(std::exchange(o.m_bytes, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      if (m_ptr != nullptr) cudaFree(m_ptr);
      m_ptr = std::exchange(o.m_ptr, nullptr);
      m_bytes = std::exchange(o.m_bytes, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  void* get() const { return m_ptr; }
  std::size_t bytes() const { return m_bytes; }
  template <class T>
  T* as() const {
    return static_cast<T*>(m_ptr);
  }

 private:
  void* m_ptr = nullptr;
  std::size_t m_bytes = 0;
};

// How a tensor is stored: in the workspace's dtype (activations, weights), always fp32
// (router weights r, r̃, expert logits and gates), or int32 (indices).
enum class storage { act, f32, i32 };

storage storage_of(tensor t) {
  if (is_index(t)) return storage::i32;
  switch (t) {
    case tensor::router_logits:
    case tensor::routed_r:
    case tensor::expert_logits:
    case tensor::expert_gate:
      return storage::f32;
    default:
      return storage::act;
  }
}

std::size_t element_bytes(storage s, dtype act) {
  if (s == storage::act) return act == dtype::bf16 ? 2 : 4;
  return 4;
}

class cuda_workspace final : public workspace {
 public:
  cuda_workspace(std::shared_ptr<device_context> ctx, const block_shape& s, dtype type,
                 const workspace_options& options)
      : workspace(s, type), m_ctx(std::move(ctx)) {
    if (options.input_copies < 1)
      throw input_error("", "workspace.input_copies",
                        "must be at least 1, got " + std::to_string(options.input_copies));
    const std::int64_t T = s.tokens(), d = s.d_model, dq = s.d_q(), dkv = s.d_kv(), dff = s.d_ff;
    const std::int64_t B = s.batch, S = s.seq_len, k = s.routed_tokens();
    const bool swiglu = s.mlp == mlp_kind::swiglu;
    const bool moe = s.variant != mode_variant::none;
    const std::int64_t E = moe ? s.experts : 0, Et = moe ? s.router_experts() : 0;

    for (int i = 0; i < tensor_count; ++i) set_size(static_cast<tensor>(i), tensor_elements(static_cast<tensor>(i), s));

    m_ctx->make_current();
    const cudaStream_t stream = m_ctx->stream;
    for (int i = 0; i < tensor_count; ++i) {
      const auto t = static_cast<tensor>(i);
      if (t == tensor::x || t == tensor::out) continue;
      m_buffers[static_cast<std::size_t>(i)] = device_buffer(byte_size(t), stream);
    }
    const auto copies = static_cast<std::size_t>(options.input_copies);
    for (std::size_t c = 0; c < copies; ++c) {
      m_x.emplace_back(byte_size(tensor::x), stream);
      m_out.emplace_back(byte_size(tensor::out), stream);
      m_scattered.emplace_back(static_cast<std::size_t>(B * k) * sizeof(std::int32_t), stream);
    }
    m_scattered_valid.assign(copies, 0);

    // Attention: batched-GEMM pointer arrays for the two token counts a block may run on.
    build_attention_plan(S);
    if (k != S) build_attention_plan(k);
    if (options.fused_attention) build_fused_attention(S, k);

    // MoE: capacity-padded expert buffers (see moe.cuh).
    if (moe) {
      const std::int64_t m = B * s.block_tokens();
      m_expert_capacity = s.expert_capacity(m);
      const std::int64_t slots = E * m_expert_capacity;
      const std::size_t act = element_bytes(storage::act, type);
      m_slot_of_token = device_buffer(static_cast<std::size_t>(m) * sizeof(std::int32_t), stream);
      m_token_of_slot = device_buffer(static_cast<std::size_t>(slots) * sizeof(std::int32_t), stream);
      m_expert_in = device_buffer(static_cast<std::size_t>(slots * d) * act, stream);
      m_expert_hidden = device_buffer(static_cast<std::size_t>(slots * dff) * act, stream);
      if (swiglu) m_expert_gate_hidden = device_buffer(static_cast<std::size_t>(slots * dff) * act, stream);
      m_expert_out = device_buffer(static_cast<std::size_t>(slots * d) * act, stream);
    }

    // Weights and inputs from the shared generator (kernels/init.hpp): the same seed gives
    // the same values as the CPU backend, which the parity tests rely on.
    // The generator is a function of the index alone, so the host threads split each tensor
    // into ranges (the MoE weights of a large shape are hundreds of millions of values).
    auto fill = [&](tensor t, int copy) {
      const auto rule = initial_values(t, s, copy);
      if (!rule || size(t) == 0) return;
      const std::int64_t count = size(t);
      std::vector<float> v(static_cast<std::size_t>(count));
      const std::int64_t chunk = std::int64_t{1} << 20;
      const std::int64_t threads =
          std::min<std::int64_t>(std::max(1U, std::thread::hardware_concurrency()), (count + chunk - 1) / chunk);
      std::vector<std::thread> pool;
      for (std::int64_t i = 0; i < threads; ++i)
        pool.emplace_back([&, i] {
          const std::int64_t begin = count * i / threads, end = count * (i + 1) / threads;
          fill_normal(v, options.seed, rule->stream, rule->mean, rule->std_dev, begin, end);
        });
      for (auto& th : pool) th.join();
      upload(t, v);
    };
    for (tensor t : {tensor::router_w, tensor::w_q, tensor::w_k, tensor::w_v, tensor::w_o, tensor::w_up, tensor::w_gate,
                     tensor::w_down, tensor::expert_router_w, tensor::expert_w_up, tensor::expert_w_gate,
                     tensor::expert_w_down, tensor::attn_norm_g, tensor::mlp_norm_g})
      fill(t, 0);
    for (std::size_t c = 0; c < copies; ++c) {
      m_slot = static_cast<int>(c);
      fill(tensor::x, static_cast<int>(c));  // also sets out = x
    }
    m_slot = 0;
  }

  ~cuda_workspace() override {
    // Ops queued on this workspace's buffers must finish before cudaFree (which would wait
    // for the whole device anyway); errors are ignored in a destructor.
    cudaSetDevice(m_ctx->device);
    cudaStreamSynchronize(m_ctx->stream);
  }

  std::int64_t size(tensor t) const override { return m_sizes[index_of(t)]; }

  std::int64_t bytes() const override {
    std::size_t total = 0;
    for (const auto& b : m_buffers) total += b.bytes();
    for (const auto* list : {&m_x, &m_out, &m_scattered})
      for (const auto& b : *list) total += b.bytes();
    for (const auto& b : m_attention_ptrs) total += b.bytes();
    for (const auto* b :
         {&m_slot_of_token, &m_token_of_slot, &m_expert_in, &m_expert_hidden, &m_expert_gate_hidden, &m_expert_out})
      total += b->bytes();
    return static_cast<std::int64_t>(total);
  }

  void upload(tensor t, std::span<const float> values) override {
    check_float(t);
    if (static_cast<std::int64_t>(values.size()) > size(t))
      throw runtime_error("workspace: upload of " + std::to_string(values.size()) + " values into '" +
                          std::string(to_string(t)) + "' of " + std::to_string(size(t)));
    m_ctx->make_current();
    const cudaStream_t stream = m_ctx->stream;
    const std::size_t count = values.size();
    if (storage_of(t) == storage::act && type() == dtype::bf16) {
      std::vector<bf16> host(count);
      for (std::size_t i = 0; i < count; ++i) host[i] = __float2bfloat16_rn(values[i]);
      MODSIM_CUDA_CHECK(cudaMemcpyAsync(ptr(t), host.data(), count * sizeof(bf16), cudaMemcpyHostToDevice, stream));
      m_ctx->synchronize();  // `host` goes out of scope
    } else {
      MODSIM_CUDA_CHECK(cudaMemcpyAsync(ptr(t), values.data(), count * sizeof(float), cudaMemcpyHostToDevice, stream));
      m_ctx->synchronize();
    }
    if (t == tensor::x) {
      const auto slot = static_cast<std::size_t>(m_slot);
      MODSIM_CUDA_CHECK(
          cudaMemcpyAsync(m_out[slot].get(), m_x[slot].get(), m_x[slot].bytes(), cudaMemcpyDeviceToDevice, stream));
      m_scattered_valid[slot] = 0;
      m_ctx->synchronize();
    }
  }

  std::vector<float> download(tensor t) const override {
    check_float(t);
    m_ctx->make_current();
    const auto count = static_cast<std::size_t>(size(t));
    std::vector<float> result(count);
    if (count == 0) return result;
    if (storage_of(t) == storage::act && type() == dtype::bf16) {
      std::vector<bf16> host(count);
      MODSIM_CUDA_CHECK(
          cudaMemcpyAsync(host.data(), ptr(t), count * sizeof(bf16), cudaMemcpyDeviceToHost, m_ctx->stream));
      m_ctx->synchronize();
      for (std::size_t i = 0; i < count; ++i) result[i] = __bfloat162float(host[i]);
    } else {
      MODSIM_CUDA_CHECK(
          cudaMemcpyAsync(result.data(), ptr(t), count * sizeof(float), cudaMemcpyDeviceToHost, m_ctx->stream));
      m_ctx->synchronize();
    }
    return result;
  }

  void upload_indices(tensor t, std::span<const std::int32_t> values) override {
    check_index(t);
    if (static_cast<std::int64_t>(values.size()) > size(t))
      throw runtime_error("workspace: upload of " + std::to_string(values.size()) + " indices into '" +
                          std::string(to_string(t)) + "' of " + std::to_string(size(t)));
    const std::int64_t limit = t == tensor::routed_index ? shape().seq_len : shape().router_experts();
    const std::int64_t lowest = t == tensor::routed_index ? 0 : -1;
    for (const std::int32_t v : values)
      if (v < lowest || v >= limit)
        throw runtime_error("workspace: index " + std::to_string(v) + " out of range for '" +
                            std::string(to_string(t)) + "'");
    m_ctx->make_current();
    MODSIM_CUDA_CHECK(cudaMemcpyAsync(ptr(t), values.data(), values.size() * sizeof(std::int32_t),
                                      cudaMemcpyHostToDevice, m_ctx->stream));
    m_ctx->synchronize();
  }

  std::vector<std::int32_t> download_indices(tensor t) const override {
    check_index(t);
    m_ctx->make_current();
    std::vector<std::int32_t> result(static_cast<std::size_t>(size(t)));
    if (result.empty()) return result;
    MODSIM_CUDA_CHECK(cudaMemcpyAsync(result.data(), ptr(t), result.size() * sizeof(std::int32_t),
                                      cudaMemcpyDeviceToHost, m_ctx->stream));
    m_ctx->synchronize();
    return result;
  }

  void rotate() override { m_slot = (m_slot + 1) % static_cast<int>(m_x.size()); }

  // --- for the ops ---
  const device_context& context() const { return *m_ctx; }
  const std::shared_ptr<device_context>& context_ptr() const { return m_ctx; }

  void* ptr(tensor t) const {
    const auto slot = static_cast<std::size_t>(m_slot);
    if (t == tensor::x) return m_x[slot].get();
    if (t == tensor::out) return m_out[slot].get();
    return m_buffers[index_of(t)].get();
  }
  float* f32(tensor t) const { return static_cast<float*>(ptr(t)); }
  std::int32_t* i32(tensor t) const { return static_cast<std::int32_t*>(ptr(t)); }
  std::size_t act_bytes() const { return element_bytes(storage::act, type()); }

  // Rows of `out` (current input copy) the last scatter wrote, if valid.
  std::int32_t* scattered_rows() const { return m_scattered[static_cast<std::size_t>(m_slot)].as<std::int32_t>(); }
  bool scattered_valid() const { return m_scattered_valid[static_cast<std::size_t>(m_slot)] != 0; }
  void set_scattered_valid() { m_scattered_valid[static_cast<std::size_t>(m_slot)] = 1; }

  // The attention plan for blocks over n tokens per sequence (n = S or k).
  const attention_plan& plan(std::int64_t n) const {
    for (const auto& p : m_plans)
      if (p.n == n) return p;
    throw runtime_error("cuda workspace: no attention plan for " + std::to_string(n) + " tokens per sequence");
  }

  // Fused attention (workspace_options::fused_attention): the cuDNN plan for blocks over n
  // tokens per sequence, and its scratch.
  bool fused() const { return !m_fused.empty(); }
  cudnn_sdpa& fused_plan(std::int64_t n) const {
    for (const auto& p : m_fused)
      if (p->layout().n == n) return *p;
    throw runtime_error("cuda workspace: no fused attention plan for " + std::to_string(n) + " tokens per sequence");
  }
  void* fused_scratch() const { return m_fused_scratch.get(); }

  moe_buffers moe(const void* u, const void* h, void* y) const {
    moe_buffers b;
    b.u = u;
    b.h = h;
    b.y = y;
    b.index = i32(tensor::expert_index);
    b.gate = f32(tensor::expert_gate);
    b.w_up = ptr(tensor::expert_w_up);
    b.w_gate = ptr(tensor::expert_w_gate);
    b.w_down = ptr(tensor::expert_w_down);
    b.slot_of_token = m_slot_of_token.as<std::int32_t>();
    b.token_of_slot = m_token_of_slot.as<std::int32_t>();
    b.expert_in = m_expert_in.get();
    b.expert_hidden = m_expert_hidden.get();
    b.expert_gate_hidden = m_expert_gate_hidden.get();
    b.expert_out = m_expert_out.get();
    return b;
  }
  std::int64_t expert_capacity() const { return m_expert_capacity; }

 private:
  static std::size_t index_of(tensor t) { return static_cast<std::size_t>(t); }
  void set_size(tensor t, std::int64_t n) { m_sizes[index_of(t)] = n; }
  std::size_t byte_size(tensor t) const {
    return static_cast<std::size_t>(size(t)) * element_bytes(storage_of(t), type());
  }

  void check_float(tensor t) const {
    if (is_index(t))
      throw runtime_error("workspace: tensor '" + std::string(to_string(t)) + "' holds indices, not floats");
  }
  void check_index(tensor t) const {
    if (!is_index(t))
      throw runtime_error("workspace: tensor '" + std::string(to_string(t)) + "' holds floats, not indices");
  }

  void build_attention_plan(std::int64_t n) {
    const auto& s = shape();
    attention_layout layout{s.batch, n, s.n_heads, s.n_kv_heads, s.d_head};
    const auto es = act_bytes();
    std::vector<const void*> host = attention_pointers(layout, es, ptr(tensor::q), ptr(tensor::k), ptr(tensor::v),
                                                       ptr(tensor::scores), ptr(tensor::attn_out));
    attention_plan p;
    p.layout = layout;
    p.n = n;
    p.aligned = std::all_of(host.begin(), host.end(),
                            [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; });
    if (p.aligned) {
      device_buffer buf(host.size() * sizeof(void*), m_ctx->stream);
      MODSIM_CUDA_CHECK(
          cudaMemcpyAsync(buf.get(), host.data(), host.size() * sizeof(void*), cudaMemcpyHostToDevice, m_ctx->stream));
      m_ctx->synchronize();
      p.pointers = buf.as<const void*>();
      m_attention_ptrs.push_back(std::move(buf));
    }
    m_plans.push_back(p);
  }

  // One cuDNN plan per token count (S, and k when it differs), all sharing one scratch.
  void build_fused_attention(std::int64_t S, std::int64_t k) {
    if (type() != dtype::bf16)
      throw input_error("", "attention", "fused attention (cuDNN) needs bf16, got " + std::string(to_string(type())));
    const auto& s = shape();
    std::size_t scratch = 0;
    for (const std::int64_t n : {S, k}) {
      if (n == k && k == S && !m_fused.empty()) break;
      const sdpa_layout l{s.batch, n, s.n_heads, s.n_kv_heads, s.d_head};
      if (const std::string why = sdpa_shape_problem(l); !why.empty())
        throw input_error("", "attention", "fused attention cannot take this shape: " + why);
      m_fused.push_back(std::make_unique<cudnn_sdpa>(m_ctx->cudnn(), l, ptr(tensor::q), ptr(tensor::k), ptr(tensor::v),
                                                     ptr(tensor::attn_out)));
      scratch = std::max(scratch, m_fused.back()->workspace_bytes());
    }
    m_fused_scratch = device_buffer(scratch, m_ctx->stream);
  }

  std::shared_ptr<device_context> m_ctx;
  std::array<std::int64_t, tensor_count> m_sizes{};
  std::array<device_buffer, tensor_count> m_buffers;   // x and out live in m_x / m_out
  std::vector<device_buffer> m_x, m_out, m_scattered;  // one per input copy
  std::vector<char> m_scattered_valid;
  int m_slot = 0;
  std::vector<attention_plan> m_plans;
  std::vector<device_buffer> m_attention_ptrs;
  std::int64_t m_expert_capacity = 0;
  device_buffer m_slot_of_token, m_token_of_slot, m_expert_in, m_expert_hidden, m_expert_gate_hidden, m_expert_out;
  std::vector<std::unique_ptr<cudnn_sdpa>> m_fused;
  device_buffer m_fused_scratch;
};

// ---------------------------------------------------------------------------------------
// The ops on a workspace. `io` is what a block runs on: rows [0, B·n) of `in`.

struct block_io {
  const void* in = nullptr;
  std::int64_t n = 0;
};

enum class mlp_path { dense, moe };

// The boundaries of a timed block run (backend::timed_block_run) as CUDA events on the
// stream: one before the block and one after each op's kernels, read once the stream is done.
class boundary_events {
 public:
  boundary_events() = default;
  ~boundary_events() {
    for (cudaEvent_t e : m_events) cudaEventDestroy(e);  // errors ignored: a destructor
  }
  boundary_events(const boundary_events&) = delete;
  boundary_events& operator=(const boundary_events&) = delete;

  void start(cudaStream_t stream) {
    m_ops.clear();
    record(0, stream);
  }
  void after(op o, cudaStream_t stream) {
    m_ops.push_back(o);
    record(m_ops.size(), stream);
  }
  // Call after the stream finished: the per-op seconds (block_timeline::fold).
  double read(std::vector<backend::op_time>& ops) {
    m_timeline.clear();
    for (std::size_t i = 0; i < m_ops.size(); ++i) {
      float ms = 0;
      MODSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, m_events[0], m_events[i + 1]));
      m_timeline.mark(m_ops[i], std::llround(static_cast<double>(ms) * 1e6));
    }
    return m_timeline.fold(ops);
  }

 private:
  // Records event `i` (made on first use) on `stream`.
  void record(std::size_t i, cudaStream_t stream) {
    while (m_events.size() <= i) {
      cudaEvent_t e = nullptr;
      MODSIM_CUDA_CHECK(cudaEventCreate(&e));
      m_events.push_back(e);
    }
    MODSIM_CUDA_CHECK(cudaEventRecord(m_events[i], stream));
  }

  std::vector<cudaEvent_t> m_events;  // [0]: before the block; [i + 1]: after m_ops[i]
  std::vector<op> m_ops;
  block_timeline m_timeline;
};

class executor {
 public:
  // `marks` (may be null): records the boundary after each op of a block.
  explicit executor(cuda_workspace& ws, boundary_events* marks = nullptr)
      : m_ws(ws),
        m_s(ws.shape()),
        m_t(ws.type()),
        m_stream(ws.context().stream),
        m_cublas(ws.context().cublas),
        m_marks(marks) {}

  void execute(op o) {
    switch (o) {
      case op::router:
        router_op();
        return;
      case op::topk:
        topk_op();
        return;
      case op::gather:
        gather_op();
        return;
      case op::scatter:
        scatter_op();
        return;
      case op::attn_norm:
        attn_norm(single_op_io());
        return;
      case op::qkv_proj:
        qkv_proj(single_op_io());
        return;
      case op::attn_scores:
        attn_scores(single_op_io());
        return;
      case op::attn_softmax:
        attn_softmax_op(single_op_io());
        return;
      case op::attn_values:
        attn_values(single_op_io());
        return;
      case op::out_proj:
        out_proj(single_op_io());
        return;
      case op::mlp_norm:
        mlp_norm(single_op_io());
        return;
      case op::mlp_up:
        mlp_up(single_op_io());
        return;
      case op::mlp_gate:
        mlp_gate(single_op_io());
        return;
      case op::mlp_act:
        mlp_act(single_op_io());
        return;
      case op::mlp_down:
        mlp_down(single_op_io());
        return;
      case op::expert_router:
        expert_router_op(single_op_io());
        return;
      case op::experts:
        experts_op(single_op_io());
        return;
      case op::block_dense:
        run_block(dense_io(), mlp_path::dense);
        return;
      case op::block_mod:
        routed_layer(mlp_path::dense);
        return;
      case op::layer_mode:
        if (m_s.variant == mode_variant::none)
          throw input_error("", "op", "layer_mode needs a mode variant (staged or integrated)");
        if (m_s.variant == mode_variant::integrated)
          run_block(dense_io(), mlp_path::moe);
        else
          routed_layer(mlp_path::moe);
        return;
      default:  // the cost model's own ops (predictor, lm_head): no kernel runs them
        throw input_error("", "op", std::string(to_string(o)) + " is an op of the cost model only; no backend runs it");
    }
    throw runtime_error("cuda backend: unknown op " + std::to_string(static_cast<int>(o)));
  }

 private:
  block_io dense_io() const { return {m_ws.ptr(tensor::x), m_s.seq_len}; }
  block_io routed_io() const { return {m_ws.ptr(tensor::routed_x), m_s.routed_tokens()}; }
  block_io single_op_io() const { return m_s.variant == mode_variant::integrated ? dense_io() : routed_io(); }

  // Marks the boundary after op `o` when the run is timed.
  void after(op o) {
    if (m_marks != nullptr) m_marks->after(o, m_stream);
  }

  void run_block(const block_io& io, mlp_path path) {
    if (path == mlp_path::moe) require_moe("layer_mode");
    attn_norm(io);
    after(op::attn_norm);
    qkv_proj(io);
    after(op::qkv_proj);
    if (m_ws.fused()) {
      // One kernel for scores, causal softmax and values (timed_block_run refuses this case:
      // the three ops have no boundaries in it).
      m_ws.fused_plan(io.n).run(m_ws.fused_scratch());
    } else {
      attn_scores(io);
      after(op::attn_scores);
      attn_softmax_op(io);
      after(op::attn_softmax);
      attn_values(io);
      after(op::attn_values);
    }
    out_proj(io);
    after(op::out_proj);
    mlp_norm(io);
    after(op::mlp_norm);
    if (path == mlp_path::dense) {
      mlp_up(io);
      after(op::mlp_up);
      if (m_s.mlp == mlp_kind::swiglu) {
        mlp_gate(io);
        after(op::mlp_gate);
      }
      mlp_act(io);
      after(op::mlp_act);
      mlp_down(io);
      after(op::mlp_down);
    } else {
      expert_router_op(io);
      after(op::expert_router);
      experts_op(io);
      after(op::experts);
    }
  }

  void routed_layer(mlp_path path) {
    router_op();
    after(op::router);
    topk_op();
    after(op::topk);
    gather_op();
    after(op::gather);
    run_block(routed_io(), path);
    scatter_op();
    after(op::scatter);
  }

  void router_op() {
    cuda::router(m_t, m_ws.ptr(tensor::x), m_ws.ptr(tensor::router_w), m_ws.f32(tensor::router_logits), m_s.tokens(),
                 m_s.d_model, m_stream);
  }

  void topk_op() {
    cuda::topk(m_ws.f32(tensor::router_logits), m_ws.i32(tensor::routed_index), m_s.batch, m_s.seq_len,
               m_s.routed_tokens(), m_stream);
  }

  void gather_op() {
    cuda::gather(m_t, m_ws.ptr(tensor::x), m_ws.f32(tensor::router_logits), m_ws.i32(tensor::routed_index),
                 m_ws.ptr(tensor::routed_x), m_ws.f32(tensor::routed_r), m_s.batch, m_s.seq_len, m_s.routed_tokens(),
                 m_s.d_model, m_stream);
  }

  void scatter_op() {
    const std::int64_t k = m_s.routed_tokens(), rows = m_s.batch * k;
    if (m_ws.scattered_valid())
      cuda::restore_rows(m_t, m_ws.ptr(tensor::x), m_ws.scattered_rows(), m_ws.ptr(tensor::out), rows, m_s.d_model,
                         m_stream);
    cuda::scatter(m_t, m_ws.ptr(tensor::x), m_ws.ptr(tensor::y), m_ws.ptr(tensor::routed_x), m_ws.f32(tensor::routed_r),
                  m_ws.i32(tensor::routed_index), m_ws.ptr(tensor::out), m_ws.scattered_rows(), m_s.batch, m_s.seq_len,
                  k, m_s.d_model, m_stream);
    m_ws.set_scattered_valid();
  }

  std::int64_t rows(const block_io& io) const { return m_s.batch * io.n; }

  void attn_norm(const block_io& io) {
    rms_norm(m_t, io.in, m_ws.ptr(tensor::attn_norm_g), m_ws.ptr(tensor::attn_in), rows(io), m_s.d_model, m_stream);
  }

  // C = A·W (row-major), all of the workspace's dtype.
  void project(const void* a, std::int64_t m, std::int64_t k, tensor w, std::int64_t n, void* c, float beta) {
    gemm_args g;
    g.ab = m_t;
    g.c = m_t;
    g.m = m;
    g.n = n;
    g.k = k;
    g.beta = beta;
    g.a = a;
    g.lda = k;
    g.b = m_ws.ptr(w);
    g.ldb = n;
    g.c_ptr = c;
    g.ldc = n;
    gemm(m_cublas, g);
  }

  void qkv_proj(const block_io& io) {
    const void* a = m_ws.ptr(tensor::attn_in);
    const std::int64_t m = rows(io), d = m_s.d_model;
    project(a, m, d, tensor::w_q, m_s.d_q(), m_ws.ptr(tensor::q), 0.0f);
    project(a, m, d, tensor::w_k, m_s.d_kv(), m_ws.ptr(tensor::k), 0.0f);
    project(a, m, d, tensor::w_v, m_s.d_kv(), m_ws.ptr(tensor::v), 0.0f);
  }

  void attn_scores(const block_io& io) {
    cuda::attn_scores(m_cublas, m_t, m_ws.plan(io.n), m_ws.ptr(tensor::q), m_ws.ptr(tensor::k),
                      m_ws.ptr(tensor::scores));
  }

  void attn_softmax_op(const block_io& io) {
    cuda::attn_softmax(m_t, m_ws.ptr(tensor::scores), m_s.batch * m_s.n_heads, io.n, m_stream);
  }

  void attn_values(const block_io& io) {
    cuda::attn_values(m_cublas, m_t, m_ws.plan(io.n), m_ws.ptr(tensor::scores), m_ws.ptr(tensor::v),
                      m_ws.ptr(tensor::attn_out));
  }

  // dst[0, rows·d) = src (device to device, on the stream).
  void copy_act(const void* src, void* dst, std::int64_t count) {
    if (src == dst || count == 0) return;
    MODSIM_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(count) * m_ws.act_bytes(),
                                      cudaMemcpyDeviceToDevice, m_stream));
  }

  void out_proj(const block_io& io) {
    const std::int64_t m = rows(io), d = m_s.d_model;
    copy_act(io.in, m_ws.ptr(tensor::h), m * d);
    project(m_ws.ptr(tensor::attn_out), m, m_s.d_q(), tensor::w_o, d, m_ws.ptr(tensor::h), 1.0f);
  }

  void mlp_norm(const block_io& io) {
    rms_norm(m_t, m_ws.ptr(tensor::h), m_ws.ptr(tensor::mlp_norm_g), m_ws.ptr(tensor::mlp_in), rows(io), m_s.d_model,
             m_stream);
  }

  void mlp_up(const block_io& io) {
    project(m_ws.ptr(tensor::mlp_in), rows(io), m_s.d_model, tensor::w_up, m_s.d_ff, m_ws.ptr(tensor::mlp_hidden),
            0.0f);
  }

  void mlp_gate(const block_io& io) {
    if (m_s.mlp != mlp_kind::swiglu) throw input_error("", "op", "mlp_gate needs mlp = swiglu");
    project(m_ws.ptr(tensor::mlp_in), rows(io), m_s.d_model, tensor::w_gate, m_s.d_ff,
            m_ws.ptr(tensor::mlp_gate_hidden), 0.0f);
  }

  void mlp_act(const block_io& io) {
    const std::int64_t count = rows(io) * m_s.d_ff;
    if (m_s.mlp == mlp_kind::swiglu)
      silu_mul(m_t, m_ws.ptr(tensor::mlp_hidden), m_ws.ptr(tensor::mlp_gate_hidden), count, m_stream);
    else
      gelu(m_t, m_ws.ptr(tensor::mlp_hidden), count, m_stream);
  }

  void mlp_down(const block_io& io) {
    const std::int64_t m = rows(io), d = m_s.d_model;
    copy_act(m_ws.ptr(tensor::h), m_ws.ptr(tensor::y), m * d);
    project(m_ws.ptr(tensor::mlp_hidden), m, m_s.d_ff, tensor::w_down, d, m_ws.ptr(tensor::y), 1.0f);
  }

  void require_moe(const char* name) const {
    if (m_s.variant == mode_variant::none)
      throw input_error("", "op", std::string(name) + " needs a mode variant (staged or integrated)");
  }

  void expert_router_op(const block_io& io) {
    require_moe("expert_router");
    const std::int64_t m = rows(io), Et = m_s.router_experts();
    gemm_args g;
    g.ab = m_t;
    g.c = dtype::fp32;  // logits in fp32
    g.m = m;
    g.n = Et;
    g.k = m_s.d_model;
    g.a = m_ws.ptr(tensor::mlp_in);
    g.lda = m_s.d_model;
    g.b = m_ws.ptr(tensor::expert_router_w);
    g.ldb = Et;
    g.c_ptr = m_ws.ptr(tensor::expert_logits);
    g.ldc = Et;
    gemm(m_cublas, g);
    expert_choice(m_ws.f32(tensor::expert_logits), m_ws.i32(tensor::expert_index), m_ws.f32(tensor::expert_gate), m,
                  static_cast<int>(Et), m_s.experts, m_ws.expert_capacity(), m_stream);
  }

  void experts_op(const block_io& io) {
    require_moe("experts");
    moe_dims dims;
    dims.m = rows(io);
    dims.d = m_s.d_model;
    dims.d_ff = m_s.d_ff;
    dims.capacity = m_ws.expert_capacity();
    dims.experts = m_s.experts;
    dims.swiglu = m_s.mlp == mlp_kind::swiglu;
    cuda::experts(m_t, m_cublas, m_stream, m_ws.moe(m_ws.ptr(tensor::mlp_in), m_ws.ptr(tensor::h), m_ws.ptr(tensor::y)),
                  dims);
  }

  cuda_workspace& m_ws;
  const block_shape& m_s;
  dtype m_t;
  cudaStream_t m_stream;
  cublasHandle_t m_cublas;
  boundary_events* m_marks;
};

std::string version_string(int v, int major_div, int minor_div, int minor_mod) {
  return std::to_string(v / major_div) + "." + std::to_string((v / minor_div) % minor_mod);
}

class cuda_backend final : public backend {
 public:
  explicit cuda_backend(int device) : m_ctx(std::make_shared<device_context>(device)) {
    m_ctx->make_current();
    MODSIM_CUDA_CHECK(cudaEventCreate(&m_start));
    MODSIM_CUDA_CHECK(cudaEventCreate(&m_stop));
    int l2 = 0;
    MODSIM_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, m_ctx->device));
    m_flush_bytes = 2 * static_cast<std::size_t>(std::max(l2, 1 << 20));
    MODSIM_CUDA_CHECK(cudaMalloc(&m_flush, m_flush_bytes));
    char pci[32] = {};
    MODSIM_CUDA_CHECK(cudaDeviceGetPCIBusId(pci, sizeof pci, m_ctx->device));
    m_nvml = std::make_unique<nvml_clocks>(pci);
  }
  ~cuda_backend() override {
    cudaSetDevice(m_ctx->device);
    if (m_flush != nullptr) cudaFree(m_flush);
    if (m_start != nullptr) cudaEventDestroy(m_start);
    if (m_stop != nullptr) cudaEventDestroy(m_stop);
  }
  cuda_backend(const cuda_backend&) = delete;
  cuda_backend& operator=(const cuda_backend&) = delete;

  std::string_view name() const override { return "cuda"; }

  std::string device() const override {
    m_ctx->make_current();
    cudaDeviceProp prop{};
    MODSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, m_ctx->device));
    int clock_khz = 0, memory_clock_khz = 0, driver = 0, runtime = 0, cublas = 0;
    MODSIM_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, m_ctx->device));
    MODSIM_CUDA_CHECK(cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, m_ctx->device));
    MODSIM_CUDA_CHECK(cudaDriverGetVersion(&driver));
    MODSIM_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    MODSIM_CUDA_CHECK(cublasGetVersion(m_ctx->cublas, &cublas));
    const auto gib = static_cast<double>(prop.totalGlobalMem) / static_cast<double>(1ULL << 30);
    char memory[32];
    std::snprintf(memory, sizeof memory, "%.1f", gib);
    return std::string(prop.name) + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
           std::to_string(prop.multiProcessorCount) + " SMs, " + std::to_string(clock_khz / 1000) + " MHz, memory " +
           memory + " GiB at " + std::to_string(memory_clock_khz / 1000) + " MHz, L2 " +
           std::to_string(prop.l2CacheSize >> 20) + " MiB, driver " + version_string(driver, 1000, 10, 100) +
           ", runtime " + version_string(runtime, 1000, 10, 100) + ", cuBLAS " + std::to_string(cublas / 10000) + "." +
           std::to_string((cublas / 100) % 100) + "." + std::to_string(cublas % 100);
  }

  std::unique_ptr<workspace> make_workspace(const block_shape& shape, dtype type,
                                            const workspace_options& options) override {
    shape.validate();
    if (type != dtype::fp32 && type != dtype::bf16)
      throw input_error("", "dtype", "the cuda backend supports fp32 and bf16, got " + std::string(to_string(type)));
    if (shape.variant != mode_variant::none && shape.experts > max_experts)
      throw input_error("", "block_shape.experts",
                        "the cuda backend supports at most " + std::to_string(max_experts) + " experts, got " +
                            std::to_string(shape.experts));
    auto ws = std::make_unique<cuda_workspace>(m_ctx, shape, type, options);
    // One pass of the whole layer, so every intermediate holds real data.
    executor(*ws).execute(shape.variant == mode_variant::none ? op::block_mod : op::layer_mode);
    m_ctx->synchronize();
    return ws;
  }

  void run(op o, workspace& ws) override {
    cuda_workspace& cws = own(ws);
    m_ctx->make_current();
    executor(cws).execute(o);
  }

  void synchronize() override {
    m_ctx->make_current();
    m_ctx->synchronize();
    MODSIM_CUDA_CHECK(cudaGetLastError());
  }

  // CUDA events on the backend's stream around the op's kernels.
  double timed_run(op o, workspace& ws) override {
    synchronize();
    MODSIM_CUDA_CHECK(cudaEventRecord(m_start, m_ctx->stream));
    run(o, ws);
    MODSIM_CUDA_CHECK(cudaEventRecord(m_stop, m_ctx->stream));
    MODSIM_CUDA_CHECK(cudaEventSynchronize(m_stop));
    MODSIM_CUDA_CHECK(cudaGetLastError());
    float ms = 0;
    MODSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, m_start, m_stop));
    return static_cast<double>(ms) * 1e-3;
  }

  // One event on the stream before the block and one after each op; one synchronize at the end.
  double timed_block_run(op o, workspace& ws, std::vector<op_time>& ops) override {
    if (!is_block(o))
      throw input_error("", "op", std::string(to_string(o)) + " is not a block (block_dense, block_mod, layer_mode)");
    cuda_workspace& cws = own(ws);
    if (cws.fused())
      throw input_error("", "attention",
                        "a block with fused attention has no attn_scores/attn_softmax/attn_values boundaries to "
                        "time in_block; time it isolated");
    synchronize();
    m_marks.start(m_ctx->stream);
    executor(cws, &m_marks).execute(o);
    synchronize();
    return m_marks.read(ops);
  }

  // Writes a buffer twice the L2 size, so the next repeat reads its operands from HBM.
  void flush_cache() override {
    m_ctx->make_current();
    MODSIM_CUDA_CHECK(cudaMemsetAsync(m_flush, ++m_flush_value & 0xff, m_flush_bytes, m_ctx->stream));
    m_ctx->synchronize();
  }

  clock_state clocks() override {
    clock_state c;
    if (!m_nvml || !m_nvml->available()) return c;
    c.known = true;
    c.sm_clock_mhz = m_nvml->sm_clock_mhz();
    c.throttled = m_nvml->throttled();
    return c;
  }

 private:
  cuda_workspace& own(workspace& ws) const {
    auto* cws = dynamic_cast<cuda_workspace*>(&ws);
    if (cws == nullptr) throw runtime_error("cuda backend: the workspace was made by another backend");
    if (cws->context_ptr() != m_ctx)
      throw runtime_error("cuda backend: the workspace was made by another cuda backend");
    return *cws;
  }

  std::shared_ptr<device_context> m_ctx;
  boundary_events m_marks;
  cudaEvent_t m_start = nullptr;
  cudaEvent_t m_stop = nullptr;
  void* m_flush = nullptr;
  std::size_t m_flush_bytes = 0;
  int m_flush_value = 0;
  std::unique_ptr<nvml_clocks> m_nvml;
};

}  // namespace
}  // namespace cuda

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the error the query left
    return 0;
  }
  return count;
}

std::unique_ptr<backend> make_cuda_backend(int device) {
  const int count = cuda_device_count();
  if (count == 0) throw runtime_error("cuda backend: no CUDA device (no driver or no GPU visible)");
  if (device < 0 || device >= count)
    throw input_error(
        "", "device",
        "CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " visible)");
  return std::make_unique<cuda::cuda_backend>(device);
}

}  // namespace modsim::kernels
