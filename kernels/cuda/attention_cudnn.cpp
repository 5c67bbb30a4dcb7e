#include "kernels/cuda/attention_cudnn.hpp"

#include <cuda_runtime_api.h>
#include <cudnn_graph.h>
#include <dlfcn.h>

#include <cmath>
#include <deque>
#include <limits>
#include <mutex>
#include <vector>

#include "core/error.hpp"

namespace modsim::kernels::cuda {
namespace {

// The cuDNN entry points used, resolved with dlsym from libcudnn.so.9.
struct cudnn_api {
  void* lib = nullptr;
  std::string problem;
  std::size_t version = 0;
  decltype(&::cudnnGetVersion) get_version = nullptr;
  decltype(&::cudnnGetErrorString) error_string = nullptr;
  decltype(&::cudnnGetLastErrorString) last_error = nullptr;  // may stay null
  decltype(&::cudnnCreate) create = nullptr;
  decltype(&::cudnnDestroy) destroy = nullptr;
  decltype(&::cudnnSetStream) set_stream = nullptr;
  decltype(&::cudnnBackendCreateDescriptor) create_desc = nullptr;
  decltype(&::cudnnBackendDestroyDescriptor) destroy_desc = nullptr;
  decltype(&::cudnnBackendSetAttribute) set_attr = nullptr;
  decltype(&::cudnnBackendGetAttribute) get_attr = nullptr;
  decltype(&::cudnnBackendFinalize) finalize = nullptr;
  decltype(&::cudnnBackendExecute) execute = nullptr;
};

template <class F>
bool resolve(cudnn_api& api, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(api.lib, name));
  if (fn == nullptr && api.problem.empty()) api.problem = std::string("cuDNN has no entry point ") + name;
  return fn != nullptr;
}

const cudnn_api& api() {
  static cudnn_api a;
  static std::once_flag once;
  std::call_once(once, [] {
    for (const char* name : {"libcudnn.so.9", "libcudnn.so"}) {
      a.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (a.lib != nullptr) break;
    }
    if (a.lib == nullptr) {
      a.problem =
          "cuDNN (libcudnn.so.9) was not found: put the folder holding it on LD_LIBRARY_PATH (on a machine with "
          "PyTorch: python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__))'/lib), or use "
          "unfused attention";
      return;
    }
    resolve(a, a.get_version, "cudnnGetVersion");
    resolve(a, a.error_string, "cudnnGetErrorString");
    resolve(a, a.create, "cudnnCreate");
    resolve(a, a.destroy, "cudnnDestroy");
    resolve(a, a.set_stream, "cudnnSetStream");
    resolve(a, a.create_desc, "cudnnBackendCreateDescriptor");
    resolve(a, a.destroy_desc, "cudnnBackendDestroyDescriptor");
    resolve(a, a.set_attr, "cudnnBackendSetAttribute");
    resolve(a, a.get_attr, "cudnnBackendGetAttribute");
    resolve(a, a.finalize, "cudnnBackendFinalize");
    resolve(a, a.execute, "cudnnBackendExecute");
    a.last_error = reinterpret_cast<decltype(a.last_error)>(dlsym(a.lib, "cudnnGetLastErrorString"));
    if (!a.problem.empty()) return;
    a.version = a.get_version();
    if (a.version < 90000)
      a.problem = "cuDNN " + std::to_string(a.version) + " is too old for fused attention (9.0 or newer needed)";
  });
  return a;
}

const cudnn_api& loaded() {
  const cudnn_api& a = api();
  if (!a.problem.empty()) throw runtime_error("fused attention: " + a.problem);
  return a;
}

void check(cudnnStatus_t status, const std::string& what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const cudnn_api& a = api();
  std::string message = "cuDNN: " + what + ": " + (a.error_string ? a.error_string(status) : "error") + " (" +
                        std::to_string(static_cast<int>(status)) + ")";
  if (a.last_error != nullptr) {
    char detail[512] = {};
    a.last_error(detail, sizeof detail);
    if (detail[0] != '\0') message += ": " + std::string(detail);
  }
  throw runtime_error(message);
}

// The handle attributes are marked deprecated in cuDNN 9.19 headers but are what every cuDNN 9
// release reads; named by value so the build stays free of deprecation warnings.
constexpr auto k_graph_handle = static_cast<cudnnBackendAttributeName_t>(800);  // OPERATIONGRAPH_HANDLE
constexpr auto k_plan_handle = static_cast<cudnnBackendAttributeName_t>(400);   // EXECUTION_PLAN_HANDLE

// One backend descriptor, destroyed with its owner.
class descriptor {
 public:
  descriptor() = default;
  explicit descriptor(cudnnBackendDescriptorType_t type, const char* what) : m_what(what) {
    check(loaded().create_desc(type, &m_desc), std::string("create ") + what);
  }
  ~descriptor() {
    if (m_desc != nullptr) api().destroy_desc(m_desc);
  }
  descriptor(descriptor&& o) noexcept : m_desc(o.m_desc), m_what(o.m_what) { o.m_desc = nullptr; }
  descriptor& operator=(descriptor&& o) noexcept {
    if (this != &o) {
      if (m_desc != nullptr) api().destroy_desc(m_desc);
      m_desc = o.m_desc;
      m_what = o.m_what;
      o.m_desc = nullptr;
    }
    return *this;
  }
  descriptor(const descriptor&) = delete;
  descriptor& operator=(const descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return m_desc; }
  cudnnBackendDescriptor_t* address() { return &m_desc; }

