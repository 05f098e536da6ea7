// cudnnPoolingForward (2-d).
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "tests/standin/call_count.h"
#include "tests/standin/cudnn/cudnn_internal.h"

using namespace standin_cudnn;

extern "C" {

// y = alpha * pool(x) + beta * y.
//   BAD_PARAM (cuDNN API reference, cudnnPoolingForward): n or c of x and y differ, the data types
//   differ; also (stand-in) y's h, w other than cudnnGetPooling2dForwardOutputDim's.
//   NOT_SUPPORTED: 5-d tensors (3-d pooling is not implemented by the stand-in), a padding not
//   smaller than the window (a window could then lie entirely in the padding).
// MAX: padded cells never win; a NaN wins under CUDNN_PROPAGATE_NAN and is skipped otherwise.
// AVERAGE_COUNT_INCLUDE_PADDING divides by the window area, _EXCLUDE_PADDING by the cells inside x.
cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t poolingDesc, const void* alpha,
                                  const cudnnTensorDescriptor_t xDesc, const void* x, const void* beta,
                                  const cudnnTensorDescriptor_t yDesc, void* y) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnPoolingForward";
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
  if (poolingDesc == nullptr || !poolingDesc->value.set) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "poolingDesc is NULL or not set");
  }
  if (cudnnStatus_t s = check_tensor(call, xDesc, "xDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (cudnnStatus_t s = check_tensor(call, yDesc, "yDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  const Pooling pool = poolingDesc->value;
  const Tensor xt = xDesc->value, yt = yDesc->value;
  if (xt.nb != yt.nb || xt.type != yt.type || xt.dim[0] != yt.dim[0] || xt.dim[1] != yt.dim[1]) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "xDesc " + describe(xt) + " and yDesc " + describe(yt) + " are incompatible");
  }
  if (xt.nb != 4) return fail(CUDNN_STATUS_NOT_SUPPORTED, call, "the stand-in implements 2-d pooling only");
  if (pool.pad[0] >= pool.window[0] || pool.pad[1] >= pool.window[1]) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call, "a padding is not smaller than the window");
  }
  int out[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const int padded = xt.dim[2 + i] + 2 * pool.pad[i];
    out[i] = padded < pool.window[i] ? 0 : 1 + (padded - pool.window[i]) / pool.stride[i];
  }
  if (yt.dim[2] != out[0] || yt.dim[3] != out[1]) {
    return fail(CUDNN_STATUS_BAD_PARAM, call,
                "yDesc is " + describe(yt) + " but the pooling produces " + std::to_string(out[0]) + " x " +
                    std::to_string(out[1]) + " (cudnnGetPooling2dForwardOutputDim)");
  }
  const double a = host_scalar(call, alpha, "alpha");
  const double b = host_scalar(call, beta, "beta");
  std::vector<standin::Range> ranges = {{x, extent_bytes(xt), "x"}, {y, extent_bytes(yt), "y"}};
  const int e = standin::enqueue(stream_of(handle), call, std::move(ranges), [pool, xt, yt, x, y, a, b] {
    const std::vector<float> in = load(xt, x);
    const int planes = xt.dim[0] * xt.dim[1], in_h = xt.dim[2], in_w = xt.dim[3];
    const int oh_count = yt.dim[2], ow_count = yt.dim[3];
    const bool is_max = pool.mode == CUDNN_POOLING_MAX || pool.mode == CUDNN_POOLING_MAX_DETERMINISTIC;
    const bool keep_nan = pool.nan == CUDNN_PROPAGATE_NAN;
    std::vector<double> result(static_cast<std::size_t>(planes) * oh_count * ow_count);
    std::size_t o = 0;
    for (int plane = 0; plane < planes; ++plane) {
      const float* src = in.data() + static_cast<std::size_t>(plane) * in_h * in_w;
      for (int oh = 0; oh < oh_count; ++oh) {
        for (int ow = 0; ow < ow_count; ++ow) {
          const int h0 = oh * pool.stride[0] - pool.pad[0], w0 = ow * pool.stride[1] - pool.pad[1];
          double best = -std::numeric_limits<double>::infinity();
          double sum = 0.0;
          int inside = 0;
          bool saw_nan = false;
          for (int r = 0; r < pool.window[0]; ++r) {
            const int ih = h0 + r;
            if (ih < 0 || ih >= in_h) continue;
            for (int s = 0; s < pool.window[1]; ++s) {
              const int iw = w0 + s;
              if (iw < 0 || iw >= in_w) continue;
              const double v = static_cast<double>(src[static_cast<std::size_t>(ih) * in_w + iw]);
              ++inside;
              sum += v;
              if (std::isnan(v)) {
                saw_nan = true;
              } else if (v > best) {
                best = v;
              }
            }
          }
          if (is_max) {
            result[o++] = saw_nan && keep_nan ? std::numeric_limits<double>::quiet_NaN() : best;
          } else {
            const int count =
                pool.mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING ? pool.window[0] * pool.window[1] : inside;
            result[o++] = sum / count;
          }
        }
      }
    }
    store_blend(yt, y, result.data(), a, b);
  });
  return e == 0 ? CUDNN_STATUS_SUCCESS : cuda_failure(e, call);
}

}  // extern "C"
