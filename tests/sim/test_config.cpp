// Configuration parsing: every class of bad input gives one clear line naming the file, the
// key path and the reason; every shipped config loads; HF config.json imports.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>

#include "sim/model/config.hpp"
#include "core/error.hpp"
#include "sim/model/flops.hpp"

using namespace modsim;
using namespace modsim::sim;

namespace {

const std::string k_configs = std::string(MODSIM_SOURCE_DIR) + "/configs";

const char* k_valid_model = R"({
  "name": "t", "d_model": 64, "n_layers": 4, "n_heads": 4, "d_ff": 256, "vocab_size": 100,
  "routing": { "capacity": 0.25, "schedule": "every_other" }
})";

// Parses `text` as a model and returns the error message (fails if it parses).
std::string model_error(const std::string& text) {
  try {
    parse_model(text, "m.json");
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message must be one line: " << msg;
    return msg;
  }
  ADD_FAILURE() << "expected a bad_input error for: " << text;
  return {};
}

std::string with(const std::string& from, const std::string& to) {
  std::string s = k_valid_model;
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

}  // namespace

TEST(Config, ValidModelParsesWithDefaults) {
  model_spec m = parse_model(k_valid_model, "m.json");
  EXPECT_EQ(m.d_model, 64);
  EXPECT_EQ(m.n_kv_heads, 4);  // defaults to n_heads
  EXPECT_EQ(m.d_head, 16);     // 64 / 4
  EXPECT_EQ(m.mlp, mlp_kind::gelu);
  ASSERT_TRUE(m.routing);
  EXPECT_DOUBLE_EQ(m.routing->capacity, 0.25);
  EXPECT_EQ(m.routing->sched.kind, schedule_kind::every_other);
  EXPECT_FALSE(m.moe);
}

TEST(Config, MissingFileNamesTheFile) {
  try {
    load_model("/nonexistent/dir/model.json");
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_EQ(std::string(e.what()), "/nonexistent/dir/model.json: cannot open file");
  }
}

TEST(Config, AShippedNameResolvesToItsFileAndAnUnknownOneIsRefusedWithTheShippedNames) {
  const std::filesystem::path root = configs_root();
  EXPECT_EQ(resolve_config("mod-220m", "models"), (root / "models" / "mod-220m.json").string());
  // Paths are the loader's to open, whether or not they exist.
  EXPECT_EQ(resolve_config("/nonexistent/dir/model.json", "models"), "/nonexistent/dir/model.json");
  EXPECT_EQ(resolve_config("mine.json", "models"), "mine.json");
  try {
    (void)resolve_config("nosuch", "hardware");
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("nosuch: no such file, and no shipped hardware of that name; shipped: ", 0), 0u) << what;
    EXPECT_NE(what.find("h100-sxm"), std::string::npos) << what;
  }
}

TEST(Config, MalformedJsonReportsLineAndColumn) {
  // The stray comma sits on line 3; the parser stops at the closing brace after it.
  std::string msg = model_error("{\n  \"name\": \"t\",\n  \"d_model\": 64,\n}");
  EXPECT_EQ(msg.rfind("m.json: malformed JSON at line 4, column 1:", 0), 0u) << msg;
}

TEST(Config, TruncatedJsonIsMalformed) {
  std::string msg = model_error("{\"name\": \"t\", \"d_model\": 6");
  EXPECT_NE(msg.find("malformed JSON at line 1"), std::string::npos) << msg;
}

TEST(Config, UnknownKeyIsRejectedWithItsPath) {
  EXPECT_EQ(model_error(with("\"d_ff\"", "\"d_fff\": 1, \"d_ff\"")).rfind("m.json: d_fff: unknown key", 0), 0u);
  std::string nested = model_error(with("\"capacity\"", "\"capacty\": 0.5, \"capacity\""));
  EXPECT_EQ(nested.rfind("m.json: routing.capacty: unknown key", 0), 0u) << nested;
}

