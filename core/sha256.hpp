#pragma once
// SHA-256 (FIPS 180-4) of bytes, as 64 lowercase hex digits: what a report's summary.json
// records of every input file, so two summaries say whether they were made from the same files.
#include <string>
#include <string_view>

namespace modsim {

std::string sha256_hex(std::string_view data);

}  // namespace modsim
