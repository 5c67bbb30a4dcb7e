// The measurements CSV (sim/cost/measurements.hpp): a row as the cost model's measured sample, and
// a whole file read that way.
#include <map>
#include <memory>

#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/cost/measurements.hpp"

namespace modsim::sim {

measured_sample sample_of(const measurement_row& r, const std::string& where) {
  measured_sample p;
  p.op = r.op;
  p.type = r.type;
  p.batch = r.batch;
  p.seq_len = r.seq_len;
  p.d_model = static_cast<int>(r.d_model);
  p.n_heads = static_cast<int>(r.n_heads);
  p.n_kv_heads = static_cast<int>(r.n_kv_heads);
  p.d_ff = static_cast<int>(r.d_ff);
  p.mlp = r.mlp;
  p.capacity = r.capacity;
  p.variant = r.variant;
  p.experts = r.experts;
  p.noop_experts = r.noop_experts;
  p.capacity_factor = r.capacity_factor;
  p.median_s = r.median_s;
  p.anchor_s = r.anchor_s;
  p.backend = r.backend;
  p.device = r.device;
  p.where = where;
  p.timing = r.timing;
  p.attention = r.attention;
  p.recompute = r.recompute;
  if (r.timing == timing_mode::in_block) {
    if (!r.block) throw input_error(where, "block", "an in_block row names its block");
    p.block = *r.block;
  }
  if (modsim::is_decode(r.op)) {
    p.decode_routing = r.decode_routing.value_or(decode_run::sync);
    p.pad_capacity = r.pad_capacity;
    p.predictor_hidden = static_cast<int>(r.predictor_hidden);
    p.model_name = r.model;
  }
  return p;
}

std::vector<measured_sample> read_measured_samples(const std::string& path) {
  const std::vector<measurement_row> rows = read_measurements(path);
  if (rows.empty()) throw input_error(path, "", "no measurement rows (only a header)");
  std::vector<measured_sample> out;
  out.reserve(rows.size());
  std::map<std::string, std::shared_ptr<const model_spec>> models;  // decode_step rows' models, loaded once
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const measurement_row& r = rows[i];
    const std::string where = path + ":" + std::to_string(i + 2);
    measured_sample p = sample_of(r, where);
    p.key = shape_key(p);
    if (r.op == modsim::op::decode_step) {
      auto& m = models[r.model];
      if (!m) {
        try {
          m = std::make_shared<const model_spec>(load_model(resolve_config(r.model, "models")));
        } catch (const error& e) {
          throw input_error(where, "model", "decode_step row: cannot load model '" + r.model + "': " + e.what());
        }
      }
      p.model = m;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace modsim::sim
