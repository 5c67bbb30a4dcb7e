#pragma once
// The statistics of a serving run (serve_summary), gathered as an observer: latency
// percentiles (sim/common/stats.hpp), throughput, requests in system (time-averaged), decode
// batch size, KV peak, routing and execution totals.
#include <cstdint>
#include <vector>

#include "sim/des/serving_types.hpp"

namespace modsim::sim::des {

class summary_observer final : public serve_observer {
 public:
  void on_arrival(const request& r) override;
  void on_step(const step_record& s) override;
  void on_preempt(std::int64_t id, double t) override;
  void on_finish(const request_record& r) override;

  // The summary of `requests` requests; the KV block sizes and the event count are the
  // simulation's to fill in.
  serve_summary finish(std::int64_t requests) const;

 private:
  void advance(double t);
  serve_summary m_sum;
  bool m_started = false;
  double m_first_arrival = 0, m_last_finish = 0, m_last_t = 0, m_area = 0;
  std::int64_t m_in_system = 0, m_decode_steps = 0, m_decode_seqs = 0;
  std::vector<double> m_ttft, m_tpot, m_latency;
};

}  // namespace modsim::sim::des
