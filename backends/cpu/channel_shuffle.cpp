// Channel shuffle (ShuffleNet): the channels of each sample, C = groups * k, seen as a [groups, k]
// matrix and transposed, so output channel j * groups + i is input channel i * k + j. Each channel
// plane (H * W contiguous floats in NCHW) is copied whole to its new place.
#include <algorithm>
#include <cstddef>

#include "backends/cpu/ops.h"

namespace infer::cpu {

void channel_shuffle_forward(const Layer& layer, const float* in, int n, float* out) {
  const Dims& d = layer.in;
  const auto g = static_cast<std::size_t>(layer.channel_shuffle().groups);
  const std::size_t k = static_cast<std::size_t>(d.c) / g;
  const std::size_t plane = static_cast<std::size_t>(d.h) * static_cast<std::size_t>(d.w);
  for (std::size_t b = 0; b < static_cast<std::size_t>(n); ++b) {
    const float* x = in + b * d.size();
    float* y = out + b * d.size();
    for (std::size_t i = 0; i < g; ++i) {
      for (std::size_t j = 0; j < k; ++j) std::copy_n(x + (i * k + j) * plane, plane, y + (j * g + i) * plane);
    }
  }
}

}  // namespace infer::cpu
