// expert_router, experts: the MoE MLP of the MoDE variants (paper §5). Token-choice top-1:
// each token takes the expert with the largest logit (ties: lower expert index) with gate
// weight softmax(logits)[chosen]; a real expert keeps at most expert_capacity(m) tokens, in
// token order, later ones are dropped to the residual (y = h); a token choosing a no-op
// expert (index >= experts, integrated only) skips the MLP (y = h).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/vec_math.hpp"
#include "core/error.hpp"

namespace modsim::kernels::cpu {

namespace {

int i32(std::int64_t v) { return static_cast<int>(v); }

void require_moe(const block_shape& s, const char* name) {
  if (s.variant == moe_variant::none)
    throw input_error("", "op", std::string(name) + " needs a mode variant (staged or integrated)");
}

}  // namespace

void expert_router(context& c, const block_io& io) {
  const auto& s = c.shape();
  require_moe(s, "expert_router");
  const std::int64_t m = s.batch * io.n, d = s.d_model, Et = s.router_experts(), E = s.experts;
  float* logits = c.ws.data(tensor::expert_logits);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i32(m), i32(Et), i32(d), 1.0f, c.ws.data(tensor::mlp_in),
              i32(d), c.ws.data(tensor::expert_router_w), i32(Et), 0.0f, logits, i32(Et));
  std::int32_t* index = c.ws.indices(tensor::expert_index);
  float* gate = c.ws.data(tensor::expert_gate);
  auto& taken = c.ws.m_expert_fill;
  std::fill(taken.begin(), taken.end(), 0);
  const std::int64_t cap = s.expert_capacity(m);
  for (std::int64_t t = 0; t < m; ++t) {  // sequential: capacity is first come, first served
    const float* l = logits + t * Et;
    std::int64_t best = 0;
    for (std::int64_t e = 1; e < Et; ++e)
      if (l[e] > l[best]) best = e;
    float sum = 0.0f;
    for (std::int64_t e = 0; e < Et; ++e) sum += std::exp(l[e] - l[best]);
    gate[t] = 1.0f / sum;
    if (best >= E) {
      index[t] = static_cast<std::int32_t>(best);  // no-op expert
    } else if (taken[static_cast<std::size_t>(best)] < cap) {
      ++taken[static_cast<std::size_t>(best)];
      index[t] = static_cast<std::int32_t>(best);
    } else {
      index[t] = -1;  // over capacity: dropped
    }
  }
}

void experts(context& c, const block_io& io) {
  const auto& s = c.shape();
  require_moe(s, "experts");
  const std::int64_t m = s.batch * io.n, d = s.d_model, dff = s.d_ff, E = s.experts;
  const bool swiglu = s.mlp == mlp_kind::swiglu;
  const std::int32_t* index = c.ws.indices(tensor::expert_index);
  const float* gate = c.ws.data(tensor::expert_gate);
  auto& offsets = c.ws.m_expert_offsets;
  auto& fill = c.ws.m_expert_fill;
  auto& rows = c.ws.m_expert_rows;

  // Group the kept tokens by expert, in token order within each expert.
  std::fill(offsets.begin(), offsets.end(), 0);
  for (std::int64_t t = 0; t < m; ++t)
    if (index[t] >= 0 && index[t] < E) ++offsets[static_cast<std::size_t>(index[t]) + 1];
  for (std::int64_t e = 0; e < E; ++e) offsets[static_cast<std::size_t>(e + 1)] += offsets[static_cast<std::size_t>(e)];
  std::copy(offsets.begin(), offsets.end() - 1, fill.begin());
  for (std::int64_t t = 0; t < m; ++t)
    if (index[t] >= 0 && index[t] < E)
      rows[static_cast<std::size_t>(fill[static_cast<std::size_t>(index[t])]++)] = static_cast<std::int32_t>(t);
  const std::int64_t kept = offsets[static_cast<std::size_t>(E)];

  const float* u = c.ws.data(tensor::mlp_in);
  float* in = c.ws.m_expert_in.data();
  float* out = c.ws.m_expert_out.data();
  float* hidden = c.ws.data(tensor::mlp_hidden);
  float* gate_hidden = c.ws.data(tensor::mlp_gate_hidden);
  const std::int32_t* row_of = rows.data();
  const std::int64_t grain = std::max<std::int64_t>(16, kept / c.pool.size() + 1);
  c.pool.parallel_for(kept, grain, [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t j = j0; j < j1; ++j)
      std::memcpy(in + j * d, u + std::int64_t{row_of[j]} * d, static_cast<std::size_t>(d) * sizeof(float));
  });

  const float* w_up = c.ws.data(tensor::expert_w_up);
  const float* w_gate = c.ws.data(tensor::expert_w_gate);
  const float* w_down = c.ws.data(tensor::expert_w_down);
  for (std::int64_t e = 0; e < E; ++e) {
    const std::int64_t off = offsets[static_cast<std::size_t>(e)], cnt = offsets[static_cast<std::size_t>(e + 1)] - off;
    if (cnt == 0) continue;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i32(cnt), i32(dff), i32(d), 1.0f, in + off * d, i32(d),
                w_up + e * d * dff, i32(dff), 0.0f, hidden + off * dff, i32(dff));
    if (swiglu)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i32(cnt), i32(dff), i32(d), 1.0f, in + off * d, i32(d),
                  w_gate + e * d * dff, i32(dff), 0.0f, gate_hidden + off * dff, i32(dff));
  }
  const std::int64_t count = kept * dff;
  c.pool.parallel_for(count, std::max<std::int64_t>(1 << 14, count / (4 * c.pool.size()) + 1),
                      [&](std::int64_t b, std::int64_t e) {
                        if (swiglu)
                          silu_mul_inplace(hidden + b, gate_hidden + b, e - b);
                        else
                          gelu_inplace(hidden + b, e - b);
                      });
  for (std::int64_t e = 0; e < E; ++e) {
    const std::int64_t off = offsets[static_cast<std::size_t>(e)], cnt = offsets[static_cast<std::size_t>(e + 1)] - off;
    if (cnt == 0) continue;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i32(cnt), i32(d), i32(dff), 1.0f, hidden + off * dff,
                i32(dff), w_down + e * dff * d, i32(d), 0.0f, out + off * d, i32(d));
  }

  float* y = c.ws.data(tensor::y);
  parallel_copy(c.pool, c.ws.data(tensor::h), y, m * d);
  c.pool.parallel_for(kept, grain, [&](std::int64_t j0, std::int64_t j1) {
    for (std::int64_t j = j0; j < j1; ++j) {
      const std::int64_t t = row_of[j];
      axpy(gate[t], out + j * d, y + t * d, d);
    }
  });
}

}  // namespace modsim::kernels::cpu
