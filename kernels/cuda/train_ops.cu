#include "kernels/cuda/train_ops.cuh"

#include <algorithm>

#include <cub/block/block_reduce.cuh>

#include "kernels/cuda/rmsnorm.cuh"

namespace modsim::kernels::cuda {

namespace {

constexpr int threads = 256;
constexpr int warps_per_block = threads / 32;

// Grid-stride index helpers.
__device__ __forceinline__ std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

unsigned elementwise_grid(std::int64_t count) { return grid_for(count, threads, 1 << 16); }

template <class From, class To>
__global__ void __launch_bounds__(threads)
    convert_kernel(const From* __restrict__ src, To* __restrict__ dst, std::int64_t count) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) dst[i] = from_float<To>(to_float(src[i]));
}

__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

constexpr float gelu_c = 0.7978845608028654f;  // sqrt(2/pi)

template <class T, bool swiglu>
__global__ void __launch_bounds__(threads)
    act_forward_kernel(const T* __restrict__ up, const T* __restrict__ gate, T* __restrict__ act, std::int64_t count) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    const float u = to_float(up[i]);
    float a;
    if constexpr (swiglu) {
      const float g = to_float(gate[i]);
      a = g * sigmoid(g) * u;
    } else {
      a = u * sigmoid(2.0f * gelu_c * (u + 0.044715f * u * u * u));
    }
    act[i] = from_float<T>(a);
  }
}

template <class T, bool swiglu>
__global__ void __launch_bounds__(threads)
    act_backward_kernel(const T* __restrict__ up, const T* __restrict__ gate, const T* __restrict__ d_act,
                        T* __restrict__ d_up, T* __restrict__ d_gate, std::int64_t count) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    const float u = to_float(up[i]), da = to_float(d_act[i]);
    if constexpr (swiglu) {
      const float g = to_float(gate[i]);
      const float sig = sigmoid(g);
      d_up[i] = from_float<T>(da * g * sig);
      d_gate[i] = from_float<T>(da * u * sig * (1.0f + g * (1.0f - sig)));
    } else {
      const float sig = sigmoid(2.0f * gelu_c * (u + 0.044715f * u * u * u));
      const float dz = 2.0f * gelu_c * (1.0f + 3.0f * 0.044715f * u * u);
      d_up[i] = from_float<T>(da * (sig + u * sig * (1.0f - sig) * dz));
    }
  }
}

// One warp per row of the n×n matrices.
template <class T>
__global__ void __launch_bounds__(threads) softmax_backward_kernel(const T* __restrict__ probs, T* __restrict__ grad,
                                                                   std::int64_t rows, std::int64_t n, float scale) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32; r < rows;
       r += warps) {
    const T* p = probs + r * n;
    T* g = grad + r * n;
    const std::int64_t len = r % n + 1;
    float dot = 0.0f;
    for (std::int64_t j = lane; j < len; j += 32) dot += to_float(p[j]) * to_float(g[j]);
    dot = warp_sum(dot);
    for (std::int64_t j = lane; j < len; j += 32) g[j] = from_float<T>(scale * to_float(p[j]) * (to_float(g[j]) - dot));
    for (std::int64_t j = len + lane; j < n; j += 32) g[j] = from_float<T>(0.0f);
  }
}

// One block per row.
template <class T>
__global__ void __launch_bounds__(threads)
    rms_norm_backward_kernel(const T* __restrict__ in, const T* __restrict__ gain, const T* __restrict__ d_out,
                             const T* __restrict__ resid, T* __restrict__ d_in, float* __restrict__ inv_out,
                             std::int64_t rows, std::int64_t d) {
  using reduce = cub::BlockReduce<float, threads>;
  __shared__ typename reduce::TempStorage storage;
  __shared__ float s_inv, s_mean;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* a = in + row * d;
    const T* go = d_out + row * d;
    float ss = 0.0f, dot = 0.0f;
    for (std::int64_t c = threadIdx.x; c < d; c += threads) {
      const float v = to_float(a[c]);
      ss = fmaf(v, v, ss);
      dot = fmaf(to_float(go[c]) * to_float(gain[c]), v, dot);
    }
    ss = reduce(storage).Sum(ss);
    __syncthreads();
    dot = reduce(storage).Sum(dot);
    if (threadIdx.x == 0) {
      const float inv = 1.0f / sqrtf(ss / static_cast<float>(d) + rms_norm_eps);
      s_inv = inv;
      s_mean = dot * inv / static_cast<float>(d);
      inv_out[row] = inv;
    }
    __syncthreads();
    const float inv = s_inv, mean = s_mean;
    const T* rs = resid + row * d;
    T* gi = d_in + row * d;
    for (std::int64_t c = threadIdx.x; c < d; c += threads) {
      const float n_hat = to_float(a[c]) * inv;
      gi[c] = from_float<T>(to_float(rs[c]) + inv * (to_float(go[c]) * to_float(gain[c]) - n_hat * mean));
    }
    __syncthreads();
  }
}

