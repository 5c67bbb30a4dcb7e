#include "profiler/grid.hpp"

#include <boost/json.hpp>
#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/config.hpp"
#include "sim/des/decode.hpp"
#include "core/error.hpp"

namespace json = boost::json;

namespace modsim::profiler {
namespace {

bool depends_on_capacity(kernels::op o) {
  using kernels::op;
  return !(o == op::block_dense || o == op::router || o == op::decode_dense || o == op::decode_step);
}

bool is_moe_op(kernels::op o) {
  using kernels::op;
  return o == op::layer_mode || o == op::expert_router || o == op::experts;
}

std::string fmt_double(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

// Why `p` cannot be measured, or "" when it can.
std::string invalid_reason(const point& p) {
  const kernels::block_shape& s = p.shape;
  if (s.d_model % s.n_heads != 0)
    return "d_model " + std::to_string(s.d_model) + " is not divisible by n_heads " + std::to_string(s.n_heads);
  if (s.n_heads % s.n_kv_heads != 0)
    return "n_heads " + std::to_string(s.n_heads) + " is not a multiple of n_kv_heads " + std::to_string(s.n_kv_heads);
  if (p.op == kernels::op::mlp_gate && s.mlp != kernels::mlp_kind::swiglu) return "mlp_gate exists only for swiglu";
  if (is_moe_op(p.op) && s.experts < 1) return "needs experts (the grid's \"experts\" axis)";
  if (s.variant == kernels::mode_variant::integrated && s.noop_experts < 1)
    return "the integrated variant needs at least one no-op expert";
  try {
    s.validate();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

// Reads key `key` as a list (or a single value) of T with `convert`.
template <class T, class F>
std::vector<T> axis(const json::object& obj, const std::string& file, const char* key, F convert,
                    std::vector<T> fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  std::vector<T> out;
  auto one = [&](const json::value& v, const std::string& path) { out.push_back(convert(v, path)); };
  if (it->value().is_array()) {
    const auto& arr = it->value().as_array();
    if (arr.empty()) throw input_error(file, key, "empty axis (give at least one value)");
    for (std::size_t i = 0; i < arr.size(); ++i) one(arr[i], std::string(key) + "[" + std::to_string(i) + "]");
  } else {
    one(it->value(), key);
  }
  return out;
}

std::int64_t to_positive_int(const json::value& v, const std::string& file, const std::string& path) {
  if (v.is_int64() && v.as_int64() > 0) return v.as_int64();
  if (v.is_uint64() && v.as_uint64() > 0 && v.as_uint64() < (1ULL << 40))
    return static_cast<std::int64_t>(v.as_uint64());
  throw input_error(file, path, "expected a positive integer, got " + json::serialize(v));
}

std::string to_str(const json::value& v, const std::string& file, const std::string& path) {
  if (!v.is_string()) throw input_error(file, path, "expected a string, got " + json::serialize(v));
  return std::string(v.as_string());
}

// A block shape from the grid's axes (kv = 0: MHA; d_head = d / heads).
// The layer shapes the grid crosses with its other axes, for one value of its mlp axis: its
// "shapes" list (whose entries carry their own mlp; taken once, for the first mlp value only),
// or the product of d_model, n_heads, n_kv_heads and d_ff in that nesting order.
std::vector<grid::layer_dims> dims_of(const grid& g, kernels::mlp_kind mlp) {
  if (!g.shapes.empty()) return mlp == g.mlp.front() ? g.shapes : std::vector<grid::layer_dims>{};
  std::vector<grid::layer_dims> out;
  const std::vector<std::int64_t> no_kv = {0};
  for (auto d : g.d_model)
    for (auto h : g.n_heads)
      for (auto kv : g.n_kv_heads.empty() ? no_kv : g.n_kv_heads)
        for (auto f : g.d_ff) out.push_back({d, h, kv, f, mlp, {}});
  return out;
}

kernels::block_shape shape_of(std::int64_t batch, std::int64_t seq, std::int64_t d, std::int64_t heads, std::int64_t kv,
                              std::int64_t d_ff, kernels::mlp_kind mlp) {
  kernels::block_shape sh;
  sh.batch = batch;
  sh.seq_len = seq;
  sh.d_model = d;
  sh.n_heads = heads;
  sh.n_kv_heads = kv > 0 ? kv : heads;
  sh.d_head = heads > 0 ? d / heads : 0;
  sh.d_ff = d_ff;
  sh.mlp = mlp;
  return sh;
}

// Why decode point `p` cannot be measured, or "".
std::string decode_invalid_reason(const point& p) {
  if (p.decode_routing != "sync" && p.decode_routing != "pad" && p.decode_routing != "graph")
    return "unknown decode_routing '" + p.decode_routing + "' (sync, pad or graph)";
  if (p.op == kernels::op::decode_dense && p.decode_routing == "pad")
    return "decode_dense has no routed layer: pad is the same step as sync";
  if (p.op == kernels::op::decode_step) {
    if (!p.model) return "decode_step needs a model (the grid's \"model\" or --model)";
    if (p.model_name.empty()) return "decode_step needs its model's name";
    if (p.model->mode) return "model " + p.model->name + ": MoE / MoDE layers have no decode kernel";
    if (p.model->routing && p.model->routing->inference != sim::inference_routing::predictor)
      return "model " + p.model->name + ": decode kernels route with the causal predictor (routing.inference)";
    if (!p.model->routing && p.decode_routing == "pad")
      return "model " + p.model->name + " has no routed layer: pad is the same step as sync";
  }
  if (p.shape.seq_len < 1) return "seq_len (the cached context) must be >= 1";
  return invalid_reason(p);
}

// The capacity of a model's first routed layer (1 when none).
double model_capacity(const sim::model_spec& m) {
  if (!m.routing) return 1.0;
  for (const sim::layer_plan& l : sim::plan_layers(m))
    if (l.routed) return l.capacity;
  return m.routing->capacity;
}

void expand_decode(const grid& g, expansion& out) {
  using kernels::op;
  auto add = [&](point p) {
    if (g.max_cached_tokens > 0 && p.shape.batch * p.shape.seq_len > g.max_cached_tokens) {
      out.skipped.push_back({std::move(p), "a cache of more than " + std::to_string(g.max_cached_tokens) +
                                               " tokens per layer (batch x seq_len): over the preset's bound"});
      return;
    }
    if (p.decode_routing != "sync" && p.pad_capacity <= 0)
      p.pad_capacity = sim::des::default_pad_capacity(p.shape.capacity, p.shape.batch);
    if (p.decode_routing == "sync") p.pad_capacity = 0;
    std::string why = decode_invalid_reason(p);
    if (why.empty())
      out.points.push_back(std::move(p));
    else
      out.skipped.push_back({std::move(p), why});
  };
  for (kernels::dtype t : g.dtypes)
    for (op o : g.ops) {
      if (!kernels::is_decode(o)) continue;
      if (o == op::decode_step) {
        if (g.models.empty()) {
          point p;
          p.op = o;
          p.type = t;
          out.skipped.push_back({p, "decode_step needs a model (the grid's \"model\" or --model)"});
          continue;
        }
        for (std::size_t mi = 0; mi < g.models.size(); ++mi)
          for (auto b : g.batch)
            for (auto ctx : g.seq_len)
              for (const std::string& r : g.decode_routing)
                for (double pc : g.pad_capacity) {
                  const auto& m = g.models[mi];
                  point p;
                  p.op = o;
                  p.type = t;
                  p.model = m;
                  p.model_name = mi < g.model_names.size() ? g.model_names[mi] : m->name;
                  p.decode_routing = r;
                  p.pad_capacity = pc;
                  kernels::block_shape& sh = p.shape;
                  sh.batch = b;
                  sh.seq_len = ctx;
                  sh.d_model = m->d_model;
                  sh.n_heads = m->n_heads;
                  sh.n_kv_heads = m->n_kv_heads > 0 ? m->n_kv_heads : m->n_heads;
                  sh.d_head = m->d_head > 0 ? m->d_head : (m->n_heads > 0 ? m->d_model / m->n_heads : 0);
                  sh.d_ff = m->d_ff;
                  sh.mlp = m->mlp;
                  sh.capacity = model_capacity(*m);
                  p.predictor_hidden =
                      m->routing ? (m->routing->predictor_hidden > 0 ? m->routing->predictor_hidden : m->d_model) : 0;
                  add(std::move(p));
                }
        continue;
      }
      for (auto mlp_axis : g.mlp)
        for (auto b : g.batch)
          for (auto ctx : g.seq_len)
            for (const grid::layer_dims& dims : dims_of(g, mlp_axis)) {
              const auto d = dims.d_model, h = dims.n_heads, kv = dims.n_kv_heads, f = dims.d_ff;
              const auto mlp = dims.mlp;
              for (std::size_t ci = 0; ci < g.capacity.size(); ++ci)
                for (const std::string& r : g.decode_routing)
                  for (std::size_t pi = 0; pi < g.pad_capacity.size(); ++pi)
                    for (std::size_t hi = 0; hi < g.predictor_hidden.size(); ++hi) {
                      // decode_dense: once per shape (no capacity, padding or predictor).
                      if (o == op::decode_dense && (ci | pi | hi) != 0) continue;
                      const std::int64_t ph = g.predictor_hidden[hi];
                      point p;
                      p.op = o;
                      p.type = t;
                      p.decode_routing = r;
                      p.pad_capacity = o == op::decode_mod ? g.pad_capacity[pi] : 0;
                      p.shape = shape_of(b, ctx, d, h, kv, f, mlp);
                      p.shape.capacity = o == op::decode_mod ? g.capacity[ci] : 1.0;
                      p.predictor_hidden = o == op::decode_mod ? (ph > 0 ? ph : std::min<std::int64_t>(256, d)) : 0;
                      add(std::move(p));
                    }
            }
    }
}

}  // namespace

std::int64_t decode_routed_count(const point& p) {
  const double m = std::round(p.shape.capacity * static_cast<double>(p.shape.batch));
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(m), 0, p.shape.batch);
}

expansion expand(const grid& g) {
  expansion out;
  bool any_moe = false;
  for (kernels::op o : g.ops) any_moe |= is_moe_op(o);
  // Shapes outside, ops inside: consecutive points share a workspace.
  for (kernels::dtype t : g.dtypes)
    for (auto mlp_axis : g.mlp)
      for (auto b : g.batch)
        for (auto s : g.seq_len)
          for (const grid::layer_dims& dims : dims_of(g, mlp_axis)) {
            const auto d = dims.d_model, h = dims.n_heads, kv = dims.n_kv_heads, f = dims.d_ff;
            const auto mlp = dims.mlp;
            for (std::size_t ci = 0; ci < g.capacity.size(); ++ci)
              for (std::size_t vi = 0; vi < (any_moe ? g.variants.size() : 1); ++vi)
                for (std::size_t ei = 0; ei < (any_moe ? g.experts.size() : 1); ++ei)
                  for (std::size_t ni = 0; ni < (any_moe ? g.noop_experts.size() : 1); ++ni)
                    for (std::size_t fi = 0; fi < (any_moe ? g.capacity_factor.size() : 1); ++fi)
                      for (kernels::op o : g.ops) {
                        if (kernels::is_decode(o)) continue;  // below
                        const bool moe = is_moe_op(o);
                        // Each op once per distinct shape it depends on.
                        if (!depends_on_capacity(o) && ci > 0) continue;
                        if (!moe && (vi | ei | ni | fi) != 0) continue;
                        const auto variant = moe ? g.variants[vi] : kernels::mode_variant::none;
                        if (moe && variant != kernels::mode_variant::integrated && ni > 0) continue;
                        point p;
                        p.op = o;
                        p.type = t;
                        p.shape = shape_of(b, s, d, h, kv, f, mlp);
                        kernels::block_shape& sh = p.shape;
                        sh.capacity = depends_on_capacity(o) ? g.capacity[ci] : 1.0;
                        if (moe) {
                          sh.variant = variant;
                          sh.experts = g.experts[ei];
                          sh.noop_experts = variant == kernels::mode_variant::integrated ? g.noop_experts[ni] : 0;
                          sh.capacity_factor = g.capacity_factor[fi];
                          sh.top_k = 1;
                        }
                        std::string why = invalid_reason(p);
                        if (why.empty())
                          out.points.push_back(p);
                        else
                          out.skipped.push_back({p, why});
                      }
          }
  expand_decode(g, out);
  return out;
}

grid parse_grid(std::string_view json_text, const std::string& file) {
  json::value v;
  try {
    v = json::parse(json_text);
  } catch (const std::exception& e) {
    throw input_error(file, "", std::string("malformed JSON: ") + e.what());
  }
  if (!v.is_object()) throw input_error(file, "", "expected a JSON object");
  const json::object& obj = v.as_object();
  static const char* known[] = {"ops",
                                "dtype",
                                "batch",
                                "seq_len",
                                "d_model",
                                "n_heads",
                                "n_kv_heads",
                                "d_ff",
                                "capacity",
                                "mlp",
                                "variant",
                                "experts",
                                "noop_experts",
                                "capacity_factor",
                                "name",
                                "notes",
                                "decode_routing",
                                "predictor_hidden",
                                "pad_capacity",
                                "model",
                                "shapes"};
  for (const auto& kv : obj) {
    bool ok = false;
    for (const char* k : known) ok |= kv.key() == k;
    if (!ok) throw input_error(file, std::string(kv.key()), "unknown key");
  }
  auto positive = [&](const json::value& x, const std::string& p) { return to_positive_int(x, file, p); };
  grid g;
  g.ops = axis<kernels::op>(obj, file, "ops",
                            [&](const json::value& x, const std::string& p) {
                              std::string name = to_str(x, file, p);
                              try {
                                return kernels::parse_op(name);
                              } catch (const error&) {
                                throw input_error(file, p, "unknown op '" + name + "'");
                              }
                            },
                            {});
  if (g.ops.empty()) throw input_error(file, "ops", "missing required key (the ops to measure)");
  g.dtypes =
      axis<kernels::dtype>(obj, file, "dtype",
                           [&](const json::value& x, const std::string& p) {
                             std::string name = to_str(x, file, p);
                             if (auto t = modsim::find_dtype(name)) return *t;
                             throw input_error(file, p, "unknown dtype '" + name + "' (expected fp32, bf16 or fp16)");
                           },
                           {kernels::dtype::fp32});
  g.batch = axis<std::int64_t>(obj, file, "batch", positive, {1});
  g.seq_len = axis<std::int64_t>(obj, file, "seq_len", positive, {});
  g.d_model = axis<std::int64_t>(obj, file, "d_model", positive, {});
  g.n_heads = axis<std::int64_t>(obj, file, "n_heads", positive, {});
  g.n_kv_heads = axis<std::int64_t>(obj, file, "n_kv_heads", positive, {});
  g.d_ff = axis<std::int64_t>(obj, file, "d_ff", positive, {});
  if (const json::value* sv = obj.if_contains("shapes")) {
    for (const char* k : {"d_model", "n_heads", "n_kv_heads", "d_ff", "mlp"})
      if (obj.contains(k))
        throw input_error(file, k, "give either \"shapes\" or the d_model, n_heads, n_kv_heads, d_ff and mlp axes");
    if (!sv->is_array() || sv->as_array().empty())
      throw input_error(file, "shapes", "expected a non-empty array of {d_model, n_heads, d_ff, ...} objects");
    for (std::size_t i = 0; i < sv->as_array().size(); ++i) {
      const std::string at = "shapes[" + std::to_string(i) + "]";
      const json::value& e = sv->as_array()[i];
      if (!e.is_object()) throw input_error(file, at, "expected an object");
      grid::layer_dims dims;
      for (const auto& kv : e.as_object()) {
        const std::string k(kv.key());
        const std::string p = at + "." + k;
        if (k == "d_model")
          dims.d_model = to_positive_int(kv.value(), file, p);
        else if (k == "n_heads")
          dims.n_heads = to_positive_int(kv.value(), file, p);
        else if (k == "n_kv_heads")
          dims.n_kv_heads = to_positive_int(kv.value(), file, p);
        else if (k == "d_ff")
          dims.d_ff = to_positive_int(kv.value(), file, p);
        else if (k == "mlp") {
          const std::string name = to_str(kv.value(), file, p);
          const auto m = modsim::find_mlp_kind(name);
          if (!m) throw input_error(file, p, "unknown mlp '" + name + "' (expected gelu or swiglu)");
          dims.mlp = *m;
        } else if (k == "from")
          dims.from = to_str(kv.value(), file, p);
        else
          throw input_error(file, p, "unknown key (d_model, n_heads, n_kv_heads, d_ff, mlp, from)");
      }
      for (auto [k, val] :
           {std::pair{"d_model", dims.d_model}, std::pair{"n_heads", dims.n_heads}, std::pair{"d_ff", dims.d_ff}})
        if (val == 0) throw input_error(file, at + "." + k, "missing required key");
      g.shapes.push_back(std::move(dims));
    }
  }
  // decode_step alone takes its shape from its models: only seq_len (the context) is needed.
  bool only_models = true;
  for (kernels::op o : g.ops) only_models &= o == kernels::op::decode_step;
  for (auto [key, vec] : {std::pair{"seq_len", &g.seq_len}, std::pair{"d_model", &g.d_model},
                          std::pair{"n_heads", &g.n_heads}, std::pair{"d_ff", &g.d_ff}})
    if (vec->empty() && !(only_models && std::string_view(key) != "seq_len") &&
        !(!g.shapes.empty() && std::string_view(key) != "seq_len"))
      throw input_error(file, key, "missing required key");
  g.capacity = axis<double>(obj, file, "capacity",
                            [&](const json::value& x, const std::string& p) {
                              if (!x.is_number())
                                throw input_error(file, p, "expected a number, got " + json::serialize(x));
                              double c = x.to_number<double>();
                              if (!(c > 0 && c <= 1))
                                throw input_error(file, p, "capacity must be in (0, 1], got " + fmt_double(c));
                              return c;
                            },
                            {1.0});
  g.mlp = axis<kernels::mlp_kind>(obj, file, "mlp",
                                  [&](const json::value& x, const std::string& p) {
                                    std::string name = to_str(x, file, p);
                                    if (auto m = modsim::find_mlp_kind(name)) return *m;
                                    throw input_error(file, p, "unknown mlp '" + name + "' (expected gelu or swiglu)");
                                  },
                                  {kernels::mlp_kind::gelu});
  g.variants = axis<kernels::mode_variant>(
      obj, file, "variant",
      [&](const json::value& x, const std::string& p) {
        std::string name = to_str(x, file, p);
        if (name == "staged") return kernels::mode_variant::staged;
        if (name == "integrated") return kernels::mode_variant::integrated;
        throw input_error(file, p, "unknown variant '" + name + "' (expected staged or integrated)");
      },
      {kernels::mode_variant::staged});
  g.experts = axis<int>(
      obj, file, "experts",
      [&](const json::value& x, const std::string& p) { return static_cast<int>(to_positive_int(x, file, p)); }, {0});
  g.noop_experts = axis<int>(
      obj, file, "noop_experts",
      [&](const json::value& x, const std::string& p) { return static_cast<int>(to_positive_int(x, file, p)); }, {1});
  g.capacity_factor = axis<double>(obj, file, "capacity_factor",
                                   [&](const json::value& x, const std::string& p) {
                                     if (!x.is_number() || x.to_number<double>() < 0)
                                       throw input_error(file, p, "expected a number >= 0, got " + json::serialize(x));
                                     return x.to_number<double>();
                                   },
                                   {1.25});
  g.decode_routing =
      axis<std::string>(obj, file, "decode_routing",
                        [&](const json::value& x, const std::string& p) {
                          std::string name = to_str(x, file, p);
                          if (name != "sync" && name != "pad" && name != "graph")
                            throw input_error(file, p, "unknown decode_routing '" + name + "' (sync, pad or graph)");
                          return name;
                        },
                        {"sync"});
  g.predictor_hidden = axis<std::int64_t>(obj, file, "predictor_hidden", positive, {0});
  g.pad_capacity =
      axis<double>(obj, file, "pad_capacity",
                   [&](const json::value& x, const std::string& p) {
                     if (!x.is_number() || !(x.to_number<double>() > 0 && x.to_number<double>() <= 1))
                       throw input_error(file, p, "expected a number in (0, 1], got " + json::serialize(x));
                     return x.to_number<double>();
                   },
                   {0.0});
  g.model_names = axis<std::string>(obj, file, "model",
                                    [&](const json::value& x, const std::string& p) { return to_str(x, file, p); }, {});
  return g;
}

grid load_grid(const std::string& path) { return parse_grid(sim::read_text_file(path), path); }

grid preset(std::string_view name, std::string_view backend) {
  using kernels::op;
  const bool gpu = backend == "cuda";
  grid g;
  g.mlp = {kernels::mlp_kind::gelu};
  g.variants = {kernels::mode_variant::staged, kernels::mode_variant::integrated};
  g.noop_experts = {1};
  g.capacity_factor = {1.25};
  if (name == "quick") {
    // Seconds per point on two CPU cores: enough shapes to calibrate and to validate.
    g.ops = {op::block_dense, op::block_mod, op::router,      op::topk,         op::gather,
             op::scatter,     op::qkv_proj,  op::attn_scores, op::attn_softmax, op::attn_values,
             op::out_proj,    op::mlp_up,    op::mlp_act,     op::mlp_down,     op::attn_norm};
    g.dtypes = {kernels::dtype::fp32};
    g.batch = {1};
    g.seq_len = gpu ? std::vector<std::int64_t>{1024, 2048} : std::vector<std::int64_t>{256, 512};
    g.d_model = gpu ? std::vector<std::int64_t>{1024, 2048} : std::vector<std::int64_t>{256, 512};
    g.n_heads = {gpu ? 16 : 8};
    g.d_ff = {};
    g.capacity = {0.125, 0.5, 1.0};
    g.experts = {0};
    // d_ff = 4·d_model is the norm; as an axis it would cross every d_model with every d_ff.
    g.d_ff = gpu ? std::vector<std::int64_t>{4096, 8192} : std::vector<std::int64_t>{1024, 2048};
    return g;
  }
  if (name == "full") {
    // Sized to finish in about five minutes on an H100/H200 (bf16; ~1,150 points) or about
    // half an hour on a 2-core CPU (fp32): every single op and both blocks at four capacities
    // over 16 shapes, plus MoDE layers. Includes the paper's point (S = 2048, capacity 1/8).
    g.ops = {op::block_dense, op::block_mod, op::layer_mode, op::router,      op::topk,         op::gather,
             op::scatter,     op::attn_norm, op::qkv_proj,   op::attn_scores, op::attn_softmax, op::attn_values,
             op::out_proj,    op::mlp_norm,  op::mlp_up,     op::mlp_act,     op::mlp_down};
    g.capacity = {0.125, 0.25, 0.5, 1.0};
    g.experts = {8};
    if (gpu) {
      g.dtypes = {kernels::dtype::bf16};
      g.batch = {1, 8};
      g.seq_len = {512, 2048};
      g.d_model = {1024, 2048};
      g.n_heads = {16};
      g.d_ff = {4096, 8192};
    } else {
      g.dtypes = {kernels::dtype::fp32};
      g.batch = {1, 2};
      g.seq_len = {256, 1024};
      g.d_model = {256, 768};
      g.n_heads = {8};
      g.d_ff = {1024, 3072};
    }
    return g;
  }
  if (name == "decode") {
    // KV-cached decode steps (DESIGN.md "Decode measurements"): one dense and one routed
    // layer over batches, cached contexts and widths, both routing strategies (and CUDA
    // graphs on a GPU); decode_step of the models given with --model. About 7 minutes on a
    // 2-core CPU (fp32, with mod-60m and dense-60m); on a GPU (bf16) about 220 points with
    // caches of at most 256K tokens per layer, meant to take under 5 minutes on an H100 (not
    // yet run on one).
    g.ops = {op::decode_dense, op::decode_mod, op::decode_step};
    g.capacity = {0.125, 0.5};
    g.experts = {0};
    g.n_heads = {gpu ? 16 : 8};
    if (gpu) {
      g.dtypes = {kernels::dtype::bf16};
      g.batch = {1, 8, 64};
      g.seq_len = {512, 4096};
      g.d_model = {1024, 2048};
      g.d_ff = {4096, 8192};
      g.decode_routing = {"sync", "pad", "graph"};
      g.max_cached_tokens = 262144;
    } else {
      g.dtypes = {kernels::dtype::fp32};
      g.batch = {1, 2, 4, 8, 16};
      g.seq_len = {256, 2048};
      g.d_model = {512, 1024};
      g.d_ff = {2048, 4096};
      g.decode_routing = {"sync", "pad"};
    }
    return g;
  }
  throw input_error("", "--preset", "unknown preset '" + std::string(name) + "' (expected quick, full or decode)");
}

expansion shard(expansion e, int index, int count) {
  if (count < 1 || index < 1 || index > count)
    throw input_error("", "--shard",
                      "shard " + std::to_string(index) + "/" + std::to_string(count) + ": need 1 <= I <= N");
  auto same_shape = [](const point& a, const point& b) {
    const kernels::block_shape& x = a.shape;
    const kernels::block_shape& y = b.shape;
    return a.type == b.type && x.batch == y.batch && x.seq_len == y.seq_len && x.d_model == y.d_model &&
           x.n_heads == y.n_heads && x.n_kv_heads == y.n_kv_heads && x.d_ff == y.d_ff && x.mlp == y.mlp;
  };
  std::vector<point> firsts;  // the first point of each shape group, in grid order
  expansion out;
  for (point& p : e.points) {
    std::size_t g = 0;
    while (g < firsts.size() && !same_shape(firsts[g], p)) ++g;
    if (g == firsts.size()) firsts.push_back(p);
    if (static_cast<int>(g % static_cast<std::size_t>(count)) == index - 1) out.points.push_back(std::move(p));
  }
  if (index == 1) out.skipped = std::move(e.skipped);
  return out;
}

std::pair<int, int> parse_shard(std::string_view text, const std::string& key) {
  const std::size_t slash = text.find('/');
  auto number = [&](std::string_view t) {
    if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string_view::npos)
      throw input_error("", key, "expected I/N (e.g. 2/4), got '" + std::string(text) + "'");
    return std::stoi(std::string(t));
  };
  if (slash == std::string_view::npos)
    throw input_error("", key, "expected I/N (e.g. 2/4), got '" + std::string(text) + "'");
  const int i = number(text.substr(0, slash)), n = number(text.substr(slash + 1));
  if (n < 1 || i < 1 || i > n) throw input_error("", key, "shard " + std::string(text) + ": need 1 <= I <= N");
  return {i, n};
}

expansion with_attention(expansion e, attention_impl a) {
  if (a == attention_impl::unfused) return e;
  expansion out;
  out.skipped = std::move(e.skipped);
  for (point& p : e.points) {
    p.attention = a;
    const bool unfused_only =
        p.op == kernels::op::attn_scores || p.op == kernels::op::attn_softmax || p.op == kernels::op::attn_values;
    if (unfused_only)
      out.skipped.push_back({std::move(p),
                             "fused attention runs scores, softmax and values as one kernel; it is timed inside "
                             "the blocks (block_dense, block_mod, layer_mode)"});
    else
      out.points.push_back(std::move(p));
  }
  return out;
}

expansion with_timing(expansion e, timing_mode t) {
  if (t == timing_mode::isolated) return e;
  expansion out;
  out.skipped = std::move(e.skipped);
  for (point& p : e.points) {
    p.timing = t;
    if (kernels::is_block(p.op)) {
      p.block = p.op;
      out.points.push_back(std::move(p));
    } else {
      out.skipped.push_back(
          {std::move(p), "in_block times ops through their block; list block_dense, block_mod or layer_mode"});
    }
  }
  return out;
}

sim::measured_sample sample_of(const point& p) {
  const kernels::block_shape& k = p.shape;
  sim::measured_sample m;
  m.op = p.op;
  m.type = p.type;
  m.batch = k.batch;
  m.seq_len = k.seq_len;
  m.d_model = static_cast<int>(k.d_model);
  m.n_heads = static_cast<int>(k.n_heads);
  m.n_kv_heads = static_cast<int>(k.n_kv_heads);
  m.d_ff = static_cast<int>(k.d_ff);
  m.mlp = k.mlp;
  m.capacity = k.capacity;
  m.variant = to_string(k.variant);
  m.experts = k.experts;
  m.noop_experts = k.noop_experts;
  m.capacity_factor = k.capacity_factor;
  m.timing = p.timing;
  m.block = p.block;
  m.attention = p.attention;
  m.decode_routing = p.decode_routing;
  m.pad_capacity = p.pad_capacity;
  m.predictor_hidden = static_cast<int>(p.predictor_hidden);
  m.model_name = p.model_name;
  m.model = p.model;
  return m;
}

std::string point_key(const point& p) { return sim::shape_key(sample_of(p)); }

}  // namespace modsim::profiler
