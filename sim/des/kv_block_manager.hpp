#pragma once
// The paged KV cache of the serving simulator (after vLLM's block manager): a pool of
// blocks of block_tokens tokens of one layer (2·d_kv·dtype bytes per token and layer), as
// many as the byte budget holds. A sequence holds, per layer, ceil(cached / block_tokens)
// blocks; at a routed layer only the tokens routed there are cached. The manager allocates
// a sequence the blocks a step's tokens need, returns blocks a padding drop left unused,
// frees a finished sequence's blocks, and on a preemption frees them and forgets the
// sequence's cached tokens (it is recomputed). Which sequence is preempted is the
// scheduler's choice (sim/des/scheduler.hpp).
#include <cstdint>
#include <span>
#include <vector>

#include "sim/model/spec.hpp"

namespace modsim::sim::des {

// The KV budget of the contract: device memory minus the weights (parameter_count × dtype
// bytes), in bytes; never negative.
double default_kv_budget_bytes(const model_spec& model, const hardware_spec& hw, dtype t);

// Bytes of one block: block_tokens tokens of one layer, K and V of d_kv elements each.
std::int64_t kv_block_bytes(std::int64_t block_tokens, int d_kv, dtype t);

// What one sequence holds in the cache.
struct seq_kv {
  std::int64_t cached = 0;           // tokens cached at each non-routed layer
  std::vector<std::int64_t> routed;  // tokens cached at each routed layer
  std::int64_t blocks = 0;           // blocks held
};

class kv_block_manager {
 public:
  // floor(budget_bytes / block_bytes) blocks of block_tokens (≥ 1) tokens; admission leaves
  // floor(watermark × blocks) of them free. `non_routed_layers`: the layers that cache every
  // token (the routed ones are the entries of seq_kv::routed).
  kv_block_manager(std::int64_t block_tokens, std::int64_t block_bytes, double budget_bytes, double watermark,
                   std::int64_t non_routed_layers);

  std::int64_t block_tokens() const { return m_block_tokens; }
  std::int64_t block_bytes() const { return m_block_bytes; }
  std::int64_t total_blocks() const { return m_total; }
  std::int64_t free_blocks() const { return m_free; }
  std::int64_t used_blocks() const { return m_total - m_free; }
  std::int64_t watermark_blocks() const { return m_watermark; }

  // Blocks of one layer that `tokens` tokens fill.
  std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + m_block_tokens - 1) / m_block_tokens; }
  // Blocks `kv` holds once each non-routed layer caches `add` more tokens and routed layer j
  // add_routed[j] more.
  std::int64_t blocks_after(const seq_kv& kv, std::int64_t add, std::span<const std::int64_t> add_routed) const;

  // Whether `n` more blocks are free.
  bool can_allocate(std::int64_t n) const { return n <= m_free; }
  // Whether a sequence being admitted may take `n` more blocks: the watermark stays free
  // unless no sequence runs.
  bool can_admit(std::int64_t n, bool sequences_running) const {
    return n <= m_free - (sequences_running ? m_watermark : 0);
  }
  // Gives `kv` n more blocks (n ≤ free_blocks()).
  void allocate(seq_kv& kv, std::int64_t n);
  // Returns the blocks `kv` holds beyond `blocks` to the pool.
  void shrink(seq_kv& kv, std::int64_t blocks);
  // A finished sequence: returns all its blocks (its cached token counts stay, for its record).
  void release(seq_kv& kv);
  // A preempted sequence: returns all its blocks and forgets its cached tokens.
  void preempt(seq_kv& kv);
  // Caches a step's tokens: `add` at each non-routed layer, add_routed[j] at routed layer j
  // (the blocks were allocated when the step was planned).
  static void append(seq_kv& kv, std::int64_t add, std::span<const std::int64_t> add_routed);

 private:
  std::int64_t m_block_tokens = 1, m_block_bytes = 0, m_total = 0, m_free = 0, m_watermark = 0;
  std::int64_t m_non_routed_layers = 0;
};

}  // namespace modsim::sim::des
