// kernels/cpu/thread_pool.cpp: every item is visited exactly once, whatever the split.
#include <gtest/gtest.h>

#include <atomic>
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
  thread_pool pool(3);
  std::atomic<std::int64_t> total{0};
  for (int job = 0; job < 2000; ++job) pool.parallel_for(8, 1, [&](std::int64_t b, std::int64_t e) { total += e - b; });
  EXPECT_EQ(total.load(), 16000);
}

}  // namespace
}  // namespace modsim::kernels::cpu
