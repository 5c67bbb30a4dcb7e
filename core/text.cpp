#include "core/text.hpp"

#include <algorithm>
#include <cstdio>

namespace modsim::text {
namespace {

std::string escape_pipes(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string pad(std::string_view s, std::size_t width, bool right_align) {
  const std::size_t w = display_width(s);
  const std::string fill(width > w ? width - w : 0, ' ');
  return right_align ? fill + std::string(s) : std::string(s) + fill;
}

std::string markdown_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                           const std::vector<bool>& right_align, const std::set<std::size_t>& bold) {
  const std::size_t n = header.size();
  std::vector<std::size_t> w(n, 3);
  for (std::size_t c = 0; c < n; ++c) w[c] = std::max(w[c], display_width(escape_pipes(header[c])));
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size() && c < n; ++c)
      w[c] = std::max(w[c], display_width(escape_pipes(r[c])) + (bold.empty() ? 0 : 4));
  auto right = [&](std::size_t c) { return c < right_align.size() && right_align[c]; };
  std::string out = "|";
  for (std::size_t c = 0; c < n; ++c) out += " " + pad(escape_pipes(header[c]), w[c], right(c)) + " |";
  out += "\n|";
  for (std::size_t c = 0; c < n; ++c)
    out += right(c) ? " " + std::string(w[c] - 1, '-') + ": |" : " :" + std::string(w[c] - 1, '-') + " |";
  out += "\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out += "|";
    for (std::size_t c = 0; c < n; ++c) {
      std::string cell = c < rows[i].size() ? escape_pipes(rows[i][c]) : "";
      if (bold.count(i) && !cell.empty()) cell = "**" + cell + "**";
      out += " " + pad(cell, w[c], right(c)) + " |";
    }
    out += "\n";
  }
  return out;
}

std::string ms(double seconds, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, seconds * 1e3);
  return buf;
}

}  // namespace modsim::text
