#pragma once
// The one exception type of modsim's libraries. Library code throws it and never prints or
// exits; the CLI turns it into one line on stderr and the documented exit code.
#include <stdexcept>
#include <string>

namespace modsim {

enum class error_kind {
  bad_input,  // a file, key or flag the user gave is wrong: exit code 2
  runtime,    // the input was fine but the work failed (I/O, CUDA, ...): exit code 3
};

class error : public std::runtime_error {
 public:
  error(error_kind kind, std::string message) : std::runtime_error(std::move(message)), m_kind(kind) {}
  error_kind kind() const noexcept { return m_kind; }

 private:
  error_kind m_kind;
};

// "FILE: KEY: REASON" — the contract's one-line form for bad configuration input.
// `file` may be empty (flags given on the command line), `key` may be empty (whole file).
[[nodiscard]] inline error input_error(const std::string& file, const std::string& key, const std::string& reason) {
  std::string m;
  if (!file.empty()) m += file + ": ";
  if (!key.empty()) m += key + ": ";
  m += reason;
  return error(error_kind::bad_input, std::move(m));
}

[[nodiscard]] inline error runtime_error(std::string message) { return error(error_kind::runtime, std::move(message)); }

}  // namespace modsim
