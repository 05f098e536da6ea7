// A first-order bound on the rounding error of a forward pass, per output element, for comparing
// backends at reduced precision (tests/backends/cudnn/test_gpu_backend.cpp) without tuned tolerances.
//
// Model. Every value the pass computes is the exact one times (1 + d) with |d| bounded by:
//   data        the float input, weights and biases rounded to the storage type (fp16: 2^-11, else 0)
//   operand     each convolution operand rounded before multiplying (tf32: 2^-10; else 0)
//   accumulate  per term of a convolution's K-term sum (Higham 3.1: gamma_K ~ K u): u = 2^-24 for
//               float FMA math (round to nearest), 2^-23 on tensor cores (tf32, fp16)
//   sum         every other float operation (bias add, batch-norm, pooling, softmax): 2^-24
//   store       each layer output rounded to the storage type (fp16: 2^-11; float: 2^-24)
//   tiny        below the smallest normal number, rounding is absolute: a stored value (or the
//               rounded input) is within u |x| + tiny of the exact one, tiny half the smallest
//               subnormal (half: 2^-25; float: 2^-150). See "Underflow" below.
// Tensor-core sources: TF32 reads only the first 10 bits of the input mantissa (PyTorch, "Numerical
// accuracy" notes, TensorFloat-32 section): a truncation, so its relative error is below 2^-10,
// not the 2^-11 of rounding to nearest. The tensor cores' float accumulation may truncate instead
// of rounding to nearest (Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor
// cores", PeerJ Computer Science 7:e330, 2021), so its unit is 2^-23. Half products are exact in
// float (11 + 11 significant bits), hence no operand term for fp16.
// Layer by layer, a relative error c_l of a layer's own rounding is bounded, elementwise, by
// c_l * M_l, where M_l is the layer output of the MAGNITUDE network: every weight, bias and
// input replaced by its absolute value, a batch-norm by |s| (x + |mean|) + |beta|. Errors then
// propagate through the later layers no faster than M does (|W| e <= |W| c M; ReLU and max
// pooling are 1-Lipschitz and |relu(z)| <= |z|; averages average), so after layers [0, L)
//   |computed - exact| <= C M_L,  C = sum_l c_l,   with, per layer,
//     input               data
//     conv/linear (K)     data + 2 operand + K accumulate + sum + store   (x*w, the bias add)
//     batch-norm          data + 8 sum + store   (folded or explicit: the affine map's roundings)
//     avg pooling (K)     (K + 1) sum + store
//     relu, max pooling, flatten, concat, clip   0 (exact; a clip is 1-Lipschitz)
//     upsample, channel shuffle, channel slice   0 (copies: the magnitude network moves M with them;
//                                                a slice selects the bound of its channels)
//     add                 sum + store (each input's error is within C times its magnitude; the
//                         magnitude network adds the magnitudes)
//     resize              8 sum + store (a convex combination: errors average as magnitudes do;
//                         each of its two levels rounds two products and their sum, relative to
//                         sum w |v|. Its weights, w and 1 - w from the rounded w, are off by up to
//                         u w |v0| absolute, not relative to sum w |v|; every backend computes the
//                         same w and 1 - w from the same exact taps (resize_formula.h), so that
//                         part is common to both sides of a comparison of backends, which this
//                         bound is for, and cancels)
//   Graphs: C sums every layer's c, more than any path through the graph has. Mul, layernorm and the smooth
//   activations are not modelled (rounding_error_bound throws); reference.h bounds them in float32.
//   A final softmax: |dy_i| <= y_i (|dx_i| + sum_j y_j |dx_j|) <= 2 max_j e_j, plus its own
//   float rounding (exp, a C-term sum, a division): e = 2 max_j e_j + (C + 6) sum.
// Underflow: the absolute parts add up to A, carried from the input (tiny when rounded) through each
// layer as A_out = L A_in + tiny for each layer that stores (L its max-norm Lipschitz constant:
// max_k sum|w_k| for conv/linear, max|s| for a batch-norm, 2 for an add, 1 otherwise). The bound
// is C M_L + A. Underflow inside a float sum (2^-150 per operation) and of a half weight (2^-25
// times an input) is far below the relative terms of the same sum and is not modelled.
// Second-order terms are covered by a factor (1 + C). M is computed in float by the CPU backend;
// its own relative error (~K 2^-24) is far below C. Layers after a softmax are not modelled.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "graph/network.h"
#include "tests/support/pointwise_reference.h"

