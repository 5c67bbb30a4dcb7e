#pragma once
// Which modsim made an output: the project version (CMake's PROJECT_VERSION) and the commit the
// binary was built from (cli/git_revision.cmake: 10 hex digits, "-dirty" when tracked files had
// changes, "unknown" outside git). `modsim --version` prints it; every --format json output, every
// report (the command line's and the explorer's) and every summary.json carries it.
#include <string>

namespace modsim {

struct build_info {
  std::string version;  // "0.1.0"
  std::string commit;   // "cd196a25d0", "cd196a25d0-dirty" or "unknown"
};

// This binary's.
const build_info& build();

}  // namespace modsim
