#include "serve/worker_pool.h"

#include <algorithm>

namespace infer::serve {

WorkerPool::WorkerPool(int threads) {
  threads_.reserve(static_cast<std::size_t>(std::max(threads, 0)));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

WorkerPool::~WorkerPool() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::size_t WorkerPool::drain(Work& w) {
  std::size_t ran = 0;
  for (std::size_t i = w.next.fetch_add(1); i < w.n; i = w.next.fetch_add(1)) {
    (*w.fn)(i);
    ++ran;
  }
  return ran;
}

void WorkerPool::parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return;
  if (n == 1 || threads_.empty()) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  Work w;
  w.fn = &fn;
  w.n = n;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(&w);
  }
  wake_.notify_all();
  const std::size_t ran = drain(w);
  std::unique_lock<std::mutex> lock(mutex_);
  w.finished += ran;
  // Every index is taken now: no thread picks this work up again.
  queue_.erase(std::remove(queue_.begin(), queue_.end(), &w), queue_.end());
  finished_.wait(lock, [&] { return w.finished == w.n && w.workers == 0; });
}

void WorkerPool::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Work& w = *queue_.front();
    ++w.workers;
    lock.unlock();
    const std::size_t ran = drain(w);
    lock.lock();
    w.finished += ran;
    --w.workers;
    // All of its indices are taken: the next wake-up must not find it.
    if (!queue_.empty() && queue_.front() == &w) queue_.pop_front();
    finished_.notify_all();
  }
}

}  // namespace infer::serve
