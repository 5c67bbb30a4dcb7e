// Two summaries compared (reports/compare.hpp) on hand-built figures whose changes are worked
// out by hand: 10 -> 11 ms is +10 %, past a 5 % threshold, within a 15 % one.
#include "reports/compare.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace modsim::reports {
namespace {

summary_figure fig(const std::string& key, double value, bool higher = false, const std::string& model = "m") {
  return {key, model, value, higher ? "tok/s" : "s", higher};
}

summary make(std::vector<summary_figure> figures) {
  summary s;
  s.schema = summary_schema;
  s.build = {"0.1.0", "abc"};
  s.figures = std::move(figures);
  return s;
}

const figure_change& at(const comparison& c, const std::string& key) {
  for (const figure_change& f : c.figures)
    if (f.key == key) return f;
  throw std::runtime_error("no figure " + key);
}

TEST(Compare, SlowerPastTheThresholdRegressesWithinItIsWorse) {
  const summary base = make({fig("time.forward", 0.010), fig("flops.matmul", 100)});
  const summary now = make({fig("time.forward", 0.011), fig("flops.matmul", 104)});
  const comparison c = compare_summaries(base, now, {});
  EXPECT_NEAR(*at(c, "time.forward").change_pct, 10.0, 1e-9);
  EXPECT_EQ(at(c, "time.forward").verdict, change_verdict::regressed);
  EXPECT_EQ(at(c, "time.forward").threshold_pct, 5.0);
  EXPECT_NEAR(*at(c, "flops.matmul").change_pct, 4.0, 1e-9);
  EXPECT_EQ(at(c, "flops.matmul").verdict, change_verdict::worse);
  EXPECT_EQ(c.count(change_verdict::regressed), 1);

  compare_options o;
  o.max_regression_pct = 3;
  o.thresholds = {{"time.*", 15}, {"time.forward", 1}};  // the first pattern that matches wins
  const comparison d = compare_summaries(base, now, o);
  EXPECT_EQ(at(d, "time.forward").threshold_pct, 15.0);
  EXPECT_EQ(at(d, "time.forward").verdict, change_verdict::worse);
  EXPECT_EQ(at(d, "flops.matmul").verdict, change_verdict::regressed);  // 4 % > 3 %
}

TEST(Compare, HigherIsBetterFiguresRegressWhenTheyFall) {
  const comparison c = compare_summaries(make({fig("serving.throughput_tok_s", 100, true), fig("a", 2)}),
                                         make({fig("serving.throughput_tok_s", 90, true), fig("a", 1)}), {});
  EXPECT_NEAR(*at(c, "serving.throughput_tok_s").change_pct, -10.0, 1e-9);
  EXPECT_EQ(at(c, "serving.throughput_tok_s").verdict, change_verdict::regressed);
  EXPECT_EQ(at(c, "a").verdict, change_verdict::improved);  // lower is better: 2 -> 1
  const comparison up = compare_summaries(make({fig("serving.throughput_tok_s", 100, true)}),
                                          make({fig("serving.throughput_tok_s", 110, true)}), {});
  EXPECT_EQ(at(up, "serving.throughput_tok_s").verdict, change_verdict::improved);
}

TEST(Compare, EqualFiguresAreUnchangedAndOneSidedOnesListed) {
  const comparison c = compare_summaries(make({fig("time.forward", 1), fig("gone", 1)}),
                                         make({fig("time.forward", 1), fig("added", 1)}), {});
  ASSERT_EQ(c.figures.size(), 3u);
  EXPECT_EQ(at(c, "time.forward").verdict, change_verdict::unchanged);
  EXPECT_EQ(at(c, "gone").verdict, change_verdict::base_only);
  EXPECT_FALSE(at(c, "gone").now.has_value());
  EXPECT_EQ(at(c, "added").verdict, change_verdict::new_only);
  EXPECT_FALSE(at(c, "added").base.has_value());
  EXPECT_EQ(c.count(change_verdict::regressed), 0);
}

TEST(Compare, FiguresMatchByModelAndKey) {
  const comparison c =
      compare_summaries(make({fig("time.forward", 1, false, "a"), fig("time.forward", 1, false, "b")}),
                        make({fig("time.forward", 2, false, "b"), fig("time.forward", 1, false, "a")}), {});
  ASSERT_EQ(c.figures.size(), 2u);
  EXPECT_EQ(c.figures[0].model, "a");
  EXPECT_EQ(c.figures[0].verdict, change_verdict::unchanged);
  EXPECT_EQ(c.figures[1].verdict, change_verdict::regressed);
}

TEST(Compare, AFigureRisingFromZeroHasNoPercentAndRegresses) {
  const comparison c = compare_summaries(make({fig("x", 0)}), make({fig("x", 1)}), {});
  EXPECT_FALSE(at(c, "x").change_pct.has_value());
  EXPECT_EQ(at(c, "x").verdict, change_verdict::regressed);
}

TEST(Compare, OnlyKeepsTheFiguresItNamesAndRejectsUnknownOnes) {
  compare_options o;
  o.only = {"time.*"};
  const comparison c =
      compare_summaries(make({fig("time.forward", 1), fig("flops.matmul", 1)}), make({fig("time.forward", 1)}), o);
  ASSERT_EQ(c.figures.size(), 1u);
  o.only = {"tme.forward"};
  EXPECT_THROW(compare_summaries(make({fig("time.forward", 1)}), make({fig("time.forward", 1)}), o), modsim::error);
}

TEST(Compare, GlobsMatchStarsAndQuestionMarks) {
  EXPECT_TRUE(glob_match("time.*", "time.forward"));
  EXPECT_TRUE(glob_match("*", "anything.at.all"));
  EXPECT_TRUE(glob_match("serving.*.p99", "serving.ttft_s.p99"));
  EXPECT_TRUE(glob_match("time.forwar?", "time.forward"));
  EXPECT_FALSE(glob_match("time.*", "flops.matmul"));
  EXPECT_FALSE(glob_match("time.forward", "time.forward_ratio"));
  EXPECT_FALSE(glob_match("serving.*.p99", "serving.ttft_s.p90"));
}

std::string thresholds_error(const std::string& text) {
  try {
    parse_thresholds(text, "t.json", {});
  } catch (const modsim::error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

TEST(Compare, ThresholdsFileNamesKnownKeysWithPercentages) {
  const auto t = parse_thresholds(R"({"time.*": 10, "serving.ttft_s.p99": 25.5})", "t.json", {});
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].first, "time.*");
  EXPECT_EQ(t[1].second, 25.5);
  EXPECT_EQ(thresholds_error(R"({"tim.forward": 10})"),
            "t.json: tim.forward: unknown figure key: matches no key a "
            "report summary holds (see docs/contracts.md \"Report summary\")");
  EXPECT_NE(thresholds_error(R"({"time.*": -1})").find("t.json: time.*: must be >= 0"), std::string::npos);
  EXPECT_NE(thresholds_error(R"({"time.*": "5"})").find("must be a number"), std::string::npos);
  EXPECT_NE(thresholds_error("[5]").find("t.json: must be an object"), std::string::npos);
  EXPECT_NE(thresholds_error("{").find("t.json: not valid JSON"), std::string::npos);
  // A key a summary being compared holds is known even when summary_keys() lacks it.
  EXPECT_EQ(parse_thresholds(R"({"custom.key": 1})", "t.json", {"custom.key"}).size(), 1u);
}

}  // namespace
}  // namespace modsim::reports
