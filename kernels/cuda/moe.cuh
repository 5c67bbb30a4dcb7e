#pragma once
// experts (MoE MLP): y = h + gate·expert(u) for the tokens an expert kept, y = h for the
// others (no-op expert or dropped). Capacity-padded dispatch, the way capacity-based MoE
// layers run on GPUs: each real expert owns `capacity` rows of a [experts, capacity, d]
// buffer, filled in token order (unused rows are zero), and each projection is one
// strided-batched GEMM over the experts, so nothing waits on the host for the per-expert
// counts. The GEMMs thus always process experts·capacity rows (dropless: experts·m).
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

struct moe_buffers {
  const void* u = nullptr;                // [m, d] mlp_in
  const void* h = nullptr;                // [m, d]
  void* y = nullptr;                      // [m, d]
  const std::int32_t* index = nullptr;    // [m]
  const float* gate = nullptr;            // [m]
  const void* w_up = nullptr;             // [E, d, d_ff]
  const void* w_gate = nullptr;           // [E, d, d_ff], swiglu only
  const void* w_down = nullptr;           // [E, d_ff, d]
  std::int32_t* slot_of_token = nullptr;  // [m]
  std::int32_t* token_of_slot = nullptr;  // [E·capacity]
  void* expert_in = nullptr;              // [E·capacity, d]
  void* expert_hidden = nullptr;          // [E·capacity, d_ff]
  void* expert_gate_hidden = nullptr;     // [E·capacity, d_ff], swiglu only
  void* expert_out = nullptr;             // [E·capacity, d]
};

struct moe_dims {
  std::int64_t m = 0, d = 0, d_ff = 0, capacity = 0;
  int experts = 0;
  bool swiglu = false;
};

void experts(dtype t, cublasHandle_t handle, cudaStream_t stream, const moe_buffers& b, const moe_dims& dims);

}  // namespace modsim::kernels::cuda