TEST(Config, AMisspeltRequiredKeyIsNamedWithTheKeyItMeant) {
  // "d_modle" instead of "d_model": the unknown key is the problem, not a missing d_model.
  EXPECT_EQ(model_error(with("\"d_model\"", "\"d_modle\"")), "m.json: d_modle: unknown key (did you mean d_model?)");
  // A misspelt optional key (n_kv_heads) is caught when the object is finished.
  EXPECT_EQ(model_error(with("\"d_ff\"", "\"n_kv_head\": 4, \"d_ff\"")),
            "m.json: n_kv_head: unknown key (did you mean n_kv_heads?)");
  // Another word altogether gets the list of keys.
  const std::string other = model_error(with("\"d_ff\"", "\"colour\": 1, \"d_ff\""));
  EXPECT_EQ(other.rfind("m.json: colour: unknown key (expected one of: ", 0), 0u) << other;
}

TEST(Config, WrongTypeNamesKeyAndTypes) {
  EXPECT_EQ(model_error(with("\"d_model\": 64", "\"d_model\": \"64\"")),
            "m.json: d_model: expected an integer, got a string");
  EXPECT_EQ(model_error(with("\"d_model\": 64", "\"d_model\": 64.5")),
            "m.json: d_model: expected an integer, got 64.5 (not a whole number)");
  EXPECT_EQ(model_error(with("\"capacity\": 0.25", "\"capacity\": \"high\"")),
            "m.json: routing.capacity: expected a number, got a string");
  EXPECT_EQ(model_error(with("\"routing\": {", "\"routing\": 3, \"x\": {")),
            "m.json: routing: expected an object, got a number");
}

TEST(Config, MissingRequiredKey) {
  EXPECT_EQ(model_error(with("\"vocab_size\": 100,", "")), "m.json: vocab_size: missing required key");
}

TEST(Config, OutOfRangeValues) {
  EXPECT_EQ(model_error(with("\"capacity\": 0.25", "\"capacity\": 0")),
            "m.json: routing.capacity: must be in (0, 1], got 0");
  EXPECT_EQ(model_error(with("\"capacity\": 0.25", "\"capacity\": 1.5")),
            "m.json: routing.capacity: must be in (0, 1], got 1.5");
  EXPECT_EQ(model_error(with("\"n_layers\": 4", "\"n_layers\": 0")),
            "m.json: n_layers: value 0 out of range [1, 100000]");
  EXPECT_EQ(model_error(with("\"d_ff\": 256", "\"d_ff\": -4")), "m.json: d_ff: value -4 out of range [1, 67108864]");
}

TEST(Config, InconsistentDimensions) {
  EXPECT_EQ(model_error(with("\"n_heads\": 4", "\"n_heads\": 5")),
            "m.json: n_heads: d_model 64 is not divisible by n_heads 5");
  EXPECT_EQ(model_error(with("\"n_heads\": 4", "\"n_heads\": 4, \"n_kv_heads\": 3")),
            "m.json: n_kv_heads: n_heads 4 is not a multiple of n_kv_heads 3");
  std::string msg = model_error(
      with("\"schedule\": \"every_other\"", "\"schedule\": \"every_other\", \"layer_capacities\": [null, 0.5]"));
  EXPECT_EQ(msg, "m.json: routing.layer_capacities: has 2 entries, n_layers is 4");
  msg = model_error(with("\"schedule\": \"every_other\"",
                         "\"schedule\": \"every_other\", \"layer_capacities\": [0.5, 0.5, null, 0.5]"));
  EXPECT_EQ(msg, "m.json: routing.layer_capacities[0]: layer 0 is not routed by the schedule but has a capacity");
}