  template <class T>
  descriptor& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values,
                  std::int64_t count = 1) {
    check(api().set_attr(m_desc, name, type, count, values),
          std::string("set attribute ") + std::to_string(static_cast<int>(name)) + " of " + m_what);
    return *this;
  }
  descriptor& set_desc(cudnnBackendAttributeName_t name, const descriptor& d) {
    cudnnBackendDescriptor_t raw = d.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &raw);
  }
  descriptor& set_i64(cudnnBackendAttributeName_t name, std::int64_t v) { return set(name, CUDNN_TYPE_INT64, &v); }
  descriptor& set_type(cudnnBackendAttributeName_t name, cudnnDataType_t t) {
    return set(name, CUDNN_TYPE_DATA_TYPE, &t);
  }
  descriptor& finalize() {
    check(api().finalize(m_desc), std::string("finalize ") + m_what);
    return *this;
  }
  // Finalize that reports failure instead of throwing (engine configurations may not apply).
  bool try_finalize() { return api().finalize(m_desc) == CUDNN_STATUS_SUCCESS; }

 private:
  cudnnBackendDescriptor_t m_desc = nullptr;
  const char* m_what = "descriptor";
};

using dims = std::vector<std::int64_t>;

// Tensor uids: the four real tensors and the two by-value scalars go into the variant pack.
enum uid : std::int64_t { uid_q = 1, uid_k, uid_v, uid_o, uid_scale, uid_neg_inf, uid_virtual = 100 };

}  // namespace

const std::string& cudnn_unavailable_reason() { return api().problem; }

std::size_t cudnn_version() { return api().problem.empty() ? api().version : 0; }

cudnn_session::cudnn_session(CUstream_st* stream) {
  const cudnn_api& a = loaded();
  cudnnHandle_t h = nullptr;
  check(a.create(&h), "cudnnCreate");
  m_handle = h;
  check(a.set_stream(h, stream), "cudnnSetStream");
}

cudnn_session::~cudnn_session() {
  if (m_handle != nullptr) api().destroy(static_cast<cudnnHandle_t>(m_handle));
}

std::string sdpa_shape_problem(const sdpa_layout& l) {
  if (l.d_head % 8 != 0 || l.d_head > 256)
    return "d_head " + std::to_string(l.d_head) + " (cuDNN's fused attention takes multiples of 8 up to 256)";
  if (l.kv_heads <= 0 || l.heads % l.kv_heads != 0)
    return "heads " + std::to_string(l.heads) + " not a multiple of kv heads " + std::to_string(l.kv_heads);
  if (l.n < 1 || l.batch < 1) return "empty attention";
  return "";
}

struct cudnn_sdpa::state {
  std::deque<descriptor> tensors;  // every tensor descriptor (a deque: references stay valid)
  std::vector<descriptor> ops;
  std::vector<descriptor> helpers;  // matmul / pointwise / reduction descriptors
  descriptor graph, plan, pack;
  float scale = 1.0f;
  float neg_inf = -std::numeric_limits<float>::infinity();
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  void* pack_workspace = nullptr;
  bool pack_made = false;
  std::int64_t next_virtual = uid_virtual;

