#pragma once
// Shared fixtures of the discrete-event simulator tests: a small MoD model and a made-up
// device whose op times are easy to compute by hand.
#include "sim/des/execution.hpp"
#include "sim/model/flops.hpp"
#include "sim/model/spec.hpp"

namespace modsim::sim::des::test {

// d=64, 2 layers, H=4 (d_kv = 64), F=256, V=100; layer 1 routed at `capacity`.
inline model_spec small_mod(double capacity = 0.25, int layers = 2) {
  model_spec m;
  m.name = "small-mod";
  m.d_model = 64;
  m.n_layers = layers;
  m.n_heads = 4;
  m.n_kv_heads = 4;
  m.d_head = 16;
  m.d_ff = 256;
  m.vocab_size = 100;
  routing_spec r;
  r.capacity = capacity;
  r.sched.kind = schedule_kind::every_other;
  r.inference = inference_routing::predictor;
  r.predictor_hidden = 16;
  m.routing = r;
  return m;
}

// A workload of `batch` sequences of `seq` tokens.
inline workload workload_of(std::int64_t batch, std::int64_t seq, run_mode mode = run_mode::forward,
                            dtype type = dtype::bf16) {
  workload w;
  w.batch = batch;
  w.seq_len = seq;
  w.run = mode;
  w.type = type;
  return w;
}

// A simple made-up device: 1 TFLOP/s, 1 TB/s, additive; launch 1 us, host 2 us per kernel.
inline device_model toy_device() {
  device_model d;
  d.time_of = [](const op_cost& c, const op_shape&) {
    op_time t;
    t.op = c.op;
    t.time_s = static_cast<double>(c.matmul_flops + c.other_flops) / 1e12 + static_cast<double>(c.bytes) / 1e12;
    t.matmul_flops = c.matmul_flops;
    t.other_flops = c.other_flops;
    t.bytes = c.bytes;
    t.kernels = 1;
    return t;
  };
  d.launch_s = 1e-6;
  d.host_enqueue_s = 2e-6;
  d.d2h_sync_s = 5e-6;
  return d;
}

}  // namespace modsim::sim::des::test
