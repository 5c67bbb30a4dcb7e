// The CUDA backend: wires the ops of kernels/backend.hpp to the kernels of this folder on one
// device (device_context.cuh) and one workspace (workspace.cuh), and times them with CUDA events.
// The composition of the blocks mirrors the CPU backend's (kernels/cpu/cpu_backend.cpp) op for op.
#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/block_timeline.hpp"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/device_context.cuh"
#include "kernels/cuda/expert_router.cuh"
#include "kernels/cuda/gather.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/mlp_act.cuh"
#include "kernels/cuda/moe.cuh"
#include "kernels/cuda/nvml.hpp"
#include "kernels/cuda/rmsnorm.cuh"
#include "kernels/cuda/router.cuh"
#include "kernels/cuda/scatter.cuh"
#include "kernels/cuda/softmax.cuh"
#include "kernels/cuda/topk.cuh"
#include "kernels/cuda/train.cuh"
#include "kernels/cuda/workspace.cuh"
#include "kernels/cuda_backend.hpp"
#include "kernels/init.hpp"

namespace modsim::kernels {

namespace cuda {
namespace {

using detail::cuda_workspace;
using detail::device_context;

// The ops on a workspace. `io` is what a block runs on: rows [0, B·n) of `in`.

struct block_io {
  const void* in = nullptr;
  std::int64_t n = 0;
};

enum class mlp_path { dense, moe };

// The boundaries of a timed block run (backend::timed_block_run) as CUDA events on the
// stream: one before the block and one after each op's kernels, read once the stream is done.
class boundary_events {
 public:
  boundary_events() = default;
  ~boundary_events() {
    for (cudaEvent_t e : m_events) cudaEventDestroy(e);  // errors ignored: a destructor
  }
  boundary_events(const boundary_events&) = delete;
  boundary_events& operator=(const boundary_events&) = delete;

  void start(cudaStream_t stream) {
    m_ops.clear();
    record(0, stream);
  }
  void after(op o, cudaStream_t stream) {
    m_ops.push_back(o);
    record(m_ops.size(), stream);
  }
  // Call after the stream finished: the per-op seconds (block_timeline::fold).
  double read(std::vector<backend::op_time>& ops) {
    m_timeline.clear();
    for (std::size_t i = 0; i < m_ops.size(); ++i) {
      float ms = 0;
      MODSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, m_events[0], m_events[i + 1]));
      m_timeline.mark(m_ops[i], std::llround(static_cast<double>(ms) * 1e6));
    }
    return m_timeline.fold(ops);
  }

 private:
  // Records event `i` (made on first use) on `stream`.
  void record(std::size_t i, cudaStream_t stream) {
    while (m_events.size() <= i) {
      cudaEvent_t e = nullptr;
      MODSIM_CUDA_CHECK(cudaEventCreate(&e));
      m_events.push_back(e);
    }
    MODSIM_CUDA_CHECK(cudaEventRecord(m_events[i], stream));
  }

  std::vector<cudaEvent_t> m_events;  // [0]: before the block; [i + 1]: after m_ops[i]
  std::vector<op> m_ops;
  block_timeline m_timeline;
};

class executor {
 public:
  // `marks` (may be null): records the boundary after each op of a block.
  explicit executor(cuda_workspace& ws, boundary_events* marks = nullptr)
      : m_ws(ws),
        m_s(ws.shape()),
        m_t(ws.type()),
        m_stream(ws.context().stream),
        m_cublas(ws.context().cublas),
        m_marks(marks) {}

