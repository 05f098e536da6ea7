// run_jobs (platform/parallel_jobs.h): every job once, on up to the threads asked for, and the
// failure of the first job that threw, as one thread would report it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "platform/parallel_jobs.h"

namespace infer::test {
namespace {

std::vector<std::function<void()>> counting_jobs(std::vector<std::atomic<int>>& runs) {
  std::vector<std::function<void()>> jobs;
  for (std::size_t j = 0; j < runs.size(); ++j) jobs.push_back([&runs, j] { ++runs[j]; });
  return jobs;
}

TEST(ParallelJobs, RunsEveryJobOnce) {
  for (int workers : {1, 2, 3, 8}) {
    SCOPED_TRACE(workers);
    std::vector<std::atomic<int>> runs(257);
    run_jobs(counting_jobs(runs), workers);
    for (std::size_t j = 0; j < runs.size(); ++j) EXPECT_EQ(runs[j].load(), 1) << "job " << j;
  }
  run_jobs({}, 4);  // nothing to do: returns
}

// The jobs run on several threads at once, each prepared first, the caller's among them: the first
// two jobs each wait (10 s at most) until the other has started, which one thread could not do.
TEST(ParallelJobs, RunsJobsAtOnceOnPreparedThreads) {
  std::mutex mutex;
  std::condition_variable changed;
  int started = 0;
  bool met = true;
  std::set<std::thread::id> prepared, ran;
  std::vector<std::function<void()>> jobs;
  for (int j = 0; j < 16; ++j) {
    jobs.push_back([&, j] {
      std::unique_lock<std::mutex> lock(mutex);
      ran.insert(std::this_thread::get_id());
      if (j >= 2) return;
      ++started;
      changed.notify_all();
      if (!changed.wait_for(lock, std::chrono::seconds(10), [&] { return started == 2; })) met = false;
    });
  }
  run_jobs(jobs, 3, [&] {
    const std::lock_guard<std::mutex> lock(mutex);
    prepared.insert(std::this_thread::get_id());
  });
  EXPECT_TRUE(met) << "the first two jobs did not run at the same time";
  EXPECT_EQ(prepared.size(), 3u);
  EXPECT_GE(ran.size(), 2u);
  for (const std::thread::id& id : ran) EXPECT_EQ(prepared.count(id), 1u);
  EXPECT_EQ(prepared.count(std::this_thread::get_id()), 1u);
}

// The exception rethrown is the first failing job's in the list's order, whichever thread met which
// first; on one thread no job after it starts.
TEST(ParallelJobs, RethrowsTheFirstFailure) {
  for (int workers : {1, 2, 4}) {
    SCOPED_TRACE(workers);
    std::vector<std::atomic<int>> runs(100);
    std::vector<std::function<void()>> jobs = counting_jobs(runs);
    for (int bad : {90, 30, 60}) {
      jobs[static_cast<std::size_t>(bad)] = [bad] { throw std::runtime_error("job " + std::to_string(bad)); };
    }
    try {
      run_jobs(jobs, workers);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "job 30");
    }
    if (workers == 1) {
      for (std::size_t j = 31; j < runs.size(); ++j) EXPECT_EQ(runs[j].load(), 0) << "job " << j;
    }
  }
}

}  // namespace
}  // namespace infer::test
