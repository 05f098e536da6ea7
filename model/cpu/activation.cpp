#include <algorithm>

#include "ops.h"

namespace infer::cpu {

void relu_forward(const Layer& layer, const float* in, int n, float* out) {
  const std::size_t count = static_cast<std::size_t>(n) * layer.in.size();
  for (std::size_t i = 0; i < count; ++i) out[i] = std::max(in[i], 0.0f);
}

}  // namespace infer::cpu