  void execute(op o) {
    switch (o) {
      case op::router:
        router_op();
        return;
      case op::topk:
        topk_op();
        return;
      case op::gather:
        gather_op();
        return;
      case op::scatter:
        scatter_op();
        return;
      case op::attn_norm:
        attn_norm(single_op_io());
        return;
      case op::qkv_proj:
        qkv_proj(single_op_io());
        return;
      case op::attn_scores:
        attn_scores(single_op_io());
        return;
      case op::attn_softmax:
        attn_softmax_op(single_op_io());
        return;
      case op::attn_values:
        attn_values(single_op_io());
        return;
      case op::out_proj:
        out_proj(single_op_io());
        return;
      case op::mlp_norm:
        mlp_norm(single_op_io());
        return;
      case op::mlp_up:
        mlp_up(single_op_io());
        return;
      case op::mlp_gate:
        mlp_gate(single_op_io());
        return;
      case op::mlp_act:
        mlp_act(single_op_io());
        return;
      case op::mlp_down:
        mlp_down(single_op_io());
        return;
      case op::expert_router:
        expert_router_op(single_op_io());
        return;
      case op::experts:
        experts_op(single_op_io());
        return;
      case op::block_dense:
        run_block(dense_io(), mlp_path::dense);
        return;
      case op::block_mod:
        routed_layer(mlp_path::dense);
        return;
      case op::layer_mode:
        if (m_s.variant == moe_variant::none)
          throw input_error("", "op", "layer_mode needs a mode variant (staged or integrated)");
        if (m_s.variant == moe_variant::integrated)
          run_block(dense_io(), mlp_path::moe);
        else
          routed_layer(mlp_path::moe);
        return;
      case op::predictor:
      case op::lm_head:
        throw input_error("", "op", std::string(to_string(o)) + " is an op of the cost model only; no backend runs it");
      case op::decode_dense:
      case op::decode_mod:
      case op::decode_step:
        throw input_error("", "op", std::string(to_string(o)) + " is a decode step: kernels/decode.hpp runs it");
      case op::block_dense_train:
      case op::block_mod_train:
        train_step(o);
        return;
      case op::adamw:
        adamw_step();
        return;
    }
    throw runtime_error("cuda backend: unknown op " + std::to_string(static_cast<int>(o)));
  }

 private:
  block_io dense_io() const { return {m_ws.ptr(tensor::x), m_s.seq_len}; }
  block_io routed_io() const { return {m_ws.ptr(tensor::routed_x), m_s.routed_tokens()}; }
  block_io single_op_io() const { return m_s.variant == moe_variant::integrated ? dense_io() : routed_io(); }

  // One layer's forward + backward (kernels/cuda_train.hpp) on the workspace's training state,
  // on the workspace's stream. Attention is the unfused path whatever fused_attention says.
  void train_step(op o) {
    train::cuda_trainer* t = m_ws.trainer(o == op::block_mod_train);
    if (t == nullptr)
      throw input_error(
          "", "op", std::string(to_string(o)) + " needs a workspace made for training (workspace_options::training)");
    t->forward(m_ws.train_mode());
    t->backward();
  }

  // One AdamW step (default options) over the workspace's dense layer, with the gradients of
  // its last backward: the fp32 master weights and moments, and the dtype's weights refreshed.
  void adamw_step() {
    train::cuda_trainer* t = m_ws.trainer(false);
    if (t == nullptr)
      throw input_error("", "op", "adamw needs a workspace made for training (workspace_options::training)");
    t->adamw_step({});
  }

  // Marks the boundary after op `o` when the run is timed.
  void after(op o) {
    if (m_marks != nullptr) m_marks->after(o, m_stream);
  }

  void run_block(const block_io& io, mlp_path path) {
    if (path == mlp_path::moe) require_moe("layer_mode");
    attn_norm(io);
    after(op::attn_norm);
    qkv_proj(io);
    after(op::qkv_proj);
    if (m_ws.fused()) {
      // One kernel for scores, causal softmax and values (timed_block_run refuses this case:
      // the three ops have no boundaries in it).
      m_ws.fused_plan(io.n).run(m_ws.fused_scratch());
    } else {
      attn_scores(io);
      after(op::attn_scores);
      attn_softmax_op(io);
      after(op::attn_softmax);
      attn_values(io);
      after(op::attn_values);
    }
    out_proj(io);
    after(op::out_proj);
    mlp_norm(io);
    after(op::mlp_norm);
    if (path == mlp_path::dense) {
      mlp_up(io);
      after(op::mlp_up);
      if (m_s.mlp == mlp_kind::swiglu) {
        mlp_gate(io);
        after(op::mlp_gate);
      }
      mlp_act(io);
      after(op::mlp_act);
      mlp_down(io);
      after(op::mlp_down);
    } else {
      expert_router_op(io);
      after(op::expert_router);
      experts_op(io);
      after(op::experts);
    }
  }