// Column c = blockIdx.x·threads + threadIdx.x, rows [blockIdx.y·chunk, …): partial sums added
// into out (zeroed first).
template <class T>
__global__ void __launch_bounds__(threads)
    column_sum_kernel(const T* __restrict__ a, const T* __restrict__ b, const float* __restrict__ w,
                      float* __restrict__ out, std::int64_t rows, std::int64_t d, std::int64_t chunk) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * threads + threadIdx.x;
  if (c >= d) return;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * chunk;
  const std::int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
  float sum = 0.0f;
  for (std::int64_t r = r0; r < r1; ++r) {
    float v = w[r] * to_float(a[r * d + c]);
    if (b != nullptr) v *= to_float(b[r * d + c]);
    sum += v;
  }
  atomicAdd(out + c, sum);
}

template <class T>
__global__ void __launch_bounds__(threads)
    head_group_kernel(const T* __restrict__ src, T* __restrict__ dst, std::int64_t rows, std::int64_t kv_heads,
                      std::int64_t group, std::int64_t d_head) {
  const std::int64_t dkv = kv_heads * d_head, count = rows * dkv;
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    const std::int64_t r = i / dkv, col = i % dkv, kv = col / d_head, c = col % d_head;
    const T* s = src + r * dkv * group + kv * group * d_head + c;
    float sum = 0.0f;
    for (std::int64_t j = 0; j < group; ++j) sum += to_float(s[j * d_head]);
    dst[i] = from_float<T>(sum);
  }
}

__device__ __forceinline__ std::int64_t routed_row(const std::int32_t* index, std::int64_t j, std::int64_t seq_len,
                                                   std::int64_t k) {
  return (j / k) * seq_len + index[j];
}

// One warp per routed token.
template <class T>
__global__ void __launch_bounds__(threads)
    scatter_forward_kernel(const T* __restrict__ x, const T* __restrict__ y, const T* __restrict__ xt,
                           const float* __restrict__ r, const std::int32_t* __restrict__ index, T* __restrict__ out,
                           std::int64_t m, std::int64_t seq_len, std::int64_t k, std::int64_t d) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  for (std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32; j < m; j += warps) {
    const std::int64_t row = routed_row(index, j, seq_len, k);
    const float rj = r[j];
    for (std::int64_t c = lane; c < d; c += 32)
      out[row * d + c] =
          from_float<T>(to_float(x[row * d + c]) + rj * (to_float(y[j * d + c]) - to_float(xt[j * d + c])));
  }
}

template <class T>
__global__ void __launch_bounds__(threads)
    scatter_backward_kernel(const T* __restrict__ dout, const T* __restrict__ y, const T* __restrict__ xt,
                            const float* __restrict__ r, const std::int32_t* __restrict__ index, T* __restrict__ dy,
                            float* __restrict__ dr, std::int64_t m, std::int64_t seq_len, std::int64_t k,
                            std::int64_t d) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  for (std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32; j < m; j += warps) {
    const std::int64_t row = routed_row(index, j, seq_len, k);
    const float rj = r[j];
    float sum = 0.0f;
    for (std::int64_t c = lane; c < d; c += 32) {
      const float go = to_float(dout[row * d + c]);
      sum += go * (to_float(y[j * d + c]) - to_float(xt[j * d + c]));
      dy[j * d + c] = from_float<T>(rj * go);
    }
    sum = warp_sum(sum);
    if (lane == 0) dr[j] = sum;
  }
}

