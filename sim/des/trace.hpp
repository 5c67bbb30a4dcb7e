#pragma once
// Chrome trace-event JSON (the format chrome://tracing and Perfetto open) of simulated
// timelines: {"traceEvents": [...]} with "M" metadata events naming processes and tracks,
// "X" complete events (ts and dur in microseconds) and "C" counters. The text is built, not
// written: callers write it where they like.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/des/execution.hpp"
#include "sim/des/serving.hpp"

namespace modsim::sim::des {

// A forward pass / step: one process `title`, a "host" track (enqueue spans, sync waits) and
// one track per stream (kernels, idle gaps waiting on the host).
std::string chrome_trace(const timeline& tl, const std::string& title, int streams = 1);

// A step over several GPUs (sim/des/parallel_step.hpp): one process per GPU (pipeline stage),
// each with a host track and its four streams (compute, TP/EP collectives, pipeline sends, DP
// gradient buckets), so that the collectives show beside the compute they overlap or hold up.
std::string chrome_trace_parallel(const timeline& tl, const std::string& title);

// A serving run, gathered as an observer: a "steps" track (one span per step, with its batch
// in args; one per data-parallel replica) and counters (running, waiting, KV blocks) in process 1, and one track per
// request in process 2 (queued, prefill, decode; a preemption ends a span and queues again).
class serve_trace final : public serve_observer {
 public:
  explicit serve_trace(std::string title) : m_title(std::move(title)) {}
  void on_arrival(const request& r) override;
  void on_admit(std::int64_t id, double t, bool recompute) override;
  void on_step(const step_record& s) override;
  void on_first_token(std::int64_t id, double t) override;
  void on_resume(std::int64_t id, double t) override;
  void on_preempt(std::int64_t id, double t) override;
  void on_finish(const request_record& r) override;
  // The whole trace (call after the run).
  std::string json() const;

 private:
  struct open_span {
    std::string name;
    double start_s = 0;
  };
  void close(std::int64_t id, double t);
  void open(std::int64_t id, std::string name, double t);
  std::string m_title;
  std::vector<std::string> m_events;  // serialised events, in the order they ended
  std::vector<open_span> m_open;      // by request id (ids may be sparse)
  std::vector<std::int64_t> m_ids;    // requests seen, in arrival order
  int m_replicas = 1;                 // data-parallel replicas (a steps track each)
};

// JSON string escaping (quotes not included).
std::string json_escape(const std::string& s);

}  // namespace modsim::sim::des
