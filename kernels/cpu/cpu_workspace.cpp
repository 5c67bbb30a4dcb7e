#include "kernels/cpu/cpu_workspace.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cpu/thread_pool.hpp"
#include "kernels/init.hpp"
#include "core/error.hpp"

namespace modsim::kernels::cpu {

namespace {

void fill(std::vector<float>& v, std::uint64_t seed, const init_rule& rule, thread_pool& pool) {
  const std::span<float> values(v);
  pool.parallel_for(static_cast<std::int64_t>(v.size()), 1 << 16, [&](std::int64_t b, std::int64_t e) {
    fill_normal(values, seed, rule.stream, rule.mean, rule.std_dev, b, e);
  });
}

}  // namespace

cpu_workspace::cpu_workspace(const block_shape& s, const workspace_options& options, thread_pool& pool)
    : workspace(s, dtype::fp32) {
  if (options.input_copies < 1)
    throw input_error("", "workspace.input_copies", "must be at least 1, got " + std::to_string(options.input_copies));
  const std::int64_t T = s.tokens(), d = s.d_model;
  const std::int64_t B = s.batch, k = s.routed_tokens();
  const bool moe = s.variant != moe_variant::none;
  const std::int64_t E = moe ? s.experts : 0;

  for (int i = 0; i < tensor_count; ++i) {
    const auto t = static_cast<tensor>(i);
    if (t == tensor::x || t == tensor::out) continue;  // per input copy, below
    const auto n = static_cast<std::size_t>(tensor_elements(t, s));
    if (is_index(t))
      m_index_buffers[slot_index(t)].assign(n, 0);
    else
      m_buffers[slot_index(t)].assign(n, 0.0f);
  }

  m_topk_pairs.resize(static_cast<std::size_t>(T));
  if (moe) {
    m_expert_in.assign(static_cast<std::size_t>(T * d), 0.0f);
    m_expert_out.assign(static_cast<std::size_t>(T * d), 0.0f);
    m_expert_rows.assign(static_cast<std::size_t>(T), 0);
    m_expert_offsets.assign(static_cast<std::size_t>(E + 1), 0);
    m_expert_fill.assign(static_cast<std::size_t>(E), 0);
  }

  // Weights and inputs: random, never zero (kernels/init.hpp, shared by all backends).
  for (int i = 0; i < tensor_count; ++i) {
    const auto t = static_cast<tensor>(i);
    auto& v = m_buffers[slot_index(t)];
    if (const auto rule = initial_values(t, s); rule && !v.empty()) fill(v, options.seed, *rule, pool);
  }

  const auto copies = static_cast<std::size_t>(options.input_copies);
  m_x.resize(copies);
  m_out.resize(copies);
  m_scattered.resize(copies);
  for (std::size_t c = 0; c < copies; ++c) {
    m_x[c].assign(static_cast<std::size_t>(T * d), 0.0f);
    fill(m_x[c], options.seed, *initial_values(tensor::x, s, static_cast<int>(c)), pool);
    m_out[c] = m_x[c];
    m_scattered[c].reserve(static_cast<std::size_t>(B * k));
  }
}

void cpu_workspace::check_float(tensor t) const {
  if (is_index(t))
    throw runtime_error("workspace: tensor '" + std::string(to_string(t)) + "' holds indices, not floats");
}

void cpu_workspace::check_index(tensor t) const {
  if (!is_index(t))
    throw runtime_error("workspace: tensor '" + std::string(to_string(t)) + "' holds floats, not indices");
}

float* cpu_workspace::data(tensor t) {
  if (t == tensor::x) return m_x[static_cast<std::size_t>(m_slot)].data();
  if (t == tensor::out) return m_out[static_cast<std::size_t>(m_slot)].data();
  return m_buffers[slot_index(t)].data();
}

const float* cpu_workspace::data(tensor t) const {
  if (t == tensor::x) return m_x[static_cast<std::size_t>(m_slot)].data();
  if (t == tensor::out) return m_out[static_cast<std::size_t>(m_slot)].data();
  return m_buffers[slot_index(t)].data();
}

std::int32_t* cpu_workspace::indices(tensor t) { return m_index_buffers[slot_index(t)].data(); }

std::int64_t cpu_workspace::size(tensor t) const {
  if (t == tensor::x || t == tensor::out) return static_cast<std::int64_t>(m_x.front().size());
  if (is_index(t)) return static_cast<std::int64_t>(m_index_buffers[slot_index(t)].size());
  return static_cast<std::int64_t>(m_buffers[slot_index(t)].size());
}

std::int64_t cpu_workspace::bytes() const {
  std::int64_t total = 0;
  for (const auto& b : m_buffers) total += static_cast<std::int64_t>(b.size() * sizeof(float));
  for (const auto& b : m_index_buffers) total += static_cast<std::int64_t>(b.size() * sizeof(std::int32_t));
  for (const auto& b : m_x) total += 2 * static_cast<std::int64_t>(b.size() * sizeof(float));
  total += static_cast<std::int64_t>((m_expert_in.size() + m_expert_out.size()) * sizeof(float));
  return total;
}

void cpu_workspace::upload(tensor t, std::span<const float> values) {
  check_float(t);
  if (static_cast<std::int64_t>(values.size()) > size(t))
    throw runtime_error("workspace: upload of " + std::to_string(values.size()) + " values into '" +
                        std::string(to_string(t)) + "' of " + std::to_string(size(t)));
  std::copy(values.begin(), values.end(), data(t));
  if (t == tensor::x) {
    auto& out = m_out[static_cast<std::size_t>(m_slot)];
    const auto& x = m_x[static_cast<std::size_t>(m_slot)];
    std::copy(x.begin(), x.end(), out.begin());
    scattered_rows().clear();
  }
}

std::vector<float> cpu_workspace::download(tensor t) const {
  check_float(t);
  const float* p = data(t);
  return std::vector<float>(p, p + size(t));
}

void cpu_workspace::upload_indices(tensor t, std::span<const std::int32_t> values) {
  check_index(t);
  auto& buf = m_index_buffers[slot_index(t)];
  if (values.size() > buf.size())
    throw runtime_error("workspace: upload of " + std::to_string(values.size()) + " indices into '" +
                        std::string(to_string(t)) + "' of " + std::to_string(buf.size()));
  const std::int64_t limit = t == tensor::routed_index ? shape().seq_len : shape().router_experts();
  const std::int64_t lowest = t == tensor::routed_index ? 0 : -1;
  for (const std::int32_t v : values)
    if (v < lowest || v >= limit)
      throw runtime_error("workspace: index " + std::to_string(v) + " out of range for '" + std::string(to_string(t)) +
                          "'");
  std::copy(values.begin(), values.end(), buf.begin());
}

std::vector<std::int32_t> cpu_workspace::download_indices(tensor t) const {
  check_index(t);
  return m_index_buffers[slot_index(t)];
}

void cpu_workspace::rotate() { m_slot = (m_slot + 1) % static_cast<int>(m_x.size()); }

}  // namespace modsim::kernels::cpu
