// The formula of every pointwise op (INFER_POINTWISE_OPS in ops.h), y = f(x; a, b), in float. One
// definition for both backends: the CPU kernel (backends/cpu/activation.cpp) and the CUDA kernel
// (backends/cudnn/kernels/pointwise.cuh) both call pointwise_value, so the tests that check the CPU against
// the double-precision reference check the GPU's formula too.
//
// A NaN x gives NaN for every op (PyTorch's behaviour): fminf and fmaxf would return the bound, so
// the clamps pass NaN through. expf, erff and IEEE division, no fast math: the tests' bounds assume
// expf's and erff's documented errors (CUDA: 2 ulp each; glibc: less) and a correctly rounded
// quotient.
#pragma once

#if !defined(__CUDACC_RTC__)  // NVRTC has the math functions built in, and no <math.h>
#include <math.h>
#endif

#include "graph/pointwise_op.h"

#if defined(__CUDACC__)
#define INFER_HOST_DEVICE __host__ __device__
#else
#define INFER_HOST_DEVICE
#endif

namespace infer {

// max(lo, min(hi, v)), NaN passed through.
INFER_HOST_DEVICE inline float pointwise_clamp(float v, float lo, float hi) {
  return v != v ? v : fminf(fmaxf(v, lo), hi);
}

INFER_HOST_DEVICE inline float pointwise_value(PointwiseOp op, float a, float b, float x) {
  switch (op) {
    case PointwiseOp::Sigmoid: return 1.0f / (1.0f + expf(-x));
    case PointwiseOp::Clip: return pointwise_clamp(x, a, b);  // a = min, b = max; ReLU6 is 0, 6
    case PointwiseOp::HardSigmoid: return x != x ? x : pointwise_clamp(a * x + b, 0.0f, 1.0f);  // a = alpha, b = beta
    case PointwiseOp::HardSwish: return x != x ? x : x * pointwise_clamp(a * x + b, 0.0f, 1.0f);
    case PointwiseOp::Silu: return x / (1.0f + expf(-x));
    case PointwiseOp::LeakyRelu: return x < 0.0f ? a * x : x;  // a = alpha; NaN < 0 is false: NaN
    // GELU, the exact form (PyTorch's nn.GELU()): x Phi(x) = x (1 + erf(x / sqrt 2)) / 2. Like the
    // Div, Erf, Add, Mul, Mul that PyTorch exports for it, -inf gives NaN (-inf times 0).
    case PointwiseOp::Gelu: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  }
  return x;  // not reached: every op returns above
}

}  // namespace infer
