#include "sim/cost/kernel_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "core/error.hpp"

namespace modsim::sim {

double predict_row(const kernel_row& r, const kernel_params& p, const hardware_spec& hw) {
  if (!r.whole_block && r.timing == timing_mode::in_block) {
    double t = 0;
    for (const kernel_work& k : r.kernels) t += p.gap_s + kernel_device_s(k, r.type, p, hw, true);
    return t;
  }
  std::vector<double> device;
  device.reserve(r.kernels.size());
  for (std::size_t i = 0; i < r.kernels.size(); ++i)
    device.push_back(kernel_device_s(r.kernels[i], r.type, p, hw, r.whole_block && i > 0));
  return p.event_s + sequence_s(device, p);
}

namespace {

// Which parameter a slot of the unknown vector is, and how it maps from the real line.
enum class transform { positive, fraction };
struct slot {
  double* (*target)(kernel_params&, int);
  int kind;  // kernel class, -1 for the global terms
  transform tr;
};

double from_free(double u, transform t) { return t == transform::positive ? std::exp(u) : 1.0 / (1.0 + std::exp(-u)); }
double to_free(double v, transform t) {
  if (t == transform::positive) return std::log(std::max(v, 1e-15));
  const double c = std::clamp(v, 1e-6, 1 - 1e-6);
  return std::log(c / (1 - c));
}

double* event_of(kernel_params& p, int) { return &p.event_s; }
double* host_of(kernel_params& p, int) { return &p.host_s; }
double* gap_of(kernel_params& p, int) { return &p.gap_s; }
double* warm_of(kernel_params& p, int) { return &p.warm_fraction; }
double* floor_of(kernel_params& p, int k) { return &p.kinds[static_cast<std::size_t>(k)].floor_s; }
double* compute_of(kernel_params& p, int k) { return &p.kinds[static_cast<std::size_t>(k)].compute_efficiency; }
double* bandwidth_of(kernel_params& p, int k) { return &p.kinds[static_cast<std::size_t>(k)].bandwidth_efficiency; }
double* item_of(kernel_params& p, int k) { return &p.kinds[static_cast<std::size_t>(k)].per_item_s; }

bool is_gemm(kernel_kind k) { return k == kernel_kind::gemm || k == kernel_kind::batched_gemm; }
bool is_serial(kernel_kind k) { return k == kernel_kind::topk || k == kernel_kind::rank || k == kernel_kind::choice; }

std::vector<slot> slots_for(const std::set<int>& used_kinds, bool any_block, bool any_in_block) {
  std::vector<slot> s;
  s.push_back({event_of, -1, transform::positive});
  s.push_back({host_of, -1, transform::positive});
  if (any_block || any_in_block) {
    s.push_back({gap_of, -1, transform::positive});
    s.push_back({warm_of, -1, transform::fraction});
  }
  for (int k : used_kinds) {
    const auto kind = static_cast<kernel_kind>(k);
    s.push_back({floor_of, k, transform::positive});
    if (is_gemm(kind)) {
      s.push_back({compute_of, k, transform::fraction});
      s.push_back({bandwidth_of, k, transform::fraction});
    } else if (is_serial(kind)) {
      s.push_back({item_of, k, transform::positive});
    } else if (kind != kernel_kind::memset) {
      s.push_back({bandwidth_of, k, transform::fraction});
    }
  }
  return s;
}

kernel_params apply(const kernel_params& base, const std::vector<slot>& slots, const std::vector<double>& u) {
  kernel_params p = base;
  for (std::size_t i = 0; i < slots.size(); ++i) *slots[i].target(p, slots[i].kind) = from_free(u[i], slots[i].tr);
  return p;
}

std::vector<double> free_of(const kernel_params& p, const std::vector<slot>& slots) {
  kernel_params q = p;
  std::vector<double> u;
  for (const slot& s : slots) u.push_back(to_free(*s.target(q, s.kind), s.tr));
  return u;
}

// Solves (A + damping) x = b for a small symmetric positive definite A (Cholesky); false when
// it is not positive definite.
bool solve_spd(std::vector<double> A, std::vector<double>& b, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    double d = A[j * n + j];
    for (std::size_t k = 0; k < j; ++k) d -= A[j * n + k] * A[j * n + k];
    if (!(d > 0)) return false;
    d = std::sqrt(d);
    A[j * n + j] = d;
    for (std::size_t i = j + 1; i < n; ++i) {
      double v = A[i * n + j];
      for (std::size_t k = 0; k < j; ++k) v -= A[i * n + k] * A[j * n + k];
      A[i * n + j] = v / d;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    double v = b[i];
    for (std::size_t k = 0; k < i; ++k) v -= A[i * n + k] * b[k];
    b[i] = v / A[i * n + i];
  }
  for (std::size_t i = n; i-- > 0;) {
    double v = b[i];
    for (std::size_t k = i + 1; k < n; ++k) v -= A[k * n + i] * b[k];
    b[i] = v / A[i * n + i];
  }
  return true;
}

constexpr double k_soft_scale = 0.05;  // soft-L1 scale of the log-ratio (≈ 5 %)
constexpr double k_prior = 0.02;       // pull of each unknown towards its default (free units)

struct problem {
  const hardware_spec& hw;
  const std::vector<kernel_row>& rows;
  std::vector<slot> slots;
  kernel_params base;
  std::vector<double> prior;   // free values of the defaults
  std::vector<double> robust;  // per-row weights of the current reweighting stage

