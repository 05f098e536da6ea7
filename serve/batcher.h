// Dynamic batching for one model: requests' samples queue, and one thread runs them together, up
// to max_batch samples per forward pass, waiting at most max_delay after the oldest arrived for
// more to come. The queue is bounded (max_queue samples): a request that would overflow it is
// refused at once, so that memory does not grow with load.
//
// Threads: run() is called from any number of request threads and blocks until its samples are done;
// the batch thread is the only one that calls the forward function (a Classifier is not thread-safe).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace infer::serve {

struct BatcherOptions {
  int max_batch = 64;                         // samples per forward pass
  std::chrono::microseconds max_delay{1000};  // wait for more after the oldest queued sample
  int max_queue = 1024;                       // samples waiting, at most
};

// What a request's samples went through: time queued and time of the forward pass they rode in.
struct BatchTiming {
  std::chrono::nanoseconds queued{0};
  std::chrono::nanoseconds compute{0};
  int batch = 0;  // samples in that forward pass
};

class Batcher {
 public:
  // forward(in, n, out): n samples of `input_size` floats to n x `output_size` floats, n <= max_batch.
  // It may throw; the error goes to every request of that batch. on_batch(n) is called after each
  // forward pass (for metrics).
  using Forward = std::function<void(const float* in, int n, float* out)>;
  Batcher(Forward forward, std::size_t input_size, std::size_t output_size, BatcherOptions options,
          std::function<void(int)> on_batch = {});
  ~Batcher();  // finishes what is queued, then stops
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Runs n samples (1 <= n <= max_batch) as part of a batch and writes their outputs; blocks until
  // done. Returns false at once, without running, when the queue has no room for them (or the
  // batcher is stopping). Rethrows the forward function's error.
  bool run(const float* in, int n, float* out, BatchTiming& timing);

  const BatcherOptions& options() const { return options_; }
  int queued_samples() const;  // waiting now, not counting the pass that runs

 private:
  struct Job {
    const float* in;
    int n;
    float* out;
    std::chrono::steady_clock::time_point queued_at;
    BatchTiming* timing;
    bool done = false;  // under mutex_
    std::exception_ptr error;
    std::condition_variable finished;  // its own: a batch wakes its requests, no others
  };
  void loop();
  void execute(std::vector<Job*>& batch);

  Forward forward_;
  std::size_t input_size_;
  std::size_t output_size_;
  BatcherOptions options_;
  std::function<void(int)> on_batch_;
  std::vector<float> batch_in_;   // max_batch samples, allocated once
  std::vector<float> batch_out_;  // max_batch outputs
  mutable std::mutex mutex_;
  std::condition_variable queued_;  // a job arrived, or stopping
  std::deque<Job*> queue_;
  int queued_samples_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace infer::serve
