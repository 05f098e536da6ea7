// Ops of several inputs: add, mul and concat. Inputs are NCHW with per-sample shapes
// layer.in_dims (network.h); the output has layer.out.
#include <cmath>
#include <cstring>

#include "backends/cpu/ops.h"

namespace infer::cpu {

void add_forward(const Layer& layer, const float* a, const float* b, int n, float* out) {
  const std::size_t count = static_cast<std::size_t>(n) * layer.out.size();
  const bool relu = layer.add().relu;
  for (std::size_t i = 0; i < count; ++i) {
    const float s = a[i] + b[i];
    out[i] = relu && !(s >= 0.0f) && !std::isnan(s) ? 0.0f : s;
  }
}

void mul_forward(const Layer& layer, const float* a, const float* b, int n, float* out) {
  const Dims d = layer.out;
  const std::size_t plane = static_cast<std::size_t>(d.h) * d.w;
  const bool per_channel = layer.in_dims[1].size() != d.size();  // b is C x 1 x 1
  for (std::size_t s = 0; s < static_cast<std::size_t>(n); ++s) {
    for (std::size_t c = 0; c < static_cast<std::size_t>(d.c); ++c) {
      const std::size_t at = (s * d.c + c) * plane;
      if (per_channel) {
        const float scale = b[s * d.c + c];
        for (std::size_t p = 0; p < plane; ++p) out[at + p] = a[at + p] * scale;
      } else {
        for (std::size_t p = 0; p < plane; ++p) out[at + p] = a[at + p] * b[at + p];
      }
    }
  }
}

void concat_forward(const Layer& layer, const std::vector<const float*>& in, int n, float* out) {
  const std::size_t plane = static_cast<std::size_t>(layer.out.h) * layer.out.w;
  for (std::size_t s = 0; s < static_cast<std::size_t>(n); ++s) {
    float* y = out + s * layer.out.size();
    for (std::size_t k = 0; k < in.size(); ++k) {
      const std::size_t bytes = layer.in_dims[k].size() * sizeof(float);
      std::memcpy(y, in[k] + s * layer.in_dims[k].size(), bytes);
      y += static_cast<std::size_t>(layer.in_dims[k].c) * plane;
    }
  }
}

}  // namespace infer::cpu
