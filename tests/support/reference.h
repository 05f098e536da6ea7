// The tests' double-precision reference for any network graph: every activation computed with the
// textbook loops in double, and beside each value a first-order bound on how far a float32 backend
// may be from it (a running error analysis, carried through the graph element by element).
//
// Model: the backend rounds every float operation to nearest (u = 2^-24), in any order of
// summation, and starts from the same float input and parameters. Per element, with E the bound
// carried on each input and |.| magnitudes:
//   conv / linear (K terms)  sum|w| E  + (K + 3) u (sum|w x| + |b|)         Higham 3.1: any order, +bias, +store,
//                                                                          +1: a batch-norm folded into w
//     by Winograd            sum|w| E  + n u (W + |b|)                    winograd_bound.h (n = C + 31 or C + 15);
//                                                                          where the backend may use it, the largest
//   batch-norm               |s| E + 8 u (|s x| + |s mean| + |beta|)         s = gamma / sqrt(var + eps), folded or not
//   relu, max pooling        E of the input that wins (max pooling: the largest E in the window); 1-Lipschitz
//   avg pooling (K)          mean of E + (K + 1) u mean|x|                 adaptive: K of each window
//   flatten, concat, upsample E, moved (upsample: copied; pad: the border exact; channel shuffle:
//     permuted with the values; channel slice: the selected channels' E)
//   add                      E_a + E_b + u |y|                               then a fused ReLU: 1-Lipschitz
//   mul                      |b| E_a + |a| E_b + E_a E_b + u |y|
//   pointwise ops            L E + r(|x|, |y|)                              L and r from pointwise_reference.h
//   resize (bilinear)        sum w E + 8 u sum w|v| + 6 u (H + W) max|v|    w: the four weights (exact); per level
//     w, 1 - w, two products, a sum; the last term is what a coordinate computed in float moves a value
//     (PyTorch's and ONNX Runtime's: 3 roundings of a value below H, times a slope below 2 max|v|):
//     infer's taps are exact (resize_formula.h), but the conformance tests hold the peers to this bound;
//     it also covers infer's weights, w and 1 - w from the rounded w, off by u max|v| per level
//     absolute (6 u (H + W) >= 12 u)
//   softmax (C channels)     2 max E + (C + 6) u                            |dy_i| <= y_i (|dx_i| + sum y_j |dx_j|)
//   layernorm (C channels)   |g| r (E_c + mean E + |z_c| mean(|z| E)) + own_c  r = 1 / sqrt(v + eps), z = (x - m) r;
//     own_c and the derivative: layernorm_reference.h
// Second-order terms (products of errors) are ignored except in mul; the comparison adds 2^-20 of
// the bound for them. Exact only for the float32 backends: reduced precisions use error_bound.h.
//
// The worst case grows with depth as the product of every layer's sum|w| (it assumes every error
// has the sign that hurts most), beyond any use after a few dozen layers. For deep networks the
// `variance` carries the probabilistic model of Higham and Mary ("A new approach to probabilistic
// rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019): each rounding error an independent,
// zero-mean variable bounded by u |result|, so a K-term sum's error has variance at most
// (K + 3) u^2 (sum|terms|)^2, and errors carried through a layer add as variances, sum w^2 var
// (errors of different elements taken as uncorrelated). Elementwise ops scale a variance by their
// derivative at the value squared (first order; the Lipschitz constant near a kink), max pooling
// takes the winner's, average pooling the mean / K.
// |error| <= lambda sigma then holds with probability at least 1 - 2 exp(-lambda^2 / 2) per element.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "graph/network.h"
#include "tests/support/layernorm_reference.h"
#include "tests/support/pointwise_reference.h"
#include "tests/support/winograd_bound.h"

