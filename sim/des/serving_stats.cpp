// The statistics of a serving run (sim/des/serving_stats.hpp).
#include "sim/des/serving_stats.hpp"

#include <algorithm>

namespace modsim::sim::des {

void summary_observer::on_arrival(const request& r) {
  advance(r.arrival_s);
  if (!m_started) {
    m_first_arrival = r.arrival_s;
    m_started = true;
  }
  ++m_in_system;
}

void summary_observer::on_step(const step_record& s) {
  ++m_sum.steps;
  m_sum.kv_peak_blocks = std::max(m_sum.kv_peak_blocks, s.kv_blocks);
  m_sum.decode_decisions += s.decode_decisions;
  m_sum.decode_routed += s.routed_decode;
  m_sum.dropped += s.dropped;
  m_sum.gpu_busy_s += s.exec.gpu_busy_s;
  m_sum.gpu_wait_host_s += s.exec.gpu_wait_host_s;
  m_sum.host_sync_wait_s += s.exec.host_sync_wait_s;
  m_sum.matmul_flops += s.exec.matmul_flops;
  m_sum.wasted_matmul_flops += s.exec.wasted_matmul_flops;
  if (s.decode_seqs > 0) {
    ++m_decode_steps;
    m_decode_seqs += s.decode_seqs;
  }
}

void summary_observer::on_preempt(std::int64_t /*id*/, double /*t*/) { ++m_sum.preemptions; }

void summary_observer::on_finish(const request_record& r) {
  advance(r.finish_s);
  --m_in_system;
  m_last_finish = r.finish_s;
  ++m_sum.completed;
  m_sum.output_tokens += r.output_tokens;
  m_ttft.push_back(r.ttft_s());
  m_latency.push_back(r.latency_s());
  if (r.output_tokens > 1) m_tpot.push_back(r.tpot_s());
}

serve_summary summary_observer::finish(std::int64_t requests) const {
  serve_summary s = m_sum;
  s.requests = requests;
  s.ttft_s = percentiles_of(m_ttft);
  s.tpot_s = percentiles_of(m_tpot);
  s.latency_s = percentiles_of(m_latency);
  s.duration_s = m_started ? m_last_finish - m_first_arrival : 0.0;
  s.throughput_tok_s = s.duration_s > 0 ? static_cast<double>(s.output_tokens) / s.duration_s : 0.0;
  s.mean_in_system = s.duration_s > 0 ? m_area / s.duration_s : 0.0;
  s.mean_decode_batch =
      m_decode_steps > 0 ? static_cast<double>(m_decode_seqs) / static_cast<double>(m_decode_steps) : 0.0;
  s.decode_routed_fraction =
      s.decode_decisions > 0 ? static_cast<double>(s.decode_routed) / static_cast<double>(s.decode_decisions) : 0.0;
  return s;
}

void summary_observer::advance(double t) {
  if (m_started) m_area += static_cast<double>(m_in_system) * (t - m_last_t);
  m_last_t = t;
}

}  // namespace modsim::sim::des
