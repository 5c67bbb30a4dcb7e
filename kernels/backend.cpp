#include "kernels/backend.hpp"

#include <algorithm>
#include <chrono>
#include <array>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace modsim::kernels {

namespace {

constexpr std::array<std::string_view, tensor_count> tensor_names = {
    "x",
    "out",
    "router_w",
    "router_logits",
    "routed_index",
    "routed_x",
    "routed_r",
    "attn_norm_g",
    "attn_in",
    "w_q",
    "w_k",
    "w_v",
    "q",
    "k",
    "v",
    "scores",
    "attn_out",
    "w_o",
    "h",
    "mlp_norm_g",
    "mlp_in",
    "w_up",
    "w_gate",
    "w_down",
    "mlp_hidden",
    "mlp_gate_hidden",
    "y",
    "expert_router_w",
    "expert_logits",
    "expert_index",
    "expert_gate",
    "expert_w_up",
    "expert_w_gate",
    "expert_w_down",
};

std::string field_error_key(const char* field) { return std::string("block_shape.") + field; }

void require_positive(std::int64_t value, const char* field) {
  if (value <= 0) throw input_error("", field_error_key(field), "must be positive, got " + std::to_string(value));
}

}  // namespace

std::string_view to_string(tensor t) {
  const auto i = static_cast<std::size_t>(t);
  return i < tensor_names.size() ? tensor_names[i] : std::string_view("unknown");
}

bool is_index(tensor t) { return t == tensor::routed_index || t == tensor::expert_index; }

tensor result_tensor(op o, const block_shape& shape) {
  if (o == op::block_dense) return tensor::y;
  if (o == op::layer_mode && shape.variant == moe_variant::integrated) return tensor::y;
  return tensor::out;
}

std::int64_t block_shape::routed_tokens() const { return modsim::routed_tokens(capacity, seq_len); }

std::int64_t block_shape::block_tokens() const {
  return variant == moe_variant::integrated ? seq_len : routed_tokens();
}

int block_shape::router_experts() const {
  return variant == moe_variant::integrated ? experts + noop_experts : experts;
}

std::int64_t block_shape::expert_capacity(std::int64_t moe_tokens) const {
  if (capacity_factor <= 0.0) return moe_tokens;
  const int e = std::max(1, router_experts());
  const double c = capacity_factor * static_cast<double>(moe_tokens) / static_cast<double>(e);
  const double ceiled = std::ceil(c - std::abs(c) * 1e-9);
  return std::clamp(static_cast<std::int64_t>(ceiled), std::int64_t{0}, moe_tokens);
}

void block_shape::validate() const {
  require_positive(batch, "batch");
  require_positive(seq_len, "seq_len");
  require_positive(d_model, "d_model");
  require_positive(n_heads, "n_heads");
  require_positive(n_kv_heads, "n_kv_heads");
  require_positive(d_head, "d_head");
  require_positive(d_ff, "d_ff");
  if (n_heads % n_kv_heads != 0)
    throw input_error("", field_error_key("n_kv_heads"),
                      "must divide n_heads (" + std::to_string(n_heads) + "), got " + std::to_string(n_kv_heads));
  if (!(capacity > 0.0 && capacity <= 1.0))
    throw input_error("", field_error_key("capacity"), "must be in (0, 1], got " + std::to_string(capacity));
  if (variant == moe_variant::none) return;
  if (variant == moe_variant::moe)
    throw input_error(
        "", field_error_key("variant"),
        "a block has no 'moe' variant: an MoE layer without routing is 'integrated' with no no-op experts");
  require_positive(experts, "experts");
  if (top_k != 1)
    throw input_error("", field_error_key("top_k"),
                      "only top-1 expert choice is implemented, got " + std::to_string(top_k));
  if (noop_experts < 0)
    throw input_error("", field_error_key("noop_experts"), "must not be negative, got " + std::to_string(noop_experts));
  if (variant == moe_variant::staged && noop_experts != 0)
    throw input_error("", field_error_key("noop_experts"),
                      "the staged variant has no no-op experts, got " + std::to_string(noop_experts));
  if (!std::isfinite(capacity_factor)) throw input_error("", field_error_key("capacity_factor"), "must be finite");
}

std::int64_t tensor_elements(tensor t, const block_shape& s) {
  const std::int64_t T = s.tokens(), d = s.d_model, dq = s.d_q(), dkv = s.d_kv(), dff = s.d_ff;
  const std::int64_t B = s.batch, S = s.seq_len, k = s.routed_tokens();
  const bool swiglu = s.mlp == mlp_kind::swiglu;
  const bool moe = s.variant != moe_variant::none;
  const std::int64_t E = moe ? s.experts : 0, Et = moe ? s.router_experts() : 0;
  switch (t) {
    case tensor::x:
    case tensor::out:
    case tensor::attn_in:
    case tensor::h:
    case tensor::mlp_in:
    case tensor::y:
      return T * d;
    case tensor::router_w:
    case tensor::attn_norm_g:
    case tensor::mlp_norm_g:
      return d;
    case tensor::router_logits:
      return T;
    case tensor::routed_index:
    case tensor::routed_r:
      return B * k;
    case tensor::routed_x:
      return B * k * d;
    case tensor::w_q:
      return d * dq;
    case tensor::w_k:
    case tensor::w_v:
      return d * dkv;
    case tensor::q:
    case tensor::attn_out:
      return T * dq;
    case tensor::k:
    case tensor::v:
      return T * dkv;
    case tensor::scores:
      return B * s.n_heads * S * S;
    case tensor::w_o:
      return dq * d;
    case tensor::w_up:
    case tensor::w_down:
      return d * dff;
    case tensor::w_gate:
      return swiglu ? d * dff : 0;
    case tensor::mlp_hidden:
      return T * dff;
    case tensor::mlp_gate_hidden:
      return swiglu ? T * dff : 0;
    case tensor::expert_router_w:
      return d * Et;
    case tensor::expert_logits:
      return T * Et;
    case tensor::expert_index:
    case tensor::expert_gate:
      return moe ? T : 0;
    case tensor::expert_w_up:
    case tensor::expert_w_down:
      return E * d * dff;
    case tensor::expert_w_gate:
      return swiglu ? E * d * dff : 0;
  }
  return 0;
}

void backend::prepare(op o, workspace& ws) {
  // Without this a repeated in-place op feeds on its own output: gelu(gelu(...)) drifts into
  // denormal floats, which are slow on CPUs and slow every op that reads them afterwards.
  if (o == op::attn_softmax) run(op::attn_scores, ws);
  if (o == op::mlp_act) run(op::mlp_up, ws);
}

double backend::timed_run(op o, workspace& ws) {
  synchronize();
  const auto start = std::chrono::steady_clock::now();
  run(o, ws);
  synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double backend::timed_block_run(op o, workspace&, std::vector<op_time>&) {
  throw runtime_error("the " + std::string(to_string(kind())) + " backend cannot time the ops inside " +
                      std::string(to_string(o)));
}

}  // namespace modsim::kernels
