#pragma once
// Two report summaries (reports/summary.hpp) figure by figure: the change of each and whether
// it regressed past its threshold, as `modsim compare` prints and gates on.
//
// A figure is matched by (model, key). Its change is (new − base) / |base| in percent; it is
// worse when it moves against its `better` direction, and regressed when worse by more than
// its threshold: the first pattern of the thresholds that matches its key (glob: `*` any run
// of characters, `?` one), else max_regression_pct. A figure on one side only is listed as
// such and never gates.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reports/summary.hpp"

namespace modsim::reports {

// `*` matches any run of characters (dots included), `?` any one.
bool glob_match(const std::string& pattern, const std::string& key);

struct compare_options {
  double max_regression_pct = 5;
  std::vector<std::pair<std::string, double>> thresholds;  // (pattern, percent), first match wins
  std::vector<std::string> only;                           // patterns; empty = every figure
};

// Parses a thresholds file, {"PATTERN": PERCENT, ...}. Throws modsim::error(bad_input) naming
// `path` and the key for malformed JSON, a value that is not a number >= 0, and a pattern that
// matches no key a summary can hold (summary_keys()) nor any figure of `known`.
std::vector<std::pair<std::string, double>> parse_thresholds(const std::string& text, const std::string& path,
                                                             const std::vector<std::string>& known);

enum class change_verdict {
  regressed,  // worse by more than the threshold: the gate fails
  worse,      // worse, within the threshold
  improved,
  unchanged,
  base_only,  // on the base side only
  new_only,   // on the new side only
};
const char* to_string(change_verdict v);

struct figure_change {
  std::string key, model, unit;
  bool higher_is_better = false;
  std::optional<double> base, now;  // absent on the side that lacks the figure
  // (now − base) / |base| in percent; absent when one side lacks it, or base is 0 and now is not.
  std::optional<double> change_pct;
  double threshold_pct = 0;
  change_verdict verdict = change_verdict::unchanged;
};

struct comparison {
  std::vector<figure_change> figures;  // base's order, then figures new only
  int count(change_verdict v) const;
};

// Throws modsim::error(bad_input) when an --only pattern matches no figure of either side.
comparison compare_summaries(const summary& base, const summary& now, const compare_options& options);

}  // namespace modsim::reports
