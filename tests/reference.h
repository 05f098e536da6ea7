// The tests' double-precision reference for any network graph: every activation computed with the
// textbook loops in double, and beside each value a first-order bound on how far a float32 backend
// may be from it (a running error analysis, carried through the graph element by element).
//
// Model: the backend rounds every float operation to nearest (u = 2^-24), in any order of
// summation, and starts from the same float input and parameters. Per element, with E the bound
// carried on each input and |.| magnitudes:
//   conv / linear (K terms)  sum|w| E  + (K + 3) u (sum|w x| + |b|)         Higham 3.1: any order, +bias, +store,
//                                                                          +1: a batch-norm folded into w
//   batch-norm               |s| E + 8 u (|s x| + |s mean| + |beta|)         s = gamma / sqrt(var + eps), folded or not
//   relu, max pooling, clip  E of the input that wins (max pooling: the largest E in the window); 1-Lipschitz
//   avg pooling (K)          mean of E + (K + 1) u mean|x|
//   flatten, concat          E, moved
//   add                      E_a + E_b + u |y|                               then a fused ReLU: 1-Lipschitz
//   mul                      |b| E_a + |a| E_b + E_a E_b + u |y|
//   sigmoid                  E / 4 + 4 u |y|                                exp within 2 ulp, +1 and / rounded
//   silu                     1.1 E + 4 u |y|                                max |silu'| = 1.0998
//   hardsigmoid (a, b)       |a| E + u (|a x| + |a x + b|)                  the product and the sum rounded; clamp
//   hardswish (a, b)         L E + u |x| (|a x| + |a x + b|) + u |y|       L = max(1, |b|, |2 - b|) for a > 0
//   softmax (C channels)     2 max E + (C + 6) u                            |dy_i| <= y_i (|dx_i| + sum y_j |dx_j|)
// Second-order terms (products of errors) are ignored except in mul; the comparison adds 2^-20 of
// the bound for them. Exact only for the float32 backends: reduced precisions use error_bound.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "model/network.h"

