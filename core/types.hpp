#pragma once
// The enums every part of modsim shares (kernels, sim, profiler, reports, GUI), their names
// and their one parser each, plus the routed-token count of a MoD block. Dependency-free:
// the kernels and the models both build on it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace modsim {

enum class dtype { fp32, bf16, fp16 };
// The kernels a measurement ran on (`modsim profile --backend`, the measurements CSV's and a
// calibration's `backend`): cpu, the OpenBLAS reference; cuda, cuBLAS and modsim's own kernels.
enum class backend_kind { cpu, cuda };
enum class mlp_kind { gelu, swiglu };
// MoE / MoDE (paper §5). none: no MoE. staged: MoD routing (router/topk/gather at the
// capacity) around a block whose MLP is an MoE. integrated: attention over all tokens, then an
// MoE MLP whose router also chooses among no-op experts; a token that chooses a no-op expert
// skips the MLP. moe: an MoE MLP at every layer, no MoD routing (a model-level variant; a
// kernel block runs it as integrated without no-op experts). The values are part of the
// calibration files' block keys: append, never reorder.
enum class moe_variant { none, staged, integrated, moe };
// How a decode step sizes a routed block (docs/contracts.md, decode measurements). sync: the routed
// count is read back to the host and the block runs on exactly those rows. pad: the block
// has a static ceil(pad_capacity·B) rows and no host sync (the whole step can be captured in
// a CUDA graph); rows beyond the routed count are padding, routed tokens beyond it are dropped.
enum class decode_routing { sync, pad };
// How a decode step runs: its routing and whether the step is captured in one CUDA graph (the
// measurements CSV's and the grid's `decode_routing`, named sync, pad and graph). pad_graph is
// pad inside a CUDA graph; sync cannot be captured (it reads the routed count back). CUDA
// graphs exist on the cuda backend only: `modsim profile --backend cpu` skips graph points,
// saying so, and the CPU decode step refuses one.
enum class decode_run { sync, pad, pad_graph };
// The routing of a run: sync for sync, pad for pad and pad_graph.
decode_routing routing_of(decode_run r);
// Whether a run is captured in a CUDA graph (pad_graph).
bool in_cuda_graph(decode_run r);
// How attention runs (the measurements CSV's and a calibration's `attention`).
//   unfused: attn_scores → attn_softmax → attn_values, the n×n scores written to memory and
//            read back.
//   fused:   one causal attention kernel (CUDA: cuDNN's fused SDPA): Q, K, V read once, O
//            written once, no scores in memory, only the causal part of the square computed;
//            the single ops attn_scores/attn_softmax/attn_values have no fused form.
enum class attention_impl { unfused, fused };
// How a measured row was timed (the measurements CSV's `timing` and `modsim profile --timing`).
//   isolated: the op alone, inputs rotated and the device cache flushed before each sample.
//   in_block: the op inside its block's run, warm, from boundaries on the block's timeline
//             (kernels::backend::timed_block_run); a block point yields its own row and one
//             row per op of the block.
enum class timing_mode { isolated, in_block };
// What a training forward keeps for its backward (kernels/train.hpp; the measurements CSV's and
// the grid's `recompute`).
//   none:      every activation the backward reads;
//   selective: the same without the attention probabilities, recomputed in the backward;
//   full:      only the layer's input; the backward runs the layer's forward again first.
enum class recompute { none, selective, full };

const char* to_string(dtype t);
const char* to_string(backend_kind b);
// "" for none (a measured row or calibration that names no backend).
const char* to_string(const std::optional<backend_kind>& b);
const char* to_string(mlp_kind m);
const char* to_string(moe_variant v);
const char* to_string(decode_routing r);
const char* to_string(decode_run r);  // "sync", "pad", "graph"
const char* to_string(attention_impl a);
const char* to_string(timing_mode t);
const char* to_string(recompute r);

// The one name → value mapping of each enum; nullopt for an unknown name. Callers that read
// a file add the file and key to their error (see core/error.hpp).
std::optional<dtype> find_dtype(std::string_view name);
std::optional<backend_kind> find_backend(std::string_view name);
std::optional<mlp_kind> find_mlp_kind(std::string_view name);
std::optional<moe_variant> find_moe_variant(std::string_view name);
std::optional<decode_routing> find_decode_routing(std::string_view name);
std::optional<decode_run> find_decode_run(std::string_view name);
std::optional<attention_impl> find_attention_impl(std::string_view name);
std::optional<timing_mode> find_timing_mode(std::string_view name);
std::optional<recompute> find_recompute(std::string_view name);
// Throws modsim::error (bad_input) "dtype: unknown dtype 'x' (fp32, bf16, fp16)".
dtype parse_dtype(std::string_view name);
// Throws modsim::error (bad_input) naming `file` and `key`: "unknown backend 'x' (expected cpu or
// cuda)".
backend_kind parse_backend(std::string_view name, const std::string& file, const std::string& key);
// Throws modsim::error (bad_input) naming `key` for a name other than unfused / fused.
attention_impl parse_attention_impl(std::string_view name, const std::string& key = "attention");
// Throws modsim::error (bad_input) naming `key` for a name other than isolated / in_block.
timing_mode parse_timing(std::string_view name, const std::string& key = "timing");
// Throws modsim::error (bad_input) naming `key` for a name other than none / selective / full.
recompute parse_recompute(std::string_view name, const std::string& key = "recompute");

// Bytes per element: fp32 4, bf16 and fp16 2.
int dtype_bytes(dtype t);

// k = clamp(ceil(capacity * seq_len), 1, seq_len), robust to the rounding of capacity
// (0.1 * 30 is 3 tokens, not 4).
inline std::int64_t routed_tokens(double capacity, std::int64_t seq_len) {
  if (seq_len <= 0) return 0;
  const double exact = capacity * static_cast<double>(seq_len);
  // capacity is a decimal the user typed (0.1, 0.125, ...); its binary product may land a
  // hair above an integer, so forgive a relative 1e-9 before rounding up.
  const double k = std::ceil(exact - 1e-9 * std::max(1.0, std::abs(exact)));
  if (!(k >= 1.0)) return 1;  // also catches NaN
  if (k >= static_cast<double>(seq_len)) return seq_len;
  return static_cast<std::int64_t>(k);
}

}  // namespace modsim
