// The device code of the layout and type conversions (kernels.h has the contract):
// one thread per element of the output, grid-stride loop. Device code only, without the standard
// library: nvcc (CUDA 13) and NVRTC (CUDA 12) compile it.
#pragma once

#include <cuda_fp16.h>

namespace infer::cudnn::kernels {

__global__ void float_nchw_to_half_nhwc(const float* in, __half* out, size_t total, int c, int h, int w) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    // i is the NHWC index of out: i = ((n * h + y) * w + x) * c + ch
    const size_t ch = i % c;
    const size_t x = i / c % w;
    const size_t y = i / (static_cast<size_t>(c) * w) % h;
    const size_t n = i / (static_cast<size_t>(c) * w * h);
    out[i] = __float2half_rn(in[((n * c + ch) * h + y) * w + x]);
  }
}

__global__ void half_nhwc_to_float_nchw(const __half* in, float* out, size_t total, int c, int h, int w) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    // i is the NCHW index of out: i = ((n * c + ch) * h + y) * w + x
    const size_t x = i % w;
    const size_t y = i / w % h;
    const size_t ch = i / (static_cast<size_t>(w) * h) % c;
    const size_t n = i / (static_cast<size_t>(w) * h * c);
    out[i] = __half2float(in[((n * h + y) * w + x) * c + ch]);
  }
}

}  // namespace infer::cudnn::kernels