template <class T>
__global__ void __launch_bounds__(threads)
    routed_input_grad_kernel(const T* __restrict__ dout, const T* __restrict__ dxt, const float* __restrict__ r,
                             const float* __restrict__ dr, const float* __restrict__ w,
                             const std::int32_t* __restrict__ index, T* __restrict__ dx, std::int64_t m,
                             std::int64_t seq_len, std::int64_t k, std::int64_t d) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  for (std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32; j < m; j += warps) {
    const std::int64_t row = routed_row(index, j, seq_len, k);
    const float rj = r[j], drj = dr[j];
    for (std::int64_t c = lane; c < d; c += 32) {
      const float go = to_float(dout[row * d + c]);
      dx[row * d + c] = from_float<T>(go + to_float(dxt[j * d + c]) - rj * go + drj * w[c]);
    }
  }
}

template <class T>
__global__ void __launch_bounds__(threads)
    adamw_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m, float* __restrict__ v,
                 T* __restrict__ copy, std::int64_t count, adamw_coefficients k) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    const float gi = g[i];
    const float mi = k.beta1 * m[i] + (1.0f - k.beta1) * gi;
    const float vi = k.beta2 * v[i] + (1.0f - k.beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float pi = p[i] - (k.lr * (mi * k.c1) / (sqrtf(vi * k.c2) + k.eps) + k.decay * p[i]);
    p[i] = pi;
    if (copy != nullptr) copy[i] = from_float<T>(pi);
  }
}

__global__ void __launch_bounds__(threads)
    bce_kernel(const float* __restrict__ z, const float* __restrict__ target, float* __restrict__ loss,
               float* __restrict__ dz, std::int64_t count) {
  const float inv_count = 1.0f / static_cast<float>(count);
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    const float zi = z[i], ti = target[i];
    loss[i] = fmaxf(zi, 0.0f) - ti * zi + log1pf(expf(-fabsf(zi)));
    dz[i] = (sigmoid(zi) - ti) * inv_count;
  }
}

__global__ void __launch_bounds__(threads) relu_kernel(float* __restrict__ h, std::int64_t count) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) h[i] = fmaxf(h[i], 0.0f);
}

__global__ void __launch_bounds__(threads)
    predictor_hidden_grad_kernel(const float* __restrict__ h, const float* __restrict__ dz,
                                 const float* __restrict__ w2, float* __restrict__ dh, std::int64_t rows,
                                 std::int64_t hidden) {
  const std::int64_t count = rows * hidden;
  for (std::int64_t i = first_index(); i < count; i += grid_stride())
    dh[i] = h[i] > 0.0f ? dz[i / hidden] * w2[i % hidden] : 0.0f;
}

__global__ void __launch_bounds__(threads)
    routed_targets_kernel(const std::int32_t* __restrict__ index, float* __restrict__ target, std::int64_t m,
                          std::int64_t seq_len, std::int64_t k) {
  for (std::int64_t j = first_index(); j < m; j += grid_stride()) target[routed_row(index, j, seq_len, k)] = 1.0f;
}

__global__ void __launch_bounds__(threads)
    softmax_rows_kernel(const float* __restrict__ logits, float* __restrict__ probs, std::int64_t rows,
                        std::int64_t cols) {
  for (std::int64_t r = first_index(); r < rows; r += grid_stride()) {
    const float* l = logits + r * cols;
    float* p = probs + r * cols;
    float top = l[0];
    for (std::int64_t c = 1; c < cols; ++c) top = fmaxf(top, l[c]);
    float sum = 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) sum += (p[c] = expf(l[c] - top));
    for (std::int64_t c = 0; c < cols; ++c) p[c] /= sum;
  }
}

template <class T>
__global__ void __launch_bounds__(threads)
    moe_combine_kernel(const T* __restrict__ expert_out, const std::int32_t* __restrict__ rows,
                       const std::int32_t* __restrict__ index, const float* __restrict__ probs,
                       std::int64_t experts_total, T* __restrict__ y, std::int64_t count, std::int64_t d) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  for (std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32; j < count;
       j += warps) {
    const std::int64_t t = rows[j];
    const float g = probs[t * experts_total + index[t]];
    for (std::int64_t c = lane; c < d; c += 32)
      y[t * d + c] = from_float<T>(to_float(y[t * d + c]) + g * to_float(expert_out[j * d + c]));
  }
}

