// modsim: one binary, one subcommand per job. Results go to stdout, diagnostics to stderr.
#include <exception>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "cli/version.hpp"
#include "core/error.hpp"

namespace modsim::cli {
int cmd_comm(const std::vector<std::string>& args);     // cli/cmd_comm.cpp
int cmd_compare(const std::vector<std::string>& args);  // cli/cmd_compare.cpp
}  // namespace modsim::cli

namespace {

struct command {
  std::function<int(const std::vector<std::string>&)> run;
  const char* summary;
};

const std::map<std::string, command>& commands() {
  static const std::map<std::string, command> table = {
      {"flops", {modsim::cli::cmd_flops, "exact FLOPs and bytes per op and layer of a model"}},
      {"profile", {modsim::cli::cmd_profile, "time real kernels over a capacity x shape grid"}},
      {"calibrate",
       {modsim::cli::cmd_calibrate, "fit the cost model to measurements (writes a calibrated hardware file)"}},
      {"predict", {modsim::cli::cmd_predict, "predicted time per op, layer and model, vs the dense baseline"}},
      {"validate", {modsim::cli::cmd_validate, "predicted vs measured blocks; exit 1 above --max-error"}},
      {"sweep",
       {modsim::cli::cmd_sweep, "the design space (capacities x schedules x variants), in parallel, Pareto front"}},
      {"simulate",
       {modsim::cli::cmd_simulate, "discrete-event simulation: forward-pass timelines, MoD serving, Chrome traces"}},
      {"sampling",
       {modsim::cli::cmd_sampling,
        "the sampling map: MoD / baseline decode step time over batch x context, sync vs pad, and why"}},
      {"report", {modsim::cli::cmd_report, "the cost report: Markdown, self-contained HTML, CSV, SVG charts"}},
      {"compare",
       {modsim::cli::cmd_compare,
        "compare two report summaries (summary.json): a table, JSON, Markdown or JUnit; exit 1 on a regression"}},
      {"comm",
       {modsim::cli::cmd_comm,
        "one collective over G GPUs (all_reduce, ...): alpha-beta time, or fitted to nccl-tests (comm calibrate)"}},
  };
  return table;
}

void print_usage(std::ostream& out) {
  out << "usage: modsim COMMAND [options]   (modsim COMMAND --help for its options)\n\ncommands:\n";
  for (const auto& [name, cmd] : commands())
    out << "  " << name << std::string(12 - name.size(), ' ') << cmd.summary << "\n";
  out << "\nexit codes: 0 ok, 1 a check failed (validate, compare), 2 bad input, 3 runtime failure, 130 interrupted\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(std::cout);
    return args.empty() ? modsim::cli::exit_bad_input : modsim::cli::exit_ok;
  }
  if (args[0] == "--version") {
    std::cout << modsim::cli::build_line() << "\n";
    return 0;
  }
  auto it = commands().find(args[0]);
  if (it == commands().end()) {
    std::cerr << "modsim: error: unknown command '" << args[0] << "' (see modsim --help)\n";
    return modsim::cli::exit_bad_input;
  }
  try {
    return it->second.run(std::vector<std::string>(args.begin() + 1, args.end()));
  } catch (const modsim::error& e) {
    std::cerr << "modsim " << args[0] << ": error: " << e.what() << "\n";
    return e.kind() == modsim::error_kind::bad_input ? modsim::cli::exit_bad_input : modsim::cli::exit_runtime;
  } catch (const std::exception& e) {
    std::cerr << "modsim " << args[0] << ": internal error: " << e.what() << "\n";
    return modsim::cli::exit_runtime;
  }
}
