#pragma once
// Fused causal attention (scores, causal softmax and values in one kernel, no n×n matrix in
// memory) through cuDNN's graph API, for bf16 Q, K, V with GQA. cuDNN is loaded at run time
// (dlopen of libcudnn.so.9, found through LD_LIBRARY_PATH: on the GPU machines it sits next
// to PyTorch), so the build needs only cuDNN's headers and a machine without cuDNN runs
// everything else; asking for fused attention there is a clear error naming the library.
//
// The graph is the one cuDNN's fused flash-attention engines recognise: S = Q·Kᵀ (fp32),
// S·scale, causal mask (row index ≥ column index, else −inf), softmax (max, subtract, exp,
// sum, divide; fp32), P in bf16, O = P·V. Q, K, V and O are read and written in place in the
// workspace's row-major [tokens, heads·d_head] buffers (tokens batch-major), described to
// cuDNN as [batch, heads, n, d_head] with strides [n·row, d_head, row, 1].
//
// Compiled without a GPU; not yet run on one (see reports/gpu/README.md).
#include <cstdint>
#include <memory>
#include <string>

struct CUstream_st;  // cudaStream_t, without the CUDA headers (tests include this file)

namespace modsim::kernels::cuda {

// "" when cuDNN could be loaded (once per process), else why not (library not found, a
// version before 9, a missing entry point).
const std::string& cudnn_unavailable_reason();
// The cuDNN version loaded (e.g. 91900), 0 when none.
std::size_t cudnn_version();

// One cuDNN handle on one stream; made on first use of fused attention by a backend.
class cudnn_session {
 public:
  explicit cudnn_session(CUstream_st* stream);  // throws modsim::error (runtime)
  ~cudnn_session();
  cudnn_session(const cudnn_session&) = delete;
  cudnn_session& operator=(const cudnn_session&) = delete;
  void* handle() const { return m_handle; }

 private:
  void* m_handle = nullptr;
};

struct sdpa_layout {
  std::int64_t batch = 0, n = 0, heads = 0, kv_heads = 0, d_head = 0;
};

// Whether cuDNN's fused attention can take `l` at all (bf16, d_head a multiple of 8 up to
// 256, heads a multiple of kv_heads); "" when it can, else why not. cuDNN may still refuse a
// shape when the plan is built.
std::string sdpa_shape_problem(const sdpa_layout& l);

// Makes and finalizes every tensor and operation descriptor of the graph for `l` (everything
// but the operation graph, the heuristics and the plan, which need a GPU): a check of the
// graph's attributes against the cuDNN found, on a machine without a GPU. Throws
// modsim::error (runtime) like cudnn_sdpa.
void cudnn_sdpa_check_descriptors(const sdpa_layout& l);

// The execution plan for one layout and fixed buffers: built once (heuristics, first engine
// configuration that finalizes), run many times. Throws modsim::error (runtime) naming the
// step that failed, with cuDNN's message.
class cudnn_sdpa {
 public:
  cudnn_sdpa(const cudnn_session& session, const sdpa_layout& l, const void* q, const void* k, const void* v, void* o);
  ~cudnn_sdpa();
  cudnn_sdpa(const cudnn_sdpa&) = delete;
  cudnn_sdpa& operator=(const cudnn_sdpa&) = delete;

  // Device scratch the plan needs (to be allocated by the caller before run()).
  std::size_t workspace_bytes() const { return m_workspace_bytes; }
  // Queues the attention on the session's stream. Never allocates.
  void run(void* workspace);
  const sdpa_layout& layout() const { return m_layout; }

 private:
  struct state;
  friend void cudnn_sdpa_check_descriptors(const sdpa_layout& l);
  const cudnn_session& m_session;
  sdpa_layout m_layout;
  std::unique_ptr<state> m_state;
  std::size_t m_workspace_bytes = 0;
};

}  // namespace modsim::kernels::cuda
