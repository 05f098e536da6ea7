// Element-wise operations: cudnnActivationForward, cudnnAddTensor, cudnnTransformTensor, cudnnSetTensor.
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "tests/standin/call_count.h"
#include "tests/standin/cudnn/cudnn_internal.h"
#include "tests/standin/half.h"

using namespace standin_cudnn;

namespace {

double activate(const Activation& a, double v) {
  const bool nan = std::isnan(v);
  switch (a.mode) {
    case CUDNN_ACTIVATION_RELU:
      if (nan) return a.nan == CUDNN_PROPAGATE_NAN ? v : 0.0;
      return v > 0.0 ? v : 0.0;
    case CUDNN_ACTIVATION_CLIPPED_RELU:
      if (nan) return a.nan == CUDNN_PROPAGATE_NAN ? v : 0.0;
      return v < 0.0 ? 0.0 : (v > a.coef ? a.coef : v);
    case CUDNN_ACTIVATION_SIGMOID: return 1.0 / (1.0 + std::exp(-v));
    case CUDNN_ACTIVATION_TANH: return std::tanh(v);
    case CUDNN_ACTIVATION_ELU: return v > 0.0 ? v : a.coef * std::expm1(v);
    default: return v;
  }
}

// Enqueues dst = alpha * values + beta * dst, where `make` computes the values (in dst's logical
// order) when the work runs.
template <typename Make>
cudnnStatus_t enqueue_blend(const char* call, cudnnHandle_t handle, std::vector<standin::Range> ranges,
                            const Tensor& dst, void* y, double alpha, double beta, Make make) {
  const int e = standin::enqueue(stream_of(handle), call, std::move(ranges), [dst, y, alpha, beta, make] {
    const std::vector<double> values = make();
    store_blend(dst, y, values.data(), alpha, beta);
  });
  return e == 0 ? CUDNN_STATUS_SUCCESS : cuda_failure(e, call);
}

}  // namespace

extern "C" {

// cudnnActivationForward(): y = alpha * act(x) + beta * y.
//   BAD_PARAM: mode CUDNN_ACTIVATION_IDENTITY (cudnnActivationMode_t: IDENTITY "does not work with
//   cudnnActivationForward()"), x and y dimensions or data types differ, or x == y (in place) with
//   different strides. NOT_SUPPORTED: SWISH (not implemented by the stand-in), data types other than
//   FLOAT and HALF.
cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle, cudnnActivationDescriptor_t activationDesc,
                                     const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
                                     const void* beta, const cudnnTensorDescriptor_t yDesc, void* y) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnActivationForward";
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
  if (activationDesc == nullptr || !activationDesc->value.set) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "activationDesc is NULL or not set");
  }
  const Activation act = activationDesc->value;
  if (act.mode == CUDNN_ACTIVATION_IDENTITY) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "CUDNN_ACTIVATION_IDENTITY is only for cudnnConvolutionBiasActivationForward; use "
                "cudnnTransformTensor or skip the call");
  }
  if (act.mode == CUDNN_ACTIVATION_SWISH) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call, "CUDNN_ACTIVATION_SWISH is not implemented by the stand-in");
  }
  if (cudnnStatus_t s = check_tensor(call, xDesc, "xDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (cudnnStatus_t s = check_tensor(call, yDesc, "yDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  const Tensor xt = xDesc->value, yt = yDesc->value;
  if (!same_dims(xt, yt) || xt.type != yt.type) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "xDesc " + describe(xt) + " and yDesc " + describe(yt) + " differ");
  }
  if (x == y && !same_strides(xt, yt)) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "in-place use (x == y) with different strides");
  }
  const double a = host_scalar(call, alpha, "alpha");
  const double b = host_scalar(call, beta, "beta");
  return enqueue_blend(call, handle, {{x, extent_bytes(xt), "x"}, {y, extent_bytes(yt), "y"}}, yt, y, a, b,
                       [xt, x, act] {
                         const std::vector<float> in = load(xt, x);
                         std::vector<double> out(in.size());
                         for (std::size_t i = 0; i < in.size(); ++i) out[i] = activate(act, static_cast<double>(in[i]));
                         return out;
                       });
}

