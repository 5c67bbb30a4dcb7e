#include "sim/model/config.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "sim/parallel/comm.hpp"
#include "sim/cost/gemm_tiles.hpp"
#include "sim/common/json_reader.hpp"

namespace json = boost::json;

namespace modsim::sim {
namespace {

using object_reader = json_reader;

mlp_kind parse_mlp(const std::string& s, const std::string& file, const std::string& key) {
  if (auto m = modsim::find_mlp_kind(s)) return *m;
  throw input_error(file, key, "unknown mlp '" + s + "' (expected gelu or swiglu)");
}

moe_variant parse_variant(const std::string& s, const std::string& file, const std::string& key) {
  const auto v = modsim::find_moe_variant(s);
  if (v && *v != moe_variant::none) return *v;
  throw input_error(file, key, "unknown variant '" + s + "' (expected moe, staged or integrated)");
}

routing_spec parse_routing(object_reader& r, int n_layers) {
  routing_spec out;
  const std::string& file = r.file();
  if (auto c = r.opt_number("capacity")) out.capacity = *c;
  if (const json::value* s = r.find("schedule")) {
    if (s->is_string()) {
      out.sched = parse_schedule(s->as_string(), n_layers, file, r.key_path("schedule"));
    } else if (s->is_array()) {
      std::string list;
      for (std::size_t i = 0; i < s->as_array().size(); ++i) {
        const json::value& e = s->as_array()[i];
        std::string key = "schedule[" + std::to_string(i) + "]";
        list += (i ? "," : "") + std::to_string(r.integer(e, key, 0, n_layers - 1));
      }
      out.sched = list.empty() ? schedule{} : parse_schedule(list, n_layers, file, r.key_path("schedule"));
    } else {
      throw input_error(file, r.key_path("schedule"),
                        std::string("expected a string or an array of layer indices, got ") + json_type_name(*s));
    }
  } else {
    out.sched.kind = schedule_kind::every_other;
  }
  if (const json::value* lc = r.find("layer_capacities")) {
    if (!lc->is_array())
      throw input_error(file, r.key_path("layer_capacities"),
                        std::string("expected an array of n_layers numbers or nulls, got ") + json_type_name(*lc));
    const auto& arr = lc->as_array();
    if (static_cast<int>(arr.size()) != n_layers)
      throw input_error(file, r.key_path("layer_capacities"),
                        "has " + std::to_string(arr.size()) + " entries, n_layers is " + std::to_string(n_layers));
    for (std::size_t i = 0; i < arr.size(); ++i) {
      std::string key = "layer_capacities[" + std::to_string(i) + "]";
      if (arr[i].is_null()) {
        out.layer_capacities.emplace_back(std::nullopt);
      } else {
        double c = r.number(arr[i], key);
        if (!(c > 0 && c <= 1))
          throw input_error(file, r.key_path(key), "capacity must be in (0, 1], got " + fmt_num(c));
        out.layer_capacities.emplace_back(c);
      }
    }
    if (r.has("schedule")) {
      for (int i = 0; i < n_layers; ++i) {
        bool by_list = out.layer_capacities[static_cast<std::size_t>(i)].has_value();
        model_spec probe;
        probe.n_layers = n_layers;
        routing_spec only_schedule = out;
        only_schedule.layer_capacities.clear();
        probe.routing = only_schedule;
        bool by_schedule = plan_layers(probe)[static_cast<std::size_t>(i)].routed;
        if (by_list != by_schedule)
          throw input_error(file, r.key_path("layer_capacities[" + std::to_string(i) + "]"),
                            std::string("layer ") + std::to_string(i) +
                                (by_schedule ? " is routed by the schedule but has a null capacity"
                                             : " is not routed by the schedule but has a capacity"));
      }
    }
  }
  if (auto inf = r.opt_string("inference")) {
    if (*inf == "predictor")
      out.inference = inference_routing::predictor;
    else if (*inf == "router")
      out.inference = inference_routing::router;
    else
      throw input_error(file, r.key_path("inference"),
                        "unknown inference routing '" + *inf + "' (expected predictor or router)");
  }
  if (auto h = r.opt_int("predictor_hidden", 1, 1 << 20)) out.predictor_hidden = *h;
  r.finish();
  return out;
}

moe_spec parse_moe(object_reader& r) {
  moe_spec out;
  out.variant = parse_variant(r.get_string("variant"), r.file(), r.key_path("variant"));
  out.experts = r.get_int("experts", 1, 1 << 16);
  if (auto k = r.opt_int("top_k", 1, 1 << 16)) out.top_k = *k;
  out.capacity_factor = r.get_non_negative("capacity_factor", 0.0);
  if (auto n = r.opt_int("noop_experts", 0, 1 << 16)) out.noop_experts = *n;
  r.finish();
  return out;
}

model_spec parse_modsim_model(object_reader& r) {
  model_spec m;
  m.source_file = r.file();
  m.name = r.get_string("name");
  m.notes = r.opt_string("notes").value_or("");
  m.d_model = r.get_int("d_model", 1, 1 << 24);
  m.n_layers = r.get_int("n_layers", 1, 100000);
  m.n_heads = r.get_int("n_heads", 1, 1 << 16);
  m.n_kv_heads = r.opt_int("n_kv_heads", 1, 1 << 16).value_or(m.n_heads);
  auto d_head = r.opt_int("d_head", 1, 1 << 16);
  if (!d_head && m.d_model % m.n_heads != 0)
    throw input_error(
        r.file(), "n_heads",
        "d_model " + std::to_string(m.d_model) + " is not divisible by n_heads " + std::to_string(m.n_heads));
  m.d_head = d_head.value_or(m.n_heads ? m.d_model / m.n_heads : 0);
  m.d_ff = r.get_int("d_ff", 1, 1 << 26);
  m.vocab_size = r.get_int("vocab_size", 1, 1 << 26);
  m.tie_embeddings = r.opt_bool("tie_embeddings").value_or(false);
  if (auto mlp = r.opt_string("mlp")) m.mlp = parse_mlp(*mlp, r.file(), "mlp");
  if (const json::value* sw = r.find("sliding_window"); sw && !sw->is_null())
    m.sliding_window = r.integer(*sw, "sliding_window", 1, std::int64_t{1} << 40);
  if (const json::value* rv = r.find("routing")) {
    object_reader rr(*rv, r.file(), "routing");
    m.routing = parse_routing(rr, m.n_layers);
    if (m.routing->sched.kind == schedule_kind::none && m.routing->layer_capacities.empty()) m.routing.reset();
  }
  if (const json::value* mv = r.find("mode")) {
    object_reader mr(*mv, r.file(), "mode");
    m.moe = parse_moe(mr);
  }
  r.finish();
  return m;
}

// A HuggingFace config's name: _name_or_path, else model_type, else the file's name.
std::string hf_name(object_reader& r) {
  std::string name = r.opt_string("_name_or_path").value_or("");
  if (name.empty()) name = r.opt_string("model_type").value_or("");
  if (name.empty()) {
    const std::string& f = r.file();
    auto slash = f.find_last_of('/');
    name = slash == std::string::npos ? f : f.substr(slash + 1);
  }
  return name;
}

// An HF activation name: silu/swish → swiglu (the gated MLP of Llama-style configs), gelu* → gelu.
mlp_kind hf_mlp(const std::string& act, const std::string& file, const std::string& key, bool gated_allowed) {
  if (gated_allowed && (act == "silu" || act == "swish" || act == "swiglu")) return mlp_kind::swiglu;
  if (act.rfind("gelu", 0) == 0) return mlp_kind::gelu;
  throw input_error(
      file, key, "unsupported activation '" + act + "' (expected " + (gated_allowed ? "silu or gelu*" : "gelu*") + ")");
}

// `sliding_window` (Mistral; null or absent = none). Qwen2-style configs switch it with
// `use_sliding_window` and keep the first `max_window_layers` layers full: only the uniform
// cases (every layer windowed, or none) are modelled; a mixed one is refused with the reason.
std::int64_t hf_sliding_window(object_reader& r, int n_layers) {
  const json::value* sw = r.find("sliding_window");
  bool use = true;
  if (const json::value* u = r.find("use_sliding_window"); u && !u->is_null()) {
    if (!u->is_bool())
      throw input_error(r.file(), "use_sliding_window",
                        std::string("expected true or false, got ") + json_type_name(*u));
    use = u->as_bool();
  }
  if (!sw || sw->is_null()) return 0;
  const std::int64_t w = r.integer(*sw, "sliding_window", 1, std::int64_t{1} << 40);
  if (!use) return 0;
  if (const json::value* mw = r.find("max_window_layers"); mw && !mw->is_null()) {
    const std::int64_t full = r.integer(*mw, "max_window_layers", 0, std::int64_t{1} << 40);
    if (full >= n_layers) return 0;  // every layer below max_window_layers attends in full
    if (full > 0)
      throw input_error(r.file(), "max_window_layers",
                        "layers 0-" + std::to_string(full - 1) + " attend in full and the other " +
                            std::to_string(n_layers - full) +
                            " through the sliding window: per-layer windows are not modelled (set max_window_layers "
                            "to 0 to window every layer, or use_sliding_window to false)");
  }
  return w;
}

// HuggingFace config.json: only the keys modsim needs are read; others are ignored (such
// files carry many keys modsim has no use for), but the ones read are type- and range-checked.
model_spec parse_hf_model(object_reader& r) {
  model_spec m;
  m.source_file = r.file();
  m.name = hf_name(r);
  m.d_model = r.get_int("hidden_size", 1, 1 << 24);
  m.n_layers = r.get_int("num_hidden_layers", 1, 100000);
  m.n_heads = r.get_int("num_attention_heads", 1, 1 << 16);
  m.n_kv_heads = r.opt_int("num_key_value_heads", 1, 1 << 16).value_or(m.n_heads);
  const json::value* hd = r.find("head_dim");
  if (hd && !hd->is_null()) {
    m.d_head = static_cast<int>(r.integer(*hd, "head_dim", 1, 1 << 16));
  } else {
    if (m.d_model % m.n_heads != 0)
      throw input_error(r.file(), "num_attention_heads",
                        "hidden_size " + std::to_string(m.d_model) + " is not divisible by num_attention_heads " +
                            std::to_string(m.n_heads));
    m.d_head = m.d_model / m.n_heads;
  }
  m.d_ff = r.get_int("intermediate_size", 1, 1 << 26);
  m.vocab_size = r.get_int("vocab_size", 1, 1 << 26);
  // Absent: untied, the default of the Llama, Mistral, Mixtral, Qwen2 and Phi configurations.
  m.tie_embeddings = r.opt_bool("tie_word_embeddings").value_or(false);
  m.mlp = hf_mlp(r.opt_string("hidden_act").value_or("silu"), r.file(), "hidden_act", true);
  m.sliding_window = hf_sliding_window(r, m.n_layers);
  const json::value* experts = r.find("num_local_experts");
  if (experts && !experts->is_null()) {
    moe_spec moe;
    moe.variant = moe_variant::moe;
    moe.experts = static_cast<int>(r.integer(*experts, "num_local_experts", 1, 1 << 16));
    moe.top_k = r.opt_int("num_experts_per_tok", 1, moe.experts).value_or(1);
    m.moe = moe;
  }
  return m;
}

// A GPT-2 config.json (recognised by `n_embd`): n_embd, n_layer, n_head, n_inner (null or
// absent: 4·n_embd), vocab_size, activation_function (gelu*), n_positions (checked, not
// used), tie_word_embeddings (absent: tied, as GPT-2 is). Multi-head attention, a gelu MLP; the
// learned position embeddings and the biases are not modelled, as for other HF configs.
model_spec parse_gpt2_model(object_reader& r) {
  model_spec m;
  m.source_file = r.file();
  m.name = hf_name(r);
  m.d_model = r.get_int("n_embd", 1, 1 << 24);
  m.n_layers = r.get_int("n_layer", 1, 100000);
  m.n_heads = r.get_int("n_head", 1, 1 << 16);
  m.n_kv_heads = m.n_heads;
  if (m.d_model % m.n_heads != 0)
    throw input_error(
        r.file(), "n_head",
        "n_embd " + std::to_string(m.d_model) + " is not divisible by n_head " + std::to_string(m.n_heads));
  m.d_head = m.d_model / m.n_heads;
  const json::value* inner = r.find("n_inner");
  m.d_ff = inner && !inner->is_null() ? static_cast<int>(r.integer(*inner, "n_inner", 1, 1 << 26))
                                      : static_cast<int>(std::min<std::int64_t>(4 * std::int64_t{m.d_model}, 1 << 26));
  m.vocab_size = r.get_int("vocab_size", 1, 1 << 26);
  (void)r.opt_int("n_positions", 1, 1 << 30);
  m.tie_embeddings = r.opt_bool("tie_word_embeddings").value_or(true);
  m.mlp = hf_mlp(r.opt_string("activation_function").value_or("gelu_new"), r.file(), "activation_function", false);
  return m;
}

dtype_rate parse_rates(object_reader& r) {
  dtype_rate out;
  out.fp32 = r.get_positive("fp32");
  out.bf16 = r.get_positive("bf16");
  out.fp16 = r.opt_number("fp16").value_or(out.bf16);
  if (out.fp16 <= 0) throw input_error(r.file(), r.key_path("fp16"), "must be > 0");
  r.finish();
  return out;
}

link_spec parse_link(object_reader& r) {
  link_spec l;
  l.name = r.get_string("name");
  l.bytes_s = r.get_positive("bytes_s");
  l.latency_s = r.get_non_negative("latency_s", 0.0);
  r.finish();
  return l;
}

collective_fit parse_collective_fit(object_reader& r) {
  collective_fit f;
  f.collective = r.get_string("collective");
  if (!find_collective(f.collective))
    throw input_error(r.file(), r.key_path("collective"),
                      "unknown collective '" + f.collective + "' (expected " + collective_names() + ")");
  f.collective = to_string(*find_collective(f.collective));
  f.link = r.get_string("link");
  if (!find_link_class(f.link))
    throw input_error(r.file(), r.key_path("link"),
                      "unknown link '" + f.link + "' (expected intra_node or inter_node)");
  f.gpus = r.get_int("gpus", 2, 1 << 24);
  f.alpha_s = r.get_number("alpha_s", 0.0);
  f.bus_bytes_s = r.get_positive("bus_bytes_s");
  // The saturating bus bandwidth: all three keys or none.
  const json::value* ramp_bw = r.find("ramp_bus_bytes_s");
  const json::value* ramp_from = r.find("ramp_from_bytes");
  const json::value* ramp_to = r.find("ramp_to_bytes");
  if (ramp_bw || ramp_from || ramp_to) {
    if (!ramp_bw || !ramp_from || !ramp_to)
      throw input_error(r.file(),
                        r.key_path(ramp_bw ? (ramp_from ? "ramp_to_bytes" : "ramp_from_bytes") : "ramp_bus_bytes_s"),
                        "absent: a ramp needs ramp_bus_bytes_s, ramp_from_bytes and ramp_to_bytes");
    f.ramp_bus_bytes_s = r.get_positive("ramp_bus_bytes_s");
    f.ramp_from_bytes = r.integer(*ramp_from, "ramp_from_bytes", 1, std::numeric_limits<std::int64_t>::max());
    f.ramp_to_bytes = r.integer(*ramp_to, "ramp_to_bytes", 1, std::numeric_limits<std::int64_t>::max());
    if (f.ramp_to_bytes <= f.ramp_from_bytes)
      throw input_error(r.file(), r.key_path("ramp_to_bytes"),
                        "must be above ramp_from_bytes (" + std::to_string(f.ramp_from_bytes) + ")");
  }
  f.points = r.get_int("points", 2, 1 << 30);
  const json::value& lo = r.require("min_bytes");
  f.min_bytes = r.integer(lo, "min_bytes", 0, std::numeric_limits<std::int64_t>::max());
  const json::value& hi = r.require("max_bytes");
  f.max_bytes = r.integer(hi, "max_bytes", f.min_bytes, std::numeric_limits<std::int64_t>::max());
  f.median_abs_pct_error = r.get_non_negative("median_abs_pct_error", 0.0);
  for (auto [key, field] : {std::pair{"below_1mib_median_abs_pct_error", &f.below_1mib_median_abs_pct_error},
                            std::pair{"below_1mib_max_abs_pct_error", &f.below_1mib_max_abs_pct_error},
                            std::pair{"from_1mib_median_abs_pct_error", &f.from_1mib_median_abs_pct_error}}) {
    if (r.find(key)) *field = r.get_non_negative(key, 0.0);
  }
  f.file = r.opt_string("file").value_or("");
  f.floor_source = r.opt_string("floor_source").value_or("fitted");
  if (f.floor_source != "fitted" && f.floor_source != "given")
    throw input_error(r.file(), r.key_path("floor_source"),
                      "'" + f.floor_source + "' is not a floor source (expected fitted or given)");
  r.finish();
  return f;
}

interconnect_spec parse_interconnect(object_reader& r) {
  interconnect_spec ic;
  const std::string& file = r.file();
  ic.gpus_per_node = r.get_int("gpus_per_node", 1, 1 << 20);
  {
    object_reader lr(r.require("intra_node"), file, r.key_path("intra_node"));
    ic.intra_node = parse_link(lr);
  }
  if (const json::value* v = r.find("inter_node")) {
    object_reader lr(*v, file, r.key_path("inter_node"));
    ic.inter_node = parse_link(lr);
  }
  ic.source = r.get_string("source");
  if (const json::value* c = r.find("calibration")) {
    object_reader cr(*c, file, r.key_path("calibration"));
    ic.calibration_source = cr.get_string("source");
    ic.calibration_date = cr.opt_string("date").value_or("");
    const json::array& fits = cr.get_array("fits");
    for (std::size_t i = 0; i < fits.size(); ++i) {
      object_reader fr(fits[i], file, cr.key_path("fits[" + std::to_string(i) + "]"));
      ic.calibration.push_back(parse_collective_fit(fr));
    }
    cr.finish();
  }
  r.finish();
  return ic;
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "", "cannot open file");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw input_error(path, "", "cannot read file");
  return s.str();
}

schedule parse_schedule(std::string_view text, int n_layers, const std::string& file, const std::string& key) {
  schedule s;
  std::string t(text);
  if (t == "none") return s;
  if (t == "all") {
    s.kind = schedule_kind::all;
    return s;
  }
  if (t == "every_other") {
    s.kind = schedule_kind::every_other;
    return s;
  }
  if (t.rfind("every_nth:", 0) == 0) {
    std::string n = t.substr(10);
    char* end = nullptr;
    long v = std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v < 1 || v > 100000)
      throw input_error(file, key, "every_nth:N needs a whole number N >= 1, got '" + n + "'");
    s.kind = schedule_kind::every_nth;
    s.n = static_cast<int>(v);
    return s;
  }
  // A comma-separated list of layer indices.
  s.kind = schedule_kind::list;
  std::stringstream in(t);
  std::string item;
  bool any = false;
  while (std::getline(in, item, ',')) {
    any = true;
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0')
      throw input_error(
          file, key,
          "unknown schedule '" + t + "' (expected none, all, every_other, every_nth:N or a list of layer indices)");
    if (v < 0 || v >= n_layers)
      throw input_error(file, key,
                        "layer index " + std::to_string(v) + " out of range [0, " + std::to_string(n_layers - 1) + "]");
    s.layers.push_back(static_cast<int>(v));
  }
  if (!any) throw input_error(file, key, "empty schedule (use \"none\" for a dense model)");
  std::sort(s.layers.begin(), s.layers.end());
  if (std::adjacent_find(s.layers.begin(), s.layers.end()) != s.layers.end())
    throw input_error(file, key, "a layer index appears twice");
  return s;
}

