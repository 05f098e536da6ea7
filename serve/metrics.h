// The server's metrics, per model, in Prometheus' text exposition format (version 0.0.4): counters
// of requests, failures and images, and histograms of queue time, compute time, request latency and
// batch size. Every metric is made when the model is registered; recording is lock-free (atomics),
// from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/serve_error.h"

namespace infer::serve {

// A Prometheus histogram over integer observations in `unit`s (nanoseconds for times, rendered in
// seconds; images for batch sizes). Bucket bounds are inclusive upper bounds, ascending.
class Histogram {
 public:
  Histogram(std::vector<std::uint64_t> bounds, double unit);
  void observe(std::uint64_t value);
  // The family's sample lines for one label set (`labels`: `model="m"`), without HELP/TYPE.
  void render(const std::string& name, const std::string& labels, std::string& out) const;
  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::vector<std::uint64_t> bounds_;
  double unit_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // not cumulative; one per bound, then +Inf
  std::atomic<std::uint64_t> sum_{0};
  std::atomic<std::uint64_t> count_{0};
};

// Why a request failed, for infer_request_failures_total's `reason` label.
enum class FailureReason { Invalid, QueueFull, Internal };
constexpr std::size_t kFailureReasons = 3;

struct ModelMetrics {
  explicit ModelMetrics(std::string model);
  std::string model;
  std::atomic<std::uint64_t> requests{0};  // answered with outputs
  std::array<std::atomic<std::uint64_t>, kFailureReasons> failures{};
  std::atomic<std::uint64_t> images{0};  // samples run, over all requests
  Histogram queue_ns;                    // a request's samples waiting for their batch to start
  Histogram compute_ns;                  // the forward pass of the batch a request rode in
  Histogram request_ns;                  // the whole request: parsed to answered
  Histogram batch_size;                  // images per forward pass, once per pass
  std::function<int()> queued_samples;   // samples waiting now (the model's batcher); empty: none
  void fail(FailureReason why) { failures[static_cast<std::size_t>(why)].fetch_add(1, std::memory_order_relaxed); }
  // A request's error, by the reason its kind stands for.
  void fail(ErrorKind kind) {
    fail(kind == ErrorKind::Unavailable ? FailureReason::QueueFull
         : kind == ErrorKind::Internal  ? FailureReason::Internal
                                        : FailureReason::Invalid);
  }
};

class Metrics {
 public:
  // Infer requests whose body the server began to read, and those it answered (with outputs or an
  // error), over every model and transport: their difference is the requests in flight, which a
  // drain waits for.
  std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> answered{0};

  // A model's metrics, made once at registration (before the server starts); the reference stays valid.
  ModelMetrics& add_model(const std::string& name);
  std::string render() const;  // the whole exposition, text/plain; version=0.0.4

  // Counts one infer request as received now and as answered when it goes out of scope.
  class InFlight {
   public:
    explicit InFlight(Metrics& m) : m_(m) { m_.received.fetch_add(1); }
    ~InFlight() { m_.answered.fetch_add(1); }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

   private:
    Metrics& m_;
  };

 private:
  std::vector<std::unique_ptr<ModelMetrics>> models_;
};

}  // namespace infer::serve
