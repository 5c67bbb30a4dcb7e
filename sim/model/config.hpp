#pragma once
// Configuration files -> spec structs. Strict: a missing file, malformed JSON (with line and
// column), an unknown key, a wrong type, an out-of-range or inconsistent value throws
// modsim::error(bad_input) whose message is one line "FILE: KEY.PATH: reason".
#include <filesystem>
#include <string>
#include <string_view>

#include "sim/model/spec.hpp"

namespace modsim::sim {

// A modsim model file (configs/models/*.json) or a HuggingFace config.json (recognised by its
// `hidden_size` key, or `n_embd` for GPT-2); HF files get no routing unless the caller adds one.
model_spec load_model(const std::string& path);
model_spec parse_model(std::string_view json_text, const std::string& file);

// The model as a modsim model file that load_model() reads back to an equal spec (notes
// included), one member per line as configs/models/*.json are written: the schedule as a preset
// name when one matches and every routed layer has the same capacity, else layer_capacities
// (null for a dense layer) on one line. Ends with a newline.
std::string model_to_json(const model_spec& model);
// Writes model_to_json(model) to `path` atomically (sim/common/io.hpp). Throws modsim::error.
void save_model(const model_spec& model, const std::string& path);

hardware_spec load_hardware(const std::string& path);
hardware_spec parse_hardware(std::string_view json_text, const std::string& file);

// configs/workloads/*.json: {"batch": 8, "seq_len": 2048, "mode": "forward", "dtype": "bf16"}.
workload load_workload(const std::string& path, workload defaults = {});

// "none", "all", "every_other", "every_nth:N", or a comma-separated list of layer indices.
// `where` names the input for the error message ("--schedule", or "file: routing.schedule").
schedule parse_schedule(std::string_view text, int n_layers, const std::string& file, const std::string& key);
run_mode parse_run_mode(std::string_view text, const std::string& file, const std::string& key);
recompute_mode parse_recompute_mode(std::string_view text, const std::string& file, const std::string& key);
dtype parse_dtype(std::string_view text, const std::string& file, const std::string& key);

// Checks every range and consistency rule of a model (the parser calls it; the CLI calls it
// again after applying command-line overrides such as --capacity).
void validate_model(const model_spec& model, const std::string& file);

// Reads a whole file; throws bad_input naming the file when it cannot be read.
std::string read_text_file(const std::string& path);

// The shipped configs' folder, the one rule every face uses: $MODSIM_CONFIGS when it names a
// folder, else the source tree's configs/ when it is there, else (an installed program moved
// away from its sources) the first configs/ holding models/ found in `program_dir` or up to
// four folders above it, else the source tree's path.
std::filesystem::path configs_root(const std::filesystem::path& program_dir = {});

// A config named on the command line or in a file: `name` itself when it is a path (it exists,
// holds a '/', or ends in .json; a path that does not open is left to the loader's "cannot open
// file"), else <configs_root>/<kind>/<name>.json when that exists; else an input_error naming the
// shipped configs of that kind. kind: "models", "hardware", "grids", ...
std::string resolve_config(const std::string& name, const char* kind, const std::filesystem::path& program_dir = {});

}  // namespace modsim::sim