TEST(Config, UnknownScheduleAndVariantNames) {
  EXPECT_EQ(model_error(with("\"every_other\"", "\"every_third\"")),
            "m.json: routing.schedule: unknown schedule 'every_third' (expected none, all, every_other, "
            "every_nth:N or a list of layer indices)");
  EXPECT_EQ(model_error(with("\"every_other\"", "\"every_nth:0\"")),
            "m.json: routing.schedule: every_nth:N needs a whole number N >= 1, got '0'");
  EXPECT_EQ(model_error(with("\"every_other\"", "[1, 7]")), "m.json: routing.schedule[1]: value 7 out of range [0, 3]");
  EXPECT_EQ(model_error(with("\"routing\"", "\"mode\": {\"variant\": \"fused\", \"experts\": 4}, \"routing\"")),
            "m.json: mode.variant: unknown variant 'fused' (expected moe, staged or integrated)");
  EXPECT_EQ(model_error(with("\"routing\"", "\"mlp\": \"relu\", \"routing\"")),
            "m.json: mlp: unknown mlp 'relu' (expected gelu or swiglu)");
}

TEST(Config, ModeRules) {
  EXPECT_EQ(model_error(with("\"routing\"", "\"mode\": {\"variant\": \"integrated\", \"experts\": 4}, \"routing\"")),
            "m.json: mode.noop_experts: the integrated variant needs at least one no-op expert");
  EXPECT_EQ(
      model_error(with("\"routing\"", "\"mode\": {\"variant\": \"moe\", \"experts\": 4, \"top_k\": 5}, \"routing\"")),
      "m.json: mode.top_k: top_k 5 exceeds experts 4");
}

TEST(Config, SchedulesResolveToTheRightLayers) {
  auto routed = [](const std::string& sched, int layers) {
    model_spec m;
    m.n_layers = layers;
    m.routing = routing_spec{};
    m.routing->sched = parse_schedule(sched, layers, "", "s");
    std::string out;
    for (const auto& l : plan_layers(m)) out += l.routed ? '1' : '0';
    return out;
  };
  EXPECT_EQ(routed("every_other", 6), "010101");   // odd indices, the paper's default
  EXPECT_EQ(routed("every_nth:3", 7), "0010010");  // index % 3 == 2
  EXPECT_EQ(routed("all", 3), "111");
  EXPECT_EQ(routed("none", 3), "000");
  EXPECT_EQ(routed("4,0", 5), "10001");
}

TEST(Config, PerLayerCapacitiesOverrideTheSingleCapacity) {
  model_spec m =
      parse_model(with("\"schedule\": \"every_other\"", "\"layer_capacities\": [null, 0.5, 0.125, null]"), "m.json");
  auto plan = plan_layers(m);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_FALSE(plan[0].routed);
  EXPECT_TRUE(plan[1].routed);
  EXPECT_DOUBLE_EQ(plan[1].capacity, 0.5);
  EXPECT_TRUE(plan[2].routed);
  EXPECT_DOUBLE_EQ(plan[2].capacity, 0.125);
  EXPECT_FALSE(plan[3].routed);
}

TEST(Config, RoutedTokensIsTheCeilingClampedToTheSequence) {
  EXPECT_EQ(routed_tokens(0.125, 2048), 256);  // the paper's k
  EXPECT_EQ(routed_tokens(0.1, 30), 3);        // 0.1*30 is 3.0000000000000004 in binary
  EXPECT_EQ(routed_tokens(0.3, 10), 3);
  EXPECT_EQ(routed_tokens(0.26, 10), 3);
  EXPECT_EQ(routed_tokens(0.001, 10), 1);  // at least one token
  EXPECT_EQ(routed_tokens(1.0, 7), 7);
}

TEST(Config, HuggingFaceLlamaImports) {
  model_spec m = load_model(k_configs + "/hf/llama-3-8b.json");
  EXPECT_EQ(m.d_model, 4096);
  EXPECT_EQ(m.n_layers, 32);
  EXPECT_EQ(m.n_heads, 32);
  EXPECT_EQ(m.n_kv_heads, 8);
  EXPECT_EQ(m.d_head, 128);
  EXPECT_EQ(m.d_ff, 14336);
  EXPECT_EQ(m.vocab_size, 128256);
  EXPECT_EQ(m.mlp, mlp_kind::swiglu);  // hidden_act silu = gated SiLU MLP
  EXPECT_FALSE(m.routing);
  EXPECT_FALSE(m.moe);
}

