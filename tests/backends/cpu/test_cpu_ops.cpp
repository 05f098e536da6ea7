// Each CPU op against a deliberately naive reference that accumulates in double, on fresh random
// inputs, plus a few hand-computed goldens.
//
// Tolerances are derived, not tuned: a float32 sum of K products computed in any order is within
// (K + 2) * u * sum|terms| of the exact value (u = 2^-24, Higham's bound for recursive or blocked
// summation, plus one rounding for the bias add and one for the stored result). The reference
// returns that bound for every output element.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <utility>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/workers.h"
#include "graph/fold.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

struct Reference {
  std::vector<double> value;
  std::vector<double> tolerance;
};

// conv2d, NCHW: out[n][k][y][x] = bias[k] + sum_{c,r,s} w[k][c][r][s] * in[n][g*C/g + c][y*sh - ph + r*dh][...]
Reference naive_conv(const Layer& l, const std::vector<float>& in, int n) {
  const Conv2dAttrs& a = l.conv();
  const int cg = l.in.c / a.groups, kg = a.out_channels / a.groups;
  const int terms = cg * a.kernel_h * a.kernel_w + (a.bias ? 1 : 0);
  Reference ref;
  for (int b = 0; b < n; ++b) {
    for (int k = 0; k < a.out_channels; ++k) {
      const int g = k / kg;
      for (int y = 0; y < l.out.h; ++y) {
        for (int x = 0; x < l.out.w; ++x) {
          double sum = a.bias ? l.params.bias[k] : 0.0, abs_sum = std::fabs(sum);
          for (int c = 0; c < cg; ++c) {
            for (int r = 0; r < a.kernel_h; ++r) {
              for (int s = 0; s < a.kernel_w; ++s) {
                const int iy = y * a.stride_h - a.pad_h + r * a.dilation_h;
                const int ix = x * a.stride_w - a.pad_w + s * a.dilation_w;
                if (iy < 0 || iy >= l.in.h || ix < 0 || ix >= l.in.w) continue;
                const double v = in[((static_cast<std::size_t>(b) * l.in.c + g * cg + c) * l.in.h + iy) * l.in.w + ix];
                const double w =
                    l.params.weight[((static_cast<std::size_t>(k) * cg + c) * a.kernel_h + r) * a.kernel_w + s];
                sum += v * w;
                abs_sum += std::fabs(v * w);
              }
            }
          }
          ref.value.push_back(sum);
          ref.tolerance.push_back((terms + 2) * kFloatEps * abs_sum);
        }
      }
    }
  }
  return ref;
}

Reference naive_linear(const Layer& l, const std::vector<float>& in, int n) {
  const int terms = l.in.c + 1;
  Reference ref;
  for (int b = 0; b < n; ++b) {
    for (int o = 0; o < l.out.c; ++o) {
      double sum = l.linear().bias ? l.params.bias[o] : 0.0, abs_sum = std::fabs(sum);
      for (int i = 0; i < l.in.c; ++i) {
        const double t = static_cast<double>(in[static_cast<std::size_t>(b) * l.in.c + i]) *
                         l.params.weight[static_cast<std::size_t>(o) * l.in.c + i];
        sum += t;
        abs_sum += std::fabs(t);
      }
      ref.value.push_back(sum);
      ref.tolerance.push_back((terms + 2) * kFloatEps * abs_sum);
    }
  }
  return ref;
}

// Pooling: the max is exact; an average of K values is within (K + 2) u sum|x| / K.
Reference naive_pool(const Layer& l, const std::vector<float>& in, int n) {
  const Pool2dAttrs& a = l.pool();
  const bool is_max = l.kind == LayerKind::MaxPool;
  Reference ref;
  for (int p = 0; p < n * l.in.c; ++p) {
    for (int y = 0; y < l.out.h; ++y) {
      for (int x = 0; x < l.out.w; ++x) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0.0, abs_sum = 0.0;
        int inside = 0;
        for (int r = 0; r < a.kernel_h; ++r) {
          for (int s = 0; s < a.kernel_w; ++s) {
            const int iy = y * a.stride_h - a.pad_h + r, ix = x * a.stride_w - a.pad_w + s;
            if (iy < 0 || iy >= l.in.h || ix < 0 || ix >= l.in.w) continue;
            const double v = in[(static_cast<std::size_t>(p) * l.in.h + iy) * l.in.w + ix];
            best = std::max(best, v);
            sum += v;
            abs_sum += std::fabs(v);
            ++inside;
          }
        }
        // Counting padding, the window is cut where the padded input ends (a ceil-mode window
        // can reach past it), as PyTorch's avg_pool2d does.
        const int y0 = y * a.stride_h - a.pad_h, x0 = x * a.stride_w - a.pad_w;
        const int padded_h = std::min(y0 + a.kernel_h, l.in.h + a.pad_h) - y0;
        const int padded_w = std::min(x0 + a.kernel_w, l.in.w + a.pad_w) - x0;
        const int divisor = a.count_include_pad ? padded_h * padded_w : inside;
        ref.value.push_back(is_max ? best : sum / divisor);
        ref.tolerance.push_back(is_max ? 0.0 : (inside + 2) * kFloatEps * abs_sum / divisor);
      }
    }
  }
  return ref;
}

// Both CPU kernel sets: every test below runs each against the same reference.
constexpr CpuKernels kKernelSets[] = {CpuKernels::Onednn, CpuKernels::Plain};
std::string kernel_set_name(CpuKernels k) { return k == CpuKernels::Onednn ? "onednn" : "plain"; }

