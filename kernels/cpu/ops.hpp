#pragma once
// The CPU backend's ops. Each reads and writes the workspace's buffers; none allocates.
// GEMMs go through OpenBLAS (its own threads); all other loops through the thread pool,
// never concurrently with a BLAS call.
#include <cstdint>
#include <utility>

#include "kernels/cpu/cpu_workspace.hpp"
#include "kernels/cpu/thread_pool.hpp"

namespace modsim::kernels::cpu {

// What a block runs on: rows [0, batch·n) of `in` (row-major [batch·n, d_model]), n tokens
// per sequence.
struct block_io {
  const float* in = nullptr;
  std::int64_t n = 0;
};

struct context {
  cpu_workspace& ws;
  thread_pool& pool;
  const block_shape& shape() const { return ws.shape(); }
};

// routing.cpp
void router(context& c);
void topk(context& c);
void gather(context& c);
void scatter(context& c);
// The k largest router weights of one sequence r[0, S) (NaN counts as -inf; ties: the lower
// position wins), their positions ascending into idx[0, k); pairs: S entries of scratch.
void topk_sequence(const float* r, std::int64_t S, std::int64_t k, std::pair<float, std::int32_t>* pairs,
                   std::int32_t* idx);

// attention.cpp; the (sequence, head) range versions let a block interleave the three
// attention ops head by head for locality. bh = b·n_heads + head.
void attn_norm(context& c, const block_io& io);
void qkv_proj(context& c, const block_io& io);
void attn_scores(context& c, const block_io& io, std::int64_t bh_begin, std::int64_t bh_end);
void attn_softmax(context& c, const block_io& io, std::int64_t bh_begin, std::int64_t bh_end);
void attn_values(context& c, const block_io& io, std::int64_t bh_begin, std::int64_t bh_end);
void out_proj(context& c, const block_io& io);

// mlp.cpp
void mlp_norm(context& c, const block_io& io);
void mlp_up(context& c, const block_io& io);
void mlp_gate(context& c, const block_io& io);
void mlp_act(context& c, const block_io& io);
void mlp_down(context& c, const block_io& io);

// moe.cpp
void expert_router(context& c, const block_io& io);
void experts(context& c, const block_io& io);

// dst[0, count) = src[0, count), split over the pool.
void parallel_copy(thread_pool& pool, const float* src, float* dst, std::int64_t count);

}  // namespace modsim::kernels::cpu