TEST(Config, HuggingFaceMixtralImportsAsMoE) {
  model_spec m = load_model(k_configs + "/hf/mixtral-8x7b.json");
  ASSERT_TRUE(m.moe);
  EXPECT_EQ(m.moe->variant, moe_variant::moe);
  EXPECT_EQ(m.moe->experts, 8);
  EXPECT_EQ(m.moe->top_k, 2);
  EXPECT_EQ(m.vocab_size, 32000);
}

// The released models' configs in configs/hf against their published dimensions (hand-copied
// from each model's Hugging Face config.json): every file there is in this table, so a new one
// comes with its own check.
struct published {
  const char* file;
  int d_model, n_heads, n_kv_heads, d_head, d_ff, n_layers, vocab;
  mlp_kind mlp;
};
constexpr published k_published[] = {
    {"smollm-135m.json", 576, 9, 3, 64, 1536, 30, 49152, mlp_kind::swiglu},
    {"qwen2-0.5b.json", 896, 14, 2, 64, 4864, 24, 151936, mlp_kind::swiglu},
    {"qwen2.5-0.5b.json", 896, 14, 2, 64, 4864, 24, 151936, mlp_kind::swiglu},
    {"tinyllama-1.1b-chat.json", 2048, 32, 4, 64, 5632, 22, 32000, mlp_kind::swiglu},
    {"qwen2-1.5b-instruct.json", 1536, 12, 2, 128, 8960, 28, 151936, mlp_kind::swiglu},
    {"phi-2.json", 2560, 32, 32, 80, 10240, 32, 51200, mlp_kind::gelu},
    {"llama-2-7b.json", 4096, 32, 32, 128, 11008, 32, 32000, mlp_kind::swiglu},
    {"mistral-7b-v0.1.json", 4096, 32, 8, 128, 14336, 32, 32000, mlp_kind::swiglu},
    {"llama-3-8b.json", 4096, 32, 8, 128, 14336, 32, 128256, mlp_kind::swiglu},
    {"mixtral-8x7b.json", 4096, 32, 8, 128, 14336, 32, 32000, mlp_kind::swiglu},
    {"llama-2-70b.json", 8192, 64, 8, 128, 28672, 80, 32000, mlp_kind::swiglu},
    {"llama-3-70b.json", 8192, 64, 8, 128, 28672, 80, 128256, mlp_kind::swiglu},
};

TEST(Config, HuggingFaceConfigsOfReleasedModelsHaveTheirPublishedDimensions) {
  int files = 0;
  for (const auto& f : std::filesystem::directory_iterator(k_configs + "/hf")) {
    ++files;
    const std::string name = f.path().filename().string();
    const published* p = nullptr;
    for (const published& q : k_published)
      if (name == q.file) p = &q;
    ASSERT_NE(p, nullptr) << name << " has no row in k_published";
    const model_spec m = load_model(f.path().string());
    EXPECT_EQ(m.d_model, p->d_model) << name;
    EXPECT_EQ(m.n_heads, p->n_heads) << name;
    EXPECT_EQ(m.n_kv_heads, p->n_kv_heads) << name;
    EXPECT_EQ(m.d_head, p->d_head) << name;  // hidden_size / num_attention_heads
    EXPECT_EQ(m.d_ff, p->d_ff) << name;
    EXPECT_EQ(m.n_layers, p->n_layers) << name;
    EXPECT_EQ(m.vocab_size, p->vocab) << name;
    EXPECT_EQ(m.mlp, p->mlp) << name;
  }
  EXPECT_EQ(files, static_cast<int>(std::size(k_published)));
  // Llama-2-70b by hand: d_model 8192, 64 heads of 128, 8 KV heads (GQA), d_ff 28672, 80 layers.
  const model_spec l = load_model(k_configs + "/hf/llama-2-70b.json");
  EXPECT_EQ(l.d_model, 8192);
  EXPECT_EQ(l.n_heads, 64);
  EXPECT_EQ(l.n_kv_heads, 8);
  EXPECT_EQ(l.d_ff, 28672);
  EXPECT_EQ(l.n_layers, 80);
  EXPECT_FALSE(l.moe);
  // MHA: Llama-2-7b has as many KV heads as query heads.
  EXPECT_EQ(load_model(k_configs + "/hf/llama-2-7b.json").n_kv_heads, 32);
}

