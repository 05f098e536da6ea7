#include "graph/fold.h"

#include <cmath>

#include "platform/huge_pages.h"

namespace infer {

BatchNormAffine batchnorm_affine(const Layer& batchnorm) {
  const LayerParams& p = batchnorm.params;
  const double eps = batchnorm.batchnorm().epsilon;
  BatchNormAffine a;
  a.scale.reserve(p.weight.size());
  a.shift.reserve(p.weight.size());
  for (std::size_t c = 0; c < p.weight.size(); ++c) {
    const double scale = p.weight[c] / std::sqrt(static_cast<double>(p.running_var[c]) + eps);
    a.scale.push_back(static_cast<float>(scale));
    a.shift.push_back(static_cast<float>(p.bias[c] - p.running_mean[c] * scale));
  }
  return a;
}

bool batchnorm_foldable(const std::vector<Layer>& layers, std::size_t index) {
  if (index == 0 || index >= layers.size() || layers[index].kind != LayerKind::BatchNorm) return false;
  if (!feeds_only_next(layers, index - 1)) return false;  // the producer's output is read elsewhere too
  const Layer& producer = layers[index - 1];
  if (producer.kind != LayerKind::Conv2d && producer.kind != LayerKind::Linear) return false;
  return producer.out.c == layers[index].in.c;
}

FoldedParams fold_batchnorm(const Layer& producer, const Layer& batchnorm) {
  const LayerParams& bn = batchnorm.params;
  const double eps = batchnorm.batchnorm().epsilon;
  const std::size_t channels = bn.weight.size();
  const std::vector<float>& w = producer.params.weight;
  const std::vector<float>& b = producer.params.bias;
  const std::size_t per_channel = channels ? w.size() / channels : 0;
  FoldedParams f;
  reserve_large(f.weight, w.size());
  f.weight.resize(w.size());
  f.bias.resize(channels);
  for (std::size_t k = 0; k < channels; ++k) {
    const double scale = bn.weight[k] / std::sqrt(static_cast<double>(bn.running_var[k]) + eps);
    for (std::size_t j = 0; j < per_channel; ++j) {
      f.weight[k * per_channel + j] = static_cast<float>(w[k * per_channel + j] * scale);
    }
    const double bias = b.empty() ? 0.0 : static_cast<double>(b[k]);
    f.bias[k] = static_cast<float>((bias - bn.running_mean[k]) * scale + bn.bias[k]);
  }
  return f;
}

}  // namespace infer
