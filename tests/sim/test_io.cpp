// The shared file and text helpers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "sim/common/io.hpp"

using namespace modsim::sim;

TEST(Io, CsvFieldsAreQuotedOnlyWhenNeeded) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
}

TEST(Io, AtomicWriteReplacesTheFileWhole) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "modsim_io_atomic.txt";
  std::ofstream(path) << "old contents";
  write_file_atomically(path.string(), "new");
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "new");
  // No temporary file is left beside it.
  for (const auto& e : std::filesystem::directory_iterator(path.parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".modsim_io_atomic.txt.tmp"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(Io, AtomicWriteIntoAMissingFolderFailsAndNamesTheFile) {
  const std::string path = ::testing::TempDir() + "/no/such/dir/x.csv";
  try {
    write_file_atomically(path, "x");
    FAIL();
  } catch (const modsim::error& e) {
    EXPECT_EQ(e.kind(), modsim::error_kind::runtime);
    EXPECT_EQ(std::string(e.what()).rfind(path + ": cannot write", 0), 0u) << e.what();
  }
}
