// Elementwise ops of one input: ReLU, and every pointwise op through its one formula
// (pointwise_formula.h, shared with the CUDA kernel). Each computes in float; a NaN input gives NaN
// (as PyTorch), never a clamped value.
#include <algorithm>
#include <cmath>

#include "graph/pointwise_formula.h"
#include "backends/cpu/ops.h"

namespace infer::cpu {
namespace {

template <typename F>
void map(const Layer& layer, const float* in, int n, float* out, F f) {
  const std::size_t count = static_cast<std::size_t>(n) * layer.in.size();
  for (std::size_t i = 0; i < count; ++i) out[i] = f(in[i]);
}

}  // namespace

void relu_forward(const Layer& layer, const float* in, int n, float* out) {
  map(layer, in, n, out, [](float x) { return std::max(x, 0.0f); });  // max(NaN, 0) is NaN: (NaN < 0) is false
}

void pointwise_forward(const Layer& layer, const float* in, int n, float* out) {
  const PointwiseOp op = pointwise_op(layer.kind);
  const PointwiseAttrs p = layer.pointwise();
  map(layer, in, n, out, [=](float x) { return pointwise_value(op, p.a, p.b, x); });
}

}  // namespace infer::cpu