run_mode parse_run_mode(std::string_view text, const std::string& file, const std::string& key) {
  if (text == "forward") return run_mode::forward;
  if (text == "train") return run_mode::train;
  if (text == "decode") return run_mode::decode;
  throw input_error(file, key, "unknown mode '" + std::string(text) + "' (expected forward, train or decode)");
}

recompute_mode parse_recompute_mode(std::string_view text, const std::string& file, const std::string& key) {
  if (text == "none") return recompute_mode::none;
  if (text == "selective") return recompute_mode::selective;
  if (text == "full") return recompute_mode::full;
  throw input_error(file, key, "unknown recompute '" + std::string(text) + "' (expected none, selective or full)");
}

dtype parse_dtype(std::string_view text, const std::string& file, const std::string& key) {
  if (auto t = find_dtype(text)) return *t;
  throw input_error(file, key, "unknown dtype '" + std::string(text) + "' (expected fp32, bf16 or fp16)");
}

void validate_model(const model_spec& m, const std::string& file) {
  if (m.n_heads % m.n_kv_heads != 0)
    throw input_error(
        file, "n_kv_heads",
        "n_heads " + std::to_string(m.n_heads) + " is not a multiple of n_kv_heads " + std::to_string(m.n_kv_heads));
  if (m.routing) {
    const routing_spec& r = *m.routing;
    if (!(r.capacity > 0 && r.capacity <= 1))
      throw input_error(file, "routing.capacity", "must be in (0, 1], got " + fmt_num(r.capacity));
    if (r.sched.kind == schedule_kind::every_nth && r.sched.n > m.n_layers)
      throw input_error(file, "routing.schedule",
                        "every_nth:" + std::to_string(r.sched.n) + " routes no layer of a " +
                            std::to_string(m.n_layers) + "-layer model");
    for (int l : r.sched.layers)
      if (l < 0 || l >= m.n_layers)
        throw input_error(
            file, "routing.schedule",
            "layer index " + std::to_string(l) + " out of range [0, " + std::to_string(m.n_layers - 1) + "]");
  }
  if (m.moe) {
    const moe_spec& mo = *m.moe;
    if (mo.top_k > mo.experts)
      throw input_error(file, "mode.top_k",
                        "top_k " + std::to_string(mo.top_k) + " exceeds experts " + std::to_string(mo.experts));
    if (mo.variant == moe_variant::integrated && mo.noop_experts < 1)
      throw input_error(file, "mode.noop_experts", "the integrated variant needs at least one no-op expert");
    if (mo.variant != moe_variant::integrated && mo.noop_experts > 0)
      throw input_error(file, "mode.noop_experts",
                        std::string("no-op experts belong to the integrated variant, not ") + to_string(mo.variant));
    if (mo.variant == moe_variant::staged && !m.routing)
      throw input_error(file, "mode.variant",
                        "the staged variant routes with MoD: it needs a routing block with a schedule");
  }
}

