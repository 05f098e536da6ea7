// cudnnSoftmaxForward.
#include <cmath>
#include <string>
#include <utility>

#include "tests/standin/call_count.h"
#include "tests/standin/cudnn/cudnn_internal.h"

using namespace standin_cudnn;

extern "C" {

// y = alpha * softmax(x) + beta * y.
//   CUDNN_SOFTMAX_MODE_INSTANCE: over C*H*W (every dimension but n) for each n;
//   CUDNN_SOFTMAX_MODE_CHANNEL: over C for each (n, h, w).
//   CUDNN_SOFTMAX_FAST: exp(x) / sum exp(x) in float, without subtracting the maximum (it overflows
//   for large inputs, as the documented "straightforward implementation" does); ACCURATE subtracts
//   the maximum; LOG: x - max - log(sum exp(x - max)).
//   BAD_PARAM (cuDNN API reference, cudnnSoftmaxForward): dimensions or data types of x and y
//   differ, algorithm or mode not a valid enumerant.
cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode,
                                  const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
                                  const void* beta, const cudnnTensorDescriptor_t yDesc, void* y) {
  STANDIN_COUNT_CALL();
  const char* call = "cudnnSoftmaxForward";
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, call, "handle is NULL");
  if (algo != CUDNN_SOFTMAX_FAST && algo != CUDNN_SOFTMAX_ACCURATE && algo != CUDNN_SOFTMAX_LOG) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "algo is not a cudnnSoftmaxAlgorithm_t");
  }
  if (mode != CUDNN_SOFTMAX_MODE_INSTANCE && mode != CUDNN_SOFTMAX_MODE_CHANNEL) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "mode is not a cudnnSoftmaxMode_t");
  }
  if (cudnnStatus_t s = check_tensor(call, xDesc, "xDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  if (cudnnStatus_t s = check_tensor(call, yDesc, "yDesc"); s != CUDNN_STATUS_SUCCESS) return s;
  const Tensor xt = xDesc->value, yt = yDesc->value;
  if (!same_dims(xt, yt) || xt.type != yt.type) {
    return fail(CUDNN_STATUS_BAD_PARAM, call, "xDesc " + describe(xt) + " and yDesc " + describe(yt) + " differ");
  }
  const double a = host_scalar(call, alpha, "alpha");
  const double b = host_scalar(call, beta, "beta");
  std::vector<standin::Range> ranges = {{x, extent_bytes(xt), "x"}, {y, extent_bytes(yt), "y"}};
  const int e = standin::enqueue(stream_of(handle), call, std::move(ranges), [algo, mode, xt, yt, x, y, a, b] {
    const std::vector<float> in = load(xt, x);
    std::size_t spatial = 1;
    for (int i = 2; i < xt.nb; ++i) spatial *= static_cast<std::size_t>(xt.dim[i]);
    const std::size_t channels = static_cast<std::size_t>(xt.dim[1]);
    const std::size_t images = static_cast<std::size_t>(xt.dim[0]);
    // A softmax group: `count` elements starting at `first`, `step` apart (logical order).
    const bool instance = mode == CUDNN_SOFTMAX_MODE_INSTANCE;
    const std::size_t groups = instance ? images : images * spatial;
    const std::size_t count = instance ? channels * spatial : channels;
    const std::size_t step = instance ? 1 : spatial;
    std::vector<double> out(in.size());
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t first = instance ? g * count : (g / spatial) * channels * spatial + g % spatial;
      if (algo == CUDNN_SOFTMAX_FAST) {
        float sum = 0.0f;
        for (std::size_t i = 0; i < count; ++i) sum += std::exp(in[first + i * step]);
        for (std::size_t i = 0; i < count; ++i) {
          out[first + i * step] = static_cast<double>(std::exp(in[first + i * step]) / sum);
        }
        continue;
      }
      double max = static_cast<double>(in[first]);
      for (std::size_t i = 1; i < count; ++i) max = std::fmax(max, static_cast<double>(in[first + i * step]));
      double sum = 0.0;
      for (std::size_t i = 0; i < count; ++i) sum += std::exp(static_cast<double>(in[first + i * step]) - max);
      const double log_sum = std::log(sum);
      for (std::size_t i = 0; i < count; ++i) {
        const double shifted = static_cast<double>(in[first + i * step]) - max;
        out[first + i * step] = algo == CUDNN_SOFTMAX_LOG ? shifted - log_sum : std::exp(shifted) / sum;
      }
    }
    store_blend(yt, y, out.data(), a, b);
  });
  return e == 0 ? CUDNN_STATUS_SUCCESS : cuda_failure(e, call);
}

}  // extern "C"