template <class T>
__global__ void __launch_bounds__(threads)
    moe_backward_rows_kernel(const T* __restrict__ dy, const T* __restrict__ expert_out,
                             const std::int32_t* __restrict__ rows, const std::int32_t* __restrict__ index,
                             const float* __restrict__ probs, std::int64_t experts_total, T* __restrict__ d_expert_out,
                             float* __restrict__ d_logits, std::int64_t count, std::int64_t d) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  for (std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32; j < count;
       j += warps) {
    const std::int64_t t = rows[j], chosen = index[t];
    const float* p = probs + t * experts_total;
    const float g = p[chosen];
    float dot = 0.0f;
    for (std::int64_t c = lane; c < d; c += 32) {
      const float go = to_float(dy[t * d + c]);
      dot += go * to_float(expert_out[j * d + c]);
      d_expert_out[j * d + c] = from_float<T>(g * go);
    }
    dot = warp_sum(dot);
    for (std::int64_t e = lane; e < experts_total; e += 32)
      d_logits[t * experts_total + e] = dot * g * ((e == chosen ? 1.0f : 0.0f) - p[e]);
  }
}

template <class T>
__global__ void __launch_bounds__(threads)
    add_rows_kernel(const T* __restrict__ src, const std::int32_t* __restrict__ rows, T* __restrict__ dst,
                    std::int64_t count, std::int64_t d) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * warps_per_block;
  for (std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32; j < count;
       j += warps) {
    const std::int64_t t = rows[j];
    for (std::int64_t c = lane; c < d; c += 32)
      dst[t * d + c] = from_float<T>(to_float(dst[t * d + c]) + to_float(src[j * d + c]));
  }
}

unsigned warp_grid(std::int64_t rows) { return grid_for(rows, warps_per_block, 1 << 16); }

}  // namespace

void convert_from_f32(dtype t, const float* src, void* dst, std::int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    convert_kernel<float, T><<<elementwise_grid(count), threads, 0, stream>>>(src, static_cast<T*>(dst), count);
    MODSIM_CUDA_CHECK_LAUNCH("convert_kernel");
  });
}

void convert_to_f32(dtype t, const void* src, float* dst, std::int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    convert_kernel<T, float><<<elementwise_grid(count), threads, 0, stream>>>(static_cast<const T*>(src), dst, count);
    MODSIM_CUDA_CHECK_LAUNCH("convert_kernel");
  });
}

void mlp_act_forward(dtype t, bool swiglu, const void* up, const void* gate, void* act, std::int64_t count,
                     cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const auto* u = static_cast<const T*>(up);
    const auto* g = static_cast<const T*>(gate);
    auto* a = static_cast<T*>(act);
    if (swiglu)
      act_forward_kernel<T, true><<<elementwise_grid(count), threads, 0, stream>>>(u, g, a, count);
    else
      act_forward_kernel<T, false><<<elementwise_grid(count), threads, 0, stream>>>(u, g, a, count);
    MODSIM_CUDA_CHECK_LAUNCH("act_forward_kernel");
  });
}

void mlp_act_backward(dtype t, bool swiglu, const void* up, const void* gate, const void* d_act, void* d_up,
                      void* d_gate, std::int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    const auto* u = static_cast<const T*>(up);
    const auto* g = static_cast<const T*>(gate);
    const auto* da = static_cast<const T*>(d_act);
    auto* du = static_cast<T*>(d_up);
    auto* dg = static_cast<T*>(d_gate);
    if (swiglu)
      act_backward_kernel<T, true><<<elementwise_grid(count), threads, 0, stream>>>(u, g, da, du, dg, count);
    else
      act_backward_kernel<T, false><<<elementwise_grid(count), threads, 0, stream>>>(u, g, da, du, dg, count);
    MODSIM_CUDA_CHECK_LAUNCH("act_backward_kernel");
  });
}

void attn_softmax_backward(dtype t, const void* probs, void* grad, std::int64_t matrices, std::int64_t n, float scale,
                           cudaStream_t stream) {
  const std::int64_t rows = matrices * n;
  if (rows == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    softmax_backward_kernel<T>
        <<<warp_grid(rows), threads, 0, stream>>>(static_cast<const T*>(probs), static_cast<T*>(grad), rows, n, scale);
    MODSIM_CUDA_CHECK_LAUNCH("softmax_backward_kernel");
  });
}

