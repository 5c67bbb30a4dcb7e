// The printers every command's output goes through (cli/printer.hpp), on hand-built outputs;
// the expected text is written out by hand.
#include "cli/printer.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.hpp"

namespace modsim::cli {
namespace {

output two_by_two() {
  output o;
  o.head = {"title line"};
  table t;
  t.columns = {"name", "value"};
  t.rows = {{"a|b", number(0.5, "{:.2f}")}, {"long name", number(12.34, "{:.1f}")}};
  t.csv = true;
  o.tables.push_back(t);
  table hidden;
  hidden.columns = {"x"};
  hidden.rows = {{"never shown"}};
  hidden.people = false;
  o.tables.push_back(hidden);
  o.tail = {"note: n"};
  o.json = boost::json::object{{"k", 1}};
  return o;
}

std::string printed(const output& o, output_format f) {
  std::ostringstream out;
  print(o, f, out);
  return out.str();
}

TEST(Printer, TableAlignsFirstColumnLeftAndNumbersRight) {
  EXPECT_EQ(printed(two_by_two(), output_format::table),
            "title line\n"
            "\n"
            "name       value\n"
            "a|b         0.50\n"
            "long name   12.3\n"
            "\n"
            "note: n\n");
}

TEST(Printer, MarkdownEscapesPipesAndAlignsColumns) {
  EXPECT_EQ(printed(two_by_two(), output_format::markdown),
            "title line  \n"
            "\n"
            "| name      | value |\n"
            "| :-------- | ----: |\n"
            "| a\\|b      |  0.50 |\n"
            "| long name |  12.3 |\n"
            "\n"
            "note: n  \n");
}

TEST(Printer, CsvWritesTheMarkedTableAtFullPrecision) {
  output o = two_by_two();
  o.tables[0].rows.push_back({"quote \"x\", y", "1"});
  EXPECT_EQ(printed(o, output_format::csv),
            "name,value\n"
            "a|b,0.5\n"
            "long name,12.34\n"
            "\"quote \"\"x\"\", y\",1\n");
}

TEST(Printer, JsonPrintsTheValueOnOneLineStampedWithTheVersion) {
  const std::string text = printed(two_by_two(), output_format::json);
  ASSERT_EQ(text.find('\n'), text.size() - 1);
  const boost::json::object o = boost::json::parse(text).as_object();
  EXPECT_EQ(o.at("k").as_int64(), 1);
  // The project version CMake gives the build, and a commit (a hash, or "unknown" outside git).
  EXPECT_EQ(o.at("modsim").at("version").as_string(), MODSIM_VERSION);
  EXPECT_FALSE(o.at("modsim").at("commit").as_string().empty());
}

TEST(Printer, JsonLeavesAnArrayAndAnObjectThatNamesItsModsimAlone) {
  output o;
  o.json = boost::json::array{1, 2};
  EXPECT_EQ(printed(o, output_format::json), "[1,2]\n");
  o.json = boost::json::object{{"modsim", "given"}};
  EXPECT_EQ(printed(o, output_format::json), "{\"modsim\":\"given\"}\n");
}

TEST(Printer, WidthCountsCodePointsNotBytes) {
  output o;
  table t;
  t.columns = {"a", "b"};
  t.rows = {{"×", "1"}, {"xx", "22"}};
  o.tables.push_back(t);
  EXPECT_EQ(printed(o, output_format::table), "\na    b\n×    1\nxx  22\n");
}

TEST(Printer, UnknownFormatAndMissingCsvAreBadInput) {
  EXPECT_EQ(parse_format("md"), output_format::markdown);
  try {
    (void)parse_format("yaml");
    FAIL();
  } catch (const error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    EXPECT_NE(std::string(e.what()).find("--format"), std::string::npos);
  }
  output o;
  EXPECT_THROW(printed(o, output_format::csv), error);
}

}  // namespace
}  // namespace modsim::cli
