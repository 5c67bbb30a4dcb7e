#pragma once
// The CUDA workspace: device buffers (one allocation per tensor, made once), weights and
// inputs from the shared generator, the attention plans and the routing state the ops use.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_cudnn.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/device_context.cuh"
#include "kernels/cuda/moe.cuh"
#include "kernels/cuda_train.hpp"

namespace modsim::kernels::cuda::detail {

class cuda_workspace final : public workspace {
 public:
  cuda_workspace(std::shared_ptr<device_context> ctx, const block_shape& s, dtype type,
                 const workspace_options& options);
  ~cuda_workspace() override;

  std::int64_t size(tensor t) const override { return m_sizes[index_of(t)]; }
  std::int64_t bytes() const override;
  void upload(tensor t, std::span<const float> values) override;
  std::vector<float> download(tensor t) const override;
  void upload_indices(tensor t, std::span<const std::int32_t> values) override;
  std::vector<std::int32_t> download_indices(tensor t) const override;
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
  std::size_t act_bytes() const;

  // Rows of `out` (current input copy) the last scatter wrote, if valid.
  std::int32_t* scattered_rows() const { return m_scattered[static_cast<std::size_t>(m_slot)].as<std::int32_t>(); }
  bool scattered_valid() const { return m_scattered_valid[static_cast<std::size_t>(m_slot)] != 0; }
  void set_scattered_valid() { m_scattered_valid[static_cast<std::size_t>(m_slot)] = 1; }

  // The attention plan for blocks over n tokens per sequence (n = S or k).
  const attention_plan& plan(std::int64_t n) const;

  // Fused attention (workspace_options::fused_attention): the cuDNN plan for blocks over n
  // tokens per sequence, and its scratch.
  bool fused() const { return !m_fused.empty(); }
  cudnn_sdpa& fused_plan(std::int64_t n) const;
  void* fused_scratch() const { return m_fused_scratch.get(); }

  moe_buffers moe(const void* u, const void* h, void* y) const;

  // Training state (workspace_options::training): the dense layer's and the routed layer's
  // trainers (block_dense_train, block_mod_train) and what their forward keeps; null before
  // set_training.
  void set_training(std::unique_ptr<train::cuda_trainer> dense, std::unique_ptr<train::cuda_trainer> routed,
                    recompute mode) {
    m_train_dense = std::move(dense);
    m_train_routed = std::move(routed);
    m_train_mode = mode;
  }
  train::cuda_trainer* trainer(bool routed) const { return routed ? m_train_routed.get() : m_train_dense.get(); }
  recompute train_mode() const { return m_train_mode; }
  std::int64_t expert_capacity() const { return m_expert_capacity; }

 private:
  static std::size_t index_of(tensor t) { return static_cast<std::size_t>(t); }
  void set_size(tensor t, std::int64_t n) { m_sizes[index_of(t)] = n; }
  std::size_t byte_size(tensor t) const;

  void check_float(tensor t) const;
  void check_index(tensor t) const;

  void build_attention_plan(std::int64_t n);
  // One cuDNN plan per token count (S, and k when it differs), all sharing one scratch.
  void build_fused_attention(std::int64_t S, std::int64_t k);

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
  std::unique_ptr<train::cuda_trainer> m_train_dense, m_train_routed;
  recompute m_train_mode = recompute::none;
};

}  // namespace modsim::kernels::cuda::detail
