// kernels/cpu/thread_pool.cpp: every item is visited exactly once, whatever the split.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "kernels/cpu/thread_pool.hpp"

namespace modsim::kernels::cpu {
namespace {

TEST(ThreadPool, ParallelForVisitsEveryItemExactlyOnce) {
  for (int threads : {1, 2, 5}) {
    thread_pool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (std::int64_t n : {0, 1, 7, 1000}) {
      for (std::int64_t grain : {1, 3, 64, 5000}) {
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
        pool.parallel_for(n, grain, [&](std::int64_t b, std::int64_t e) {
          EXPECT_LE(e - b, grain);
          for (std::int64_t i = b; i < e; ++i) hits[static_cast<std::size_t>(i)]++;
        });
        for (const auto& h : hits) ASSERT_EQ(h.load(), 1) << threads << " threads, n " << n << ", grain " << grain;
      }
    }
  }
}

TEST(ThreadPool, RunsManySmallJobsBackToBack) {
  // Sleeping workers, and workers that poll for the next job before they sleep.
  for (int spin_us : {0, 200}) {
    thread_pool pool(3, spin_us);
    std::atomic<std::int64_t> total{0};
    for (int job = 0; job < 2000; ++job) {
      pool.parallel_for(8, 1, [&](std::int64_t b, std::int64_t e) { total += e - b; });
    }
    EXPECT_EQ(total.load(), 16000) << "spin " << spin_us << " us";
  }
}

TEST(ThreadPool, SpinningWorkersStillTakeAJobAfterSleeping) {
  thread_pool pool(2, 50);
  std::atomic<std::int64_t> total{0};
  for (int job = 0; job < 3; ++job) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the spin: the worker sleeps
    pool.parallel_for(100, 1, [&](std::int64_t b, std::int64_t e) { total += e - b; });
  }
  EXPECT_EQ(total.load(), 300);
}

}  // namespace
}  // namespace modsim::kernels::cpu