// The "shapes" of grid file configs/grids/NAME.
boost::json::array grid_shapes(const std::string& name) {
  std::ifstream in(k_configs + "/grids/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return boost::json::parse(text.str()).at("shapes").as_array();
}

// A grid shape (d_model, n_heads, n_kv_heads or MHA, d_ff, mlp) is model `m`'s layer.
void expect_layer_of(const boost::json::object& s, const model_spec& m, const std::string& from) {
  EXPECT_EQ(s.at("d_model").as_int64(), m.d_model) << from;
  EXPECT_EQ(s.at("n_heads").as_int64(), m.n_heads) << from;
  EXPECT_EQ(s.contains("n_kv_heads") ? s.at("n_kv_heads").as_int64() : s.at("n_heads").as_int64(), m.n_kv_heads)
      << from;
  EXPECT_EQ(s.at("d_ff").as_int64(), m.d_ff) << from;
  EXPECT_EQ(std::string(s.at("mlp").as_string()), m.mlp == mlp_kind::swiglu ? "swiglu" : "gelu") << from;
}

// configs/grids/realistic-cpu.json's shapes are layers of released models (its "from"); each one
// whose model has a config in configs/hf is that config's layer, so the grid can be rebuilt
// from the files (configs/grids/README.md lists which).
TEST(Config, TheRealisticCpuGridShapesAreTheLayersOfTheShippedHfConfigs) {
  const std::pair<const char*, const char*> from_file[] = {
      {"SmolLM-135M", "smollm-135m.json"},
      {"Qwen2.5-0.5B", "qwen2.5-0.5b.json"},
      {"TinyLlama-1.1B", "tinyllama-1.1b-chat.json"},
  };
  int matched = 0;
  for (const boost::json::value& v : grid_shapes("realistic-cpu.json")) {
    const boost::json::object& s = v.as_object();
    const std::string from(s.at("from").as_string());
    for (const auto& [model, file] : from_file) {
      if (from.rfind(model, 0) != 0) continue;
      expect_layer_of(s, load_model(k_configs + "/hf/" + file), from);
      ++matched;
    }
  }
  EXPECT_EQ(matched, 3);
}

// configs/grids/realistic-gpu.json and realistic-long-cpu.json name in each shape's "from" the
// configs/hf file its layer is taken from; every shape is that file's layer.
TEST(Config, TheRealisticGridShapesAreTheLayersOfTheConfigsTheyName) {
  for (const auto& [grid, shapes] : {std::pair{"realistic-gpu.json", 6}, std::pair{"realistic-long-cpu.json", 2}}) {
    int matched = 0;
    for (const boost::json::value& v : grid_shapes(grid)) {
      const boost::json::object& s = v.as_object();
      const std::string from(s.at("from").as_string());
      const std::size_t at = from.find("configs/hf/"), end = from.find(".json", at);
      ASSERT_NE(at, std::string::npos) << grid << ": " << from;
      ASSERT_NE(end, std::string::npos) << grid << ": " << from;
      expect_layer_of(s, load_model(k_configs + "/hf/" + from.substr(at + 11, end + 5 - at - 11)), from);
      ++matched;
    }
    EXPECT_EQ(matched, shapes) << grid;
  }
}

// The in-family CPU calibration grids (retired to configs/grids/archive/, which committed
// measurements name) stay in the presets' family: batches, sequence lengths and capacities are
// powers of two, and so are the layer dimensions of calibration-2-cpu.json's shapes
// (calibration-cpu.json's and calibration-3-cpu.json's widths 768 and 3,072 are not; the
// out-of-family grids are scored against them).
TEST(Config, TheInFamilyCalibrationGridsArePowersOfTwo) {
  const auto power_of_two = [](double x) { return x > 0 && std::exp2(std::round(std::log2(x))) == x; };
  for (const char* grid :
       {"archive/calibration-cpu.json", "archive/calibration-2-cpu.json", "archive/calibration-3-cpu.json"}) {
    std::ifstream in(k_configs + "/grids/" + grid);
    std::stringstream text;
    text << in.rdbuf();
    const boost::json::object g = boost::json::parse(text.str()).as_object();
    int checked = 0;
    for (const char* axis : {"batch", "seq_len", "capacity"})
      if (g.contains(axis))
        for (const boost::json::value& v : g.at(axis).as_array()) {
          EXPECT_TRUE(power_of_two(v.to_number<double>())) << grid << " " << axis << " " << v;
          ++checked;
        }
    if (g.contains("shapes"))
      for (const boost::json::value& v : g.at("shapes").as_array())
        for (const char* key : {"d_model", "n_heads", "n_kv_heads", "d_ff"})
          if (v.as_object().contains(key)) {
            EXPECT_TRUE(power_of_two(v.at(key).to_number<double>())) << grid << " " << key;
            ++checked;
          }
    EXPECT_GE(checked, 6) << grid;
  }
}

TEST(Config, HuggingFaceKeysAreTypeChecked) {
  try {
    parse_model(R"({"hidden_size": "4096", "num_hidden_layers": 2})", "config.json");
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()), "config.json: hidden_size: expected an integer, got a string");
  }
}

