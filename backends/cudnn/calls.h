// Every device call the cuDNN backend makes, as a thin wrapper that takes typed views (buffers.h)
// instead of void pointers: an input where an output belongs, or the reverse, does not compile.
// The wrappers keep the library's argument order (read the cuDNN or CUDA documentation of the call
// named alongside) and add nothing but the types, fixed scaling factors and, where the arithmetic
// is ours (copies, memsets, our kernels), a size check against the views.
//
// Scaling: every cuDNN wrapper overwrites its output (alpha = 1, beta = 0; the output is not read)
// except add_tensor, which accumulates (alpha = beta = 1). The scaling factors are float: the
// compute type of every call here is float, for float and half data alike.
//
// Results: cuDNN wrappers return the call's cudnnStatus_t, CUDA wrappers the cudaError_t and our
// kernels' wrappers a LaunchStatus, for the caller's INFER_CUDNN_CHECK / INFER_CUDA_CHECK /
// INFER_KERNEL_CHECK (or, for probes, its own decision). A size
// check that fails throws std::logic_error: a bug here, never a condition of the device.
// Thread safety: that of the handle and stream passed.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/cudnn/buffers.h"
#include "backends/cudnn/kernels.h"

namespace infer::cudnn {

// cudnnConvolutionForward: y = conv(x, w). `workspace`: all of the view is offered.
cudnnStatus_t convolution_forward(cudnnHandle_t handle, TensorIn x, FilterIn w,
                                  cudnnConvolutionDescriptor_t convolution, cudnnConvolutionFwdAlgo_t algo,
                                  DeviceOut workspace, TensorOut y);

// cudnnConvolutionBiasActivationForward with alpha1 = 1 and alpha2 = 1 (add_z) or 0:
//   y = act(conv(x, w) + alpha2 * z + bias)
// z is read (cuDNN may read it even when alpha2 = 0) and never written; y is written. z must have
// y's shape and type; bias is [1, K, 1, 1]. Identity activation is documented for
// CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM only.
cudnnStatus_t convolution_bias_activation_forward(cudnnHandle_t handle, TensorIn x, FilterIn w,
                                                  cudnnConvolutionDescriptor_t convolution,
                                                  cudnnConvolutionFwdAlgo_t algo, DeviceOut workspace, TensorIn z,
                                                  bool add_z, TensorIn bias, cudnnActivationDescriptor_t activation,
                                                  TensorOut y);

// cudnnAddTensor: y += bias (broadcast over the dimensions of size 1 in bias; a residual of y's
// shape is added element by element).
cudnnStatus_t add_tensor(cudnnHandle_t handle, TensorIn bias, TensorOut y);

// cudnnActivationForward: y = act(x). x and y may name the same memory (in place).
cudnnStatus_t activation_forward(cudnnHandle_t handle, cudnnActivationDescriptor_t activation, TensorIn x, TensorOut y);

// Batch-norm parameters for cudnnBatchNormalizationForwardInference: float [1, C, 1, 1] each,
// described by `desc` (cudnnDeriveBNTensorDescriptor).
struct BatchNormParams {
  cudnnTensorDescriptor_t desc;
  DeviceIn scale;
  DeviceIn bias;
  DeviceIn mean;
  DeviceIn variance;
};

// cudnnBatchNormalizationForwardInference (spatial): y = scale * (x - mean) / sqrt(variance + epsilon) + bias.
cudnnStatus_t batch_norm_forward_inference(cudnnHandle_t handle, TensorIn x, TensorOut y, const BatchNormParams& params,
                                           double epsilon);

// cudnnPoolingForward: y = pool(x).
cudnnStatus_t pooling_forward(cudnnHandle_t handle, cudnnPoolingDescriptor_t pooling, TensorIn x, TensorOut y);

// cudnnSoftmaxForward: y = softmax(x).
cudnnStatus_t softmax_forward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algorithm, cudnnSoftmaxMode_t mode,
                              TensorIn x, TensorOut y);

// cudnnTransformTensor: y = x in y's layout (same type).
cudnnStatus_t transform_tensor(cudnnHandle_t handle, TensorIn x, TensorOut y);

