#include "serve/metrics.h"

#include <cstdio>

namespace infer::serve {
namespace {

// Latency buckets in nanoseconds: 50 us to 10 s, about 2.5x apart (the shipped model runs a batch in
// well under a millisecond on a CPU; a large one on a queue, seconds).
std::vector<std::uint64_t> latency_buckets() {
  return {50'000,      100'000,       250'000,       500'000,       1'000'000,     2'500'000,
          5'000'000,   10'000'000,    25'000'000,    50'000'000,    100'000'000,   250'000'000,
          500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
}
std::vector<std::uint64_t> batch_buckets() { return {1, 2, 4, 8, 16, 32, 64, 128, 256}; }

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// A label value as the exposition format escapes it (backslash, double quote, newline).
std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

const char* const kReasonNames[kFailureReasons] = {"invalid", "queue_full", "internal"};

}  // namespace

Histogram::Histogram(std::vector<std::uint64_t> bounds, double unit)
    : bounds_(std::move(bounds)), unit_(unit), buckets_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
  for (std::size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(std::uint64_t value) {
  std::size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void Histogram::render(const std::string& name, const std::string& labels, std::string& out) const {
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    const std::string le = i < bounds_.size() ? number(static_cast<double>(bounds_[i]) / unit_) : "+Inf";
    out += name + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out +=
      name + "_sum{" + labels + "} " + number(static_cast<double>(sum_.load(std::memory_order_relaxed)) / unit_) + "\n";
  // The count is the buckets' total, read above: a scrape during an observation stays consistent.
  out += name + "_count{" + labels + "} " + std::to_string(cumulative) + "\n";
}

ModelMetrics::ModelMetrics(std::string name)
    : model(std::move(name)),
      queue_ns(latency_buckets(), 1e9),
      compute_ns(latency_buckets(), 1e9),
      request_ns(latency_buckets(), 1e9),
      batch_size(batch_buckets(), 1) {}

ModelMetrics& Metrics::add_model(const std::string& name) {
  models_.push_back(std::make_unique<ModelMetrics>(name));
  return *models_.back();
}

std::string Metrics::render() const {
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto label = [](const ModelMetrics& m) { return "model=\"" + escaped(m.model) + "\""; };

  family("infer_requests_in_flight", "gauge", "Inference requests received and not yet answered, all models.");
  const std::uint64_t done = answered.load();  // first: a request counted here was received before
  const std::uint64_t in = received.load();
  out += "infer_requests_in_flight " + std::to_string(in >= done ? in - done : 0) + "\n";
  family("infer_requests_total", "counter", "Inference requests answered with outputs.");
  for (const auto& m : models_)
    out += "infer_requests_total{" + label(*m) + "} " + std::to_string(m->requests.load()) + "\n";
  family("infer_request_failures_total", "counter", "Inference requests answered with an error, by reason.");
  for (const auto& m : models_) {
    for (std::size_t r = 0; r < kFailureReasons; ++r) {
      out += "infer_request_failures_total{" + label(*m) + ",reason=\"" + kReasonNames[r] + "\"} " +
             std::to_string(m->failures[r].load()) + "\n";
    }
  }
  family("infer_queue_samples", "gauge", "Samples waiting for a forward pass.");
  for (const auto& m : models_) {
    out +=
        "infer_queue_samples{" + label(*m) + "} " + std::to_string(m->queued_samples ? m->queued_samples() : 0) + "\n";
  }
  family("infer_images_total", "counter", "Images (samples) run through the model.");
  for (const auto& m : models_)
    out += "infer_images_total{" + label(*m) + "} " + std::to_string(m->images.load()) + "\n";

  const struct {
    const char* name;
    const char* help;
    Histogram ModelMetrics::*h;
  } kHistograms[] = {
      {"infer_queue_seconds", "Time a request's samples waited for their batch to start.", &ModelMetrics::queue_ns},
      {"infer_compute_seconds", "Forward-pass time of the batch a request ran in.", &ModelMetrics::compute_ns},
      {"infer_request_seconds", "Request latency in the server, parsed to answered.", &ModelMetrics::request_ns},
      {"infer_batch_size", "Images per forward pass.", &ModelMetrics::batch_size},
  };
  for (const auto& h : kHistograms) {
    family(h.name, "histogram", h.help);
    for (const auto& m : models_) ((*m).*(h.h)).render(h.name, label(*m), out);
  }
  return out;
}

}  // namespace infer::serve
