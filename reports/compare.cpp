#include "reports/compare.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace modsim::reports {

bool glob_match(const std::string& pattern, const std::string& key) {
  // Iterative matching with one backtrack point (the last `*`).
  std::size_t p = 0, k = 0, star = std::string::npos, mark = 0;
  while (k < key.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == key[k])) {
      ++p;
      ++k;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = k;
    } else if (star != std::string::npos) {
      p = star + 1;
      k = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

bool matches_any(const std::string& pattern, const std::vector<std::string>& keys) {
  return std::any_of(keys.begin(), keys.end(), [&](const std::string& k) { return glob_match(pattern, k); });
}

}  // namespace

std::vector<std::pair<std::string, double>> parse_thresholds(const std::string& text, const std::string& path,
                                                             const std::vector<std::string>& known) {
  boost::system::error_code ec;
  const boost::json::value root = boost::json::parse(text, ec);
  if (ec) throw input_error(path, "", "not valid JSON (" + ec.message() + ")");
  if (!root.is_object()) throw input_error(path, "", "must be an object of figure keys (glob patterns) to percentages");
  const std::vector<std::string> keys = summary_keys();
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [k, v] : root.as_object()) {
    const std::string key(k);
    if (!v.is_number()) throw input_error(path, key, "must be a number (percent)");
    const double pct = v.to_number<double>();
    if (!(pct >= 0) || !std::isfinite(pct)) throw input_error(path, key, "must be >= 0 (percent)");
    if (!matches_any(key, keys) && !matches_any(key, known))
      throw input_error(
          path, key,
          "unknown figure key: matches no key a report summary holds (see docs/contracts.md \"Report summary\")");
    out.emplace_back(key, pct);
  }
  return out;
}

const char* to_string(change_verdict v) {
  switch (v) {
    case change_verdict::regressed:
      return "regressed";
    case change_verdict::worse:
      return "worse";
    case change_verdict::improved:
      return "improved";
    case change_verdict::unchanged:
      return "unchanged";
    case change_verdict::base_only:
      return "base_only";
    case change_verdict::new_only:
      return "new_only";
  }
  return "?";
}

int comparison::count(change_verdict v) const {
  return static_cast<int>(
      std::count_if(figures.begin(), figures.end(), [&](const figure_change& f) { return f.verdict == v; }));
}

comparison compare_summaries(const summary& base, const summary& now, const compare_options& options) {
  std::vector<std::string> present;
  for (const summary* s : {&base, &now})
    for (const summary_figure& f : s->figures) present.push_back(f.key);
  for (const std::string& o : options.only)
    if (!matches_any(o, present)) throw input_error("", "--only", "'" + o + "' matches no figure of either summary");
  auto wanted = [&](const std::string& key) {
    return options.only.empty() || std::any_of(options.only.begin(), options.only.end(),
                                               [&](const std::string& p) { return glob_match(p, key); });
  };
  auto threshold = [&](const std::string& key) {
    for (const auto& [pattern, pct] : options.thresholds)
      if (glob_match(pattern, key)) return pct;
    return options.max_regression_pct;
  };
  auto find = [](const summary& s, const summary_figure& f) -> const summary_figure* {
    for (const summary_figure& g : s.figures)
      if (g.key == f.key && g.model == f.model) return &g;
    return nullptr;
  };

  // A row for figure `f`, as either side names it.
  const auto row_of = [&](const summary_figure& f) {
    figure_change x;
    x.key = f.key;
    x.model = f.model;
    x.unit = f.unit;
    x.higher_is_better = f.higher_is_better;
    x.threshold_pct = threshold(f.key);
    return x;
  };
  comparison c;
  for (const summary_figure& b : base.figures) {
    if (!wanted(b.key)) continue;
    figure_change x = row_of(b);
    x.base = b.value;
    const summary_figure* n = find(now, b);
    if (!n) {
      x.verdict = change_verdict::base_only;
      c.figures.push_back(std::move(x));
      continue;
    }
    x.now = n->value;
    const double delta = n->value - b.value;
    if (b.value != 0)
      x.change_pct = 100 * delta / std::abs(b.value);
    else if (n->value == 0)
      x.change_pct = 0;
    // Worse, in percent of the base (infinite when the base is 0).
    const double worse = (b.higher_is_better ? -1 : 1) * (x.change_pct ? *x.change_pct : delta * INFINITY);
    if (delta == 0)
      x.verdict = change_verdict::unchanged;
    else if (worse > x.threshold_pct)
      x.verdict = change_verdict::regressed;
    else
      x.verdict = worse > 0 ? change_verdict::worse : change_verdict::improved;
    c.figures.push_back(std::move(x));
  }
  for (const summary_figure& n : now.figures) {
    if (!wanted(n.key) || find(base, n)) continue;
    figure_change x = row_of(n);
    x.now = n.value;
    x.verdict = change_verdict::new_only;
    c.figures.push_back(std::move(x));
  }
  return c;
}

}  // namespace modsim::reports
