// The device code of the layer normalisation over the channels (kernels.h, Kernels::layernorm, has
// the contract): one thread per pixel, grid-stride loop, the CPU kernel's formula
// (backends/cpu/layernorm.cpp): mean and variance by two passes in float, then
// y = (x - mean) / sqrt(var + eps) * weight + bias. In NCHW neighbouring threads read neighbouring
// pixels of each plane, so every pass over the channels is coalesced. Device code only, without
// the standard library: nvcc (CUDA 13) and NVRTC (CUDA 12) compile it.
#pragma once

#include <cuda_fp16.h>

namespace infer::cudnn::kernels {

// The bits of layernorm_kernel's `flags`.
constexpr int kLayerNormHalf = 1;  // x and y hold IEEE half values, else floats (weight, bias: floats)
constexpr int kLayerNormNhwc = 2;  // x and y are NHWC, else NCHW

__global__ void layernorm_kernel(const void* x, void* y, const float* weight, const float* bias, int n, int c,
                                 int plane, float eps, int flags) {
  const bool half = (flags & kLayerNormHalf) != 0, nhwc = (flags & kLayerNormNhwc) != 0;
  const size_t pixels = static_cast<size_t>(n) * plane;
  const float inv_c = 1.0f / static_cast<float>(c);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < pixels;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    // Channel ch of pixel i is element first + ch * stride.
    const size_t b = i / plane, p = i % plane;
    const size_t first = nhwc ? i * c : b * c * plane + p;
    const size_t stride = nhwc ? 1 : static_cast<size_t>(plane);
    const auto at = [&](int ch) {
      const size_t j = first + ch * stride;
      return half ? __half2float(static_cast<const __half*>(x)[j]) : static_cast<const float*>(x)[j];
    };
    float mean = 0.0f;
    for (int ch = 0; ch < c; ++ch) mean += at(ch);
    mean *= inv_c;
    float var = 0.0f;
    for (int ch = 0; ch < c; ++ch) {
      const float d = at(ch) - mean;
      var += d * d;
    }
    const float r = 1.0f / sqrtf(var * inv_c + eps);
    for (int ch = 0; ch < c; ++ch) {
      const float v = (at(ch) - mean) * r * weight[ch] + bias[ch];
      const size_t j = first + ch * stride;
      if (half) {
        static_cast<__half*>(y)[j] = __float2half_rn(v);
      } else {
        static_cast<float*>(y)[j] = v;
      }
    }
  }
}

}  // namespace infer::cudnn::kernels
