// The C++ side of the binding probes: a "model" whose run() is cheap enough that a call's cost is
// the binding's (a sum per sample, written to each output), and a typed error for bad input.
#pragma once

#include <cstddef>
#include <stdexcept>

namespace probe {

struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Model {
 public:
  explicit Model(int outputs) : outputs_(outputs) {
    if (outputs < 1) throw BadInput("outputs must be at least 1");
  }
  std::size_t outputs() const { return static_cast<std::size_t>(outputs_); }
  void run(const float* x, int n, std::size_t per_sample, float* out) const {
    for (int i = 0; i < n; ++i) {
      float sum = 0.0f;
      for (std::size_t j = 0; j < per_sample; ++j) sum += x[static_cast<std::size_t>(i) * per_sample + j];
      for (int k = 0; k < outputs_; ++k) out[static_cast<std::size_t>(i) * outputs_ + k] = sum;
    }
  }

 private:
  int outputs_;
};

}  // namespace probe
