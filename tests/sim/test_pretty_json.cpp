// The JSON layout of the calibrated hardware files (sim/common/io.hpp pretty_json), written out by hand.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "sim/common/io.hpp"

namespace modsim::sim {
namespace {

namespace json = boost::json;

TEST(PrettyJson, SmallScalarObjectsOnOneLineTheRestOneMemberPerLine) {
  json::object peak;
  peak["fp32"] = 1e12;
  peak["bf16"] = 2.5;
  json::array list;
  list.emplace_back(1);
  list.emplace_back(2.0);
  json::object root;
  root["name"] = "x";
  root["peak"] = peak;
  root["list"] = list;
  root["e"] = json::object();
  root["a"] = json::array();
  // Five members: not flat. Integral doubles keep a ".0"; an integer stays an integer.
  EXPECT_EQ(pretty_json(root),
            "{\n"
            "  \"name\": \"x\",\n"
            "  \"peak\": { \"fp32\": 1000000000000.0, \"bf16\": 2.5 },\n"
            "  \"list\": [\n"
            "    1,\n"
            "    2.0\n"
            "  ],\n"
            "  \"e\": {},\n"
            "  \"a\": []\n"
            "}");
}

TEST(PrettyJson, DoublesAreTheShortestTextThatReadsBack) {
  json::object o;
  o["a"] = 0.1;
  o["b"] = 0.1 + 0.2;  // 0.30000000000000004: needs 17 digits
  o["c"] = 3.328e11;
  EXPECT_EQ(pretty_json(o), "{ \"a\": 0.1, \"b\": 0.30000000000000004, \"c\": 332800000000.0 }");
}

TEST(PrettyJson, ALongStringBreaksTheLine) {
  json::object o;
  o["note"] = std::string(41, 'n');
  EXPECT_EQ(pretty_json(o), "{\n  \"note\": \"" + std::string(41, 'n') + "\"\n}");
}

}  // namespace
}  // namespace modsim::sim
