// The formula of the resize layer (network.h, ResizeAttrs), in float, for every backend: the CPU
// kernel (backends/cpu/resize.cpp), the CUDA kernel (backends/cudnn/kernels/resize.cuh) and the
// stand-in that runs it. Device code too, so plain C++ without the standard library (NVRTC has
// none).
//
// Along one axis, output index i of `out` samples the input (`in` values) at
//   align_corners: i (in - 1) / (out - 1), 0 when out = 1;
//   half-pixel:    (i + 1/2) in / out - 1/2, 0 where that is below 0 (PyTorch's and ONNX's
//                  pytorch_half_pixel; ONNX's half_pixel is the same for out > 1);
// the two input indices around it, i0 = floor and i1 = i0 + 1 (i0 where that is past the end), and
// the weight w1 of i1. The coordinate is a ratio of integers, num / den, so i0 is exact and w1 is
// one correctly rounded division: every backend (and every compiler, whatever it fuses) gets the
// same taps. (PyTorch and ONNX Runtime compute the coordinate in float, a few ulp of it away.) A
// value is (1 - w1) v0 + w1 v1, rows of such values likewise: PyTorch's upsample_bilinear2d order.
#pragma once

#include "graph/pointwise_formula.h"  // INFER_HOST_DEVICE

namespace infer {

struct ResizeTap {
  int i0;
  int i1;
  float w1;
};

INFER_HOST_DEVICE inline ResizeTap resize_tap(int i, int in, int out, bool align_corners) {
  long long num = 0, den = 1;  // the source coordinate, num / den >= 0
  if (align_corners) {
    if (out > 1) {
      num = static_cast<long long>(i) * (in - 1);
      den = out - 1;
    }
  } else {
    num = (2LL * i + 1) * in - out;
    den = 2LL * out;
    if (num < 0) num = 0;
  }
  const long long i0 = num / den;
  if (i0 >= in - 1) return ResizeTap{in - 1, in - 1, 0.0f};
  const float w1 = static_cast<float>(num - i0 * den) / static_cast<float>(den);
  return ResizeTap{static_cast<int>(i0), static_cast<int>(i0) + 1, w1};
}

INFER_HOST_DEVICE inline float resize_mix(float v0, float v1, float w1) { return (1.0f - w1) * v0 + w1 * v1; }

// The output value from the four input values around it: v00 (row y0, column x0), v01 (y0, x1),
// v10 (y1, x0), v11 (y1, x1).
INFER_HOST_DEVICE inline float resize_value(float v00, float v01, float v10, float v11, const ResizeTap& ty,
                                            const ResizeTap& tx) {
  return resize_mix(resize_mix(v00, v01, tx.w1), resize_mix(v10, v11, tx.w1), ty.w1);
}

}  // namespace infer
