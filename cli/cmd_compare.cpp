// `modsim compare BASE NEW`: two report summaries (summary.json, reports/summary.hpp) figure by
// figure, gated by thresholds (reports/compare.hpp): a table, JSON or a Markdown pull-request
// comment on stdout, JUnit for CI, one line per regression on stderr, exit 1 on a regression.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "cli/version.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "reports/compare.hpp"
#include "sim/common/io.hpp"

namespace modsim::cli {
namespace {

using reports::change_verdict;
using reports::comparison;
using reports::figure_change;

const char* const k_usage =
    "usage: modsim compare BASE NEW [--max-regression PCT] [--thresholds FILE.json] [--only KEY...]\n"
    "                      [--format table|json|markdown] [--junit FILE]\n"
    "\n"
    "Compares two report summaries figure by figure: BASE and NEW are each a summary.json or a report\n"
    "folder holding one (modsim report --out DIR). A figure (matched by model and key) regressed when it\n"
    "moved against its `better` direction by more than its threshold: --max-regression PCT (default 5)\n"
    "for every figure, or the first pattern of --thresholds FILE.json that matches its key, e.g.\n"
    "{\"time.*\": 3, \"serving.ttft_s.p99\": 20} (`*` and `?` globs; a pattern that matches no figure key\n"
    "is bad input). --only KEY... (patterns; after BASE NEW, or comma-separated) keeps those figures.\n"
    "Figures on one side only are listed and never gate. --format markdown prints a GitHub-flavoured\n"
    "table for a pull-request comment (regressions first, unchanged figures folded); --junit FILE writes\n"
    "one test case per figure (failed: regressed; skipped: on one side only).\n"
    "Exit codes: 0 every figure within its threshold, 1 a figure regressed (each named on stderr),\n"
    "2 bad input (not a summary, a schema this modsim cannot compare, unknown keys in the thresholds).";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(path, "", "cannot open file");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A figure's value for people, in the unit its size reads best in.
std::string people_value(double v, const std::string& unit) {
  if (unit == "s") return std::abs(v) < 1 ? fmt::format("{:.4g} ms", v * 1e3) : fmt::format("{:.4g} s", v);
  if (unit == "bytes") return fmt::format("{:.4g} GB", v / 1e9);
  if (unit == "FLOP") return fmt::format("{:.5g} GFLOP", v / 1e9);
  if (unit == "x") return fmt::format("{:.4f}x", v);
  if (unit == "%") return fmt::format("{:.2f}%", v);
  if (unit == "cells") return fmt::format("{:g}", v);
  return fmt::format("{:.5g} {}", v, unit);
}

std::string side(const std::optional<double>& v, const std::string& unit) {
  return v ? people_value(*v, unit) : std::string("—");
}

std::string change_text(const figure_change& f) {
  if (!f.base || !f.now) return "—";
  if (!f.change_pct) return "new ≠ 0 (base 0)";
  return fmt::format("{:+.2f}%", *f.change_pct);
}

std::string verdict_text(const figure_change& f) {
  std::string v = reports::to_string(f.verdict);
  if (f.verdict == change_verdict::worse) v += " (within)";
  return v;
}

boost::json::value optional_json(const std::optional<double>& v) {
  return v ? boost::json::value(*v) : boost::json::value(nullptr);
}

std::string counts_line(const comparison& c) {
  return fmt::format(
      "{} figures: {} regressed, {} worse within threshold, {} improved, {} unchanged, {} base only, "
      "{} new only",
      c.figures.size(), c.count(change_verdict::regressed), c.count(change_verdict::worse),
      c.count(change_verdict::improved), c.count(change_verdict::unchanged), c.count(change_verdict::base_only),
      c.count(change_verdict::new_only));
}

std::string made_by(const reports::summary& s) {
  return fmt::format("modsim {}, commit {}", s.build.version, s.build.commit);
}

std::vector<std::string> row_of(const figure_change& f) {
  return {f.model,
          f.key,
          side(f.base, f.unit),
          side(f.now, f.unit),
          change_text(f),
          fmt::format("{:g}%", f.threshold_pct),
          verdict_text(f)};
}

const std::vector<std::string> k_columns = {"model", "figure", "base", "new", "change", "threshold", "verdict"};

std::string markdown(const comparison& c, const std::string& base_path, const reports::summary& base,
                     const std::string& new_path, const reports::summary& now) {
  const int regressed = c.count(change_verdict::regressed);
  std::string t = regressed > 0 ? fmt::format("### modsim compare: {} figure{} regressed past {} threshold{}\n\n",
                                              regressed, regressed == 1 ? "" : "s", regressed == 1 ? "its" : "their",
                                              regressed == 1 ? "" : "s")
                                : std::string("### modsim compare: every figure within its threshold\n\n");
  t += fmt::format("base `{}` ({}) · new `{}` ({})  \n{}\n\n", base_path, made_by(base), new_path, made_by(now),
                   counts_line(c));
  const std::vector<bool> right = {false, false, true, true, true, true, false};
  std::vector<std::vector<std::string>> shown, folded;
  for (change_verdict v : {change_verdict::regressed, change_verdict::worse, change_verdict::improved,
                           change_verdict::base_only, change_verdict::new_only, change_verdict::unchanged})
    for (const figure_change& f : c.figures)
      if (f.verdict == v) {
        std::vector<std::string> r = row_of(f);
        if (v == change_verdict::regressed) r.back() = "**regressed**";
        (v == change_verdict::unchanged ? folded : shown).push_back(std::move(r));
      }
  if (!shown.empty()) t += text::markdown_table(k_columns, shown, right) + "\n";
  if (!folded.empty())
    t += fmt::format("<details><summary>{} unchanged figure{}</summary>\n\n", folded.size(),
                     folded.size() == 1 ? "" : "s") +
         text::markdown_table(k_columns, folded, right) + "\n</details>\n";
  return t;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    switch (ch) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += ch;
    }
  }
  return o;
}

