// The decode pool (serve/worker_pool.h): every index runs once, from several callers at once.
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "serve/worker_pool.h"

namespace infer::serve {
namespace {

TEST(WorkerPool, EveryIndexRunsOnceForConcurrentCallers) {
  WorkerPool pool(3);
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      for (std::size_t n : {0, 1, 2, 7, 64, 513}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(n, [&](std::size_t i) { hits[i].fetch_add(1 + c); });
        for (auto& h : hits) {
          if (h.load() != 1 + c) ++wrong;
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(WorkerPool, WorkSpreadsOverThePoolThreads) {
  WorkerPool pool(2);
  std::mutex m;
  std::set<std::thread::id> seen;
  pool.parallel_for(64, [&](std::size_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const std::lock_guard<std::mutex> lock(m);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_GE(seen.size(), 2u) << "64 sleeps of 2 ms all ran on one thread";
}

}  // namespace
}  // namespace infer::serve
