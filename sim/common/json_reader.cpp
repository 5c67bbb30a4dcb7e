#include "sim/common/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "core/error.hpp"

namespace json = boost::json;

namespace modsim::sim {

const char* json_type_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return "a number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "?";
}

std::string join_path(const std::string& base, std::string_view key) {
  return base.empty() ? std::string(key) : base + "." + std::string(key);
}

std::string fmt_num(double d) {
  std::ostringstream s;
  s << d;
  return s.str();
}

json::value parse_json(std::string_view text, const std::string& file) {
  json::stream_parser parser;
  boost::system::error_code ec;
  std::size_t consumed = parser.write_some(text.data(), text.size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) {
    std::size_t offset = std::min(consumed, text.size());
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < offset; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw input_error(
        file, "",
        "malformed JSON at line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + ec.message());
  }
  return parser.release();
}

namespace {

// Edits (insert, delete, substitute, swap two neighbours) between a and b.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

// A slip of the keyboard rather than another word: at most 1 edit for short keys, 2 for longer.
bool looks_like(std::string_view typed, std::string_view meant) {
  const std::size_t len = std::max(typed.size(), meant.size());
  return edit_distance(typed, meant) <= (len >= 5 ? 2u : 1u);
}

}  // namespace

json_reader::json_reader(const json::value& v, std::string file, std::string path)
    : m_file(std::move(file)), m_path(std::move(path)) {
  if (!v.is_object())
    throw input_error(m_file, m_path.empty() ? "(top level)" : m_path,
                      std::string("expected an object, got ") + json_type_name(v));
  m_obj = &v.as_object();
}

const json::value* json_reader::find(std::string_view key) {
  m_known.insert(std::string(key));
  auto it = m_obj->find(key);
  return it == m_obj->end() ? nullptr : &it->value();
}

const json::value& json_reader::require(std::string_view key) {
  const json::value* v = find(key);
  if (!v) {
    // A misspelling of the key among those nobody asked for is the real problem: name it.
    for (const auto& kv : *m_obj)
      if (!m_known.count(std::string(kv.key())) && looks_like(kv.key(), key))
        throw input_error(m_file, key_path(kv.key()), "unknown key (did you mean " + std::string(key) + "?)");
    throw input_error(m_file, key_path(key), "missing required key");
  }
  return *v;
}

std::int64_t json_reader::integer(const json::value& v, std::string_view key, std::int64_t lo, std::int64_t hi) const {
  std::int64_t out = 0;
  if (v.is_int64()) {
    out = v.as_int64();
  } else if (v.is_uint64()) {
    if (v.as_uint64() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw input_error(m_file, key_path(key), "value too large");
    out = static_cast<std::int64_t>(v.as_uint64());
  } else if (v.is_double()) {
    // 32.0 is the integer 32 (some exporters write every number as a float); 32.5 is not.
    const double d = v.as_double();
    if (!std::isfinite(d) || d != std::floor(d))
      throw input_error(m_file, key_path(key), "expected an integer, got " + fmt_num(d) + " (not a whole number)");
    if (d < -9.2e18 || d > 9.2e18) throw input_error(m_file, key_path(key), "value too large");
    out = static_cast<std::int64_t>(d);
  } else {
    throw input_error(m_file, key_path(key), std::string("expected an integer, got ") + json_type_name(v));
  }
  if (out < lo || out > hi)
    throw input_error(
        m_file, key_path(key),
        "value " + std::to_string(out) + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return out;
}

double json_reader::number(const json::value& v, std::string_view key) const {
  if (!v.is_number())
    throw input_error(m_file, key_path(key), std::string("expected a number, got ") + json_type_name(v));
  double d = v.to_number<double>();
  if (!std::isfinite(d)) throw input_error(m_file, key_path(key), "not a finite number");
  return d;
}

std::string json_reader::string(const json::value& v, std::string_view key) const {
  if (!v.is_string())
    throw input_error(m_file, key_path(key), std::string("expected a string, got ") + json_type_name(v));
  return std::string(v.as_string());
}

int json_reader::get_int(std::string_view key, std::int64_t lo, std::int64_t hi) {
  return static_cast<int>(integer(require(key), key, lo, hi));
}

std::optional<int> json_reader::opt_int(std::string_view key, std::int64_t lo, std::int64_t hi) {
  const json::value* v = find(key);
  if (!v) return std::nullopt;
  return static_cast<int>(integer(*v, key, lo, hi));
}

double json_reader::get_number(std::string_view key, double lo) {
  const double d = number(require(key), key);
  if (d < lo) throw input_error(m_file, key_path(key), "must be >= " + fmt_num(lo) + ", got " + fmt_num(d));
  return d;
}

std::optional<double> json_reader::opt_number(std::string_view key) {
  const json::value* v = find(key);
  if (!v) return std::nullopt;
  return number(*v, key);
}

double json_reader::get_positive(std::string_view key) {
  double d = get_number(key);
  if (d <= 0) throw input_error(m_file, key_path(key), "must be > 0, got " + fmt_num(d));
  return d;
}

double json_reader::get_non_negative(std::string_view key, double fallback) {
  auto d = opt_number(key);
  if (!d) return fallback;
  if (*d < 0) throw input_error(m_file, key_path(key), "must be >= 0, got " + fmt_num(*d));
  return *d;
}

std::string json_reader::get_string(std::string_view key) { return string(require(key), key); }

std::optional<std::string> json_reader::opt_string(std::string_view key) {
  const json::value* v = find(key);
  if (!v) return std::nullopt;
  return string(*v, key);
}

std::optional<bool> json_reader::opt_bool(std::string_view key) {
  const json::value* v = find(key);
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_bool())
    throw input_error(m_file, key_path(key), std::string("expected true or false, got ") + json_type_name(*v));
  return v->as_bool();
}

const json::array& json_reader::get_array(std::string_view key) {
  const json::value& v = require(key);
  if (!v.is_array())
    throw input_error(m_file, key_path(key), std::string("expected an array, got ") + json_type_name(v));
  return v.as_array();
}

void json_reader::finish() const {
  for (const auto& kv : *m_obj) {
    if (m_known.count(std::string(kv.key()))) continue;
    std::string closest;
    std::size_t best = 0;
    for (const auto& k : m_known) {
      const std::size_t d = edit_distance(kv.key(), k);
      if (looks_like(kv.key(), k) && (closest.empty() || d < best)) {
        closest = k;
        best = d;
      }
    }
    if (!closest.empty()) throw input_error(m_file, key_path(kv.key()), "unknown key (did you mean " + closest + "?)");
    std::string known;
    for (const auto& k : m_known) known += (known.empty() ? "" : ", ") + k;
    throw input_error(m_file, key_path(kv.key()), "unknown key (expected one of: " + known + ")");
  }
}

}  // namespace modsim::sim
