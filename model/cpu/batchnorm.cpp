// Inference batch-norm: y = (x - mean) / sqrt(var + eps) * gamma + beta = x * scale + shift.
#include <cmath>

#include "ops.h"

namespace infer::cpu {

BatchNormFolded fold_batchnorm(const Layer& layer) {
  const LayerParams& p = layer.params;
  const double eps = layer.batchnorm().epsilon;
  BatchNormFolded bn;
  for (std::size_t c = 0; c < p.weight.size(); ++c) {
    // Fold in double so the folded parameters carry no extra rounding beyond the final cast.
    const double scale = p.weight[c] / std::sqrt(static_cast<double>(p.running_var[c]) + eps);
    bn.scale.push_back(static_cast<float>(scale));
    bn.shift.push_back(static_cast<float>(p.bias[c] - p.running_mean[c] * scale));
  }
  return bn;
}

void batchnorm_forward(const Layer& layer, const BatchNormFolded& bn, const float* in, int n, float* out) {
  const std::size_t spatial = static_cast<std::size_t>(layer.in.h) * layer.in.w;
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < layer.in.c; ++c) {
      const std::size_t base = (static_cast<std::size_t>(i) * layer.in.c + c) * spatial;
      const float scale = bn.scale[static_cast<std::size_t>(c)];
      const float shift = bn.shift[static_cast<std::size_t>(c)];
      for (std::size_t j = 0; j < spatial; ++j) out[base + j] = in[base + j] * scale + shift;
    }
  }
}

}  // namespace infer::cpu