  // Residuals: rows, then one prior term per unknown.
  std::vector<double> residuals(const std::vector<double>& u) const {
    const kernel_params p = apply(base, slots, u);
    std::vector<double> r;
    r.reserve(rows.size() + u.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const double pred = predict_row(rows[i], p, hw);
      const double lr = pred > 0 ? std::log(pred / rows[i].measured_s) : 10.0;
      r.push_back(rows[i].weight * robust[i] * lr);
    }
    for (std::size_t j = 0; j < u.size(); ++j) r.push_back(k_prior * (u[j] - prior[j]));
    return r;
  }
  static double cost(const std::vector<double>& r) {
    double c = 0;
    for (double v : r) c += v * v;
    return c;
  }
  void reweight(const std::vector<double>& u) {
    const kernel_params p = apply(base, slots, u);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const double pred = predict_row(rows[i], p, hw);
      const double z = pred > 0 ? std::log(pred / rows[i].measured_s) / k_soft_scale : 10.0;
      robust[i] = std::pow(1 + z * z, -0.25);  // sqrt of the soft-L1 weight 1/sqrt(1+z²)
    }
  }
};

// Levenberg–Marquardt from u; returns iterations taken.
int levenberg_marquardt(const problem& pb, std::vector<double>& u, int max_iterations) {
  const std::size_t n = u.size();
  std::vector<double> r = pb.residuals(u);
  double c = problem::cost(r);
  double lambda = 1e-3;
  int it = 0;
  for (; it < max_iterations; ++it) {
    const std::size_t m = r.size();
    std::vector<double> J(m * n);
    for (std::size_t j = 0; j < n; ++j) {
      std::vector<double> v = u;
      const double h = 1e-5;
      v[j] += h;
      const std::vector<double> rj = pb.residuals(v);
      for (std::size_t i = 0; i < m; ++i) J[i * n + j] = (rj[i] - r[i]) / h;
    }
    std::vector<double> A(n * n, 0.0), g(n, 0.0);
    for (std::size_t i = 0; i < m; ++i) {
      const double* row = &J[i * n];
      for (std::size_t a = 0; a < n; ++a) {
        if (row[a] == 0) continue;
        g[a] += row[a] * r[i];
        for (std::size_t b = 0; b <= a; ++b) A[a * n + b] += row[a] * row[b];
      }
    }
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = a + 1; b < n; ++b) A[a * n + b] = A[b * n + a];
    bool improved = false;
    for (int tries = 0; tries < 12 && !improved; ++tries) {
      std::vector<double> D = A;
      for (std::size_t a = 0; a < n; ++a) D[a * n + a] += lambda * std::max(A[a * n + a], 1e-12) + 1e-12;
      std::vector<double> step(n);
      for (std::size_t a = 0; a < n; ++a) step[a] = -g[a];
      if (!solve_spd(D, step, n)) {
        lambda *= 10;
        continue;
      }
      std::vector<double> v = u;
      for (std::size_t a = 0; a < n; ++a) v[a] += std::clamp(step[a], -3.0, 3.0);
      std::vector<double> rv = pb.residuals(v);
      const double cv = problem::cost(rv);
      if (cv < c) {
        const double gain = (c - cv) / std::max(c, 1e-300);
        u = std::move(v);
        r = std::move(rv);
        c = cv;
        lambda = std::max(lambda / 3, 1e-9);
        improved = true;
        if (gain < 1e-6) return it + 1;  // converged: a millionth of the cost
      } else {
        lambda *= 4;
      }
    }
    if (!improved) break;
  }
  return it;
}

}  // namespace

kernel_fit_result fit_kernel_params(const hardware_spec& hw, const std::vector<kernel_row>& rows) {
  if (rows.empty()) throw input_error("", "--measurements", "no rows to fit the kernel model on");
  std::set<int> used;
  bool any_block = false, any_in_block = false;
  for (const kernel_row& r : rows) {
    if (!(r.measured_s > 0)) throw input_error("", "median_s", "the kernel model needs positive measured times");
    for (const kernel_work& k : r.kernels) used.insert(static_cast<int>(k.kind));
    any_block = any_block || r.whole_block;
    any_in_block = any_in_block || (!r.whole_block && r.timing == timing_mode::in_block);
  }
  const kernel_params defaults = default_kernel_params(hw);
  problem pb{hw, rows, slots_for(used, any_block, any_in_block), defaults, {}, std::vector<double>(rows.size(), 1.0)};
  pb.prior = free_of(defaults, pb.slots);

  // Two starts: small kernels bound by the host's enqueue rate, or by their own floor.
  std::array<kernel_params, 2> starts{defaults, defaults};
  starts[0].host_s = 6e-6;
  starts[0].event_s = 0.5e-6;
  starts[1].host_s = 0.5e-6;
  starts[1].event_s = 5e-6;
  kernel_fit_result best;
  double best_cost = -1;
  for (const kernel_params& start : starts) {
    problem trial = pb;
    std::vector<double> u = free_of(start, trial.slots);
    int iterations = 0;
    for (int stage = 0; stage < 3; ++stage) {
      iterations += levenberg_marquardt(trial, u, 60);
      trial.reweight(u);
    }
    iterations += levenberg_marquardt(trial, u, 60);
    const double c = problem::cost(trial.residuals(u));
    if (best_cost < 0 || c < best_cost) {
      best_cost = c;
      best.params = apply(defaults, trial.slots, u);
      best.iterations = iterations;
    }
  }
  double sq = 0;
  for (const kernel_row& r : rows) {
    const double lr = std::log(predict_row(r, best.params, hw) / r.measured_s);
    sq += lr * lr;
  }
  best.rows = static_cast<int>(rows.size());
  best.rms_log_error = std::sqrt(sq / double(rows.size()));
  return best;
}

}  // namespace modsim::sim
