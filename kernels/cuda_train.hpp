#pragma once
// One layer's training step on a CUDA device (kernels/cuda/train.cu): the semantics of
// kernels/train.hpp (dense, MoD and MoDE layers: forward keeping what the backward reads, backward
// with every weight's, the router's and the input's gradient, AdamW, the causal predictor's
// BCE), so that its results match cpu_trainer's. No CUDA type appears here.
//
// Precision: `type` fp32 keeps everything in fp32 (cuBLAS without TF32). bf16 keeps the
// activations and their gradients in bf16 and gives the GEMMs bf16 weights (a copy of an fp32
// master, refreshed by each AdamW step); GEMMs, norms, softmaxes and reductions accumulate in
// fp32; weight gradients, AdamW's moments, router values and the predictor are fp32.
//
// Memory: every buffer of the step is allocated once, at construction, whatever the
// recomputation mode; the mode changes the work the backward does (selective recomputes the
// attention probabilities, full the whole forward), as the CPU trainer does. MoDE variants
// (staged, integrated; at most 256 experts) run their MoE MLP with the expert router's choices
// read back to the host once per forward, to group the kept tokens by expert.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/train.hpp"

namespace modsim::kernels::train {

struct cuda_train_options {
  dtype type = dtype::bf16;  // fp32 or bf16
  int device = 0;
};

class cuda_trainer {
 public:
  // Uploads `params` (fp32) to `options.device`. Throws modsim::error (bad_input) for a
  // tensor of the wrong size, more than 256 experts or another dtype before touching any device,
  // (runtime) naming the failed CUDA or cuBLAS call.
  cuda_trainer(const layer_params& params, const cuda_train_options& options = {});
  ~cuda_trainer();
  cuda_trainer(const cuda_trainer&) = delete;
  cuda_trainer& operator=(const cuda_trainer&) = delete;

  // x [T, d] (the layer's input) and dL/dout [T, d], host fp32, converted to the trainer's type.
  void set_input(std::span<const float> x);
  void set_output_grad(std::span<const float> dout);

  // The layer on the input; keeps what backward reads under `mode`. Asynchronous on the
  // trainer's stream (synchronize() waits), as are backward and adamw_step.
  void forward(recompute mode = recompute::none);
  // dL/dx and every parameter's gradient from dL/dout (throws bad_input before a forward).
  void backward();
  // One AdamW step over every parameter (kernels/train.hpp's update, fp32 moments).
  void adamw_step(const adamw_options& options);
  void synchronize();

  // Host fp32 copies (synchronizing): the forward's output, dL/dx, the gradients (sized
  // and shaped like the parameters), the fp32 master parameters, the routed positions
  // ([B, k], routed layers only).
  void read_output(std::span<float> out) const;
  void read_input_grad(std::span<float> dx) const;
  void read_grads(layer_grads& grads) const;
  void read_params(layer_params& params) const;
  std::vector<std::int32_t> read_routed_index() const;

  // cpu_trainer::predictor_backward's loss and gradients, on the device in fp32 (x and
  // routed_index are host data). Throws bad_input as the CPU's does.
  double predictor_backward(const predictor_params& params, std::span<const float> x,
                            std::span<const std::int32_t> routed_index, predictor_grads& grads);

  // Device memory this trainer holds, in bytes.
  std::int64_t device_bytes() const;

  // The implementation (kernels/cuda/train.cu); the CUDA backend makes trainers on its own
  // stream through it (kernels/cuda/train.cuh).
  struct impl;
  explicit cuda_trainer(std::unique_ptr<impl> implementation);

 private:
  std::unique_ptr<impl> m_impl;
};

}  // namespace modsim::kernels::train
