// The tests' definition of every pointwise op (ops.h INFER_POINTWISE_OPS), written from each op's
// mathematical definition in double (not from graph/pointwise_formula.h, which it checks), with
// what every error bound of the tests needs from the op:
//   value(x)                 f(x; a, b) in double; NaN in, NaN out
//   lipschitz                sup |f'|: an input error E moves the output by at most lipschitz E
//   rounding(|x|, |y|)       the float32 formula's own error, an upper bound for every input of
//                            magnitude at most |x| whose output has magnitude at most |y|
//   slope(x, margin)         |f'(x)|, or the Lipschitz constant where a kink lies within margin of x
//   exact                    rounding is 0 and the op is 1-Lipschitz (clip: error_bound.h runs it as
//                            a ReLU in the magnitude network)
// and `sample`: the parameters the tests give the op (the graph zoo, the stand-in's tests): the ones
// PyTorch's modules use, or ONNX's defaults where those differ (hardsigmoid; the row's are
// PyTorch's), so that both are covered.
//
// The float model, u = 2^-24: expf within 2 ulp (4 u), then +1 and / rounded: 6 u |y| for sigmoid
// and silu, plus t = 1e-36 where x < -88.7 makes expf(-x) overflow and the result (at most 3e-37)
// becomes 0. hardsigmoid: the product and the sum rounded, u (|a x| + |a x + b|) <= u (2 |a x| + |b|).
// hardswish: that times |x|, plus the final product's u |y|. The clamps are exact.
// Maximum slopes: sigmoid 1/4; silu 1.0998 (at x = 2.40); hardswish max(1, |b|, |2 - b|) for a > 0
// (its slope is 2 a x + b on the ramp, 0 and 1 outside); gelu 1.1289 (Phi(x) + x phi(x) at x = sqrt 2).
// gelu, 0.5f * x * (1 + erff(x * c)) with c = float(1 / sqrt 2): the argument x c within 2u of
// x / sqrt 2 (c's rounding and the product's) moves erf by at most (2 / sqrt pi) max|z exp(-z^2)| 2u
// = 0.968u; erff's own error is 2 ulp of a value below 1, at most 2u; 1 + erf rounds by at most 2u:
// the bracket within 5u. Times 0.5 x (exact above the subnormals, t), then the product's rounding:
// 2.5u |x| + u |y|.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "graph/network.h"

namespace infer::test {

struct PointwiseReference {
  PointwiseAttrs sample;  // the parameters the tests give the op (whatever the ones asked about)
  std::function<double(double)> value;
  double lipschitz = 1.0;
  std::function<double(double x_abs, double y_abs)> rounding;
  std::function<double(double x, double margin)> slope;
  bool exact = false;
};

namespace pointwise_detail {
constexpr double u = 1.0 / (1 << 24);
constexpr double kTiny = 1e-36;
inline double clamp(double v, double lo, double hi) { return std::isnan(v) ? v : std::min(std::max(v, lo), hi); }
inline double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }
// The slope of a function that is `inside` between lo and hi and flat outside; `inside` within
// margin of either end.
inline double ramp(double x, double margin, double lo, double hi, double inside) {
  return x < lo - margin || x > hi + margin ? 0.0 : inside;
}
}  // namespace pointwise_detail

inline PointwiseReference pointwise_reference(PointwiseOp op, PointwiseAttrs p) {
  using namespace pointwise_detail;
  const double a = p.a, b = p.b;
  switch (op) {
    case PointwiseOp::Sigmoid:
      return {default_pointwise_attrs(op), logistic, 0.25, [](double, double y) { return 6.0 * u * y + kTiny; },
              [](double x, double) { return logistic(x) * (1.0 - logistic(x)); }};
    case PointwiseOp::Silu:
      return {default_pointwise_attrs(op), [](double x) { return x * logistic(x); }, 1.1,
              [](double, double y) { return 6.0 * u * y + kTiny; },
              [](double x, double) { return std::fabs(logistic(x) * (1.0 + x * (1.0 - logistic(x)))); }};
    case PointwiseOp::Clip:  // a = min, b = max; the sample is ReLU6
      return {{0.0f, 6.0f},
              [=](double x) { return clamp(x, a, b); },
              1.0,
              [](double, double) { return 0.0; },
              [=](double x, double margin) { return ramp(x, margin, a, b, 1.0); },
              true};
    case PointwiseOp::HardSigmoid: {  // a = alpha, b = beta
      const double lo = std::min(-b / a, (1.0 - b) / a), hi = std::max(-b / a, (1.0 - b) / a);
      return {{0.2f, 0.5f},
              [=](double x) { return std::isnan(x) ? x : clamp(a * x + b, 0.0, 1.0); },
              std::fabs(a),
              [=](double x, double) { return u * (2.0 * std::fabs(a) * x + std::fabs(b)); },
              [=](double x, double margin) { return ramp(x, margin, lo, hi, std::fabs(a)); }};
    }
    case PointwiseOp::HardSwish: {
      if (!(a > 0.0)) throw std::invalid_argument("pointwise_reference: hardswish with alpha <= 0");
      const double lipschitz = std::max({1.0, std::fabs(b), std::fabs(2.0 - b)});
      const double lo = -b / a, hi = (1.0 - b) / a;
      return {default_pointwise_attrs(op), [=](double x) { return std::isnan(x) ? x : x * clamp(a * x + b, 0.0, 1.0); },
              lipschitz, [=](double x, double y) { return u * x * (2.0 * a * x + std::fabs(b)) + u * y; },
              [=](double x, double margin) {
                if (std::fabs(x - lo) <= margin || std::fabs(x - hi) <= margin) return lipschitz;
                return x < lo ? 0.0 : x > hi ? 1.0 : std::fabs(2.0 * a * x + b);
              }};
    }
    case PointwiseOp::LeakyRelu: {  // a = alpha; the product rounded below 0, exact above
      const double lipschitz = std::max(1.0, std::fabs(a));
      return {{0.1f, 0.0f},
              [=](double x) { return x < 0.0 ? a * x : x; },
              lipschitz,
              [](double, double y) { return u * y; },
              [=](double x, double margin) {
                return std::fabs(x) <= margin ? lipschitz : x > 0.0 ? 1.0 : std::fabs(a);
              }};
    }
    case PointwiseOp::Gelu: {
      constexpr double kSqrt2Pi = 2.5066282746310002;  // sqrt(2 pi); M_PI is POSIX, not C++ (mingw lacks it)
      const auto phi = [=](double x) { return std::exp(-0.5 * x * x) / kSqrt2Pi; };
      const auto cdf = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
      return {default_pointwise_attrs(op), [=](double x) { return x * cdf(x); }, 1.129,
              [](double x, double y) { return u * (2.5 * x + y) + kTiny; },
              [=](double x, double) { return std::fabs(cdf(x) + x * phi(x)); }};
    }
  }
  throw std::logic_error("pointwise_reference: an op without a case");
}

inline PointwiseAttrs pointwise_sample(PointwiseOp op) {
  return pointwise_reference(op, default_pointwise_attrs(op)).sample;
}

}  // namespace infer::test
