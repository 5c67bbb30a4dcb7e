#pragma once
// The strict JSON reading every modsim input file goes through (configs, hardware files and
// their calibration block): syntax errors with line and column, each key read at most once,
// unknown keys rejected, wrong types and ranges named by their key path. Errors are
// modsim::error(bad_input) with the one-line "FILE: KEY.PATH: reason" of the contract.
#include <boost/json.hpp>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace modsim::sim {

// "a number", "a string", ... for error messages.
const char* json_type_name(const boost::json::value& v);
// Parses JSON; a syntax error names the file, the line and the column.
boost::json::value parse_json(std::string_view text, const std::string& file);
// A number as people write it (0.125, 1e+12).
std::string fmt_num(double d);
// "base.key", or "key" when base is empty.
std::string join_path(const std::string& base, std::string_view key);

// Reads the keys of one JSON object, each at most once, remembering which were read so that
// finish() can reject the ones nobody asked for.
class json_reader {
 public:
  json_reader(const boost::json::value& v, std::string file, std::string path);

  const std::string& file() const { return m_file; }
  std::string key_path(std::string_view key) const { return join_path(m_path, key); }

  const boost::json::value* find(std::string_view key);
  bool has(std::string_view key) const { return m_obj->contains(key); }
  const boost::json::value& require(std::string_view key);

  // Conversions of a value read under `key` (for messages). integer() takes a whole number
  // written as a float (32.0) and refuses a fraction (32.5).
  std::int64_t integer(const boost::json::value& v, std::string_view key, std::int64_t lo, std::int64_t hi) const;
  double number(const boost::json::value& v, std::string_view key) const;
  std::string string(const boost::json::value& v, std::string_view key) const;

  int get_int(std::string_view key, std::int64_t lo, std::int64_t hi);
  std::optional<int> opt_int(std::string_view key, std::int64_t lo, std::int64_t hi);
  // A finite number >= lo.
  double get_number(std::string_view key, double lo = -std::numeric_limits<double>::infinity());
  std::optional<double> opt_number(std::string_view key);
  double get_positive(std::string_view key);                       // > 0
  double get_non_negative(std::string_view key, double fallback);  // >= 0, optional
  std::string get_string(std::string_view key);
  std::optional<std::string> opt_string(std::string_view key);
  std::optional<bool> opt_bool(std::string_view key);  // true or false; null counts as absent
  const boost::json::array& get_array(std::string_view key);

  // Rejects keys that no one read.
  void finish() const;

 private:
  const boost::json::object* m_obj = nullptr;
  std::string m_file;
  std::string m_path;
  std::set<std::string> m_known;
};

}  // namespace modsim::sim
