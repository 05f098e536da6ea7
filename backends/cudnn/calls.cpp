// The wrappers of calls.h: each passes its views' pointers to the one library call it names.
#include "backends/cudnn/calls.h"

#include <string>

#include "backends/cudnn/half.h"

namespace infer::cudnn {
namespace {

constexpr float kOne = 1.0f;
constexpr float kZero = 0.0f;

std::size_t elements(int n, int c, int h, int w) {
  return static_cast<std::size_t>(n) * static_cast<std::size_t>(c) * static_cast<std::size_t>(h) *
         static_cast<std::size_t>(w);
}

// The size checks of calls.h: `needed` bytes of `arg` must lie within the view's `available`.
void require_fits(const char* call, const char* arg, std::size_t needed, std::size_t available) {
  if (needed <= available) return;
  throw std::logic_error(std::string(call) + ": " + arg + " needs " + std::to_string(needed) +
                         " bytes, its view of device memory holds " + std::to_string(available));
}

}  // namespace

cudnnStatus_t convolution_forward(cudnnHandle_t handle, TensorIn x, FilterIn w,
                                  cudnnConvolutionDescriptor_t convolution, cudnnConvolutionFwdAlgo_t algo,
                                  DeviceOut workspace, TensorOut y) {
  return cudnnConvolutionForward(handle, &kOne, x.desc(), x.data(), w.desc(), w.data(), convolution, algo,
                                 workspace.get(), workspace.bytes(), &kZero, y.desc(), y.data());
}

cudnnStatus_t convolution_bias_activation_forward(cudnnHandle_t handle, TensorIn x, FilterIn w,
                                                  cudnnConvolutionDescriptor_t convolution,
                                                  cudnnConvolutionFwdAlgo_t algo, DeviceOut workspace, TensorIn z,
                                                  bool add_z, TensorIn bias, cudnnActivationDescriptor_t activation,
                                                  TensorOut y) {
  return cudnnConvolutionBiasActivationForward(handle, &kOne, x.desc(), x.data(), w.desc(), w.data(), convolution, algo,
                                               workspace.get(), workspace.bytes(), add_z ? &kOne : &kZero, z.desc(),
                                               z.data(), bias.desc(), bias.data(), activation, y.desc(), y.data());
}

cudnnStatus_t add_tensor(cudnnHandle_t handle, TensorIn bias, TensorOut y) {
  return cudnnAddTensor(handle, &kOne, bias.desc(), bias.data(), &kOne, y.desc(), y.data());
}

cudnnStatus_t activation_forward(cudnnHandle_t handle, cudnnActivationDescriptor_t activation, TensorIn x,
                                 TensorOut y) {
  return cudnnActivationForward(handle, activation, &kOne, x.desc(), x.data(), &kZero, y.desc(), y.data());
}

cudnnStatus_t batch_norm_forward_inference(cudnnHandle_t handle, TensorIn x, TensorOut y, const BatchNormParams& params,
                                           double epsilon) {
  return cudnnBatchNormalizationForwardInference(handle, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x.desc(), x.data(),
                                                 y.desc(), y.data(), params.desc, params.scale.get(), params.bias.get(),
                                                 params.mean.get(), params.variance.get(), epsilon);
}

cudnnStatus_t pooling_forward(cudnnHandle_t handle, cudnnPoolingDescriptor_t pooling, TensorIn x, TensorOut y) {
  return cudnnPoolingForward(handle, pooling, &kOne, x.desc(), x.data(), &kZero, y.desc(), y.data());
}

cudnnStatus_t softmax_forward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algorithm, cudnnSoftmaxMode_t mode,
                              TensorIn x, TensorOut y) {
  return cudnnSoftmaxForward(handle, algorithm, mode, &kOne, x.desc(), x.data(), &kZero, y.desc(), y.data());
}

cudnnStatus_t transform_tensor(cudnnHandle_t handle, TensorIn x, TensorOut y) {
  return cudnnTransformTensor(handle, &kOne, x.desc(), x.data(), &kZero, y.desc(), y.data());
}

cudnnStatus_t fill_tensor(cudnnHandle_t handle, TensorOut y, cudnnDataType_t type, float value) {
  if (type == CUDNN_DATA_HALF) {
    const std::uint16_t half = float_to_half(value);
    return cudnnSetTensor(handle, y.desc(), y.data(), &half);
  }
  return cudnnSetTensor(handle, y.desc(), y.data(), &value);
}

cudnnStatus_t op_tensor(cudnnHandle_t handle, cudnnOpTensorDescriptor_t op, TensorIn a, TensorIn b, TensorOut c) {
  return cudnnOpTensor(handle, op, &kOne, a.desc(), a.data(), &kOne, b.desc(), b.data(), &kZero, c.desc(), c.data());
}

cudnnStatus_t find_convolution_forward_algorithms(cudnnHandle_t handle, TensorIn x, FilterIn w,
                                                  cudnnConvolutionDescriptor_t convolution, TensorOut y,
                                                  DeviceOut workspace,
                                                  std::vector<cudnnConvolutionFwdAlgoPerf_t>& results) {
  int returned = 0;
  const cudnnStatus_t s = cudnnFindConvolutionForwardAlgorithmEx(
      handle, x.desc(), x.data(), w.desc(), w.data(), convolution, y.desc(), y.data(), static_cast<int>(results.size()),
      &returned, results.data(), workspace.get(), workspace.bytes());
  if (s == CUDNN_STATUS_SUCCESS) results.resize(static_cast<std::size_t>(returned));
  return s;
}

