// Measured samples (sim/cost/measured_sample.hpp): their keys.
#include "sim/cost/measured_sample.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "core/op_table.hpp"

namespace modsim::sim {

namespace {

// A number as a key writes it: six significant digits (0.125, 1, 1.25).
std::string key_number(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

}  // namespace

std::string shape_key(const measured_sample& p) {
  if (p.timing == timing_mode::in_block) {
    measured_sample block = p;
    block.op = p.block;
    block.timing = timing_mode::isolated;
    block.attention = attention_impl::unfused;
    std::string k = shape_key(block) + "|in_block";
    if (p.op != p.block) k += "|" + std::string(to_string(p.op));
    if (p.attention == attention_impl::fused) k += "|fused";
    return k;
  }
  std::ostringstream k;
  k << to_string(p.op) << '|' << to_string(p.type) << '|' << p.batch << '|' << p.seq_len << '|' << p.d_model << '|'
    << p.n_heads << '|' << (p.n_kv_heads > 0 ? p.n_kv_heads : p.n_heads) << '|' << p.d_ff << '|'
    << key_number(p.capacity) << '|' << to_string(p.mlp);
  if (modsim::is_decode(p.op)) {
    k << '|' << to_string(p.decode_routing) << '|' << key_number(p.pad_capacity) << '|' << p.predictor_hidden;
    if (p.op == modsim::op::decode_step) k << '|' << p.model_name;
    return k.str();
  }
  if (p.op == modsim::op::layer_mode || p.op == modsim::op::expert_router || p.op == modsim::op::experts) {
    const moe_variant v = p.variant;
    const moe_variant keyed = v == moe_variant::staged || v == moe_variant::integrated ? v : moe_variant::none;
    k << '|' << static_cast<int>(keyed) << '|' << p.experts << '|' << p.noop_experts << '|'
      << key_number(p.capacity_factor);
  }
  if (p.attention == attention_impl::fused) k << "|fused";
  if (p.recompute != modsim::recompute::none) k << '|' << to_string(p.recompute);
  return k.str();
}

bool scored_whole(modsim::op op) {
  return modsim::is_block(op) || modsim::is_decode(op) || modsim::is_train(op) || modsim::is_optimizer(op);
}

}  // namespace modsim::sim
