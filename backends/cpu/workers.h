// A fixed set of worker threads for the CPU backend, created once with the backend.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace infer::cpu {

class Workers {
 public:
  // count >= 1 workers: worker 0 is the thread that calls run(), the others are started here.
  explicit Workers(int count);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  int count() const { return static_cast<int>(threads_.size()) + 1; }

  // Calls job(w) once for every worker w in [0, count()) at the same time and returns when all
  // have finished. The first exception a job throws is rethrown here. Not reentrant.
  void run(const std::function<void(int)>& job);

 private:
  void loop(int worker);

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(int)>* job_ = nullptr;
  unsigned long generation_ = 0;  // incremented per run(); workers wait for a new one
  int running_ = 0;               // workers (other than 0) still in the current job
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace infer::cpu
