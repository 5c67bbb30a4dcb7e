#pragma once
// A fork-join pool for the CPU backend's non-GEMM loops. Workers sleep on a condition
// variable between jobs, so they do not compete with OpenBLAS's threads during a GEMM; the
// backend never runs a parallel loop and a BLAS call at the same time. The caller works on
// the job too and returns when all blocks are done, without waiting for a helper that has
// not woken up yet (on a loaded machine it may not get a core soon). parallel_for does not
// allocate. A pool that runs jobs back to back (the decode step: a dozen short products and
// loops per layer) can let its workers spin for a while after each job before they sleep,
// since a condition-variable wake-up can cost more than such a job.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace modsim::kernels::cpu {

class thread_pool {
 public:
  // `threads` participants in all, the calling thread included (>= 1).
  // `spin_us`: how long a worker polls for the next job before sleeping (0: it sleeps at once).
  explicit thread_pool(int threads, int spin_us = 0);
  ~thread_pool();
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  int size() const { return static_cast<int>(m_workers.size()) + 1; }

  // Calls body(begin, end) on disjoint blocks of at most `grain` items covering [0, n);
  // participants take blocks dynamically, so uneven rows (causal softmax) balance out.
  // Returns when every block has run. `body` must not throw.
  template <class F>
  void parallel_for(std::int64_t n, std::int64_t grain, F&& body) {
    using fn_type = std::remove_reference_t<F>;
    dispatch(
        n, grain, [](void* ctx, std::int64_t b, std::int64_t e) { (*static_cast<fn_type*>(ctx))(b, e); },
        const_cast<void*>(static_cast<const void*>(&body)));
  }

 private:
  using chunk_fn = void (*)(void*, std::int64_t, std::int64_t);
  struct job {
    chunk_fn fn = nullptr;
    void* ctx = nullptr;
    std::int64_t n = 0;
    std::int64_t grain = 1;
    std::uint64_t generation = 0;
  };
  void dispatch(std::int64_t n, std::int64_t grain, chunk_fn fn, void* ctx);
  void work_loop();
  // Runs blocks of `j` until none is left or `j` is no longer the current job.
  void take_blocks(const job& j);

  // A claim is (generation << index_bits) | next index, so a helper that wakes up late,
  // after its job finished, cannot claim blocks of the next one; the caller waits for the
  // blocks to be done, never for helpers to wake up.
  static constexpr int index_bits = 40;
  std::vector<std::thread> m_workers;
  std::mutex m_mutex;
  std::condition_variable m_start;
  job m_job;  // guarded by m_mutex
  bool m_stop = false;
  int m_spin_us = 0;
  std::atomic<std::uint64_t> m_claim{0};
  std::atomic<std::int64_t> m_completed{0};
};

}  // namespace modsim::kernels::cpu
