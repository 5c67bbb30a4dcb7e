#include "kernels/cuda/decode_rows.cuh"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "kernels/cuda/rmsnorm.cuh"

namespace modsim::kernels::cuda {

namespace {

constexpr int row_threads = 256;
constexpr int warps_per_block = 8;
constexpr int route_threads = 256;

template <class T>
__global__ void __launch_bounds__(row_threads)
    convert_kernel(const float* __restrict__ in, T* __restrict__ out, std::int64_t count) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * row_threads;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * row_threads + threadIdx.x; i < count; i += stride)
    out[i] = from_float<T>(in[i]);
}

template <class T>
__global__ void __launch_bounds__(warps_per_block * 32)
    predictor_logits_kernel(const float* __restrict__ hidden, const T* __restrict__ w2, float b2,
                            float* __restrict__ logits, std::int64_t batch, std::int64_t h) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  for (std::int64_t b = warp; b < batch; b += warps) {
    const float* row = hidden + b * h;
    float acc = 0.0f;
    for (std::int64_t k = lane; k < h; k += 32) acc = fmaf(fmaxf(row[k], 0.0f), to_float(w2[k]), acc);
    acc = warp_sum(acc);
    if (lane == 0) logits[b] = acc + b2;
  }
}

__global__ void __launch_bounds__(route_threads)
    route_kernel(const float* __restrict__ logits, const decode_step_params* __restrict__ params,
                 const std::uint8_t* __restrict__ mask, std::int64_t batch, std::int64_t limit, std::int64_t rows,
                 std::uint8_t* __restrict__ decisions, std::int32_t* __restrict__ seq_of_row,
                 std::int32_t* __restrict__ count) {
  using scan = cub::BlockScan<int, route_threads>;
  __shared__ typename scan::TempStorage storage;
  const std::int32_t source = params->source;
  const std::int64_t forced = params->count;
  // Who wants the block. Thread t handles b ≡ t (mod route_threads) here and below.
  for (std::int64_t b = threadIdx.x; b < batch; b += route_threads) {
    bool want = false;
    if (source == 0) {
      want = logits[b] > 0.0f;
    } else if (source == 1) {
      // rank of b: tokens with a larger logit, or an equal one at a lower index
      const float v = logits[b];
      std::int64_t rank = 0;
      for (std::int64_t c = 0; c < batch; ++c) {
        const float u = logits[c];
        if (u > v || (u == v && c < b)) ++rank;
      }
      want = rank < forced;
    } else {
      want = mask[b] != 0;
    }
    decisions[b] = want ? 1 : 0;
  }
  __syncthreads();
  // Compaction in increasing b, one tile of route_threads tokens at a time.
  std::int64_t routed = 0;  // the same in every thread (the tiles' aggregates)
  for (std::int64_t first = 0; first < batch; first += route_threads) {
    const std::int64_t b = first + threadIdx.x;
    const int want = b < batch ? static_cast<int>(decisions[b]) : 0;
    int position = 0, tile_total = 0;
    scan(storage).ExclusiveSum(want, position, tile_total);
    if (want != 0) {
      const std::int64_t row = routed + position;
      if (row < limit)
        seq_of_row[row] = static_cast<std::int32_t>(b);
      else
        decisions[b] = 0;  // dropped: beyond the padded block's rows
    }
    routed += tile_total;
    __syncthreads();  // the scan storage is reused by the next tile
  }
  const std::int64_t entered = routed < limit ? routed : limit;
  for (std::int64_t j = entered + threadIdx.x; j < rows; j += route_threads)
    seq_of_row[j] = static_cast<std::int32_t>((j - entered) % batch);
  if (threadIdx.x == 0) *count = static_cast<std::int32_t>(entered);
}

template <class T>
__global__ void __launch_bounds__(row_threads)
    gather_kernel(const float* __restrict__ x, const T* __restrict__ router_w,
                  const std::int32_t* __restrict__ seq_of_row, float* __restrict__ routed_x, float* __restrict__ r,
                  std::int64_t rows, std::int64_t d) {
  using reduce = cub::BlockReduce<float, row_threads>;
  __shared__ typename reduce::TempStorage storage;
  for (std::int64_t j = blockIdx.x; j < rows; j += gridDim.x) {
    const std::int32_t b = seq_of_row[j];
    float* dst = routed_x + j * d;
    float dot = 0.0f;
    if (b >= 0) {
      const float* src = x + static_cast<std::int64_t>(b) * d;
      for (std::int64_t i = threadIdx.x; i < d; i += row_threads) {
        dst[i] = src[i];
        dot = fmaf(src[i], to_float(router_w[i]), dot);
      }
    } else {
      for (std::int64_t i = threadIdx.x; i < d; i += row_threads) dst[i] = 0.0f;
    }
    dot = reduce(storage).Sum(dot);  // b is uniform over the block: every thread gets here
    if (threadIdx.x == 0) r[j] = b >= 0 ? dot : 0.0f;
    __syncthreads();  // the reduce storage is reused by the next row
  }
}

