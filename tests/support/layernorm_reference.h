// The tests' definition of the layernorm op (network.h, LayerNormAttrs), in double, for one pixel's
// C values: its statistics, and the float32 formula's own rounding, which reference.h and the GPU
// test's bound both need. Derivation (u = 2^-24; m, v the exact mean and variance, r = 1 / sqrt(v
// + eps), z_c = (x_c - m) r, y_c = g_c z_c + beta_c), for any order of summation and both ways of
// computing v (the differences' mean square, as infer's kernels do, or E[x^2] - m^2, as ONNX
// Runtime's LayerNormalization does):
//   the mean: a C-term sum (Higham 3.1) and a scaling      e_m = (C + 1) u mean|x|
//   the variance: C squares and a C-term sum of them,     e_v = (C + 4) u mean(x^2) + 2 e_m (|m| + mean|x - m|)
//     or the mean square and m^2 subtracted; the error of the mean moves each difference by e_m
//   r from v within e_v, then + eps (u / 2 of r), sqrt (u) and the reciprocal (u), or a GPU's rsqrt
//   (2 ulp, 4 u) after the + eps: 5 u covers both     rel_r = (1 + 5 u) / sqrt(1 - e_v / (v + eps)) - 1,
//     relative, exact in e_v (no bound where e_v >= v + eps: E[x^2] - m^2 can lose every digit)
//   y_c: the difference (or PyTorch's x r - m r, a scale and shift that cancel: 4 u (|x_c| + |m|)
//     covers both), two products and the bias add
//       own_c = |g_c| r (e_m + 4 u (|x_c| + |m|)) + |g_c z_c| (rel_r + 2 u) + u |y_c|
// An input error dx moves y_c by g_c r (dx_c - mean(dx) - z_c mean(z dx)) to first order: the
// derivative dy_c/dx_j is g_c r (delta_cj - 1/C - z_c z_j / C).
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>

namespace infer::test {

struct LayerNormPixel {
  double mean = 0.0;
  double r = 0.0;      // 1 / sqrt(var + eps)
  double e_m = 0.0;    // the float mean's error
  double rel_r = 0.0;  // r's relative error in float
};

// x(c) gives channel c's value, c < channels.
template <typename Value>
LayerNormPixel layernorm_pixel(int channels, double eps, Value x) {
  constexpr double u = 1.0 / (1 << 24);
  const double count = channels;
  double m = 0.0, abs_x = 0.0, sq_x = 0.0;
  for (int c = 0; c < channels; ++c) {
    const double v = x(c);
    m += v, abs_x += std::fabs(v), sq_x += v * v;
  }
  m /= count, abs_x /= count, sq_x /= count;
  double var = 0.0, abs_d = 0.0;
  for (int c = 0; c < channels; ++c) {
    const double d = x(c) - m;
    var += d * d, abs_d += std::fabs(d);
  }
  var /= count, abs_d /= count;
  LayerNormPixel p;
  p.mean = m;
  p.r = 1.0 / std::sqrt(var + eps);
  p.e_m = (count + 1.0) * u * abs_x;
  const double e_v = (count + 4.0) * u * sq_x + 2.0 * p.e_m * (std::fabs(m) + abs_d);
  p.rel_r = e_v >= var + eps ? std::numeric_limits<double>::infinity()
                             : (1.0 + 5.0 * u) / std::sqrt(1.0 - e_v / (var + eps)) - 1.0;
  return p;
}

// own_c above, for channel value x with weight g and output y.
inline double layernorm_own(const LayerNormPixel& p, double g, double x, double y) {
  constexpr double u = 1.0 / (1 << 24);
  const double z = (x - p.mean) * p.r;
  return std::fabs(g) * p.r * (p.e_m + 4.0 * u * (std::fabs(x) + std::fabs(p.mean))) +
         std::fabs(g * z) * (p.rel_r + 2.0 * u) + u * std::fabs(y);
}

}  // namespace infer::test
