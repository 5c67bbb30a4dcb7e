// Request generation for the serving simulator (sim/des/arrivals.hpp): length
// distributions, Poisson arrivals and the request-trace CSV reader.
#include "sim/des/arrivals.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace modsim::sim::des {

std::int64_t length_dist::sample(rng& r) const {
  switch (k) {
    case kind::fixed:
      return static_cast<std::int64_t>(a);
    case kind::uniform:
      return r.uniform_int(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b));
    case kind::exponential: {
      const double x = std::ceil(r.exponential(a));
      return std::clamp(static_cast<std::int64_t>(x), std::int64_t{1}, max());
    }
  }
  return 1;
}

std::int64_t length_dist::max() const {
  switch (k) {
    case kind::fixed:
      return static_cast<std::int64_t>(a);
    case kind::uniform:
      return static_cast<std::int64_t>(b);
    case kind::exponential:
      return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(10 * a)));
  }
  return 1;
}

namespace {

bool parse_number(std::string_view t, double& out) {
  if (t.empty()) return false;
  const std::string s(t);
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

bool parse_int(std::string_view t, std::int64_t& out) {
  if (t.empty()) return false;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), out);
  return r.ec == std::errc() && r.ptr == t.data() + t.size();
}

std::string_view trim(std::string_view t) {
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
  return t;
}

std::vector<std::string_view> split(std::string_view t, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t pos = t.find(sep, start);
    out.push_back(trim(t.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start)));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

}  // namespace

length_dist parse_length_dist(std::string_view text, const std::string& key) {
  const std::string expected = " (expected N, uniform:A:B or exp:MEAN with integers >= 1)";
  const auto bad = [&](const std::string& why) {
    return input_error("", key, "'" + std::string(text) + "': " + why + expected);
  };
  const std::vector<std::string_view> parts = split(text, ':');
  length_dist d;
  std::int64_t a = 0, b = 0;
  double m = 0;
  if (parts.size() == 1) {
    if (!parse_int(parts[0], a) || a < 1) throw bad("not an integer >= 1");
    d.k = length_dist::kind::fixed;
    d.a = d.b = static_cast<double>(a);
  } else if (parts.size() == 3 && parts[0] == "uniform") {
    if (!parse_int(parts[1], a) || !parse_int(parts[2], b) || a < 1 || b < a) throw bad("needs 1 <= A <= B");
    d.k = length_dist::kind::uniform;
    d.a = static_cast<double>(a);
    d.b = static_cast<double>(b);
  } else if (parts.size() == 2 && parts[0] == "exp") {
    if (!parse_number(parts[1], m) || m < 1) throw bad("needs a mean >= 1");
    d.k = length_dist::kind::exponential;
    d.a = d.b = m;
  } else {
    throw bad("unknown form");
  }
  return d;
}

std::vector<request> poisson_arrivals(double rate_per_s, std::int64_t n, const length_dist& prompt,
                                      const length_dist& output, std::uint64_t seed) {
  if (!(rate_per_s > 0) || !std::isfinite(rate_per_s)) throw input_error("", "--rate", "must be > 0");
  if (n < 1) throw input_error("", "--requests", "must be >= 1");
  rng r(seed);
  std::vector<request> out;
  out.reserve(static_cast<std::size_t>(n));
  double t = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    t += r.exponential(1.0 / rate_per_s);
    request q;
    q.id = i;
    q.arrival_s = t;
    q.prompt_tokens = prompt.sample(r);
    q.output_tokens = output.sample(r);
    out.push_back(q);
  }
  return out;
}

std::vector<request> parse_arrivals_csv(std::string_view text, const std::string& file) {
  std::vector<request> out;
  int col_arrival = -1, col_prompt = -1, col_output = -1;
  std::size_t line_no = 0;
  bool header = true;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = text.find('\n', pos);
    std::string_view line = trim(text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    pos = end == std::string_view::npos ? text.size() + 1 : end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::vector<std::string_view> cells = split(line, ',');
    const std::string where = "line " + std::to_string(line_no);
    if (header) {
      for (std::size_t i = 0; i < cells.size(); ++i) {
        if (cells[i] == "arrival_s") col_arrival = static_cast<int>(i);
        if (cells[i] == "prompt_tokens") col_prompt = static_cast<int>(i);
        if (cells[i] == "output_tokens") col_output = static_cast<int>(i);
      }
      if (col_arrival < 0 || col_prompt < 0 || col_output < 0) {
        throw input_error(file, where, "the header must name arrival_s, prompt_tokens and output_tokens");
      }
      header = false;
      continue;
    }
    const auto need = static_cast<std::size_t>(std::max({col_arrival, col_prompt, col_output}));
    if (cells.size() <= need) throw input_error(file, where, "too few columns");
    request q;
    q.id = static_cast<std::int64_t>(out.size());
    if (!parse_number(cells[static_cast<std::size_t>(col_arrival)], q.arrival_s) || q.arrival_s < 0) {
      throw input_error(file, where + ": arrival_s", "must be a number >= 0");
    }
    if (!parse_int(cells[static_cast<std::size_t>(col_prompt)], q.prompt_tokens) || q.prompt_tokens < 1) {
      throw input_error(file, where + ": prompt_tokens", "must be an integer >= 1");
    }
    if (!parse_int(cells[static_cast<std::size_t>(col_output)], q.output_tokens) || q.output_tokens < 1) {
      throw input_error(file, where + ": output_tokens", "must be an integer >= 1");
    }
    out.push_back(q);
  }
  if (header) throw input_error(file, "", "no header line arrival_s,prompt_tokens,output_tokens");
  if (out.empty()) throw input_error(file, "", "no requests");
  return out;
}

}  // namespace modsim::sim::des