namespace infer::test {

struct ReferenceTensor {
  std::vector<double> value;  // NCHW, n samples
  std::vector<double> bound;  // per element: |float32 backend - value| <= bound
};

namespace reference_detail {

constexpr double u = 1.0 / (1 << 24);

inline ReferenceTensor layer(const Layer& l, const std::vector<const ReferenceTensor*>& ins, int n) {
  const ReferenceTensor& in = *ins[0];
  const Dims& di = l.in;
  const Dims& d = l.out;
  ReferenceTensor out;
  out.value.assign(static_cast<std::size_t>(n) * d.size(), 0.0);
  out.bound.assign(out.value.size(), 0.0);
  auto idx = [](const Dims& s, int b, int c, int y, int x) {
    return ((static_cast<std::size_t>(b) * s.c + c) * s.h + y) * s.w + x;
  };
  // Elementwise ops of one input: f gives (value, bound) from (x, E).
  auto each = [&](auto f) {
    for (std::size_t i = 0; i < out.value.size(); ++i) {
      const auto [v, e] = f(in.value[i], in.bound[i]);
      out.value[i] = v;
      out.bound[i] = e;
    }
  };
  for (int b = 0; b < n; ++b) {
    switch (l.kind) {
      case LayerKind::Conv2d:
      case LayerKind::Linear: {
        Conv2dAttrs a;
        if (l.kind == LayerKind::Conv2d) {
          a = l.conv();
        } else {
          a.out_channels = l.linear().out_features;
          a.bias = l.linear().bias;
        }
        const int cg = di.c / a.groups, kg = a.out_channels / a.groups;
        const double terms = static_cast<double>(cg) * a.kernel_h * a.kernel_w;
        for (int k = 0; k < d.c; ++k)
          for (int y = 0; y < d.h; ++y)
            for (int x = 0; x < d.w; ++x) {
              const double bias = a.bias ? l.params.bias[static_cast<std::size_t>(k)] : 0.0;
              double sum = bias, magnitude = std::fabs(bias), carried = 0.0;
              for (int c = 0; c < cg; ++c)
                for (int r = 0; r < a.kernel_h; ++r)
                  for (int s = 0; s < a.kernel_w; ++s) {
                    const int iy = y * a.stride_h - a.pad_h + r * a.dilation_h;
                    const int ix = x * a.stride_w - a.pad_w + s * a.dilation_w;
                    if (iy < 0 || iy >= di.h || ix < 0 || ix >= di.w) continue;
                    const double w =
                        l.params.weight[((static_cast<std::size_t>(k) * cg + c) * a.kernel_h + r) * a.kernel_w + s];
                    const std::size_t j = idx(di, b, k / kg * cg + c, iy, ix);
                    sum += w * in.value[j];
                    magnitude += std::fabs(w * in.value[j]);
                    carried += std::fabs(w) * in.bound[j];
                  }
              out.value[idx(d, b, k, y, x)] = sum;
              out.bound[idx(d, b, k, y, x)] = carried + (terms + 3.0) * u * magnitude;
            }
        break;
      }
      case LayerKind::BatchNorm:
        for (int c = 0; c < d.c; ++c) {
          const std::size_t ch = static_cast<std::size_t>(c);
          const double s = l.params.weight[ch] / std::sqrt(static_cast<double>(l.params.running_var[ch]) + l.batchnorm().epsilon);
          for (int y = 0; y < d.h; ++y)
            for (int x = 0; x < d.w; ++x) {
              const std::size_t j = idx(d, b, c, y, x);
              out.value[j] = (in.value[j] - l.params.running_mean[ch]) * s + l.params.bias[ch];
              out.bound[j] = std::fabs(s) * in.bound[j] +
                             8.0 * u * (std::fabs(s * in.value[j]) + std::fabs(s * l.params.running_mean[ch]) + std::fabs(l.params.bias[ch]));
            }
        }
        break;
      case LayerKind::MaxPool:
      case LayerKind::AvgPool: {
        const Pool2dAttrs& a = l.pool();
        for (int c = 0; c < d.c; ++c)
          for (int y = 0; y < d.h; ++y)
            for (int x = 0; x < d.w; ++x) {
              double best = -std::numeric_limits<double>::infinity(), best_e = 0.0, sum = 0.0, e_sum = 0.0, mag = 0.0;
              int count = 0;
              for (int r = 0; r < a.kernel_h; ++r)
                for (int s = 0; s < a.kernel_w; ++s) {
                  const int iy = y * a.stride_h - a.pad_h + r, ix = x * a.stride_w - a.pad_w + s;
                  if (iy < 0 || iy >= di.h || ix < 0 || ix >= di.w) continue;
                  const std::size_t j = idx(di, b, c, iy, ix);
                  best = std::max(best, in.value[j]);
                  best_e = std::max(best_e, in.bound[j]);
                  sum += in.value[j];
                  e_sum += in.bound[j];
                  mag += std::fabs(in.value[j]);
                  ++count;
                }
              const double divisor = a.count_include_pad ? a.kernel_h * a.kernel_w : count;
              const std::size_t o = idx(d, b, c, y, x);
              out.value[o] = l.kind == LayerKind::MaxPool ? best : sum / divisor;
              out.bound[o] = l.kind == LayerKind::MaxPool
                                 ? best_e
                                 : (e_sum + (a.kernel_h * a.kernel_w + 1.0) * u * mag) / divisor;
            }
        break;
      }
      case LayerKind::GlobalAvgPool:
        for (int c = 0; c < d.c; ++c) {
          double sum = 0.0, e_sum = 0.0, mag = 0.0;
          for (int y = 0; y < di.h; ++y)
            for (int x = 0; x < di.w; ++x) {
              const std::size_t j = idx(di, b, c, y, x);
              sum += in.value[j];
              e_sum += in.bound[j];
              mag += std::fabs(in.value[j]);
            }
          const double k = static_cast<double>(di.h) * di.w;
          out.value[idx(d, b, c, 0, 0)] = sum / k;
          out.bound[idx(d, b, c, 0, 0)] = (e_sum + (k + 1.0) * u * mag) / k;
        }
        break;
      case LayerKind::Softmax:
        for (int y = 0; y < d.h; ++y)
          for (int x = 0; x < d.w; ++x) {
            double m = -std::numeric_limits<double>::infinity(), total = 0.0, worst = 0.0;
            for (int c = 0; c < d.c; ++c) {
              m = std::max(m, in.value[idx(di, b, c, y, x)]);
              worst = std::max(worst, in.bound[idx(di, b, c, y, x)]);
            }
            for (int c = 0; c < d.c; ++c) total += std::exp(in.value[idx(di, b, c, y, x)] - m);
            for (int c = 0; c < d.c; ++c) {
              out.value[idx(d, b, c, y, x)] = std::exp(in.value[idx(di, b, c, y, x)] - m) / total;
              out.bound[idx(d, b, c, y, x)] = 2.0 * worst + (d.c + 6.0) * u;
            }
          }
        break;
      case LayerKind::Concat: {
        const std::size_t plane = static_cast<std::size_t>(d.h) * d.w;
        std::size_t at = static_cast<std::size_t>(b) * d.size();
        for (std::size_t k = 0; k < ins.size(); ++k) {
          const std::size_t size = static_cast<std::size_t>(l.in_dims[k].c) * plane;
          const std::size_t from = static_cast<std::size_t>(b) * size;
          std::copy_n(ins[k]->value.begin() + static_cast<std::ptrdiff_t>(from), size, out.value.begin() + static_cast<std::ptrdiff_t>(at));
          std::copy_n(ins[k]->bound.begin() + static_cast<std::ptrdiff_t>(from), size, out.bound.begin() + static_cast<std::ptrdiff_t>(at));
          at += size;
        }
        break;
      }
      case LayerKind::Add:
      case LayerKind::Mul: {
        const ReferenceTensor& other = *ins[1];
        const bool per_channel = l.in_dims[1].size() != d.size();
        const std::size_t plane = static_cast<std::size_t>(d.h) * d.w;
        for (std::size_t i = static_cast<std::size_t>(b) * d.size(); i < static_cast<std::size_t>(b + 1) * d.size(); ++i) {
          const std::size_t j = per_channel ? i / plane : i;
          const double x = in.value[i], z = other.value[j], ex = in.bound[i], ez = other.bound[j];
          if (l.kind == LayerKind::Add) {
            const double sum = x + z;
            const bool relu = l.add().relu;
            out.value[i] = relu ? std::max(sum, 0.0) : sum;
            out.bound[i] = ex + ez + u * std::fabs(sum);
          } else {
            out.value[i] = x * z;
            out.bound[i] = std::fabs(z) * ex + std::fabs(x) * ez + ex * ez + u * std::fabs(x * z);
          }
        }
        break;
      }
      default:
        if (b == 0) {  // elementwise: all n samples at once
          const double alpha = l.kind == LayerKind::HardSigmoid || l.kind == LayerKind::HardSwish ? l.hardsigmoid().alpha : 0.0;
          const double beta = l.kind == LayerKind::HardSigmoid || l.kind == LayerKind::HardSwish ? l.hardsigmoid().beta : 0.0;
          auto hard = [&](double x) { return std::min(std::max(alpha * x + beta, 0.0), 1.0); };
          switch (l.kind) {
            case LayerKind::Relu: each([](double x, double e) { return std::pair{std::max(x, 0.0), e}; }); break;
            case LayerKind::Flatten: each([](double x, double e) { return std::pair{x, e}; }); break;
            case LayerKind::Clip: {
              const double lo = l.clip().min, hi = l.clip().max;
              each([&](double x, double e) { return std::pair{std::min(std::max(x, lo), hi), e}; });
              break;
            }
            case LayerKind::Sigmoid:
              each([](double x, double e) {
                const double y = 1.0 / (1.0 + std::exp(-x));
                return std::pair{y, e / 4.0 + 4.0 * u * y};
              });
              break;
            case LayerKind::Silu:
              each([](double x, double e) {
                const double y = x / (1.0 + std::exp(-x));
                return std::pair{y, 1.1 * e + 4.0 * u * std::fabs(y)};
              });
              break;
            case LayerKind::HardSigmoid:
              each([&](double x, double e) {
                return std::pair{hard(x), std::fabs(alpha) * e + u * (std::fabs(alpha * x) + std::fabs(alpha * x + beta))};
              });
              break;
            case LayerKind::HardSwish: {
              if (!(alpha > 0.0)) throw std::invalid_argument("reference: hardswish with alpha <= 0");
              const double lipschitz = std::max({1.0, std::fabs(beta), std::fabs(2.0 - beta)});
              each([&](double x, double e) {
                const double y = x * hard(x);
                return std::pair{y, lipschitz * e + u * std::fabs(x) * (std::fabs(alpha * x) + std::fabs(alpha * x + beta)) +
                                        u * std::fabs(y)};
              });
              break;
            }
            default: throw std::logic_error("reference: an op without a case");
          }
        }
        break;
    }
  }
  return out;
}

}  // namespace reference_detail

// Activations [0, count] of `net` on n samples of `input` (NCHW floats): [0] the input (bound 0),
// [i + 1] layer i's output.
inline std::vector<ReferenceTensor> reference_forward(const Network& net, const std::vector<float>& input, int n,
                                                      std::size_t count) {
  std::vector<ReferenceTensor> acts(count + 1);
  const std::size_t in_size = static_cast<std::size_t>(n) * net.input().dims.size();
  acts[0].value.assign(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(in_size));
  acts[0].bound.assign(in_size, 0.0);
  for (std::size_t i = 0; i < count; ++i) {
    const Layer& l = net.layers()[i];
    std::vector<const ReferenceTensor*> ins;
    for (std::size_t a : l.sources) ins.push_back(&acts[a]);
    acts[i + 1] = reference_detail::layer(l, ins, n);
  }
  return acts;
}

// The comparison tolerance for a reference tensor: its bound, plus 2^-20 of it for the ignored
// second-order terms.
inline std::vector<double> reference_tolerance(const ReferenceTensor& t) {
  std::vector<double> tol(t.bound);
  for (double& x : tol) x *= 1.0 + 1.0 / (1 << 20);
  return tol;
}

}  // namespace infer::test