void rms_norm_backward(dtype t, const void* in, const void* gain, const void* d_out, const void* resid, void* d_in,
                       float* inv, std::int64_t rows, std::int64_t d, cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    rms_norm_backward_kernel<T><<<grid_for(rows, 1, 1 << 16), threads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<const T*>(gain), static_cast<const T*>(d_out),
        static_cast<const T*>(resid), static_cast<T*>(d_in), inv, rows, d);
    MODSIM_CUDA_CHECK_LAUNCH("rms_norm_backward_kernel");
  });
}

void weighted_column_sum(dtype t, const void* a, const void* b, const float* w, float* out, std::int64_t rows,
                         std::int64_t d, cudaStream_t stream) {
  if (d == 0) return;
  MODSIM_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(d) * sizeof(float), stream));
  if (rows == 0) return;
  // About 256 rows per block, at most 1024 row chunks.
  const std::int64_t chunks = std::min<std::int64_t>(1024, (rows + 255) / 256);
  const std::int64_t chunk = (rows + chunks - 1) / chunks;
  const dim3 grid(grid_for(d, threads), static_cast<unsigned>((rows + chunk - 1) / chunk));
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    column_sum_kernel<T>
        <<<grid, threads, 0, stream>>>(static_cast<const T*>(a), static_cast<const T*>(b), w, out, rows, d, chunk);
    MODSIM_CUDA_CHECK_LAUNCH("column_sum_kernel");
  });
}

void sum_head_groups(dtype t, const void* src, void* dst, std::int64_t rows, std::int64_t kv_heads, std::int64_t group,
                     std::int64_t d_head, cudaStream_t stream) {
  const std::int64_t count = rows * kv_heads * d_head;
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    head_group_kernel<T><<<elementwise_grid(count), threads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), rows, kv_heads, group, d_head);
    MODSIM_CUDA_CHECK_LAUNCH("head_group_kernel");
  });
}

void routed_scatter_forward(dtype t, const void* x, const void* y, const void* xt, const float* r,
                            const std::int32_t* index, void* out, std::int64_t batch, std::int64_t seq_len,
                            std::int64_t k, std::int64_t d, cudaStream_t stream) {
  const std::size_t es = t == dtype::bf16 ? sizeof(bf16) : sizeof(float);
  if (out != x)
    MODSIM_CUDA_CHECK(
        cudaMemcpyAsync(out, x, static_cast<std::size_t>(batch * seq_len * d) * es, cudaMemcpyDeviceToDevice, stream));
  const std::int64_t m = batch * k;
  if (m == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    scatter_forward_kernel<T><<<warp_grid(m), threads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(y),
                                                                    static_cast<const T*>(xt), r, index,
                                                                    static_cast<T*>(out), m, seq_len, k, d);
    MODSIM_CUDA_CHECK_LAUNCH("scatter_forward_kernel");
  });
}

void routed_scatter_backward(dtype t, const void* dout, const void* y, const void* xt, const float* r,
                             const std::int32_t* index, void* dy, float* dr, std::int64_t batch, std::int64_t seq_len,
                             std::int64_t k, std::int64_t d, cudaStream_t stream) {
  const std::int64_t m = batch * k;
  if (m == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    scatter_backward_kernel<T><<<warp_grid(m), threads, 0, stream>>>(
        static_cast<const T*>(dout), static_cast<const T*>(y), static_cast<const T*>(xt), r, index, static_cast<T*>(dy),
        dr, m, seq_len, k, d);
    MODSIM_CUDA_CHECK_LAUNCH("scatter_backward_kernel");
  });
}

void routed_input_grad(dtype t, const void* dout, const void* dxt, const float* r, const float* dr, const float* w,
                       const std::int32_t* index, void* dx, std::int64_t batch, std::int64_t seq_len, std::int64_t k,
                       std::int64_t d, cudaStream_t stream) {
  const std::size_t es = t == dtype::bf16 ? sizeof(bf16) : sizeof(float);
  MODSIM_CUDA_CHECK(
      cudaMemcpyAsync(dx, dout, static_cast<std::size_t>(batch * seq_len * d) * es, cudaMemcpyDeviceToDevice, stream));
  const std::int64_t m = batch * k;
  if (m == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    routed_input_grad_kernel<T><<<warp_grid(m), threads, 0, stream>>>(static_cast<const T*>(dout),
                                                                      static_cast<const T*>(dxt), r, dr, w, index,
                                                                      static_cast<T*>(dx), m, seq_len, k, d);
    MODSIM_CUDA_CHECK_LAUNCH("routed_input_grad_kernel");
  });
}

