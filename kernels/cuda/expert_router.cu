#include "kernels/cuda/expert_router.cuh"

#include <string>

namespace modsim::kernels::cuda {

namespace {

constexpr int rank_threads = 1024;
constexpr int rank_warps = rank_threads / 32;
constexpr int choice_threads = 256;

// Argmax (ties: lower index) and gate 1/Σ exp(l − l_best); index holds the raw choice.
__global__ void __launch_bounds__(choice_threads)
    choice_kernel(const float* __restrict__ logits, std::int32_t* __restrict__ index, float* __restrict__ gate,
                  std::int64_t m, int router_experts) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * choice_threads;
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * choice_threads + threadIdx.x; t < m; t += stride) {
    const float* l = logits + t * router_experts;
    int best = 0;
    for (int e = 1; e < router_experts; ++e)
      if (l[e] > l[best]) best = e;
    float sum = 0.0f;
    for (int e = 0; e < router_experts; ++e) sum += expf(l[e] - l[best]);
    gate[t] = 1.0f / sum;
    index[t] = best;
  }
}

enum class rank_mode { choose, slots };

// One block walks the tokens in order, 1024 at a time; within a chunk a token's rank is
// (tokens of the same expert in earlier chunks) + (in earlier warps of this chunk) + (in
// earlier lanes of its warp, from __match_any_sync). Deterministic, in token order.
template <rank_mode mode>
__global__ void __launch_bounds__(rank_threads)
    rank_kernel(std::int32_t* __restrict__ index, std::int32_t* __restrict__ slot_of_token,
                std::int32_t* __restrict__ token_of_slot, std::int64_t m, int experts, std::int64_t capacity) {
  extern __shared__ int shared[];
  int* warp_counts = shared;                     // [rank_warps][experts]
  int* running = shared + rank_warps * experts;  // [experts]
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  for (int e = tid; e < experts; e += rank_threads) running[e] = 0;
  for (std::int64_t base = 0; base < m; base += rank_threads) {
    for (int i = tid; i < rank_warps * experts; i += rank_threads) warp_counts[i] = 0;
    __syncthreads();
    const std::int64_t t = base + tid;
    const int choice = t < m ? index[t] : -1;
    const bool real = choice >= 0 && choice < experts;
    const unsigned same = __match_any_sync(0xffffffffu, real ? choice : -1);
    const int lane_rank = __popc(same & ((1u << lane) - 1u));
    if (real && lane_rank == 0) warp_counts[warp * experts + choice] = __popc(same);
    __syncthreads();
    std::int64_t rank = -1;
    if (real) {
      rank = running[choice] + lane_rank;
      for (int w = 0; w < warp; ++w) rank += warp_counts[w * experts + choice];
    }
    if (t < m) {
      const bool kept = real && rank < capacity;
      if constexpr (mode == rank_mode::choose) {
        if (real && !kept) index[t] = -1;  // over capacity: dropped; no-op choices stay
      } else {
        const std::int64_t slot = kept ? choice * capacity + rank : -1;
        slot_of_token[t] = static_cast<std::int32_t>(slot);
        if (kept) token_of_slot[slot] = static_cast<std::int32_t>(t);
      }
    }
    __syncthreads();
    for (int e = tid; e < experts; e += rank_threads) {
      int sum = 0;
      for (int w = 0; w < rank_warps; ++w) sum += warp_counts[w * experts + e];
      running[e] += sum;
    }
    // The next chunk clears warp_counts only after the __syncthreads below.
    __syncthreads();
  }
}

std::size_t rank_shared_bytes(int experts) {
  return static_cast<std::size_t>(rank_warps + 1) * static_cast<std::size_t>(experts) * sizeof(int);
}

void check_experts(int experts) {
  if (experts < 1 || experts > max_experts)
    throw input_error(
        "", "block_shape.experts",
        "the cuda backend supports 1 to " + std::to_string(max_experts) + " experts, got " + std::to_string(experts));
}

}  // namespace

void expert_choice(const float* logits, std::int32_t* index, float* gate, std::int64_t m, int router_experts,
                   int experts, std::int64_t capacity, cudaStream_t stream) {
  if (m == 0) return;
  check_experts(experts);
  choice_kernel<<<grid_for(m, choice_threads), choice_threads, 0, stream>>>(logits, index, gate, m, router_experts);
  MODSIM_CUDA_CHECK_LAUNCH("choice_kernel");
  rank_kernel<rank_mode::choose>
      <<<1, rank_threads, rank_shared_bytes(experts), stream>>>(index, nullptr, nullptr, m, experts, capacity);
  MODSIM_CUDA_CHECK_LAUNCH("rank_kernel<choose>");
}

void expert_slots(const std::int32_t* index, std::int32_t* slot_of_token, std::int32_t* token_of_slot, std::int64_t m,
                  int experts, std::int64_t capacity, cudaStream_t stream) {
  if (m == 0) return;
  check_experts(experts);
  // The slots mode only reads index.
  rank_kernel<rank_mode::slots><<<1, rank_threads, rank_shared_bytes(experts), stream>>>(
      const_cast<std::int32_t*>(index), slot_of_token, token_of_slot, m, experts, capacity);
  MODSIM_CUDA_CHECK_LAUNCH("rank_kernel<slots>");
}

}  // namespace modsim::kernels::cuda
