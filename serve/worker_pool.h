// A fixed pool of threads for the work of a request that is not the forward pass: decoding and
// preprocessing its images. parallel_for spreads one request's images over the pool and the
// calling thread, which takes part, so a one-image request is decoded where it arrived, with no
// hand-over. Threads are started once and joined on destruction.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace infer::serve {

class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Calls fn(i) once for each i in [0, n), on the pool's threads and this one, and returns when all
  // have returned. fn must not throw (catch inside it, per element).
  void parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn);

 private:
  struct Work {
    const std::function<void(std::size_t)>* fn;
    std::size_t n;
    std::atomic<std::size_t> next{0};
    std::size_t finished = 0;  // under mutex_
    int workers = 0;           // pool threads inside it, under mutex_
  };
  static std::size_t drain(Work& w);  // runs indices until none is left; returns how many it ran
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  std::deque<Work*> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace infer::serve
