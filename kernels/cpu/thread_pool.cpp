#include "kernels/cpu/thread_pool.hpp"

#include <algorithm>
#include <chrono>

namespace modsim::kernels::cpu {

thread_pool::thread_pool(int threads, int spin_us) : m_spin_us(std::max(0, spin_us)) {
  const int workers = std::max(1, threads) - 1;
  m_workers.reserve(static_cast<std::size_t>(workers));
  for (int i = 0; i < workers; ++i) m_workers.emplace_back([this] { work_loop(); });
}

thread_pool::~thread_pool() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_start.notify_all();
  for (auto& t : m_workers) t.join();
}

void thread_pool::take_blocks(const job& j) {
  const std::uint64_t tag = j.generation << index_bits;
  const auto mask = (std::uint64_t{1} << index_bits) - 1;
  std::uint64_t claim = m_claim.load(std::memory_order_acquire);
  for (;;) {
    if ((claim & ~mask) != tag) return;  // another job is current
    const auto begin = static_cast<std::int64_t>(claim & mask);
    if (begin >= j.n) return;
    if (!m_claim.compare_exchange_weak(claim, claim + static_cast<std::uint64_t>(j.grain), std::memory_order_acq_rel))
      continue;
    const std::int64_t end = std::min(j.n, begin + j.grain);
    j.fn(j.ctx, begin, end);
    m_completed.fetch_add(end - begin, std::memory_order_acq_rel);
    claim = m_claim.load(std::memory_order_acquire);
  }
}

void thread_pool::dispatch(std::int64_t n, std::int64_t grain, chunk_fn fn, void* ctx) {
  if (n <= 0) return;
  grain = std::max<std::int64_t>(1, grain);
  if (m_workers.empty() || n <= grain) {
    for (std::int64_t b = 0; b < n; b += grain) fn(ctx, b, std::min(n, b + grain));
    return;
  }
  job j;
  {
    std::lock_guard lock(m_mutex);
    m_job.fn = fn;
    m_job.ctx = ctx;
    m_job.n = n;
    m_job.grain = grain;
    m_job.generation = (m_job.generation + 1) & ((std::uint64_t{1} << (64 - index_bits)) - 1);
    if (m_job.generation == 0) m_job.generation = 1;  // 0 means no job yet
    m_completed.store(0, std::memory_order_relaxed);
    m_claim.store(m_job.generation << index_bits, std::memory_order_release);
    j = m_job;
  }
  m_start.notify_all();
  take_blocks(j);
  while (m_completed.load(std::memory_order_acquire) < n) std::this_thread::yield();
}

void thread_pool::work_loop() {
  std::uint64_t seen = 0;
  for (;;) {
    if (m_spin_us > 0) {
      // Poll the claim word (it carries the current job's generation) until a new job shows
      // or the spin time is up; then sleep as usual.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(m_spin_us);
      for (int i = 0; (m_claim.load(std::memory_order_acquire) >> index_bits) == seen; ++i) {
        if (i % 64 == 63 && std::chrono::steady_clock::now() > until) break;
      }
    }
    job j;
    {
      std::unique_lock lock(m_mutex);
      m_start.wait(lock, [&] { return m_stop || m_job.generation != seen; });
      if (m_stop) return;
      j = m_job;
      seen = j.generation;
    }
    take_blocks(j);
  }
}

}  // namespace modsim::kernels::cpu
