#pragma once
// How one step (a forward pass, a training step, one serving iteration) executes: a host
// thread enqueues kernels one after another, each costing host time; GPU streams run them
// in order. A kernel starts when it is both enqueued and its stream is free, so when the
// host is slower than the kernels the GPU idles, waiting on the host — what decides the real
// speed-up of MoD's small routed kernels.
//
//  - Eager mode: the host spends host_enqueue_s per kernel launch; a kernel takes
//    launches·launch_s + device_s on its stream.
//  - CUDA-graph mode: the kernels between two host synchronisations form one graph; the host
//    spends host_enqueue_s once per graph, the graph's first kernel pays one launch_s and the
//    others none (graph nodes run back to back).
//  - A kernel with `host_waits` ends with a device→host read the host blocks on (MoD decode
//    in synchronising mode reads the routed count before it sizes the routed layer's
//    kernels): the host enqueues nothing more until that kernel has finished. It also ends a
//    CUDA graph.
//  - Several GPUs (exec_options::devices, a pipeline's stages): each has its own host thread,
//    which enqueues that GPU's kernels in list order, and its own streams.
//  - Dependencies across streams and GPUs (kernel::after, CUDA events): a kernel starts when it
//    is enqueued, its stream is free and the kernels it names have finished. A stream waiting
//    on a dependency runs nothing else meanwhile (stream order), the host goes on enqueuing.
//    Collectives (the comm kernels below) run on streams of their own, so compute that does not
//    need their result overlaps them; compute that does names them in `after`.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cost/cost.hpp"
#include "sim/model/flops.hpp"

namespace modsim::sim::des {

// The step's own work beside the model's ops: the device→host copy of a routed count (class
// "sync"), and the communication of several GPUs (class "comm"; sim/des/parallel_step.hpp makes
// them): a tensor-parallel all-reduce, expert-parallel dispatch and combine all-to-alls, a
// pipeline stage's send of its activations (or, backward, its input gradients) and a
// data-parallel gradient bucket's all-reduce.
enum class step_op : std::uint8_t {
  d2h_sync,
  tp_all_reduce,
  ep_dispatch,
  ep_combine,
  pp_send,
  dp_all_reduce,
  optimizer  // a training step's AdamW update of the GPU's parameters
};

// "routed_count_d2h", "tp_all_reduce", "ep_dispatch", "ep_combine", "pp_send", "dp_all_reduce",
// "optimizer".
const char* to_string(step_op s);

// What a kernel runs: one of the model's ops or one of the step's own. Compared and switched on
// as values; printed once, by to_string.
class kernel_op {
 public:
  constexpr kernel_op() = default;
  constexpr kernel_op(modsim::op o) : m_model(true), m_op(o) {}  // NOLINT: implicit on purpose
  constexpr kernel_op(step_op s) : m_model(false), m_step(s) {}  // NOLINT: implicit on purpose
  // The model op, or nothing for the step's own work.
  constexpr std::optional<modsim::op> model_op() const { return m_model ? std::optional(m_op) : std::nullopt; }
  constexpr std::optional<step_op> step() const { return m_model ? std::nullopt : std::optional(m_step); }
  constexpr bool operator==(const kernel_op& o) const {
    return m_model == o.m_model && (m_model ? m_op == o.m_op : m_step == o.m_step);
  }

