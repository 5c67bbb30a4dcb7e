#include "sim/des/engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.hpp"

namespace modsim::sim::des {

std::uint64_t engine::schedule(double delay_s, action a) {
  if (!std::isfinite(delay_s) || delay_s < 0) {
    throw runtime_error("des::engine: an event was scheduled with delay " + std::to_string(delay_s) +
                        " s (must be finite and >= 0)");
  }
  return schedule_at(m_now + delay_s, std::move(a));
}

std::uint64_t engine::schedule_at(double time_s, action a) {
  if (!std::isfinite(time_s) || time_s < m_now) {
    throw runtime_error("des::engine: an event was scheduled at " + std::to_string(time_s) + " s, before now (" +
                        std::to_string(m_now) + " s)");
  }
  std::uint32_t slot = 0;
  if (m_free.empty()) {
    slot = static_cast<std::uint32_t>(m_actions.size());
    m_actions.push_back(std::move(a));
  } else {
    slot = m_free.back();
    m_free.pop_back();
    m_actions[slot] = std::move(a);
  }
  const std::uint64_t seq = m_next_seq++;
  m_heap.push_back({time_s, seq, slot});
  std::push_heap(m_heap.begin(), m_heap.end(), later{});
  return seq;
}

bool engine::step() {
  if (m_heap.empty()) return false;
  std::pop_heap(m_heap.begin(), m_heap.end(), later{});
  const entry e = m_heap.back();
  m_heap.pop_back();
  // Move the action out before running it: it may schedule events, which may reuse the slot.
  action a = std::move(m_actions[e.slot]);
  m_actions[e.slot] = nullptr;
  m_free.push_back(e.slot);
  m_now = e.time;
  a();
  ++m_events_run;
  for (const observer& o : m_observers) o(e.time, e.seq);
  return true;
}

void engine::run() {
  while (step()) {
  }
}

void engine::run_until(double t) {
  while (!m_heap.empty() && m_heap.front().time <= t) step();
  if (t > m_now) m_now = t;
}

double engine::next_time() const {
  return m_heap.empty() ? std::numeric_limits<double>::infinity() : m_heap.front().time;
}

}  // namespace modsim::sim::des