namespace infer::test {

struct ReferenceTensor {
  std::vector<double> value;     // NCHW, n samples
  std::vector<double> bound;     // per element: |float32 backend - value| <= bound (worst case)
  std::vector<double> variance;  // per element: the error's variance under the probabilistic model (below)
};

// Probabilistic tolerance: lambda standard deviations of the error (see the top of this file).
inline constexpr double kLambda = 6.0;  // |error| > 6 sigma: probability below 2 exp(-18) = 3e-8 per element

namespace reference_detail {

constexpr double u = 1.0 / (1 << 24);

// winograd: the backend may run winograd_shape() convolutions by either of oneDNN's Winograd variants.
inline ReferenceTensor layer(const Layer& l, const std::vector<const ReferenceTensor*>& ins, int n, bool winograd) {
  const ReferenceTensor& in = *ins[0];
  const Dims& di = l.in;
  const Dims& d = l.out;
  ReferenceTensor out;
  out.value.assign(static_cast<std::size_t>(n) * d.size(), 0.0);
  out.bound.assign(out.value.size(), 0.0);
  out.variance.assign(out.value.size(), 0.0);
  auto idx = [](const Dims& s, int b, int c, int y, int x) {
    return ((static_cast<std::size_t>(b) * s.c + c) * s.h + y) * s.w + x;
  };
  // Elementwise ops of one input: f gives (value, bound) from (x, E), with the op's Lipschitz
  // constant; slope(x, sigma) its derivative at x (first order), or the Lipschitz constant where
  // x is within kLambda sigma of a kink (the computed value may lie on the other side). The
  // variance is slope^2 times the input's plus the op's own rounding, (bound - lipschitz E)^2.
  auto each = [&](double lipschitz, auto f, auto slope) {
    for (std::size_t i = 0; i < out.value.size(); ++i) {
      const auto [v, e] = f(in.value[i], in.bound[i]);
      out.value[i] = v;
      out.bound[i] = e;
      const double own = std::max(0.0, e - lipschitz * in.bound[i]);
      const double slope_at = slope(in.value[i], std::sqrt(in.variance[i]));
      out.variance[i] = slope_at * slope_at * in.variance[i] + own * own;
    }
  };
  // The slope of a function that is `inside` (a constant) between lo and hi and flat outside.
  auto ramp = [](double x, double sigma, double lo, double hi, double inside) {
    const double margin = kLambda * sigma;
    if (x < lo - margin || x > hi + margin) return 0.0;
    return inside;
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
        // Per output of this sample, the larger Winograd rounding bound over oneDNN's variants
        // (winograd_bound.h), as n u W without the bias term, and n.
        std::vector<double> wino_w, wino_n;
        if (winograd && l.kind == LayerKind::Conv2d && winograd_shape(l)) {
          const std::size_t first = static_cast<std::size_t>(b) * di.size();
          std::vector<double> magnitude(di.size());
          for (std::size_t i = 0; i < di.size(); ++i)
            magnitude[i] = std::fabs(in.value[first + i]);  // as the direct rule's sum|w x|: first order
          wino_w.assign(d.size(), 0.0);
          wino_n.assign(d.size(), 0.0);
          for (const winograd::Variant* v : winograd::variants()) {
            const std::vector<double> w = winograd::magnitude(*v, l, magnitude);
            const double n_v = winograd::roundings(*v, cg);
            for (std::size_t i = 0; i < w.size(); ++i) {
              if (n_v * w[i] > wino_n[i] * wino_w[i]) {
                wino_w[i] = w[i];
                wino_n[i] = n_v;
              }
            }
          }
        }
        for (int k = 0; k < d.c; ++k)
          for (int y = 0; y < d.h; ++y)
            for (int x = 0; x < d.w; ++x) {
              const double bias = a.bias ? l.params.bias[static_cast<std::size_t>(k)] : 0.0;
              double sum = bias, magnitude = std::fabs(bias), carried = 0.0, carried_var = 0.0;
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
                    carried_var += w * w * in.variance[j];
                  }
              // The own rounding: its worst case, and its variance (n roundings of at most u times
              // the magnitude each: n u^2 magnitude^2).
              double own = (terms + 3.0) * u * magnitude;
              double own_var = (terms + 3.0) * u * u * magnitude * magnitude;
              if (!wino_w.empty()) {
                const std::size_t o = (static_cast<std::size_t>(k) * d.h + y) * d.w + x;
                const double w = wino_w[o] + std::fabs(bias);
                const double n_w = wino_n[o];
                own = std::max(own, n_w * u * w);
                own_var = std::max(own_var, n_w * u * u * w * w);
              }
              out.value[idx(d, b, k, y, x)] = sum;
              out.bound[idx(d, b, k, y, x)] = carried + own;
              out.variance[idx(d, b, k, y, x)] = carried_var + own_var;
            }
        break;
      }
      case LayerKind::BatchNorm:
        for (int c = 0; c < d.c; ++c) {
          const std::size_t ch = static_cast<std::size_t>(c);
          const double s =
              l.params.weight[ch] / std::sqrt(static_cast<double>(l.params.running_var[ch]) + l.batchnorm().epsilon);
          for (int y = 0; y < d.h; ++y)
            for (int x = 0; x < d.w; ++x) {
              const std::size_t j = idx(d, b, c, y, x);
              out.value[j] = (in.value[j] - l.params.running_mean[ch]) * s + l.params.bias[ch];
              const double own = 8.0 * u *
                                 (std::fabs(s * in.value[j]) + std::fabs(s * l.params.running_mean[ch]) +
                                  std::fabs(l.params.bias[ch]));
              out.bound[j] = std::fabs(s) * in.bound[j] + own;
              out.variance[j] = s * s * in.variance[j] + own * own;
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
              double best_var = 0.0, var_sum = 0.0;
              int count = 0;
              for (int r = 0; r < a.kernel_h; ++r)
                for (int s = 0; s < a.kernel_w; ++s) {
                  const int iy = y * a.stride_h - a.pad_h + r, ix = x * a.stride_w - a.pad_w + s;
                  if (iy < 0 || iy >= di.h || ix < 0 || ix >= di.w) continue;
                  const std::size_t j = idx(di, b, c, iy, ix);
                  best = std::max(best, in.value[j]);
                  best_e = std::max(best_e, in.bound[j]);
                  best_var = std::max(best_var, in.variance[j]);
                  var_sum += in.variance[j];
                  sum += in.value[j];
                  e_sum += in.bound[j];
                  mag += std::fabs(in.value[j]);
                  ++count;
                }
              const int y0 = y * a.stride_h - a.pad_h, x0 = x * a.stride_w - a.pad_w;
              const int padded =
                  (std::min(y0 + a.kernel_h, di.h + a.pad_h) - y0) * (std::min(x0 + a.kernel_w, di.w + a.pad_w) - x0);
              const double divisor = a.count_include_pad ? padded : count;
              const std::size_t o = idx(d, b, c, y, x);
              out.value[o] = l.kind == LayerKind::MaxPool ? best : sum / divisor;
              const double own = (a.kernel_h * a.kernel_w + 1.0) * u * mag / divisor;
              out.bound[o] = l.kind == LayerKind::MaxPool ? best_e : e_sum / divisor + own;
              if (l.kind == LayerKind::MaxPool) {
                // The winner's variance; any element within kLambda sigma of the best may win instead.
                const double margin = kLambda * std::sqrt(best_var);
                double var = 0.0;
                for (int r = 0; r < a.kernel_h; ++r)
                  for (int s = 0; s < a.kernel_w; ++s) {
                    const int iy = y * a.stride_h - a.pad_h + r, ix = x * a.stride_w - a.pad_w + s;
                    if (iy < 0 || iy >= di.h || ix < 0 || ix >= di.w) continue;
                    const std::size_t j = idx(di, b, c, iy, ix);
                    if (in.value[j] >= best - margin) var = std::max(var, in.variance[j]);
                  }
                out.variance[o] = var;
              } else {
                out.variance[o] = var_sum / (divisor * divisor) + own * own;
              }
            }
        break;
      }
      case LayerKind::GlobalAvgPool:
        for (int c = 0; c < d.c; ++c) {
          double sum = 0.0, e_sum = 0.0, mag = 0.0, var_sum = 0.0;
          for (int y = 0; y < di.h; ++y)
            for (int x = 0; x < di.w; ++x) {
              const std::size_t j = idx(di, b, c, y, x);
              sum += in.value[j];
              e_sum += in.bound[j];
              var_sum += in.variance[j];
              mag += std::fabs(in.value[j]);
            }
          const double k = static_cast<double>(di.h) * di.w;
          const double own = (k + 1.0) * u * mag / k;
          out.value[idx(d, b, c, 0, 0)] = sum / k;
          out.bound[idx(d, b, c, 0, 0)] = e_sum / k + own;
          out.variance[idx(d, b, c, 0, 0)] = var_sum / (k * k) + own * own;
        }
        break;
      case LayerKind::Softmax:
        for (int y = 0; y < d.h; ++y)
          for (int x = 0; x < d.w; ++x) {
            double m = -std::numeric_limits<double>::infinity(), total = 0.0, worst = 0.0, worst_var = 0.0;
            for (int c = 0; c < d.c; ++c) {
              m = std::max(m, in.value[idx(di, b, c, y, x)]);
              worst = std::max(worst, in.bound[idx(di, b, c, y, x)]);
              worst_var = std::max(worst_var, in.variance[idx(di, b, c, y, x)]);
            }
            for (int c = 0; c < d.c; ++c) total += std::exp(in.value[idx(di, b, c, y, x)] - m);
            for (int c = 0; c < d.c; ++c) {
              out.value[idx(d, b, c, y, x)] = std::exp(in.value[idx(di, b, c, y, x)] - m) / total;
              out.bound[idx(d, b, c, y, x)] = 2.0 * worst + (d.c + 6.0) * u;
              out.variance[idx(d, b, c, y, x)] = 4.0 * worst_var + (d.c + 6.0) * u * u;
            }
          }
        break;
      case LayerKind::LayerNorm: {  // layernorm_reference.h
        const std::vector<float>& g = l.params.weight;
        const std::vector<float>& beta = l.params.bias;
        const double count = d.c;
        for (int y = 0; y < d.h; ++y)
          for (int x = 0; x < d.w; ++x) {
            auto at = [&](int c) { return idx(d, b, c, y, x); };
            const LayerNormPixel p =
                layernorm_pixel(d.c, l.layernorm().epsilon, [&](int c) { return in.value[at(c)]; });
            double mean_e = 0.0, mean_var = 0.0, z_e = 0.0, z2_var = 0.0;  // mean E, mean var, mean |z| E, mean z^2 var
            for (int c = 0; c < d.c; ++c) {
              const double z = (in.value[at(c)] - p.mean) * p.r;
              mean_e += in.bound[at(c)], mean_var += in.variance[at(c)];
              z_e += std::fabs(z) * in.bound[at(c)], z2_var += z * z * in.variance[at(c)];
            }
            mean_e /= count, mean_var /= count, z_e /= count, z2_var /= count;
            for (int c = 0; c < d.c; ++c) {
              const std::size_t j = at(c), ch = static_cast<std::size_t>(c);
              const double z = (in.value[j] - p.mean) * p.r, gr = std::fabs(g[ch]) * p.r;
              out.value[j] = g[ch] * z + beta[ch];
              const double own = layernorm_own(p, g[ch], in.value[j], out.value[j]);
              out.bound[j] = gr * (in.bound[j] + mean_e + std::fabs(z) * z_e) + own;
              // Input j's error moves y_c by g_c r (delta_cj - 1/C - z_c z_j / C): |1 - 1/C - z_c^2 / C| <= 1
              // (z_c^2 <= C), and (a + b)^2 <= 2 a^2 + 2 b^2 bounds the other inputs' terms.
              out.variance[j] = gr * gr * (in.variance[j] + 2.0 / count * (mean_var + z * z * z2_var)) + own * own;
            }
          }
        break;
      }
      case LayerKind::Upsample:  // out[y][x] = in[y / scale_h][x / scale_w]: a copy, exact
        for (int c = 0; c < d.c; ++c)
          for (int y = 0; y < d.h; ++y)
            for (int x = 0; x < d.w; ++x) {
              const std::size_t from = idx(di, b, c, y / l.upsample().scale_h, x / l.upsample().scale_w),
                                to = idx(d, b, c, y, x);
              out.value[to] = in.value[from];
              out.bound[to] = in.bound[from];
              out.variance[to] = in.variance[from];
            }
        break;
      case LayerKind::ChannelShuffle: {  // output channel j g + i is input channel i k + j: a copy, exact
        const int g = l.channel_shuffle().groups, k = di.c / g;
        for (int i = 0; i < g; ++i)
          for (int j = 0; j < k; ++j)
            for (int y = 0; y < d.h; ++y)
              for (int x = 0; x < d.w; ++x) {
                const std::size_t from = idx(di, b, i * k + j, y, x), to = idx(d, b, j * g + i, y, x);
                out.value[to] = in.value[from];
                out.bound[to] = in.bound[from];
                out.variance[to] = in.variance[from];
              }
        break;
      }
      case LayerKind::ChannelSlice:  // output channel c is input channel begin + c: a copy, exact
        for (int c = 0; c < d.c; ++c)
          for (int y = 0; y < d.h; ++y)
            for (int x = 0; x < d.w; ++x) {
              const std::size_t from = idx(di, b, l.channel_slice().begin + c, y, x), to = idx(d, b, c, y, x);
              out.value[to] = in.value[from];
              out.bound[to] = in.bound[from];
              out.variance[to] = in.variance[from];
            }
        break;
      case LayerKind::Resize: {
        const ResizeAttrs& a = l.resize();
        // The exact taps of resize_formula.h: the coordinate num / den, i0, i1 and w1 in double.
        struct Tap {
          int i0, i1;
          double w1;
        };
        auto tap = [&](int i, int from, int to) {
          long long num = 0, den = 1;
          if (a.align_corners) {
            if (to > 1) {
              num = static_cast<long long>(i) * (from - 1);
              den = to - 1;
            }
          } else {
            num = std::max(0LL, (2LL * i + 1) * from - to);
            den = 2LL * to;
          }
          const long long i0 = num / den;
          if (i0 >= from - 1) return Tap{from - 1, from - 1, 0.0};
          return Tap{static_cast<int>(i0), static_cast<int>(i0) + 1,
                     static_cast<double>(num - i0 * den) / static_cast<double>(den)};
        };
        for (int c = 0; c < d.c; ++c)
          for (int y = 0; y < d.h; ++y) {
            const Tap ty = tap(y, di.h, d.h);
            for (int x = 0; x < d.w; ++x) {
              const Tap tx = tap(x, di.w, d.w);
              double value = 0.0, e = 0.0, var = 0.0, magnitude = 0.0, largest = 0.0;
              for (int r = 0; r < 2; ++r)
                for (int s = 0; s < 2; ++s) {
                  const double w = (r ? ty.w1 : 1.0 - ty.w1) * (s ? tx.w1 : 1.0 - tx.w1);
                  const std::size_t at = idx(di, b, c, r ? ty.i1 : ty.i0, s ? tx.i1 : tx.i0);
                  value += w * in.value[at];
                  e += w * in.bound[at];
                  var += w * w * in.variance[at];
                  magnitude += w * std::fabs(in.value[at]);
                  largest = std::max(largest, std::fabs(in.value[at]));
                }
              const double own = 8.0 * u * magnitude + 6.0 * u * (di.h + di.w) * largest;
              const std::size_t to = idx(d, b, c, y, x);
              out.value[to] = value;
              out.bound[to] = e + own;
              out.variance[to] = var + own * own;
            }
          }
        break;
      }
      case LayerKind::AdaptiveAvgPool: {  // PyTorch's windows: [floor(i H / out), ceil((i + 1) H / out))
        const AdaptivePoolAttrs& a = l.adaptive();
        for (int c = 0; c < d.c; ++c)
          for (int i = 0; i < d.h; ++i)
            for (int j = 0; j < d.w; ++j) {
              const int y0 = static_cast<int>(std::floor(static_cast<double>(i) * di.h / a.out_h));
              const int y1 = static_cast<int>(std::ceil(static_cast<double>(i + 1) * di.h / a.out_h));
              const int x0 = static_cast<int>(std::floor(static_cast<double>(j) * di.w / a.out_w));
              const int x1 = static_cast<int>(std::ceil(static_cast<double>(j + 1) * di.w / a.out_w));
              const double k = static_cast<double>(y1 - y0) * (x1 - x0);
              double sum = 0.0, e_sum = 0.0, v_sum = 0.0, magnitude = 0.0;
              for (int y = y0; y < y1; ++y)
                for (int x = x0; x < x1; ++x) {
                  const std::size_t at = idx(di, b, c, y, x);
                  sum += in.value[at];
                  e_sum += in.bound[at];
                  v_sum += in.variance[at];
                  magnitude += std::fabs(in.value[at]);
                }
              const std::size_t to = idx(d, b, c, i, j);
              const double own = (k + 1.0) * u * magnitude / k;  // as average pooling: (K + 1) u mean|x|
              out.value[to] = sum / k;
              out.bound[to] = e_sum / k + own;
              out.variance[to] = v_sum / (k * k) + own * own;
            }
        break;
      }
      case LayerKind::Pad: {  // the border holds the value exactly (float, half and -inf alike: 0 error)
        const PadAttrs& a = l.pad();
        for (int c = 0; c < d.c; ++c)
          for (int y = 0; y < d.h; ++y)
            for (int x = 0; x < d.w; ++x) {
              const std::size_t to = idx(d, b, c, y, x);
              const int sy = y - a.top, sx = x - a.left;
              if (sy < 0 || sy >= di.h || sx < 0 || sx >= di.w) {
                out.value[to] = a.value;
                continue;  // bound and variance 0
              }
              const std::size_t from = idx(di, b, c, sy, sx);
              out.value[to] = in.value[from];
              out.bound[to] = in.bound[from];
              out.variance[to] = in.variance[from];
            }
        break;
      }
      case LayerKind::Concat: {
        const std::size_t plane = static_cast<std::size_t>(d.h) * d.w;
        std::size_t at = static_cast<std::size_t>(b) * d.size();
        for (std::size_t k = 0; k < ins.size(); ++k) {
          const std::size_t size = static_cast<std::size_t>(l.in_dims[k].c) * plane;
          const std::size_t from = static_cast<std::size_t>(b) * size;
          std::copy_n(ins[k]->value.begin() + static_cast<std::ptrdiff_t>(from), size,
                      out.value.begin() + static_cast<std::ptrdiff_t>(at));
          std::copy_n(ins[k]->bound.begin() + static_cast<std::ptrdiff_t>(from), size,
                      out.bound.begin() + static_cast<std::ptrdiff_t>(at));
          std::copy_n(ins[k]->variance.begin() + static_cast<std::ptrdiff_t>(from), size,
                      out.variance.begin() + static_cast<std::ptrdiff_t>(at));
          at += size;
        }
        break;
      }
      case LayerKind::Add:
      case LayerKind::Mul: {
        const ReferenceTensor& other = *ins[1];
        const bool per_channel = l.in_dims[1].size() != d.size();
        const std::size_t plane = static_cast<std::size_t>(d.h) * d.w;
        for (std::size_t i = static_cast<std::size_t>(b) * d.size(); i < static_cast<std::size_t>(b + 1) * d.size();
             ++i) {
          const std::size_t j = per_channel ? i / plane : i;
          const double x = in.value[i], z = other.value[j], ex = in.bound[i], ez = other.bound[j];
          const double vx = in.variance[i], vz = other.variance[j];
          if (l.kind == LayerKind::Add) {
            const double sum = x + z;
            const bool relu = l.add().relu;
            out.value[i] = relu ? std::max(sum, 0.0) : sum;
            out.bound[i] = ex + ez + u * std::fabs(sum);
            out.variance[i] = vx + vz + u * u * sum * sum;
          } else {
            out.value[i] = x * z;
            out.bound[i] = std::fabs(z) * ex + std::fabs(x) * ez + ex * ez + u * std::fabs(x * z);
            out.variance[i] = z * z * vx + x * x * vz + vx * vz + u * u * x * x * z * z;
          }
        }
        break;
      }
      default:
        if (b == 0) {  // elementwise: all n samples at once
          if (is_pointwise(l.kind)) {
            const PointwiseReference f = pointwise_reference(pointwise_op(l.kind), l.pointwise());
            each(
                f.lipschitz,
                [&](double x, double e) {
                  const double y = f.value(x);
                  return std::pair{y, f.lipschitz * e + f.rounding(std::fabs(x), std::fabs(y))};
                },
                [&](double x, double sigma) { return f.slope(x, kLambda * sigma); });
            break;
          }
          switch (l.kind) {
            case LayerKind::Relu:
              each(
                  1.0,
                  [](double x, double e) {
                    return std::pair{std::max(x, 0.0), e};
                  },
                  [&](double x, double sigma) { return ramp(x, sigma, 0.0, HUGE_VAL, 1.0); });
              break;
            case LayerKind::Flatten:
              each(
                  1.0,
                  [](double x, double e) {
                    return std::pair{x, e};
                  },
                  [](double, double) { return 1.0; });
              break;
            default: throw std::logic_error("reference: an op without a case");
          }
        }
        break;
    }
  }
  return out;
}

}  // namespace reference_detail

