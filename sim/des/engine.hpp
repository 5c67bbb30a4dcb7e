#pragma once
// A small discrete-event engine in the manner of SimPy and simcpp20: a priority queue of
// actions ordered by (time, sequence number), so events at equal times run in the order
// they were scheduled. No I/O, no globals; statistics are gathered by observers.
//
// Times are seconds of simulated time, starting at 0. An action may schedule further
// events (at now() or later) and may read now(); it must not call step/run itself.
#include <cstdint>
#include <functional>
#include <vector>

namespace modsim::sim::des {

class engine {
 public:
  using action = std::function<void()>;
  // Called after every event with its time (seconds) and sequence number.
  using observer = std::function<void(double time_s, std::uint64_t seq)>;

  double now() const { return m_now; }

  // Runs `a` at now() + delay_s. delay_s must be finite and >= 0 (else modsim::error).
  // Returns the event's sequence number (0, 1, 2, ... in scheduling order).
  std::uint64_t schedule(double delay_s, action a);
  // Runs `a` at time_s >= now().
  std::uint64_t schedule_at(double time_s, action a);

  // Runs the earliest event; false when none is pending.
  bool step();
  // Runs events until none is pending.
  void run();
  // Runs every event with time <= t, then sets now() to t (when t > now()). Events after t
  // stay pending.
  void run_until(double t);

  bool empty() const { return m_heap.empty(); }
  std::size_t pending() const { return m_heap.size(); }
  // The time of the earliest pending event; +infinity when none.
  double next_time() const;
  std::uint64_t events_run() const { return m_events_run; }

  void add_observer(observer o) { m_observers.push_back(std::move(o)); }

 private:
  struct entry {
    double time;
    std::uint64_t seq;
    std::uint32_t slot;  // index into m_actions
  };
  struct later {
    bool operator()(const entry& a, const entry& b) const { return a.time != b.time ? a.time > b.time : a.seq > b.seq; }
  };

  double m_now = 0.0;
  std::uint64_t m_next_seq = 0;
  std::uint64_t m_events_run = 0;
  std::vector<entry> m_heap;          // a binary min-heap under `later`
  std::vector<action> m_actions;      // actions by slot; slots are reused
  std::vector<std::uint32_t> m_free;  // free slots
  std::vector<observer> m_observers;
};

}  // namespace modsim::sim::des
