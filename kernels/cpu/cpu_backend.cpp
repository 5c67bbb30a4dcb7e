// The CPU backend: fp32, OpenBLAS for GEMMs (its own threads), a fork-join pool for the rest.
#include <cblas.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "kernels/backend.hpp"
#include "kernels/block_timeline.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/init.hpp"
#include "kernels/train.hpp"
#include "core/error.hpp"

namespace modsim::kernels {

namespace cpu {
namespace {

// Which MLP a block runs.
enum class mlp_path { dense, moe };

// The boundaries of a timed block run on the steady clock (backend::timed_block_run). Every
// op has finished when it returns (the pool joins, BLAS returns), so a reading right after it
// is the op's end.
class boundary_clock {
 public:
  void start() {
    m_timeline.clear();
    m_start = std::chrono::steady_clock::now();
  }
  void after(op o) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - m_start);
    m_timeline.mark(o, ns.count());
  }
  const block_timeline& timeline() const { return m_timeline; }

 private:
  block_timeline m_timeline;
  std::chrono::steady_clock::time_point m_start;
};

// Marks the boundary after op `o` when the run is timed (`clock` not null).
void after(boundary_clock* clock, op o) {
  if (clock != nullptr) clock->after(o);
}

// The block on io (pre-norm attention + MLP, each with its residual): y = io.in + Δ.
// Attention runs head by head (scores → softmax → values) so each score matrix is still in
// cache when the softmax and the values read it. `clock` (may be null) marks each op's end.
void run_block(context& c, const block_io& io, mlp_path path, boundary_clock* clock) {
  attn_norm(c, io);
  after(clock, op::attn_norm);
  qkv_proj(c, io);
  after(clock, op::qkv_proj);
  const std::int64_t pairs = c.shape().batch * c.shape().n_heads;
  for (std::int64_t bh = 0; bh < pairs; ++bh) {
    attn_scores(c, io, bh, bh + 1);
    after(clock, op::attn_scores);
    attn_softmax(c, io, bh, bh + 1);
    after(clock, op::attn_softmax);
    attn_values(c, io, bh, bh + 1);
    after(clock, op::attn_values);
  }
  out_proj(c, io);
  after(clock, op::out_proj);
  mlp_norm(c, io);
  after(clock, op::mlp_norm);
  if (path == mlp_path::dense) {
    mlp_up(c, io);
    after(clock, op::mlp_up);
    if (c.shape().mlp == mlp_kind::swiglu) {
      mlp_gate(c, io);
      after(clock, op::mlp_gate);
    }
    mlp_act(c, io);
    after(clock, op::mlp_act);
    mlp_down(c, io);
    after(clock, op::mlp_down);
  } else {
    expert_router(c, io);
    after(clock, op::expert_router);
    experts(c, io);
    after(clock, op::experts);
  }
}

block_io dense_io(context& c) { return {c.ws.data(tensor::x), c.shape().seq_len}; }
block_io routed_io(context& c) { return {c.ws.data(tensor::routed_x), c.shape().routed_tokens()}; }

// The token set single block ops work on: all tokens for integrated, the routed ones else.
block_io single_op_io(context& c) { return c.shape().variant == moe_variant::integrated ? dense_io(c) : routed_io(c); }

void routed_layer(context& c, mlp_path path, boundary_clock* clock) {
  router(c);
  after(clock, op::router);
  topk(c);
  after(clock, op::topk);
  gather(c);
  after(clock, op::gather);
  run_block(c, routed_io(c), path, clock);
  scatter(c);
  after(clock, op::scatter);
}

// One layer's forward + backward (kernels/train.hpp) on the workspace's training state:
// block_dense_train the dense layer, block_mod_train the routed one, on the current input x.
void train_step(op o, context& c, train::cpu_trainer* trainer) {
  if (!c.ws.m_training || trainer == nullptr)
    throw input_error("", "op",
                      std::string(to_string(o)) + " needs a workspace made for training (workspace_options::training)");
  auto& t = *c.ws.m_training;
  auto& layer = o == op::block_mod_train ? t.routed : t.dense;
  const std::span<const float> x(c.ws.data(tensor::x),
                                 static_cast<std::size_t>(c.shape().tokens() * c.shape().d_model));
  trainer->forward(layer.params, x, t.out, layer.saved, t.mode);
  trainer->backward(layer.params, layer.saved, t.dout, t.dx, layer.grads);
}

// One AdamW step (kernels/train.hpp, default options) over the workspace's dense layer, with
// the gradients of its last backward.
void adamw_step(context& c, train::cpu_trainer* trainer) {
  if (!c.ws.m_training || trainer == nullptr)
    throw input_error("", "op", "adamw needs a workspace made for training (workspace_options::training)");
  auto& layer = c.ws.m_training->dense;
  trainer->adamw_step(layer.params, layer.grads, layer.adam, {});
}

// Runs op `o`; for a block op, `clock` (may be null) marks the end of each op of the block.
// Training ops run on `trainer` (may be null when the workspace has no training state).
void execute(op o, context& c, boundary_clock* clock = nullptr, train::cpu_trainer* trainer = nullptr) {
  const auto& s = c.shape();
  const std::int64_t pairs = s.batch * s.n_heads;
  switch (o) {
    case op::router:
      router(c);
      return;
    case op::topk:
      topk(c);
      return;
    case op::gather:
      gather(c);
      return;
    case op::scatter:
      scatter(c);
      return;
    case op::attn_norm:
      attn_norm(c, single_op_io(c));
      return;
    case op::qkv_proj:
      qkv_proj(c, single_op_io(c));
      return;
    case op::attn_scores:
      attn_scores(c, single_op_io(c), 0, pairs);
      return;
    case op::attn_softmax:
      attn_softmax(c, single_op_io(c), 0, pairs);
      return;
    case op::attn_values:
      attn_values(c, single_op_io(c), 0, pairs);
      return;
    case op::out_proj:
      out_proj(c, single_op_io(c));
      return;
    case op::mlp_norm:
      mlp_norm(c, single_op_io(c));
      return;
    case op::mlp_up:
      mlp_up(c, single_op_io(c));
      return;
    case op::mlp_gate:
      mlp_gate(c, single_op_io(c));
      return;
    case op::mlp_act:
      mlp_act(c, single_op_io(c));
      return;
    case op::mlp_down:
      mlp_down(c, single_op_io(c));
      return;
    case op::expert_router:
      expert_router(c, single_op_io(c));
      return;
    case op::experts:
      experts(c, single_op_io(c));
      return;
    case op::block_dense:
      run_block(c, dense_io(c), mlp_path::dense, clock);
      return;
    case op::block_mod:
      routed_layer(c, mlp_path::dense, clock);
      return;
    case op::layer_mode:
      if (s.variant == moe_variant::none)
        throw input_error("", "op", "layer_mode needs a mode variant (staged or integrated)");
      if (s.variant == moe_variant::integrated)
        run_block(c, dense_io(c), mlp_path::moe, clock);
      else
        routed_layer(c, mlp_path::moe, clock);
      return;
    case op::predictor:
    case op::lm_head:
      throw input_error("", "op", std::string(to_string(o)) + " is counted by the cost model only; no kernel runs it");
    case op::decode_dense:
    case op::decode_mod:
    case op::decode_step:
      throw input_error("", "op", std::string(to_string(o)) + " is a decode step: kernels/decode.hpp runs it");
    case op::block_dense_train:
    case op::block_mod_train:
      train_step(o, c, trainer);
      return;
    case op::adamw:
      adamw_step(c, trainer);
      return;
  }
  throw runtime_error("cpu backend: unknown op " + std::to_string(static_cast<int>(o)));
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

class cpu_backend final : public backend {
 public:
  explicit cpu_backend(int threads) : m_threads(threads), m_pool(threads) { openblas_set_num_threads(threads); }

  backend_kind kind() const override { return backend_kind::cpu; }

  std::string device() const override {
    return cpu_model_name() + ", " + std::to_string(m_threads) + " threads, " + openblas_get_config();
  }

  std::unique_ptr<workspace> make_workspace(const block_shape& shape, dtype type,
                                            const workspace_options& options) override {
    shape.validate();
    if (type != dtype::fp32)
      throw input_error("", "dtype", "the cpu backend supports fp32 only, got " + std::string(to_string(type)));
    if (options.fused_attention)
      throw input_error(
          "", "attention",
          "the cpu backend runs attention unfused (scores, softmax, values); fused attention is CUDA only");
    if (openblas_get_num_threads() != m_threads) openblas_set_num_threads(m_threads);
    auto ws = std::make_unique<cpu_workspace>(shape, options, m_pool);
    // One pass of the whole layer, so every intermediate holds real data.
    context c{*ws, m_pool};
    execute(shape.variant == moe_variant::none ? op::block_mod : op::layer_mode, c);
    if (options.training) add_training(*ws, options);
    return ws;
  }

  void run(op o, workspace& ws) override { run_marked(o, ws, nullptr); }

  void synchronize() override {}

  double timed_block_run(op o, workspace& ws, std::vector<op_time>& ops) override {
    if (!is_block(o))
      throw input_error("", "op", std::string(to_string(o)) + " is not a block (block_dense, block_mod, layer_mode)");
    run_marked(o, ws, &m_clock);
    return m_clock.timeline().fold(ops);
  }

 private:
  // The workspace's training state: a dense and a routed layer's weights (drawn from the
  // seed), dL/dout ~ N(0, 1); one training step of each and one AdamW step of the dense layer, so that every buffer has
  // its size and no later run allocates.
  void add_training(cpu_workspace& ws, const workspace_options& options) {
    const block_shape& s = ws.shape();
    if (s.variant != moe_variant::none)
      throw input_error("", "variant",
                        "training runs dense and MoD layers (block_dense_train, block_mod_train), not MoDE variants");
    if (!m_trainer) m_trainer = std::make_unique<train::cpu_trainer>(m_threads);
    auto t = std::make_unique<cpu_workspace::training>();
    t->mode = options.recompute;
    t->dense.params = train::random_params(s, false, options.seed);
    t->routed.params = train::random_params(s, true, options.seed);
    t->dense.grads = train::zero_params(s, false);
    t->routed.grads = train::zero_params(s, true);
    const auto n = static_cast<std::size_t>(s.tokens() * s.d_model);
    t->out.assign(n, 0.0f);
    t->dx.assign(n, 0.0f);
    t->dout.assign(n, 0.0f);
    fill_normal(t->dout, options.seed, k_dout_stream, 0.0, 1.0, 0, static_cast<std::int64_t>(n));
    ws.m_training = std::move(t);
    context c{ws, m_pool};
    execute(op::block_dense_train, c, nullptr, m_trainer.get());
    execute(op::block_mod_train, c, nullptr, m_trainer.get());
    execute(op::adamw, c, nullptr, m_trainer.get());  // sizes the moments
    if (openblas_get_num_threads() != m_threads) openblas_set_num_threads(m_threads);
  }

  // The random stream dL/dout is drawn from (kernels/init.hpp's streams are the tensors').
  static constexpr std::uint64_t k_dout_stream = 5000;

  // Runs `o`; `clock` (may be null) starts right before it and marks the end of each op.
  void run_marked(op o, workspace& ws, boundary_clock* clock) {
    auto* cws = dynamic_cast<cpu_workspace*>(&ws);
    if (cws == nullptr) throw runtime_error("cpu backend: the workspace was made by another backend");
    // OpenBLAS's thread count is process-wide; another backend may have changed it.
    if (openblas_get_num_threads() != m_threads) openblas_set_num_threads(m_threads);
    context c{*cws, m_pool};
    if (clock != nullptr) clock->start();
    execute(o, c, clock, m_trainer.get());
  }

  boundary_clock m_clock;
  int m_threads;
  thread_pool m_pool;
  std::unique_ptr<train::cpu_trainer> m_trainer;  // made with the first training workspace
};

}  // namespace
}  // namespace cpu

std::unique_ptr<backend> make_cpu_backend(int threads) {
  if (threads < 0) throw input_error("", "threads", "must not be negative, got " + std::to_string(threads));
  if (threads == 0) threads = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  return std::make_unique<cpu::cpu_backend>(threads);
}

}  // namespace modsim::kernels
