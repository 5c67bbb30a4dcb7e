#pragma once
// Text for people, shared by the command line's printers (cli/printer) and the report's
// Markdown (reports/markdown): display widths of UTF-8 text, the one pipe-table writer and the
// one millisecond format.
#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace modsim::text {

// Display width of UTF-8 text: code points, not bytes (×, –, ≥ in the tables).
std::size_t display_width(std::string_view s);

// `s` padded with spaces to `width` display columns: on the left when `right_align`, else on
// the right. Text at least that wide is returned as it is.
std::string pad(std::string_view s, std::size_t width, bool right_align);

// A Markdown pipe table: '|' in cells escaped, every column padded to its widest cell (at
// least 3), right_align[c] columns right-aligned (":" on the right of the rule), the rows in
// `bold` drawn **bold** (the columns keep room for the markers).
std::string markdown_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                           const std::vector<bool>& right_align, const std::set<std::size_t>& bold = {});

// Seconds as milliseconds for people, with `decimals` digits after the point: the report's
// tables print 3, `modsim predict`'s op tables 4 (their ops run for microseconds).
std::string ms(double seconds, int decimals = 3);

}  // namespace modsim::text