std::string regression_line(const figure_change& f) {
  return fmt::format("{} ({}): {} -> {} ({}, threshold {:g}%)", f.key, f.model, side(f.base, f.unit),
                     side(f.now, f.unit), change_text(f), f.threshold_pct);
}

std::string junit(const comparison& c) {
  const int failures = c.count(change_verdict::regressed);
  const int skipped = c.count(change_verdict::base_only) + c.count(change_verdict::new_only);
  std::string t = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  t += fmt::format("<testsuites name=\"modsim compare\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
                   c.figures.size(), failures, skipped);
  t += fmt::format("  <testsuite name=\"modsim compare\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
                   c.figures.size(), failures, skipped);
  for (const figure_change& f : c.figures) {
    t += fmt::format("    <testcase classname=\"{}\" name=\"{}\"", xml_escape("modsim." + f.model), xml_escape(f.key));
    if (f.verdict == change_verdict::regressed)
      t += fmt::format(">\n      <failure message=\"{}\"/>\n    </testcase>\n",
                       xml_escape("regressed: " + regression_line(f)));
    else if (f.verdict == change_verdict::base_only || f.verdict == change_verdict::new_only)
      t += fmt::format(">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                       xml_escape(std::string("on the ") + (f.base ? "base" : "new") + " side only"));
    else
      t += "/>\n";
  }
  return t + "  </testsuite>\n</testsuites>\n";
}

}  // namespace

