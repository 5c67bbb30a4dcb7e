// The serving figures' one declaration (sim/des/serving_fields.hpp): names, JSON nesting, CSV
// metrics and people's formats, against a summary filled in by hand.
#include "sim/des/serving_fields.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>
#include <string>

namespace modsim::sim::des {
namespace {

serve_summary by_hand() {
  serve_summary s;
  s.requests = 300;
  s.completed = 298;
  s.ttft_s = {0.01234, 0.02, 0.03, 0.015};
  s.kv_block_bytes = 4096;
  s.kv_budget_blocks = 10;
  s.matmul_flops = 123456789012345678;  // beyond a double's 53 bits: machines must read it whole
  s.decode_routed_fraction = 0.125;
  s.events = 77;
  return s;
}

const serve_field& field(const char* key) {
  for (const serve_field& f : serve_fields())
    if (std::string(f.key) == key) return f;
  throw std::runtime_error(std::string("no field ") + key);
}

TEST(ServingFields, NamesAreUniqueAndEveryFieldHasOneValue) {
  std::set<std::string> keys, csv, labels;
  for (const serve_field& f : serve_fields()) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    EXPECT_TRUE(csv.insert(csv_key(f)).second) << f.key;
    EXPECT_TRUE(labels.insert(f.label).second) << f.label;
    EXPECT_NE(f.count == nullptr, f.real == nullptr) << f.key;
    if (f.compare) {
      EXPECT_NE(f.format, nullptr) << f.key << ": compared but not shown";
    }
  }
}

TEST(ServingFields, JsonNestsByPathAndKeepsCountsWhole) {
  const boost::json::object o = serve_json(by_hand());
  EXPECT_EQ(o.at("requests").as_int64(), 300);
  EXPECT_DOUBLE_EQ(o.at("ttft_s").at("p50").as_double(), 0.01234);
  EXPECT_DOUBLE_EQ(o.at("ttft_s").at("mean").as_double(), 0.015);
  EXPECT_EQ(o.at("kv_budget_bytes").as_int64(), 40960);  // 10 blocks of 4,096 bytes
  EXPECT_EQ(o.at("matmul_flops").as_int64(), 123456789012345678);
  EXPECT_EQ(o.at("events").as_int64(), 77);
  // The percentiles are one object each, in the order p50, p90, p99, mean.
  const boost::json::object& t = o.at("tpot_s").as_object();
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.begin()->key(), "p50");
}

TEST(ServingFields, CsvAndPeopleTexts) {
  const serve_summary s = by_hand();
  EXPECT_EQ(csv_key(field("ttft_s.p50")), "ttft_s_p50");
  EXPECT_EQ(machine_text(field("matmul_flops"), s), "123456789012345678");
  EXPECT_EQ(machine_text(field("ttft_s.p50"), s), "0.01234");
  EXPECT_EQ(people_text(field("ttft_s.p50"), s), "12.34 ms");
  EXPECT_EQ(people_text(field("decode_routed_fraction"), s), "12.5%");
  EXPECT_EQ(people_text(field("kv_budget_bytes"), s), "0.000 GB");
  EXPECT_EQ(people_text(field("events"), s), "");  // machines only
  // JSON-only fields stay out of the CSV.
  EXPECT_FALSE(field("events").csv);
  EXPECT_TRUE(field("gpu_busy_s").csv);
}

}  // namespace
}  // namespace modsim::sim::des
