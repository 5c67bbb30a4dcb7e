#include "sim/model/spec.hpp"

#include <algorithm>
#include <cmath>

namespace modsim::sim {

static bool schedule_routes(const schedule& s, int index) {
  switch (s.kind) {
    case schedule_kind::none:
      return false;
    case schedule_kind::all:
      return true;
    case schedule_kind::every_other:
      return index % 2 == 1;
    case schedule_kind::every_nth:
      return s.n > 0 && index % s.n == s.n - 1;
    case schedule_kind::list:
      return std::binary_search(s.layers.begin(), s.layers.end(), index);
  }
  return false;
}

std::vector<layer_plan> plan_layers(const model_spec& model) {
  std::vector<layer_plan> plan(static_cast<std::size_t>(std::max(0, model.n_layers)));
  for (int i = 0; i < model.n_layers; ++i) {
    layer_plan& l = plan[static_cast<std::size_t>(i)];
    l.index = i;
    if (!model.routing) continue;
    const routing_spec& r = *model.routing;
    if (!r.layer_capacities.empty()) {
      const auto& c = r.layer_capacities[static_cast<std::size_t>(i)];
      l.routed = c.has_value();
      l.capacity = c.value_or(1.0);
    } else {
      l.routed = schedule_routes(r.sched, i);
      l.capacity = l.routed ? r.capacity : 1.0;
    }
  }
  return plan;
}

std::vector<layer_routing> route_layers(const model_spec& model) {
  const bool has_moe = model.moe.has_value();
  const mode_variant variant = has_moe ? model.moe->variant : mode_variant::staged;
  std::vector<layer_routing> out;
  for (const layer_plan& p : plan_layers(model)) {
    layer_routing r;
    r.index = p.index;
    r.routed = p.routed && !(has_moe && variant == mode_variant::moe);
    r.mod_routed = r.routed && !(has_moe && variant == mode_variant::integrated);
    r.capacity = r.routed ? p.capacity : 1.0;
    r.moe = has_moe;
    r.noop_experts = r.routed && has_moe && variant == mode_variant::integrated ? model.moe->noop_experts : 0;
    out.push_back(r);
  }
  return out;
}

model_spec dense_baseline(const model_spec& model) {
  model_spec dense = model;
  dense.routing.reset();
  if (dense.moe) {
    dense.moe->noop_experts = 0;
    dense.moe->variant = mode_variant::moe;
  }
  if (!dense.name.empty()) dense.name += " (dense baseline)";
  return dense;
}

const char* to_string(run_mode m) {
  switch (m) {
    case run_mode::forward:
      return "forward";
    case run_mode::train:
      return "train";
    case run_mode::decode:
      return "decode";
  }
  return "?";
}

std::string to_string(const schedule& s) {
  switch (s.kind) {
    case schedule_kind::none:
      return "none";
    case schedule_kind::all:
      return "all";
    case schedule_kind::every_other:
      return "every_other";
    case schedule_kind::every_nth:
      return "every_nth:" + std::to_string(s.n);
    case schedule_kind::list: {
      std::string out = "[";
      for (std::size_t i = 0; i < s.layers.size(); ++i) {
        if (i) out += ",";
        out += std::to_string(s.layers[i]);
      }
      return out + "]";
    }
  }
  return "?";
}

std::string schedule_preset(const std::vector<bool>& routed) {
  const int n = static_cast<int>(routed.size());
  auto matches = [&](auto&& rule) {
    for (int i = 0; i < n; ++i)
      if (routed[static_cast<std::size_t>(i)] != rule(i)) return false;
    return true;
  };
  if (matches([](int) { return false; })) return "none";
  if (matches([](int) { return true; })) return "all";
  if (matches([](int i) { return i % 2 == 1; })) return "every_other";
  for (int step = 3; step <= n; ++step)
    if (matches([step](int i) { return i % step == step - 1; })) return "every_nth:" + std::to_string(step);
  return {};
}

dtype default_dtype(const hardware_spec& hw) { return is_gpu(hw) ? dtype::bf16 : dtype::fp32; }

const char* to_string(hardware_kind k) {
  switch (k) {
    case hardware_kind::gpu:
      return "gpu";
    case hardware_kind::cpu:
      return "cpu";
  }
  return "?";
}

const char* backend_of(hardware_kind k) {
  switch (k) {
    case hardware_kind::gpu:
      return "cuda";
    case hardware_kind::cpu:
      return "cpu";
  }
  return "?";
}

}  // namespace modsim::sim
