#include "backends/backend.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace infer {
namespace {

// The strict total order of top_k(): (score, index) pairs, NaN above every number.
bool ranks_before(float a, std::size_t ia, float b, std::size_t ib) {
  const bool nan_a = std::isnan(a), nan_b = std::isnan(b);
  if (nan_a != nan_b) return nan_a;
  if (!nan_a && a != b) return a > b;
  return ia < ib;
}

}  // namespace

void select_top_k(const float* row, std::size_t size, int k, int* classes, float* scores) {
  std::vector<std::size_t> order(size);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [row](std::size_t a, std::size_t b) { return ranks_before(row[a], a, row[b], b); });
  for (int j = 0; j < k; ++j) {
    classes[j] = static_cast<int>(order[static_cast<std::size_t>(j)]);
    scores[j] = row[order[static_cast<std::size_t>(j)]];
  }
}

void Backend::check_forward_arguments(int n, std::size_t layer_count) const {
  if (n < 1 || n > max_batch()) throw std::invalid_argument("batch size out of range");
  if (layer_count < 1 || layer_count > this->layer_count()) throw std::invalid_argument("layer_count out of range");
}

void Backend::top_k(const float* input, int n, int k, int* classes, float* scores) {
  const std::size_t count = layer_count();
  if (count == 0) throw std::invalid_argument("top_k: the network has no layers");
  const std::size_t size = output_size();
  if (k < 1 || static_cast<std::size_t>(k) > size) {
    throw std::invalid_argument("top_k: k = " + std::to_string(k) + " is outside [1, " + std::to_string(size) +
                                "] (the last layer's output size)");
  }
  if (n < 1 || n > max_batch()) {
    throw std::invalid_argument("batch size " + std::to_string(n) + " is outside [1, " + std::to_string(max_batch()) +
                                "]");
  }
  if (top_k_buffer_.empty()) top_k_buffer_.resize(static_cast<std::size_t>(max_batch()) * size);
  forward(input, n, top_k_buffer_.data(), count);
  for (int i = 0; i < n; ++i) {
    const std::size_t at = static_cast<std::size_t>(i) * static_cast<std::size_t>(k);
    select_top_k(top_k_buffer_.data() + static_cast<std::size_t>(i) * size, size, k, classes + at, scores + at);
  }
}

}  // namespace infer
