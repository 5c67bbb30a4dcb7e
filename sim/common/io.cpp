#include "sim/common/io.hpp"

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "core/error.hpp"

namespace modsim::sim {

namespace json = boost::json;

void write_file_atomically(const std::string& path, std::string_view text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw runtime_error(path + ": cannot write (" + tmp.string() + ")");
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      throw runtime_error(path + ": write failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw runtime_error(path + ": cannot rename the temporary file over it: " + ec.message());
  }
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

namespace {

void write_pretty(std::ostream& out, const json::value& v, int indent, const pretty_options& opt) {
  const std::string pad(indent, ' ');
  switch (v.kind()) {
    case json::kind::object: {
      const auto& o = v.as_object();
      if (o.empty()) {
        out << "{}";
        return;
      }
      // Small objects of scalars on one line (knots, rates).
      bool flat = o.size() <= opt.flat_object_max;
      for (const auto& kv : o)
        if (kv.value().is_structured() || (kv.value().is_string() && kv.value().as_string().size() > 40)) flat = false;
      if (flat) {
        out << "{ ";
        bool first = true;
        for (const auto& kv : o) {
          if (!first) out << ", ";
          first = false;
          out << json::serialize(json::value(kv.key())) << ": ";
          write_pretty(out, kv.value(), indent, opt);
        }
        out << " }";
        return;
      }
      out << "{\n";
      bool first = true;
      for (const auto& kv : o) {
        if (!first) out << ",\n";
        first = false;
        out << pad << "  " << json::serialize(json::value(kv.key())) << ": ";
        write_pretty(out, kv.value(), indent + 2, opt);
      }
      out << "\n" << pad << "}";
      return;
    }
    case json::kind::array: {
      const auto& a = v.as_array();
      if (a.empty()) {
        out << "[]";
        return;
      }
      bool scalars = opt.flat_scalar_arrays;
      for (const auto& x : a)
        if (x.is_structured()) scalars = false;
      if (scalars) {
        out << "[";
        for (std::size_t i = 0; i < a.size(); ++i) {
          if (i) out << ", ";
          write_pretty(out, a[i], indent, opt);
        }
        out << "]";
        return;
      }
      out << "[\n";
      for (std::size_t i = 0; i < a.size(); ++i) {
        out << pad << "  ";
        write_pretty(out, a[i], indent + 2, opt);
        out << (i + 1 < a.size() ? ",\n" : "\n");
      }
      out << pad << "]";
      return;
    }
    case json::kind::double_: {
      // Shortest text that reads back to the same double ("3.328e+11", not "3.328E11").
      const double d = v.as_double();
      char buf[40];
      for (int precision = 15; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, d);
        if (std::strtod(buf, nullptr) == d) break;
      }
      std::string t(buf);
      if (t.find_first_of(".eEn") == std::string::npos) t += ".0";  // keep it a floating-point number
      out << t;
      return;
    }
    default:
      out << json::serialize(v);
  }
}

}  // namespace

std::string pretty_json(const boost::json::value& v, const pretty_options& options) {
  std::ostringstream out;
  write_pretty(out, v, 0, options);
  return out.str();
}

}  // namespace modsim::sim
