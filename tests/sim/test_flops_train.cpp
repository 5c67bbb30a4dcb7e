// Tests of the training step's FLOP/byte model (sim/model/flops_formulas.cpp's train part, the train table of
// sim/model/flops.hpp). Every expected value is written out by hand from the GEMMs a backward pass
// runs (2·m·n·k per matmul) and the bytes AdamW moves; none is taken from the code's output.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/model/flops.hpp"

#include "small_model.hpp"

namespace modsim::sim {
namespace {

// d=64, 2 layers, H=4 (dh=16, dq=dkv=64), F=256, V=100, gelu.
using test::small_dense;

// The same with layer 1 routed at capacity 0.25 (k = 4 of S = 16).
model_spec small_mod() {
  model_spec m = small_dense();
  routing_spec r;
  r.capacity = 0.25;
  r.sched.kind = schedule_kind::every_other;
  r.inference = inference_routing::router;
  m.routing = r;
  return m;
}

workload train_load(recompute_mode r = recompute_mode::none) {
  workload w;
  w.batch = 2;
  w.seq_len = 16;
  w.run = run_mode::train;
  w.type = dtype::fp32;
  w.recompute = r;
  return w;
}

std::int64_t matmul_of(const std::vector<op_cost>& ops) {
  std::int64_t s = 0;
  for (const op_cost& c : ops) s += c.matmul_flops;
  return s;
}

const op_cost& op_in(const std::vector<op_cost>& ops, modsim::op o) {
  for (const op_cost& c : ops)
    if (c.op == o) return c;
  throw std::runtime_error("op not in layer");
}

TEST(FlopsBackward, DenseLayerBackwardIsEachGemmsDgradAndWgrad) {
  const flops_report r = evaluate_flops(small_dense(), train_load());
  const layer_flops& l = r.layers.at(0);
  // T = B·S = 32 rows, d = 64, D = dq + 2dkv = 192, F = 256, n = L = 16.
  // qkv: dgrad (32×192)(192×64) = 2·32·64·192, wgrad (64×32)(32×192) = 2·64·192·32.
  const std::int64_t qkv = 2 * 32 * 64 * 192 + 2 * 64 * 192 * 32;
  // attention per sequence (B = 2): dQ = dS·K and dK = dSᵀ·Q (scores), dV = Pᵀ·dO and
  // dP = dO·Vᵀ (values), each (16×16)(16×64) over all heads = 2·16·16·64.
  const std::int64_t scores = 2 * (2 * 16 * 16 * 64 + 2 * 16 * 16 * 64);
  const std::int64_t values = scores;
  const std::int64_t out = 2 * 32 * 64 * 64 + 2 * 64 * 64 * 32;     // dgrad + wgrad of O (64→64)
  const std::int64_t up = 2 * 32 * 64 * 256 + 2 * 64 * 256 * 32;    // d → F
  const std::int64_t down = 2 * 32 * 256 * 64 + 2 * 256 * 64 * 32;  // F → d
  EXPECT_EQ(op_in(l.backward, modsim::op::qkv_proj).matmul_flops, qkv);
  EXPECT_EQ(op_in(l.backward, modsim::op::attn_scores).matmul_flops, scores);
  EXPECT_EQ(op_in(l.backward, modsim::op::attn_values).matmul_flops, values);
  EXPECT_EQ(op_in(l.backward, modsim::op::out_proj).matmul_flops, out);
  EXPECT_EQ(op_in(l.backward, modsim::op::mlp_up).matmul_flops, up);
  EXPECT_EQ(op_in(l.backward, modsim::op::mlp_down).matmul_flops, down);
  EXPECT_EQ(matmul_of(l.backward), qkv + scores + values + out + up + down);
  // The layer's train total: forward (half of the above) + backward.
  EXPECT_EQ(l.matmul_flops, (qkv + scores + values + out + up + down) / 2 * 3);
  // RMSNorm backward bytes: x, dy, the residual gradient read, dx written (4·T·d) + g, dg (2·d), 4 bytes.
  EXPECT_EQ(op_in(l.backward, modsim::op::attn_norm).bytes, 4 * (4 * 32 * 64 + 2 * 64));
  // GELU backward: pre-activation and dy read, dh written: 3·T·F·4.
  EXPECT_EQ(op_in(l.backward, modsim::op::mlp_act).bytes, 3 * 32 * 256 * 4);
  // Softmax backward: P and dP read, dS written over B·H·n·L = 2·4·16·16 scores.
  EXPECT_EQ(op_in(l.backward, modsim::op::attn_softmax).bytes, 3 * 2 * 4 * 16 * 16 * 4);
}

TEST(FlopsBackward, ModLayerBackwardRunsOnTheRoutedTokensAndTheRouterOnAll) {
  const flops_report r = evaluate_flops(small_mod(), train_load());
  const layer_flops& l = r.layers.at(1);
  ASSERT_TRUE(l.routed);
  // k = 4 routed of 16 per sequence: T = 2·4 = 8 rows; n = L = 4.
  const std::int64_t router = 2 * 32 * 64 + 2 * 64 * 32;  // dx += dr·wᵀ, dw = Xᵀ·dr over all B·S = 32 tokens
  const std::int64_t qkv = 2 * 8 * 64 * 192 + 2 * 64 * 192 * 8;
  const std::int64_t attn = 2 * 2 * (2 * 4 * 4 * 64 + 2 * 4 * 4 * 64);  // scores and values, 2 sequences
  const std::int64_t out = 2 * 8 * 64 * 64 * 2;
  const std::int64_t up = 2 * 8 * 64 * 256 * 2;
  const std::int64_t down = 2 * 8 * 256 * 64 * 2;
  EXPECT_EQ(op_in(l.backward, modsim::op::router).matmul_flops, router);
  EXPECT_EQ(matmul_of(l.backward), router + qkv + attn + out + up + down);
  // No gradient through top-k.
  const op_cost& topk = op_in(l.backward, modsim::op::topk);
  EXPECT_EQ(topk.matmul_flops + topk.other_flops + topk.bytes, 0);
  // Scatter backward: dΔ = r·dy and dr = ⟨dy, Δ⟩ on the 8 routed rows only (3·8·64), the
  // skipped tokens' gradient passed through in place.
  EXPECT_EQ(op_in(l.backward, modsim::op::scatter).other_flops, 3 * 8 * 64);
  EXPECT_EQ(op_in(l.backward, modsim::op::scatter).bytes, 4 * 8 + 4 * (3 * 8 * 64 + 2 * 8));
}

TEST(FlopsBackward, RecomputeNoneKeepsTheMatmulsAtThreeTimesTheForward) {
  for (const model_spec& m : {small_dense(), small_mod()}) {
    const flops_report r = evaluate_flops(m, train_load());
    ASSERT_TRUE(r.train);
    EXPECT_EQ(r.totals.matmul_flops, 3 * r.train->forward.matmul_flops);
    EXPECT_EQ(r.train->backward.matmul_flops, 2 * r.train->forward.matmul_flops);
    EXPECT_EQ(r.train->recompute_cost.matmul_flops, 0);
    // The forward part is the forward pass.
    workload f = train_load();
    f.run = run_mode::forward;
    EXPECT_EQ(r.train->forward.matmul_flops, evaluate_flops(m, f).totals.matmul_flops);
  }
}

TEST(FlopsBackward, FullRecomputationAddsExactlyTheLayersForward) {
  for (const model_spec& m : {small_dense(), small_mod()}) {
    const flops_report none = evaluate_flops(m, train_load(recompute_mode::none));
    const flops_report full = evaluate_flops(m, train_load(recompute_mode::full));
    workload f = train_load();
    f.run = run_mode::forward;
    const flops_report fwd = evaluate_flops(m, f);
    std::int64_t layers_forward = 0;
    for (const layer_flops& l : fwd.layers) layers_forward += l.matmul_flops;
    EXPECT_EQ(full.totals.matmul_flops - none.totals.matmul_flops, layers_forward);
    EXPECT_EQ(full.train->recompute_cost.matmul_flops, layers_forward);
    // Model FLOPs (MFU's numerator) do not count recomputation.
    EXPECT_EQ(full.train->model_matmul_flops, none.totals.matmul_flops);
  }
}

TEST(FlopsBackward, FusedAttentionBackwardIsTwoAndAHalfTimesItsForwardMatmuls) {
  // One layer's attention matmuls, per sequence n = L = 16, dq = 64, B = 2: forward scores and
  // values 2·(2·16·16·64) each.
  const std::int64_t forward = 2 * (2 * 2 * 16 * 16 * 64);
  const flops_report fused = evaluate_flops(small_dense(), train_load(), attention_impl::fused);
  const flops_report unfused = evaluate_flops(small_dense(), train_load(), attention_impl::unfused);
  auto attention_backward = [](const layer_flops& l) {
    std::int64_t s = 0;
    for (std::size_t i = 0; i < l.ops.size(); ++i)
      if (l.ops[i].op == modsim::op::attn_scores || l.ops[i].op == modsim::op::attn_values)
        s += l.backward[i].matmul_flops + l.recompute[i].matmul_flops;
    return s;
  };
  // Fused: the scores recomputed + dV, dP, dQ, dK = 5 matmuls of 2·2·16·16·64 = 2.5 × forward.
  EXPECT_EQ(attention_backward(fused.layers.at(0)), 5 * (2 * 2 * 16 * 16 * 64));
  EXPECT_EQ(2 * attention_backward(fused.layers.at(0)), 5 * forward);
  // Unfused: dV, dP, dQ, dK reading the stored probabilities = 4 matmuls = 2 × forward.
  EXPECT_EQ(attention_backward(unfused.layers.at(0)), 4 * (2 * 2 * 16 * 16 * 64));
  // Selective recomputation of unfused attention runs the scores (and softmax) again, in each
  // of the 2 layers.
  const flops_report sel = evaluate_flops(small_dense(), train_load(recompute_mode::selective));
  EXPECT_EQ(sel.totals.matmul_flops - unfused.totals.matmul_flops, 2 * (2 * 2 * 16 * 16 * 64));
}

TEST(FlopsBackward, AdamwMovesTwentyEightBytesPerParameter) {
  // fp32: read w, g, m, v (4·4) and write w, m, v (3·4) = 28.
  EXPECT_EQ(adamw_bytes_per_param(4), 4 * 4 + 3 * 4);
  // bf16: read the fp32 master, m, v (12) and the 2-byte gradient, write master, m, v (12) and
  // the 2-byte weights = 28.
  EXPECT_EQ(adamw_bytes_per_param(2), 12 + 2 + 12 + 2);
  const optimizer_cost c = adamw_cost(1000, 2);
  EXPECT_EQ(c.bytes, 28 * 1000);
  EXPECT_EQ(c.other_flops, k_adamw_flops_per_param * 1000);
  // The optimizer is in the step's totals, beside the layers and the LM head.
  const flops_report r = evaluate_flops(small_dense(), train_load());
  std::int64_t bytes = r.lm_head.bytes;
  for (const layer_flops& l : r.layers) bytes += l.bytes;
  EXPECT_EQ(r.totals.bytes - bytes, 28 * parameter_count(small_dense()));
}

TEST(FlopsBackward, TheLmHeadsBackwardBeginsWithTheLossOverEveryLogit) {
  const flops_report r = evaluate_flops(small_dense(), train_load());
  // B·S = 32 tokens, d = 64, V = 100, fp32 (e = w = 4).
  // Matmul: dgrad (32×100)(100×64) and wgrad (64×32)(32×100) = 2 · 2·32·64·100.
  EXPECT_EQ(r.lm_head_backward.matmul_flops, 2 * (2 * 32 * 64 * 100));
  // Other: the final norm's backward 8·32·64; the loss 7 per logit (max, subtract, exp, sum;
  // subtract the log-sum-exp, exp, scale) over 32·100 logits and 2 per token (log, the target's
  // -1).
  EXPECT_EQ(r.lm_head_backward.other_flops, 8 * 32 * 64 + 7 * 32 * 100 + 2 * 32);
  // Bytes: the GEMMs read x, W and dlogits twice (2·(32·64 + 64·100 + 32·100) · 4); the norm
  // reads x, dy, the residual's gradient, writes dx (4·32·64 · 4) and reads g, writes dg
  // (2·64 · 4); the loss reads the logits and writes their gradient in place (2·32·100 · 4).
  EXPECT_EQ(r.lm_head_backward.bytes,
            2 * (32 * 64 + 64 * 100 + 32 * 100) * 4 + (4 * 32 * 64 + 2 * 64) * 4 + 2 * 32 * 100 * 4);
  // The forward is inference's: no loss.
  EXPECT_EQ(r.lm_head_forward.other_flops, 4 * 32 * 64);
}

}  // namespace
}  // namespace modsim::sim