TEST(Config, EveryShippedConfigLoads) {
  int models = 0, hardware = 0;
  for (const char* dir : {"/models", "/hf"})
    for (const auto& f : std::filesystem::directory_iterator(k_configs + dir)) {
      EXPECT_NO_THROW(load_model(f.path().string())) << f.path();
      ++models;
    }
  for (const auto& f : std::filesystem::directory_iterator(k_configs + "/hardware")) {
    EXPECT_NO_THROW(load_hardware(f.path().string())) << f.path();
    ++hardware;
  }
  for (const auto& f : std::filesystem::directory_iterator(k_configs + "/workloads"))
    EXPECT_NO_THROW(load_workload(f.path().string())) << f.path();
  EXPECT_GE(models, 12);
  EXPECT_GE(hardware, 3);
}

TEST(Config, PaperScaleModelsHaveTheirRouting) {
  model_spec m = load_model(k_configs + "/models/mod-220m.json");
  ASSERT_TRUE(m.routing);
  EXPECT_DOUBLE_EQ(m.routing->capacity, 0.125);
  auto plan = plan_layers(m);
  int routed = 0;
  for (const auto& l : plan) routed += l.routed;
  EXPECT_EQ(routed, 8);  // 16 layers, every other
  EXPECT_FALSE(load_model(k_configs + "/models/dense-220m.json").routing);
}

TEST(Config, HardwareFileChecksItsKeys) {
  const char* hw = R"({"name": "x", "kind": "tpu", "source": "s"})";
  try {
    parse_hardware(hw, "hw.json");
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()), "hw.json: kind: unknown kind 'tpu' (expected gpu or cpu)");
  }
  hardware_spec h = load_hardware(k_configs + "/hardware/h100-sxm.json");
  EXPECT_DOUBLE_EQ(h.peak_matmul_flops.bf16, 989.4e12);
  EXPECT_DOUBLE_EQ(h.memory_bandwidth_bytes_s, 3.35e12);
  EXPECT_EQ(h.sm_count, 132);
}