model_spec parse_model(std::string_view json_text, const std::string& file) {
  json::value v = parse_json(json_text, file);
  object_reader r(v, file, "");
  model_spec m = r.has("hidden_size") ? parse_hf_model(r)
                 : r.has("n_embd")    ? parse_gpt2_model(r)
                                      : parse_modsim_model(r);
  validate_model(m, file);
  return m;
}

model_spec load_model(const std::string& path) { return parse_model(read_text_file(path), path); }

hardware_spec parse_hardware(std::string_view json_text, const std::string& file) {
  json::value v = parse_json(json_text, file);
  object_reader r(v, file, "");
  hardware_spec h;
  h.source_file = file;
  h.name = r.get_string("name");
  const std::string kind = r.get_string("kind");
  if (kind == "gpu")
    h.kind = hardware_kind::gpu;
  else if (kind == "cpu")
    h.kind = hardware_kind::cpu;
  else
    throw input_error(file, "kind", "unknown kind '" + kind + "' (expected gpu or cpu)");
  h.source = r.get_string("source");
  {
    object_reader pr(r.require("peak_matmul_flops"), file, "peak_matmul_flops");
    h.peak_matmul_flops = parse_rates(pr);
  }
  {
    object_reader pr(r.require("peak_vector_flops"), file, "peak_vector_flops");
    h.peak_vector_flops = parse_rates(pr);
  }
  h.memory_bandwidth_bytes_s = r.get_positive("memory_bandwidth_bytes_s");
  h.memory_bytes = r.get_positive("memory_bytes");
  h.l2_bytes = r.get_positive("l2_bytes");
  h.sm_count = r.get_int("sm_count", 1, 1 << 20);
  h.kernel_launch_s = r.get_non_negative("kernel_launch_s", 0.0);
  h.host_enqueue_s = r.get_non_negative("host_enqueue_s", 0.0);
  h.interconnect_bytes_s = r.get_non_negative("interconnect_bytes_s", 0.0);
  if (const auto g = r.opt_string("gemm_tiles")) {
    h.gemm_tiles = parse_gemm_tiling(*g, file, "gemm_tiles");
    h.roofline_gemm_tiles = h.gemm_tiles;
  } else {
    h.roofline_gemm_tiles = h.kind == hardware_kind::gpu ? gemm_tiling::chosen : gemm_tiling::fixed128;
  }
  if (const json::value* ic = r.find("interconnect")) {
    object_reader ir(*ic, file, "interconnect");
    h.interconnect = parse_interconnect(ir);
  }
  r.opt_string("notes");
  if (const json::value* c = r.find("calibration")) {
    if (!c->is_object())
      throw input_error(file, "calibration", std::string("expected an object, got ") + json_type_name(*c));
    h.calibration_json = json::serialize(*c);
  }
  r.finish();
  return h;
}

