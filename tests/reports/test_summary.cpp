// summary.json (reports/summary.hpp): SHA-256 against FIPS 180-4's published vectors, the
// figures equal to the analysis results the report prints, the same bytes for the same inputs,
// and a clear bad-input error for anything that is not a summary.
#include "reports/summary.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "sim/model/config.hpp"
#include "analysis/analysis.hpp"

namespace modsim::reports {
namespace {

std::string config(const std::string& rel) { return std::string(MODSIM_SOURCE_DIR) + "/configs/" + rel; }

TEST(Sha256, MatchesThePublishedTestVectors) {
  // FIPS 180-4 examples (one block, two blocks) and the empty message.
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

report_input small_input() {
  report_input in;
  in.models.push_back(sim::load_model(config("models/mod-60m.json")));
  in.hardware = sim::load_hardware(config("hardware/h100-sxm.json"));
  in.load.seq_len = 512;
  in.serving = false;
  in.sampling = false;
  in.threads = 2;
  in.command_line = "test";
  in.build = {"9.9.9", "0123456789"};
  in.inputs = hash_inputs({config("models/mod-60m.json"), config("hardware/h100-sxm.json")});
  return in;
}

const report_data& data() {
  static const report_data d = build_report(small_input());
  return d;
}

const summary_figure* find(const summary& s, const std::string& key) {
  for (const summary_figure& f : s.figures)
    if (f.key == key) return &f;
  return nullptr;
}

TEST(Summary, FiguresAreTheAnalysisResults) {
  const summary s = summary_of(data());
  const sim::model_spec m = sim::load_model(config("models/mod-60m.json"));
  sim::workload w;
  w.seq_len = 512;
  // The analysis every face shows (the command line's predict and flops, the report, the explorer).
  const analysis::configuration c{m, w, sim::load_hardware(config("hardware/h100-sxm.json")), {}, {}};
  const analysis::analysis_result a = analysis::analyze(c, analysis::scenario{});
  const sim::flops_report& fl = a.flops;
  const sim::prediction& p = *a.prediction;
  ASSERT_NE(find(s, "flops.matmul"), nullptr);
  EXPECT_EQ(find(s, "flops.matmul")->value, static_cast<double>(fl.totals.matmul_flops));
  EXPECT_EQ(find(s, "flops.matmul")->model, "mod-60m");
  EXPECT_EQ(find(s, "flops.matmul")->unit, "FLOP");
  EXPECT_DOUBLE_EQ(find(s, "flops.matmul_ratio")->value,
                   static_cast<double>(fl.totals.matmul_flops) / static_cast<double>(fl.totals.dense_matmul_flops));
  ASSERT_NE(find(s, "time.forward"), nullptr);
  EXPECT_DOUBLE_EQ(find(s, "time.forward")->value, p.model.total_s);
  EXPECT_DOUBLE_EQ(find(s, "time.forward_ratio")->value, p.model.total_s / p.dense.total_s);
  EXPECT_FALSE(find(s, "time.forward")->higher_is_better);
  // Parts the report left out have no figures (no serving, no sampling).
  EXPECT_EQ(find(s, "serving.ttft_s.p50"), nullptr);
  EXPECT_EQ(find(s, "sampling.sync.best_speedup"), nullptr);
  // Every key written is one the thresholds may name.
  const std::vector<std::string> keys = summary_keys();
  for (const summary_figure& f : s.figures) EXPECT_NE(std::find(keys.begin(), keys.end(), f.key), keys.end()) << f.key;
}

TEST(Summary, SameInputsGiveTheSameBytesWithNoDate) {
  const std::string once = summary_text(summary_of(data()));
  const std::string twice = summary_text(summary_of(build_report(small_input())));
  EXPECT_EQ(once, twice);
  EXPECT_EQ(once.find(data().generated), std::string::npos);
  EXPECT_NE(once.find("\"schema\": \"modsim-report-summary/1\""), std::string::npos);
  EXPECT_NE(once.find("\"modsim\": {\"version\": \"9.9.9\", \"commit\": \"0123456789\"}"), std::string::npos);
}

TEST(Summary, RoundTripsThroughItsText) {
  const summary s = summary_of(data());
  const summary r = parse_summary(summary_text(s), "summary.json");
  EXPECT_EQ(r.schema, summary_schema);
  EXPECT_EQ(r.build.commit, "0123456789");
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].sha256.size(), 64u);
  ASSERT_EQ(r.figures.size(), s.figures.size());
  for (std::size_t i = 0; i < s.figures.size(); ++i) {
    EXPECT_EQ(r.figures[i].key, s.figures[i].key);
    EXPECT_DOUBLE_EQ(r.figures[i].value, s.figures[i].value) << s.figures[i].key;  // JSON text: to an ulp
    EXPECT_EQ(r.figures[i].higher_is_better, s.figures[i].higher_is_better);
  }
}

TEST(Summary, HashesEachInputFileOnce) {
  const std::string path = (std::filesystem::temp_directory_path() / "modsim-summary-abc.txt").string();
  std::ofstream(path, std::ios::binary) << "abc";
  const std::vector<input_file> in = hash_inputs({path, path});
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::filesystem::remove(path);
  EXPECT_THROW(hash_inputs({path}), modsim::error);
}

std::string bad_input_message(const std::string& text) {
  try {
    parse_summary(text, "s.json");
  } catch (const modsim::error& e) {
    EXPECT_EQ(e.kind(), error_kind::bad_input);
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

TEST(Summary, RejectsWhatIsNotASummaryNamingFileAndKey) {
  const std::string ok_head = R"({"schema": "modsim-report-summary/1", "modsim": {"version": "1", "commit": "c"}, )";
  EXPECT_NE(bad_input_message("{\"schema\": \"modsim-report").find("s.json: not valid JSON"), std::string::npos);
  EXPECT_NE(bad_input_message("[1]").find("s.json: must be an object"), std::string::npos);
  EXPECT_NE(bad_input_message(R"({"schema": "modsim-report-summary/2"})")
                .find("s.json: schema: 'modsim-report-summary/2' cannot be compared"),
            std::string::npos);
  EXPECT_NE(bad_input_message(R"({"schema": "other/1"})").find("not a modsim report summary"), std::string::npos);
  EXPECT_NE(bad_input_message(ok_head + R"("inputs": []})").find("s.json: figures: missing"), std::string::npos);
  EXPECT_NE(bad_input_message(
                ok_head +
                R"("inputs": [], "figures": [{"key": "k", "model": "m", "value": 1, "unit": "s", "better": "up"}]})")
                .find("s.json: figures[0].better"),
            std::string::npos);
  EXPECT_NE(
      bad_input_message(
          ok_head +
          R"("inputs": [], "figures": [{"key": "k", "model": "m", "value": "1", "unit": "s", "better": "lower"}]})")
          .find("s.json: figures[0].value: must be a number"),
      std::string::npos);
}

}  // namespace
}  // namespace modsim::reports