// cudnnAddTensor(): C = alpha * A + beta * C, A broadcast along every dimension where it is 1.
//   BAD_PARAM: a dimension of A neither equals C's nor is 1, different numbers of dimensions, or
//   different data types. NOT_SUPPORTED: more than 5 dimensions.
cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t aDesc,
                             const void* A, const void* beta, const cudnnTensorDescriptor_t cDesc, void* C) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnAddTensor";
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
  if (cudnnStatus_t s = check_tensor(call, aDesc, "aDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (cudnnStatus_t s = check_tensor(call, cDesc, "cDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  const Tensor at = aDesc->value, ct = cDesc->value;
  if (ct.nb > 5) return fail(CUDNN_STATUS_NOT_SUPPORTED, call, "more than 5 dimensions");
  if (at.nb != ct.nb || at.type != ct.type) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "aDesc " + describe(at) + " and cDesc " + describe(ct) + " are incompatible");
  }
  for (int i = 0; i < at.nb; ++i) {
    if (at.dim[i] != ct.dim[i] && at.dim[i] != 1) {
      return fail(CUDNN_STATUS_BAD_PARAM, call,
                  "dimension " + std::to_string(i) + " of A is " + std::to_string(at.dim[i]) + "; it must be 1 or " +
                      std::to_string(ct.dim[i]) + " (C's)");
    }
  }
  const double a = host_scalar(call, alpha, "alpha");
  const double b = host_scalar(call, beta, "beta");
  return enqueue_blend(call, handle, {{A, extent_bytes(at), "A"}, {C, extent_bytes(ct), "C"}}, ct, C, a, b,
                       [at, ct, A] {
                         const std::vector<float> in = load(at, A);
                         std::vector<double> out(static_cast<std::size_t>(element_count(ct)));
                         int index[CUDNN_DIM_MAX] = {};
                         for (std::size_t i = 0; i < out.size(); ++i) {
                           std::size_t src = 0;
                           for (int d = 0; d < at.nb; ++d)
                             src = src * static_cast<std::size_t>(at.dim[d]) + (at.dim[d] == 1 ? 0 : index[d]);
                           out[i] = static_cast<double>(in[src]);
                           for (int d = ct.nb - 1; d >= 0; --d) {
                             if (++index[d] < ct.dim[d]) break;
                             index[d] = 0;
                           }
                         }
                         return out;
                       });
}

// cudnnTransformTensor(): y = alpha * x + beta * y between any layouts / strides.
//   BAD_PARAM: "The dimensions n, c, h, w or the dataType of the two tensor descriptors are different."
cudnnStatus_t cudnnTransformTensor(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc,
                                   const void* x, const void* beta, const cudnnTensorDescriptor_t yDesc, void* y) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnTransformTensor";
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
  if (cudnnStatus_t s = check_tensor(call, xDesc, "xDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (cudnnStatus_t s = check_tensor(call, yDesc, "yDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  const Tensor xt = xDesc->value, yt = yDesc->value;
  if (!same_dims(xt, yt) || xt.type != yt.type) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "xDesc " + describe(xt) + " and yDesc " + describe(yt) + " differ");
  }
  const double a = host_scalar(call, alpha, "alpha");
  const double b = host_scalar(call, beta, "beta");
  return enqueue_blend(call, handle, {{x, extent_bytes(xt), "x"}, {y, extent_bytes(yt), "y"}}, yt, y, a, b, [xt, x] {
    const std::vector<float> in = load(xt, x);
    return std::vector<double>(in.begin(), in.end());
  });
}

// cudnnSetTensor(): every element of y to value[0], "a single value in host memory" whose data type
// "has to match the data type of tensor y" (a half for CUDNN_DATA_HALF, a float for FLOAT).
//   BAD_PARAM: a NULL handle, descriptor, y or value. NOT_SUPPORTED: types the stand-in does not compute.
cudnnStatus_t cudnnSetTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc, void* y, const void* valuePtr) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnSetTensor";
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
  if (cudnnStatus_t s = check_tensor(call, yDesc, "yDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (y == nullptr || valuePtr == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "y or valuePtr is NULL");
  standin::require_host(call, valuePtr, "valuePtr");
  const Tensor yt = yDesc->value;
  double value = 0.0;
  if (yt.type == CUDNN_DATA_HALF) {
    std::uint16_t h = 0;
    std::memcpy(&h, valuePtr, sizeof h);
    value = static_cast<double>(standin::half_to_float(h));
  } else {
    float f = 0.0f;
    std::memcpy(&f, valuePtr, sizeof f);
    value = static_cast<double>(f);
  }
  return enqueue_blend(call, handle, {{y, extent_bytes(yt), "y"}}, yt, y, 1.0, 0.0,
                       [yt, value] { return std::vector<double>(static_cast<std::size_t>(element_count(yt)), value); });
}

}  // extern "C"
