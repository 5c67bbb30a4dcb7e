// The weight counts of a model (sim/model/flops.hpp: parameter_count and its parts).
#include "sim/model/flops.hpp"
#include "sim/model/flops_arith.hpp"

namespace modsim::sim {

using detail::checked;

std::vector<std::int64_t> layer_parameter_counts(const model_spec& model) {
  const checked d = model.d_model;
  const checked dq = model.d_q();
  const checked dkv = model.d_kv();
  const checked F = model.d_ff;
  const checked mats = model.mlp == mlp_kind::swiglu ? 3 : 2;
  const bool has_moe = model.moe.has_value();

  std::vector<std::int64_t> out;
  for (const layer_routing& plan : route_layers(model)) {
    const bool mod_routing = plan.mod_routed;
    checked total = d * (dq + 2 * dkv) + dq * d + 2 * d;
    if (has_moe) {
      const checked E = model.moe->experts;
      const checked noop = plan.noop_experts;
      total = total + d * (E + noop) + E * mats * d * F;
    } else {
      total = total + mats * d * F;
    }
    if (mod_routing) {
      total = total + d;  // router
      if (model.routing && model.routing->inference == inference_routing::predictor) {
        const checked h = model.routing->predictor_hidden > 0 ? model.routing->predictor_hidden : model.d_model;
        total = total + d * h + h;
      }
    }
    out.push_back(total.v);
  }
  return out;
}

std::int64_t outside_layer_parameter_count(const model_spec& model) {
  const checked d = model.d_model;
  const checked V = model.vocab_size;
  // The embedding, the LM head (the embedding's own weight when tied), the final norm.
  return (V * d + (model.tie_embeddings ? checked(0) : V * d) + d).v;
}

std::int64_t parameter_count(const model_spec& model) {
  checked total = outside_layer_parameter_count(model);
  for (const std::int64_t l : layer_parameter_counts(model)) total = total + checked(l);
  return total.v;
}

}  // namespace modsim::sim
