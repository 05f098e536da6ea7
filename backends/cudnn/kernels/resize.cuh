// The device code of the bilinear resize (kernels.h, Kernels::resize_bilinear, has the contract):
// one thread per output element, grid-stride loop, graph/resize_formula.h's formula. Device code
// only, without the standard library: nvcc (CUDA 13) and NVRTC (CUDA 12) compile it.
#pragma once

#include <cuda_fp16.h>

#include "graph/resize_formula.h"

namespace infer::cudnn::kernels {

// The bits of resize_bilinear_kernel's `flags`.
constexpr int kResizeAlignCorners = 1;
constexpr int kResizeHalf = 2;  // x and y hold IEEE half values, else floats
constexpr int kResizeNhwc = 4;  // x and y are NHWC, else NCHW

__global__ void resize_bilinear_kernel(const void* x, void* y, int n, int c, int in_h, int in_w, int out_h, int out_w,
                                       int flags) {
  const bool align = (flags & kResizeAlignCorners) != 0, half = (flags & kResizeHalf) != 0;
  const bool nhwc = (flags & kResizeNhwc) != 0;
  const size_t total = static_cast<size_t>(n) * c * out_h * out_w;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    // The output element's sample, channel, row and column, in its layout.
    size_t rest = i;
    int ch = 0;
    if (nhwc) {
      ch = static_cast<int>(rest % c);
      rest /= c;
    }
    const int ox = static_cast<int>(rest % out_w);
    rest /= out_w;
    const int oy = static_cast<int>(rest % out_h);
    rest /= out_h;
    if (!nhwc) {
      ch = static_cast<int>(rest % c);
      rest /= c;
    }
    const size_t b = rest;
    // Input element (row, column) of this sample and channel.
    const auto at = [&](int row, int col) {
      const size_t j = nhwc ? ((b * in_h + row) * in_w + col) * c + ch : ((b * c + ch) * in_h + row) * in_w + col;
      return half ? __half2float(static_cast<const __half*>(x)[j]) : static_cast<const float*>(x)[j];
    };
    const ResizeTap ty = resize_tap(oy, in_h, out_h, align), tx = resize_tap(ox, in_w, out_w, align);
    const float v = resize_value(at(ty.i0, tx.i0), at(ty.i0, tx.i1), at(ty.i1, tx.i0), at(ty.i1, tx.i1), ty, tx);
    if (half) {
      static_cast<__half*>(y)[i] = __float2half_rn(v);
    } else {
      static_cast<float*>(y)[i] = v;
    }
  }
}

}  // namespace infer::cudnn::kernels
