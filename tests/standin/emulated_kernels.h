// Our own kernels (backends/cudnn/kernels/*.cuh) as the stand-in runs them: their device code,
// compiled for the host (device_emulation.h), over the grid and block of the launch. kernels.cpp
// checks a launch's arguments and enqueues these on its stream. Parameters as in the .cuh files;
// half tensors as void pointers (NVIDIA's __half stays inside emulated_kernels.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace standin::emulated {

void float_nchw_to_half_nhwc(dim3 grid, dim3 block, const float* in, void* out, std::size_t total, int c, int h, int w);
void half_nhwc_to_float_nchw(dim3 grid, dim3 block, const void* in, float* out, std::size_t total, int c, int h, int w);
void top_k_kernel(dim3 grid, dim3 block, const float* scores_in, int classes, int k, int* classes_out,
                  float* scores_out);
void softmax_top_k_kernel(dim3 grid, dim3 block, const void* logits, int half, int classes, int k, int* classes_out,
                          float* scores_out);
void pointwise_kernel(dim3 grid, dim3 block, int op, float a, float b, const void* x, void* y, std::size_t count,
                      int half);
void resize_bilinear_kernel(dim3 grid, dim3 block, const void* x, void* y, int n, int c, int in_h, int in_w, int out_h,
                            int out_w, int flags);
void layernorm_kernel(dim3 grid, dim3 block, const void* x, void* y, const float* weight, const float* bias, int n,
                      int c, int plane, float eps, int flags);

}  // namespace standin::emulated
