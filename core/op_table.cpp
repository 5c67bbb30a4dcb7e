#include "core/op_table.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace modsim {
namespace {

using enum op;

template <class Keep, class Less>
std::vector<op> select(Keep keep, Less less) {
  std::vector<op> v;
  for (const op_info& r : op_rows)
    if (keep(r)) v.push_back(r.id);
  std::stable_sort(v.begin(), v.end(), less);
  return v;
}

}  // namespace

std::span<const op_info> op_table() { return op_rows; }

const op_info& info(op o) {
  const auto i = static_cast<std::size_t>(o);
  if (i >= op_rows.size()) throw runtime_error("op_table: op " + std::to_string(i) + " has no row");
  return op_rows[i];
}

std::string_view to_string(op o) { return info(o).name; }

std::optional<op> find_op(std::string_view name) {
  for (const op_info& r : op_rows)
    if (r.name == name) return r.id;
  return std::nullopt;
}

op parse_op(std::string_view name) {
  if (auto o = find_op(name)) return *o;
  throw input_error("", "op", "unknown op '" + std::string(name) + "'");
}

bool is_block(op o) { return info(o).role == op_role::block; }

bool is_decode(op o) { return info(o).role == op_role::decode; }

bool is_train(op o) { return info(o).role == op_role::train; }
bool is_optimizer(op o) { return info(o).role == op_role::optimizer; }
bool needs_training_state(op o) { return is_train(o) || is_optimizer(o); }

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
