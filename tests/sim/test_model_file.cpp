// Writing model files (sim/model/config.hpp model_to_json): the layout written out by hand, and the
// parser reading it back.
#include <gtest/gtest.h>

#include "sim/model/config.hpp"

using namespace modsim::sim;

namespace {

model_spec base() {
  model_spec m;
  m.name = "mine";
  m.notes = "a \"quoted\" note";
  m.d_model = 1024;
  m.n_layers = 4;
  m.n_heads = 16;
  m.n_kv_heads = 16;
  m.d_head = 64;
  m.d_ff = 4096;
  m.vocab_size = 32000;
  return m;
}

}  // namespace

TEST(ModelFile, UniformScheduleIsAPresetOneMemberPerLine) {
  model_spec m = base();
  routing_spec r;
  r.capacity = 0.25;
  r.sched.kind = schedule_kind::every_other;
  r.predictor_hidden = 256;
  m.routing = r;
  EXPECT_EQ(model_to_json(m),
            "{\n"
            "  \"name\": \"mine\",\n"
            "  \"notes\": \"a \\\"quoted\\\" note\",\n"
            "  \"d_model\": 1024,\n"
            "  \"n_layers\": 4,\n"
            "  \"n_heads\": 16,\n"
            "  \"n_kv_heads\": 16,\n"
            "  \"d_ff\": 4096,\n"
            "  \"vocab_size\": 32000,\n"
            "  \"mlp\": \"gelu\",\n"
            "  \"routing\": {\n"
            "    \"capacity\": 0.25,\n"
            "    \"schedule\": \"every_other\",\n"
            "    \"inference\": \"predictor\",\n"
            "    \"predictor_hidden\": 256\n"
            "  }\n"
            "}\n");
}

TEST(ModelFile, MixedCapacitiesAreOneLineOfLayerCapacities) {
  model_spec m = base();
  m.notes.clear();
  routing_spec r;
  r.capacity = 0.25;
  r.layer_capacities = {std::nullopt, 0.25, std::nullopt, 0.5};
  r.sched = schedule{schedule_kind::list, 0, {1, 3}};
  m.routing = r;
  moe_spec mo;
  mo.variant = moe_variant::staged;
  mo.experts = 8;
  mo.capacity_factor = 1.25;
  m.moe = mo;
  const std::string text = model_to_json(m);
  EXPECT_NE(text.find("    \"layer_capacities\": [null, 0.25, null, 0.5],\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  \"mode\": {\n    \"variant\": \"staged\",\n    \"experts\": 8,\n    \"top_k\": 1,\n"
                      "    \"capacity_factor\": 1.25\n  }\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("notes"), std::string::npos);
  const model_spec back = parse_model(text, "back.json");
  const auto a = plan_layers(m), b = plan_layers(back);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].routed, b[i].routed) << i;
    EXPECT_DOUBLE_EQ(a[i].capacity, b[i].capacity) << i;
  }
  ASSERT_TRUE(back.moe.has_value());
  EXPECT_EQ(back.moe->variant, moe_variant::staged);
}

TEST(ModelFile, NotesRoundTrip) {
  const model_spec back = parse_model(model_to_json(base()), "back.json");
  EXPECT_EQ(back.notes, "a \"quoted\" note");
  EXPECT_EQ(back.d_model, 1024);
  EXPECT_FALSE(back.routing.has_value());
}
