// The CUDA workspace (workspace.cuh): allocation of every tensor, the weight and input fill,
// transfers to and from the host, and the attention plans made once per workspace.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/cuda/workspace.cuh"
#include "kernels/init.hpp"

namespace modsim::kernels::cuda::detail {
namespace {

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

}  // namespace

cuda_workspace::cuda_workspace(std::shared_ptr<device_context> ctx, const block_shape& s, dtype type,
                               const workspace_options& options)
    : workspace(s, type), m_ctx(std::move(ctx)) {
  if (options.input_copies < 1)
    throw input_error("", "workspace.input_copies", "must be at least 1, got " + std::to_string(options.input_copies));
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

cuda_workspace::~cuda_workspace() {
  // Ops queued on this workspace's buffers must finish before cudaFree (which would wait
  // for the whole device anyway); errors are ignored in a destructor.
  cudaSetDevice(m_ctx->device);
  cudaStreamSynchronize(m_ctx->stream);
}

std::int64_t cuda_workspace::bytes() const {
  std::size_t total = 0;
  for (const auto& b : m_buffers) total += b.bytes();
  for (const auto* list : {&m_x, &m_out, &m_scattered})
    for (const auto& b : *list) total += b.bytes();
  for (const auto& b : m_attention_ptrs) total += b.bytes();
  for (const auto* b :
       {&m_slot_of_token, &m_token_of_slot, &m_expert_in, &m_expert_hidden, &m_expert_gate_hidden, &m_expert_out})
    total += b->bytes();
  std::int64_t training = 0;
  for (const auto* t : {m_train_dense.get(), m_train_routed.get()})
    if (t != nullptr) training += t->device_bytes();
  return static_cast<std::int64_t>(total) + training;
}

void cuda_workspace::upload(tensor t, std::span<const float> values) {
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

std::vector<float> cuda_workspace::download(tensor t) const {
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

void cuda_workspace::upload_indices(tensor t, std::span<const std::int32_t> values) {
  check_index(t);
  if (static_cast<std::int64_t>(values.size()) > size(t))
    throw runtime_error("workspace: upload of " + std::to_string(values.size()) + " indices into '" +
                        std::string(to_string(t)) + "' of " + std::to_string(size(t)));
  const std::int64_t limit = t == tensor::routed_index ? shape().seq_len : shape().router_experts();
  const std::int64_t lowest = t == tensor::routed_index ? 0 : -1;
  for (const std::int32_t v : values)
    if (v < lowest || v >= limit)
      throw runtime_error("workspace: index " + std::to_string(v) + " out of range for '" + std::string(to_string(t)) +
                          "'");
  m_ctx->make_current();
  MODSIM_CUDA_CHECK(cudaMemcpyAsync(ptr(t), values.data(), values.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice,
                                    m_ctx->stream));
  m_ctx->synchronize();
}

std::vector<std::int32_t> cuda_workspace::download_indices(tensor t) const {
  check_index(t);
  m_ctx->make_current();
  std::vector<std::int32_t> result(static_cast<std::size_t>(size(t)));
  if (result.empty()) return result;
  MODSIM_CUDA_CHECK(cudaMemcpyAsync(result.data(), ptr(t), result.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost,
                                    m_ctx->stream));
  m_ctx->synchronize();
  return result;
}

std::size_t cuda_workspace::act_bytes() const { return element_bytes(storage::act, type()); }

const attention_plan& cuda_workspace::plan(std::int64_t n) const {
  for (const auto& p : m_plans)
    if (p.n == n) return p;
  throw runtime_error("cuda workspace: no attention plan for " + std::to_string(n) + " tokens per sequence");
}

cudnn_sdpa& cuda_workspace::fused_plan(std::int64_t n) const {
  for (const auto& p : m_fused)
    if (p->layout().n == n) return *p;
  throw runtime_error("cuda workspace: no fused attention plan for " + std::to_string(n) + " tokens per sequence");
}

moe_buffers cuda_workspace::moe(const void* u, const void* h, void* y) const {
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

std::size_t cuda_workspace::byte_size(tensor t) const {
  return static_cast<std::size_t>(size(t)) * element_bytes(storage_of(t), type());
}

void cuda_workspace::check_float(tensor t) const {
  if (is_index(t))
    throw runtime_error("workspace: tensor '" + std::string(to_string(t)) + "' holds indices, not floats");
}

void cuda_workspace::check_index(tensor t) const {
  if (!is_index(t))
    throw runtime_error("workspace: tensor '" + std::string(to_string(t)) + "' holds floats, not indices");
}

void cuda_workspace::build_attention_plan(std::int64_t n) {
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

void cuda_workspace::build_fused_attention(std::int64_t S, std::int64_t k) {
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

}  // namespace modsim::kernels::cuda::detail
