// The serving simulator's paged KV cache (sim/des/kv_block_manager.hpp): the block pool,
// allocation, freeing and the bookkeeping of a preemption.
#include "sim/des/kv_block_manager.hpp"

#include <algorithm>
#include <cmath>

#include "sim/model/flops.hpp"

namespace modsim::sim::des {

double default_kv_budget_bytes(const model_spec& model, const hardware_spec& hw, dtype t) {
  const double weights = static_cast<double>(parameter_count(model)) * dtype_bytes(t);
  return std::max(0.0, hw.memory_bytes - weights);
}

std::int64_t kv_block_bytes(std::int64_t block_tokens, int d_kv, dtype t) {
  return block_tokens * 2 * static_cast<std::int64_t>(d_kv) * dtype_bytes(t);
}

kv_block_manager::kv_block_manager(std::int64_t block_tokens, std::int64_t block_bytes, double budget_bytes,
                                   double watermark, std::int64_t non_routed_layers)
    : m_block_tokens(block_tokens), m_block_bytes(block_bytes), m_non_routed_layers(non_routed_layers) {
  m_total = static_cast<std::int64_t>(std::floor(budget_bytes / static_cast<double>(block_bytes)));
  m_free = m_total;
  m_watermark = static_cast<std::int64_t>(std::floor(watermark * static_cast<double>(m_total)));
}

std::int64_t kv_block_manager::blocks_after(const seq_kv& kv, std::int64_t add,
                                            std::span<const std::int64_t> add_routed) const {
  std::int64_t b = m_non_routed_layers * blocks_for(kv.cached + add);
  for (std::size_t j = 0; j < kv.routed.size(); ++j) b += blocks_for(kv.routed[j] + add_routed[j]);
  return b;
}

void kv_block_manager::allocate(seq_kv& kv, std::int64_t n) {
  m_free -= n;
  kv.blocks += n;
}

void kv_block_manager::shrink(seq_kv& kv, std::int64_t blocks) {
  m_free += kv.blocks - blocks;
  kv.blocks = blocks;
}

void kv_block_manager::release(seq_kv& kv) {
  m_free += kv.blocks;
  kv.blocks = 0;
}

void kv_block_manager::preempt(seq_kv& kv) {
  release(kv);
  kv.cached = 0;
  std::fill(kv.routed.begin(), kv.routed.end(), 0);
}

void kv_block_manager::append(seq_kv& kv, std::int64_t add, std::span<const std::int64_t> add_routed) {
  kv.cached += add;
  for (std::size_t j = 0; j < kv.routed.size(); ++j) kv.routed[j] += add_routed[j];
}

}  // namespace modsim::sim::des
