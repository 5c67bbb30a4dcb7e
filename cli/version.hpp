#pragma once
// This binary's version and commit (core/version.hpp) as the command line shows them.
#include <boost/json.hpp>
#include <string>

#include "core/version.hpp"

namespace modsim::cli {

// {"version": str, "commit": str}: what every --format json object carries as "modsim".
boost::json::object build_json();

// "modsim 0.1.0 (commit cd196a25d0)": what `modsim --version` prints.
std::string build_line();

}  // namespace modsim::cli