TEST(Spec, SchedulePresetNamesTheRoutedLayers) {
  EXPECT_EQ(sim::schedule_preset({false, true, false, true}), "every_other");
  EXPECT_EQ(sim::schedule_preset({false, false, true, false, false, true}), "every_nth:3");
  EXPECT_EQ(sim::schedule_preset({true, true}), "all");
  EXPECT_EQ(sim::schedule_preset({false, false}), "none");
  EXPECT_EQ(sim::schedule_preset({true, false, false}), "");
}

namespace modsim::sim {
namespace {

TEST(Config, DefaultDtypeIsBf16OnAGpuAndFp32OnACpu) {
  const std::string dir = std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/";
  EXPECT_EQ(default_dtype(load_hardware(dir + "h100-sxm.json")), dtype::bf16);
  EXPECT_EQ(default_dtype(load_hardware(dir + "h200.json")), dtype::bf16);
  EXPECT_EQ(default_dtype(load_hardware(dir + "cpu.json")), dtype::fp32);
}

}  // namespace
}  // namespace modsim::sim

// tie_word_embeddings (HF) and tie_embeddings (modsim): the LM head's weight is the embedding's,
// counted once. The shipped Qwen2-0.5B: 151,936 · 896 = 136,134,656 parameters fewer than untied;
// absent (Llama-3-8B) untied; not a boolean is refused naming the key.
TEST(Config, TiedEmbeddingsCountTheMatrixOnce) {
  const model_spec qwen = load_model(k_configs + "/hf/qwen2-0.5b.json");
  EXPECT_TRUE(qwen.tie_embeddings);
  model_spec untied = qwen;
  untied.tie_embeddings = false;
  EXPECT_EQ(parameter_count(untied) - parameter_count(qwen), std::int64_t{151936} * 896);
  EXPECT_FALSE(load_model(k_configs + "/hf/llama-3-8b.json").tie_embeddings);
  const model_spec m = parse_model(R"({"name": "t", "d_model": 64, "n_layers": 1, "n_heads": 4, "d_ff": 256,
      "vocab_size": 100, "tie_embeddings": true})",
                                   "t.json");
  EXPECT_TRUE(m.tie_embeddings);
  EXPECT_TRUE(parse_model(model_to_json(m), "round-trip.json").tie_embeddings);
  EXPECT_NE(model_error(R"({"hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
      "intermediate_size": 256, "vocab_size": 100, "tie_word_embeddings": "yes"})")
                .find("m.json: tie_word_embeddings: expected true or false, got a string"),
            std::string::npos);
}

// GPT-2's config.json (huggingface.co/gpt2: n_embd 768, n_layer 12, n_head 12, n_inner null,
// n_positions 1024, vocab_size 50257, gelu_new): 12 heads of 64, d_ff = 4·768 = 3072, gelu.
TEST(Config, HuggingFaceGpt2Imports) {
  const model_spec m = parse_model(R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
      "n_inner": null, "n_positions": 1024, "vocab_size": 50257, "activation_function": "gelu_new",
      "layer_norm_epsilon": 1e-05})",
                                   "config.json");
  EXPECT_EQ(m.name, "gpt2");
  EXPECT_EQ(m.d_model, 768);
  EXPECT_EQ(m.n_layers, 12);
  EXPECT_EQ(m.n_heads, 12);
  EXPECT_EQ(m.n_kv_heads, 12);
  EXPECT_EQ(m.d_head, 64);
  EXPECT_EQ(m.d_ff, 3072);
  EXPECT_EQ(m.vocab_size, 50257);
  EXPECT_EQ(m.mlp, mlp_kind::gelu);
  EXPECT_FALSE(m.routing);
  EXPECT_TRUE(m.tie_embeddings);  // GPT-2 ties its LM head to the embedding (the key absent)
  // n_inner given; a missing key and a non-gelu activation are named.
  EXPECT_EQ(
      parse_model(R"({"n_embd": 64, "n_layer": 2, "n_head": 4, "n_inner": 100, "vocab_size": 10})", "c.json").d_ff,
      100);
  EXPECT_NE(
      model_error(R"({"n_embd": 64, "n_head": 4, "vocab_size": 10})").find("m.json: n_layer: missing required key"),
      std::string::npos);
  EXPECT_NE(model_error(R"({"n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 10, "activation_function": "relu"})")
                .find("m.json: activation_function: unsupported activation 'relu'"),
            std::string::npos);
}

