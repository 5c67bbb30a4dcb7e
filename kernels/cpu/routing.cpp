// router, topk, gather, scatter: the MoD routing around a block (paper §3.1, Equation 1).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/vec_math.hpp"

namespace modsim::kernels::cpu {

void parallel_copy(thread_pool& pool, const float* src, float* dst, std::int64_t count) {
  pool.parallel_for(count, std::max<std::int64_t>(1 << 14, count / pool.size() + 1),
                    [&](std::int64_t b, std::int64_t e) {
                      std::memcpy(dst + b, src + b, static_cast<std::size_t>(e - b) * sizeof(float));
                    });
}

// A matrix-vector product, memory-bound: rows split over the pool (whose caller does all
// the work if a helper cannot get a core) rather than a BLAS gemv.
void router(context& c) {
  const auto& s = c.shape();
  const std::int64_t T = s.tokens(), d = s.d_model;
  const float* x = c.ws.data(tensor::x);
  const float* w = c.ws.data(tensor::router_w);
  float* r = c.ws.data(tensor::router_logits);
  c.pool.parallel_for(T, std::max<std::int64_t>(16, T / (4 * c.pool.size()) + 1), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t t = b; t < e; ++t) r[t] = dot(x + t * d, w, d);
  });
}

void topk(context& c) {
  const auto& s = c.shape();
  const std::int64_t S = s.seq_len, k = s.routed_tokens();
  const float* r = c.ws.data(tensor::router_logits);
  std::int32_t* out = c.ws.indices(tensor::routed_index);
  auto* pairs = c.ws.m_topk_pairs.data();
  c.pool.parallel_for(s.batch, 1, [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t b = b0; b < b1; ++b) topk_sequence(r + b * S, S, k, pairs + b * S, out + b * k);
  });
}

void topk_sequence(const float* r, std::int64_t S, std::int64_t k, std::pair<float, std::int32_t>* pairs,
                   std::int32_t* idx) {
  for (std::int64_t i = 0; i < S; ++i) {
    const float v = r[i];
    pairs[i] = {std::isnan(v) ? -std::numeric_limits<float>::infinity() : v, static_cast<std::int32_t>(i)};
  }
  // Larger weight first; on equal weight the lower position wins (a stable descending
  // argsort), so exactly k are chosen even when all weights are equal.
  auto before = [](const std::pair<float, std::int32_t>& a, const std::pair<float, std::int32_t>& o) {
    return a.first > o.first || (a.first == o.first && a.second < o.second);
  };
  if (k < S) std::nth_element(pairs, pairs + k, pairs + S, before);
  for (std::int64_t j = 0; j < k; ++j) idx[j] = pairs[j].second;
  std::sort(idx, idx + k);
}

void gather(context& c) {
  const auto& s = c.shape();
  const std::int64_t S = s.seq_len, k = s.routed_tokens(), d = s.d_model, rows = s.batch * k;
  const float* x = c.ws.data(tensor::x);
  const float* r = c.ws.data(tensor::router_logits);
  const std::int32_t* idx = c.ws.indices(tensor::routed_index);
  float* xt = c.ws.data(tensor::routed_x);
  float* rt = c.ws.data(tensor::routed_r);
  c.pool.parallel_for(rows, std::max<std::int64_t>(16, rows / c.pool.size() + 1),
                      [&](std::int64_t j0, std::int64_t j1) {
                        for (std::int64_t j = j0; j < j1; ++j) {
                          const std::int64_t row = (j / k) * S + idx[j];
                          std::memcpy(xt + j * d, x + row * d, static_cast<std::size_t>(d) * sizeof(float));
                          rt[j] = r[row];
                        }
                      });
}

void scatter(context& c) {
  const auto& s = c.shape();
  const std::int64_t S = s.seq_len, k = s.routed_tokens(), d = s.d_model, rows = s.batch * k;
  const float* x = c.ws.data(tensor::x);
  const float* y = c.ws.data(tensor::y);
  const float* xt = c.ws.data(tensor::routed_x);
  const float* rt = c.ws.data(tensor::routed_r);
  const std::int32_t* idx = c.ws.indices(tensor::routed_index);
  float* out = c.ws.data(tensor::out);
  // out holds x^{l+1} in place: only rows routed now or by the previous scatter are written
  // (the others already equal x), so the cost is that of an in-place residual update.
  auto& previous = c.ws.scattered_rows();
  for (const std::int32_t row : previous)
    std::memcpy(out + std::int64_t{row} * d, x + std::int64_t{row} * d, static_cast<std::size_t>(d) * sizeof(float));
  previous.clear();
  c.pool.parallel_for(rows, std::max<std::int64_t>(16, rows / c.pool.size() + 1),
                      [&](std::int64_t j0, std::int64_t j1) {
                        for (std::int64_t j = j0; j < j1; ++j) {
                          const std::int64_t row = (j / k) * S + idx[j];
                          scaled_delta_add(x + row * d, y + j * d, xt + j * d, rt[j], out + row * d, d);
                        }
                      });
  for (std::int64_t j = 0; j < rows; ++j) previous.push_back(static_cast<std::int32_t>((j / k) * S + idx[j]));
}

}  // namespace modsim::kernels::cpu
