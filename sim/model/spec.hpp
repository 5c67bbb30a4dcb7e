#pragma once
// Plain specification structs that configuration files parse into (sim/model/config.hpp) and that
// every model in modsim (FLOPs, cost, simulator, GUI) is built from. No behaviour beyond
// small derived quantities; validation happens in the parser.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace modsim::sim {

// The shared enums (core/types.hpp): one definition for the kernels and the models.
using modsim::dtype;
using modsim::dtype_bytes;
using modsim::find_dtype;
using modsim::mlp_kind;
using modsim::moe_variant;
using modsim::routed_tokens;
using modsim::to_string;

enum class schedule_kind { none, all, every_other, every_nth, list };
enum class inference_routing { predictor, router };
enum class run_mode { forward, train, decode };
// Activation recomputation of a training step (the CLI's --recompute; sim/model/flops.hpp says what
// each one runs again): the one enum of core/types.hpp, which the training kernels and the
// profiler's recompute axis use too.
using recompute_mode = modsim::recompute;

// Which layers are routed. every_other routes odd indices 1,3,5,... (the paper's default);
// every_nth:N routes layers with index % N == N-1; list routes exactly `layers`.
struct schedule {
  schedule_kind kind = schedule_kind::none;
  int n = 0;                // every_nth only
  std::vector<int> layers;  // list only, sorted, unique
};

struct routing_spec {
  double capacity = 1.0;  // fraction of each sequence's tokens routed, in (0, 1]
  schedule sched;
  // Per-layer override: empty, or n_layers entries; nullopt = layer not routed, a value =
  // routed at that capacity. When present it defines the routed layers.
  std::vector<std::optional<double>> layer_capacities;
  inference_routing inference = inference_routing::predictor;
  int predictor_hidden = 0;  // hidden width of the causal predictor d -> h -> 1; 0 = d_model
};

// The model file's "mode" object: an MoE MLP at every layer (variant `moe`), optionally
// combined with MoD as MoDE (paper §5); a model without MoE has no moe_spec
// (moe_variant::none is the kernels' "no MoE"). `mode` in code is the run mode only: a step's
// kind (forward, train, decode) is `run_mode` (workload::run), the MoE / MoDE variant is
// `moe_variant`, and this block is `model_spec::moe` (its file key "mode" is a contract).
// `staged` = MoD routing around the block at routed layers, the MLP is an MoE;
// `integrated` = at routed layers, `noop_experts` no-op experts join the `experts` real ones
// and a token routed to a no-op expert skips the MLP.
struct moe_spec {
  moe_variant variant = moe_variant::moe;
  int experts = 8;
  int top_k = 1;
  double capacity_factor = 0.0;  // 0 = dropless (every token-slot computed exactly once)
  int noop_experts = 0;
};

struct model_spec {
  std::string name;
  std::string source_file;  // where it was read from; empty for built-in specs
  std::string notes;        // free text for people (the model file's "notes"), kept on save
  int d_model = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int d_head = 0;  // d_model / n_heads unless given explicitly
  int d_ff = 0;
  int vocab_size = 0;
  // The LM head's weight is the embedding's (JSON "tie_embeddings", HF "tie_word_embeddings"):
  // counted once among the parameters, so in the weights, gradients and optimizer state.
  bool tie_embeddings = false;
  mlp_kind mlp = mlp_kind::gelu;
  // Sliding-window attention (HF `sliding_window`, Mistral): each query attends to at most this
  // many keys (itself and the W - 1 before it) and a sequence's KV cache holds at most this many
  // positions per layer; 0 = full attention.
  std::int64_t sliding_window = 0;
  std::optional<routing_spec> routing;  // absent = dense
  std::optional<moe_spec> moe;          // the file's "mode"; absent = no MoE

  int d_q() const { return n_heads * d_head; }
  int d_kv() const { return n_kv_heads * d_head; }
};

// One layer of a model after the schedule is resolved.
struct layer_plan {
  int index = 0;
  bool routed = false;
  double capacity = 1.0;  // 1.0 for layers that are not routed
};

// Resolves schedule + per-layer capacities into one entry per layer.
std::vector<layer_plan> plan_layers(const model_spec& model);

// One layer's routing as every part of modsim prices it (the FLOPs, the parameters, the memory,
// the simulator's steps and the parallel traffic): the schedule's plan read with the model's
// MoDE variant. A `moe` model ignores the schedule; `integrated` routes through no-op experts
// instead of around the block; `staged` and plain MoD route around it.
struct layer_routing {
  int index = 0;
  bool routed = false;      // tokens routed: MoD top-k around the block, or integrated no-op experts
  bool mod_routed = false;  // MoD routing around the block (router or predictor, top-k, gather, scatter)
  double capacity = 1.0;    // the schedule's capacity where routed, else 1
  bool moe = false;         // the MLP is a mixture of experts
  int noop_experts = 0;     // integrated MoDE's no-op experts where routed, else 0
};
std::vector<layer_routing> route_layers(const model_spec& model);

// The same model with routing removed (and no-op experts removed): the dense baseline.
model_spec dense_baseline(const model_spec& model);

struct workload {
  std::int64_t batch = 1;
  std::int64_t seq_len = 2048;       // tokens per sequence; in decode, the context length
  run_mode run = run_mode::forward;  // forward, train or decode (the CLI's --mode)
  dtype type = dtype::bf16;
  recompute_mode recompute = recompute_mode::none;  // train only
};

const char* to_string(run_mode m);
std::string to_string(const schedule& s);

// The preset the routed layers match ("none", "all", "every_other", "every_nth:N"), or "" for
// another set. `routed` has one entry per layer.
std::string schedule_preset(const std::vector<bool>& routed);

