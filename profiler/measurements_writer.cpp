// The measurements CSV (profiler/measurements.hpp): the resumable row-by-row writer.
#include "profiler/measurements.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace modsim::profiler {
measurement_writer::measurement_writer(const std::string& path, bool resume) : m_path(path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (exists && !resume)
    throw input_error(path, "", "already exists; pass --resume to continue it, or choose another --out");
  if (exists) {
    std::vector<measurement_row> rows = read_measurements(path, &m_layout);  // checks the header
    for (const auto& r : rows) {
      m_keys.insert(sim::shape_key(sample_of(r, path)));
      if (m_device.empty()) m_device = r.device;
    }
    m_existing = rows.size();
    // Cut a partial last line left by a killed run, so the next row starts on its own line.
    const auto size = fs::file_size(path, ec);
    std::ifstream in(path, std::ios::binary);
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto last_nl = content.find_last_of('\n');
    if (!ec && last_nl != std::string::npos && last_nl + 1 < size) fs::resize_file(path, last_nl + 1, ec);
    if (ec) throw input_error(path, "", "cannot repair the partial last line: " + ec.message());
    m_file = std::fopen(path.c_str(), "ab");
  } else {
    m_layout = full_layout();
    m_file = std::fopen(path.c_str(), "wbx");  // x: never clobber a file created meanwhile
    if (m_file) {
      std::fprintf(m_file, "%s\n", csv_header(m_layout).c_str());
      std::fflush(m_file);
    }
  }
  if (!m_file) throw input_error(path, "", std::string("cannot open for writing: ") + std::strerror(errno));
}

measurement_writer::~measurement_writer() {
  if (m_file) std::fclose(m_file);
}

bool measurement_writer::accepts(timing_mode t) const {
  return t == timing_mode::isolated || (m_layout.has("timing") && m_layout.has("block"));
}

void measurement_writer::append(const measurement_row& r) {
  if (!accepts(r.timing))
    throw input_error(m_path, "timing",
                      "the file's header has no timing/block columns (written before they existed): only isolated "
                      "rows can be added; write in_block rows to a new file");
  if (r.recompute != modsim::recompute::none && !m_layout.has("recompute"))
    throw input_error(m_path, "recompute",
                      "the file's header has no recompute column (written before it existed): write training rows "
                      "with recompute selective or full to a new file");
  const std::string line = format_row(r, m_layout) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), m_file) != line.size() || std::fflush(m_file) != 0)
    throw runtime_error(m_path + ": write failed: " + std::strerror(errno));
  m_keys.insert(sim::shape_key(sample_of(r, m_path)));
}

}  // namespace modsim::profiler