std::vector<float> run_cpu(const Network& net, const std::vector<float>& input, int n, CpuOptions options = {}) {
  auto backend = make_cpu_backend(net, n, options);
  std::vector<float> out(static_cast<std::size_t>(n) * net.output_dims().size(),
                         std::numeric_limits<float>::quiet_NaN());  // poisoned: every element must be written
  backend->forward(input.data(), n, out.data());
  return out;
}

struct ConvCase {
  Dims in;
  int out_channels, kernel, stride, pad, dilation, groups;
  bool bias;
};

// GoogleTest names a parameter it cannot print by its bytes, padding included, so the names CTest
// registers changed from one build to the next; these print the case.
void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << to_string(c.in) << " to " << c.out_channels << " k" << c.kernel << " s" << c.stride << " p" << c.pad << " d"
      << c.dilation << " g" << c.groups << (c.bias ? " bias" : "");
}

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesNaiveReference) {
  const ConvCase& c = GetParam();
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(
      rng, c.in, {conv_layer("conv", c.out_channels, c.kernel, c.stride, c.pad, c.dilation, c.groups, c.bias)});
  // 37 samples: whole chunks and a shorter one, for both kernel sets (oneDNN: two chunks of 16 and
  // one of 5; plain: five chunks of 8 spread over the worker threads).
  for (int n : {1, 3, 37}) {
    const std::vector<float> input = rng.vector(n * c.in.size());
    const Reference ref = naive_conv(net.layers()[0], input, n);
    for (CpuKernels kernels : kKernelSets) {
      expect_close(run_cpu(net, input, n, CpuOptions{kernels}), ref.value, ref.tolerance,
                   kernel_set_name(kernels) + " conv n=" + std::to_string(n));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTest,
    ::testing::Values(ConvCase{{1, 28, 28}, 8, 3, 1, 1, 1, 1, true},       // the shipped model's first layer
                      ConvCase{{5, 11, 9}, 7, 3, 2, 1, 1, 1, true},        // odd sizes, stride 2
                      ConvCase{{4, 13, 13}, 6, 5, 1, 2, 1, 1, false},      // 5x5, no bias
                      ConvCase{{3, 15, 12}, 4, 3, 1, 2, 2, 1, true},       // dilation 2
                      ConvCase{{6, 10, 10}, 9, 3, 2, 0, 1, 3, true},       // groups 3
                      ConvCase{{8, 7, 7}, 8, 3, 1, 1, 1, 8, true},         // depthwise
                      ConvCase{{16, 6, 5}, 12, 1, 1, 0, 1, 1, true},       // pointwise (no im2col)
                      ConvCase{{3, 9, 9}, 5, 1, 2, 0, 1, 1, true},         // 1x1 with stride
                      ConvCase{{20, 17, 31}, 33, 3, 1, 1, 1, 1, true},     // channels not in whole blocks of 16,
                                                                           // rows of 31 = 14 + 14 + 2 + 1 pixels
                      ConvCase{{32, 14, 14}, 64, 3, 1, 1, 1, 1, true},     // the shipped model's fourth layer
                      ConvCase{{16, 12, 23}, 16, 3, 2, 1, 1, 1, false}));  // stride 2, one output block

// Unequal kernel sides, strides, padding and dilation (issue 32), both kernel sets.
TEST(CpuOps, NonSquareConvolutionMatchesNaiveReference) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (bool bias : {true, false}) {
    const Network net = random_network(rng, {3, 14, 15}, {rect_conv("conv", 4, bias)});
    for (int n : {1, 3}) {
      const std::vector<float> input = rng.vector(n * net.input().dims.size());
      const Reference ref = naive_conv(net.layers()[0], input, n);
      for (CpuKernels kernels : kKernelSets) {
        expect_close(run_cpu(net, input, n, CpuOptions{kernels}), ref.value, ref.tolerance,
                     kernel_set_name(kernels) + " 3x5 conv n=" + std::to_string(n));
      }
    }
  }
}

TEST(CpuOps, LinearMatchesNaiveReference) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  // 13 and 100 outputs: not whole blocks of 16; 11 samples: a chunk of 8 and one of 3 for the plain
  // kernels. Both kernel sets.
  for (bool bias : {true, false}) {
    for (int outputs : {13, 100}) {
      const Network net = random_network(rng, {37, 1, 1}, {linear_layer("fc", outputs, bias)});
      for (int n : {1, 5, 11}) {
        const std::vector<float> input = rng.vector(n * 37);
        const Reference ref = naive_linear(net.layers()[0], input, n);
        for (CpuKernels kernels : kKernelSets) {
          expect_close(run_cpu(net, input, n, CpuOptions{kernels}), ref.value, ref.tolerance,
                       kernel_set_name(kernels) + (bias ? " linear" : " linear without bias") +
                           " n=" + std::to_string(n) + " outputs=" + std::to_string(outputs));
        }
      }
    }
  }
}

struct PoolCase {
  LayerKind kind;
  Dims in;
  int kernel, stride, pad;
  bool count_include_pad;
};

void PrintTo(const PoolCase& c, std::ostream* os) {
  *os << layer_kind_name(c.kind) << " " << to_string(c.in) << " k" << c.kernel << " s" << c.stride << " p" << c.pad
      << (c.count_include_pad ? "" : " excluding padding");
}

class PoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolTest, MatchesNaiveReference) {
  const PoolCase& c = GetParam();
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net =
      random_network(rng, c.in, {pool_layer("pool", c.kind, c.kernel, c.stride, c.pad, c.count_include_pad)});
  const int n = 2;
  const std::vector<float> input = rng.vector(n * c.in.size());
  const Reference ref = naive_pool(net.layers()[0], input, n);
  expect_close(run_cpu(net, input, n), ref.value, ref.tolerance, layer_kind_name(c.kind));
}

INSTANTIATE_TEST_SUITE_P(Shapes, PoolTest,
                         ::testing::Values(PoolCase{LayerKind::MaxPool, {3, 28, 28}, 2, 2, 0, true},
                                           PoolCase{LayerKind::MaxPool, {2, 11, 9}, 3, 2, 1, true},
                                           PoolCase{LayerKind::AvgPool, {3, 10, 10}, 2, 2, 0, true},
                                           PoolCase{LayerKind::AvgPool, {2, 11, 9}, 3, 2, 1, true},
                                           PoolCase{LayerKind::AvgPool, {2, 11, 9}, 3, 2, 1, false}));

// Nothing square (issue 32): a 3x2 kernel, 2x1 stride and 1x0 padding, max and average (padding
// counted and not), ceil mode off and on, on an input whose sides differ.
TEST(CpuOps, NonSquarePoolingMatchesNaiveReference) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (LayerKind kind : {LayerKind::MaxPool, LayerKind::AvgPool}) {
    for (bool count_include_pad : {true, false}) {
      if (kind == LayerKind::MaxPool && !count_include_pad) continue;
      for (bool ceil : {false, true}) {
        const Layer pool = rect_pool("pool", kind, count_include_pad);
        const Network net = random_network(rng, {3, 10, 7}, {ceil ? ceil_mode(pool) : pool});
        const int n = 2;
        const std::vector<float> input = rng.vector(n * net.input().dims.size());
        const Reference ref = naive_pool(net.layers()[0], input, n);
        for (CpuKernels kernels : kKernelSets) {
          expect_close(run_cpu(net, input, n, CpuOptions{kernels}), ref.value, ref.tolerance,
                       kernel_set_name(kernels) + " " + layer_kind_name(kind) +
                           (count_include_pad ? "" : " excluding padding") + (ceil ? " ceil mode" : ""));
        }
      }
    }
  }
}

TEST(CpuOps, MaxPoolPaddingNeverWins) {
  // All inputs negative: with padding, a max over a window that hangs off the edge must still be
  // an input value, never the implicit zero.
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(rng, {1, 5, 5}, {pool_layer("pool", LayerKind::MaxPool, 3, 2, 1)});
  const std::vector<float> input = rng.vector(25, -2.0f, -1.0f);
  for (float v : run_cpu(net, input, 1)) EXPECT_LT(v, -0.99f);
}

TEST(CpuOps, MaxPoolPropagatesNaN) {
  // As PyTorch and cuDNN with CUDNN_PROPAGATE_NAN: a NaN in a window makes that output NaN, and
  // only that output (std::max alone would drop it, since NaN compares false).
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(rng, {1, 4, 4}, {pool_layer("pool", LayerKind::MaxPool, 2, 2)});
  std::vector<float> input = rng.vector(16);
  input[5] = std::numeric_limits<float>::quiet_NaN();  // row 1, column 1: the first window
  const std::vector<float> out = run_cpu(net, input, 1);
  EXPECT_TRUE(std::isnan(out[0]));
  for (int i = 1; i < 4; ++i) EXPECT_TRUE(std::isfinite(out[i])) << i;
}

TEST(CpuOps, BatchNormMatchesDefinition) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(rng, {6, 5, 7}, {batchnorm_layer("bn", 1e-3)});
  const Layer& l = net.layers()[0];
  const int n = 3;
  const std::vector<float> input = rng.vector(n * l.in.size(), -3.0f, 3.0f);
  Reference ref;
  for (int b = 0; b < n; ++b) {
    for (int c = 0; c < 6; ++c) {
      const double scale = l.params.weight[c] / std::sqrt(static_cast<double>(l.params.running_var[c]) + 1e-3);
      for (int j = 0; j < 35; ++j) {
        const double x = input[(static_cast<std::size_t>(b) * 6 + c) * 35 + j];
        const double y = (x - l.params.running_mean[c]) * scale + l.params.bias[c];
        ref.value.push_back(y);
        // Folded parameters (two roundings each), one multiply-add (two roundings): six u-sized
        // relative errors of the terms x*scale, mean*scale and beta.
        ref.tolerance.push_back(
            6 * kFloatEps *
            (std::fabs(x * scale) + std::fabs(l.params.running_mean[c] * scale) + std::fabs(l.params.bias[c])));
      }
    }
  }
  expect_close(run_cpu(net, input, n), ref.value, ref.tolerance, "batchnorm");
}

