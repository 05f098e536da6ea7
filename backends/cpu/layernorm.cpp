// Layer normalisation over the channels (network.h, LayerNormAttrs): each pixel's C values get
// their mean and variance, both by two passes in float (the variance of the differences from the
// mean, never E[x^2] - m^2, which cancels), then y_c = weight_c (x_c - m) / sqrt(v + eps) + bias_c.
// NCHW puts a pixel's channels one plane apart, so a block of neighbouring pixels is done at once:
// every pass runs along the contiguous rows of a plane, and the block's sums stay in registers or L1.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "backends/cpu/ops.h"

namespace infer::cpu {

void layernorm_forward(const Layer& layer, const float* in, int n, float* out) {
  constexpr std::size_t kBlock = 64;  // pixels per block: 3 x 64 floats of sums
  const std::size_t channels = static_cast<std::size_t>(layer.in.c);
  const std::size_t plane = static_cast<std::size_t>(layer.in.h) * layer.in.w;
  const float inv_c = 1.0f / static_cast<float>(channels);
  const auto eps = static_cast<float>(layer.layernorm().epsilon);
  const float* weight = layer.params.weight.data();
  const float* bias = layer.params.bias.data();
  for (int b = 0; b < n; ++b) {
    const float* x = in + static_cast<std::size_t>(b) * channels * plane;
    float* y = out + static_cast<std::size_t>(b) * channels * plane;
    for (std::size_t p0 = 0; p0 < plane; p0 += kBlock) {
      const std::size_t len = std::min(kBlock, plane - p0);
      float mean[kBlock] = {}, var[kBlock] = {};
      for (std::size_t c = 0; c < channels; ++c) {
        const float* xc = x + c * plane + p0;
        for (std::size_t p = 0; p < len; ++p) mean[p] += xc[p];
      }
      for (std::size_t p = 0; p < len; ++p) mean[p] *= inv_c;
      for (std::size_t c = 0; c < channels; ++c) {
        const float* xc = x + c * plane + p0;
        for (std::size_t p = 0; p < len; ++p) {
          const float d = xc[p] - mean[p];
          var[p] += d * d;
        }
      }
      for (std::size_t p = 0; p < len; ++p) var[p] = 1.0f / std::sqrt(var[p] * inv_c + eps);  // now 1 / std
      for (std::size_t c = 0; c < channels; ++c) {
        const float* xc = x + c * plane + p0;
        float* yc = y + c * plane + p0;
        for (std::size_t p = 0; p < len; ++p) yc[p] = (xc[p] - mean[p]) * var[p] * weight[c] + bias[c];
      }
    }
  }
}

}  // namespace infer::cpu
