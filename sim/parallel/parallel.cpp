#include "sim/parallel/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.hpp"
#include "sim/model/flops.hpp"

namespace modsim::sim {

void validate_parallel(const model_spec& m, const workload& w, const parallel_spec& p) {
  auto bad = [](const char* flag, const std::string& why) { throw input_error("", flag, why); };
  if (p.tp < 1) bad("--tp", "must be >= 1");
  if (p.pp < 1) bad("--pp", "must be >= 1");
  if (p.dp < 1) bad("--dp", "must be >= 1");
  if (p.ep < 1) bad("--ep", "must be >= 1");
  if (m.n_heads % p.tp != 0)
    bad("--tp", "n_heads " + std::to_string(m.n_heads) + " is not divisible by " + std::to_string(p.tp));
  if (m.n_kv_heads >= p.tp && m.n_kv_heads % p.tp != 0)
    bad("--tp", "n_kv_heads " + std::to_string(m.n_kv_heads) + " is not divisible by " + std::to_string(p.tp));
  if (m.d_ff % p.tp != 0)
    bad("--tp", "d_ff " + std::to_string(m.d_ff) + " is not divisible by " + std::to_string(p.tp));
  if (p.pp > m.n_layers) bad("--pp", std::to_string(p.pp) + " stages for " + std::to_string(m.n_layers) + " layers");
  if (w.batch % p.dp != 0)
    bad("--dp", "batch " + std::to_string(w.batch) + " is not divisible by " + std::to_string(p.dp) + " replicas");
  if (p.ep > 1) {
    if (!m.moe) bad("--ep", "expert parallelism needs an MoE model (a mode block)");
    if (m.moe->experts % p.ep != 0)
      bad("--ep", std::to_string(m.moe->experts) + " experts are not divisible by " + std::to_string(p.ep));
    if (p.ep > p.dp * p.tp)
      bad("--ep", std::to_string(p.ep) + " expert ranks exceed the " + std::to_string(p.dp * p.tp) +
                      " GPUs of a pipeline stage (dp × tp)");
  }
  if (p.micro_batches < 0) bad("--micro-batches", "must be >= 0");
}

bool same_split(const parallel_spec& a, const parallel_spec& b) {
  return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.ep == b.ep;
}

std::string to_string(const parallel_spec& p) {
  std::string s = "TP " + std::to_string(p.tp) + " × PP " + std::to_string(p.pp) + " × DP " + std::to_string(p.dp);
  if (p.ep > 1) s += " (EP " + std::to_string(p.ep) + ")";
  return s;
}

model_spec tp_shard(const model_spec& m, int tp) {
  model_spec s = m;
  s.n_heads = m.n_heads / tp;
  s.n_kv_heads = m.n_kv_heads >= tp ? m.n_kv_heads / tp : 1;  // fewer KV heads than ranks: replicated
  s.d_ff = m.d_ff / tp;
  s.vocab_size = (m.vocab_size + tp - 1) / tp;
  // d_model stays: the residual, norms, router and predictor are replicated.
  return s;
}

double expert_slots(const moe_spec& mo, double tokens, int noop_experts) {
  if (mo.capacity_factor > 0)
    return mo.experts * std::ceil(mo.capacity_factor * tokens * mo.top_k / (mo.experts + noop_experts));
  return tokens * mo.top_k * (double(mo.experts) / double(mo.experts + noop_experts));
}

std::vector<layer_traffic> layer_traffic_of(const model_spec& m, const workload& w) {
  const flops_report f = evaluate_flops(m, w);
  const double e = dtype_bytes(w.type);
  // Training runs the forward and the backward; full recomputation runs each layer's forward,
  // its all-reduces and all-to-alls included, once more in the backward.
  const int passes = w.run != run_mode::train ? 1 : w.recompute == recompute_mode::full ? 3 : 2;
  std::vector<layer_traffic> out;
  const std::vector<layer_routing> routing = route_layers(m);
  for (const layer_flops& l : f.layers) {
    const layer_routing& r = routing.at(static_cast<std::size_t>(l.index));
    layer_traffic t;
    t.index = l.index;
    t.routed = r.mod_routed;
    t.tokens = l.expected_tokens;
    t.tp_allreduce_bytes = t.tokens * m.d_model * e;
    t.tp_allreduces = 2 * passes;
    if (m.moe) {
      const int noop = r.noop_experts;
      t.ep_all_to_all_bytes = expert_slots(*m.moe, t.tokens, noop) * m.d_model * e;
      t.ep_all_to_alls = 2 * passes;
    }
    out.push_back(t);
  }
  return out;
}

double dp_gradient_bytes(const model_spec& m, const workload& w, const parallel_spec& p) {
  if (w.run != run_mode::train) return 0;
  return double(parameter_count(m)) / double(p.tp * p.pp) * dtype_bytes(w.type);
}

double bubble_fraction(int stages, int micro_batches) {
  if (stages <= 1) return 0;
  return double(stages - 1) / double(micro_batches + stages - 1);
}

double stage_split::max_s() const { return stage_s.empty() ? 0 : *std::max_element(stage_s.begin(), stage_s.end()); }
double stage_split::mean_s() const {
  return stage_s.empty() ? 0 : std::accumulate(stage_s.begin(), stage_s.end(), 0.0) / double(stage_s.size());
}

namespace {

stage_split split_at(const std::vector<double>& t, double head_s, std::vector<int> first) {
  stage_split s;
  s.first_layer = std::move(first);
  const int n = static_cast<int>(t.size());
  for (std::size_t i = 0; i < s.first_layer.size(); ++i) {
    const int end = i + 1 < s.first_layer.size() ? s.first_layer[i + 1] : n;
    double sum = 0;
    for (int l = s.first_layer[i]; l < end; ++l) sum += t[static_cast<std::size_t>(l)];
    s.stage_s.push_back(sum);
  }
  if (!s.stage_s.empty()) s.stage_s.back() += head_s;
  return s;
}

// Stages of at most `cap` from the left, leaving at least one layer per remaining stage; the
// first layers, or empty when `cap` cannot be met.
std::vector<int> greedy(const std::vector<double>& t, double head_s, int stages, double cap) {
  const int n = static_cast<int>(t.size());
  std::vector<int> first{0};
  double sum = 0;
  for (int l = 0; l < n; ++l) {
    const double x = t[static_cast<std::size_t>(l)] + (l == n - 1 ? head_s : 0.0);
    const int stages_left = stages - static_cast<int>(first.size());  // after the open one
    const int layers_left = n - l;                                    // l included
    const bool must_close = layers_left == stages_left;               // one layer per later stage
    if (l > first.back() && (sum + x > cap || must_close)) {
      first.push_back(l);
      sum = 0;
    }
    sum += x;
    if (sum > cap) return {};
  }
  if (static_cast<int>(first.size()) != stages) return {};
  return first;
}

}  // namespace

stage_split naive_split(const std::vector<double>& t, double head_s, int stages) {
  const int n = static_cast<int>(t.size());
  if (stages < 1 || stages > n) throw input_error("", "--pp", "needs 1 to " + std::to_string(n) + " stages");
  std::vector<int> first;
  int at = 0;
  for (int i = 0; i < stages; ++i) {
    first.push_back(at);
    at += n / stages + (i < n % stages ? 1 : 0);
  }
  return split_at(t, head_s, first);
}

stage_split balanced_split(const std::vector<double>& t, double head_s, int stages) {
  const int n = static_cast<int>(t.size());
  if (stages < 1 || stages > n) throw input_error("", "--pp", "needs 1 to " + std::to_string(n) + " stages");
  // Binary search of the slowest stage's time between the largest layer and the whole model.
  double lo = 0, hi = head_s;
  for (int l = 0; l < n; ++l) {
    const double x = t[static_cast<std::size_t>(l)] + (l == n - 1 ? head_s : 0.0);
    lo = std::max(lo, x);
    hi += t[static_cast<std::size_t>(l)];
  }
  std::vector<int> best = greedy(t, head_s, stages, hi * (1 + 1e-12));
  for (int it = 0; it < 100 && hi - lo > 1e-12 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    std::vector<int> f = greedy(t, head_s, stages, mid);
    if (f.empty()) {
      lo = mid;
    } else {
      hi = mid;
      best = std::move(f);
    }
  }
  if (best.empty()) return naive_split(t, head_s, stages);
  return split_at(t, head_s, best);
}

std::int64_t embedding_parameter_count(const model_spec& model) {
  return std::int64_t{model.vocab_size} * model.d_model;
}

std::int64_t head_parameter_count(const model_spec& model) {
  return std::int64_t{model.vocab_size} * model.d_model + model.d_model;
}

std::int64_t stage_outside_parameter_count(const model_spec& model, int stage, int stages) {
  // Tied on one stage, the LM head is the embedding (its final norm apart); over several stages
  // the last keeps a copy of it, as Megatron-LM does (the two copies' gradient all-reduce
  // between the first and the last stage is not priced).
  if (stages == 1 && model.tie_embeddings) return embedding_parameter_count(model) + model.d_model;
  return (stage == 0 ? embedding_parameter_count(model) : 0) + (stage == stages - 1 ? head_parameter_count(model) : 0);
}

std::int64_t stage_parameter_count(const model_spec& model, const std::vector<int>& first_layer, int stage) {
  const std::vector<std::int64_t> layers = layer_parameter_counts(model);
  const auto s = static_cast<std::size_t>(stage);
  const int end = s + 1 < first_layer.size() ? first_layer[s + 1] : static_cast<int>(layers.size());
  std::int64_t n = stage_outside_parameter_count(model, stage, static_cast<int>(first_layer.size()));
  for (int l = first_layer.at(s); l < end; ++l) n += layers[static_cast<std::size_t>(l)];
  return n;
}

}  // namespace modsim::sim
