#include "core/op_table.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace modsim {
namespace {

using enum op;
constexpr op_role K = op_role::kernel, BLK = op_role::block, M = op_role::model, DEC = op_role::decode;
constexpr std::optional<op> none = std::nullopt;

// id, name, class, role, layer order, CPU launches, GPU launches, stand-in
constexpr std::array k_table = {
    op_info{router, "router", "routing", K, 0, 1, 1, none},
    op_info{topk, "topk", "routing", K, 1, 1, 2, none},
    op_info{gather, "gather", "routing", K, 2, 1, 1, none},
    op_info{attn_norm, "attn_norm", "norm", K, 4, 1, 1, mlp_norm},
    op_info{qkv_proj, "qkv_proj", "attn_proj", K, 5, 1, 1, none},
    op_info{attn_scores, "attn_scores", "attn_core", K, 6, 1, 1, none},
    op_info{attn_softmax, "attn_softmax", "attn_core", K, 7, 1, 1, none},
    op_info{attn_values, "attn_values", "attn_core", K, 8, 1, 1, none},
    op_info{out_proj, "out_proj", "attn_proj", K, 9, 1, 1, none},
    op_info{mlp_norm, "mlp_norm", "norm", K, 10, 1, 1, attn_norm},
    op_info{mlp_up, "mlp_up", "mlp", K, 11, 1, 1, none},
    op_info{mlp_gate, "mlp_gate", "mlp", K, 12, 1, 1, mlp_up},
    op_info{mlp_act, "mlp_act", "mlp", K, 13, 1, 1, none},
    op_info{mlp_down, "mlp_down", "mlp", K, 14, 1, 1, none},
    op_info{scatter, "scatter", "routing", K, 17, 1, 1, none},
    op_info{block_dense, "block_dense", "block", BLK, -1, 1, 1, none},
    op_info{block_mod, "block_mod", "block", BLK, -1, 1, 1, none},
    op_info{layer_mode, "layer_mode", "block", BLK, -1, 1, 1, none},
    op_info{expert_router, "expert_router", "moe", K, 15, 2, 2, router},
    op_info{experts, "experts", "moe", K, 16, 1, 1, mlp_up},
    op_info{predictor, "predictor", "routing", M, 3, 2, 2, router},
    op_info{lm_head, "lm_head", "lm_head", M, 18, 2, 2, mlp_up},
    op_info{decode_dense, "decode_dense", "decode", DEC, -1, 1, 1, none},
    op_info{decode_mod, "decode_mod", "decode", DEC, -1, 1, 1, none},
    op_info{decode_step, "decode_step", "decode", DEC, -1, 1, 1, none},
};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < k_table.size(); ++i)
    if (static_cast<std::size_t>(k_table[i].id) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "op_table: one row per op, in enum order");
static_assert(k_table.back().id == decode_step, "op_table: every op has a row");

template <class Keep, class Less>
std::vector<op> select(Keep keep, Less less) {
  std::vector<op> v;
  for (const op_info& r : k_table)
    if (keep(r)) v.push_back(r.id);
  std::stable_sort(v.begin(), v.end(), less);
  return v;
}

}  // namespace

std::span<const op_info> op_table() { return k_table; }

const op_info& info(op o) {
  const auto i = static_cast<std::size_t>(o);
  if (i >= k_table.size()) throw runtime_error("op_table: op " + std::to_string(i) + " has no row");
  return k_table[i];
}

std::string_view to_string(op o) { return info(o).name; }

std::optional<op> find_op(std::string_view name) {
  for (const op_info& r : k_table)
    if (r.name == name) return r.id;
  return std::nullopt;
}

op parse_op(std::string_view name) {
  if (auto o = find_op(name)) return *o;
  throw input_error("", "op", "unknown op '" + std::string(name) + "'");
}

bool is_block(op o) { return info(o).role == op_role::block; }

bool is_decode(op o) { return info(o).role == op_role::decode; }

std::span<const op> kernel_ops() {
  static const std::vector<op> v =
      select([](const op_info& r) { return r.role == op_role::kernel || r.role == op_role::block; },
             [](op, op) { return false; });
  return v;
}

std::span<const op> model_ops() {
  static const std::vector<op> v =
      select([](const op_info& r) { return r.role == op_role::kernel || r.role == op_role::model; },
             [](op a, op b) { return info(a).layer_order < info(b).layer_order; });
  return v;
}

std::span<const std::string_view> op_classes() {
  static constexpr std::array<std::string_view, 7> classes = {"routing", "norm", "attn_proj", "attn_core",
                                                              "mlp",     "moe",  "lm_head"};
  return classes;
}

}  // namespace modsim
