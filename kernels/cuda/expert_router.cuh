#pragma once
// expert_router (MoE, token choice, top-1): logits = u·W_e (fp32), each token takes the
// expert with the largest logit (ties: lower index) with gate softmax(logits)[chosen]; a real
// expert keeps at most `capacity` tokens, first come first served in token order (a
// deterministic rank per expert, no atomics), later ones are dropped (index −1); a no-op
// expert (index >= experts) is never dropped. Same decisions as the CPU backend.
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

// The most real experts the ranking kernel handles (shared memory: 33 ints per expert).
inline constexpr int max_experts = 256;

// logits [m, router_experts] fp32 (already computed); writes index [m] and gate [m].
void expert_choice(const float* logits, std::int32_t* index, float* gate, std::int64_t m, int router_experts,
                   int experts, std::int64_t capacity, cudaStream_t stream);

// For each token t with 0 <= index[t] < experts: its rank among the tokens before it with
// the same expert. Tokens of rank >= capacity are left out. Writes
//   slot_of_token[t] = index·capacity + rank, or −1 (no-op, dropped, or over capacity);
//   token_of_slot[slot] = t for the slots taken (others are left untouched).
void expert_slots(const std::int32_t* index, std::int32_t* slot_of_token, std::int32_t* token_of_slot, std::int64_t m,
                  int experts, std::int64_t capacity, cudaStream_t stream);

}  // namespace modsim::kernels::cuda