// cudnnSetTensor: every element of y to `value`, given as a float and passed in y's data type
// (`type`: CUDNN_DATA_FLOAT or CUDNN_DATA_HALF), as cuDNN reads it.
cudnnStatus_t fill_tensor(cudnnHandle_t handle, TensorOut y, cudnnDataType_t type, float value);

// cudnnOpTensor with alpha1 = alpha2 = 1, beta = 0: c = op(a, b), b broadcast over its dimensions
// of size 1. c may name a's or b's memory.
cudnnStatus_t op_tensor(cudnnHandle_t handle, cudnnOpTensorDescriptor_t op, TensorIn a, TensorIn b, TensorOut c);

// cudnnFindConvolutionForwardAlgorithmEx: runs the algorithms on these buffers (y is overwritten
// with arbitrary values) and fills `results` with up to results.size() of them, fastest first; on
// success `results` is resized to the number returned. `workspace`: all of the view is offered.
cudnnStatus_t find_convolution_forward_algorithms(cudnnHandle_t handle, TensorIn x, FilterIn w,
                                                  cudnnConvolutionDescriptor_t convolution, TensorOut y,
                                                  DeviceOut workspace,
                                                  std::vector<cudnnConvolutionFwdAlgoPerf_t>& results);

// cudaMemcpyAsync of `bytes` from pinned host memory into device memory, and back. `bytes` must
// fit the view (std::logic_error otherwise).
cudaError_t copy_to_device(DeviceOut dst, const void* host, std::size_t bytes, cudaStream_t stream);
cudaError_t copy_to_host(void* host, DeviceIn src, std::size_t bytes, cudaStream_t stream);

// cudaMemsetAsync: every byte of the view to 0 (0.0 in float and in half).
cudaError_t fill_zero(DeviceOut dst, cudaStream_t stream);

// The kernels of kernels.h, with the views' sizes checked against n x c x h x w elements (half: 2
// bytes, float: 4) for the conversions, `count` elements for pointwise, and n x classes / n x k for
// top-k. They return the launch's status, for INFER_KERNEL_CHECK (check.h).
LaunchStatus convert_float_nchw_to_half_nhwc(const Kernels& kernels, DeviceIn in, DeviceOut out, int n, int c, int h,
                                             int w, cudaStream_t stream);
LaunchStatus convert_half_nhwc_to_float_nchw(const Kernels& kernels, DeviceIn in, DeviceOut out, int n, int c, int h,
                                             int w, cudaStream_t stream);
LaunchStatus pointwise(const Kernels& kernels, int op, float a, float b, DeviceIn x, DeviceOut y, std::size_t count,
                       bool half, cudaStream_t stream);
// x: n x c x in_h x in_w elements, y: n x c x out_h x out_w (half: 2 bytes each, float: 4).
LaunchStatus resize_bilinear(const Kernels& kernels, DeviceIn x, DeviceOut y, int n, int c, int in_h, int in_w,
                             int out_h, int out_w, bool align_corners, bool half, bool nhwc, cudaStream_t stream);
// x and y: n x c x h x w elements (half: 2 bytes each, float: 4); weight and bias: c floats each.
LaunchStatus layernorm(const Kernels& kernels, DeviceIn x, DeviceOut y, DeviceIn weight, DeviceIn bias, int n, int c,
                       int h, int w, float epsilon, bool half, bool nhwc, cudaStream_t stream);
// scores: n x classes floats; classes_out (ints) and scores_out (floats): n x k each.
LaunchStatus select_top_k(const Kernels& kernels, DeviceIn scores, int n, int classes, int k, DeviceOut classes_out,
                          DeviceOut scores_out, cudaStream_t stream);
// The same after a softmax, in one kernel: logits n x classes elements (half: 2 bytes each, float: 4).
LaunchStatus select_softmax_top_k(const Kernels& kernels, DeviceIn logits, bool half, int n, int classes, int k,
                                  DeviceOut classes_out, DeviceOut scores_out, cudaStream_t stream);

}  // namespace infer::cudnn
