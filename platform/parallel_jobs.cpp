#include "platform/parallel_jobs.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

namespace infer {

void run_jobs(const std::vector<std::function<void()>>& jobs, int workers, const std::function<void()>& prepare) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::size_t failed_at = jobs.size();
  std::exception_ptr failure;
  const auto work = [&] {
    if (prepare) prepare();
    for (std::size_t j; !failed.load() && (j = next.fetch_add(1)) < jobs.size();) {
      try {
        jobs[j]();
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (j < failed_at) failed_at = j, failure = std::current_exception();
        failed.store(true);
      }
    }
  };
  std::vector<std::thread> helpers;
  const std::size_t wanted = std::min<std::size_t>(static_cast<std::size_t>(std::max(workers, 1)), jobs.size());
  for (std::size_t t = 1; t < wanted; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread now: the others do its share
    }
  }
  work();
  for (std::thread& h : helpers) h.join();
  if (failure) std::rethrow_exception(failure);
}

int parallel_job_threads() { return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8); }

}  // namespace infer
