#pragma once
// `modsim simulate`'s two subcommands (cli/cmd_simulate.cpp parses the options and dispatches):
// `forward` (cmd_simulate_forward.cpp) and `serve` (cmd_simulate_serve.cpp).
#include <fmt/format.h>

#include <string>

#include "cli/common.hpp"
#include "cli/printer.hpp"

namespace modsim::cli {

// A double in its shortest exact form, as the CSV outputs print it.
inline std::string num(double x) { return fmt::format("{}", x); }

int simulate_forward(const po::variables_map& vm, output_format format);
int simulate_serve(const po::variables_map& vm, output_format format);

}  // namespace modsim::cli
