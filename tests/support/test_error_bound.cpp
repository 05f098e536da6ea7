// tests/support/error_bound.h, the tolerance of the reduced-precision GPU tests, checked on the CPU: the
// float32 CPU backend must stay within the bound computed for float32 rounding (u = 2^-24) of the
// deliberately naive double-precision forward pass of reference.h, on fresh random networks covering every layer
// kind; and the bound must be tight enough to matter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/cpu_backend.h"
#include "backends/cudnn/half.h"
#include "tests/support/error_bound.h"
#include "tests/support/reference.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

// Scaled as trained networks are (weights / sqrt(K)), so that activations keep their size.
Network scaled(Random& rng, Dims input, std::vector<Layer> layers) {
  std::vector<Layer> ls = random_network(rng, input, std::move(layers)).layers();
  for (Layer& l : ls) {
    if (l.kind != LayerKind::Conv2d && l.kind != LayerKind::Linear) continue;
    const float s = 1.0f / std::sqrt(static_cast<float>(l.params.weight.size() / static_cast<std::size_t>(l.out.c)));
    for (float& w : l.params.weight) w *= s;
  }
  InputSpec spec{input,
                 std::vector<float>(static_cast<std::size_t>(input.c), 0.0f),
                 std::vector<float>(static_cast<std::size_t>(input.c), 1.0f),
                 {},
                 {}};
  return Network("scaled", spec, std::move(ls));
}

TEST(ErrorBound, Float32CpuStaysWithinTheFloat32BoundOfADoubleReference) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const std::vector<Network> nets = {
      scaled(
          rng, {1, 12, 12},
          {conv_layer("conv1", 8, 3, 1, 1), batchnorm_layer("bn1"), plain_layer("relu1", LayerKind::Relu),
           conv_layer("conv2", 8, 3, 1, 1, 1, 1, false), batchnorm_layer("bn2"), plain_layer("relu2", LayerKind::Relu),
           pool_layer("pool1", LayerKind::MaxPool, 2, 2), conv_layer("conv3", 16, 3, 1, 1, 1, 2),
           pool_layer("avg", LayerKind::AvgPool, 3, 1, 1, false), plain_layer("flatten", LayerKind::Flatten),
           linear_layer("fc1", 12), plain_layer("relu3", LayerKind::Relu), linear_layer("fc2", 10),
           plain_layer("softmax", LayerKind::Softmax)}),
      scaled(rng, {3, 9, 11},
             {rect_conv("rect", 6), plain_layer("gap", LayerKind::GlobalAvgPool),
              plain_layer("flat", LayerKind::Flatten), linear_layer("fc", 7, false), batchnorm_layer("bn", 1e-3)}),
  };
  for (const Network& net : nets) {
    const int n = 3;
    auto cpu = make_cpu_backend(net, n);
    const std::vector<float> input = rng.vector(static_cast<std::size_t>(n) * net.input().dims.size());
    const std::vector<ReferenceTensor> reference =
        reference_forward(net, input, n, net.layers().size(), cpu_winograd());
    for (std::size_t count = 1; count <= net.layers().size(); ++count) {
      const Layer& last = net.layers()[count - 1];
      SCOPED_TRACE(net.name() + ", layers [0, " + std::to_string(count) + ") ending at '" + last.name + "'");
      const std::vector<double>& exact = reference[count].value;
      std::vector<float> got(exact.size(), std::numeric_limits<float>::quiet_NaN());
      cpu->forward(input.data(), n, got.data(), count);
      const std::vector<double> bound = rounding_error_bound(net, input, n, count, kFp32Rounding);
      ASSERT_EQ(bound.size(), exact.size());
      expect_close(got, exact, bound, "float32 CPU against double");
      // Not vacuous: after the first layer an error of half-precision size (2^-11 of the largest
      // output) exceeds the bound. Deeper, the magnitude network grows faster than the values (no
      // cancellation in |W| |x|), so the bound loosens; the GPU tests check every layer count.
      if (count == 1) {
        double worst = 0.0, largest = 0.0;
        for (std::size_t i = 0; i < bound.size(); ++i) {
          worst = std::max(worst, bound[i]);
          largest = std::max(largest, std::fabs(exact[i]));
        }
        EXPECT_LT(worst, kU11 * largest) << "the bound is too loose to catch a half-precision error";
      }
    }
  }
}

