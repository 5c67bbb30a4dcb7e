#pragma once
// The CUDA backend of kernels/backend.hpp (kernels/cuda/): cuBLAS GEMMs and own kernels for
// routing, top-k, norms, softmax, activations, scatter and the MoE, on one stream per backend.
// fp32 and bf16 (fp32 accumulation; router logits, softmax and norms in fp32). No CUDA type
// appears here, so code without nvcc may include it.
#include <memory>

#include "kernels/backend.hpp"
#include "kernels/decode.hpp"

namespace modsim::kernels {

// CUDA devices visible to this process; 0 when there is no driver or no GPU. Never throws.
int cuda_device_count();

// The CUDA backend on `device`. Workspaces it makes are filled from the same generator as the
// CPU backend's (same seed → same weights and inputs), then run the whole layer once.
// Throws modsim::error (runtime) naming the failed CUDA/cuBLAS call when the device cannot
// be used, (bad_input) for a device index out of range.
std::unique_ptr<backend> make_cuda_backend(int device = 0);

// The CUDA decode step (kernels/decode.hpp) on `device`: cuBLAS projections, split-KV
// attention over the paged caches, the predictor and routing on the device. `type` is fp32 or
// bf16 (weights and caches in that type, fp32 accumulation). graph = true captures a whole
// step in a CUDA graph and replays it; only decode_routing::pad can be captured (sync reads
// the routed count back to the host), so graph with sync is bad_input.
struct cuda_decode_options {
  dtype type = dtype::bf16;
  bool graph = false;
  int device = 0;
};
std::unique_ptr<decode_state> make_cuda_decode(const decode_shape& shape, const decode_weights& weights,
                                               const cuda_decode_options& options = {});

}  // namespace modsim::kernels
