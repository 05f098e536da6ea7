// The backend's kernels, the very code nvcc and NVRTC compile for the GPU, compiled here for the
// host and run over an emulated grid (device_emulation.h must come before the .cuh files).
#include "tests/standin/emulated_kernels.h"

#include "tests/standin/device_emulation.h"

#include "backends/cudnn/kernels/convert.cuh"
#include "backends/cudnn/kernels/layernorm.cuh"
#include "backends/cudnn/kernels/pointwise.cuh"
#include "backends/cudnn/kernels/resize.cuh"
#include "backends/cudnn/kernels/top_k.cuh"

namespace standin::emulated {

namespace kernels = infer::cudnn::kernels;

void float_nchw_to_half_nhwc(dim3 grid, dim3 block, const float* in, void* out, std::size_t total, int c, int h,
                             int w) {
  run_grid("float_nchw_to_half_nhwc", grid, block, false,
           [=] { kernels::float_nchw_to_half_nhwc(in, static_cast<__half*>(out), total, c, h, w); });
}

void half_nhwc_to_float_nchw(dim3 grid, dim3 block, const void* in, float* out, std::size_t total, int c, int h,
                             int w) {
  run_grid("half_nhwc_to_float_nchw", grid, block, false,
           [=] { kernels::half_nhwc_to_float_nchw(static_cast<const __half*>(in), out, total, c, h, w); });
}

void top_k_kernel(dim3 grid, dim3 block, const float* scores_in, int classes, int k, int* classes_out,
                  float* scores_out) {
  run_grid("top_k_kernel", grid, block, true,
           [=] { kernels::top_k_kernel(scores_in, classes, k, classes_out, scores_out); });
}

void softmax_top_k_kernel(dim3 grid, dim3 block, const void* logits, int half, int classes, int k, int* classes_out,
                          float* scores_out) {
  run_grid("softmax_top_k_kernel", grid, block, true,
           [=] { kernels::softmax_top_k_kernel(logits, half, classes, k, classes_out, scores_out); });
}

void pointwise_kernel(dim3 grid, dim3 block, int op, float a, float b, const void* x, void* y, std::size_t count,
                      int half) {
  run_grid("pointwise_kernel", grid, block, false, [=] { kernels::pointwise_kernel(op, a, b, x, y, count, half); });
}

void resize_bilinear_kernel(dim3 grid, dim3 block, const void* x, void* y, int n, int c, int in_h, int in_w, int out_h,
                            int out_w, int flags) {
  run_grid("resize_bilinear_kernel", grid, block, false,
           [=] { kernels::resize_bilinear_kernel(x, y, n, c, in_h, in_w, out_h, out_w, flags); });
}

void layernorm_kernel(dim3 grid, dim3 block, const void* x, void* y, const float* weight, const float* bias, int n,
                      int c, int plane, float eps, int flags) {
  run_grid("layernorm_kernel", grid, block, false,
           [=] { kernels::layernorm_kernel(x, y, weight, bias, n, c, plane, eps, flags); });
}

}  // namespace standin::emulated
