// The interface every backend implements. A backend is built once for a network and a maximum
// batch size: it plans and allocates everything then, so forward() allocates nothing.
#pragma once

#include <cstddef>
#include <string>

#include "network.h"

namespace infer {

class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // One line for users: "cpu: OpenBLAS 0.3.21, 2 threads", "gpu: NVIDIA H200, cuDNN 9.19.0".
  virtual std::string description() const = 0;
  // "cpu" or "gpu".
  virtual const char* device() const = 0;
  virtual int max_batch() const = 0;

  // Runs layers [0, layer_count) on n samples (1 <= n <= max_batch()).
  //   input:  n x C x H x W floats (NCHW, already normalised), host memory
  //   output: n x out.size() floats of layer layer_count-1, host memory
  // layer_count < number of layers gives intermediate results (the logits before a softmax, say).
  // Throws GpuError (GPU) or std::invalid_argument for a bad n or layer_count.
  virtual void forward(const float* input, int n, float* output, std::size_t layer_count) = 0;

  void forward(const float* input, int n, float* output) { forward(input, n, output, layer_count()); }
  virtual std::size_t layer_count() const = 0;
};

}  // namespace infer