TEST(CpuOps, ReluFlattenGlobalAvgPoolSoftmax) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Dims in{4, 3, 5};
  const int n = 2;
  const std::vector<float> input = rng.vector(n * in.size(), -4.0f, 4.0f);

  const Network relu = random_network(rng, in, {plain_layer("relu", LayerKind::Relu)});
  const std::vector<float> r = run_cpu(relu, input, n);
  for (std::size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i], std::max(input[i], 0.0f)) << i;

  const Network flat = random_network(rng, in, {plain_layer("flatten", LayerKind::Flatten)});
  EXPECT_EQ(flat.output_dims(), (Dims{60, 1, 1}));
  EXPECT_EQ(run_cpu(flat, input, n), input);

  const Network gap = random_network(rng, in, {plain_layer("gap", LayerKind::GlobalAvgPool)});
  const std::vector<float> g = run_cpu(gap, input, n);
  for (int p = 0; p < n * in.c; ++p) {
    double sum = 0.0;
    for (int j = 0; j < 15; ++j) sum += input[static_cast<std::size_t>(p) * 15 + j];
    EXPECT_NEAR(g[p], sum / 15, 2 * kFloatEps * 4.0) << p;  // accumulated in double, one rounding
  }

  // Softmax over channels at each of the 15 positions; exp's error is a few ulp (glibc: < 1 ulp),
  // the sum adds C roundings and the division one: 2 * (C + 3) u relative.
  const Network sm = random_network(rng, in, {plain_layer("softmax", LayerKind::Softmax)});
  const std::vector<float> s = run_cpu(sm, input, n);
  for (int b = 0; b < n; ++b) {
    for (int j = 0; j < 15; ++j) {
      double denom = 0.0;
      for (int c = 0; c < in.c; ++c) denom += std::exp(static_cast<double>(input[(b * in.c + c) * 15 + j]));
      for (int c = 0; c < in.c; ++c) {
        const std::size_t i = static_cast<std::size_t>(b * in.c + c) * 15 + j;
        const double want = std::exp(static_cast<double>(input[i])) / denom;
        EXPECT_NEAR(s[i], want, 2 * (in.c + 3) * kFloatEps * want) << i;
      }
    }
  }
}

TEST(CpuOps, HandComputedGoldens) {
  // 2x2 average pool of a constant plane is the constant; 2x2 max pool of 1..16 picks 6, 8, 14, 16.
  Random rng;
  const Network avg = random_network(rng, {1, 4, 4}, {pool_layer("p", LayerKind::AvgPool, 2, 2)});
  EXPECT_EQ(run_cpu(avg, std::vector<float>(16, 0.75f), 1), std::vector<float>(4, 0.75f));
  std::vector<float> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[i] = static_cast<float>(i + 1);
  const Network mx = random_network(rng, {1, 4, 4}, {pool_layer("p", LayerKind::MaxPool, 2, 2)});
  EXPECT_EQ(run_cpu(mx, ramp, 1), (std::vector<float>{6, 8, 14, 16}));

  // A 3x3 all-ones kernel with padding 1 over a 3x3 plane of ones counts the in-bounds neighbours.
  Network ones = random_network(rng, {1, 3, 3}, {conv_layer("c", 1, 3, 1, 1, 1, 1, false)});
  Layer conv = ones.layers()[0];
  conv.params.weight.assign(9, 1.0f);
  const Network counted("ones", ones.input(), {conv});
  EXPECT_EQ(run_cpu(counted, std::vector<float>(9, 1.0f), 1), (std::vector<float>{4, 6, 4, 6, 9, 6, 4, 6, 4}));

  // Softmax of (0, ln 3) is (1/4, 3/4).
  const Network sm = random_network(rng, {2, 1, 1}, {plain_layer("s", LayerKind::Softmax)});
  const std::vector<float> p = run_cpu(sm, {0.0f, std::log(3.0f)}, 1);
  EXPECT_NEAR(p[0], 0.25, 1e-7);
  EXPECT_NEAR(p[1], 0.75, 1e-7);
}

// Channel shuffle by its definition (PyTorch: x.view(n, g, k, h, w).transpose(1, 2).reshape(n, c, h, w)):
// output channel j * g + i is input channel i * k + j. A golden by hand, then random data on both
// kernel sets for every factorisation of 12 channels, against planes picked here from the input.
// For 1 < g < C the permutation is not its own inverse (the shuffle by k groups), checked, so a
// kernel that swaps g and k, or moves channels the other way, fails.
TEST(CpuOps, ChannelShuffleMovesEachPlaneWhereItsDefinitionSays) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (CpuKernels kernels : {CpuKernels::Onednn, CpuKernels::Plain}) {
    const Network by2 =
        random_network(rng, {6, 1, 1}, {make_layer("s", LayerKind::ChannelShuffle, ChannelShuffleAttrs{2})});
    EXPECT_EQ(run_cpu(by2, {0, 1, 2, 3, 4, 5}, 1, CpuOptions{kernels}), (std::vector<float>{0, 3, 1, 4, 2, 5}));
    const Network by3 =
        random_network(rng, {6, 1, 1}, {make_layer("s", LayerKind::ChannelShuffle, ChannelShuffleAttrs{3})});
    EXPECT_EQ(run_cpu(by3, {0, 1, 2, 3, 4, 5}, 1, CpuOptions{kernels}), (std::vector<float>{0, 2, 4, 1, 3, 5}));
  }
  const Dims d{12, 3, 5};
  const int n = 2;
  const std::size_t plane = static_cast<std::size_t>(d.h) * d.w;
  const std::vector<float> input = rng.vector(static_cast<std::size_t>(n) * d.size());
  auto shuffled = [&](int g) {  // [b][c] = input[b][(c % g) * k + c / g]: c = j g + i
    const int k = d.c / g;
    std::vector<float> out(input.size());
    for (int b = 0; b < n; ++b) {
      for (int c = 0; c < d.c; ++c) {
        const std::size_t from =
            static_cast<std::size_t>(b) * d.size() + static_cast<std::size_t>((c % g) * k + c / g) * plane;
        std::copy_n(input.begin() + static_cast<std::ptrdiff_t>(from), plane,
                    out.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(b) * d.size() +
                                                              static_cast<std::size_t>(c) * plane));
      }
    }
    return out;
  };
  for (int g : {1, 2, 3, 4, 6, 12}) {
    SCOPED_TRACE("groups " + std::to_string(g));
    if (g == 1 || g == d.c) {
      EXPECT_EQ(shuffled(g), input) << "the identity";
    } else {
      EXPECT_NE(shuffled(g), shuffled(d.c / g)) << "the inverse permutation would pass";
    }
    const Network net = random_network(rng, d, {make_layer("s", LayerKind::ChannelShuffle, ChannelShuffleAttrs{g})});
    for (CpuKernels kernels : {CpuKernels::Onednn, CpuKernels::Plain}) {
      EXPECT_EQ(run_cpu(net, input, n, CpuOptions{kernels}), shuffled(g))
          << (kernels == CpuKernels::Onednn ? "onednn" : "plain");
    }
  }
}

