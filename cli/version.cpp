#include "cli/version.hpp"

#include "git_revision.hpp"

namespace modsim::cli {

const build_info& build() {
  static const build_info info{MODSIM_VERSION, MODSIM_GIT_REVISION};
  return info;
}

boost::json::object build_json() { return {{"version", build().version}, {"commit", build().commit}}; }

std::string build_line() { return "modsim " + build().version + " (commit " + build().commit + ")"; }

}  // namespace modsim::cli
