#pragma once
// The `modsim` binary run as a user runs it, for the command-line tests: from the source folder,
// through the shell, stdout and stderr captured apart, the exit status kept.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace modsim_cli_test {

struct result {
  int code = -1;
  std::string out;
  std::string err;
};

// A whole file ("" when it cannot be opened).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `modsim ARGS` in the source folder; `env` (e.g. "env -u VAR") goes before the binary.
inline result modsim(const std::string& args, const std::string& env = "") {
  static int counter = 0;
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::filesystem::path out = dir / ("modsim_cli_out_" + tag + ".txt");
  const std::filesystem::path err = dir / ("modsim_cli_err_" + tag + ".txt");
  const std::string cmd = std::string("cd '") + MODSIM_SOURCE_DIR + "' && " + env + " '" + MODSIM_BINARY + "' " + args +
                          " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

}  // namespace modsim_cli_test
