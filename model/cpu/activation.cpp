// Elementwise ops of one input. Each computes in float; a NaN input gives NaN (as PyTorch and the
// cuDNN backend's kernel), never a clamped value.
#include <algorithm>
#include <cmath>

#include "ops.h"

namespace infer::cpu {
namespace {

template <typename F>
void map(const Layer& layer, const float* in, int n, float* out, F f) {
  const std::size_t count = static_cast<std::size_t>(n) * layer.in.size();
  for (std::size_t i = 0; i < count; ++i) out[i] = f(in[i]);
}

// max(lo, min(hi, x)) with NaN passed through (std::min and std::max would return a bound).
float clamp(float x, float lo, float hi) { return std::isnan(x) ? x : std::min(std::max(x, lo), hi); }

}  // namespace

void relu_forward(const Layer& layer, const float* in, int n, float* out) {
  map(layer, in, n, out, [](float x) { return std::max(x, 0.0f); });  // max(NaN, 0) is NaN: (NaN < 0) is false
}

void sigmoid_forward(const Layer& layer, const float* in, int n, float* out) {
  map(layer, in, n, out, [](float x) { return 1.0f / (1.0f + std::exp(-x)); });
}

void silu_forward(const Layer& layer, const float* in, int n, float* out) {
  map(layer, in, n, out, [](float x) { return x / (1.0f + std::exp(-x)); });
}

void clip_forward(const Layer& layer, const float* in, int n, float* out) {
  const ClipAttrs a = layer.clip();
  map(layer, in, n, out, [a](float x) { return clamp(x, a.min, a.max); });
}

void hardsigmoid_forward(const Layer& layer, const float* in, int n, float* out) {
  const HardSigmoidAttrs a = layer.hardsigmoid();
  map(layer, in, n, out, [a](float x) { return clamp(a.alpha * x + a.beta, 0.0f, 1.0f); });
}

void hardswish_forward(const Layer& layer, const float* in, int n, float* out) {
  const HardSigmoidAttrs a = layer.hardsigmoid();
  map(layer, in, n, out, [a](float x) { return x * clamp(a.alpha * x + a.beta, 0.0f, 1.0f); });
}

}  // namespace infer::cpu
