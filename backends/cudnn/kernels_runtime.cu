// The kernels of kernels.h for the CUDA 13 backend: compiled by nvcc into the module, launched with <<<>>>.
#include "backends/cudnn/kernels.h"

#include "backends/cudnn/kernels/convert.cuh"
#include "backends/cudnn/kernels/pointwise.cuh"
#include "backends/cudnn/kernels/resize.cuh"
#include "backends/cudnn/kernels/layernorm.cuh"
#include "backends/cudnn/kernels/top_k.cuh"
#include "graph/ops.h"

namespace infer::cudnn {
namespace {

// The launch's own error: an earlier call's error was cleared before it.
LaunchStatus status_of_launch() {
  const cudaError_t e = cudaGetLastError();
  return LaunchStatus{static_cast<int>(e), cudaGetErrorName(e), cudaGetErrorString(e)};
}

}  // namespace

struct Kernels::Module {};

Kernels::Kernels() = default;
Kernels::~Kernels() = default;

const char* Kernels::route() { return "kernels: nvcc SASS sm_90 + PTX compute_75, CUDA runtime launches"; }

LaunchStatus Kernels::float_nchw_to_half_nhwc(const float* in, void* out, int n, int c, int h, int w,
                                              cudaStream_t stream) const {
  const std::size_t total = static_cast<std::size_t>(n) * c * h * w;
  (void)cudaGetLastError();
  kernels::float_nchw_to_half_nhwc<<<element_blocks(total), kElementThreads, 0, stream>>>(in, static_cast<__half*>(out),
                                                                                          total, c, h, w);
  return status_of_launch();
}

LaunchStatus Kernels::half_nhwc_to_float_nchw(const void* in, float* out, int n, int c, int h, int w,
                                              cudaStream_t stream) const {
  const std::size_t total = static_cast<std::size_t>(n) * c * h * w;
  (void)cudaGetLastError();
  kernels::half_nhwc_to_float_nchw<<<element_blocks(total), kElementThreads, 0, stream>>>(
      static_cast<const __half*>(in), out, total, c, h, w);
  return status_of_launch();
}

LaunchStatus Kernels::pointwise(int op, float a, float b, const void* x, void* y, std::size_t count, bool half,
                                cudaStream_t stream) const {
  if (op < 0 || static_cast<std::size_t>(op) >= kPointwiseCount) {
    return LaunchStatus{cudaErrorInvalidValue, cudaGetErrorName(cudaErrorInvalidValue),
                        cudaGetErrorString(cudaErrorInvalidValue)};
  }
  if (count == 0) return LaunchStatus{};
  (void)cudaGetLastError();
  kernels::pointwise_kernel<<<element_blocks(count), kElementThreads, 0, stream>>>(op, a, b, x, y, count, half ? 1 : 0);
  return status_of_launch();
}

LaunchStatus Kernels::resize_bilinear(const void* x, void* y, int n, int c, int in_h, int in_w, int out_h, int out_w,
                                     bool align_corners, bool half, bool nhwc, cudaStream_t stream) const {
  const std::size_t total = static_cast<std::size_t>(n) * c * out_h * out_w;
  if (total == 0) return LaunchStatus{};
  const int flags = (align_corners ? kernels::kResizeAlignCorners : 0) | (half ? kernels::kResizeHalf : 0) |
                    (nhwc ? kernels::kResizeNhwc : 0);
  (void)cudaGetLastError();
  kernels::resize_bilinear_kernel<<<element_blocks(total), kElementThreads, 0, stream>>>(x, y, n, c, in_h, in_w, out_h,
                                                                                         out_w, flags);
  return status_of_launch();
}

LaunchStatus Kernels::layernorm(const void* x, void* y, const float* weight, const float* bias, int n, int c, int plane,
                               float epsilon, bool half, bool nhwc, cudaStream_t stream) const {
  const std::size_t pixels = static_cast<std::size_t>(n) * plane;
  if (pixels == 0 || c == 0) return LaunchStatus{};
  const int flags = (half ? kernels::kLayerNormHalf : 0) | (nhwc ? kernels::kLayerNormNhwc : 0);
  (void)cudaGetLastError();
  kernels::layernorm_kernel<<<element_blocks(pixels), kElementThreads, 0, stream>>>(x, y, weight, bias, n, c, plane,
                                                                                    epsilon, flags);
  return status_of_launch();
}

LaunchStatus Kernels::top_k(const float* scores_in, int n, int classes, int k, int* classes_out, float* scores_out,
                            cudaStream_t stream) const {
  (void)cudaGetLastError();
  kernels::top_k_kernel<<<static_cast<unsigned>(n), kTopKThreads, 0, stream>>>(scores_in, classes, k, classes_out,
                                                                               scores_out);
  return status_of_launch();
}

LaunchStatus Kernels::softmax_top_k(const void* logits, bool half, int n, int classes, int k, int* classes_out,
                                    float* scores_out, cudaStream_t stream) const {
  (void)cudaGetLastError();
  kernels::softmax_top_k_kernel<<<static_cast<unsigned>(n), kTopKThreads, 0, stream>>>(logits, half ? 1 : 0, classes,
                                                                                       k, classes_out, scores_out);
  return status_of_launch();
}

}  // namespace infer::cudnn