  void routed_layer(mlp_path path) {
    router_op();
    after(op::router);
    topk_op();
    after(op::topk);
    gather_op();
    after(op::gather);
    run_block(routed_io(), path);
    scatter_op();
    after(op::scatter);
  }

  void router_op() {
    cuda::router(m_t, m_ws.ptr(tensor::x), m_ws.ptr(tensor::router_w), m_ws.f32(tensor::router_logits), m_s.tokens(),
                 m_s.d_model, m_stream);
  }

  void topk_op() {
    cuda::topk(m_ws.f32(tensor::router_logits), m_ws.i32(tensor::routed_index), m_s.batch, m_s.seq_len,
               m_s.routed_tokens(), m_stream);
  }

  void gather_op() {
    cuda::gather(m_t, m_ws.ptr(tensor::x), m_ws.f32(tensor::router_logits), m_ws.i32(tensor::routed_index),
                 m_ws.ptr(tensor::routed_x), m_ws.f32(tensor::routed_r), m_s.batch, m_s.seq_len, m_s.routed_tokens(),
                 m_s.d_model, m_stream);
  }

  void scatter_op() {
    const std::int64_t k = m_s.routed_tokens(), rows = m_s.batch * k;
    if (m_ws.scattered_valid())
      cuda::restore_rows(m_t, m_ws.ptr(tensor::x), m_ws.scattered_rows(), m_ws.ptr(tensor::out), rows, m_s.d_model,
                         m_stream);
    cuda::scatter(m_t, m_ws.ptr(tensor::x), m_ws.ptr(tensor::y), m_ws.ptr(tensor::routed_x), m_ws.f32(tensor::routed_r),
                  m_ws.i32(tensor::routed_index), m_ws.ptr(tensor::out), m_ws.scattered_rows(), m_s.batch, m_s.seq_len,
                  k, m_s.d_model, m_stream);
    m_ws.set_scattered_valid();
  }

  std::int64_t rows(const block_io& io) const { return m_s.batch * io.n; }

  void attn_norm(const block_io& io) {
    rms_norm(m_t, io.in, m_ws.ptr(tensor::attn_norm_g), m_ws.ptr(tensor::attn_in), rows(io), m_s.d_model, m_stream);
  }

  // C = A·W (row-major), all of the workspace's dtype.
  void project(const void* a, std::int64_t m, std::int64_t k, tensor w, std::int64_t n, void* c, float beta) {
    cuda::project(m_cublas, m_t, a, m, k, m_ws.ptr(w), n, c, m_t, beta);
  }

  void qkv_proj(const block_io& io) {
    const void* a = m_ws.ptr(tensor::attn_in);
    const std::int64_t m = rows(io), d = m_s.d_model;
    project(a, m, d, tensor::w_q, m_s.d_q(), m_ws.ptr(tensor::q), 0.0f);
    project(a, m, d, tensor::w_k, m_s.d_kv(), m_ws.ptr(tensor::k), 0.0f);
    project(a, m, d, tensor::w_v, m_s.d_kv(), m_ws.ptr(tensor::v), 0.0f);
  }

  void attn_scores(const block_io& io) {
    cuda::attn_scores(m_cublas, m_t, m_ws.plan(io.n), m_ws.ptr(tensor::q), m_ws.ptr(tensor::k),
                      m_ws.ptr(tensor::scores));
  }

  void attn_softmax_op(const block_io& io) {
    cuda::attn_softmax(m_t, m_ws.ptr(tensor::scores), m_s.batch * m_s.n_heads, io.n, m_stream);
  }

  void attn_values(const block_io& io) {
    cuda::attn_values(m_cublas, m_t, m_ws.plan(io.n), m_ws.ptr(tensor::scores), m_ws.ptr(tensor::v),
                      m_ws.ptr(tensor::attn_out));
  }

