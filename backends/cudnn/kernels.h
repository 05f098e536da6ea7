// The backend's own kernels (kernels/*.cuh: top-k selection, alone or after a softmax, the fp16 layout conversions, the
// pointwise ops, the bilinear resize, the layer normalisation), ready to launch on the device that was current when the
// object was made. How they reach the GPU depends on the CUDA major this module is built for (INFER_CUDA_MAJOR):
//
//   13  kernels_runtime.cu. nvcc compiled them into the module (SASS for sm_90, PTX for compute_75)
//       and the CUDA runtime loads them; launches are kernel<<<...>>>. There is nothing to hold.
//   12  kernels_driver.cpp. There is no nvcc for CUDA 12 here (docs/gpu.md), so NVRTC 12.0 made PTX
//       ISA 8.0 for compute_50 at build time (cmake/ptxgen.py, kernels_ptx.h). The constructor loads
//       it into the current context with the driver API (cuModuleLoadDataEx: the driver compiles it
//       for this GPU and keeps the result in its compute cache); cuLaunchKernel launches. Every
//       CUDA 12 driver (>= 525.60.13) reads ISA 8.0, and compute_50 runs on every GPU from Maxwell
//       on. libcudart 12.0 cannot load a module from memory, hence the driver API (libcuda.so.1,
//       opened with dlopen: it is the driver's own library, present wherever a GPU is).
//
// Either way a launch goes on `stream` (capturable into a CUDA graph: cuLaunchKernel is, like
// <<<>>>) and returns its status. The size checks against the buffers are calls.h's.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

namespace infer::cudnn {

// A launch's outcome: code 0 on success, else the CUDA runtime's (13) or the driver's (12) error
// code with its name and description, for INFER_KERNEL_CHECK (check.h).
struct LaunchStatus {
  int code = 0;
  const char* name = "";
  const char* description = "";
  bool ok() const { return code == 0; }
};

class Kernels {
 public:
  // Loads the kernels for the current device (12: throws GpuError with the driver's JIT log when
  // the PTX does not load; 13: nothing to do).
  Kernels();
  ~Kernels();
  Kernels(const Kernels&) = delete;
  Kernels& operator=(const Kernels&) = delete;

  // How the kernels reach the GPU, for the verbose log ("kernels: nvcc SASS sm_90 + ...").
  static const char* route();

  // Layout and type conversion between the network's float NCHW tensors and the half NHWC tensors
  // of the Fp16 plan (plan.h): own kernels rather than cudnnTransformTensor, which cuDNN documents
  // for a change of layout and which returns CUDNN_STATUS_BAD_PARAM when the two data types differ;
  // these do both in one pass. n x c x h x w elements, fully packed (the count may pass 2^31).
  //   out[n][h][w][c] = half(in[n][c][h][w]), rounded to nearest even; `out` holds half values.
  LaunchStatus float_nchw_to_half_nhwc(const float* in, void* out, int n, int c, int h, int w,
                                       cudaStream_t stream) const;
  //   out[n][c][h][w] = float(in[n][h][w][c]), exact; `in` holds half values.
  LaunchStatus half_nhwc_to_float_nchw(const void* in, float* out, int n, int c, int h, int w,
                                       cudaStream_t stream) const;

  // The pointwise ops (graph/pointwise_op.h), which cuDNN's legacy API does not cover as the
  // network defines them: y[i] = f(x[i]) for i < count, with graph/pointwise_formula.h's formulas,
  // computed in float. op is a PointwiseOp as an int (another code: an invalid-value error), a and
  // b its parameters. x and y hold `count` floats, or `count` IEEE half values when `half` (read as
  // half, rounded to nearest even on store). x == y is allowed. NaN in gives NaN out for every op.
  LaunchStatus pointwise(int op, float a, float b, const void* x, void* y, std::size_t count, bool half,
                         cudaStream_t stream) const;

  // Bilinear resize (graph/resize_formula.h) of n x c planes of in_h x in_w to out_h x out_w,
  // computed in float: x and y hold floats, or IEEE half values when `half` (rounded to nearest
  // even on store), NCHW or, when `nhwc`, NHWC. x and y must not overlap.
  LaunchStatus resize_bilinear(const void* x, void* y, int n, int c, int in_h, int in_w, int out_h, int out_w,
                               bool align_corners, bool half, bool nhwc, cudaStream_t stream) const;

  // Layer normalisation over the channels (network.h, LayerNormAttrs) of n samples of c channels of
  // `plane` pixels, computed in float: x and y hold floats, or IEEE half values when `half` (rounded
  // to nearest even on store), NCHW or, when `nhwc`, NHWC; weight and bias are c floats each.
  // x and y must not overlap.
  LaunchStatus layernorm(const void* x, void* y, const float* weight, const float* bias, int n, int c, int plane,
                         float epsilon, bool half, bool nhwc, cudaStream_t stream) const;

  // top_k.h: for each of n samples of `classes` float scores (scores_in, n x classes), the k best
  // into classes_out and scores_out (n x k each). The limits of check_top_k_limits must hold.
  LaunchStatus top_k(const float* scores_in, int n, int classes, int k, int* classes_out, float* scores_out,
                     cudaStream_t stream) const;

  // The softmax over each sample's `classes` logits (n x classes floats, or IEEE half values when
  // `half`) and the k best of its probabilities, in one launch (kernels/top_k.cuh): what a softmax
  // over the channels of 1 x 1 outputs followed by top_k computes, but for the order of the float
  // sum, without writing the probabilities. The same limits as top_k.
  LaunchStatus softmax_top_k(const void* logits, bool half, int n, int classes, int k, int* classes_out,
                             float* scores_out, cudaStream_t stream) const;

 private:
  struct Module;  // 12: the loaded module and its functions; 13: unused
  std::unique_ptr<Module> module_;
};

}  // namespace infer::cudnn