// Channel slice by its definition (PyTorch: x[:, begin:end]): output channel c is input channel
// begin + c. A golden by hand, then random data on both kernel sets for slices at the start, in the
// middle, at the end and of the whole input, against planes picked here from the input; a slice
// that ignored begin, or was off by one channel, would give other planes (checked: the test can
// fail). Last, after a convolution of 16 channels (oneDNN's blocked layout), against the same
// backend's own convolution output, sliced here.
TEST(CpuOps, ChannelSliceCopiesTheChannelsFromBeginToEnd) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (CpuKernels kernels : kKernelSets) {
    const Network net =
        random_network(rng, {5, 1, 1}, {make_layer("s", LayerKind::ChannelSlice, ChannelSliceAttrs{1, 4})});
    EXPECT_EQ(run_cpu(net, {0, 1, 2, 3, 4}, 1, CpuOptions{kernels}), (std::vector<float>{1, 2, 3}))
        << kernel_set_name(kernels);
  }
  const Dims d{7, 3, 5};
  const int n = 2;
  const std::size_t plane = static_cast<std::size_t>(d.h) * d.w;
  const std::vector<float> input = rng.vector(static_cast<std::size_t>(n) * d.size());
  auto sliced = [&](int begin, int end) {  // [b][c] = input[b][begin + c]
    std::vector<float> out;
    for (int b = 0; b < n; ++b) {
      const auto first = input.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(b) * d.size() +
                                                                     static_cast<std::size_t>(begin) * plane);
      out.insert(out.end(), first, first + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(end - begin) * plane));
    }
    return out;
  };
  for (const auto& [begin, end] : std::vector<std::pair<int, int>>{{0, 3}, {2, 5}, {4, 7}, {6, 7}, {0, 7}}) {
    SCOPED_TRACE("[" + std::to_string(begin) + ", " + std::to_string(end) + ")");
    if (begin > 0) {
      EXPECT_NE(sliced(begin, end), sliced(0, end - begin)) << "a slice that ignores begin would pass";
    }
    if (end < d.c) {
      EXPECT_NE(sliced(begin, end), sliced(begin + 1, end + 1)) << "one channel off would pass";
    }
    const Network net =
        random_network(rng, d, {make_layer("s", LayerKind::ChannelSlice, ChannelSliceAttrs{begin, end})});
    ASSERT_EQ(net.output_dims(), (Dims{end - begin, d.h, d.w}));
    for (CpuKernels kernels : kKernelSets) {
      EXPECT_EQ(run_cpu(net, input, n, CpuOptions{kernels}), sliced(begin, end)) << kernel_set_name(kernels);
    }
  }
  const Network after_conv = random_network(
      rng, {3, 5, 6},
      {conv_layer("c", 16, 3, 1, 1), make_layer("s", LayerKind::ChannelSlice, ChannelSliceAttrs{3, 11})});
  const std::vector<float> x = rng.vector(static_cast<std::size_t>(n) * after_conv.input().dims.size());
  const std::size_t conv_plane = 5 * 6;
  for (CpuKernels kernels : kKernelSets) {
    auto cpu = make_cpu_backend(after_conv, n, CpuOptions{kernels});
    std::vector<float> conv(static_cast<std::size_t>(n) * 16 * conv_plane, std::numeric_limits<float>::quiet_NaN());
    std::vector<float> got(static_cast<std::size_t>(n) * 8 * conv_plane, std::numeric_limits<float>::quiet_NaN());
    cpu->forward(x.data(), n, conv.data(), 1);
    cpu->forward(x.data(), n, got.data(), 2);
    std::vector<float> want;
    for (int b = 0; b < n; ++b) {
      const auto first =
          conv.begin() + static_cast<std::ptrdiff_t>((static_cast<std::size_t>(b) * 16 + 3) * conv_plane);
      want.insert(want.end(), first, first + static_cast<std::ptrdiff_t>(8 * conv_plane));
    }
    EXPECT_EQ(got, want) << kernel_set_name(kernels) << ", after a convolution";
  }
}

