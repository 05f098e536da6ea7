// The kernel of pointwise.h: one thread per element, grid-stride loop.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstddef>

#include "graph/pointwise_formula.h"
#include "backends/cudnn/pointwise.h"

namespace infer::cudnn {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 4096;  // the grid-stride loop covers the rest

__device__ float apply(int op, float a, float b, float v) {
  return pointwise_value(static_cast<PointwiseOp>(op), a, b, v);
}

__global__ void pointwise_kernel(int op, float a, float b, const void* x, void* y, std::size_t count, int half) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if (half) {
      const float v = __half2float(static_cast<const __half*>(x)[i]);
      static_cast<__half*>(y)[i] = __float2half_rn(apply(op, a, b, v));
    } else {
      static_cast<float*>(y)[i] = apply(op, a, b, static_cast<const float*>(x)[i]);
    }
  }
}

}  // namespace

cudaError_t launch_pointwise(int op, float a, float b, const void* x, void* y, std::size_t count, bool half,
                             cudaStream_t stream) {
  if (op < 0 || static_cast<std::size_t>(op) >= kPointwiseCount) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const unsigned blocks =
      static_cast<unsigned>(std::max<std::size_t>(1, std::min(kMaxBlocks, (count + kThreads - 1) / kThreads)));
  (void)cudaGetLastError();  // clear an earlier call's error: the check below reports this launch only
  pointwise_kernel<<<blocks, kThreads, 0, stream>>>(op, a, b, x, y, count, half ? 1 : 0);
  return cudaGetLastError();
}

}  // namespace infer::cudnn
