// Fully connected: out[n, out] = in[n, in] x weight[out, in]^T + bias[out].
#include <algorithm>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/ops.h"

namespace infer::cpu {

void linear_forward(const Layer& layer, const float* in, int n, float* out) {
  const int in_features = layer.in.c;
  const int out_features = layer.out.c;
  const float beta = layer.linear().bias ? 1.0f : 0.0f;
  if (layer.linear().bias) {
    for (int i = 0; i < n; ++i) {
      std::copy(layer.params.bias.begin(), layer.params.bias.end(), out + static_cast<std::size_t>(i) * out_features);
    }
  }
  sgemm(Transpose::Yes, n, out_features, in_features, in, in_features, layer.params.weight.data(), in_features, beta,
        out, out_features);
}

}  // namespace infer::cpu