// Exporters that write every number as a float: 32.0 is 32; 32.5 is refused naming file and key.
TEST(Config, IntegerKeysTakeIntegralFloatsAndRefuseFractions) {
  const model_spec m = parse_model(R"({"hidden_size": 4096.0, "num_hidden_layers": 32.0, "num_attention_heads": 32.0,
      "num_key_value_heads": 8.0, "intermediate_size": 14336, "vocab_size": 32000})",
                                   "config.json");
  EXPECT_EQ(m.n_heads, 32);
  EXPECT_EQ(m.n_kv_heads, 8);
  EXPECT_EQ(m.d_head, 128);
  const std::string half = model_error(R"({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32.5,
      "intermediate_size": 14336, "vocab_size": 32000})");
  EXPECT_NE(half.find("m.json: num_attention_heads: expected an integer, got 32.5 (not a whole number)"),
            std::string::npos)
      << half;
}

// sliding_window: Mistral's 4096 is read; null (most configs) and use_sliding_window false
// (Qwen2) mean none; Qwen2's max_window_layers >= n_layers windows no layer, 0 every layer,
// anything between is refused with the reason. A modsim model file keeps it on save.
TEST(Config, SlidingWindowIsReadWhereItApplies) {
  const std::string base =
      R"({"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 128,
          "vocab_size": 100, )";
  EXPECT_EQ(load_model(k_configs + "/hf/mistral-7b-v0.1.json").sliding_window, 4096);
  EXPECT_EQ(load_model(k_configs + "/hf/mixtral-8x7b.json").sliding_window, 0);  // "sliding_window": null
  EXPECT_EQ(parse_model(base + R"("sliding_window": 3})", "c.json").sliding_window, 3);
  EXPECT_EQ(parse_model(base + R"("sliding_window": 3, "use_sliding_window": false})", "c.json").sliding_window, 0);
  EXPECT_EQ(parse_model(base + R"("sliding_window": 3, "use_sliding_window": true, "max_window_layers": 4})", "c.json")
                .sliding_window,
            0);
  EXPECT_EQ(parse_model(base + R"("sliding_window": 3, "use_sliding_window": true, "max_window_layers": 0})", "c.json")
                .sliding_window,
            3);
  EXPECT_NE(model_error(base + R"("sliding_window": 3, "use_sliding_window": true, "max_window_layers": 2})")
                .find("m.json: max_window_layers: layers 0-1 attend in full and the other 2 through the sliding "
                      "window: per-layer windows are not modelled"),
            std::string::npos);
  EXPECT_NE(model_error(base + R"("sliding_window": 0})").find("m.json: sliding_window: value 0 out of range"),
            std::string::npos);
  // The modsim model file: the key, and a save that reads back equal.
  const std::string own = R"({"name": "w", "d_model": 64, "n_layers": 2, "n_heads": 4, "d_ff": 256,
      "vocab_size": 100, "sliding_window": 16})";
  const model_spec m = parse_model(own, "w.json");
  EXPECT_EQ(m.sliding_window, 16);
  EXPECT_EQ(parse_model(model_to_json(m), "back.json").sliding_window, 16);
  EXPECT_EQ(model_to_json(parse_model(k_valid_model, "m.json")).find("sliding_window"), std::string::npos);
}