int cmd_compare(const std::vector<std::string>& args) {
  po::options_description options("modsim compare options");
  options.add_options()("base", po::value<std::string>(), "BASE: summary.json or a report folder")(
      "new", po::value<std::string>(), "NEW: summary.json or a report folder")(
      "max-regression", po::value<double>()->default_value(5.0),
      "percent a figure may move against its better direction before it regresses")(
      "thresholds", po::value<std::string>(), "JSON object of figure-key patterns to percentages")(
      "only", po::value<std::vector<std::string>>()->multitoken(), "compare only these figure keys (patterns)")(
      "format", po::value<std::string>()->default_value("table"), "table | json | markdown")(
      "junit", po::value<std::string>(), "write a JUnit XML file: one test case per figure");
  po::positional_options_description positional;
  positional.add("base", 1).add("new", 1);
  po::variables_map vm;
  if (!parse_args(args, options, positional, vm, k_usage)) return exit_ok;
  if (!vm.count("base") || !vm.count("new")) throw input_error("", "", "give BASE and NEW (see --help)");
  const output_format format = parse_format(vm["format"].as<std::string>());
  if (format == output_format::csv) throw input_error("", "--format", "compare prints table, json or markdown");

  const std::string base_path = vm["base"].as<std::string>();
  const std::string new_path = vm["new"].as<std::string>();
  const reports::summary base = reports::load_summary(base_path);
  const reports::summary now = reports::load_summary(new_path);

  reports::compare_options co;
  co.max_regression_pct = vm["max-regression"].as<double>();
  if (!(co.max_regression_pct >= 0) || !std::isfinite(co.max_regression_pct))
    throw input_error("", "--max-regression", "must be a percentage >= 0");
  if (vm.count("thresholds")) {
    std::vector<std::string> known;
    for (const reports::summary* s : {&base, &now})
      for (const reports::summary_figure& f : s->figures) known.push_back(f.key);
    const std::string path = vm["thresholds"].as<std::string>();
    co.thresholds = reports::parse_thresholds(read_text(path), path, known);
  }
  if (vm.count("only"))
    for (const std::string& arg : vm["only"].as<std::vector<std::string>>())
      for (const std::string& k : comma_list(arg, "--only")) co.only.push_back(k);
  const comparison c = reports::compare_summaries(base, now, co);

  if (format == output_format::markdown) {
    std::cout << markdown(c, base_path, base, new_path, now);
  } else {
    output o;
    o.head = {fmt::format("base: {} ({})", base_path, made_by(base)),
              fmt::format("new:  {} ({})", new_path, made_by(now))};
    table t;
    t.columns = k_columns;
    t.left_columns = 2;
    for (const figure_change& f : c.figures) {
      std::vector<cell> r;
      for (std::string& x : row_of(f)) r.emplace_back(std::move(x));
      t.rows.push_back(std::move(r));
    }
    o.tables.push_back(std::move(t));
    o.tail = {counts_line(c), c.count(change_verdict::regressed) > 0
                                  ? "gate: FAIL (a figure regressed past its threshold)"
                                  : "gate: pass"};
    boost::json::array figures;
    for (const figure_change& f : c.figures)
      figures.push_back({{"key", f.key},
                         {"model", f.model},
                         {"unit", f.unit},
                         {"better", f.higher_is_better ? "higher" : "lower"},
                         {"base", optional_json(f.base)},
                         {"new", optional_json(f.now)},
                         {"change_pct", optional_json(f.change_pct)},
                         {"threshold_pct", f.threshold_pct},
                         {"verdict", reports::to_string(f.verdict)}});
    boost::json::object counts;
    for (change_verdict v : {change_verdict::regressed, change_verdict::worse, change_verdict::improved,
                             change_verdict::unchanged, change_verdict::base_only, change_verdict::new_only})
      counts[reports::to_string(v)] = c.count(v);
    o.json = boost::json::object{
        {"base", {{"path", base_path}, {"modsim", {{"version", base.build.version}, {"commit", base.build.commit}}}}},
        {"new", {{"path", new_path}, {"modsim", {{"version", now.build.version}, {"commit", now.build.commit}}}}},
        {"max_regression_pct", co.max_regression_pct},
        {"passed", c.count(change_verdict::regressed) == 0},
        {"counts", counts},
        {"figures", figures}};
    print(o, format, std::cout);
  }
  if (vm.count("junit")) sim::write_file_atomically(vm["junit"].as<std::string>(), junit(c));
  for (const figure_change& f : c.figures)
    if (f.verdict == change_verdict::regressed)
      std::cerr << "modsim compare: regression: " << regression_line(f) << "\n";
  return c.count(change_verdict::regressed) > 0 ? exit_check_failed : exit_ok;
}

}  // namespace modsim::cli