// Hardware description. Numbers are per device. `source` says whether they are datasheet,
// estimated or measured.
struct dtype_rate {
  double fp32 = 0, bf16 = 0, fp16 = 0;  // FLOP/s
  double of(dtype t) const { return t == dtype::fp32 ? fp32 : t == dtype::bf16 ? bf16 : fp16; }
};

// One class of GPU-to-GPU link (interconnect.intra_node / inter_node of a hardware file):
// bandwidth per GPU in one direction, and the latency of one message (the alpha of an
// alpha-beta cost).
struct link_spec {
  std::string name;
  double bytes_s = 0;    // per GPU, unidirectional
  double latency_s = 0;  // per message
};

// One collective's time fitted to nccl-tests rows by `modsim comm calibrate`
// (sim/parallel/comm.hpp): time = alpha_s + size x busbw_factor(gpus) / bus bandwidth, the bus
// bandwidth bus_bytes_s, or, with a ramp (ramp_to_bytes > 0), one that saturates: the time per
// bus byte goes from 1 / ramp_bus_bytes_s at sizes up to ramp_from_bytes to 1 / bus_bytes_s at
// ramp_to_bytes and above, straight in log2(size) between them.
struct collective_fit {
  std::string collective;  // all_reduce | all_gather | reduce_scatter | all_to_all | send_recv
  std::string link;        // intra_node | inter_node
  int gpus = 0;            // the GPU count the rows were measured at
  double alpha_s = 0;
  // Where alpha_s comes from: "fitted" (the rows' own floor) or "given" (fixed by
  // `modsim comm calibrate --floor-us` for a run without small sizes, whose rows cannot show
  // the floor; the calibration's source says where the figure comes from).
  std::string floor_source = "fitted";
  double bus_bytes_s = 0;
  double ramp_bus_bytes_s = 0;  // the bus bandwidth up to ramp_from_bytes (0 = no ramp)
  std::int64_t ramp_from_bytes = 0, ramp_to_bytes = 0;
  int points = 0;
  std::int64_t min_bytes = 0, max_bytes = 0;  // the sizes fitted
  double median_abs_pct_error = 0;            // of the fit on its own rows, percent
  // The same, split at 1 MiB (absent when no row is on that side): the median and the largest
  // |error| below 1 MiB, the median from 1 MiB up.
  std::optional<double> below_1mib_median_abs_pct_error, below_1mib_max_abs_pct_error;
  std::optional<double> from_1mib_median_abs_pct_error;
  std::string file;  // the nccl-tests output it came from
};

// The optional `interconnect` object of a hardware file.
struct interconnect_spec {
  int gpus_per_node = 0;
  link_spec intra_node;
  std::optional<link_spec> inter_node;  // absent: one node only
  std::string source;                   // where the numbers come from
  // interconnect.calibration (written by `modsim comm calibrate`); empty = none.
  std::string calibration_source;
  std::string calibration_date;
  std::vector<collective_fit> calibration;
};

// What a hardware file describes (its "kind": "gpu" or "cpu"): it picks the kernels an op runs
// as, the default dtype, the backend whose measurements calibrate it, and whether GEMMs pay
// wave quantisation.
enum class hardware_kind { gpu, cpu };
const char* to_string(hardware_kind k);
// The profiler backend that measures this kind of hardware: cuda for a GPU, cpu for a CPU.
backend_kind backend_of(hardware_kind k);

// How the cost model tiles a GEMM for its wave quantisation (sim/cost/gemm_tiles.hpp): fixed128, one
// 128×128 tile for every shape; chosen, the tile and split-K a cuBLAS-like heuristic picks.
enum class gemm_tiling : int { fixed128, chosen };

struct hardware_spec {
  std::string name;
  std::string source_file;
  hardware_kind kind = hardware_kind::gpu;
  std::string source;            // provenance of the numbers (datasheet / estimated / measured)
  dtype_rate peak_matmul_flops;  // FLOP/s
  dtype_rate peak_vector_flops;  // FLOP/s
  double memory_bandwidth_bytes_s = 0;
  double memory_bytes = 0;
  double l2_bytes = 0;
  int sm_count = 0;                 // SMs, or cores for a CPU
  double kernel_launch_s = 0;       // device-side cost of starting one kernel
  double host_enqueue_s = 0;        // host-side cost of enqueuing one kernel
  double interconnect_bytes_s = 0;  // 0 = none
  std::string calibration_json;     // the raw `calibration` block (written by `modsim calibrate`), or empty
  // The GEMM tiling `modsim calibrate` fits (JSON key "gemm_tiles", absent = fixed128); a
  // calibration block keeps the tiling it was fitted with, and so do the datasheet-roofline
  // ops of a calibrated file (attention it never measured).
  gemm_tiling gemm_tiles = gemm_tiling::fixed128;
  // The GEMM tiling of the uncalibrated datasheet roofline: the file's "gemm_tiles" when it
  // has the key, else chosen on a GPU (the tile chooser, sim/cost/gemm_tiles.hpp) and fixed128 on a
  // CPU (no waves). parse_hardware sets it; a spec built in code keeps fixed128.
  gemm_tiling roofline_gemm_tiles = gemm_tiling::fixed128;
  // The `interconnect` object; absent = only interconnect_bytes_s (sim/parallel/comm.hpp then takes it
  // as the intra-node bandwidth).
  std::optional<interconnect_spec> interconnect;
};

// The dtype a step runs in when none is given: bf16 on a GPU, fp32 on a CPU. Every face uses
// this one rule.
dtype default_dtype(const hardware_spec& hw);
inline bool is_gpu(const hardware_spec& hw) { return hw.kind == hardware_kind::gpu; }

}  // namespace modsim::sim
