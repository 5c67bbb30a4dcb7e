// The command line's one list parser (cli/common.hpp comma_list), worked by hand.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/common.hpp"
#include "core/error.hpp"

namespace modsim::cli {
namespace {

TEST(CommaList, ItemsAreTrimmedAndEmptyOnesSkipped) {
  EXPECT_EQ(comma_list("0.125,0.5", "--capacities"), (std::vector<std::string>{"0.125", "0.5"}));
  EXPECT_EQ(comma_list(" 1 ,\t2,,3, ", "--batches"), (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(comma_list("every_nth:4", "--schedules"), (std::vector<std::string>{"every_nth:4"}));
}

TEST(CommaList, AValueWithNoItemIsBadInputNamingTheFlag) {
  for (const std::string text : {"", ",", " , ,\t"}) {
    try {
      comma_list(text, "--contexts");
      ADD_FAILURE() << "'" << text << "' was accepted";
    } catch (const modsim::error& e) {
      EXPECT_EQ(e.kind(), modsim::error_kind::bad_input);
      EXPECT_NE(std::string(e.what()).find("--contexts"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace modsim::cli