hardware_spec load_hardware(const std::string& path) { return parse_hardware(read_text_file(path), path); }

workload load_workload(const std::string& path, workload w) {
  std::string text = read_text_file(path);
  json::value v = parse_json(text, path);
  object_reader r(v, path, "");
  if (auto b = r.opt_int("batch", 1, 1 << 24)) w.batch = *b;
  if (auto s = r.opt_int("seq_len", 1, 1 << 26)) w.seq_len = *s;
  if (auto m = r.opt_string("mode")) w.run = parse_run_mode(*m, path, "mode");
  if (auto d = r.opt_string("dtype")) w.type = parse_dtype(*d, path, "dtype");
  if (auto c = r.opt_string("recompute")) w.recompute = parse_recompute_mode(*c, path, "recompute");
  r.opt_string("name");
  r.opt_string("notes");
  r.finish();
  return w;
}

std::filesystem::path configs_root(const std::filesystem::path& program_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const char* env = std::getenv("MODSIM_CONFIGS");
  if (env && *env && fs::is_directory(env, ec)) return fs::path(env);
  const fs::path source(MODSIM_CONFIG_DIR);
  if (fs::is_directory(source, ec)) return source;
  if (!program_dir.empty()) {
    fs::path dir = program_dir;
    for (int up = 0; up <= 4; ++up, dir = dir.parent_path()) {
      if (fs::is_directory(dir / "configs" / "models", ec)) return dir / "configs";
      if (dir == dir.parent_path()) break;
    }
  }
  return source;
}

