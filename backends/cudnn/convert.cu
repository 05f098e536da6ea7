// Conversion kernels of convert.h: one thread per element of the output, grid-stride loop.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstddef>

#include "backends/cudnn/convert.h"

namespace infer::cudnn {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 4096;  // the grid-stride loop covers the rest

__global__ void float_nchw_to_half_nhwc(const float* in, __half* out, std::size_t total, int c, int h, int w) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    // i is the NHWC index of out: i = ((n * h + y) * w + x) * c + ch
    const std::size_t ch = i % c;
    const std::size_t x = i / c % w;
    const std::size_t y = i / (static_cast<std::size_t>(c) * w) % h;
    const std::size_t n = i / (static_cast<std::size_t>(c) * w * h);
    out[i] = __float2half_rn(in[((n * c + ch) * h + y) * w + x]);
  }
}

__global__ void half_nhwc_to_float_nchw(const __half* in, float* out, std::size_t total, int c, int h, int w) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    // i is the NCHW index of out: i = ((n * c + ch) * h + y) * w + x
    const std::size_t x = i % w;
    const std::size_t y = i / w % h;
    const std::size_t ch = i / (static_cast<std::size_t>(w) * h) % c;
    const std::size_t n = i / (static_cast<std::size_t>(w) * h * c);
    out[i] = __half2float(in[((n * h + y) * w + x) * c + ch]);
  }
}

unsigned blocks_for(std::size_t total) {
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(kMaxBlocks, (total + kThreads - 1) / kThreads)));
}

}  // namespace

cudaError_t launch_float_nchw_to_half_nhwc(const float* in, void* out, int n, int c, int h, int w,
                                           cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(n) * c * h * w;
  (void)cudaGetLastError();  // clear an earlier call's error: the check below reports this launch only
  float_nchw_to_half_nhwc<<<blocks_for(total), kThreads, 0, stream>>>(in, static_cast<__half*>(out), total, c, h, w);
  return cudaGetLastError();
}

cudaError_t launch_half_nhwc_to_float_nchw(const void* in, float* out, int n, int c, int h, int w,
                                           cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(n) * c * h * w;
  (void)cudaGetLastError();  // clear an earlier call's error: the check below reports this launch only
  half_nhwc_to_float_nchw<<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const __half*>(in), out, total, c, h,
                                                                      w);
  return cudaGetLastError();
}

}  // namespace infer::cudnn
