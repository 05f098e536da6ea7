// The device code of the pointwise ops (kernels.h, Kernels::pointwise, has the contract): one thread
// per element, grid-stride loop, the formulas of graph/pointwise_formula.h. Device code only,
// without the standard library: nvcc (CUDA 13) and NVRTC (CUDA 12) compile it.
#pragma once

#include <cuda_fp16.h>

#include "graph/pointwise_formula.h"

namespace infer::cudnn::kernels {

__global__ void pointwise_kernel(int op, float a, float b, const void* x, void* y, size_t count, int half) {
  const auto f = [=](float v) { return pointwise_value(static_cast<PointwiseOp>(op), a, b, v); };
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if (half) {
      static_cast<__half*>(y)[i] = __float2half_rn(f(__half2float(static_cast<const __half*>(x)[i])));
    } else {
      static_cast<float*>(y)[i] = f(static_cast<const float*>(x)[i]);
    }
  }
}

}  // namespace infer::cudnn::kernels
