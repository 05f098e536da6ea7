// Numerically stable softmax over the channels at each spatial position:
//   y[c] = exp(x[c] - max) / sum_c' exp(x[c'] - max)
#include <algorithm>
#include <cmath>

#include "backends/cpu/ops.h"

namespace infer::cpu {

void softmax_forward(const Layer& layer, const float* in, int n, float* out) {
  const std::size_t spatial = static_cast<std::size_t>(layer.in.h) * layer.in.w;
  const std::size_t channels = static_cast<std::size_t>(layer.in.c);
  for (int i = 0; i < n; ++i) {
    const std::size_t base = static_cast<std::size_t>(i) * channels * spatial;
    for (std::size_t j = 0; j < spatial; ++j) {
      float m = in[base + j];
      for (std::size_t c = 1; c < channels; ++c) m = std::max(m, in[base + c * spatial + j]);
      float sum = 0.0f;
      for (std::size_t c = 0; c < channels; ++c) {
        const float e = std::exp(in[base + c * spatial + j] - m);
        out[base + c * spatial + j] = e;
        sum += e;
      }
      for (std::size_t c = 0; c < channels; ++c) out[base + c * spatial + j] /= sum;
    }
  }
}

}  // namespace infer::cpu