namespace {

// The bare names of <root>/<folder>/*.json, sorted, comma-separated ("" when none); with_folder:
// as configs/<folder>/<file>.
std::string names_in(const std::filesystem::path& root, const std::string& folder, bool with_folder) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(root / folder, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".json")
      names.push_back(with_folder ? "configs/" + folder + "/" + it->path().filename().string()
                                  : it->path().stem().string());
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string resolve_config(const std::string& name, const char* kind, const std::filesystem::path& program_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(name, ec) || name.find('/') != std::string::npos || name.ends_with(".json")) return name;
  const fs::path root = configs_root(program_dir);
  const fs::path candidate = root / kind / (name + ".json");
  if (fs::exists(candidate, ec)) return candidate.string();
  // A bare name that is neither a file nor a shipped config: say which names are shipped.
  const std::string k = kind;
  const std::string what = k == "models" ? "model" : k == "hardware" ? "hardware" : k == "grids" ? "grid" : k;
  std::string reason = "no such file, and no shipped " + what + " of that name";
  if (const std::string shipped = names_in(root, k, false); !shipped.empty()) reason += "; shipped: " + shipped;
  if (k == "models")
    if (const std::string hf = names_in(root, "hf", true); !hf.empty())
      reason += "; HuggingFace config.json files are given by path, e.g. " + hf;
  throw input_error(name, "", reason);
}

}  // namespace modsim::sim
