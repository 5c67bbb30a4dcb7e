// mlp_norm, mlp_up, mlp_gate, mlp_act, mlp_down (dense MLP with its residual).
#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/vec_math.hpp"
#include "core/error.hpp"

namespace modsim::kernels::cpu {

namespace {
int i32(std::int64_t v) { return static_cast<int>(v); }
}  // namespace

void mlp_norm(context& c, const block_io& io) {
  const auto& s = c.shape();
  const std::int64_t rows = s.batch * io.n, d = s.d_model;
  const float* in = c.ws.data(tensor::h);
  const float* g = c.ws.data(tensor::mlp_norm_g);
  float* out = c.ws.data(tensor::mlp_in);
  c.pool.parallel_for(
      rows, std::max<std::int64_t>(8, rows / (4 * c.pool.size()) + 1),
      [&](std::int64_t r0, std::int64_t r1) { rms_norm_rows(in + r0 * d, g, out + r0 * d, r1 - r0, d); });
}

void mlp_up(context& c, const block_io& io) {
  const auto& s = c.shape();
  const std::int64_t m = s.batch * io.n, d = s.d_model, dff = s.d_ff;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i32(m), i32(dff), i32(d), 1.0f, c.ws.data(tensor::mlp_in),
              i32(d), c.ws.data(tensor::w_up), i32(dff), 0.0f, c.ws.data(tensor::mlp_hidden), i32(dff));
}

void mlp_gate(context& c, const block_io& io) {
  const auto& s = c.shape();
  if (s.mlp != mlp_kind::swiglu) throw input_error("", "op", "mlp_gate needs mlp = swiglu");
  const std::int64_t m = s.batch * io.n, d = s.d_model, dff = s.d_ff;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i32(m), i32(dff), i32(d), 1.0f, c.ws.data(tensor::mlp_in),
              i32(d), c.ws.data(tensor::w_gate), i32(dff), 0.0f, c.ws.data(tensor::mlp_gate_hidden), i32(dff));
}

void mlp_act(context& c, const block_io& io) {
  const auto& s = c.shape();
  const std::int64_t count = s.batch * io.n * s.d_ff;
  float* up = c.ws.data(tensor::mlp_hidden);
  const float* gate = c.ws.data(tensor::mlp_gate_hidden);
  const bool swiglu = s.mlp == mlp_kind::swiglu;
  c.pool.parallel_for(count, std::max<std::int64_t>(1 << 14, count / (4 * c.pool.size()) + 1),
                      [&](std::int64_t b, std::int64_t e) {
                        if (swiglu)
                          silu_mul_inplace(up + b, gate + b, e - b);
                        else
                          gelu_inplace(up + b, e - b);
                      });
}

void mlp_down(context& c, const block_io& io) {
  const auto& s = c.shape();
  const std::int64_t m = s.batch * io.n, d = s.d_model, dff = s.d_ff;
  float* y = c.ws.data(tensor::y);
  parallel_copy(c.pool, c.ws.data(tensor::h), y, m * d);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, i32(m), i32(d), i32(dff), 1.0f, c.ws.data(tensor::mlp_hidden),
              i32(dff), c.ws.data(tensor::w_down), i32(d), 1.0f, y, i32(d));
}

}  // namespace modsim::kernels::cpu