void softmax_rows(const float* logits, float* probs, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  softmax_rows_kernel<<<elementwise_grid(rows), threads, 0, stream>>>(logits, probs, rows, cols);
  MODSIM_CUDA_CHECK_LAUNCH("softmax_rows_kernel");
}

void moe_combine(dtype t, const void* expert_out, const std::int32_t* rows, const std::int32_t* index,
                 const float* probs, std::int64_t experts_total, void* y, std::int64_t count, std::int64_t d,
                 cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    moe_combine_kernel<T><<<warp_grid(count), threads, 0, stream>>>(static_cast<const T*>(expert_out), rows, index,
                                                                    probs, experts_total, static_cast<T*>(y), count, d);
    MODSIM_CUDA_CHECK_LAUNCH("moe_combine_kernel");
  });
}

void moe_backward_rows(dtype t, const void* dy, const void* expert_out, const std::int32_t* rows,
                       const std::int32_t* index, const float* probs, std::int64_t experts_total, void* d_expert_out,
                       float* d_logits, std::int64_t count, std::int64_t d, cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    moe_backward_rows_kernel<T><<<warp_grid(count), threads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(expert_out), rows, index, probs, experts_total,
        static_cast<T*>(d_expert_out), d_logits, count, d);
    MODSIM_CUDA_CHECK_LAUNCH("moe_backward_rows_kernel");
  });
}

void add_rows(dtype t, const void* src, const std::int32_t* rows, void* dst, std::int64_t count, std::int64_t d,
              cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    add_rows_kernel<T>
        <<<warp_grid(count), threads, 0, stream>>>(static_cast<const T*>(src), rows, static_cast<T*>(dst), count, d);
    MODSIM_CUDA_CHECK_LAUNCH("add_rows_kernel");
  });
}

void adamw(dtype t, float* p, const float* g, float* m, float* v, void* copy, std::int64_t count,
           const adamw_coefficients& k, cudaStream_t stream) {
  if (count == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    adamw_kernel<T><<<elementwise_grid(count), threads, 0, stream>>>(p, g, m, v, static_cast<T*>(copy), count, k);
    MODSIM_CUDA_CHECK_LAUNCH("adamw_kernel");
  });
}

void bce_with_logits(const float* z, const float* target, float* loss, float* dz, std::int64_t count,
                     cudaStream_t stream) {
  if (count == 0) return;
  bce_kernel<<<elementwise_grid(count), threads, 0, stream>>>(z, target, loss, dz, count);
  MODSIM_CUDA_CHECK_LAUNCH("bce_kernel");
}

void relu_inplace(float* h, std::int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  relu_kernel<<<elementwise_grid(count), threads, 0, stream>>>(h, count);
  MODSIM_CUDA_CHECK_LAUNCH("relu_kernel");
}

void predictor_hidden_grad(const float* h, const float* dz, const float* w2, float* dh, std::int64_t rows,
                           std::int64_t hidden, cudaStream_t stream) {
  if (rows * hidden == 0) return;
  predictor_hidden_grad_kernel<<<elementwise_grid(rows * hidden), threads, 0, stream>>>(h, dz, w2, dh, rows, hidden);
  MODSIM_CUDA_CHECK_LAUNCH("predictor_hidden_grad_kernel");
}

void routed_targets(const std::int32_t* index, float* target, std::int64_t batch, std::int64_t seq_len, std::int64_t k,
                    cudaStream_t stream) {
  MODSIM_CUDA_CHECK(cudaMemsetAsync(target, 0, static_cast<std::size_t>(batch * seq_len) * sizeof(float), stream));
  const std::int64_t m = batch * k;
  if (m == 0) return;
  routed_targets_kernel<<<elementwise_grid(m), threads, 0, stream>>>(index, target, m, seq_len, k);
  MODSIM_CUDA_CHECK_LAUNCH("routed_targets_kernel");
}

}  // namespace modsim::kernels::cuda
