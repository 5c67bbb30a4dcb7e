// Sweep grids (profiler/grid.hpp): the `--grid FILE.json` reader.
#include "profiler/grid.hpp"

#include <boost/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "sim/model/config.hpp"

namespace json = boost::json;

namespace modsim::profiler {
namespace {

std::string fmt_double(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
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

// The "shapes" list: layer dimensions crossed with the other axes instead of the d_model,
// n_heads, n_kv_heads, d_ff and mlp axes (which it excludes).
std::vector<grid::layer_dims> parse_shapes(const json::value& sv_value, const json::object& obj,
                                           const std::string& file) {
  const json::value* sv = &sv_value;
  std::vector<grid::layer_dims> shapes;
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
    shapes.push_back(std::move(dims));
  }
  return shapes;
}

// Refuses a key a grid file does not have (one line naming it).
void check_keys(const json::object& obj, const std::string& file) {
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
                                "shapes",
                                "recompute"};
  for (const auto& kv : obj) {
    bool ok = false;
    for (const char* k : known) ok |= kv.key() == k;
    if (!ok) throw input_error(file, std::string(kv.key()), "unknown key");
  }
}

}  // namespace

grid parse_grid(std::string_view json_text, const std::string& file) {
  json::value v;
  try {
    v = json::parse(json_text);
  } catch (const std::exception& e) {
    throw input_error(file, "", std::string("malformed JSON: ") + e.what());
  }
  if (!v.is_object()) throw input_error(file, "", "expected a JSON object");
  const json::object& obj = v.as_object();
  check_keys(obj, file);
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
  if (const json::value* sv = obj.if_contains("shapes")) g.shapes = parse_shapes(*sv, obj, file);
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
  g.variants = axis<kernels::moe_variant>(
      obj, file, "variant",
      [&](const json::value& x, const std::string& p) {
        std::string name = to_str(x, file, p);
        if (name == "staged") return kernels::moe_variant::staged;
        if (name == "integrated") return kernels::moe_variant::integrated;
        throw input_error(file, p, "unknown variant '" + name + "' (expected staged or integrated)");
      },
      {kernels::moe_variant::staged});
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
      axis<decode_run>(obj, file, "decode_routing",
                       [&](const json::value& x, const std::string& p) {
                         const std::string name = to_str(x, file, p);
                         if (const std::optional<decode_run> r = find_decode_run(name)) return *r;
                         throw input_error(file, p, "unknown decode_routing '" + name + "' (sync, pad or graph)");
                       },
                       {decode_run::sync});
  g.predictor_hidden = axis<std::int64_t>(obj, file, "predictor_hidden", positive, {0});
  g.pad_capacity =
      axis<double>(obj, file, "pad_capacity",
                   [&](const json::value& x, const std::string& p) {
                     if (!x.is_number() || !(x.to_number<double>() > 0 && x.to_number<double>() <= 1))
                       throw input_error(file, p, "expected a number in (0, 1], got " + json::serialize(x));
                     return x.to_number<double>();
                   },
                   {0.0});
  g.recompute = axis<modsim::recompute>(
      obj, file, "recompute",
      [&](const json::value& x, const std::string& p) {
        const std::string name = to_str(x, file, p);
        if (auto r = modsim::find_recompute(name)) return *r;
        throw input_error(file, p, "unknown recompute '" + name + "' (expected none, selective or full)");
      },
      {modsim::recompute::none});
  g.model_names = axis<std::string>(obj, file, "model",
                                    [&](const json::value& x, const std::string& p) { return to_str(x, file, p); }, {});
  return g;
}

grid load_grid(const std::string& path) { return parse_grid(sim::read_text_file(path), path); }

}  // namespace modsim::profiler
