// Inference batch-norm: y = (x - mean) / sqrt(var + eps) * gamma + beta = x * scale + shift.
#include "backends/cpu/ops.h"

namespace infer::cpu {

void batchnorm_forward(const Layer& layer, const BatchNormAffine& bn, const float* in, int n, float* out) {
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