// Bilinear resize on values where every weight and sum is exact in float: [[0, 1], [2, 3]] (value
// 2 row + column) to 4x4 with half-pixel centres samples rows and columns 0, 1/4, 3/4, 1 (the
// first clamped at 0, the last past the end); align_corners to 3x3 samples 0, 1/2, 1; to 1x1 the
// middle (1/2, 1/2) or, with align_corners, the first.
TEST(CpuOps, BilinearResizeSamplesWhereItsDefinitionSays) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const std::vector<float> x{0, 1, 2, 3};
  auto grid = [](std::vector<float> at) {  // value 2 r + c at every (r, c) of at x at
    std::vector<float> out;
    for (float r : at)
      for (float c : at) out.push_back(2 * r + c);
    return out;
  };
  struct Case {
    int out;
    bool align;
    std::vector<float> want;
  };
  for (const Case& c : {Case{4, false, grid({0, 0.25f, 0.75f, 1})}, Case{3, true, grid({0, 0.5f, 1})},
                        Case{1, false, grid({0.5f})}, Case{1, true, grid({0})}}) {
    const Network net =
        random_network(rng, {1, 2, 2}, {make_layer("r", LayerKind::Resize, ResizeAttrs{c.out, c.out, c.align})});
    for (CpuKernels kernels : kKernelSets) {
      EXPECT_EQ(run_cpu(net, x, 1, CpuOptions{kernels}), c.want)
          << kernel_set_name(kernels) << ", to " << c.out << "x" << c.out << (c.align ? ", align_corners" : "");
    }
  }
}

// --- fused chains as the backends run them (oneDNN: batch-norm folded, ReLU as a post-op) ---------
// Each reference below is the naive double computation of the same chain; where the backend feeds
// a float result into the next layer, the error bound of that input is carried into the next bound.

TEST(CpuOps, FoldedBatchNormIsTheBatchNormOfTheConvolution) {
  // fold_batchnorm's parameters, each computed in double and rounded once: within u * |exact|.
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (bool bias : {true, false}) {
    const Network net =
        random_network(rng, {3, 5, 5}, {conv_layer("c", 7, 3, 1, 1, 1, 1, bias), batchnorm_layer("bn", 1e-3)});
    const Layer& conv = net.layers()[0];
    const Layer& bn = net.layers()[1];
    ASSERT_TRUE(batchnorm_foldable(net.layers(), 1));
    EXPECT_FALSE(batchnorm_foldable(net.layers(), 0));
    const FoldedParams f = fold_batchnorm(conv, bn);
    ASSERT_EQ(f.weight.size(), conv.params.weight.size());
    ASSERT_EQ(f.bias.size(), 7u);
    for (std::size_t k = 0; k < 7; ++k) {
      const double scale = bn.params.weight[k] / std::sqrt(static_cast<double>(bn.params.running_var[k]) + 1e-3);
      for (std::size_t j = 0; j < 27; ++j) {
        const double want = conv.params.weight[k * 27 + j] * scale;
        EXPECT_NEAR(f.weight[k * 27 + j], want, kFloatEps * std::fabs(want)) << k << "," << j;
      }
      const double b = bias ? conv.params.bias[k] : 0.0;
      const double want = (b - bn.params.running_mean[k]) * scale + bn.params.bias[k];
      EXPECT_NEAR(f.bias[k], want, kFloatEps * std::fabs(want)) << k;
    }
  }
}

// The chain's first step as the fused step runs it: conv with batch-norm folded, then ReLU.
// Reference: the naive convolution with the folded parameters (checked above), then ReLU, which
// does not increase the distance between two values.
Reference folded_conv_relu(const Network& net, const std::vector<float>& input, int n) {
  Layer folded = net.layers()[0];
  const FoldedParams f = fold_batchnorm(folded, net.layers()[1]);
  folded.params.weight = f.weight;
  folded.params.bias = f.bias;
  std::get<Conv2dAttrs>(folded.attrs).bias = true;
  Reference ref = naive_conv(folded, input, n);
  for (double& v : ref.value) v = std::max(v, 0.0);
  return ref;
}

// How far an input known within `in.tolerance` can move a convolution's output: sum |w| *
// (in_error + u |x|) (the second term covers rounding the double reference to the float input
// the next reference is computed on).
std::vector<double> carried_error(const Layer& conv, const Reference& in, int n) {
  Layer abs_conv = conv;
  for (float& w : abs_conv.params.weight) w = std::fabs(w);
  std::get<Conv2dAttrs>(abs_conv.attrs).bias = false;
  std::vector<float> err(in.value.size());
  for (std::size_t i = 0; i < err.size(); ++i) {
    err[i] = static_cast<float>((in.tolerance[i] + kFloatEps * std::fabs(in.value[i])) * (1 + 1e-6));  // rounded up
  }
  std::vector<double> spread = naive_conv(abs_conv, err, n).value;
  for (double& v : spread) v *= 1 + 1e-6;
  return spread;
}

// The next convolution applied to a float input known only within `in.tolerance` per element:
// the naive result on that input, with bound (its own) + carried_error.
Reference next_conv(const Layer& conv, const Reference& in, int n) {
  std::vector<float> x(in.value.begin(), in.value.end());
  Reference ref = naive_conv(conv, x, n);
  const std::vector<double> spread = carried_error(conv, in, n);
  for (std::size_t i = 0; i < ref.value.size(); ++i) ref.tolerance[i] += spread[i];
  return ref;
}

// Max pooling of values known within a tolerance: the max of the references, within the largest
// tolerance in the window.
Reference max_pool(const Layer& pool, const Reference& in, int n) {
  const Pool2dAttrs& a = pool.pool();
  Reference ref;
  for (int p = 0; p < n * pool.in.c; ++p) {
    for (int oy = 0; oy < pool.out.h; ++oy) {
      for (int ox = 0; ox < pool.out.w; ++ox) {
        double best = -std::numeric_limits<double>::infinity(), tol = 0.0;
        for (int y = std::max(0, oy * a.stride_h - a.pad_h);
             y < std::min(pool.in.h, oy * a.stride_h - a.pad_h + a.kernel_h); ++y) {
          for (int x = std::max(0, ox * a.stride_w - a.pad_w);
               x < std::min(pool.in.w, ox * a.stride_w - a.pad_w + a.kernel_w); ++x) {
            const std::size_t i = (static_cast<std::size_t>(p) * pool.in.h + y) * pool.in.w + x;
            best = std::max(best, in.value[i]);
            tol = std::max(tol, in.tolerance[i]);
          }
        }
        ref.value.push_back(best);
        ref.tolerance.push_back(tol);
      }
    }
  }
  return ref;
}

