// Reads nccl-tests' output tables (sim/parallel/nccl_tests.hpp).
#include "sim/parallel/nccl_tests.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "sim/model/config.hpp"

namespace modsim::sim {

namespace {

std::vector<std::string> tokens(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

bool parse_int(const std::string& t, std::int64_t& v) {
  if (t.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(t.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) return false;
  v = x;
  return true;
}

bool parse_double(const std::string& t, double& v) {
  if (t.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(t.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || !std::isfinite(x)) return false;
  v = x;
  return true;
}

// Column layout of a data row, from the column-name header line.
struct layout {
  std::size_t columns = 0;
  std::size_t time = 0, algbw = 0, busbw = 0;  // out-of-place
  std::optional<std::size_t> in_place_time;
};

// The column-name line: '#', then size count type [redop] [root] time algbw busbw #wrong ...
std::optional<layout> column_line(const std::vector<std::string>& t) {
  // t[0] is "#" (or "#size" when there is no space).
  std::vector<std::string> names;
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::string n = t[i];
    if (i == 0) {
      if (n.rfind('#', 0) != 0) return std::nullopt;
      n = n.substr(1);
      if (n.empty()) continue;
    }
    names.push_back(n);
  }
  if (names.size() < 4 || names[0] != "size" || names[1] != "count") return std::nullopt;
  layout l;
  l.columns = names.size();
  std::vector<std::size_t> times, algbws, busbws;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "time") times.push_back(i);
    if (names[i] == "algbw") algbws.push_back(i);
    if (names[i] == "busbw") busbws.push_back(i);
  }
  if (times.empty() || algbws.empty() || busbws.empty()) return std::nullopt;
  l.time = times[0];
  l.algbw = algbws[0];
  l.busbw = busbws[0];
  if (times.size() > 1) l.in_place_time = times[1];
  return l;
}

// The prefix a launcher puts before each line: srun --label's "12: " and Open MPI
// --tag-output's "[1,0]<stdout>:". Returns the line without it.
std::string_view strip_launcher_prefix(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  std::size_t j = i;
  while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
  if (j > i && j < line.size() && line[j] == ':' && (j + 1 == line.size() || line[j + 1] == ' '))
    return line.substr(j + 1);
  if (i < line.size() && line[i] == '[') {
    const std::size_t close = line.find("]<stdout>:", i);
    if (close != std::string_view::npos) return line.substr(close + 10);
  }
  return line;
}

}  // namespace

std::optional<collective> collective_from_name(std::string_view name) {
  std::string n(name);
  const auto slash = n.find_last_of('/');
  if (slash != std::string::npos) n = n.substr(slash + 1);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  // Hyphens as underscores, so all-reduce and all_reduce read alike.
  std::replace(n.begin(), n.end(), '-', '_');
  const std::pair<const char*, collective> names[] = {
      {"all_reduce", collective::all_reduce},
      {"allreduce", collective::all_reduce},
      {"all_gather", collective::all_gather},
      {"allgather", collective::all_gather},
      {"reduce_scatter", collective::reduce_scatter},
      {"reducescatter", collective::reduce_scatter},
      {"alltoall", collective::all_to_all},
      {"all_to_all", collective::all_to_all},
      {"sendrecv", collective::send_recv},
      {"send_recv", collective::send_recv},
  };
  for (const auto& [s, c] : names)
    if (n.find(s) != std::string::npos) return c;
  return std::nullopt;
}

nccl_table parse_nccl_tests(std::string_view text, const std::string& file) {
  nccl_table t;
  t.file = file;
  std::optional<layout> cols;
  int header_gpus = 0;
  int rank_lines = 0;
  std::set<std::string> hosts;
  std::optional<collective> named;
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  auto fail = [&](const std::string& why) { return input_error(file, "line " + std::to_string(number), why); };
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    line = std::string(strip_launcher_prefix(line));
    const std::vector<std::string> tok = tokens(line);
    if (tok.empty()) continue;
    if (tok[0][0] == '#') {
      // "# nThread 1 nGpus 8 minBytes ..."
      auto find = [&](const char* key) -> std::optional<std::int64_t> {
        for (std::size_t i = 0; i + 1 < tok.size(); ++i) {
          std::int64_t v = 0;
          if (tok[i] == key && parse_int(tok[i + 1], v)) return v;
        }
        return std::nullopt;
      };
      const auto threads = find("nThread");
      const auto gpus = find("nGpus");
      if (threads && gpus) header_gpus = static_cast<int>(*threads * *gpus);
      // "#  Rank  0 Group  0 Pid 498607 on host device  0 [0x18] NVIDIA H100 80GB HBM3"
      if (tok.size() >= 3 && tok[1] == "Rank") {
        ++rank_lines;
        for (std::size_t i = 2; i + 1 < tok.size(); ++i)
          if (tok[i] == "on") {
            hosts.insert(tok[i + 1]);
            break;
          }
      }
      // "# Collective test starting: all_reduce_perf"
      for (std::size_t i = 0; i + 1 < tok.size(); ++i)
        if (tok[i] == "starting:") named = collective_from_name(tok[i + 1]);
      // "# Avg bus bandwidth    : 190.715"
      if (line.find("Avg bus bandwidth") != std::string::npos) {
        double v = 0;
        if (parse_double(tok.back(), v)) t.avg_busbw_bytes_s = v * 1e9;
      }
      if (auto l = column_line(tok)) cols = l;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(tok[0][0]))) continue;  // NCCL's log, "NCCL version ..."
    // A data row.
    if (!cols) {
      // No column-name line: size count type ... then time algbw busbw #wrong twice.
      if (tok.size() < 11) throw fail("a data row before any column header, with too few columns to read");
      layout l;
      l.columns = tok.size();
      l.time = tok.size() - 8;
      l.algbw = l.time + 1;
      l.busbw = l.time + 2;
      l.in_place_time = tok.size() - 4;
      cols = l;
    }
    if (tok.size() != cols->columns)
      throw fail("expected " + std::to_string(cols->columns) + " columns as in the header, got " +
                 std::to_string(tok.size()));
    nccl_row r;
    r.line = number;
    if (!parse_int(tok[0], r.bytes) || r.bytes < 0) throw fail("size '" + tok[0] + "' is not a byte count");
    if (!parse_int(tok[1], r.count) || r.count < 0) throw fail("count '" + tok[1] + "' is not an element count");
    r.type = tok[2];
    double us = 0;
    if (!parse_double(tok[cols->time], us) || us <= 0)
      throw fail("out-of-place time '" + tok[cols->time] + "' is not a positive number of microseconds");
    r.time_s = us * 1e-6;
    double bw = 0;
    if (!parse_double(tok[cols->algbw], bw) || bw < 0) throw fail("algbw '" + tok[cols->algbw] + "' is not a number");
    r.algbw_bytes_s = bw * 1e9;
    if (!parse_double(tok[cols->busbw], bw) || bw < 0) throw fail("busbw '" + tok[cols->busbw] + "' is not a number");
    r.busbw_bytes_s = bw * 1e9;
    if (cols->in_place_time && *cols->in_place_time < tok.size()) {
      const std::string& ip = tok[*cols->in_place_time];
      if (ip != "N/A") {
        if (!parse_double(ip, us) || us <= 0) throw fail("in-place time '" + ip + "' is not a positive number");
        r.in_place_time_s = us * 1e-6;
      }
    }
    t.rows.push_back(std::move(r));
  }
  if (t.rows.empty()) throw input_error(file, "", "no data rows (not nccl-tests output?)");
  t.gpus = rank_lines > 0 ? rank_lines : header_gpus;
  t.nodes = static_cast<int>(hosts.size());
  t.op = named ? named : collective_from_name(file);
  return t;
}

nccl_table load_nccl_tests(const std::string& path) { return parse_nccl_tests(read_text_file(path), path); }

}  // namespace modsim::sim