TEST(ErrorBound, GrowsWithTheUnitRoundoffAndRejectsLayersAfterASoftmax) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(rng, {4, 5, 5}, {conv_layer("c", 3, 3, 1, 1), plain_layer("r", LayerKind::Relu)});
  const std::vector<float> input = rng.vector(net.input().dims.size());
  const std::vector<double> fp32 = rounding_error_bound(net, input, 1, 2, kFp32Rounding);
  const std::vector<double> fp16 = rounding_error_bound(net, input, 1, 2, kFp16Rounding);
  const std::vector<double> tf32 = rounding_error_bound(net, input, 1, 2, kTf32Rounding);
  for (std::size_t i = 0; i < fp32.size(); ++i) {
    EXPECT_GT(fp16[i], 50 * fp32[i]) << i;  // three 2^-11 roundings against (K + 2) 2^-24, K = 36
    EXPECT_GT(tf32[i], 20 * fp32[i]) << i;
  }
  const Network after =
      random_network(rng, {4, 1, 1}, {plain_layer("sm", LayerKind::Softmax), plain_layer("r", LayerKind::Relu)});
  EXPECT_THROW(rounding_error_bound(after, rng.vector(4), 1, 2, kFp32Rounding), std::invalid_argument);
}

// Below half's smallest normal number (2^-14) rounding is absolute: the average of 1, 2, 1 and 2
// times 2^-24 (each a half subnormal) is 1.5 2^-24, which rounds (ties to even) to 2 2^-24, off by
// 2^-25: a thousand times the relative part of the bound. The bound's underflow term covers it.
TEST(ErrorBound, CoversHalfUnderflow) {
  Random rng;
  const Network net = random_network(rng, {1, 2, 2}, {plain_layer("gap", LayerKind::GlobalAvgPool)});
  const float s = std::ldexp(1.0f, -24);
  const std::vector<float> input{s, 2 * s, s, 2 * s};
  const double exact = 1.5 * s;
  const double stored = cudnn::half_to_float(cudnn::float_to_half(static_cast<float>(exact)));
  const std::vector<double> bound = rounding_error_bound(net, input, 1, 1, kFp16Rounding, InputRounding::Stored);
  ASSERT_EQ(bound.size(), 1u);
  EXPECT_EQ(std::fabs(stored - exact), kHalfTiny);
  EXPECT_GE(bound[0], std::fabs(stored - exact));
  EXPECT_LT(bound[0] - kHalfTiny, 0.01 * kHalfTiny) << "the relative part is a small share of it";
}

// A window of a chain is the chain from its input on: its output on layer first's input (the CPU's
// own) is the network's output of layers [0, last]; a layer that reads another is refused.
TEST(ErrorBound, LayerWindowRunsTheChainFromItsInput) {
  Random rng;
  const Network net = random_network(
      rng, {3, 6, 5},
      {conv_layer("c1", 4, 3, 1, 1), plain_layer("r1", LayerKind::Relu), pool_layer("p", LayerKind::MaxPool, 2, 2),
       conv_layer("c2", 5, 1, 1, 0), plain_layer("gap", LayerKind::GlobalAvgPool)});
  const int n = 2;
  auto cpu = make_cpu_backend(net, n);
  const std::vector<float> input = rng.vector(static_cast<std::size_t>(n) * net.input().dims.size());
  std::vector<float> middle(static_cast<std::size_t>(n) * net.layers()[1].out.size());
  cpu->forward(input.data(), n, middle.data(), 2);
  std::vector<float> want(static_cast<std::size_t>(n) * net.output_dims().size()), got(want.size());
  cpu->forward(input.data(), n, want.data());
  const Network window = layer_window(net, 2, 4);
  ASSERT_EQ(window.layers().size(), 3u);
  EXPECT_EQ(window.input().dims.c, 4);
  make_cpu_backend(window, n)->forward(middle.data(), n, got.data());
  EXPECT_EQ(got, want);
  EXPECT_THROW(layer_window(net, 3, 2), std::invalid_argument);
  EXPECT_THROW(layer_window(net, 0, 5), std::invalid_argument);

  const Network graph = random_network(rng, {2, 3, 3},
                                       {conv_layer("a", 2, 1, 1, 0), plain_layer("r", LayerKind::Relu),
                                        reading(make_layer("sum", LayerKind::Add, AddAttrs{false}), {"a", "r"})});
  EXPECT_THROW(layer_window(graph, 1, 2), std::invalid_argument);
  EXPECT_NO_THROW(layer_window(graph, 0, 1));
}

}  // namespace
}  // namespace infer::test