// Whether the CPU backend with `options` may run winograd_shape() convolutions by Winograd.
inline bool cpu_winograd(const CpuOptions& options = {}) {
  return options.kernels == CpuKernels::Onednn && options.winograd && onednn_has_winograd();
}

// Activations [0, count] of `net` on n samples of `input` (NCHW floats): [0] the input (bound 0),
// [i + 1] layer i's output. winograd: for a backend that may run winograd_shape() convolutions by
// Winograd (cpu_winograd() below says whether the CPU backend does).
inline std::vector<ReferenceTensor> reference_forward(const Network& net, const std::vector<float>& input, int n,
                                                      std::size_t count, bool winograd = false) {
  std::vector<ReferenceTensor> acts(count + 1);
  const std::size_t in_size = static_cast<std::size_t>(n) * net.input().dims.size();
  acts[0].value.assign(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(in_size));
  acts[0].bound.assign(in_size, 0.0);
  acts[0].variance.assign(in_size, 0.0);
  for (std::size_t i = 0; i < count; ++i) {
    const Layer& l = net.layers()[i];
    std::vector<const ReferenceTensor*> ins;
    for (std::size_t a : l.sources) ins.push_back(&acts[a]);
    acts[i + 1] = reference_detail::layer(l, ins, n, winograd);
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
