#pragma once
// The CPU backend's workspace: one host vector per tensor, allocated and filled once.
#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/train.hpp"

namespace modsim::kernels::cpu {

class thread_pool;

class cpu_workspace final : public workspace {
 public:
  cpu_workspace(const block_shape& shape, const workspace_options& options, thread_pool& pool);

  std::int64_t size(tensor t) const override;
  std::int64_t bytes() const override;
  void upload(tensor t, std::span<const float> values) override;
  std::vector<float> download(tensor t) const override;
  void upload_indices(tensor t, std::span<const std::int32_t> values) override;
  std::vector<std::int32_t> download_indices(tensor t) const override;
  void rotate() override;

  // Raw storage for the ops (x and out resolve to the current input copy).
  float* data(tensor t);
  const float* data(tensor t) const;
  std::int32_t* indices(tensor t);

  // Rows of `out` (current copy) that the last scatter wrote; the next scatter restores them
  // from x first, so out is always x^{l+1} for the latest routing.
  std::vector<std::int32_t>& scattered_rows() { return m_scattered[static_cast<std::size_t>(m_slot)]; }

  // Scratch, not visible through the interface.
  std::vector<std::pair<float, std::int32_t>> m_topk_pairs;  // [T]
  std::vector<float> m_expert_in;                            // [T, d] rows grouped by expert
  std::vector<float> m_expert_out;                           // [T, d]
  std::vector<std::int32_t> m_expert_rows;                   // [T] token row of each grouped row
  std::vector<std::int64_t> m_expert_offsets;                // [E + 1]
  std::vector<std::int64_t> m_expert_fill;                   // [E]

  // One layer's training state (workspace_options::training; null otherwise), for
  // block_dense_train (dense) and block_mod_train (routed): the weights, their gradients and
  // what the forward kept, each kind its own so that no run resizes a buffer; adamw steps the
  // dense layer's weights with its moments.
  struct train_layer {
    train::layer_params params;
    train::layer_grads grads;
    train::saved_activations saved;
    train::adamw_state adam;
  };
  struct training {
    recompute mode = recompute::none;
    train_layer dense, routed;
    std::vector<float> out, dout, dx;  // [T, d]: the layer's output, dL/dout (N(0, 1), fixed), dL/dx
  };
  std::unique_ptr<training> m_training;

 private:
  std::size_t slot_index(tensor t) const { return static_cast<std::size_t>(t); }
  void check_float(tensor t) const;
  void check_index(tensor t) const;

  std::array<std::vector<float>, tensor_count> m_buffers;  // x and out unused here
  std::array<std::vector<std::int32_t>, tensor_count> m_index_buffers;
  std::vector<std::vector<float>> m_x;    // one per input copy
  std::vector<std::vector<float>> m_out;  // one per input copy
  std::vector<std::vector<std::int32_t>> m_scattered;
  int m_slot = 0;
};

}  // namespace modsim::kernels::cpu
