// Writing model files: the inverse of the model parser in sim/model/config.cpp.
#include <boost/json.hpp>

#include "sim/model/config.hpp"
#include "sim/common/io.hpp"

namespace modsim::sim {

std::string model_to_json(const model_spec& m) {
  namespace json = boost::json;
  json::object o;
  o["name"] = m.name;
  if (!m.notes.empty()) o["notes"] = m.notes;
  o["d_model"] = m.d_model;
  o["n_layers"] = m.n_layers;
  o["n_heads"] = m.n_heads;
  o["n_kv_heads"] = m.n_kv_heads;
  if (m.n_heads > 0 && (m.d_model % m.n_heads != 0 || m.d_head != m.d_model / m.n_heads)) o["d_head"] = m.d_head;
  o["d_ff"] = m.d_ff;
  o["vocab_size"] = m.vocab_size;
  if (m.tie_embeddings) o["tie_embeddings"] = true;
  o["mlp"] = to_string(m.mlp);
  if (m.sliding_window > 0) o["sliding_window"] = m.sliding_window;
  if (m.routing) {
    const routing_spec& r = *m.routing;
    const std::vector<layer_plan> plan = plan_layers(m);
    std::vector<bool> routed;
    bool uniform = true;
    double capacity = r.capacity;
    bool first = true;
    for (const layer_plan& l : plan) {
      routed.push_back(l.routed);
      if (!l.routed) continue;
      if (first)
        capacity = l.capacity, first = false;
      else if (l.capacity != capacity)
        uniform = false;
    }
    json::object ro;
    const std::string preset = schedule_preset(routed);
    ro["capacity"] = capacity;
    if (uniform && !preset.empty()) {
      ro["schedule"] = preset;
    } else {
      json::array caps;
      for (const layer_plan& l : plan) {
        if (l.routed)
          caps.emplace_back(l.capacity);
        else
          caps.emplace_back(nullptr);
      }
      ro["layer_capacities"] = std::move(caps);
    }
    ro["inference"] = r.inference == inference_routing::predictor ? "predictor" : "router";
    if (r.predictor_hidden > 0) ro["predictor_hidden"] = r.predictor_hidden;
    o["routing"] = std::move(ro);
  }
  if (m.moe) {
    const moe_spec& mo = *m.moe;
    json::object mj;
    mj["variant"] = to_string(mo.variant);
    mj["experts"] = mo.experts;
    mj["top_k"] = mo.top_k;
    mj["capacity_factor"] = mo.capacity_factor;
    if (mo.noop_experts > 0) mj["noop_experts"] = mo.noop_experts;
    o["mode"] = std::move(mj);
  }
  pretty_options layout;
  layout.flat_object_max = 0;
  layout.flat_scalar_arrays = true;
  return pretty_json(o, layout) + "\n";
}

void save_model(const model_spec& model, const std::string& path) { write_file_atomically(path, model_to_json(model)); }

}  // namespace modsim::sim
