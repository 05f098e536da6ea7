#include "serve/batcher.h"

#include <algorithm>

namespace infer::serve {

Batcher::Batcher(Forward forward, std::size_t input_size, std::size_t output_size, BatcherOptions options,
                 std::function<void(int)> on_batch)
    : forward_(std::move(forward)),
      input_size_(input_size),
      output_size_(output_size),
      options_(options),
      on_batch_(std::move(on_batch)),
      batch_in_(static_cast<std::size_t>(options.max_batch) * input_size),
      batch_out_(static_cast<std::size_t>(options.max_batch) * output_size),
      thread_([this] { loop(); }) {}

Batcher::~Batcher() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  thread_.join();
}

bool Batcher::run(const float* in, int n, float* out, BatchTiming& timing) {
  Job job{in, n, out, std::chrono::steady_clock::now(), &timing, false, nullptr, {}};
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_ || queued_samples_ + n > options_.max_queue) return false;
  queue_.push_back(&job);
  queued_samples_ += n;
  queued_.notify_one();
  job.finished.wait(lock, [&] { return job.done; });
  if (job.error) std::rethrow_exception(job.error);
  return true;
}

int Batcher::queued_samples() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return queued_samples_;
}

void Batcher::loop() {
  std::vector<Job*> batch;
  batch.reserve(static_cast<std::size_t>(options_.max_batch));
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    // Wait for a full batch, or for the oldest job's delay to run out. Stopping runs what is there.
    const auto deadline = queue_.front()->queued_at + options_.max_delay;
    // Not a timed wait for a deadline already past: the kernel's timer slack (50 us by default) makes
    // even that one sleep, at every request when the delay is 0.
    if (std::chrono::steady_clock::now() < deadline)
      queued_.wait_until(lock, deadline, [&] { return stopping_ || queued_samples_ >= options_.max_batch; });
    int samples = 0;
    while (!queue_.empty() && samples + queue_.front()->n <= options_.max_batch) {
      samples += queue_.front()->n;
      batch.push_back(queue_.front());
      queue_.pop_front();
    }
    queued_samples_ -= samples;
    lock.unlock();
    execute(batch);
    lock.lock();
    for (Job* j : batch) {
      j->done = true;
      j->finished.notify_one();  // under the lock: the job (on its request's stack) outlives the call
    }
    batch.clear();
  }
}

void Batcher::execute(std::vector<Job*>& batch) {
  const auto start = std::chrono::steady_clock::now();
  int n = 0;
  for (const Job* j : batch) n += j->n;
  std::exception_ptr error;
  try {
    if (batch.size() == 1) {
      forward_(batch[0]->in, n, batch[0]->out);  // one request: no copy in or out
    } else {
      float* in = batch_in_.data();
      for (const Job* j : batch) in = std::copy_n(j->in, static_cast<std::size_t>(j->n) * input_size_, in);
      forward_(batch_in_.data(), n, batch_out_.data());
      const float* out = batch_out_.data();
      for (const Job* j : batch) {
        const std::size_t m = static_cast<std::size_t>(j->n) * output_size_;
        std::copy_n(out, m, j->out);
        out += m;
      }
    }
  } catch (...) {
    error = std::current_exception();
  }
  const auto end = std::chrono::steady_clock::now();
  for (Job* j : batch) {
    j->timing->queued = start - j->queued_at;
    j->timing->compute = end - start;
    j->timing->batch = n;
    j->error = error;
  }
  if (on_batch_) on_batch_(n);
}

}  // namespace infer::serve