  // A tensor descriptor; `uid` 0 makes a virtual tensor (an intermediate of the graph).
  const descriptor& tensor(cudnnDataType_t type, const dims& d, const dims& s, std::int64_t uid = 0,
                           bool by_value = false) {
    descriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
    const bool is_virtual = uid == 0;
    const std::int64_t id = is_virtual ? next_virtual++ : uid;
    const std::int64_t alignment = 16;
    t.set_type(CUDNN_ATTR_TENSOR_DATA_TYPE, type)
        .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, d.data(), static_cast<std::int64_t>(d.size()))
        .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, s.data(), static_cast<std::int64_t>(s.size()))
        .set_i64(CUDNN_ATTR_TENSOR_UNIQUE_ID, id)
        .set_i64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, alignment);
    if (is_virtual) {
      const bool yes = true;
      t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &yes);
    }
    if (by_value) {
      const bool yes = true;
      t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &yes);
    }
    t.finalize();
    tensors.push_back(std::move(t));
    return tensors.back();
  }

  void matmul(const descriptor& a, const descriptor& b, const descriptor& c) {
    descriptor m(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
    m.set_type(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT).finalize();
    descriptor op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul operation");
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, m)
        .finalize();
    helpers.push_back(std::move(m));
    ops.push_back(std::move(op));
  }

  // y = mode(x[, b][, t]); `axis` >= 0 for GEN_INDEX.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t precision, const descriptor& x, const descriptor* b,
                 const descriptor& y, const descriptor* t = nullptr, std::int64_t axis = -1) {
    descriptor p(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
    p.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode)
        .set_type(CUDNN_ATTR_POINTWISE_MATH_PREC, precision);
    if (axis >= 0) p.set_i64(CUDNN_ATTR_POINTWISE_AXIS, axis);
    p.finalize();
    descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation");
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, p).set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
    if (t != nullptr) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y).finalize();
    helpers.push_back(std::move(p));
    ops.push_back(std::move(op));
  }

  void reduction(cudnnReduceTensorOp_t mode, const descriptor& x, const descriptor& y) {
    descriptor r(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction");
    r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &mode)
        .set_type(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT)
        .finalize();
    descriptor op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction operation");
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
        .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
        .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, r)
        .finalize();
    helpers.push_back(std::move(r));
    ops.push_back(std::move(op));
  }

  // Every tensor and operation descriptor of the graph, finalized (needs cuDNN, no GPU).
  void build_ops(const sdpa_layout& l) {
    const std::int64_t B = l.batch, H = l.heads, Hkv = l.kv_heads, n = l.n, dh = l.d_head;
    const std::int64_t dq = H * dh, dkv = Hkv * dh;
    const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;

    // Row-major [B·n, heads·d_head] buffers as [B, heads, n, d_head].
    const descriptor& tq = tensor(bf16, {B, H, n, dh}, {n * dq, dh, dq, 1}, uid_q);
    const descriptor& tkt = tensor(bf16, {B, Hkv, dh, n}, {n * dkv, dh, 1, dkv}, uid_k);  // Kᵀ
    const descriptor& tv = tensor(bf16, {B, Hkv, n, dh}, {n * dkv, dh, dkv, 1}, uid_v);
    const descriptor& to = tensor(bf16, {B, H, n, dh}, {n * dq, dh, dq, 1}, uid_o);
    const dims square = {B, H, n, n}, square_strides = {H * n * n, n * n, n, 1};
    const dims row = {B, H, n, 1}, row_strides = {H * n, n, 1, 1};
    const dims scalar = {1, 1, 1, 1};
    const descriptor& scale_t = tensor(f32, scalar, scalar, uid_scale, true);
    const descriptor& neg_inf_t = tensor(f32, scalar, scalar, uid_neg_inf, true);

    // S = Q·Kᵀ·scale
    const descriptor& s = tensor(f32, square, square_strides);
    matmul(tq, tkt, s);
    const descriptor& scaled = tensor(f32, square, square_strides);
    pointwise(CUDNN_POINTWISE_MUL, f32, s, &scale_t, scaled);
    // Causal mask (top-left aligned): keep column ≤ row, else −inf.
    const descriptor& rows = tensor(CUDNN_DATA_INT32, square, square_strides);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, f32, scaled, nullptr, rows, nullptr, 2);
    const descriptor& cols = tensor(CUDNN_DATA_INT32, square, square_strides);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, f32, scaled, nullptr, cols, nullptr, 3);
    const descriptor& keep = tensor(CUDNN_DATA_BOOLEAN, square, square_strides);
    pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, rows, &cols, keep);
    const descriptor& masked = tensor(f32, square, square_strides);
    pointwise(CUDNN_POINTWISE_BINARY_SELECT, f32, scaled, &neg_inf_t, masked, &keep);
    // Softmax over the last axis.
    const descriptor& max = tensor(f32, row, row_strides);
    reduction(CUDNN_REDUCE_TENSOR_MAX, masked, max);
    const descriptor& shifted = tensor(f32, square, square_strides);
    pointwise(CUDNN_POINTWISE_SUB, f32, masked, &max, shifted);
    const descriptor& e = tensor(f32, square, square_strides);
    pointwise(CUDNN_POINTWISE_EXP, f32, shifted, nullptr, e);
    const descriptor& sum = tensor(f32, row, row_strides);
    reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
    const descriptor& p = tensor(bf16, square, square_strides);
    pointwise(CUDNN_POINTWISE_DIV, f32, e, &sum, p);
    // O = P·V
    matmul(p, tv, to);
  }
};