namespace infer::test {

struct Rounding {
  double data = 0.0;
  double operand = 0.0;
  double accumulate = 0.0;
  double sum = 0.0;
  double store = 0.0;
  double tiny = 0.0;
};
constexpr double kU24 = 1.0 / (1 << 24);  // float, round to nearest
constexpr double kU23 = 1.0 / (1 << 23);  // float, truncated (tensor-core accumulation)
constexpr double kU11 = 1.0 / (1 << 11);  // half, round to nearest
constexpr double kU10 = 1.0 / (1 << 10);  // TF32 operand, truncated to 10 mantissa bits
constexpr double kFloatTiny = 0x1p-150;   // half the smallest float subnormal
constexpr double kHalfTiny = 0x1p-25;     // half the smallest half subnormal (2^-24)
constexpr Rounding kFp32Rounding{0.0, 0.0, kU24, kU24, kU24, kFloatTiny};
// fp32 data, TF32 products, tensor-core sums
constexpr Rounding kTf32Rounding{0.0, kU10, kU23, kU24, kU24, kFloatTiny};
// half storage, exact products, tensor-core sums
constexpr Rounding kFp16Rounding{kU11, 0.0, kU23, kU24, kU11, kHalfTiny};

// The most values one output of an average pooling sums: its kernel, the whole plane, or the widest
// adaptive window.
inline double max_window(const Layer& l) {
  switch (l.kind) {
    case LayerKind::AvgPool: return static_cast<double>(l.pool().kernel_h) * l.pool().kernel_w;
    case LayerKind::AdaptiveAvgPool: {
      int h = 0, w = 0;
      for (int i = 0; i < l.out.h; ++i)
        h = std::max(h, adaptive_end(i, l.in.h, l.out.h) - adaptive_begin(i, l.in.h, l.out.h));
      for (int j = 0; j < l.out.w; ++j)
        w = std::max(w, adaptive_end(j, l.in.w, l.out.w) - adaptive_begin(j, l.in.w, l.out.w));
      return static_cast<double>(h) * w;
    }
    default: return static_cast<double>(l.in.h) * l.in.w;  // global
  }
}

// A conv/linear layer's max-norm Lipschitz constant: the largest sum of |w| over one output's terms.
inline double max_row_sum(const Layer& l) {
  const std::size_t k = l.params.weight.size() / static_cast<std::size_t>(l.out.c);
  double most = 0.0;
  for (std::size_t o = 0; o < static_cast<std::size_t>(l.out.c); ++o) {
    double row = 0.0;
    for (std::size_t j = 0; j < k; ++j) row += std::fabs(l.params.weight[o * k + j]);
    most = std::max(most, row);
  }
  return most;
}

// A batch-norm's largest |scale|, |gamma| / sqrt(var + epsilon): its max-norm Lipschitz constant.
inline double max_batchnorm_scale(const Layer& l) {
  double most = 0.0;
  for (std::size_t c = 0; c < l.params.weight.size(); ++c) {
    most = std::max(most, std::fabs(l.params.weight[c]) / std::sqrt(l.params.running_var[c] + l.batchnorm().epsilon));
  }
  return most;
}

// The magnitude network of `net` (see above): same layers, absolute parameters.
inline Network magnitude_network(const Network& net) {
  std::vector<Layer> layers = net.layers();
  auto abs_all = [](std::vector<float>& v) {
    for (float& x : v) x = std::fabs(x);
  };
  for (Layer& l : layers) {
    abs_all(l.params.weight);
    abs_all(l.params.bias);
    if (l.kind == LayerKind::Pad && std::isfinite(l.pad().value)) {
      PadAttrs a = l.pad();
      a.value = std::fabs(a.value);
      l.attrs = a;
    }
    if (l.kind == LayerKind::BatchNorm) {
      for (float& m : l.params.running_mean) m = -std::fabs(m);  // x - mean = x + |mean|
    }
    // A clip can cut the magnitude below the error it passes on (an input near the bound, computed
    // from large cancelling terms): its magnitude is its input's, a ReLU of non-negative values.
    // Likewise every exact, 1-Lipschitz pointwise op (pointwise_reference.h).
    if (is_pointwise(l.kind) && pointwise_reference(pointwise_op(l.kind), l.pointwise()).exact) {
      l.kind = LayerKind::Relu;
      l.attrs = {};
    }
  }
  InputSpec spec = net.input();
  return Network(net.name() + " (magnitudes)", spec, std::move(layers));
}

// Layers [first, last] of a chain (every layer reads the one before it) as a network of their own,
// whose input is layer first's input: to bound one step of a backend from the input that step
// really read, rather than carrying every earlier layer's bound to it. Throws std::invalid_argument
// for a layer that reads anything else.
inline Network layer_window(const Network& net, std::size_t first, std::size_t last) {
  const std::vector<Layer>& all = net.layers();
  if (first > last || last >= all.size()) throw std::invalid_argument("layer_window: no such layers");
  std::vector<Layer> layers(all.begin() + static_cast<std::ptrdiff_t>(first),
                            all.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  for (std::size_t i = first; i <= last; ++i) {
    if (all[i].sources.size() != 1 || all[i].sources[0] != i) {
      throw std::invalid_argument("layer_window: layer '" + all[i].name + "' does not read only the layer before it");
    }
  }
  for (Layer& l : layers) l.inputs.clear();
  const Dims in = all[first].in;
  InputSpec spec{in,
                 std::vector<float>(static_cast<std::size_t>(in.c), 0.0f),
                 std::vector<float>(static_cast<std::size_t>(in.c), 1.0f),
                 {},
                 {}};
  return Network(net.name() + " [" + all[first].name + ", " + all[last].name + "]", spec, std::move(layers));
}

// Whether the input of a bound is rounded to the storage type first (the network input), or is
// already a value of that type (a backend's own stored activation, the input of a layer_window).
enum class InputRounding { Rounded, Stored };

// The bound for layers [0, count) on n samples of `input` (NCHW), one value per output element.
inline std::vector<double> rounding_error_bound(const Network& net, const std::vector<float>& input, int n,
                                                std::size_t count, const Rounding& r,
                                                InputRounding input_rounding = InputRounding::Rounded) {
  const std::vector<Layer>& layers = net.layers();
  const bool softmax_last = layers[count - 1].kind == LayerKind::Softmax;
  const std::size_t linear_count = softmax_last ? count - 1 : count;
  const bool rounded = input_rounding == InputRounding::Rounded;
  double c = rounded ? r.data : 0.0;
  double a = rounded ? r.tiny : 0.0;  // the absolute (underflow) part
  for (std::size_t i = 0; i < linear_count; ++i) {
    const Layer& l = layers[i];
    switch (l.kind) {
      case LayerKind::Conv2d:
      case LayerKind::Linear: {
        const std::size_t k = l.params.weight.size() / static_cast<std::size_t>(l.out.c);
        c += r.data + 2.0 * r.operand + static_cast<double>(k) * r.accumulate + r.sum + r.store;
        a = max_row_sum(l) * a + r.tiny;
        break;
      }
      case LayerKind::BatchNorm: {
        c += r.data + 8.0 * r.sum + r.store;
        a = max_batchnorm_scale(l) * a + r.tiny;
        break;
      }
      case LayerKind::AvgPool:
      case LayerKind::GlobalAvgPool:
      case LayerKind::AdaptiveAvgPool: {
        const double k = max_window(l);
        c += (k + 1.0) * r.sum + r.store;
        a += r.tiny;
        break;
      }
      case LayerKind::Resize:  // (1 - w) a + w b, twice: w, 1 - w, two products, a sum, per level
        c += 8.0 * r.sum + r.store;
        a += r.tiny;
        break;
      case LayerKind::Softmax: throw std::invalid_argument("rounding_error_bound: layers after a softmax");
      case LayerKind::Add:  // both inputs' errors (each within C M of its own magnitude) and one rounding
        c += r.sum + r.store;
        a = 2.0 * a + r.tiny;
        break;
      case LayerKind::Relu:
      case LayerKind::MaxPool:
      case LayerKind::Flatten:
      case LayerKind::Concat:
      case LayerKind::Upsample:
      case LayerKind::ChannelShuffle:       // a permutation: the bound permuted, no rounding
      case LayerKind::ChannelSlice: break;  // a selection: the bound of the selected channels, no rounding
      case LayerKind::Pad:  // the border value stored once: within u |value| (the magnitude network's border)
        c += r.store;
        a += r.tiny;
        break;
        INFER_CASE_POINTWISE_OPS
        // exact and 1-Lipschitz (clip): the magnitude network runs it as a ReLU (see magnitude_network)
        if (pointwise_reference(pointwise_op(l.kind), l.pointwise()).exact) break;
        [[fallthrough]];
      case LayerKind::Mul:
      case LayerKind::LayerNorm:  // divides by the pixel's deviation: no multiple of a magnitude
        throw std::invalid_argument(std::string("rounding_error_bound: ") + layer_kind_name(l.kind) +
                                    " is not modelled (its error is not a multiple of the magnitude network's output)");
    }
  }
  c *= 1.0 + c;

  std::vector<float> magnitude_input(
      input.begin(),
      input.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(n) * net.input().dims.size()));
  for (float& x : magnitude_input) x = std::fabs(x);
  std::vector<double> bound;
  if (linear_count == 0) {
    bound.assign(magnitude_input.begin(), magnitude_input.end());
  } else {
    const Network magnitudes = magnitude_network(net);
    auto cpu = make_cpu_backend(magnitudes, n);
    std::vector<float> m(static_cast<std::size_t>(n) * layers[linear_count - 1].out.size());
    cpu->forward(magnitude_input.data(), n, m.data(), linear_count);
    bound.assign(m.begin(), m.end());
  }
  for (double& b : bound) b = b * c + a * (1.0 + c);
  if (!softmax_last) return bound;

  // Softmax over the channels of each (sample, position): 2 max_j e_j + (C + 6) sum.
  const Dims d = layers[count - 1].in;
  const std::size_t plane = static_cast<std::size_t>(d.h) * d.w;
  std::vector<double> out(bound.size());
  for (int s = 0; s < n; ++s) {
    for (std::size_t p = 0; p < plane; ++p) {
      const std::size_t base = static_cast<std::size_t>(s) * d.size() + p;
      double worst = 0.0;
      for (int ch = 0; ch < d.c; ++ch) worst = std::max(worst, bound[base + static_cast<std::size_t>(ch) * plane]);
      for (int ch = 0; ch < d.c; ++ch)
        out[base + static_cast<std::size_t>(ch) * plane] = 2.0 * worst + (d.c + 6) * r.sum;
    }
  }
  return out;
}

}  // namespace infer::test
