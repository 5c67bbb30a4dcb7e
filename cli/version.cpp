#include "cli/version.hpp"

namespace modsim::cli {

boost::json::object build_json() { return {{"version", build().version}, {"commit", build().commit}}; }

std::string build_line() { return "modsim " + build().version + " (commit " + build().commit + ")"; }

}  // namespace modsim::cli
