// cudnnBatchNormalizationForwardInference.
#include <cmath>
#include <string>
#include <utility>

#include "tests/standin/call_count.h"
#include "tests/standin/cudnn/cudnn_internal.h"

using namespace standin_cudnn;

extern "C" {

// y = alpha * (bnScale * (x - estimatedMean) / sqrt(epsilon + estimatedVariance) + bnBias) + beta * y.
//   BAD_PARAM (cuDNN API reference, cudnnBatchNormalizationForwardInference): x / y not 4-d or 5-d,
//   x and y dimensions or types differ, bnScaleBiasMeanVarDesc not 1xCx1x1 (SPATIAL) or 1xCxHxW
//   (PER_ACTIVATION), epsilon < CUDNN_BN_MIN_EPSILON, invalid mode. The parameter type must be the one
//   cudnnDeriveBNTensorDescriptor derives (FLOAT for HALF data), else BAD_PARAM.
cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t yDesc, void* y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale, const void* bnBias,
    const void* estimatedMean, const void* estimatedVariance, double epsilon) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnBatchNormalizationForwardInference";
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
  if (mode != CUDNN_BATCHNORM_SPATIAL && mode != CUDNN_BATCHNORM_PER_ACTIVATION &&
      mode != CUDNN_BATCHNORM_SPATIAL_PERSISTENT) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "mode is not a cudnnBatchNormMode_t");
  }
  if (cudnnStatus_t s = check_tensor(call, xDesc, "xDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (cudnnStatus_t s = check_tensor(call, yDesc, "yDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (bnScaleBiasMeanVarDesc == nullptr || !bnScaleBiasMeanVarDesc->value.set) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "bnScaleBiasMeanVarDesc is NULL or not set");
  }
  const Tensor xt = xDesc->value, yt = yDesc->value, pt = bnScaleBiasMeanVarDesc->value;
  if (xt.nb != 4 && xt.nb != 5) return fail(CUDNN_STATUS_BAD_PARAM, call, "xDesc must be 4-d or 5-d");
  if (!same_dims(xt, yt) || xt.type != yt.type) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "xDesc " + describe(xt) + " and yDesc " + describe(yt) + " differ");
  }
  const bool per_activation = mode == CUDNN_BATCHNORM_PER_ACTIVATION;
  bool shape_ok = pt.nb == xt.nb && pt.dim[0] == 1 && pt.dim[1] == xt.dim[1];
  for (int i = 2; i < xt.nb && shape_ok; ++i) shape_ok = pt.dim[i] == (per_activation ? xt.dim[i] : 1);
  if (!shape_ok) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "bnScaleBiasMeanVarDesc is " + describe(pt) + "; use cudnnDeriveBNTensorDescriptor for this mode");
  }
  const cudnnDataType_t param_type = xt.type == CUDNN_DATA_HALF ? CUDNN_DATA_FLOAT : xt.type;
  if (pt.type != param_type) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "the parameters must be FLOAT for HALF data, else of x's type");
  }
  if (epsilon < CUDNN_BN_MIN_EPSILON || std::isnan(epsilon)) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "epsilon " + std::to_string(epsilon) + " is below CUDNN_BN_MIN_EPSILON");
  }
  const double a = host_scalar(call, alpha, "alpha");
  const double b = host_scalar(call, beta, "beta");
  const std::size_t pbytes = extent_bytes(pt);
  std::vector<standin::Range> ranges = {{x, extent_bytes(xt), "x"},
                                        {y, extent_bytes(yt), "y"},
                                        {bnScale, pbytes, "bnScale"},
                                        {bnBias, pbytes, "bnBias"},
                                        {estimatedMean, pbytes, "estimatedMean"},
                                        {estimatedVariance, pbytes, "estimatedVariance"}};
  const int e = standin::enqueue(
      stream_of(handle), call, std::move(ranges),
      [xt, yt, pt, x, y, bnScale, bnBias, estimatedMean, estimatedVariance, epsilon, a, b, per_activation] {
        const std::vector<float> in = load(xt, x);
        const std::vector<float> scale = load(pt, bnScale), shift = load(pt, bnBias);
        const std::vector<float> mean = load(pt, estimatedMean), var = load(pt, estimatedVariance);
        std::size_t inner = 1;  // elements per (n, c)
        for (int i = 2; i < xt.nb; ++i) inner *= static_cast<std::size_t>(xt.dim[i]);
        const std::size_t channels = static_cast<std::size_t>(xt.dim[1]);
        std::vector<double> out(in.size());
        for (std::size_t i = 0; i < in.size(); ++i) {
          const std::size_t c = (i / inner) % channels;
          const std::size_t k = per_activation ? c * inner + i % inner : c;
          const double inv_std = 1.0 / std::sqrt(epsilon + static_cast<double>(var[k]));
          out[i] =
              static_cast<double>(scale[k]) * (static_cast<double>(in[i]) - static_cast<double>(mean[k])) * inv_std +
              static_cast<double>(shift[k]);
        }
        store_blend(yt, y, out.data(), a, b);
      });
  return e == 0 ? CUDNN_STATUS_SUCCESS : cuda_failure(e, call);
}

}  // extern "C"