__global__ void __launch_bounds__(row_threads)
    scatter_kernel(const float* __restrict__ y, const float* __restrict__ routed_x, const float* __restrict__ r,
                   const std::int32_t* __restrict__ seq_of_row, const std::int32_t* __restrict__ real_rows,
                   float* __restrict__ x, std::int64_t rows, std::int64_t d) {
  const std::int64_t real = *real_rows;
  const std::int64_t total = (real < rows ? real : rows) * d;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * row_threads;
  for (std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * row_threads + threadIdx.x; e < total; e += stride) {
    const std::int64_t j = e / d, i = e % d;
    const std::int32_t b = seq_of_row[j];
    if (b < 0) continue;
    x[static_cast<std::int64_t>(b) * d + i] += r[j] * (y[e] - routed_x[e]);
  }
}

__global__ void __launch_bounds__(row_threads)
    advance_lengths_kernel(const decode_step_params* __restrict__ params, const std::int32_t* __restrict__ seq_of_row,
                           const std::int32_t* __restrict__ real_rows, std::int64_t rows,
                           std::int32_t* __restrict__ lengths, std::int64_t max_context) {
  if (params->commit == 0) return;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * row_threads + threadIdx.x;
  if (j >= rows || (real_rows != nullptr && j >= *real_rows)) return;
  const std::int32_t b = seq_of_row[j];
  if (b >= 0 && lengths[b] < max_context) lengths[b] += 1;
}

}  // namespace

void decode_rms_norm(dtype t, const float* in, const void* gain, void* out, std::int64_t rows, std::int64_t d,
                     cudaStream_t stream) {
  rms_norm_from_f32(t, in, gain, out, rows, d, stream);
}

void decode_convert(dtype t, const float* in, void* out, std::int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    convert_kernel<T>
        <<<grid_for(count, row_threads, 1 << 16), row_threads, 0, stream>>>(in, static_cast<T*>(out), count);
    MODSIM_CUDA_CHECK_LAUNCH("convert_kernel");
  });
}

void decode_predictor_logits(dtype t, const float* hidden, const void* w2, float b2, float* logits, std::int64_t batch,
                             std::int64_t h, cudaStream_t stream) {
  if (batch == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    predictor_logits_kernel<T><<<grid_for(batch, warps_per_block), warps_per_block * 32, 0, stream>>>(
        hidden, static_cast<const T*>(w2), b2, logits, batch, h);
    MODSIM_CUDA_CHECK_LAUNCH("predictor_logits_kernel");
  });
}

void decode_route(const float* logits, const decode_step_params* params, const std::uint8_t* mask, std::int64_t batch,
                  std::int64_t limit, std::int64_t rows, std::uint8_t* decisions, std::int32_t* seq_of_row,
                  std::int32_t* count, cudaStream_t stream) {
  route_kernel<<<1, route_threads, 0, stream>>>(logits, params, mask, batch, limit, rows, decisions, seq_of_row, count);
  MODSIM_CUDA_CHECK_LAUNCH("route_kernel");
}

void decode_gather(dtype t, const float* x, const void* router_w, const std::int32_t* seq_of_row, float* routed_x,
                   float* r, std::int64_t rows, std::int64_t d, cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    gather_kernel<T><<<grid_for(rows, 1, 1 << 16), row_threads, 0, stream>>>(x, static_cast<const T*>(router_w),
                                                                             seq_of_row, routed_x, r, rows, d);
    MODSIM_CUDA_CHECK_LAUNCH("gather_kernel");
  });
}

void decode_scatter(const float* y, const float* routed_x, const float* r, const std::int32_t* seq_of_row,
                    const std::int32_t* real_rows, float* x, std::int64_t rows, std::int64_t d, cudaStream_t stream) {
  if (rows == 0 || d == 0) return;
  scatter_kernel<<<grid_for(rows * d, row_threads, 1 << 16), row_threads, 0, stream>>>(y, routed_x, r, seq_of_row,
                                                                                       real_rows, x, rows, d);
  MODSIM_CUDA_CHECK_LAUNCH("scatter_kernel");
}

void decode_advance_lengths(const decode_step_params* params, const std::int32_t* seq_of_row,
                            const std::int32_t* real_rows, std::int64_t rows, std::int32_t* lengths,
                            std::int64_t max_context, cudaStream_t stream) {
  if (rows == 0) return;
  advance_lengths_kernel<<<grid_for(rows, row_threads), row_threads, 0, stream>>>(params, seq_of_row, real_rows, rows,
                                                                                  lengths, max_context);
  MODSIM_CUDA_CHECK_LAUNCH("advance_lengths_kernel");
}

}  // namespace modsim::kernels::cuda
