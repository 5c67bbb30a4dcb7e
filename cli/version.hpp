#pragma once
// Which modsim made an output: the project version and the commit the binary was built from
// (cli/git_revision.cmake: 10 hex digits, "-dirty" when the tree had changes, "unknown" outside
// git). `modsim --version` prints it; every --format json output, report and summary carries it.
#include <boost/json.hpp>
#include <string>

namespace modsim::cli {

struct build_info {
  std::string version;  // "0.1.0"
  std::string commit;   // "cd196a25d0", "cd196a25d0-dirty" or "unknown"
};

const build_info& build();

// {"version": str, "commit": str}
boost::json::object build_json();

// "modsim 0.1.0 (commit cd196a25d0)"
std::string build_line();

}  // namespace modsim::cli
