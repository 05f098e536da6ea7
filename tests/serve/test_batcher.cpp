// Dynamic batching (serve/batcher.h) with a forward function whose answer per sample is known:
// every request gets its own samples' outputs whatever batch it rode in, waits no less than the
// delay asks, is refused at once when the queue is full, and a failing batch fails its own requests only.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "serve/batcher.h"

namespace infer::serve {
namespace {

constexpr std::size_t kIn = 5;
constexpr std::size_t kOut = 3;

// out[j] = (j + 1) * sum(in), per sample: exact in float whatever the batch (same additions, same order).
void per_sample(const float* in, int n, float* out) {
  for (int i = 0; i < n; ++i) {
    float s = 0.0f;
    for (std::size_t k = 0; k < kIn; ++k) s += in[static_cast<std::size_t>(i) * kIn + k];
    for (std::size_t j = 0; j < kOut; ++j) out[static_cast<std::size_t>(i) * kOut + j] = static_cast<float>(j + 1) * s;
  }
}

TEST(Batcher, ConcurrentRequestsGetTheirOwnOutputs) {
  std::atomic<int> passes{0}, largest{0};
  BatcherOptions o;
  o.max_batch = 16;
  o.max_delay = std::chrono::microseconds(200);
  o.max_queue = 1000;
  Batcher b(
      [&](const float* in, int n, float* out) {
        ++passes;
        int l = largest.load();
        while (n > l && !largest.compare_exchange_weak(l, n)) {
        }
        per_sample(in, n, out);
      },
      kIn, kOut, o);
  std::atomic<int> wrong{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 12; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(100 + t));
      std::uniform_real_distribution<float> value(-4.0f, 4.0f);
      std::uniform_int_distribution<int> count(1, 8);
      for (int r = 0; r < 60; ++r) {
        const int n = count(rng);
        std::vector<float> in(static_cast<std::size_t>(n) * kIn), out(static_cast<std::size_t>(n) * kOut, -1e30f),
            want(out.size());
        for (float& v : in) v = value(rng);
        per_sample(in.data(), n, want.data());
        BatchTiming timing;
        if (!b.run(in.data(), n, out.data(), timing)) {
          ++refused;
          continue;
        }
        if (out != want || timing.batch < n || timing.batch > o.max_batch) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(refused.load(), 0);  // 12 x 8 samples at most in flight: the queue of 1000 never fills
  EXPECT_LE(largest.load(), o.max_batch);
  EXPECT_LT(passes.load(), 12 * 60) << "no request shared a forward pass";
}

TEST(Batcher, WaitsForAFullBatchWithinTheDelay) {
  std::vector<int> sizes;
  std::mutex m;
  BatcherOptions o;
  o.max_batch = 8;
  o.max_delay = std::chrono::seconds(5);  // far longer than 8 threads take to arrive
  Batcher b(
      [&](const float* in, int n, float* out) {
        const std::lock_guard<std::mutex> lock(m);
        sizes.push_back(n);
        per_sample(in, n, out);
      },
      kIn, kOut, o);
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> in(kIn, static_cast<float>(t)), out(kOut);
      BatchTiming timing;
      EXPECT_TRUE(b.run(in.data(), 1, out.data(), timing));
      EXPECT_EQ(out[2], 3.0f * 5.0f * static_cast<float>(t));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(sizes, std::vector<int>{8}) << "the eighth sample completes the batch, which then runs at once";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(Batcher, ALoneRequestWaitsTheDelayThenRuns) {
  BatcherOptions o;
  o.max_batch = 8;
  o.max_delay = std::chrono::milliseconds(60);
  Batcher b(per_sample, kIn, kOut, o);
  std::vector<float> in(kIn, 1.0f), out(kOut);
  BatchTiming timing;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(b.run(in.data(), 1, out.data(), timing));
  EXPECT_GE(std::chrono::steady_clock::now() - start, o.max_delay);
  EXPECT_GE(timing.queued, o.max_delay);
  EXPECT_EQ(timing.batch, 1);
}

TEST(Batcher, AFullQueueRefusesAtOnceAndServesTheRest) {
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::atomic<bool> running{false};
  BatcherOptions o;
  o.max_batch = 2;
  o.max_delay = std::chrono::microseconds(0);
  o.max_queue = 4;
  Batcher b(
      [&](const float* in, int n, float* out) {
        running = true;
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return release; });
        per_sample(in, n, out);
      },
      kIn, kOut, o);
  std::vector<float> in(2 * kIn, 2.0f);
  std::vector<std::vector<float>> outs(3, std::vector<float>(2 * kOut));
  std::vector<std::thread> threads;
  // The first request's pass blocks; then the queue takes 4 samples (two requests of 2).
  threads.emplace_back([&] {
    BatchTiming t;
    EXPECT_TRUE(b.run(in.data(), 2, outs[0].data(), t));
  });
  while (!running) std::this_thread::yield();
  for (int i = 1; i <= 2; ++i) {
    threads.emplace_back([&, i] {
      BatchTiming t;
      EXPECT_TRUE(b.run(in.data(), 2, outs[static_cast<std::size_t>(i)].data(), t));
    });
  }
  // Both queued: a fifth sample must now be refused, at once.
  while (b.queued_samples() < 4) std::this_thread::yield();
  std::vector<float> probe(kIn, 0.0f), extra(kOut);
  BatchTiming t;
  EXPECT_FALSE(b.run(probe.data(), 1, extra.data(), t));
  {
    const std::lock_guard<std::mutex> lock(m);
    release = true;
  }
  cv.notify_all();
  for (auto& th : threads) th.join();
  std::vector<float> want(2 * kOut);
  per_sample(in.data(), 2, want.data());
  for (const auto& out : outs) EXPECT_EQ(out, want);
}

TEST(Batcher, AFailingPassFailsItsRequestsAndTheNextOnesRun) {
  std::atomic<int> calls{0};
  BatcherOptions o;
  o.max_batch = 4;
  Batcher b(
      [&](const float* in, int n, float* out) {
        if (calls++ == 0) throw std::runtime_error("device lost");
        per_sample(in, n, out);
      },
      kIn, kOut, o);
  std::vector<float> in(kIn, 1.0f), out(kOut);
  BatchTiming t;
  EXPECT_THROW(b.run(in.data(), 1, out.data(), t), std::runtime_error);
  EXPECT_TRUE(b.run(in.data(), 1, out.data(), t));
  EXPECT_EQ(out[0], 5.0f);
}

}  // namespace
}  // namespace infer::serve