cudnn_sdpa::cudnn_sdpa(const cudnn_session& session, const sdpa_layout& l, const void* q, const void* k, const void* v,
                       void* o)
    : m_session(session), m_layout(l), m_state(std::make_unique<state>()) {
  if (const std::string why = sdpa_shape_problem(l); !why.empty())
    throw runtime_error("fused attention cannot take this shape: " + why);
  state& st = *m_state;
  st.q = q;
  st.k = k;
  st.v = v;
  st.o = o;
  st.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(l.d_head)));
  // cuDNN before 9.1 wants the lowest finite float as the masked score, later ones −inf.
  if (loaded().version < 90100) st.neg_inf = std::numeric_limits<float>::lowest();
  st.build_ops(l);
  const std::int64_t B = l.batch, H = l.heads, Hkv = l.kv_heads, n = l.n, dh = l.d_head;

  const cudnn_api& a = loaded();
  (void)a;
  cudnnHandle_t handle = static_cast<cudnnHandle_t>(session.handle());
  std::vector<cudnnBackendDescriptor_t> raw_ops;
  for (const descriptor& op : st.ops) raw_ops.push_back(op.get());
  st.graph = descriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  st.graph
      .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, raw_ops.data(),
           static_cast<std::int64_t>(raw_ops.size()))
      .set(k_graph_handle, CUDNN_TYPE_HANDLE, &handle)
      .finalize();

  // Heuristics, then the first engine configuration whose plan finalizes.
  std::string tried;
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    descriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics");
    heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, st.graph)
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
    if (!heur.try_finalize()) {
      tried += " heuristics mode " + std::to_string(static_cast<int>(mode)) + " refused the graph;";
      continue;
    }
    constexpr std::int64_t k_max_configs = 16;
    std::vector<descriptor> configs;
    std::vector<cudnnBackendDescriptor_t> raw(k_max_configs);
    for (std::int64_t i = 0; i < k_max_configs; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine configuration");
      raw[static_cast<std::size_t>(i)] = configs.back().get();
    }
    std::int64_t found = 0;
    check(a.get_attr(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, k_max_configs, &found,
                     raw.data()),
          "engine heuristics results");
    for (std::int64_t i = 0; i < found && i < k_max_configs; ++i) {
      descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
      plan.set(k_plan_handle, CUDNN_TYPE_HANDLE, &handle)
          .set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[static_cast<std::size_t>(i)]);
      if (!plan.try_finalize()) continue;
      std::int64_t bytes = 0, count = 0;
      check(a.get_attr(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count, &bytes),
            "execution plan workspace size");
      st.plan = std::move(plan);
      m_workspace_bytes = static_cast<std::size_t>(bytes);
      return;
    }
    tried += " heuristics mode " + std::to_string(static_cast<int>(mode)) + ": " + std::to_string(found) +
             " engine configurations, none finalized;";
  }
  throw runtime_error("cuDNN (" + std::to_string(a.version) + ") has no engine for this causal attention (B=" +
                      std::to_string(B) + " H=" + std::to_string(H) + " kv=" + std::to_string(Hkv) +
                      " n=" + std::to_string(n) + " d_head=" + std::to_string(dh) + "):" + tried);
}

cudnn_sdpa::~cudnn_sdpa() = default;

void cudnn_sdpa_check_descriptors(const sdpa_layout& l) {
  if (const std::string why = sdpa_shape_problem(l); !why.empty())
    throw runtime_error("fused attention cannot take this shape: " + why);
  cudnn_sdpa::state st;
  st.build_ops(l);
}

void cudnn_sdpa::run(void* workspace) {
  state& st = *m_state;
  const cudnn_api& a = loaded();
  if (!st.pack_made || st.pack_workspace != workspace) {
    // Host pointers for the by-value scalars; device pointers for the rest.
    const std::int64_t uids[] = {uid_q, uid_k, uid_v, uid_o, uid_scale, uid_neg_inf};
    void* pointers[] = {
        const_cast<void*>(st.q), const_cast<void*>(st.k), const_cast<void*>(st.v), st.o, &st.scale, &st.neg_inf};
    descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack");
    pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids, 6)
        .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers, 6)
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace)
        .finalize();
    st.pack = std::move(pack);
    st.pack_workspace = workspace;
    st.pack_made = true;
  }
  check(a.execute(static_cast<cudnnHandle_t>(m_session.handle()), st.plan.get(), st.pack.get()),
        "execute fused attention");
}

}  // namespace modsim::kernels::cuda
