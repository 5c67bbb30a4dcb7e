#pragma once
// Shared pieces of the `modsim` command line: exit codes, output formats, the model and
// workload flags every model-taking subcommand accepts. Subcommands are functions
// `int cmd_NAME(const std::vector<std::string>& args)` (args exclude "modsim NAME") that
// write results to stdout, never print diagnostics there, and throw modsim::error for
// bad input; main() turns an error into one line on stderr and its exit code.
#include <boost/json.hpp>
#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include <optional>

#include "analysis/analysis.hpp"
#include "cli/printer.hpp"
#include "sim/model/spec.hpp"

namespace modsim::cli {

namespace po = boost::program_options;

// Exit codes (documented in docs/errors.md).
inline constexpr int exit_ok = 0;
inline constexpr int exit_check_failed = 1;   // e.g. `validate` above --max-error
inline constexpr int exit_bad_input = 2;      // bad flags, files, keys or values
inline constexpr int exit_runtime = 3;        // the work itself failed (I/O, device)
inline constexpr int exit_interrupted = 130;  // SIGINT after a clean stop

// Parses `args` against `options` (+ positional names); "--help" prints `usage` and the
// options to stdout and returns false (the caller returns exit_ok). Unknown or malformed
// flags throw modsim::error(bad_input).
bool parse_args(const std::vector<std::string>& args, const po::options_description& options,
                const po::positional_options_description& positional, po::variables_map& vm, const std::string& usage);

// --batch, --seq, --mode, --dtype, --workload FILE, and the routing overrides
// --capacity C and --schedule S (applied to the model, e.g. to make an HF config MoD).
void add_workload_options(po::options_description& options, const char* default_mode = "forward");
void add_routing_overrides(po::options_description& options);

// The workload from --workload (if any) overridden by explicit flags. `default_dtype` is used
// when neither gives one. A --recompute flag outside --mode train is refused (exit 2: nothing
// recomputes in a forward or decode step) unless `trains_anyway` (the report, whose Training
// section trains the workload whatever its mode).
sim::workload workload_from(const po::variables_map& vm, sim::dtype default_dtype = sim::dtype::bf16,
                            bool trains_anyway = false);

// {"batch", "seq_len", "mode", "dtype"}: the workload as every command's JSON writes it.
boost::json::object workload_json(const sim::workload& w);

// Loads MODEL (a path, or a bare name looked up under configs/models/) and applies the routing
// overrides from `vm`, re-validating the result.
sim::model_spec load_model_arg(const std::string& model, const po::variables_map& vm);

// How one step runs (simulate forward, predict --mode decode): --graph, --decode-routing
// fastest|sync|pad (default fastest: timeline_request::fastest; --graph alone: pad + graphs),
// --pad-capacity C (default: sim::des::pad_rows' rule), --seed N, --draws N.
void add_step_options(po::options_description& options);
analysis::timeline_request step_options_from(const po::variables_map& vm);
// The decode strategies tried and the one kept (analysis::decode_strategy_choice): the JSON
// object "decode_routing_choice" of predict and simulate forward, and its one line for people.
boost::json::object decode_choice_json(const analysis::decode_strategy_choice& ch);
std::string decode_candidates_text(const analysis::decode_strategy_choice& ch);
// The text of --pad-capacity's default rule (the --help of every command that takes it).
extern const char* const pad_capacity_help;

// --baseline MODEL: the dense model every "vs dense" compares with (default: MODEL without routing).
void add_baseline_option(po::options_description& options);
std::optional<sim::model_spec> baseline_from(const po::variables_map& vm);

// --flop-budget F (predict --mode train, report): a training budget in model FLOPs
// (analysis::training_request). flop_budget_from: empty when not given; not a number > 0 is bad
// input naming --flop-budget.
void add_flop_budget_option(po::options_description& options);
std::optional<double> flop_budget_from(const po::variables_map& vm);

// --attention fused|unfused (predict, simulate forward, sweep, sampling, report): how attention
// runs (analysis::configuration::attention). attention_from: empty when not given (the
// hardware's default); an unknown value is bad input naming --attention.
void add_attention_option(po::options_description& options);
std::optional<attention_impl> attention_from(const po::variables_map& vm);
// The line every command's text prints: "attention: fused (...)": whether the calibration
// measured it, and if not, that the attention ops are the datasheet roofline.
std::string attention_line(const analysis::analysis_result& a);
// {"attention": "fused", "attention_measured": bool} added to a command's JSON object.
void add_attention_json(boost::json::object& o, const analysis::analysis_result& a);
// A model with a sliding window (model_spec::sliding_window): one head line saying how it is
// priced at workload `w` (`what_else`, when not empty, is appended: what the command does not
// honour); empty for a model without one. add_sliding_window_json adds "sliding_window": W then.
std::string sliding_window_line(const sim::model_spec& m, const sim::workload& w, const std::string& what_else = {});
void add_sliding_window_json(boost::json::object& o, const sim::model_spec& m);

// --tp --pp --dp --ep --micro-batches --gpus (predict, report): the step over several GPUs.
void add_parallel_options(po::options_description& options);
// The request the flags make; `default_gpus` (> 0) ranks that many GPUs when no flag is given
// (0: no request then). --micro-batches alone is bad input.
std::optional<analysis::parallel_request> parallel_from(const po::variables_map& vm, int default_gpus = 0);
// {"name", "routing_removed"}: which baseline a command's JSON compared with.
boost::json::object baseline_json(const analysis::configuration& c);

// The items of a comma-separated flag value (`--capacities 0.125,0.5`), trimmed of spaces and
// tabs, empty items skipped; a value with no item at all is bad input naming `flag`. The one
// list parser of the command line.
std::vector<std::string> comma_list(const std::string& text, const std::string& flag);

// The rows of a measurements CSV as profiler-independent points (sim/cost/calibrate.hpp), each
// with its profiler point key and "FILE:LINE". Throws modsim::error(bad_input) naming the
// file when it is missing, malformed or has no data rows. (Defined in cmd_calibrate.cpp.)

// Subcommands.
int cmd_flops(const std::vector<std::string>& args);
int cmd_profile(const std::vector<std::string>& args);
int cmd_calibrate(const std::vector<std::string>& args);
int cmd_predict(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_sweep(const std::vector<std::string>& args);
int cmd_report(const std::vector<std::string>& args);
int cmd_simulate(const std::vector<std::string>& args);
int cmd_sampling(const std::vector<std::string>& args);

}  // namespace modsim::cli
