#pragma once
// The row kernels of the CUDA decode step (kernels/decode.hpp) around its GEMMs and its
// attention: RMSNorm of the fp32 residual stream into the GEMMs' type, the causal predictor's
// output layer, the routing decision (predictor, forced count, forced mask) with the
// compaction of the routed tokens, gather with the router weight, the scatter of Equation 1
// and the advance of the cache lengths. Every kernel reads the step's decisions from device
// memory (decode_step_params), so that a whole step can be captured in a CUDA graph.
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace modsim::kernels::cuda {

// What a step decides, in device memory, written by the host before the step runs.
struct decode_step_params {
  std::int32_t source = 0;  // 0 predictor, 1 forced count, 2 forced mask
  std::int32_t count = 0;   // forced count: tokens routed at every routed layer
  std::int32_t commit = 0;  // 1: the step's keys and values stay (lengths grow)
  std::int32_t unused = 0;
};

// out [rows, d] (type t) = in[r] / sqrt(mean(in[r]²) + 1e-6) · gain; in [rows, d] fp32, gain [d] type t.
void decode_rms_norm(dtype t, const float* in, const void* gain, void* out, std::int64_t rows, std::int64_t d,
                     cudaStream_t stream);

// out [count] (type t) = in [count] fp32.
void decode_convert(dtype t, const float* in, void* out, std::int64_t count, cudaStream_t stream);

// logits[b] = Σ_k relu(hidden[b, k])·w2[k] + b2; hidden [batch, h] fp32, w2 [h] type t.
void decode_predictor_logits(dtype t, const float* hidden, const void* w2, float b2, float* logits, std::int64_t batch,
                             std::int64_t h, cudaStream_t stream);

// The routing of one routed layer, one thread block. A token b < batch wants the block when
// (params->source) 0: logits[b] > 0; 1: it is among the params->count tokens with the largest
// logits (ties to the lower index); 2: mask[b] != 0. The wanting tokens in increasing b are
// the routed ones; the first `limit` enter the block, the others are dropped. Writes
// decisions[b] (1 = entered), seq_of_row[j] = the j-th entering token for j < *count, and for
// the padding rows j in [*count, rows) the sequences 0, 1, ... again ((j − *count) mod batch,
// as the CPU step), *count = the number that entered (≤ limit ≤ rows ≤ batch).
void decode_route(const float* logits, const decode_step_params* params, const std::uint8_t* mask, std::int64_t batch,
                  std::int64_t limit, std::int64_t rows, std::uint8_t* decisions, std::int32_t* seq_of_row,
                  std::int32_t* count, cudaStream_t stream);

// For j < rows with b = seq_of_row[j]: routed_x[j] = x[b] (fp32), r[j] = router_w·x[b]
// (router_w [d] type t).
void decode_gather(dtype t, const float* x, const void* router_w, const std::int32_t* seq_of_row, float* routed_x,
                   float* r, std::int64_t rows, std::int64_t d, cudaStream_t stream);

// x[b] += r[j]·(y[j] − routed_x[j]) for the real rows j < min(rows, *real_rows), b = seq_of_row[j]
// (all fp32, rows of d).
void decode_scatter(const float* y, const float* routed_x, const float* r, const std::int32_t* seq_of_row,
                    const std::int32_t* real_rows, float* x, std::int64_t rows, std::int64_t d, cudaStream_t stream);

// When params->commit: lengths[b] += 1 for b = seq_of_row[j], j < min(rows, *real_rows) (real_rows
// may be null: all rows), where lengths[b] < max_context.
void decode_advance_lengths(const decode_step_params* params, const std::int32_t* seq_of_row,
                            const std::int32_t* real_rows, std::int64_t rows, std::int32_t* lengths,
                            std::int64_t max_context, cudaStream_t stream);

}  // namespace modsim::kernels::cuda
