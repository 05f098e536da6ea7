// Batch-norm folding: inference batch-norm is a per-channel affine map, so it can be folded into
// the convolution or linear layer in front of it. Used by both backends; the explicit batch-norm
// op stays available (a batch-norm with nothing foldable before it, or a run that stops between
// the convolution and its batch-norm, uses it).
//
//   bn(x)          = (x - mean) / sqrt(var + eps) * gamma + beta  =  x * scale + shift
//   bn(conv(x))    = conv'(x)  with  w'[k,...] = w[k,...] * scale[k],  b'[k] = b[k] * scale[k] + shift[k]
//
// Exactness: the fold is exact in real arithmetic. In float32 it changes the rounding, not the
// result: each folded weight carries one extra rounding (relative 2^-24), the same order as the
// explicit op's own multiply-add, so the two agree within a few units in the last place of the
// output's magnitude. tests/backends/cpu/test_cpu_ops.cpp compares them.
#pragma once

#include <cstddef>
#include <vector>

#include "graph/network.h"

namespace infer {

struct BatchNormAffine {
  std::vector<float> scale;  // gamma / sqrt(var + eps), per channel
  std::vector<float> shift;  // beta - mean * scale, per channel
};

// The per-channel affine form of a batch-norm layer, computed in double and rounded once.
BatchNormAffine batchnorm_affine(const Layer& batchnorm);

// True when layers[index] is a batch-norm that can be folded into layers[index - 1]: that layer
// is a Conv2d or a Linear whose output channels are the batch-norm's channels, read by the
// batch-norm alone (feeds_only_next, network.h).
bool batchnorm_foldable(const std::vector<Layer>& layers, std::size_t index);

// The weight and bias of `producer` (Conv2d or Linear) with `batchnorm` folded in. The bias is
// always present in the result (a layer without one gets the batch-norm's shift). Computed in
// double, rounded once per value.
struct FoldedParams {
  std::vector<float> weight;
  std::vector<float> bias;
};
FoldedParams fold_batchnorm(const Layer& producer, const Layer& batchnorm);

}  // namespace infer
