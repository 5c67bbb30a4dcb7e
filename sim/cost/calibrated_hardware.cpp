// Writes the calibrated hardware file (sim/cost/calibrated_hardware.hpp).
#include "sim/cost/calibrated_hardware.hpp"

#include <boost/json.hpp>
#include <filesystem>
#include <system_error>

#include "core/error.hpp"
#include "sim/model/config.hpp"
#include "sim/common/io.hpp"

namespace modsim::sim {

namespace json = boost::json;

void write_calibrated_hardware(const std::string& hardware_path, const calibration& c, const std::string& out_path,
                               const std::string& name) {
  const std::string text = read_text_file(hardware_path);
  json::value v;
  try {
    v = json::parse(text);
  } catch (const std::exception& e) {
    throw input_error(hardware_path, "", std::string("malformed JSON: ") + e.what());
  }
  if (!v.is_object()) throw input_error(hardware_path, "", "expected an object");
  json::object& o = v.as_object();
  o["name"] = name.empty() ? std::filesystem::path(out_path).stem().string() : name;
  std::string files;
  for (const auto& s : c.sources) files += (files.empty() ? "" : ", ") + s.file;
  std::string note = "The `calibration` block is measured: fitted by modsim calibrate on " + c.date + " from " + files +
                     " (" + c.device + "); the other numbers are as in the file it was made from.";
  if (auto* notes = o.if_contains("notes"); notes && notes->is_string())
    note = std::string(notes->as_string()) + " " + note;
  o["notes"] = note;
  o["calibration"] = json::parse(calibration_to_json(c));

  const std::string body = pretty_json(v) + "\n";

  namespace fs = std::filesystem;
  fs::path dir = fs::path(out_path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw input_error(out_path, "", "folder does not exist");
  write_file_atomically(out_path, body);
}

}  // namespace modsim::sim