  // dst[0, rows·d) = src (device to device, on the stream).
  void copy_act(const void* src, void* dst, std::int64_t count) {
    if (src == dst || count == 0) return;
    MODSIM_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(count) * m_ws.act_bytes(),
                                      cudaMemcpyDeviceToDevice, m_stream));
  }

  void out_proj(const block_io& io) {
    const std::int64_t m = rows(io), d = m_s.d_model;
    copy_act(io.in, m_ws.ptr(tensor::h), m * d);
    project(m_ws.ptr(tensor::attn_out), m, m_s.d_q(), tensor::w_o, d, m_ws.ptr(tensor::h), 1.0f);
  }

  void mlp_norm(const block_io& io) {
    rms_norm(m_t, m_ws.ptr(tensor::h), m_ws.ptr(tensor::mlp_norm_g), m_ws.ptr(tensor::mlp_in), rows(io), m_s.d_model,
             m_stream);
  }

  void mlp_up(const block_io& io) {
    project(m_ws.ptr(tensor::mlp_in), rows(io), m_s.d_model, tensor::w_up, m_s.d_ff, m_ws.ptr(tensor::mlp_hidden),
            0.0f);
  }

  void mlp_gate(const block_io& io) {
    if (m_s.mlp != mlp_kind::swiglu) throw input_error("", "op", "mlp_gate needs mlp = swiglu");
    project(m_ws.ptr(tensor::mlp_in), rows(io), m_s.d_model, tensor::w_gate, m_s.d_ff,
            m_ws.ptr(tensor::mlp_gate_hidden), 0.0f);
  }

  void mlp_act(const block_io& io) {
    const std::int64_t count = rows(io) * m_s.d_ff;
    if (m_s.mlp == mlp_kind::swiglu)
      silu_mul(m_t, m_ws.ptr(tensor::mlp_hidden), m_ws.ptr(tensor::mlp_gate_hidden), count, m_stream);
    else
      gelu(m_t, m_ws.ptr(tensor::mlp_hidden), count, m_stream);
  }

  void mlp_down(const block_io& io) {
    const std::int64_t m = rows(io), d = m_s.d_model;
    copy_act(m_ws.ptr(tensor::h), m_ws.ptr(tensor::y), m * d);
    project(m_ws.ptr(tensor::mlp_hidden), m, m_s.d_ff, tensor::w_down, d, m_ws.ptr(tensor::y), 1.0f);
  }

  void require_moe(const char* name) const {
    if (m_s.variant == moe_variant::none)
      throw input_error("", "op", std::string(name) + " needs a mode variant (staged or integrated)");
  }

  void expert_router_op(const block_io& io) {
    require_moe("expert_router");
    const std::int64_t m = rows(io), Et = m_s.router_experts();
    gemm_args g;
    g.ab = m_t;
    g.c = dtype::fp32;  // logits in fp32
    g.m = m;
    g.n = Et;
    g.k = m_s.d_model;
    g.a = m_ws.ptr(tensor::mlp_in);
    g.lda = m_s.d_model;
    g.b = m_ws.ptr(tensor::expert_router_w);
    g.ldb = Et;
    g.c_ptr = m_ws.ptr(tensor::expert_logits);
    g.ldc = Et;
    gemm(m_cublas, g);
    expert_choice(m_ws.f32(tensor::expert_logits), m_ws.i32(tensor::expert_index), m_ws.f32(tensor::expert_gate), m,
                  static_cast<int>(Et), m_s.experts, m_ws.expert_capacity(), m_stream);
  }

  void experts_op(const block_io& io) {
    require_moe("experts");
    moe_dims dims;
    dims.m = rows(io);
    dims.d = m_s.d_model;
    dims.d_ff = m_s.d_ff;
    dims.capacity = m_ws.expert_capacity();
    dims.experts = m_s.experts;
    dims.swiglu = m_s.mlp == mlp_kind::swiglu;
    cuda::experts(m_t, m_cublas, m_stream, m_ws.moe(m_ws.ptr(tensor::mlp_in), m_ws.ptr(tensor::h), m_ws.ptr(tensor::y)),
                  dims);
  }

  cuda_workspace& m_ws;
  const block_shape& m_s;
  dtype m_t;
  cudaStream_t m_stream;
  cublasHandle_t m_cublas;
  boundary_events* m_marks;
};

