// The recipes (docs/architecture.md) for extending modsim name the files a change touches. These tests read
// the recipes and the source tree, so a recipe cannot drift from the code: a new `switch` over
// the ops in a file the recipe does not name fails here, as does a recipe that names a file
// that is not there or grows past its budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "core/op_table.hpp"

namespace {

namespace fs = std::filesystem;
const fs::path root = MODSIM_SOURCE_DIR;

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The paragraph that starts with `opening` (up to the next blank line).
std::string paragraph(const std::string& opening) {
  const std::string readme = read(root / "docs" / "architecture.md");
  const std::size_t at = readme.find("\n" + opening);
  if (at == std::string::npos) return {};
  const std::size_t end = readme.find("\n\n", at + 1);
  return readme.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

// The source files a paragraph names: `dir/file.ext` in backquotes.
std::set<std::string> named_files(const std::string& text) {
  std::set<std::string> out;
  static const std::regex file(R"(`([A-Za-z0-9_./-]+/[A-Za-z0-9_-]+\.(cpp|hpp|cu|cuh))`)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), file); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].str());
  return out;
}

// Whether a source file switches over modsim::op: a case label naming an op, qualified
// (`case op::router:`, `case modsim::op::router:`) or, after `using enum modsim::op`, bare.
bool switches_over_ops(const std::string& text) {
  static const std::regex qualified(R"(case\s+(modsim::)?op::[a-z_]+\s*:)");
  if (std::regex_search(text, qualified)) return true;
  if (text.find("using enum modsim::op;") == std::string::npos && text.find("using enum op;") == std::string::npos)
    return false;
  static const std::regex bare(R"(case\s+([a-z_]+)\s*:)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), bare); it != std::sregex_iterator(); ++it)
    if (modsim::find_op((*it)[1].str())) return true;
  return false;
}

}  // namespace

TEST(Recipes, AddingAnOpNamesEveryOpSwitch) {
  const std::string recipe = paragraph("Adding an op");
  ASSERT_FALSE(recipe.empty()) << "docs/architecture.md has no paragraph starting with 'Adding an op'";
  const std::set<std::string> named = named_files(recipe);
  EXPECT_LE(named.size(), 8u) << "adding an op should touch at most 8 files";
  EXPECT_TRUE(named.contains("core/op_table.hpp"));
  for (const std::string& f : named)
    EXPECT_TRUE(fs::exists(root / f)) << "the recipe names " << f << ", which is not there";

  std::set<std::string> switching;
  for (const char* dir : {"core", "kernels", "sim", "profiler", "analysis", "reports", "cli", "gui"}) {
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
      if (switches_over_ops(read(e.path()))) switching.insert(fs::relative(e.path(), root).generic_string());
    }
  }
  // The detector finds the switches it is meant to find (a check of the check).
  EXPECT_TRUE(switching.contains("sim/model/flops_formulas.cpp"));
  EXPECT_TRUE(switching.contains("kernels/cpu/cpu_backend.cpp"));
  for (const std::string& f : switching)
    EXPECT_TRUE(named.contains(f))
        << f << " switches over the ops, but docs/architecture.md's 'Adding an op' does not name it";
}

TEST(Recipes, TheDetectorTellsOpSwitchesFromOthers) {
  EXPECT_TRUE(switches_over_ops("switch (o) { case op::router: return 1; }"));
  EXPECT_TRUE(switches_over_ops("switch (o) { case modsim::op::lm_head: return 1; }"));
  EXPECT_TRUE(switches_over_ops("using enum modsim::op;\nswitch (o) {\n  case qkv_proj:\n    return 2;\n}"));
  EXPECT_FALSE(switches_over_ops("switch (k) { case kernel_kind::gemm: return 1; }"));
  EXPECT_FALSE(switches_over_ops("using enum modsim::op;\nswitch (t) { case fp32: return 4; }"));
  EXPECT_FALSE(switches_over_ops("if (o == op::router) return 1;"));
}

TEST(Recipes, AddingAServingFigureTouchesAtMostThreeFiles) {
  const std::string recipe = paragraph("Adding a serving figure");
  ASSERT_FALSE(recipe.empty()) << "docs/architecture.md has no paragraph starting with 'Adding a serving figure'";
  const std::set<std::string> named = named_files(recipe);
  EXPECT_LE(named.size(), 3u);
  for (const std::string& f : named)
    EXPECT_TRUE(fs::exists(root / f)) << "the recipe names " << f << ", which is not there";
  // The guard the recipe promises: the field list's file stops the build when a member of the
  // summary has no row.
  ASSERT_TRUE(named.contains("sim/des/serving_fields.cpp"));
  EXPECT_NE(read(root / "sim/des/serving_fields.cpp").find("sizeof(serve_summary) =="), std::string::npos);
}