 private:
  bool m_model = true;
  modsim::op m_op = modsim::op::router;
  step_op m_step = step_op::d2h_sync;
};
std::string_view to_string(kernel_op k);

// What the simulator needs from a cost model. time_of gives the device time of one op
// (launch excluded) and its kernel count; launch_s and host_enqueue_s are per kernel launch.
struct device_model {
  std::function<op_time(const op_cost&, const op_shape&)> time_of;
  // A training step's backward of a forward op (cost_model::backward_time_of: forward cost,
  // backward cost, shape); empty: the backward is twice the forward's time and launches.
  std::function<op_time(const op_cost&, const op_cost&, const op_shape&)> backward_time_of;
  // A training step's optimizer step (cost_model::optimizer_time_of); empty: no optimizer kernel.
  std::function<op_time(const optimizer_cost&)> optimizer_time_of;
  attention_impl attention = attention_impl::unfused;  // how the device runs attention
  double launch_s = 0;                                 // device-side cost of one kernel launch, seconds
  double host_enqueue_s = 0;                           // host-side cost of enqueuing one kernel (or one graph), seconds
  double d2h_sync_s = 5e-6;  // a device→host copy of a few bytes + the synchronisation, seconds
};

// The device model of a sim::cost_model at dtype `t` (a copy of the model is kept; defined in
// device_model.cpp, so code that does not call it links without the cost model).
device_model device_model_of(const cost_model& model, dtype t);

struct kernel {
  kernel_op op;
  int layer = -1;         // the layer index; -1 outside the layers (lm_head)
  bool backward = false;  // a training step's backward kernel
  int stream = 0;         // the stream it runs on
  int device = 0;         // the GPU it runs on, in [0, exec_options::devices)
  // Kernels (indices in the list) that must have finished before it starts; -1 = none.
  std::array<std::int32_t, 2> after{-1, -1};
  double device_s = 0;      // device time, launch excluded, seconds
  int launches = 1;         // kernel launches it takes (op_time::kernels)
  bool host_waits = false;  // the host blocks until it has finished (a device→host read)
  std::int64_t tokens = 0;  // rows it computes (block tokens; padded slots included)
  std::int64_t matmul_flops = 0;
  std::int64_t other_flops = 0;
  std::int64_t bytes = 0;
  std::int64_t wasted_matmul_flops = 0;  // spent on padding slots (decode in padding mode)
  double roofline_s = 0;                 // the cost model's datasheet roofline of the op (op_time::roofline_s)
  bool memory_bound = false;             // op_time::memory_bound() or no matmul FLOPs
  bool calibrated = false;               // timed by a learnt curve (op_time::calibrated)
};

// "routing", "norm", ... (sim::op_class_of), "comm" for the communication ops, "sync" for
// step_op::d2h_sync, "optimizer" for step_op::optimizer.
const char* kernel_class(const kernel& k);
bool is_comm(const kernel& k);

struct exec_options {
  bool cuda_graph = false;
  int streams = 1;  // kernels name a stream in [0, streams)
  int devices = 1;  // ... and a GPU in [0, devices)
  // false: only the summary (serving uses it per step); with one stream the timeline is then
  // computed by its recurrence instead of on the engine (the same numbers, no events).
  bool record_spans = true;
  bool by_class = true;  // false: leave exec_summary::by_class empty (cheaper)
};

// One interval of a timeline. Tracks: 0 the host, 1 + s stream s.
enum class span_kind {
  enqueue,    // host: enqueuing kernel `kernel` (or the graph that ends with it)
  sync_wait,  // host: blocked on the device→host read of kernel `kernel`
  run,        // stream: kernel `kernel` running (launch included)
  idle,       // stream: idle, waiting on the host, before kernel `kernel`
};
struct span {
  int device = 0;  // the GPU whose host or stream it is on
  int track = 0;
  span_kind kind = span_kind::run;
  double start_s = 0;
  double dur_s = 0;
  int kernel = -1;  // index into the kernel list
};

struct class_summary {
  std::string_view op_class;  // kernel_class(): static storage
  int kernels = 0;
  int launches = 0;
  double device_s = 0;       // on the streams, launch included, seconds
  double wait_before_s = 0;  // GPU idle (waiting on the host) right before kernels of this class
  std::int64_t matmul_flops = 0;
  std::int64_t wasted_matmul_flops = 0;
};

// One GPU's share of a step with several GPUs or communication kernels.
struct device_summary {
  int device = 0;
  double end_s = 0;           // its last kernel's end
  double busy_s = 0;          // at least one of its streams runs a kernel
  double compute_s = 0;       // a compute kernel (not comm) runs
  double comm_s = 0;          // a comm kernel runs
  double exposed_comm_s = 0;  // a comm kernel runs and no compute kernel does
  double wait_host_s = 0;     // idle before step_s, waiting on its host
  // Idle waiting on another GPU (pipeline bubble, its drain after end_s included) or on a
  // collective; busy_s + wait_host_s + wait_other_s = step_s.
  double wait_other_s = 0;
  int kernels = 0;
};

struct exec_summary {
  double step_s = 0;  // from 0 (the host starts) to the last kernel's end
  // One GPU: the time at least one stream runs a kernel; several: the mean over the GPUs.
  double gpu_busy_s = 0;
  // Time no stream runs a kernel before step_s because the GPU waits on the host (several
  // GPUs: the mean over them).
  double gpu_wait_host_s = 0;
  double host_busy_s = 0;       // the host enqueuing
  double host_sync_wait_s = 0;  // the host blocked on device→host reads
  int kernels = 0;
  int launches = 0;  // kernel launches (graphs count one each)
  int syncs = 0;     // device→host reads the host waited on
  std::int64_t matmul_flops = 0;
  std::int64_t wasted_matmul_flops = 0;
  std::vector<class_summary> by_class;  // in sim::op_classes() order, then "comm", "sync"; classes present only
  // Per GPU, when there are several or any comm kernel (empty otherwise).
  std::vector<device_summary> devices;
  double gpu_busy_fraction() const { return step_s > 0 ? gpu_busy_s / step_s : 0.0; }
};

struct timeline {
  std::vector<kernel> kernels;
  std::vector<span> spans;  // in the order they end; empty unless record_spans
  exec_summary summary;
  std::uint64_t events = 0;  // engine events it took (0 on the recurrence path)
};

// Simulates each GPU's host enqueuing its `kernels` in order and the streams running them, on a
// des::engine of its own. Throws modsim::error(runtime) for a kernel on a stream or GPU outside
// [0, o.streams) × [0, o.devices), with a negative time, or naming in `after` a kernel that is
// not in the list (or itself); and when kernels never run (a dependency cycle).
timeline simulate_execution(std::vector<kernel> kernels, const device_model& dev, const exec_options& o);

}  // namespace modsim::sim::des