class cuda_backend final : public backend {
 public:
  explicit cuda_backend(int device) : m_ctx(std::make_shared<device_context>(device)) {
    m_ctx->make_current();
    MODSIM_CUDA_CHECK(cudaEventCreate(&m_start));
    MODSIM_CUDA_CHECK(cudaEventCreate(&m_stop));
    int l2 = 0;
    MODSIM_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, m_ctx->device));
    m_flush_bytes = 2 * static_cast<std::size_t>(std::max(l2, 1 << 20));
    MODSIM_CUDA_CHECK(cudaMalloc(&m_flush, m_flush_bytes));
    char pci[32] = {};
    MODSIM_CUDA_CHECK(cudaDeviceGetPCIBusId(pci, sizeof pci, m_ctx->device));
    m_nvml = std::make_unique<nvml_clocks>(pci);
  }
  ~cuda_backend() override {
    cudaSetDevice(m_ctx->device);
    if (m_flush != nullptr) cudaFree(m_flush);
    if (m_start != nullptr) cudaEventDestroy(m_start);
    if (m_stop != nullptr) cudaEventDestroy(m_stop);
    if (m_lt != nullptr) cublasLtDestroy(m_lt);
  }
  cuda_backend(const cuda_backend&) = delete;
  cuda_backend& operator=(const cuda_backend&) = delete;

  backend_kind kind() const override { return backend_kind::cuda; }

  std::string device() const override { return m_ctx->description(); }

  std::unique_ptr<workspace> make_workspace(const block_shape& shape, dtype type,
                                            const workspace_options& options) override {
    shape.validate();
    if (type != dtype::fp32 && type != dtype::bf16)
      throw input_error("", "dtype", "the cuda backend supports fp32 and bf16, got " + std::string(to_string(type)));
    if (shape.variant != moe_variant::none && shape.experts > max_experts)
      throw input_error("", "block_shape.experts",
                        "the cuda backend supports at most " + std::to_string(max_experts) + " experts, got " +
                            std::to_string(shape.experts));
    if (options.training && shape.variant != moe_variant::none)
      throw input_error("", "variant",
                        "training runs dense and MoD layers (block_dense_train, block_mod_train), not MoDE variants");
    auto ws = std::make_unique<cuda_workspace>(m_ctx, shape, type, options);
    // One pass of the whole layer, so every intermediate holds real data.
    executor(*ws).execute(shape.variant == moe_variant::none ? op::block_mod : op::layer_mode);
    if (options.training) add_training(*ws, options);
    m_ctx->synchronize();
    return ws;
  }

  void run(op o, workspace& ws) override {
    cuda_workspace& cws = own(ws);
    m_ctx->make_current();
    executor(cws).execute(o);
  }

  void synchronize() override {
    m_ctx->make_current();
    m_ctx->synchronize();
    MODSIM_CUDA_CHECK(cudaGetLastError());
  }

  // CUDA events on the backend's stream around the op's kernels.
  double timed_run(op o, workspace& ws) override {
    synchronize();
    MODSIM_CUDA_CHECK(cudaEventRecord(m_start, m_ctx->stream));
    run(o, ws);
    MODSIM_CUDA_CHECK(cudaEventRecord(m_stop, m_ctx->stream));
    MODSIM_CUDA_CHECK(cudaEventSynchronize(m_stop));
    MODSIM_CUDA_CHECK(cudaGetLastError());
    float ms = 0;
    MODSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, m_start, m_stop));
    return static_cast<double>(ms) * 1e-3;
  }

  // One event on the stream before the block and one after each op; one synchronize at the end.
  double timed_block_run(op o, workspace& ws, std::vector<op_time>& ops) override {
    if (!is_block(o))
      throw input_error("", "op", std::string(to_string(o)) + " is not a block (block_dense, block_mod, layer_mode)");
    cuda_workspace& cws = own(ws);
    if (cws.fused())
      throw input_error("", "attention",
                        "a block with fused attention has no attn_scores/attn_softmax/attn_values boundaries to "
                        "time in_block; time it isolated");
    synchronize();
    m_marks.start(m_ctx->stream);
    executor(cws, &m_marks).execute(o);
    synchronize();
    return m_marks.read(ops);
  }

  // Writes a buffer twice the L2 size, so the next repeat reads its operands from HBM.
  void flush_cache() override {
    m_ctx->make_current();
    MODSIM_CUDA_CHECK(cudaMemsetAsync(m_flush, ++m_flush_value & 0xff, m_flush_bytes, m_ctx->stream));
    m_ctx->synchronize();
  }

  clock_state clocks() override {
    clock_state c;
    if (!m_nvml || !m_nvml->available()) return c;
    c.known = true;
    c.sm_clock_mhz = m_nvml->sm_clock_mhz();
    c.throttled = m_nvml->throttled();
    return c;
  }

  // cuBLASLt's heuristic for each GEMM as gemm() would call it (tightly packed operands).
  std::vector<gemm_choice> library_gemm_choices(const std::vector<gemm_query>& queries) override {
    std::vector<gemm_choice> out(queries.size());
    m_ctx->make_current();
    if (m_lt == nullptr) {
      if (const cublasStatus_t st = cublasLtCreate(&m_lt); st != CUBLAS_STATUS_SUCCESS) {
        m_lt = nullptr;
        for (auto& c : out) c.note = std::string("cublasLtCreate: ") + cublasGetStatusString(st);
        return out;
      }
    }
    for (std::size_t i = 0; i < queries.size(); ++i) {
      const gemm_query& q = queries[i];
      if (q.type != dtype::fp32 && q.type != dtype::bf16) {
        out[i].note = "the cuda backend runs fp32 and bf16 GEMMs only";
        continue;
      }
      gemm_args g;
      g.ab = g.c = q.type;
      g.m = q.m;
      g.n = q.n;
      g.k = q.k;
      g.lda = q.k;
      g.b_transposed = q.b_transposed;
      g.ldb = q.b_transposed ? q.k : q.n;
      g.ldc = q.n;
      out[i] = lt_heuristic(m_lt, g, q.batch);
    }
    return out;
  }

 private:
  // The workspace's training state, as the CPU backend's: a dense and a routed layer's weights
  // drawn from the seed (kernels/train.hpp's random_params), the workspace's current x as the
  // input, dL/dout ~ N(0, 1) from the same random stream; one step of each (and one AdamW step
  // of the dense layer), so that a later
  // run neither allocates nor times a first call.
  void add_training(cuda_workspace& ws, const workspace_options& options) {
    const block_shape& s = ws.shape();
    auto dense = make_trainer(m_ctx, train::random_params(s, false, options.seed), ws.type());
    auto routed = make_trainer(m_ctx, train::random_params(s, true, options.seed), ws.type());
    const auto n = static_cast<std::size_t>(s.tokens() * s.d_model);
    const std::vector<float> x = ws.download(tensor::x);
    std::vector<float> dout(n);
    fill_normal(dout, options.seed, k_dout_stream, 0.0, 1.0, 0, static_cast<std::int64_t>(n));
    for (auto* t : {dense.get(), routed.get()}) {
      t->set_input(std::span<const float>(x).first(n));
      t->set_output_grad(dout);
    }
    ws.set_training(std::move(dense), std::move(routed), options.recompute);
    executor(ws).execute(op::block_dense_train);
    executor(ws).execute(op::block_mod_train);
    executor(ws).execute(op::adamw);
  }

  // The random stream dL/dout is drawn from (the CPU backend's).
  static constexpr std::uint64_t k_dout_stream = 5000;

  cuda_workspace& own(workspace& ws) const {
    auto* cws = dynamic_cast<cuda_workspace*>(&ws);
    if (cws == nullptr) throw runtime_error("cuda backend: the workspace was made by another backend");
    if (cws->context_ptr() != m_ctx)
      throw runtime_error("cuda backend: the workspace was made by another cuda backend");
    return *cws;
  }

  std::shared_ptr<device_context> m_ctx;
  boundary_events m_marks;
  cudaEvent_t m_start = nullptr;
  cudaEvent_t m_stop = nullptr;
  cublasLtHandle_t m_lt = nullptr;  // made on the first library_gemm_choices call
  void* m_flush = nullptr;
  std::size_t m_flush_bytes = 0;
  int m_flush_value = 0;
  std::unique_ptr<nvml_clocks> m_nvml;
};

}  // namespace
}  // namespace cuda

std::unique_ptr<backend> make_cuda_backend(int device) {
  const int count = cuda_device_count();
  if (count == 0) throw runtime_error("cuda backend: no CUDA device (no driver or no GPU visible)");
  if (device < 0 || device >= count)
    throw input_error(
        "", "device",
        "CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(count) + " visible)");
  return std::make_unique<cuda::cuda_backend>(device);
}

}  // namespace modsim::kernels