TEST(CpuOps, FusedChainConvBatchNormReluPoolConv) {
  // conv+bn+relu (folded, fused) -> max pool 3/2 pad 1 -> conv stride 2 -> relu: channels 20 and
  // 33 (not whole blocks of 16), the network input with 3 channels, and 1, 3 and 37 samples (two
  // whole chunks and a shorter one).
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net =
      random_network(rng, {3, 19, 21},
                     {conv_layer("c1", 20, 3, 1, 1), batchnorm_layer("bn1"), plain_layer("r1", LayerKind::Relu),
                      pool_layer("p1", LayerKind::MaxPool, 3, 2, 1), conv_layer("c2", 33, 3, 2, 1),
                      plain_layer("r2", LayerKind::Relu), plain_layer("flat", LayerKind::Flatten)});
  for (int n : {1, 3, 37}) {
    const std::vector<float> input = rng.vector(n * net.input().dims.size());
    Reference ref = next_conv(net.layers()[4], max_pool(net.layers()[3], folded_conv_relu(net, input, n), n), n);
    for (double& v : ref.value) v = std::max(v, 0.0);
    for (CpuKernels kernels : kKernelSets) {
      expect_close(run_cpu(net, input, n, CpuOptions{kernels}), ref.value, ref.tolerance,
                   kernel_set_name(kernels) + " chain n=" + std::to_string(n));
    }
  }
}

TEST(CpuOps, StandAloneBatchNormAndRelu) {
  // A batch-norm after a ReLU cannot be folded: it runs on its own, and a ReLU after a max pool
  // too. conv -> relu -> bn -> pool -> relu.
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net =
      random_network(rng, {2, 8, 8},
                     {conv_layer("c", 18, 3, 1, 1), plain_layer("r1", LayerKind::Relu), batchnorm_layer("bn"),
                      pool_layer("p", LayerKind::MaxPool, 2, 2), plain_layer("r2", LayerKind::Relu)});
  const int n = 3;
  const std::vector<float> input = rng.vector(n * net.input().dims.size());
  Reference ref = naive_conv(net.layers()[0], input, n);
  const Layer& bn = net.layers()[2];
  const BatchNormAffine affine = batchnorm_affine(bn);
  const std::size_t plane = 64;
  for (std::size_t i = 0; i < ref.value.size(); ++i) {
    const std::size_t c = (i / plane) % 18;
    const double x = std::max(ref.value[i], 0.0);
    // Either form: the affine one (the plain kernel: scale and shift rounded once, checked by the
    // batch-norm test, then x * scale + shift: u |x scale| + 2 u |y| + u |shift|), or oneDNN's
    // (x - mean) * s + beta with s = gamma / sqrt(var + eps) computed in float (the subtraction
    // u (|x| + |mean|) |s|; s within 4 u: the add, the square root, the division and the product;
    // the final add u |y|). The bound is the sum of both, plus the input's error times |scale|.
    const double y = x * affine.scale[c] + affine.shift[c];
    const double s = std::fabs(affine.scale[c]), mean = std::fabs(bn.params.running_mean[c]);
    ref.tolerance[i] = ref.tolerance[i] * s + kFloatEps * (std::fabs(x) * s + 2 * std::fabs(y)) +
                       kFloatEps * std::fabs(affine.shift[c]) + kFloatEps * (std::fabs(x) + mean) * s +
                       4 * kFloatEps * std::fabs(x - bn.params.running_mean[c]) * s + kFloatEps * std::fabs(y);
    ref.value[i] = y;
  }
  ref = max_pool(net.layers()[3], ref, n);
  for (double& v : ref.value) v = std::max(v, 0.0);
  for (CpuKernels kernels : kKernelSets) {
    expect_close(run_cpu(net, input, n, CpuOptions{kernels}), ref.value, ref.tolerance,
                 kernel_set_name(kernels) + " stand-alone bn and relu");
  }
}

TEST(CpuOps, NaNPropagatesThroughConvReluAndMaxPool) {
  // A NaN pixel reaches, through a 1x1 convolution, ReLU and a 2x2 max pool, exactly the one
  // pooled output over it, in every channel, with either kernel set.
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(
      rng, {2, 4, 4},
      {conv_layer("c", 17, 1), plain_layer("r", LayerKind::Relu), pool_layer("p", LayerKind::MaxPool, 2, 2)});
  std::vector<float> input = rng.vector(32);
  input[16 + 4 * 2 + 3] = std::numeric_limits<float>::quiet_NaN();  // channel 1, row 2, column 3: window (1, 1)
  for (CpuKernels kernels : kKernelSets) {
    const std::vector<float> out = run_cpu(net, input, 1, CpuOptions{kernels});
    for (int k = 0; k < 17; ++k) {
      for (int j = 0; j < 4; ++j) {
        const float v = out[static_cast<std::size_t>(k) * 4 + j];
        if (j == 3) {
          EXPECT_TRUE(std::isnan(v)) << kernel_set_name(kernels) << " channel " << k;
        } else {
          EXPECT_TRUE(std::isfinite(v)) << kernel_set_name(kernels) << " channel " << k << " output " << j;
        }
      }
    }
  }
}