cudaError_t copy_to_device(DeviceOut dst, const void* host, std::size_t bytes, cudaStream_t stream) {
  require_fits("copy_to_device", "dst", bytes, dst.bytes());
  return cudaMemcpyAsync(dst.get(), host, bytes, cudaMemcpyHostToDevice, stream);
}

cudaError_t copy_to_host(void* host, DeviceIn src, std::size_t bytes, cudaStream_t stream) {
  require_fits("copy_to_host", "src", bytes, src.bytes());
  return cudaMemcpyAsync(host, src.get(), bytes, cudaMemcpyDeviceToHost, stream);
}

cudaError_t fill_zero(DeviceOut dst, cudaStream_t stream) {
  if (dst.bytes() == 0) return cudaSuccess;
  return cudaMemsetAsync(dst.get(), 0, dst.bytes(), stream);
}

LaunchStatus convert_float_nchw_to_half_nhwc(const Kernels& kernels, DeviceIn in, DeviceOut out, int n, int c, int h,
                                             int w, cudaStream_t stream) {
  const std::size_t count = elements(n, c, h, w);
  require_fits("convert_float_nchw_to_half_nhwc", "in", count * sizeof(float), in.bytes());
  require_fits("convert_float_nchw_to_half_nhwc", "out", count * 2, out.bytes());
  return kernels.float_nchw_to_half_nhwc(static_cast<const float*>(in.get()), out.get(), n, c, h, w, stream);
}

LaunchStatus convert_half_nhwc_to_float_nchw(const Kernels& kernels, DeviceIn in, DeviceOut out, int n, int c, int h,
                                             int w, cudaStream_t stream) {
  const std::size_t count = elements(n, c, h, w);
  require_fits("convert_half_nhwc_to_float_nchw", "in", count * 2, in.bytes());
  require_fits("convert_half_nhwc_to_float_nchw", "out", count * sizeof(float), out.bytes());
  return kernels.half_nhwc_to_float_nchw(in.get(), static_cast<float*>(out.get()), n, c, h, w, stream);
}

LaunchStatus pointwise(const Kernels& kernels, int op, float a, float b, DeviceIn x, DeviceOut y, std::size_t count,
                       bool half, cudaStream_t stream) {
  const std::size_t bytes = count * (half ? 2 : sizeof(float));
  require_fits("pointwise", "x", bytes, x.bytes());
  require_fits("pointwise", "y", bytes, y.bytes());
  return kernels.pointwise(op, a, b, x.get(), y.get(), count, half, stream);
}

LaunchStatus resize_bilinear(const Kernels& kernels, DeviceIn x, DeviceOut y, int n, int c, int in_h, int in_w,
                             int out_h, int out_w, bool align_corners, bool half, bool nhwc, cudaStream_t stream) {
  const std::size_t element = half ? 2 : sizeof(float);
  require_fits("resize_bilinear", "x", elements(n, c, in_h, in_w) * element, x.bytes());
  require_fits("resize_bilinear", "y", elements(n, c, out_h, out_w) * element, y.bytes());
  return kernels.resize_bilinear(x.get(), y.get(), n, c, in_h, in_w, out_h, out_w, align_corners, half, nhwc, stream);
}

LaunchStatus layernorm(const Kernels& kernels, DeviceIn x, DeviceOut y, DeviceIn weight, DeviceIn bias, int n, int c,
                       int h, int w, float epsilon, bool half, bool nhwc, cudaStream_t stream) {
  const std::size_t bytes = elements(n, c, h, w) * (half ? 2 : sizeof(float));
  require_fits("layernorm", "x", bytes, x.bytes());
  require_fits("layernorm", "y", bytes, y.bytes());
  require_fits("layernorm", "weight", static_cast<std::size_t>(c) * sizeof(float), weight.bytes());
  require_fits("layernorm", "bias", static_cast<std::size_t>(c) * sizeof(float), bias.bytes());
  return kernels.layernorm(x.get(), y.get(), static_cast<const float*>(weight.get()),
                           static_cast<const float*>(bias.get()), n, c, h * w, epsilon, half, nhwc, stream);
}

LaunchStatus select_top_k(const Kernels& kernels, DeviceIn scores, int n, int classes, int k, DeviceOut classes_out,
                          DeviceOut scores_out, cudaStream_t stream) {
  require_fits("select_top_k", "scores", elements(n, classes, 1, 1) * sizeof(float), scores.bytes());
  require_fits("select_top_k", "classes_out", elements(n, k, 1, 1) * sizeof(int), classes_out.bytes());
  require_fits("select_top_k", "scores_out", elements(n, k, 1, 1) * sizeof(float), scores_out.bytes());
  return kernels.top_k(static_cast<const float*>(scores.get()), n, classes, k, static_cast<int*>(classes_out.get()),
                       static_cast<float*>(scores_out.get()), stream);
}

LaunchStatus select_softmax_top_k(const Kernels& kernels, DeviceIn logits, bool half, int n, int classes, int k,
                                  DeviceOut classes_out, DeviceOut scores_out, cudaStream_t stream) {
  const std::size_t element = half ? 2 : sizeof(float);
  require_fits("select_softmax_top_k", "logits", elements(n, classes, 1, 1) * element, logits.bytes());
  require_fits("select_softmax_top_k", "classes_out", elements(n, k, 1, 1) * sizeof(int), classes_out.bytes());
  require_fits("select_softmax_top_k", "scores_out", elements(n, k, 1, 1) * sizeof(float), scores_out.bytes());
  return kernels.softmax_top_k(logits.get(), half, n, classes, k, static_cast<int*>(classes_out.get()),
                               static_cast<float*>(scores_out.get()), stream);
}

}  // namespace infer::cudnn
