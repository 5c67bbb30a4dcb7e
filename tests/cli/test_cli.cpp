// The `modsim` binary as users and scripts see it: exit codes, one-line errors on stderr,
// and the JSON contract of `modsim flops`.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "run_modsim.hpp"

namespace {

using modsim_cli_test::modsim;
using modsim_cli_test::result;
using modsim_cli_test::slurp;

// A double printed so that it reads back exactly.
std::string fmt_double(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

TEST(Cli, UnknownCommandIsBadInput) {
  result r = modsim("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(Cli, HelpExitsZeroAndListsOptions) {
  result r = modsim("flops --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--format"), std::string::npos);
  EXPECT_NE(r.out.find("--batch"), std::string::npos);
}

TEST(Cli, MissingModelFileIsOneLineAndExitTwo) {
  result r = modsim("flops configs/models/no-such-model.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "modsim flops: error: configs/models/no-such-model.json: cannot open file\n");
  EXPECT_TRUE(r.out.empty());
}

TEST(Cli, BadConfigValueNamesFileKeyAndReason) {
  auto path = std::filesystem::temp_directory_path() / "modsim_cli_bad_capacity.json";
  std::ofstream(path) << R"({"name": "x", "d_model": 64, "n_layers": 2, "n_heads": 4, "d_ff": 128,
    "vocab_size": 10, "routing": {"capacity": 1.5}})";
  result r = modsim("flops " + path.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "modsim flops: error: " + path.string() + ": routing.capacity: must be in (0, 1], got 1.5\n");
  std::filesystem::remove(path);
}

TEST(Cli, BadFlagsAreBadInput) {
  EXPECT_EQ(modsim("flops mod-220m --capacity 0").code, 2);
  EXPECT_EQ(modsim("flops mod-220m --format yaml").code, 2);
  EXPECT_EQ(modsim("flops mod-220m --mode sideways").code, 2);
  EXPECT_EQ(modsim("flops mod-220m --batch 0").code, 2);
  EXPECT_EQ(modsim("flops mod-220m --no-such-flag").code, 2);
  EXPECT_EQ(modsim("flops mod-220m --schedule every_nth:x").code, 2);
  result r = modsim("flops");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
}

TEST(Cli, FlopsJsonFollowsTheContract) {
  result r = modsim("flops mod-220m --batch 1 --seq 2048 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  boost::json::value v = boost::json::parse(r.out);
  const auto& totals = v.at("totals").as_object();
  for (const char* key : {"matmul_flops", "other_flops", "bytes", "dense_matmul_flops"})
    EXPECT_TRUE(totals.at(key).is_int64() || totals.at(key).is_uint64()) << key;
  const auto& layers = v.at("layers").as_array();
  ASSERT_EQ(layers.size(), 16u);
  // every_other: odd layers routed at 12.5% of 2048 = 256 tokens, even layers dense.
  EXPECT_FALSE(layers[0].at("routed").as_bool());
  EXPECT_EQ(layers[0].at("tokens").to_number<std::int64_t>(), 2048);
  EXPECT_TRUE(layers[1].at("routed").as_bool());
  EXPECT_EQ(layers[1].at("tokens").to_number<std::int64_t>(), 256);
  EXPECT_DOUBLE_EQ(layers[1].at("capacity").to_number<double>(), 0.125);
  const auto& ops = layers[1].at("ops").as_array();
  ASSERT_FALSE(ops.empty());
  EXPECT_EQ(ops[0].at("op").as_string(), "router");
  for (const auto& op : ops)
    for (const char* key : {"op", "matmul_flops", "other_flops", "bytes"}) EXPECT_TRUE(op.as_object().contains(key));
  EXPECT_TRUE(v.at("lm_head").as_object().contains("matmul_flops"));
  // The router of a routed layer scores all 2048 tokens: 2·S·d = 2·2048·1024.
  EXPECT_EQ(ops[0].at("matmul_flops").to_number<std::int64_t>(), 2LL * 2048 * 1024);
  // The LM head: 2·S·d·V = 2·2048·1024·32000.
  EXPECT_EQ(v.at("lm_head").at("matmul_flops").to_number<std::int64_t>(), 2LL * 2048 * 1024 * 32000);
}

TEST(Cli, FlopsCsvHasOneRowPerLayerOp) {
  result r = modsim("flops dense-60m --format csv --seq 128");
  ASSERT_EQ(r.code, 0) << r.err;
  // dense gelu layer: attn_norm qkv_proj attn_scores attn_softmax attn_values out_proj
  // mlp_norm mlp_up mlp_act mlp_down = 10 ops; 14 layers; + lm_head row + header.
  EXPECT_EQ(lines(r.out), 1 + 14 * 10 + 1) << r.out.substr(0, 400);
}

TEST(Cli, HuggingFaceConfigBecomesMoDWithOverrides) {
  result r =
      modsim("flops configs/hf/llama-3-8b.json --capacity 0.125 --schedule every_other --seq 1024 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  boost::json::value v = boost::json::parse(r.out);
  const auto& layers = v.at("layers").as_array();
  ASSERT_EQ(layers.size(), 32u);
  EXPECT_EQ(layers[3].at("tokens").to_number<std::int64_t>(), 128);
  EXPECT_LT(v.at("totals").at("matmul_flops").to_number<double>(),
            v.at("totals").at("dense_matmul_flops").to_number<double>());
}

// The goals of the GPU cost model on the committed H100 measurements (not a timing: the
// measurements are fixed files and the fit is deterministic): 5-fold cross-validation by
// shape predicts blocks it never saw within 5 % (median) and 10 % (p90), and the decode-like
// GEMMs (few tokens against large weights) within 10 % (median).
TEST(Cli, CrossValidatedH100CostModelMeetsItsGoals) {
  result r = modsim(
      "validate --measurements reports/measurements/h100-sxm-2026-11-23-full.csv "
      "reports/measurements/h100-sxm-2026-11-23-decode.csv --hardware h100-sxm --cv 5 --no-bands --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object j = boost::json::parse(r.out).as_object();
  EXPECT_EQ(j.at("points").as_int64(), 16 + 63 + 125);  // every block row of the full preset file
  EXPECT_LE(j.at("median_abs_pct_error").as_double(), 5.0);
  EXPECT_LE(j.at("p90_abs_pct_error").as_double(), 10.0);
  std::vector<double> decode_gemms;
  for (const auto& v : j.at("per_op_point").as_array()) {
    const auto& p = v.as_object();
    const std::string op(p.at("op").as_string());
    const std::string row(p.at("row").as_string());
    if (row.find("decode") != std::string::npos &&
        (op == "qkv_proj" || op == "out_proj" || op == "mlp_up" || op == "mlp_down"))
      decode_gemms.push_back(std::abs(p.at("error_pct").as_double()));
  }
  ASSERT_EQ(decode_gemms.size(), 80u);  // 4 GEMM ops × 20 decode shapes
  std::sort(decode_gemms.begin(), decode_gemms.end());
  EXPECT_LE(0.5 * (decode_gemms[39] + decode_gemms[40]), 10.0);
}

TEST(Cli, CrossValidationNeedsTwoFoldsAndEnoughShapes) {
  result r =
      modsim("validate --measurements reports/measurements/h100-sxm-2026-11-23-decode.csv --hardware h100-sxm --cv 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--cv"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
}

// Leave one value out along d_model on the committed H100 rows: every block row is scored once
// per axis, under the value it was held out with, and the widths below and above all the
// others are marked as extrapolations (values read off the file's d_model column: 1024 and
// 2048 carry blocks; 3072 and 5120 only the decode-like op rows).
TEST(Cli, LeaveOneValueOutMarksExtrapolationsAndRefusesBadAxes) {
  const std::string files =
      "validate --measurements reports/measurements/h100-sxm-2026-11-23-full.csv "
      "reports/measurements/h100-sxm-2026-11-23-decode.csv --hardware h100-sxm ";
  result r = modsim(files + "--cv-by d_model --no-bands --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object j = boost::json::parse(r.out).as_object();
  EXPECT_EQ(j.at("points").as_int64(), 16 + 63 + 125);
  const auto& values = j.at("cv_by").at("d_model").at("values").as_array();
  ASSERT_EQ(values.size(), 4u);
  const double widths[] = {1024, 2048, 3072, 5120};
  const bool outside[] = {true, false, false, true};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(values[i].at("value").to_number<double>(), widths[i]);
    EXPECT_EQ(values[i].at("extrapolated").as_bool(), outside[i]);
  }
  for (const auto& p : j.at("per_point").as_array()) {
    const std::string held(p.at("held_out").as_string());
    EXPECT_EQ(held, "d_model=" + std::to_string(p.at("d_model").to_number<std::int64_t>()));
  }
  r = modsim(files + "--cv-by width");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--cv-by"), std::string::npos) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  r = modsim(files + "--cv-by d_model --cv 5");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
}

// The band each prediction prints holds on points its calibration never saw (the goals of the
// band, on fixed committed files with a deterministic fit; not a timing): on the CPU's
// out-of-family blocks (five runs of the realistic grid, the 16k-token blocks) and held-out
// decode steps with the shipped cpu-calibrated.json, and on the H100 rows with each width, FFN
// size and sequence length left out in turn (each fold's band from its own training rows),
// |error| stays within the band for >= 85 % of the points; on the H100 rows the median band is
// also at most 2.5x the median |error| (a band that wide is still informative). The CPU
// calibration's bands inside its range come from its held-out blocks (five runs of
// holdout-cpu.json, --holdout), so those files are not a check of them; on the seven realistic
// runs the blocks miss by a median of 0.5-1.7 % and the median band is 4.2 %, 2.4-8.7x:
// covered, wider than 2.5x, which this does not hide (repeat measurements of one block differ
// by 4.2 % at p90 between runs on this machine: docs/validation.md, "Trust you can see").
void expect_bands_cover(const boost::json::object& band, const std::string& what) {
  ASSERT_TRUE(band.contains("covered_pct")) << what;
  EXPECT_GE(band.at("covered_pct").as_double(), 85.0) << what;
}
void expect_bands_hold(const boost::json::object& band, const std::string& what) {
  ASSERT_TRUE(band.contains("covered_pct")) << what;
  EXPECT_GE(band.at("covered_pct").as_double(), 85.0) << what;
  EXPECT_LE(band.at("median_band_pct").as_double(), 2.5 * band.at("median_abs_pct_error").as_double()) << what;
}

TEST(Cli, ErrorBandsCoverCpuHeldOutAndOutOfFamilyBlocks) {
  for (const char* file : {"24b-realistic", "24c-realistic-first", "24c-realistic", "25-realistic", "25-realistic-2",
                           "25b-realistic", "25c-realistic", "24b-decode-holdout", "24b-decode-holdout-2"}) {
    const result r = modsim("validate --measurements reports/measurements/cpu-xeon-2core-2026-11-" + std::string(file) +
                            ".csv --hardware cpu-calibrated --format json");
    ASSERT_EQ(r.code, 0) << r.err;
    const boost::json::object j = boost::json::parse(r.out).as_object();
    for (const auto& p : j.at("per_point").as_array()) EXPECT_TRUE(p.as_object().contains("band_pct"));
    expect_bands_cover(j.at("band").as_object(), file);
  }
  // Each point says where its band comes from. cpu-calibrated.json measured widths 256-1,024,
  // 4-16 heads, sequences 256-2,048 and batches 1-16: TinyLlama's layer (2,048 wide, 32 heads)
  // lies a factor of two past the widths and the heads; GPT-2's (768 wide, 12 heads) at S 700,
  // B 3 inside the range on every axis (between measured values along some).
  {
    const result r = modsim(
        "validate --measurements reports/measurements/cpu-xeon-2core-2026-11-24b-realistic.csv --hardware "
        "cpu-calibrated --format json");
    ASSERT_EQ(r.code, 0) << r.err;
    int far = 0, inside = 0;
    const boost::json::value j = boost::json::parse(r.out);
    for (const auto& v : j.at("per_point").as_array()) {
      const auto& p = v.as_object();
      ASSERT_TRUE(p.contains("band_where"));
      const std::string where(p.at("band_where").as_string());
      const std::int64_t d = p.at("d_model").to_number<std::int64_t>();
      if (d == 2048) {
        ++far;
        EXPECT_NE(where.find("outside the measured range"), std::string::npos) << where;
        EXPECT_NE(where.find("d_model ×2,"), std::string::npos) << where;
        EXPECT_NE(where.find("n_heads ×2"), std::string::npos) << where;
      } else if (d == 768 && p.at("seq_len").to_number<std::int64_t>() == 700 &&
                 p.at("batch").to_number<std::int64_t>() == 3) {
        ++inside;
        EXPECT_EQ(where.find("outside"), std::string::npos) << where;
        EXPECT_EQ(where.rfind("±", 0), 0u) << where;
      }
    }
    EXPECT_EQ(far, 12);    // 4 shapes x 3 capacities
    EXPECT_EQ(inside, 3);  // 3 capacities
  }
  // The 16k-token blocks, 4x past the calibration's tokens.
  const result r = modsim(
      "validate --measurements reports/measurements/cpu-xeon-2core-2026-11-24c-realistic-long.csv --hardware "
      "cpu-calibrated --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  expect_bands_cover(boost::json::parse(r.out).at("band").as_object(), "realistic-long");
}

// Blocks measured more than once: one file alone has no repeat (JSON null); the same file
// `calibrate --holdout`: the calibration predicts the held-out blocks and records how it did.
// configs/grids/holdout-cpu.json holds 16 dense blocks (2 batches × 2 sequences × 2 widths × 2
// FFN sizes) and 32 routed ones (the same 16 at capacities 1/4 and 3/4): 48, no decode row.
// The calibration grid measured widths 256 and 768, FFN sizes 1024 and 3072, sequences 256 and
// 1024, batches 1 and 4, capacities 1/8, 1/2 and 1, so the held-out rows lay at most log2 1.5
// from a measured width (384 from 256), FFN size (1536 from 1024) and sequence (384 from 256),
// one factor of two from a batch (2) and from a capacity (1/4).
TEST(Cli, CalibrateRecordsHowItDidOnHeldOutRows) {
  const std::string m = "reports/measurements/cpu-xeon-2core-2026-11-24b-";
  const auto out = std::filesystem::temp_directory_path() / ("modsim_holdout_" + std::to_string(::getpid()) + ".json");
  const std::string fit = "calibrate --measurements " + m + "calibration.csv " + m + "decode.csv --hardware cpu ";
  result r = modsim(fit + "--holdout " + m + "holdout.csv --out '" + out.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("checked on held-out rows"), std::string::npos) << r.out;
  {
    std::ifstream f(out);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const boost::json::object h = boost::json::parse(text).at("calibration").at("holdout").as_object();
    EXPECT_EQ(h.at("blocks").as_int64(), 48);
    EXPECT_EQ(h.at("decode_blocks").as_int64(), 0);
    EXPECT_EQ(h.at("files").as_array().size(), 1u);
    const boost::json::object reach = h.at("reach").as_object();
    for (const char* axis : {"d_model", "d_ff", "seq_len"})
      EXPECT_NEAR(reach.at(axis).to_number<double>(), std::log2(1.5), 1e-12) << axis;
    EXPECT_NEAR(reach.at("batch").to_number<double>(), 1.0, 1e-12);
    EXPECT_NEAR(reach.at("capacity").to_number<double>(), 1.0, 1e-12);
    EXPECT_FALSE(reach.contains("n_heads"));  // 8 heads, as measured
  }
  // validate on the held-out file says its bands were set by it.
  r = modsim("validate --measurements " + m + "holdout.csv --hardware '" + out.string() + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("were the calibration's held-out rows"), std::string::npos) << r.out;
  // A holdout that is a fitted file, from another machine, or without a cross-validation to
  // band: exit 2, the file and the reason in the last line.
  r = modsim(fit + "--holdout " + m + "calibration.csv --out '" + out.string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("is also a --measurements file"), std::string::npos) << r.err;
  r = modsim(fit + "--holdout reports/measurements/cpu-epyc-2core-2026-11-23-holdout.csv --out '" + out.string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cpu-epyc-2core-2026-11-23-holdout.csv:2: --holdout row measured on"), std::string::npos)
      << r.err;
  r = modsim(fit + "--cv 0 --holdout " + m + "holdout.csv --out '" + out.string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  std::filesystem::remove(out);
}

// An extrapolation is measured along an axis only where a fit without an end still saw two
// values. configs/grids/calibration-5-cpu.json measures two widths (256, 768), FFN sizes
// (1,024, 3,072), sequences (256, 1,024) and batches (1, 4), one head count (8), and four
// capacities (1/8, 1/4, 1/2 and the 24 dense blocks at 1), 24 blocks at each: along capacity
// the ends (1/8 and 1) are 48 held-out blocks and the inner values (1/4, 1/2) 48 more; along
// the others nothing is held out, and the text of a prediction past them says so. (Every row
// kept: --leave-out-slower 0, as the default would leave out a block of a slow spell.)
TEST(Cli, CalibrateMeasuresExtrapolationsOnlyAlongAxesWithThreeValues) {
  const auto out = std::filesystem::temp_directory_path() / ("modsim_ends_" + std::to_string(::getpid()) + ".json");
  const result r = modsim(
      "calibrate --measurements reports/measurements/cpu-epyc-2core-2026-11-25u-calibration-5.csv --hardware cpu "
      "--leave-out-slower 0 --out '" +
      out.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(out);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::map<std::string, boost::json::object> by_axis;
  const boost::json::value j = boost::json::parse(text);
  for (const auto& a : j.at("calibration").at("coverage").as_array())
    by_axis[std::string(a.at("axis").as_string())] = a.as_object();
  for (const char* axis : {"d_model", "d_ff", "seq_len", "batch", "n_heads"}) {
    ASSERT_TRUE(by_axis.count(axis)) << axis;
    EXPECT_EQ(by_axis[axis].at("blocks").as_int64(), 0) << axis;
  }
  EXPECT_EQ(by_axis["d_model"].at("values").as_array().size(), 2u);
  EXPECT_EQ(by_axis["capacity"].at("blocks").as_int64(), 48);
  EXPECT_EQ(by_axis["capacity"].at("inner_blocks").as_int64(), 48);
  // mod-gqa-swiglu-1b is 2,048 wide: 2048 / 768 = 2.67 past the widths.
  const result p = modsim("predict mod-gqa-swiglu-1b --hardware '" + out.string() + "'");
  EXPECT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("d_model 2048 > 768 (×2.67; no extrapolation along it was measured)"), std::string::npos)
      << p.out;
  std::filesystem::remove(out);
}
// The row-count factor of the dense GEMMs (sim/cost/efficiency_fit.hpp). A GEMM of
// configs/grids/archive/calibration-2-cpu.json has batch × sequence × capacity rows: 32 (B 1, S 256,
// c 1/8), 64 (B 1 S 256 c 1/4, B 1 S 512 c 1/8, B 2 S 256 c 1/8) or 128 and more (batches 1/2/4,
// sequences 256-1,024, capacities 1/8-1), so qkv_proj's factor sits at log2 rows 5 and 6, and 1
// at 7 (128 rows). calibration-cpu.json (batches 1/4, capacities 1/8 and 1/2) has 32 rows only
// below 128, too few for a factor. --no-rows-factor fits none.
TEST(Cli, CalibrateFitsAFewRowFactorWhereTwoRowCountsBelow128WereMeasured) {
  const std::string m = "reports/measurements/cpu-xeon-2core-2026-11-";
  const auto out = std::filesystem::temp_directory_path() / ("modsim_rows_" + std::to_string(::getpid()) + ".json");
  const auto qkv_rows = [&](const std::string& args) {
    const result r = modsim("calibrate --measurements " + args + " --hardware cpu --cv 0 --out '" + out.string() + "'");
    EXPECT_EQ(r.code, 0) << r.err;
    std::ifstream f(out);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<double> at;
    const boost::json::value j = boost::json::parse(text);
    for (const auto& c : j.at("calibration").at("curves").as_array())
      if (c.at("op").as_string() == "qkv_proj" && c.as_object().contains("rows"))
        for (const auto& k : c.at("rows").as_array()) at.push_back(k.at("log2_rows").to_number<double>());
    return std::make_pair(at, r.out);
  };
  const auto [with, text] = qkv_rows(m + "24c-calibration-2.csv");
  EXPECT_EQ(with, (std::vector<double>{5, 6, 7}));
  EXPECT_NE(text.find("few-row GEMMs (below 128 rows"), std::string::npos) << text;
  EXPECT_TRUE(qkv_rows(m + "24c-calibration-2.csv --no-rows-factor").first.empty());
  EXPECT_TRUE(qkv_rows(m + "24b-calibration.csv").first.empty());
  std::filesystem::remove(out);
}
// The shipped cpu-calibrated.json was checked on five runs of configs/grids/holdout-cpu.json
// (48 blocks each: 240); predict and the report's Trust line say so, and the band says where it
// came from.
TEST(Cli, PredictAndReportSayHowTheCalibrationDidOnItsHeldOutBlocks) {
  const result p = modsim("predict mod-60m --hardware cpu-calibrated --batch 1 --seq 512");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("checked on 240 held-out blocks it was never fitted on"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("; 240 held-out blocks;"), std::string::npos) << p.out;
  // The LM head is timed with mlp_up's curve, and this calibration measured no other op that
  // curve stands in for (mlp_gate, experts): the band says it does not cover it.
  EXPECT_NE(p.out.find("; lm_head timed as mlp_up, never checked (not covered))"), std::string::npos) << p.out;
  const result j = modsim("predict mod-60m --hardware cpu-calibrated --batch 1 --seq 512 --format json");
  ASSERT_EQ(j.code, 0) << j.err;
  const boost::json::value v = boost::json::parse(j.out);
  EXPECT_EQ(v.at("expected_error").at("holdout").at("blocks").as_int64(), 240);
  EXPECT_EQ(v.at("expected_error").at("holdout_blocks").as_int64(), 240);
  const boost::json::array& stand_ins = v.at("expected_error").at("stand_ins").as_array();
  ASSERT_EQ(stand_ins.size(), 1u);
  EXPECT_EQ(stand_ins[0].at("op").as_string(), "lm_head");
  EXPECT_TRUE(stand_ins[0].at("checked_on").is_null());
  EXPECT_EQ(v.at("expected_error").at("stand_in_pct").to_number<double>(), 0.0);
  const auto dir = std::filesystem::temp_directory_path() / ("modsim_trust_" + std::to_string(::getpid()));
  const result r = modsim(
      "report mod-60m --hardware cpu-calibrated --no-profile --no-serving --no-sampling "
      "--no-charts --no-parallel --out '" +
      dir.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(dir / "report.md");
  const std::string md((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(md.find("the calibration itself, on 240 held-out blocks it never fitted"), std::string::npos);
  std::filesystem::remove_all(dir);
}
// twice repeats each of its 60 blocks once, identical (every difference 0).
TEST(Cli, ValidateSaysHowFarRepeatMeasurementsAgree) {
  const std::string file = "reports/measurements/cpu-xeon-2core-2026-11-24b-realistic.csv";
  const result once = modsim("validate --measurements " + file + " --hardware cpu-calibrated --format json");
  ASSERT_EQ(once.code, 0) << once.err;
  EXPECT_TRUE(boost::json::parse(once.out).at("repeatability").is_null());
  const result twice =
      modsim("validate --measurements " + file + " " + file + " --hardware cpu-calibrated --format json");
  ASSERT_EQ(twice.code, 0) << twice.err;
  const boost::json::object r = boost::json::parse(twice.out).at("repeatability").as_object();
  EXPECT_EQ(r.at("blocks").as_int64(), 60);
  EXPECT_EQ(r.at("pairs").as_int64(), 60);
  EXPECT_EQ(r.at("max_abs_pct_diff").to_number<double>(), 0.0);
  const result text = modsim("validate --measurements " + file + " " + file + " --hardware cpu-calibrated");
  EXPECT_NE(text.out.find("repeat measurements: 60 block(s) measured more than once differ by median 0.0%"),
            std::string::npos)
      << text.out;
}

// Two runs of the same blocks, the second on a machine 20 % slower for them, which its anchors
// (the small block timed around each point) show: 1.2^(1/0.7) times slower, the anchor ratio
// that the hold (rescaling by the anchor ratio to the power 0.7) takes back to 1.2. As
// measured, every pair differs by 200 · 0.2 / 2.2 = 18.18 %; held to one machine speed, as
// validate scores them by default, by nothing.
TEST(Cli, RepeatMeasurementsAreComparedAsScored) {
  const auto dir = std::filesystem::temp_directory_path() / ("modsim_cli_repeat_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string hw = (dir / "cal.json").string(), a = (dir / "a.csv").string(), b = (dir / "b.csv").string();
  const result fit = modsim(
      "calibrate --measurements reports/measurements/cpu-epyc-2core-2026-11-25r-calibration-5.csv --hardware cpu "
      "--cv 0 --out '" +
      hw + "'");
  ASSERT_EQ(fit.code, 0) << fit.err;
  // The fields of a CSV line, quotes kept (the device field holds commas).
  const auto fields = [](const std::string& line) {
    std::vector<std::string> f(1);
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted)
        f.emplace_back();
      else
        f.back() += c;
    }
    return f;
  };
  std::ifstream in(std::string(MODSIM_SOURCE_DIR) + "/reports/measurements/cpu-epyc-2core-2026-11-25r-realistic.csv");
  std::ofstream out_a(a), out_b(b);
  std::string line;
  std::getline(in, line);
  out_a << line << '\n';
  out_b << line << '\n';
  const std::vector<std::string> header = fields(line);
  const auto column = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const std::size_t median = column("median_s"), anchor = column("anchor_s");
  ASSERT_LT(anchor, header.size());
  int rows = 0;
  while (std::getline(in, line) && rows < 12) {
    out_a << line << '\n';
    std::vector<std::string> f = fields(line);
    f[median] = fmt_double(std::stod(f[median]) * 1.2);
    f[anchor] = fmt_double(std::stod(f[anchor]) * std::pow(1.2, 1 / 0.7));
    for (std::size_t i = 0; i < f.size(); ++i) out_b << (i ? "," : "") << f[i];
    out_b << '\n';
    ++rows;
  }
  out_a.close();
  out_b.close();
  const std::string args = "validate --measurements '" + a + "' '" + b + "' --hardware '" + hw + "' --format json";
  const result held = modsim(args);
  ASSERT_EQ(held.code, 0) << held.err;
  const boost::json::object r = boost::json::parse(held.out).at("repeatability").as_object();
  EXPECT_EQ(r.at("pairs").as_int64(), 12);
  EXPECT_TRUE(r.at("held_to_machine_speed").as_bool());
  EXPECT_LT(r.at("max_abs_pct_diff").to_number<double>(), 1e-6);
  const result raw = modsim(args + " --as-measured");
  ASSERT_EQ(raw.code, 0) << raw.err;
  const boost::json::object q = boost::json::parse(raw.out).at("repeatability").as_object();
  EXPECT_FALSE(q.at("held_to_machine_speed").as_bool());
  EXPECT_NEAR(q.at("median_abs_pct_diff").to_number<double>(), 200 * 0.2 / 2.2, 1e-6);
  EXPECT_NEAR(q.at("max_abs_pct_diff").to_number<double>(), 200 * 0.2 / 2.2, 1e-6);
  std::filesystem::remove_all(dir);
}

// A committed GEMM grid (400 one-row points, anchors 2.9-4.1 ms, none more than 35 % above the
// fastest quarter's 3.05 ms) with a slow spell written into it: rows 101-140 with their anchor
// doubled. Each of those points' smoothed anchor (the median over it and its neighbours) is
// doubled too, the points beside the spell keep theirs, so calibrate leaves out exactly the 40
// rows, and with --leave-out-slower 0 none.
TEST(Cli, CalibrateLeavesOutRowsOfADeepSlowSpell) {
  const auto dir = std::filesystem::temp_directory_path() / ("modsim_cli_slow_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string csv = (dir / "gemm.csv").string(), hw = (dir / "cal.json").string();
  std::ifstream in(std::string(MODSIM_SOURCE_DIR) + "/reports/measurements/cpu-xeon-2core-2026-11-27d-gemm-rows.csv");
  std::ofstream out(csv);
  std::string line;
  std::getline(in, line);
  out << line << '\n';
  const std::string header = line;
  for (int row = 1; std::getline(in, line); ++row) {
    if (row > 100 && row <= 140) {
      // anchor_s is the last column and the device's quoted commas come before it.
      const std::size_t comma = line.rfind(',');
      line = line.substr(0, comma + 1) + fmt_double(2 * std::stod(line.substr(comma + 1)));
    }
    out << line << '\n';
  }
  out.close();
  ASSERT_EQ(header.substr(header.rfind(',') + 1), "anchor_s");
  const auto fit = [&](const std::string& extra) {
    const result r =
        modsim("calibrate --measurements '" + csv + "' --hardware cpu --cv 0 --format json --out '" + hw + "'" + extra);
    EXPECT_EQ(r.code, 0) << r.err;
    return boost::json::parse(r.out).at("calibration").as_object();
  };
  const boost::json::object cut = fit("");
  EXPECT_EQ(cut.at("anchor").at("slow_left_out").as_int64(), 40);
  EXPECT_DOUBLE_EQ(cut.at("anchor").at("slow_limit").to_number<double>(), 1.35);
  EXPECT_EQ(cut.at("measurements").at(0).at("rows").as_int64(), 400);
  EXPECT_EQ(cut.at("measurements").at(0).at("used_rows").as_int64(), 360);
  const boost::json::object kept = fit(" --leave-out-slower 0");
  EXPECT_FALSE(kept.at("anchor").as_object().contains("slow_limit"));
  EXPECT_EQ(kept.at("measurements").at(0).at("used_rows").as_int64(), 400);
  // A limit of 150 % keeps the doubled rows as well (twice the fastest quarter is within 2.5 ×).
  EXPECT_EQ(fit(" --leave-out-slower 150").at("anchor").at("slow_left_out").as_int64(), 0);
  const result bad =
      modsim("calibrate --measurements '" + csv + "' --hardware cpu --out '" + hw + "' --leave-out-slower -5");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--leave-out-slower: must be a percentage >= 0"), std::string::npos) << bad.err;
  std::filesystem::remove_all(dir);
}

TEST(Cli, ErrorBandsHoldOnH100ValuesLeftOut) {
  const result r = modsim(
      "validate --measurements reports/measurements/h100-sxm-2026-11-23-full.csv "
      "reports/measurements/h100-sxm-2026-11-23-decode.csv --hardware h100-sxm --cv-by d_model,d_ff,seq_len "
      "--format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object j = boost::json::parse(r.out).as_object();
  std::vector<double> bands;
  int covered = 0;
  std::vector<double> errors;
  for (const auto& v : j.at("per_point").as_array()) {
    const auto& p = v.as_object();
    ASSERT_TRUE(p.contains("band_pct"));
    const double e = std::abs(p.at("error_pct").as_double()), b = p.at("band_pct").as_double();
    bands.push_back(b);
    errors.push_back(e);
    covered += e <= b ? 1 : 0;
  }
  ASSERT_EQ(bands.size(), 3u * 204u);  // every block once per axis
  // The coverage and the widths computed here from the points, not read from the summary.
  std::sort(bands.begin(), bands.end());
  std::sort(errors.begin(), errors.end());
  const std::size_t n = bands.size();
  EXPECT_GE(100.0 * covered / double(n), 85.0);
  EXPECT_LE(0.5 * (bands[n / 2 - 1] + bands[n / 2]), 2.5 * 0.5 * (errors[n / 2 - 1] + errors[n / 2]));
}

// On the shipped H100 calibration (one head count measured, 16), mod-1b with 32 heads is a
// GPU shape no row measured: its band is at least the widest leave-one-value-out p90 of the
// width and FFN axes, read here from the file's coverage; mod-1b itself (2048, 8192, 16
// heads, all measured) names no new shape.
TEST(Cli, AnUnmeasuredHeadCountOnTheH100TakesTheLeaveOneValueOutBand) {
  std::ifstream in(std::string(MODSIM_SOURCE_DIR) + "/configs/hardware/h100-sxm-calibrated.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  double widest = 0;
  std::string widest_axis;
  const boost::json::value hw = boost::json::parse(text);
  for (const auto& v : hw.at("calibration").at("coverage").as_array()) {
    const auto& a = v.as_object();
    const std::string axis(a.at("axis").as_string());
    if (axis != "d_model" && axis != "d_ff" && axis != "n_heads") continue;
    const double lovo = a.at("inner_blocks").to_number<int>() > 0 ? a.at("inner_p90_abs_pct_error").to_number<double>()
                        : a.at("blocks").to_number<int>() > 0     ? a.at("p90_abs_pct_error").to_number<double>()
                                                                  : 0.0;
    if (lovo > widest) widest = lovo, widest_axis = axis;
  }
  ASSERT_GT(widest, 0.0);
  const auto model =
      std::filesystem::temp_directory_path() / ("modsim_heads32_" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream f(model);
    f << R"({"name": "heads32", "d_model": 2048, "n_layers": 4, "n_heads": 32, "n_kv_heads": 32, "d_ff": 8192,
             "vocab_size": 32000, "mlp": "gelu"})";
  }
  const result r =
      modsim("predict '" + model.string() + "' --hardware h100-sxm-calibrated --attention unfused --format json");
  std::filesystem::remove(model);
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object e = boost::json::parse(r.out).at("expected_error").as_object();
  EXPECT_GE(e.at("band_pct").as_double(), widest);
  bool named = false;
  for (const auto& v : e.at("between").as_array()) {
    const auto& a = v.as_object();
    if (a.at("axis").as_string() != "n_heads") continue;
    named = true;
    const auto& shape = a.at("new_gpu_shape").as_object();
    EXPECT_EQ(shape.at("leave_one_value_out_axis").as_string(), widest_axis);
    EXPECT_DOUBLE_EQ(shape.at("leave_one_value_out_p90_pct").as_double(), widest);
  }
  EXPECT_TRUE(named) << r.out;
  EXPECT_NE(std::string(e.at("band").as_string()).find("n_heads 32 was never measured"), std::string::npos);
  const result m = modsim("predict mod-1b --hardware h100-sxm-calibrated --attention unfused --format json");
  ASSERT_EQ(m.code, 0) << m.err;
  const boost::json::object me = boost::json::parse(m.out).at("expected_error").as_object();
  EXPECT_TRUE(me.at("between").as_array().empty());
  EXPECT_EQ(std::string(me.at("band").as_string()).find("never measured"), std::string::npos);
}

// Validating a calibration on the very rows it was fitted on has nothing held out: validate
// says so and cross-validates the method on those rows instead of stopping.
TEST(Cli, ValidatingACalibrationOnItsOwnRowsCrossValidatesInstead) {
  const result r = modsim(
      "validate --measurements reports/measurements/cpu-xeon-2core-2026-11-24b-calibration.csv --hardware "
      "cpu-calibrated --no-bands --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object j = boost::json::parse(r.out).as_object();
  EXPECT_EQ(j.at("points").as_int64(), 48);  // the grid's 48 blocks (configs/grids/archive/calibration-cpu.json)
  bool said = false;
  for (const auto& n : j.at("notes").as_array())
    said = said || std::string(n.as_string()).find("none is held out") != std::string::npos;
  EXPECT_TRUE(said);
}

// The datasheet roofline beside the calibration, on a hand-made file of two mlp_up rows measured on
// the calibration's CPU: B1 S256 d_model 256 d_ff 1024 fp32 at capacity 1 is, by hand,
// 2·256·256·1024 = 134,217,728 FLOPs and 4·(256·256 + 2·256·1024) = 2,359,296 bytes, so cpu.json's
// roofline is max(134217728 / 332.8e9, 2359296 / 20e9) = 4.0329e-4 s. Measured at exactly that and
// at twice it, the datasheet is off by 0 % and -50 % (median 25 %, max 50 %, mean -25 %).
TEST(Cli, ValidateScoresTheDatasheetRooflineOnTheSameRows) {
  const double roofline = 134217728.0 / 332.8e9;
  const std::string device =
      "\"Intel(R) Xeon(R) Processor, 1 threads, OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Prescott "
      "MAX_THREADS=64\"";
  const auto csv = std::filesystem::temp_directory_path() / ("modsim_datasheet_" + std::to_string(::getpid()) + ".csv");
  {
    std::ofstream f(csv);
    f << "backend,device,op,dtype,batch,seq_len,d_model,n_heads,d_ff,capacity,tokens,matmul_flops,bytes,median_s,"
         "p10_s,p90_s,samples,n_kv_heads,mlp,variant,experts,noop_experts,capacity_factor,other_flops,timing\n";
    for (double factor : {1.0, 2.0}) {
      char median[64];
      std::snprintf(median, sizeof median, "%.17g", factor * roofline);
      f << "cpu," << device << ",mlp_up,fp32,1,256,256,8,1024,1,256,134217728,2359296," << median << "," << median
        << "," << median << ",5,8,gelu,none,0,0,0,0,isolated\n";
    }
  }
  const result r = modsim("validate --measurements '" + csv.string() + "' --hardware cpu-calibrated --format json");
  const result t = modsim("validate --measurements '" + csv.string() + "' --hardware cpu-calibrated");
  std::filesystem::remove(csv);
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object j = boost::json::parse(r.out).as_object();
  ASSERT_TRUE(j.contains("datasheet"));
  const boost::json::object& ds = j.at("datasheet").as_object();
  EXPECT_EQ(ds.at("points").as_int64(), 2);
  EXPECT_NEAR(ds.at("median_abs_pct_error").as_double(), 25.0, 1e-6);
  EXPECT_NEAR(ds.at("max_abs_pct_error").as_double(), 50.0, 1e-6);
  EXPECT_NEAR(ds.at("mean_pct_error").as_double(), -25.0, 1e-6);
  EXPECT_NEAR(ds.at("ops").at("by_op").at("mlp_up").at("median_abs_pct_error").as_double(), 25.0, 1e-6);
  // Every point: the datasheet's own prediction, the roofline.
  const auto& pts = j.at("per_point").as_array();
  ASSERT_EQ(pts.size(), 2u);
  for (const auto& p : pts) EXPECT_NEAR(p.at("datasheet_predicted_s").as_double(), roofline, 1e-12);
  // The calibrated figures are still the top-level ones (nothing renamed), and the verdict follows
  // them: calibration is worse here exactly when its median or p90 is above the datasheet's.
  const double cal_median = j.at("median_abs_pct_error").as_double(), cal_p90 = j.at("p90_abs_pct_error").as_double();
  const bool worse = cal_median > 25.0 + 0.05 || cal_p90 > ds.at("p90_abs_pct_error").as_double() + 0.05;
  EXPECT_EQ(!ds.at("calibration_worse").as_array().empty(), worse);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("calibrated vs datasheet roofline"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("calibration makes predictions worse") != std::string::npos, worse) << t.out;
}

// `report --measurements X` without `--calibration` holds something out: its figure is the 5-fold
// shape cross-validation `validate --cv 5` computes on X, not a score of the rows it was fitted on.
TEST(Cli, ReportOnMeasurementsWithoutACalibrationCrossValidates) {
  const std::string file = "reports/measurements/cpu-xeon-2core-2026-11-24-calibration.csv";
  const result v = modsim("validate --measurements " + file + " --hardware cpu --cv 5 --no-bands --format json");
  ASSERT_EQ(v.code, 0) << v.err;
  const boost::json::object j = boost::json::parse(v.out).as_object();
  const auto dir = std::filesystem::temp_directory_path() / ("modsim_report_cv_" + std::to_string(::getpid()));
  const result r = modsim("report --measurements " + file + " --hardware cpu --no-serving --no-sampling --no-charts " +
                          "--no-parallel --out '" + dir.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string md = slurp((dir / "report.md").string());
  const std::string table = slurp((dir / "tables" / "validation.csv").string());
  std::filesystem::remove_all(dir);
  // The report's blocks, their |error| median computed here from its CSV (last column).
  std::vector<double> errors;
  std::istringstream lines(table);
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) errors.push_back(std::abs(std::stod(line.substr(line.rfind(',') + 1))));
  ASSERT_EQ(errors.size(), static_cast<std::size_t>(j.at("points").as_int64()));
  std::sort(errors.begin(), errors.end());
  const std::size_t n = errors.size();
  const double median = n % 2 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
  EXPECT_NEAR(median, j.at("median_abs_pct_error").as_double(), 1e-9);
  EXPECT_GT(median, 0.5);  // not the near-zero score of rows the fit saw
  // And it says what was held out.
  EXPECT_NE(md.find("cross-validated on " + file + " (5 folds by shape"), std::string::npos);
}

// One decode path: `predict --mode decode` prints the step `simulate forward --mode decode`
// simulates (the same routing draws, syncs and launches), for both routings.
TEST(Cli, PredictDecodeTotalIsSimulateForwardDecodeStep) {
  for (const char* routing : {"sync", "pad"}) {
    const std::string common =
        std::string(" mod-220m --hardware h100-sxm --mode decode --batch 8 --seq 2048 --decode-routing ") + routing +
        " --format json";
    const result p = modsim("predict" + common);
    const result s = modsim("simulate forward" + common);
    ASSERT_EQ(p.code, 0) << p.err;
    ASSERT_EQ(s.code, 0) << s.err;
    const boost::json::object pj = boost::json::parse(p.out).as_object();
    const boost::json::object sj = boost::json::parse(s.out).as_object();
    EXPECT_EQ(pj.at("total_s").as_double(), sj.at("step_s").as_double()) << routing;
    for (const char* key : {"total_s", "dense_total_s", "layers", "lm_head", "overhead_s"})
      EXPECT_TRUE(pj.contains(key)) << key;
    EXPECT_EQ(pj.at("baseline").at("routing_removed").as_bool(), true);
  }
}

// One decode answer: `predict --mode decode` with a strategy is the `sampling` cell of that
// strategy at the same batch and context, over the same routing draws (--seed, --draws), for the
// model and for its baseline; the JSON names the strategy.
TEST(Cli, PredictDecodeIsTheSamplingCellOfItsStrategy) {
  const std::string draws = " --seed 3 --draws 4";
  const result m =
      modsim("sampling mod-220m --hardware h100-sxm --batches 16 --contexts 512 --threads 1 --format json" + draws);
  ASSERT_EQ(m.code, 0) << m.err;
  const boost::json::object mj = boost::json::parse(m.out).as_object();
  const std::map<std::string, std::string> flags = {{"sync", "--decode-routing sync"},
                                                    {"pad", "--decode-routing pad"},
                                                    {"pad+graphs", "--decode-routing pad --graph"}};
  int seen = 0;
  for (const auto& s : mj.at("strategies").as_array()) {
    const std::string name(s.at("strategy").as_string());
    ASSERT_TRUE(flags.count(name)) << name;
    const boost::json::object& cell = s.at("cells").as_array().at(0).as_object();
    const result p = modsim("predict mod-220m --hardware h100-sxm --mode decode --batch 16 --seq 512 --format json " +
                            flags.at(name) + draws);
    ASSERT_EQ(p.code, 0) << p.err;
    const boost::json::object pj = boost::json::parse(p.out).as_object();
    EXPECT_EQ(pj.at("total_s").as_double(), cell.at("model_s").as_double()) << name;
    EXPECT_EQ(pj.at("dense_total_s").as_double(), cell.at("baseline_s").as_double()) << name;
    EXPECT_EQ(pj.at("decode").at("strategy").as_string(), name);
    EXPECT_EQ(pj.at("decode").at("draws").as_int64(), 4);
    EXPECT_EQ(pj.at("decode_routing_choice").at("rule").as_string(), "the user's choice");
    ++seen;
  }
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(modsim("predict mod-220m --hardware h100-sxm --mode decode --draws 0").code, 2);
  EXPECT_EQ(modsim("predict mod-220m --hardware h100-sxm --mode decode --decode-routing fast").code, 2);
  EXPECT_EQ(modsim("predict mod-220m --hardware h100-sxm --draws 2").code, 2);  // decode only
}

// Without --decode-routing the decode step is the fastest of sync, pad and pad + graphs (the
// minimum of the three figures the JSON lists), and predict, simulate forward and their text
// name it.
TEST(Cli, DecodeDefaultsToTheFastestStrategyAndListsTheOthers) {
  const std::string cell = " mod-220m --hardware h200 --mode decode --batch 16 --seq 512";
  const result p = modsim("predict" + cell + " --format json");
  ASSERT_EQ(p.code, 0) << p.err;
  const boost::json::object pj = boost::json::parse(p.out).as_object();
  const boost::json::object& ch = pj.at("decode_routing_choice").as_object();
  EXPECT_EQ(ch.at("rule").as_string(), "fastest of sync/pad/pad+graphs");
  EXPECT_TRUE(ch.at("fastest").as_bool());
  const auto& candidates = ch.at("candidates").as_array();
  ASSERT_EQ(candidates.size(), 3u);
  std::string fastest;
  double least = 0;
  for (const auto& c : candidates) {
    ASSERT_TRUE(c.at("applies").as_bool());
    const double t = c.at("step_s").as_double();
    if (fastest.empty() || t < least) {
      fastest = std::string(c.at("strategy").as_string());
      least = t;
    }
  }
  EXPECT_EQ(ch.at("chosen").as_string(), fastest);
  EXPECT_EQ(pj.at("decode").at("strategy").as_string(), fastest);
  EXPECT_EQ(pj.at("total_s").as_double(), least);
  const result s = modsim("simulate forward" + cell + " --format json");
  ASSERT_EQ(s.code, 0) << s.err;
  const boost::json::object sj = boost::json::parse(s.out).as_object();
  EXPECT_EQ(sj.at("step_s").as_double(), least);
  EXPECT_EQ(sj.at("strategy").as_string(), fastest);
  const std::string label = "strategy " + fastest + " (fastest of sync/pad/pad+graphs; mean of 8 routing draws)";
  const result pt = modsim("predict" + cell);
  EXPECT_NE(pt.out.find("decode step: discrete-event simulation (as simulate forward), " + label), std::string::npos)
      << pt.out;
  const result st = modsim("simulate forward" + cell);
  EXPECT_NE(st.out.find("decode " + label), std::string::npos) << st.out;
}

// Where a strategy cannot apply it says so: a CPU runs no CUDA graphs, and a model that routes
// nothing has one decode step whatever the strategy (no count to read back, nothing to pad), so
// sync and pad give the same time to the last bit.
TEST(Cli, ADecodeStrategyThatCannotApplySaysSo) {
  const std::string cell = "predict dense-220m --hardware cpu --mode decode --batch 2 --seq 256 --format json";
  const result p = modsim(cell);
  ASSERT_EQ(p.code, 0) << p.err;
  const boost::json::value pj = boost::json::parse(p.out);
  const boost::json::object& ch = pj.at("decode_routing_choice").as_object();
  const auto& c = ch.at("candidates").as_array();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].at("strategy").as_string(), "sync");
  EXPECT_EQ(c[1].at("strategy").as_string(), "pad");
  EXPECT_EQ(c[0].at("step_s").as_double(), c[1].at("step_s").as_double());
  EXPECT_EQ(c[2].at("strategy").as_string(), "pad+graphs");
  EXPECT_FALSE(c[2].at("applies").as_bool());
  EXPECT_NE(std::string(c[2].at("why_not").as_string()).find("CPU"), std::string::npos);
  EXPECT_EQ(ch.at("rule").as_string(), "fastest of sync/pad");
  bool says = false;
  for (const auto& n : ch.at("notes").as_array())
    says = says || std::string(n.as_string()).find("routes no layer") != std::string::npos;
  EXPECT_TRUE(says);
  const result sync = modsim(cell + " --decode-routing sync"), pad = modsim(cell + " --decode-routing pad");
  ASSERT_EQ(sync.code, 0) << sync.err;
  ASSERT_EQ(pad.code, 0) << pad.err;
  EXPECT_EQ(boost::json::parse(sync.out).at("total_s").as_double(),
            boost::json::parse(pad.out).at("total_s").as_double());
}

TEST(Cli, PredictNamesTheBaselineItComparedWith) {
  const result r = modsim("predict mod-220m --hardware h100-sxm --baseline dense-220m --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object j = boost::json::parse(r.out).as_object();
  EXPECT_EQ(j.at("baseline").at("name").as_string(), "dense-220m");
  EXPECT_EQ(j.at("baseline").at("routing_removed").as_bool(), false);
  EXPECT_EQ(modsim("predict mod-220m --hardware h100-sxm --baseline no-such-model").code, 2);
  EXPECT_EQ(modsim("predict mod-220m --hardware h100-sxm --graph").code, 2);  // decode only
}

TEST(Cli, SamplingMapJsonHasEveryCellAndRefusesBadAxes) {
  const result r = modsim(
      "sampling mod-220m --hardware h100-sxm --baseline dense-220m --batches 1,8 --contexts 256,4096 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object j = boost::json::parse(r.out).as_object();
  EXPECT_EQ(j.at("baseline").at("name").as_string(), "dense-220m");
  const auto& strategies = j.at("strategies").as_array();
  ASSERT_EQ(strategies.size(), 3u);  // sync, pad, pad+graphs on a GPU
  for (const auto& s : strategies) {
    const auto& cells = s.at("cells").as_array();
    ASSERT_EQ(cells.size(), 4u);
    for (const auto& c : cells) {
      const double ratio = c.at("ratio").as_double();
      EXPECT_DOUBLE_EQ(ratio, c.at("model_s").as_double() / c.at("baseline_s").as_double());
      EXPECT_EQ(c.at("reaches_target").as_bool(), ratio <= 1 / 1.5);
      double sum = 0;
      for (const auto& [k, v] : c.at("model_breakdown_s").as_object()) sum += v.as_double();
      EXPECT_NEAR(sum, c.at("model_s").as_double(), 1e-12);
    }
  }
  EXPECT_EQ(j.at("verdict").as_array().size(), 3u);
  EXPECT_EQ(modsim("sampling mod-220m --hardware h100-sxm --batches 0,8").code, 2);
  EXPECT_EQ(modsim("sampling mod-220m --hardware h100-sxm --contexts x").code, 2);
  EXPECT_EQ(modsim("sampling mod-220m --hardware h100-sxm --target 1").code, 2);
  EXPECT_EQ(modsim("sampling mod-220m --hardware h100-sxm --pad-capacity 2").code, 2);
  EXPECT_EQ(modsim("sampling mod-220m").code, 2);
}

// The KV cache of dense-220m's decode step by hand (every layer caches the whole context; the
// larger of the pair mod-220m vs dense-220m): 2 (K and V) · 16 layers · batch · context · 16 KV
// heads · 64 head dims · 2 bytes (bf16).
double dense_220m_kv_bytes(std::int64_t batch, std::int64_t context) {
  return 2.0 * 16 * double(batch) * double(context) * 16 * 64 * 2;
}

TEST(Cli, SamplingVerdictNeverNamesACellWhoseKvCacheExceedsTheH100) {
  // The grid's corners reach 550 GB of KV cache (batch 256, context 32,768).
  const result r = modsim(
      "sampling mod-220m --hardware h100-sxm --baseline dense-220m --batches 1,16,64,256 --contexts "
      "512,4096,16384,32768 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object j = boost::json::parse(r.out).as_object();
  EXPECT_DOUBLE_EQ(j.at("memory_bytes").to_number<double>(), 80e9);
  EXPECT_DOUBLE_EQ(dense_220m_kv_bytes(256, 32768), 549755813888.0);
  int too_big = 0;
  for (const auto& sv : j.at("strategies").as_array()) {
    const boost::json::object& s = sv.as_object();
    int excluded = 0, reached = 0;
    for (const auto& cv : s.at("cells").as_array()) {
      const boost::json::object& c = cv.as_object();
      const double kv = dense_220m_kv_bytes(c.at("batch").as_int64(), c.at("context").as_int64());
      const bool fits = c.at("fits").as_bool();
      EXPECT_GE(c.at("needs_bytes").to_number<double>(), kv);
      // Over 80 GB of KV alone: does not fit. Under 79 GB (the weights are 0.54 GB, a step's
      // activations a few MB): fits.
      if (kv > 80e9) {
        EXPECT_FALSE(fits) << c.at("batch").as_int64() << " x " << c.at("context").as_int64();
      }
      if (kv < 79e9) {
        EXPECT_TRUE(fits) << c.at("batch").as_int64() << " x " << c.at("context").as_int64();
      }
      if (!fits) ++excluded;
      if (fits && c.at("reaches_target").as_bool()) ++reached;
      if (kv > 80e9) ++too_big;
    }
    EXPECT_EQ(s.at("cells_excluded").as_int64(), excluded);
    EXPECT_EQ(s.at("cells_reaching_target").as_int64(), reached);
    const boost::json::object& best = s.at("best").as_object();
    EXPECT_LE(dense_220m_kv_bytes(best.at("batch").as_int64(), best.at("context").as_int64()), 80e9);
  }
  // 65,536 bytes per (batch × context): 64 × 32,768 (137 GB), 256 × 16,384 (275 GB) and
  // 256 × 32,768 (550 GB) exceed 80 GB, per strategy; 64 × 16,384 and 256 × 4,096 (68.7 GB) do not.
  EXPECT_EQ(too_big, 3 * 3);

  // Every cell the verdict names, as "batch B, context C" or as "context C: <batches>".
  const std::vector<std::int64_t> all = {1, 16, 64, 256};
  const std::regex cell_re("batch (\\d+), context (\\d+)");
  const std::regex list_re("context (\\d+): (every batch|batch >= (\\d+)|batch ([0-9, ]+))");
  for (const auto& v : j.at("verdict").as_array()) {
    const std::string line(v.as_string());
    EXPECT_NE(line.find("3 of 16 cells excluded: they do not fit in 80 GB"), std::string::npos) << line;
    int named = 0;
    for (std::sregex_iterator it(line.begin(), line.end(), cell_re), end; it != end; ++it, ++named)
      EXPECT_LE(dense_220m_kv_bytes(std::stoll((*it)[1]), std::stoll((*it)[2])), 80e9) << line;
    EXPECT_GE(named, 1) << line;  // the best cell
    for (std::sregex_iterator it(line.begin(), line.end(), list_re), end; it != end; ++it) {
      const std::int64_t context = std::stoll((*it)[1]);
      std::vector<std::int64_t> batches;
      if ((*it)[2] == "every batch")
        batches = all;
      else if ((*it)[3].matched)
        std::copy_if(all.begin(), all.end(), std::back_inserter(batches),
                     [&](std::int64_t b) { return b >= std::stoll((*it)[3]); });
      else {
        std::stringstream ss((*it)[4].str());
        std::string item;
        while (std::getline(ss, item, ',')) batches.push_back(std::stoll(item));
      }
      for (std::int64_t b : batches) EXPECT_LE(dense_220m_kv_bytes(b, context), 80e9) << line;
    }
  }

  // The same check as `predict --mode decode`: it warns on mod-220m at 256 × 16,384 (8 full layers
  // alone cache 8 · 256 · 16,385 · 4,096 = 137 GB), not at 64 × 4,096. At 64 × 32,768 mod-220m
  // fits (8 full layers 68.7 GB + 8 routed ones caching 4,097: 8.6 GB + weights) but dense-220m
  // (137 GB) does not: the map leaves that cell out, as the baseline's step cannot run.
  auto warns = [](const std::string& args) {
    const result p = modsim("predict " + args + " --hardware h100-sxm --mode decode --format json");
    EXPECT_EQ(p.code, 0) << p.err;
    const boost::json::value parsed = boost::json::parse(p.out);
    bool noted = false;
    for (const auto& n : parsed.at("notes").as_array())
      noted = noted || std::string(n.as_string()).find("memory (one GPU): does not fit in 80 GB") != std::string::npos;
    EXPECT_EQ(noted, !parsed.at("memory").at("fits").as_bool()) << args;
    return noted;
  };
  EXPECT_TRUE(warns("mod-220m --batch 256 --seq 16384"));
  EXPECT_FALSE(warns("mod-220m --batch 64 --seq 4096"));
  EXPECT_FALSE(warns("mod-220m --batch 64 --seq 32768"));
  EXPECT_TRUE(warns("dense-220m --batch 64 --seq 32768"));
}

TEST(Cli, AFusedPrefillOf64kTokensFitsAndTheUnfusedOneSaysItsScores) {
  // dense-220m, one sequence of 65,536 tokens, bf16 on 80 GB. Unfused attention writes
  // B·H·S²·2 = 16 · 65,536² · 2 = 137 GB of scores per layer; fused (the GPU default) keeps
  // 16 · 65,536 fp32 row statistics and a 65,536 × 1,024 output: about 6 GB in all.
  auto memory_notes = [](const std::string& out) {
    std::string all;
    const boost::json::value j = boost::json::parse(out);
    for (const auto& n : j.at("notes").as_array())
      if (std::string(n.as_string()).rfind("memory (one GPU):", 0) == 0) all += std::string(n.as_string()) + "\n";
    return all;
  };
  const result fused = modsim("predict dense-220m --hardware h100-sxm --seq 65536 --format json");
  ASSERT_EQ(fused.code, 0) << fused.err;
  EXPECT_EQ(memory_notes(fused.out), "");
  const result unfused = modsim("predict dense-220m --hardware h100-sxm --seq 65536 --attention unfused --format json");
  ASSERT_EQ(unfused.code, 0) << unfused.err;
  EXPECT_NE(memory_notes(unfused.out).find("the attention scores of one layer (B·H·S² unfused) take 137 GB"),
            std::string::npos)
      << memory_notes(unfused.out);
}

TEST(Cli, SimulateWithoutASubcommandSaysSoWithAUsageLine) {
  for (const std::string args : {"simulate mod-220m --hardware h100-sxm", "simulate", "simulate --hardware h100-sxm"}) {
    SCOPED_TRACE(args);
    const result r = modsim(args);
    EXPECT_EQ(r.code, 2);  // bad usage
    EXPECT_NE(r.err.find("simulate needs a subcommand"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("forward or serve"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("\nusage: modsim simulate forward|serve MODEL --hardware HW"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("'--model' is required"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  const result no_model = modsim("simulate forward --hardware h100-sxm");
  EXPECT_EQ(no_model.code, 2);
  EXPECT_NE(no_model.err.find("simulate forward needs a MODEL"), std::string::npos) << no_model.err;
  const result no_hw = modsim("simulate serve mod-60m");
  EXPECT_EQ(no_hw.code, 2);
  EXPECT_NE(no_hw.err.find("--hardware: is required"), std::string::npos) << no_hw.err;
}

TEST(Cli, AnUnknownModelNameListsTheShippedNames) {
  const result r = modsim("predict nosuch --hardware h100-sxm");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("modsim predict: error: nosuch: no such file, and no shipped model of that name", 0), 0u)
      << r.err;
  EXPECT_EQ(lines(r.err), 1);
  // Every shipped model file's bare name, and the HuggingFace configs by path.
  for (const auto& e : std::filesystem::directory_iterator(std::string(MODSIM_SOURCE_DIR) + "/configs/models"))
    EXPECT_NE(r.err.find(" " + e.path().stem().string()), std::string::npos) << e.path();
  EXPECT_NE(r.err.find("configs/hf/llama-3-8b.json"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("cannot open file"), std::string::npos);
  // An unknown hardware name lists the shipped hardware files the same way.
  const result hw = modsim("predict mod-60m --hardware nosuch");
  EXPECT_EQ(hw.code, 2);
  EXPECT_NE(hw.err.find("no shipped hardware of that name; shipped: "), std::string::npos) << hw.err;
  EXPECT_NE(hw.err.find("h100-sxm"), std::string::npos) << hw.err;
}

TEST(Cli, ProfileHelpSaysMaxTimeCapsEachPoint) {
  const result r = modsim("profile --help");
  EXPECT_EQ(r.code, 0);
  const auto at = r.out.find("--max-time arg");
  ASSERT_NE(at, std::string::npos);
  std::string text = r.out.substr(at, 400);
  std::string flat;  // the help's line breaks and indentation as single spaces
  for (char c : text) {
    const char d = c == '\n' ? ' ' : c;
    if (!(d == ' ' && !flat.empty() && flat.back() == ' ')) flat += d;
  }
  EXPECT_NE(flat.find("a cap per point, not on the whole run"), std::string::npos) << flat;
  EXPECT_NE(r.out.find("--time-budget"), std::string::npos);
}

TEST(Cli, ProfileTimeBudgetCapsTheWholeRun) {
  const auto csv =
      std::filesystem::temp_directory_path() / ("modsim_cli_budget_" + std::to_string(::getpid()) + ".csv");
  const auto meta = std::filesystem::path(csv).replace_extension(".meta.json");
  // A budget of 0 s: no point starts (deterministic, unlike any other budget); a clean stop, exit 0.
  const result r =
      modsim("profile --backend cpu --preset quick --time-budget 0 --format json --out '" + csv.string() + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  const boost::json::object o = boost::json::parse(r.out).as_object();
  EXPECT_EQ(o.at("measured").as_int64(), 0);
  EXPECT_TRUE(o.at("time_budget_reached").as_bool());
  EXPECT_FALSE(o.at("interrupted").as_bool());
  EXPECT_NE(r.err.find("the --time-budget of 0 s stopped the run: 0 of "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run again with --resume to measure the remaining"), std::string::npos) << r.err;
  EXPECT_NE(slurp(meta.string()).find("\"status\":\"time_budget\""), std::string::npos);
  // The stop rule's caps: --max-time 0.5 (quick) and the noisy cap, 4 x that by default.
  const boost::json::object rule = boost::json::parse(slurp(meta.string())).at("stop_rule").as_object();
  EXPECT_DOUBLE_EQ(rule.at("max_time_s").to_number<double>(), 0.5);
  EXPECT_DOUBLE_EQ(rule.at("noisy_max_time_s").to_number<double>(), 2.0);
  EXPECT_EQ(rule.at("noisy_min_samples").to_number<int>(), 15);
  std::filesystem::remove(csv);
  std::filesystem::remove(meta);
  EXPECT_EQ(modsim("profile --backend cpu --preset quick --time-budget -1 --out '" + csv.string() + "'").code, 2);
  const result noisy = modsim("profile --backend cpu --preset quick --max-noisy-time -1 --out '" + csv.string() + "'");
  EXPECT_EQ(noisy.code, 2);
  EXPECT_NE(noisy.err.find("--max-noisy-time: must be a number of seconds >= 0"), std::string::npos) << noisy.err;
  EXPECT_FALSE(std::filesystem::exists(csv));
}

TEST(Cli, ReportDrawsItsChartsWithoutQtRuntimeDirNoise) {
  const auto dir = std::filesystem::temp_directory_path() / ("modsim_cli_report_" + std::to_string(::getpid()));
  // No XDG_RUNTIME_DIR, as in a container or a CI job: Qt would say so on stderr.
  const result r = modsim("report mod-60m --hardware h100-sxm --no-serving --no-sampling --out '" + dir.string() + "'",
                          "env -u XDG_RUNTIME_DIR");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("XDG_RUNTIME_DIR"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("report: "), std::string::npos);  // its own progress still there
}

TEST(Cli, ProfileCheckFindsMissingAndDuplicatedPointsAcrossShards) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("modsim_cli_check_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // Four points (two sequence lengths x two widths) of one cheap op, in two shards.
  const fs::path grid = dir / "grid.json";
  std::ofstream(grid) << R"({"ops": ["attn_norm"], "dtype": "fp32", "batch": [1], "seq_len": [8, 16],
                            "d_model": [32, 64], "n_heads": [2], "d_ff": [64]})";
  const std::string g = "profile --backend cpu --threads 1 --max-time 0.001 --grid '" + grid.string() + "'";
  for (int i = 1; i <= 2; ++i)
    ASSERT_EQ(modsim(g + " --shard " + std::to_string(i) + "/2 --out '" +
                     (dir / ("s" + std::to_string(i) + ".csv")).string() + "'")
                  .code,
              0);
  const std::string s1 = "'" + (dir / "s1.csv").string() + "'", s2 = "'" + (dir / "s2.csv").string() + "'";
  // Both shards: every point once.
  result r = modsim(g + " --check " + s1 + " " + s2 + " --format json");
  EXPECT_EQ(r.code, 0) << r.err;
  boost::json::object o = boost::json::parse(r.out).as_object();
  EXPECT_EQ(o.at("points").as_int64(), 4);
  EXPECT_EQ(o.at("rows").as_int64(), 4);
  EXPECT_TRUE(o.at("complete").as_bool());
  // One shard alone: the other's two points are missing (shards deal whole shapes: two each).
  r = modsim(g + " --check " + s1 + " --format json");
  EXPECT_EQ(r.code, 1);
  o = boost::json::parse(r.out).as_object();
  EXPECT_EQ(o.at("missing").as_array().size(), 2u);
  // The same shard twice: its two rows are duplicated.
  r = modsim(g + " --check " + s1 + " " + s1 + " " + s2 + " --format json");
  EXPECT_EQ(r.code, 1);
  o = boost::json::parse(r.out).as_object();
  EXPECT_EQ(o.at("duplicated").as_array().size(), 2u);
  EXPECT_EQ(o.at("missing").as_array().size(), 0u);
  fs::remove_all(dir);
}

TEST(Cli, RoutingFlagsOnAnMoeModelWithoutModAreRefused) {
  // moe-220m and Mixtral route no tokens past blocks: a capacity or schedule would be ignored.
  for (const char* args : {"flops moe-220m --capacity 0.125", "flops configs/hf/mixtral-8x7b.json --schedule all"}) {
    const result r = modsim(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("MoE model without MoD routing"), std::string::npos) << r.err;
  }
  // A MoDE model takes them.
  EXPECT_EQ(modsim("flops mode-staged-220m --capacity 0.25").code, 0);
}

TEST(Cli, SweepOverASplitTimesItsCurrentPointAsPredictDoes) {
  const auto csv =
      std::filesystem::temp_directory_path() / ("modsim_cli_sweep_tp_" + std::to_string(::getpid()) + ".csv");
  const result s = modsim("sweep mod-60m --hardware h100-sxm --tp 2 --format json --out '" + csv.string() + "'");
  ASSERT_EQ(s.code, 0) << s.err;
  const boost::json::object sweep = boost::json::parse(s.out).as_object();
  const boost::json::object& current =
      sweep.at("points").as_array().at(static_cast<std::size_t>(sweep.at("current_point").as_int64())).as_object();
  const result p = modsim("predict mod-60m --hardware h100-sxm --tp 2 --format json");
  ASSERT_EQ(p.code, 0) << p.err;
  const boost::json::object predict = boost::json::parse(p.out).as_object();
  // One step over two GPUs, the same number in both commands.
  EXPECT_DOUBLE_EQ(current.at("time_s").to_number<double>(),
                   predict.at("parallel").at("model").at("step_s").to_number<double>());
  // A split the model cannot take is one line of bad input; --gpus is predict's and report's.
  const result bad = modsim("sweep mod-60m --hardware h100-sxm --tp 3 --out '" + csv.string() + "'");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--tp: n_heads 8 is not divisible by 3"), std::string::npos) << bad.err;
  EXPECT_EQ(modsim("sweep mod-60m --hardware h100-sxm --gpus 8 --out '" + csv.string() + "'").code, 2);
  std::filesystem::remove(csv);
}

TEST(Cli, SimulateForwardOverGpusShowsEachStageAndItsCollectives) {
  const auto trace =
      std::filesystem::temp_directory_path() / ("modsim_cli_sim_tp_" + std::to_string(::getpid()) + ".json");
  const result r = modsim(
      "simulate forward mod-60m --hardware h100-sxm --batch 8 --seq 512 --tp 2 --pp 2 --format json "
      "--trace '" +
      trace.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object o = boost::json::parse(r.out).as_object();
  EXPECT_EQ(o.at("parallel").at("pp").as_int64(), 2);
  EXPECT_EQ(o.at("parallel").at("micro_batches").as_int64(), 8);  // default 4 x pp, at most the batch
  const boost::json::array& devices = o.at("devices").as_array();
  ASSERT_EQ(devices.size(), 2u);
  for (const auto& d : devices) {
    // Every GPU's step is busy, waiting on its host or waiting on the other stage.
    const auto& g = d.as_object();
    EXPECT_NEAR(g.at("busy_s").to_number<double>() + g.at("wait_host_s").to_number<double>() +
                    g.at("wait_other_s").to_number<double>(),
                o.at("step_s").to_number<double>(), 1e-9);
  }
  const std::string t = slurp(trace.string());
  EXPECT_NE(t.find("GPU 1 (stage 1)"), std::string::npos);
  EXPECT_NE(t.find("\"tp_all_reduce\""), std::string::npos);
  std::filesystem::remove(trace);

  // TP alone, forward: two all-reduces per layer (mod-60m has 14), one kernel row each.
  const result csv = modsim("simulate forward mod-60m --hardware h100-sxm --batch 2 --seq 256 --tp 2 --format csv");
  ASSERT_EQ(csv.code, 0) << csv.err;
  std::size_t all_reduces = 0;
  for (std::size_t at = csv.out.find(",tp_all_reduce,"); at != std::string::npos;
       at = csv.out.find(",tp_all_reduce,", at + 1))
    ++all_reduces;
  EXPECT_EQ(all_reduces, 28u);
  // A split the model cannot take, and --gpus (predict's), are one line of bad input.
  EXPECT_EQ(modsim("simulate forward mod-60m --hardware h100-sxm --tp 3").code, 2);
  EXPECT_EQ(modsim("simulate forward mod-60m --hardware h100-sxm --gpus 8").code, 2);
}

TEST(Cli, SimulateServeOverGpus) {
  const result r = modsim("simulate serve mod-60m --hardware h100-sxm --requests 20 --rate 50 --tp 2 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object o = boost::json::parse(r.out).as_object();
  EXPECT_EQ(o.at("parallel").at("tp").as_int64(), 2);
  EXPECT_EQ(o.at("completed").as_int64(), 20);
  // Two replicas share the requests.
  const result dp = modsim("simulate serve mod-60m --hardware h100-sxm --requests 20 --rate 50 --dp 2 --format json");
  ASSERT_EQ(dp.code, 0) << dp.err;
  const boost::json::object d = boost::json::parse(dp.out).as_object();
  EXPECT_EQ(d.at("parallel").at("dp").as_int64(), 2);
  EXPECT_EQ(d.at("completed").as_int64(), 20);
  const result bad = modsim("simulate serve mod-60m --hardware h100-sxm --requests 20 --dp 0");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  EXPECT_NE(bad.err.find("--dp"), std::string::npos) << bad.err;
}

TEST(Cli, SimulateServeKeepsTheRoutingWithTheBetterServedTpot) {
  // Without --decode-routing, serve runs both routings on the workload's own batches. Each routing
  // served on its own (--decode-routing) gives the figures the choice must be made from.
  const std::string run = "simulate serve mod-220m --hardware h100-sxm --requests 40 --rate 20 --seed 3 --format json";
  struct served {
    double tpot_p50 = 0;
    std::int64_t dropped = 0;
  };
  std::map<std::string, served> alone;
  for (const char* routing : {"sync", "pad"}) {
    const result r = modsim(run + " --decode-routing " + routing);
    ASSERT_EQ(r.code, 0) << r.err;
    const boost::json::object o = boost::json::parse(r.out).as_object();
    alone[routing] = {o.at("tpot_s").at("p50").to_number<double>(), o.at("dropped_tokens").to_number<std::int64_t>()};
  }
  // The expected winner: no dropped tokens first, then the lower TPOT p50.
  auto better = [](const served& a, const served& b) {
    if ((a.dropped == 0) != (b.dropped == 0)) return a.dropped == 0;
    return a.tpot_p50 < b.tpot_p50;
  };
  const std::string expect = better(alone["pad"], alone["sync"]) ? "pad" : "sync";

  const result r = modsim(run);
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object o = boost::json::parse(r.out).as_object();
  const boost::json::object& ch = o.at("decode_routing_choice").as_object();
  EXPECT_EQ(ch.at("chosen").as_string(), expect);
  EXPECT_EQ(o.at("decode_routing").as_string(), expect);
  // The run reported is the chosen routing's run, and each routing tried is the run on its own.
  EXPECT_DOUBLE_EQ(o.at("tpot_s").at("p50").to_number<double>(), alone[expect].tpot_p50);
  const boost::json::array& tried = ch.at("tried").as_array();
  ASSERT_EQ(tried.size(), 2u);
  for (const boost::json::value& t : tried) {
    const std::string routing(t.at("routing").as_string());
    ASSERT_TRUE(alone.count(routing)) << routing;
    EXPECT_DOUBLE_EQ(t.at("tpot_p50_s").to_number<double>(), alone[routing].tpot_p50) << routing;
    EXPECT_EQ(t.at("dropped_tokens").to_number<std::int64_t>(), alone[routing].dropped) << routing;
    EXPECT_GT(t.at("mean_decode_batch").to_number<double>(), 0) << routing;
  }
  // The text names the winner and the loser's TPOT.
  const result text = modsim("simulate serve mod-220m --hardware h100-sxm --requests 40 --rate 20 --seed 3");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("decode routing " + expect + ": the lower TPOT p50"), std::string::npos) << text.out;
}

TEST(Cli, EveryPredictionSaysHowAttentionRuns) {
  // The shipped H100 calibration measured unfused attention: the default (fused) is not
  // measured and has no band; --attention unfused is, and has one.
  const result f = modsim("predict mod-220m --hardware h100-sxm-calibrated --format json");
  const result u = modsim("predict mod-220m --hardware h100-sxm-calibrated --attention unfused --format json");
  ASSERT_EQ(f.code, 0) << f.err;
  ASSERT_EQ(u.code, 0) << u.err;
  const boost::json::object fj = boost::json::parse(f.out).as_object();
  const boost::json::object uj = boost::json::parse(u.out).as_object();
  EXPECT_EQ(fj.at("attention").as_string(), "fused");
  EXPECT_FALSE(fj.at("attention_measured").as_bool());
  EXPECT_FALSE(fj.contains("expected_error"));
  EXPECT_EQ(uj.at("attention").as_string(), "unfused");
  EXPECT_TRUE(uj.at("attention_measured").as_bool());
  EXPECT_TRUE(uj.contains("expected_error"));
  const result t = modsim("predict mod-220m --hardware h100-sxm-calibrated");
  EXPECT_NE(t.out.find("attention: fused"), std::string::npos);
  EXPECT_NE(t.out.find("NO BAND"), std::string::npos);
  // A CPU predicts modsim's own (unfused) kernels unless told otherwise.
  const result c = modsim("predict mod-60m --hardware cpu-calibrated --batch 1 --seq 256 --format json");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(boost::json::parse(c.out).at("attention").as_string(), "unfused");
  // The other commands state it too.
  for (const std::string& cmd :
       {std::string("simulate forward mod-220m --hardware h100-sxm --attention unfused --format json"),
        std::string("sampling mod-220m --hardware h100-sxm --batches 1 --contexts 512 --draws 1 --attention unfused "
                    "--format json")}) {
    const result r = modsim(cmd);
    ASSERT_EQ(r.code, 0) << cmd << ": " << r.err;
    EXPECT_EQ(boost::json::parse(r.out).at("attention").as_string(), "unfused") << cmd;
  }
  // A bad value: one line naming the flag, exit 2 (bad input), on every command that takes it.
  for (const char* cmd : {"predict mod-220m --hardware h100-sxm", "simulate forward mod-220m --hardware h100-sxm",
                          "sampling mod-220m --hardware h100-sxm", "sweep mod-220m --hardware h100-sxm --out /dev/null",
                          "report --out /tmp/modsim-never-written"}) {
    const result r = modsim(std::string(cmd) + " --attention flash");
    EXPECT_EQ(r.code, 2) << cmd;
    EXPECT_EQ(lines(r.err), 1) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("--attention"), std::string::npos) << cmd;
    EXPECT_EQ(r.out, "") << cmd;
  }
}

// Parameters of a Llama-shaped stack counted by hand: per layer Wq, Wo (d·d), Wk, Wv (d·d_kv),
// the MLP (3·d·F for SwiGLU, 2·d·F for gelu) and two norms; the embedding and the LM head.
double hand_parameters(double d, double layers, double heads, double kv_heads, double ff, double vocab, bool swiglu) {
  const double d_kv = d / heads * kv_heads;
  const double layer = 2 * d * d + 2 * d * d_kv + (swiglu ? 3 : 2) * d * ff + 2 * d;
  return layers * layer + 2 * vocab * d;
}

TEST(Cli, PredictOverASplitHeadlinesTheSplitsStepAndItsMemoryPerGpu) {
  const result r = modsim("predict mod-70b --hardware h100-sxm --batch 8 --seq 4096 --tp 8 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const boost::json::object j = boost::json::parse(r.out).as_object();
  const boost::json::object& par = j.at("parallel").as_object();
  // docs/contracts.md: total_s is the split's step; the one-GPU figures stay beside it, labelled.
  EXPECT_EQ(j.at("total_s").as_double(), par.at("model").at("step_s").as_double());
  EXPECT_EQ(j.at("dense_total_s").as_double(), par.at("baseline").at("step_s").as_double());
  EXPECT_DOUBLE_EQ(j.at("time_ratio").as_double(),
                   par.at("model").at("step_s").as_double() / par.at("baseline").at("step_s").as_double());
  EXPECT_LT(j.at("total_s").as_double(), j.at("one_gpu").at("total_s").as_double());
  EXPECT_EQ(j.at("gpus").as_int64(), 8);
  // Memory per GPU: a tenth of the 141 GB of bf16 weights fits in 80 GB; one GPU would not.
  const double p = hand_parameters(8192, 80, 64, 8, 28672, 128256, true);
  const boost::json::object& mem = j.at("memory").as_object();
  EXPECT_NE(std::string(mem.at("scope").as_string()).find("per GPU"), std::string::npos);
  EXPECT_NEAR(mem.at("weights_bytes").as_double(), 2 * p / 8, 0.02 * 2 * p / 8);
  EXPECT_TRUE(mem.at("fits").as_bool());
  EXPECT_GT(2 * p, 80e9);
  for (const auto& n : j.at("notes").as_array())
    EXPECT_EQ(std::string(n.as_string()).find("does not fit"), std::string::npos) << n;
  // The table says the same: the split's step row, and the one-GPU table named as such.
  const result t = modsim("predict mod-70b --hardware h100-sxm --batch 8 --seq 4096 --tp 8");
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("step, 8 GPUs"), std::string::npos);
  EXPECT_NE(t.out.find("1-GPU total"), std::string::npos);
  EXPECT_NE(t.out.find("vs dense over 8 GPUs"), std::string::npos);
  EXPECT_EQ(t.out.find("does not fit"), std::string::npos);
}

TEST(Cli, PredictShowsMemoryWithoutASplitAndSaysHowTrainingIsPriced) {
  // One GPU: bf16 weights 2·P; in training P·2 of gradients and two fp32 moments, 8·P.
  const double p = hand_parameters(1024, 16, 16, 16, 4096, 32000, false);
  const result f = modsim("predict dense-220m --hardware h100-sxm --format json");
  ASSERT_EQ(f.code, 0) << f.err;
  const boost::json::object fm = boost::json::parse(f.out).at("memory").as_object();
  EXPECT_EQ(fm.at("scope").as_string(), "one GPU");
  EXPECT_NEAR(fm.at("weights_bytes").as_double(), 2 * p, 0.01 * 2 * p);
  EXPECT_EQ(fm.at("training_state_bytes").as_double(), 0.0);
  EXPECT_TRUE(fm.at("fits").as_bool());
  const result t = modsim("predict dense-220m --hardware h100-sxm --mode train --format json");
  ASSERT_EQ(t.code, 0) << t.err;
  const boost::json::object tj = boost::json::parse(t.out).as_object();
  // Gradients 2·P, two fp32 moments 8·P and the fp32 master copy of bf16 weights 4·P.
  EXPECT_NEAR(tj.at("memory").at("training_state_bytes").as_double(), 14 * p, 0.01 * 14 * p);
  EXPECT_NE(std::string(tj.at("train_pricing").at("optimizer").as_string()).find("AdamW, 28 bytes per parameter"),
            std::string::npos);
  EXPECT_EQ(tj.at("train_pricing").at("batch").as_string(), "global (batch / dp per replica)");
  const result text = modsim("predict dense-220m --hardware h100-sxm --mode train");
  EXPECT_NE(text.out.find("+ optimizer"), std::string::npos);
  EXPECT_NE(text.out.find("--batch is the global batch"), std::string::npos);
  EXPECT_NE(text.out.find("memory (one GPU)"), std::string::npos);
}

// The report's Parallelism sentences follow its numbers: a split slower than one GPU says so;
// communication said to shrink only where it did.
TEST(Cli, ReportParallelismSentencesComeFromItsNumbers) {
  const auto dir = std::filesystem::temp_directory_path() / ("modsim_par_report_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto report_md = [&](const std::string& args) {
    const result r = modsim("report " + args + " --no-serving --no-sampling --no-charts --out '" + dir.string() + "'");
    EXPECT_EQ(r.code, 0) << r.err;
    std::string md = slurp((dir / "report.md").string());
    const std::size_t at = md.find("{#parallel}");
    return at == std::string::npos ? std::string() : md.substr(at, md.find("\n## ", at) - at);
  };
  // Batch 1: the one-GPU step from `predict` against every split of the report's ranking.
  const result one = modsim("predict mod-220m --hardware h100-sxm-calibrated --batch 1 --format json");
  ASSERT_EQ(one.code, 0) << one.err;
  const double one_s = boost::json::parse(one.out).at("total_s").as_double();
  const std::string md = report_md("mod-220m --hardware h100-sxm-calibrated --batch 1 --gpus 8");
  std::istringstream csv(slurp((dir / "tables" / "parallel.csv").string()));
  std::string line;
  std::getline(csv, line);  // header: tp,pp,dp,ep,micro_batches,step_s,...
  bool all_slower = true;
  int splits = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
    ASSERT_GE(f.size(), 6u) << line;
    all_slower = all_slower && std::stod(f[5]) > one_s;
    ++splits;
  }
  ASSERT_GT(splits, 0);
  EXPECT_EQ(md.find("Every split of 8 GPUs is slower than one GPU") != std::string::npos, all_slower) << md;
  // DP 8 training of mod-1b: the gradient all-reduce is the dense model's, the backward that
  // hides it shorter, so MoD's exposed communication exceeds the baseline's.
  const result dp = modsim("predict mod-1b --hardware h100-sxm --dp 8 --batch 8 --mode train --format json");
  ASSERT_EQ(dp.code, 0) << dp.err;
  const boost::json::object par = boost::json::parse(dp.out).at("parallel").as_object();
  const double m_dp = par.at("model").at("dp_exposed_s").as_double();
  const double b_dp = par.at("baseline").at("dp_exposed_s").as_double();
  const std::string dp_md = report_md("mod-1b --hardware h100-sxm --dp 8 --batch 8 --mode train");
  ASSERT_GT(m_dp, b_dp);  // the case this part is about
  EXPECT_NE(dp_md.find("the baseline's**, because the gradient all-reduce"), std::string::npos) << dp_md;
  EXPECT_EQ(dp_md.find("shrink"), std::string::npos) << dp_md;
  std::filesystem::remove_all(dir);
}

// A trust figure stands only beside the predictions it belongs to: the H100 calibration ran
// unfused attention, so a fused prediction (the GPU default) gets no "median |error|" card.
TEST(Cli, ReportPutsTheMeasuredErrorOnlyBesidePredictionsItCovers) {
  const auto dir = std::filesystem::temp_directory_path() / ("modsim_trust_report_" + std::to_string(::getpid()));
  auto verdict = [&](const std::string& attention) {
    std::filesystem::remove_all(dir);
    const result r = modsim("report mod-220m --hardware h100-sxm-calibrated --attention " + attention +
                            " --no-serving --no-sampling --no-charts --out '" + dir.string() + "'");
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string md = slurp((dir / "report.md").string());
    return md.substr(0, md.find("\n## ", md.find("Verdict")));
  };
  const std::string fused = verdict("fused");
  EXPECT_EQ(fused.find("median |error| vs measured"), std::string::npos) << fused;
  EXPECT_NE(fused.find("**no band**"), std::string::npos) << fused;
  EXPECT_NE(fused.find("so they carry no band"), std::string::npos) << fused;
  const std::string unfused = verdict("unfused");
  EXPECT_NE(unfused.find("median |error| vs measured"), std::string::npos) << unfused;
  EXPECT_EQ(unfused.find("no band"), std::string::npos) << unfused;
  std::filesystem::remove_all(dir);
}

// When the time budget stops a run, progress and the last lines count what was measured: a
// 4-point grid stopped before its first point says 0 of 4, never 4/4.
TEST(Cli, AProfileStoppedByItsBudgetSaysHowManyOfHowManyItMeasured) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("modsim_cli_stopped_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path grid = dir / "grid.json";
  std::ofstream(grid) << R"({"ops": ["attn_norm"], "dtype": "fp32", "batch": [1], "seq_len": [8, 16],
                            "d_model": [32, 64], "n_heads": [2], "d_ff": [64]})";
  const result r = modsim("profile --backend cpu --threads 1 --time-budget 0 --grid '" + grid.string() + "' --out '" +
                          (dir / "m.csv").string() + "'");
  fs::remove_all(dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("profile: stopped after 0/4 points (0 measured in this run)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the --time-budget of 0 s stopped the run: 0 of 4 points measured (0 now, 0 already in the "
                       "file); run again with --resume to measure the remaining 4"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("4/4"), std::string::npos) << r.err;
}

namespace {

// A small HF config: d 64, 2 layers, 4 heads of 16 (dq 64), 2 KV heads (dkv 32), F 128, V 100.
std::filesystem::path small_hf(const std::string& name, const std::string& extra) {
  const auto path = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "hidden_act": "silu")"
                      << extra << "}";
  return path;
}

// The first layer's op `op` from a flops or predict JSON.
boost::json::object layer0_op(const boost::json::value& v, const std::string& op) {
  for (const auto& o : v.at("layers").at(0).at("ops").as_array())
    if (o.at("op").as_string() == op) return o.as_object();
  ADD_FAILURE() << "no " << op;
  return {};
}

std::int64_t int_of(const boost::json::object& o, const char* key) { return o.at(key).to_number<std::int64_t>(); }

}  // namespace

// sliding_window 3 at S = 8: each of the 8 queries attends to min(8, 3) = 3 keys (the full-square
// convention of flops.hpp: 8·3 = 24 pairs, not 8·8): scores 2·B·n·L·dq = 2·1·8·3·64 = 3,072
// FLOPs (8,192 without the window), softmax 5·B·H·n·L = 5·4·8·3 = 480. Decode over 10 cached
// tokens: 3 keys, not 11: 2·1·1·3·64 = 384. predict (forward and decode) prices the same ops and
// says so; the decode KV cache holds 3 positions per layer: 2 layers · B 1 · 3 · 2 · dkv 32 ·
// 2 bytes = 768 bytes.
TEST(Cli, ASlidingWindowCapsTheKeysOfFlopsPredictAndTheKvCache) {
  const auto windowed = small_hf("modsim_sw", R"(, "sliding_window": 3)");
  const auto full = small_hf("modsim_sw_null", R"(, "sliding_window": null)");
  const std::string w = "'" + windowed.string() + "'", f = "'" + full.string() + "'";
  const result fw = modsim("flops " + w + " --batch 1 --seq 8 --format json");
  ASSERT_EQ(fw.code, 0) << fw.err;
  const boost::json::value fj = boost::json::parse(fw.out);
  EXPECT_EQ(int_of(fj.as_object(), "sliding_window"), 3);
  EXPECT_EQ(int_of(layer0_op(fj, "attn_scores"), "matmul_flops"), 3072);
  EXPECT_EQ(int_of(layer0_op(fj, "attn_values"), "matmul_flops"), 3072);
  EXPECT_EQ(int_of(layer0_op(fj, "attn_softmax"), "other_flops"), 480);
  const result ff = modsim("flops " + f + " --batch 1 --seq 8 --format json");
  ASSERT_EQ(ff.code, 0) << ff.err;
  EXPECT_FALSE(boost::json::parse(ff.out).as_object().contains("sliding_window"));
  EXPECT_EQ(int_of(layer0_op(boost::json::parse(ff.out), "attn_scores"), "matmul_flops"), 8192);
  const result fd = modsim("flops " + w + " --batch 1 --seq 10 --mode decode --format json");
  ASSERT_EQ(fd.code, 0) << fd.err;
  EXPECT_EQ(int_of(layer0_op(boost::json::parse(fd.out), "attn_scores"), "matmul_flops"), 384);
  const result table = modsim("flops " + w + " --batch 1 --seq 8");
  EXPECT_NE(table.out.find("sliding window 3: each query attends to at most 3 keys"), std::string::npos) << table.out;

  const result pf = modsim("predict " + w + " --hardware h100-sxm --batch 1 --seq 8 --format json");
  ASSERT_EQ(pf.code, 0) << pf.err;
  EXPECT_EQ(int_of(layer0_op(boost::json::parse(pf.out), "attn_scores"), "matmul_flops"), 3072);
  const result pd =
      modsim("predict " + w + " --hardware h100-sxm --batch 1 --seq 10 --mode decode --dp 1 --format json");
  ASSERT_EQ(pd.code, 0) << pd.err;
  const boost::json::value pj = boost::json::parse(pd.out);
  EXPECT_EQ(int_of(pj.as_object(), "sliding_window"), 3);
  EXPECT_EQ(int_of(layer0_op(pj, "attn_scores"), "matmul_flops"), 384);
  EXPECT_DOUBLE_EQ(pj.at("parallel").at("model").at("memory_per_gpu").at("kv_cache_bytes").to_number<double>(), 768.0);
  const result pt = modsim("predict " + w + " --hardware h100-sxm --batch 1 --seq 10 --mode decode");
  EXPECT_NE(pt.out.find("sliding window 3"), std::string::npos) << pt.out;
  // simulate serve honours the keys and says what it does not: the paged cache's blocks.
  const result s = modsim("simulate serve " + w + " --hardware h100-sxm --requests 5 --rate 10");
  EXPECT_EQ(s.code, 0) << s.err;
  EXPECT_NE(s.out.find("NOT modelled here: the paged KV cache"), std::string::npos) << s.out;
  std::filesystem::remove(windowed);
  std::filesystem::remove(full);
}

// A GPT-2 config.json reads: d 64, 2 layers, 4 heads, n_inner null → d_ff 4·64 = 256, gelu.
// Parameters by hand: per layer 4·d² (QKV, out) + 2·d (norms) + 2·d·F (gelu MLP) = 16,384 + 128
// + 32,768 = 49,280; two layers 98,560; + the embedding V·d = 6,400, which GPT-2's LM head shares
// (tie_word_embeddings absent: tied), + final norm 64: 105,024; untied ("tie_word_embeddings":
// false) the LM head's own 6,400 more: 111,424. Heads written 4.0 read as 4; 4.5 is refused
// naming the file, the key and why.
TEST(Cli, AGpt2ConfigAndIntegralFloatsRead) {
  const auto path = std::filesystem::temp_directory_path() / ("modsim_gpt2_" + std::to_string(::getpid()) + ".json");
  const auto write = [&](const std::string& heads) {
    std::ofstream(path) << R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": )" << heads
                        << R"(, "n_inner": null, "n_positions": 1024, "vocab_size": 100,
        "activation_function": "gelu_new"})";
  };
  write("4");
  const result r = modsim("flops '" + path.string() + "' --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(int_of(boost::json::parse(r.out).as_object(), "params"), 105024);
  EXPECT_NE(
      modsim("flops '" + path.string() + "'").out.find("0.1 M parameters (the LM head's weight is the embedding's)"),
      std::string::npos);
  write("4.0, \"tie_word_embeddings\": false");
  const result f = modsim("flops '" + path.string() + "' --format json");
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_EQ(int_of(boost::json::parse(f.out).as_object(), "params"), 111424);
  write("4.5");
  const result bad = modsim("flops '" + path.string() + "'");
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(lines(bad.err), 1) << bad.err;
  EXPECT_NE(bad.err.find(path.string() + ": n_head: expected an integer, got 4.5 (not a whole number)"),
            std::string::npos)
      << bad.err;
  std::filesystem::remove(path);
}

// calibrate names its result after --out (cpu-mine.json: "cpu-mine") or --name, and a
// calibration without cross-validation (--cv 0) has no band: predictions say so, table and JSON.
TEST(Cli, ACalibrationIsNamedAfterItsFileAndSaysWhenItHasNoBand) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("modsim_cli_name_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string out = (dir / "cpu-mine.json").string();
  const std::string fit =
      "calibrate --measurements reports/measurements/cpu-xeon-2core-2026-11-24c-calibration-2.csv --hardware cpu "
      "--cv 0 --out '" +
      out + "'";
  ASSERT_EQ(modsim(fit).code, 0);
  const result p = modsim("predict mod-60m --hardware '" + out + "' --batch 1 --seq 256");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("mod-60m on cpu-mine:"), std::string::npos) << p.out.substr(0, 300);
  EXPECT_EQ(p.out.find("cpu-calibrated"), std::string::npos);
  EXPECT_NE(p.out.find("expected error: NO BAND - this calibration was made without cross-validation"),
            std::string::npos)
      << p.out;
  const result j = modsim("predict mod-60m --hardware '" + out + "' --batch 1 --seq 256 --format json");
  ASSERT_EQ(j.code, 0) << j.err;
  const boost::json::object o = boost::json::parse(j.out).as_object();
  EXPECT_EQ(o.at("hardware").as_string(), "cpu-mine");
  EXPECT_FALSE(o.contains("expected_error"));
  EXPECT_NE(std::string(o.at("no_error_band").as_string()).find("without cross-validation"), std::string::npos);
  ASSERT_EQ(modsim(fit + " --name xeon-2core").code, 0);
  const result named = modsim("predict mod-60m --hardware '" + out + "' --batch 1 --seq 256 --format json");
  EXPECT_EQ(boost::json::parse(named.out).at("hardware").as_string(), "xeon-2core");
  const result empty = modsim(fit + " --name ''");
  EXPECT_EQ(empty.code, 2);
  EXPECT_NE(empty.err.find("--name: must not be empty"), std::string::npos) << empty.err;
  fs::remove_all(dir);
}

// A serving run too large to finish is refused at once, one line, exit 2, with the bound.
TEST(Cli, SimulateServeRefusesARunTooLargeToFinish) {
  const result r = modsim("simulate serve mod-60m --hardware h100-sxm --rate 1e9 --requests 100000000");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--requests: 100000000 requests generating"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cannot finish"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
  // Output tokens count too: 100,000 requests of 20,000 tokens each are 2e9 tokens.
  const result tokens =
      modsim("simulate serve mod-60m --hardware h100-sxm --requests 100000 --output-tokens 20000 --rate 10");
  EXPECT_EQ(tokens.code, 2);
  EXPECT_NE(tokens.err.find("~2e+09 output tokens cannot finish"), std::string::npos) << tokens.err;
  const result help = modsim("simulate --help");
  EXPECT_NE(help.out.find("output tokens"), std::string::npos);
}

// calibrate names each axis along which the measured blocks have one value (counted here from
// the CSV itself): predictions vary it, and nothing measured says how the model does there.
TEST(Cli, CalibrateWarnsOfAxesItsBlocksMeasuredAtOneValue) {
  const std::string csv = "reports/measurements/cpu-xeon-2core-2026-11-24-calibration.csv";
  std::istringstream in(slurp(std::string(MODSIM_SOURCE_DIR) + "/" + csv));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream hs(line); std::getline(hs, line, ',');) header.push_back(line);
  const std::vector<std::string> axes = {"d_model", "d_ff", "n_heads", "seq_len", "batch"};
  std::map<std::string, std::set<std::string>> values;
  for (std::string row; std::getline(in, row);) {
    std::vector<std::string> f(1);  // the fields, a quoted field's commas kept
    bool quoted = false;
    for (char c : row) {
      if (c == '"')
        quoted = !quoted;
      else if (c == ',' && !quoted)
        f.emplace_back();
      else
        f.back() += c;
    }
    const auto col = [&](const std::string& name) {
      return f[std::size_t(std::find(header.begin(), header.end(), name) - header.begin())];
    };
    const std::string op = col("op");
    if (op != "block_dense" && op != "block_mod" && op != "layer_mode") continue;
    for (const std::string& a : axes) values[a].insert(col(a));
  }
  std::set<std::string> expected;
  for (const std::string& a : axes)
    if (values[a].size() == 1) expected.insert(a);
  ASSERT_FALSE(expected.empty());  // this grid measured one head count
  const auto out =
      std::filesystem::temp_directory_path() / ("modsim_single_axis_" + std::to_string(::getpid()) + ".json");
  const result r =
      modsim("calibrate --measurements " + csv + " --hardware cpu --cv 0 --format json --out '" + out.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::set<std::string> said;
  const boost::json::value parsed = boost::json::parse(r.out);
  for (const auto& a : parsed.at("single_value_axes").as_array()) said.insert(std::string(a.as_string()));
  EXPECT_EQ(said, expected);
  const result t = modsim("calibrate --measurements " + csv + " --hardware cpu --cv 0 --out '" + out.string() + "'");
  EXPECT_NE(t.out.find("warning: one value of n_heads: every block has 8"), std::string::npos) << t.out;
  std::filesystem::remove(out);
}

// The report describes the sliding window of an HF config that has one (Mistral-7B's
// config.json: "sliding_window": 4096) in its configuration table, and not for a model without.
TEST(Cli, ReportShowsTheSlidingWindow) {
  const auto dir = std::filesystem::temp_directory_path() / ("modsim_sw_report_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const result r = modsim(
      "report configs/hf/mistral-7b-v0.1.json --hardware h100-sxm --no-serving --no-sampling "
      "--no-charts --out '" +
      dir.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string md = slurp((dir / "report.md").string());
  const std::size_t at = md.find("{#configuration}");
  ASSERT_NE(at, std::string::npos);
  const std::string config = md.substr(at, md.find("\n## ", at) - at);
  EXPECT_NE(config.find("sliding window 4096"), std::string::npos) << config;
  EXPECT_NE(config.find("at most 4096 keys"), std::string::npos) << config;
  std::filesystem::remove_all(dir);
  const result d =
      modsim("report mod-60m --hardware h100-sxm --no-serving --no-sampling --no-charts --out '" + dir.string() + "'");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(slurp((dir / "report.md").string()).find("sliding window"), std::string::npos);
  std::filesystem::remove_all(dir);
}

namespace {

boost::json::object json_of(const std::string& args) {
  const result r = modsim(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return boost::json::parse(r.out).as_object();
}

}  // namespace

// A training step on the H100 datasheet: attention's backward follows its FLOPs and bytes (no
// longer 2 x its forward) and the AdamW step is priced.
TEST(Cli, PredictTrainPricesAttentionBackwardFromItsFlopsAndTheOptimizer) {
  // One layer of dense-1b (d = 2048, H = 16, dh = 128) over a 16k-token sequence, fused: the
  // forward kernel does F matmul FLOPs and F·5/(4·dh) softmax FLOPs, the backward 2.5·F and
  // twice the softmax work; at 16k both are compute-bound on the datasheet (989.4 TFLOP/s
  // matmul, 133.8 TFLOP/s vector), so the ratio is
  //   (2.5/989.4 + 2·(5/512)/133.8) / (1/989.4 + (5/512)/133.8).
  const double pm = 989.4e12, pv = 133.8e12, o = 5.0 / (4 * 128);
  const double expected = (2.5 / pm + 2 * o / pv) / (1 / pm + o / pv);
  const boost::json::object j =
      json_of("predict dense-1b --hardware h100-sxm --batch 1 --seq 16384 --mode train --format json");
  double f = 0, b = 0;
  for (const auto& op : j.at("layers").as_array().at(0).at("ops").as_array())
    if (op.at("class").as_string() == "attn_core") {
      f += op.at("forward_s").as_double();
      b += op.at("backward_s").as_double();
    }
  EXPECT_NEAR(b / f, expected, 0.01 * expected);
  EXPECT_GT(std::abs(b / f - 2.0), 0.3);
  // The optimizer: 28 bytes per parameter over the datasheet's 3.35 TB/s.
  const double params = hand_parameters(2048, 18, 16, 16, 8192, 32000, false);
  EXPECT_NEAR(j.at("optimizer").at("time_s").as_double(), 28 * params / 3.35e12, 0.01 * 28 * params / 3.35e12);
}

// A dense-1b training step at batch 8 x 2,048 on one H100: the MFU printed is model FLOPs (3 x
// the forward's matmul FLOPs, from modsim flops) / (step time x the bf16 peak 989.4e12), and the
// step is no faster than its GEMMs at the peak (the fused kernel computes the causal half of
// attention's full square: 0.9) plus the optimizer's 28 bytes per parameter at 3.35 TB/s.
TEST(Cli, DenseOneBTrainingStepMfuOnOneH100) {
  const boost::json::object fl = json_of("flops dense-1b --batch 8 --seq 2048 --mode train --format json");
  const double model_flops = double(fl.at("train").at("forward").at("matmul_flops").as_int64()) * 3;
  for (const char* hw : {"h100-sxm", "h100-sxm-calibrated"}) {
    const boost::json::object j =
        json_of(std::string("predict dense-1b --hardware ") + hw + " --batch 8 --seq 2048 --mode train --format json");
    const double mfu = model_flops / (j.at("total_s").as_double() * 989.4e12);
    EXPECT_NEAR(j.at("train_pricing").at("mfu").as_double(), mfu, 1e-9 * mfu) << hw;
    // The step is no faster than its GEMMs at the peak plus the optimizer's bytes at 3.35 TB/s.
    const double params = hand_parameters(2048, 18, 16, 16, 8192, 32000, false);
    EXPECT_GT(j.at("total_s").as_double(), 0.9 * model_flops / 989.4e12 + 28 * params / 3.35e12) << hw;
    // The datasheet's MFU says it is an upper bound (its GEMMs at the peak); a calibration's does not.
    const bool bound =
        std::string(j.at("training").at("flop_convention").as_string()).find("upper bound") != std::string::npos;
    EXPECT_EQ(bound, std::string(hw) == "h100-sxm") << hw;
  }
  const result text = modsim("predict dense-1b --hardware h100-sxm --batch 8 --seq 2048 --mode train");
  EXPECT_NE(text.out.find("peak; an upper bound: the datasheet runs every GEMM at the peak)"), std::string::npos);
}

// modsim flops --mode train: matmul FLOPs exactly 3 x the forward with recompute none (the
// contract), full recomputation adds the layers' forward, the optimizer in the totals.
TEST(Cli, FlopsTrainPrintsForwardBackwardOptimizerAndRecompute) {
  const boost::json::object fwd = json_of("flops dense-220m --batch 2 --seq 256 --format json");
  const boost::json::object none = json_of("flops dense-220m --batch 2 --seq 256 --mode train --format json");
  const boost::json::object full =
      json_of("flops dense-220m --batch 2 --seq 256 --mode train --recompute full --format json");
  const std::int64_t f = fwd.at("totals").at("matmul_flops").as_int64();
  EXPECT_EQ(none.at("totals").at("matmul_flops").as_int64(), 3 * f);
  EXPECT_EQ(none.at("train").at("backward").at("matmul_flops").as_int64(), 2 * f);
  std::int64_t layers = 0;
  for (const auto& l : fwd.at("layers").as_array()) layers += l.at("matmul_flops").as_int64();
  EXPECT_EQ(full.at("totals").at("matmul_flops").as_int64() - 3 * f, layers);
  EXPECT_EQ(full.at("train").at("recompute").as_string(), "full");
  const double p = hand_parameters(1024, 16, 16, 16, 4096, 32000, false);
  EXPECT_NEAR(double(none.at("train").at("optimizer").at("bytes").as_int64()), 28 * p, 0.01 * 28 * p);
  const result bad = modsim("flops dense-220m --mode train --recompute some");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--recompute"), std::string::npos);
  // Outside training nothing is recomputed: the flag is refused, not ignored (the report's
  // Training section trains the workload whatever its mode, so it keeps the flag).
  for (const char* cmd :
       {"flops dense-220m --recompute full", "predict dense-220m --hardware h100-sxm --recompute full",
        "predict dense-220m --hardware h100-sxm --mode decode --recompute selective",
        "simulate forward dense-220m --hardware h100-sxm --recompute full"}) {
    const result ignored = modsim(cmd);
    EXPECT_EQ(ignored.code, 2) << cmd;
    EXPECT_NE(ignored.err.find("--recompute: applies to --mode train only"), std::string::npos) << cmd << ignored.err;
  }
  const result text = modsim("flops dense-220m --mode train");
  EXPECT_NE(text.out.find("training step"), std::string::npos);
  EXPECT_NE(text.out.find("optimizer"), std::string::npos);
}

TEST(Cli, ProfileMeasuresTrainingBlocksWithTheirRecomputeAndThreeForwardsOfFlops) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("modsim_cli_train_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path grid = dir / "grid.json";
  std::ofstream(grid) << R"({"ops": ["block_dense_train", "block_mod_train"], "seq_len": [16], "d_model": [32],
                            "n_heads": [2], "n_kv_heads": [1], "d_ff": [64], "capacity": [0.25],
                            "recompute": ["none", "full"]})";
  const fs::path csv = dir / "train.csv";
  const result r = modsim("profile --backend cpu --threads 1 --max-time 0.001 --grid '" + grid.string() + "' --out '" +
                          csv.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  // The FLOP convention by hand: B = 1, d = 32, dq = 32 (2 heads of 16), dkv = 16, F = 64.
  // A block over n tokens: qkv 2·n·32·(32 + 2·16), out 2·n·32·32, up and down 2·n·32·64 each,
  // scores and values 2·n²·32 each; block_mod adds the router 2·S·d = 2·16·32 and runs the
  // block on k = ceil(0.25·16) = 4 tokens. Training = 3 forwards, 4 with recompute full.
  const auto block = [](std::int64_t n) {
    return 2 * n * 32 * 64 + 2 * n * 32 * 32 + 2 * (2 * n * 32 * 64) + 2 * (2 * n * n * 32);
  };
  const std::map<std::string, std::int64_t> forward = {{"block_dense_train", block(16)},
                                                       {"block_mod_train", 2 * 16 * 32 + block(4)}};
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  std::map<std::string, std::size_t> col;
  {
    std::stringstream h(line);
    std::string name;
    for (std::size_t i = 0; std::getline(h, name, ','); ++i) col[name] = i;
  }
  ASSERT_TRUE(col.count("recompute") && col.count("matmul_flops") && col.count("op"));
  std::set<std::string> seen;
  while (std::getline(in, line)) {
    // The device column is quoted and may hold commas: split after it.
    const std::size_t after = line.find("\",");
    ASSERT_NE(after, std::string::npos) << line;
    std::vector<std::string> f = {"cpu", "device"};
    std::stringstream rest(line.substr(after + 2));
    for (std::string v; std::getline(rest, v, ',');) f.push_back(v);
    if (line.back() == ',') f.push_back("");
    ASSERT_EQ(f.size(), col.size()) << line;
    const std::string op = f[col["op"]], mode = f[col["recompute"]];
    ASSERT_TRUE(forward.count(op)) << line;
    const std::int64_t times = mode == "full" ? 4 : 3;
    EXPECT_EQ(std::stoll(f[col["matmul_flops"]]), times * forward.at(op)) << line;
    EXPECT_GT(std::stod(f[col["median_s"]]), 0.0) << line;
    seen.insert(op + " " + mode);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"block_dense_train none", "block_dense_train full", "block_mod_train none",
                                         "block_mod_train full"}));
  fs::remove_all(dir);
}