// oneDNN's ReLU turns NaN into 0. A NaN made inside the network (inf - inf after an overflow) next
// to an infinity that reaches the output makes the backend run the chunk again on the plain
// kernels (onednn_backend.cpp), so the NaN is kept: input [2]; c1 (weights 3e38, -3e38) gives
// [inf, -inf]; c2 (weights 1, 1) their sum, NaN; the concat [NaN, inf, -inf]; the ReLU
// [NaN, inf, 0], as PyTorch gives.
TEST(CpuOps, ANaNMadeInsideTheNetworkNextToAnInfinityIsKept) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  std::vector<Layer> layers =
      random_network(rng, {1, 1, 1},
                     {conv_layer("c1", 2, 1), conv_layer("c2", 1, 1),
                      reading(make_layer("cat", LayerKind::Concat), {"c2", "c1"}), plain_layer("r", LayerKind::Relu)})
          .layers();
  layers[0].params.weight = {3e38f, -3e38f};
  layers[0].params.bias = {0.0f, 0.0f};
  layers[1].params.weight = {1.0f, 1.0f};
  layers[1].params.bias = {0.0f};
  InputSpec spec{{1, 1, 1}, {0.0f}, {1.0f}, {}, {}};
  const Network net("overflow", spec, std::move(layers));
  const std::vector<float> input = {2.0f};
  for (CpuKernels kernels : kKernelSets) {
    const std::vector<float> out = run_cpu(net, input, 1, CpuOptions{kernels});
    EXPECT_TRUE(std::isnan(out[0])) << kernel_set_name(kernels) << ": " << out[0];
    EXPECT_EQ(out[1], std::numeric_limits<float>::infinity()) << kernel_set_name(kernels);
    EXPECT_EQ(out[2], 0.0f) << kernel_set_name(kernels);
  }
}

TEST(CpuOps, APassThatStopsInsideAFusedStepSeesTheUnfoldedWeights) {
  // forward() up to the convolution alone (before its batch-norm) must not see the folded
  // weights, also after a whole pass built the folded ones.
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(
      rng, {1, 6, 6}, {conv_layer("c", 16, 3, 1, 1), batchnorm_layer("bn"), plain_layer("r", LayerKind::Relu)});
  const std::vector<float> input = rng.vector(36);
  for (CpuKernels kernels : kKernelSets) {
    auto backend = make_cpu_backend(net, 1, CpuOptions{kernels});
    std::vector<float> whole(16 * 36);
    backend->forward(input.data(), 1, whole.data());
    std::vector<float> conv_out(16 * 36, std::numeric_limits<float>::quiet_NaN());
    backend->forward(input.data(), 1, conv_out.data(), 1);
    const Reference ref = naive_conv(net.layers()[0], input, 1);
    expect_close(conv_out, ref.value, ref.tolerance, kernel_set_name(kernels) + " conv output before its batch-norm");
  }
}

TEST(CpuWorkers, EveryWorkerRunsOnceAndErrorsReachTheCaller) {
  cpu::Workers workers(3);
  for (int round = 0; round < 3; ++round) {  // reused, as the backend reuses it per forward()
    std::vector<int> calls(3, 0);
    workers.run([&](int w) { ++calls[static_cast<std::size_t>(w)]; });
    EXPECT_EQ(calls, (std::vector<int>{1, 1, 1}));
  }
  EXPECT_THROW(workers.run([](int w) {
    if (w == 2) throw std::runtime_error("worker 2 failed");
  }),
               std::runtime_error);
  std::vector<int> after(3, 0);
  workers.run([&](int w) { after[static_cast<std::size_t>(w)] = 1; });  // still usable after an error
  EXPECT_EQ(after, (std::vector<int>{1, 1, 1}));
}

// Device timing is the GPU's (Backend::last_timing): the CPU has none, before or after a call.
TEST(CpuOps, LastTimingIsNone) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(rng, {5, 1, 1}, {linear_layer("fc", 4)});
  const std::vector<float> input = rng.vector(5);
  auto backend = make_cpu_backend(net, 1);
  EXPECT_FALSE(backend->last_timing().has_value());
  std::vector<float> out(4);
  backend->forward(input.data(), 1, out.data());
  EXPECT_FALSE(backend->last_timing().has_value());
  int best = -1;
  float score = 0.0f;
  backend->top_k(input.data(), 1, 1, &best, &score);
  EXPECT_EQ(best, static_cast<int>(std::max_element(out.begin(), out.end()) - out.begin()));
  EXPECT_FALSE(backend->last_timing().has_value());
}

TEST(CpuOps, IntermediateLayerCountReturnsThatLayersOutput) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(rng, {5, 1, 1}, {linear_layer("fc", 4), plain_layer("s", LayerKind::Softmax)});
  const std::vector<float> input = rng.vector(5);
  auto backend = make_cpu_backend(net, 1);
  std::vector<float> logits(4), probs(4);
  backend->forward(input.data(), 1, logits.data(), 1);
  backend->forward(input.data(), 1, probs.data());
  const Reference ref = naive_linear(net.layers()[0], input, 1);
  expect_close(logits, ref.value, ref.tolerance, "logits");
  EXPECT_NEAR(probs[0] + probs[1] + probs[2] + probs[3], 1.0f, 1e-6);
  EXPECT_THROW(backend->forward(input.data(), 2, probs.data()), std::invalid_argument);
}

}  // namespace
}  // namespace infer::test
