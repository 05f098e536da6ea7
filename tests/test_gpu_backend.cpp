// The cuDNN backend against the CPU backend (the reference), loaded exactly as the app loads it:
// infer::make_gpu_backend, i.e. dlopen of libinfer_cudnn.so from $INFER_GPU_LIBRARY or next to this
// executable. Every op alone and in combinations, fresh random inputs and weights, batch sizes 1, 3
// and the maximum, intermediate layer counts, NaN-poisoned outputs. Without a usable GPU every
// GPU test skips with the reason (the loader's or the CUDA runtime's message).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>

#include "model/cpu/cpu_backend.h"
#include "model/errors.h"
#include "model/gpu_backend.h"
#include "model/model_file.h"
#include "test_util.h"

namespace infer::test {
namespace {

constexpr int kMaxBatch = 7;
constexpr double kRtol = 1e-4;  // FP32 (no TF32): covers exp/division implementation differences
constexpr std::size_t kTail = 16;
constexpr float kSentinel = 12345.0f;

// Why no GPU backend can be built here ("" when one can), found once per process. Any other
// error (GpuError) is a failure, not a skip.
const std::string& gpu_unavailable_reason() {
  static const std::string reason = [] {
    Random rng;
    const Network net = random_network(rng, {1, 2, 2}, {plain_layer("r", LayerKind::Relu)});
    try {
      make_gpu_backend(net, 1);
      return std::string();
    } catch (const GpuUnavailableError& e) {
      return std::string(e.what());
    }
  }();
  return reason;
}

#define SKIP_WITHOUT_GPU()                                                           \
  do {                                                                               \
    if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << gpu_unavailable_reason(); \
  } while (false)

double max_abs(const std::vector<float>& v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

// Absolute (max-norm) bound on |gpu - cpu| after layers [0, count): both backends round every
// operation to float but may order their sums differently. Carried layer by layer as
//   e_out = L * e_in + r
// L: how much the layer can amplify an input error (its max-norm Lipschitz constant).
// r: the layer's own rounding, on both sides. A float sum of K terms in any order is within
//    gamma_K * sum|terms| of the exact sum, gamma_K ~ K u, u = 2^-24 (Higham, Accuracy and
//    Stability, 3.1); two backends: 2 gamma_K; +2 terms for the bias add and the stored result.
//      conv/linear  K = C/g*R*S (or in), L = max_k sum|w_k|, sum|terms| <= L*max|x| + max|b|
//      batch-norm   up to 8 roundings per side (rsqrt counts 2 ulp) of terms bounded by |x*s|,
//                   |mean*s|, |beta|: r = 16 u (...); L = max|s|
//      avg pooling  K = window (H*W for global), sum|terms| <= K max|x|, then / K; L = 1
//      softmax      |dy_i| <= y_i (|dx_i| + sum_j y_j |dx_j|) so L = 2; exp (<= 2 ulp), a C-term
//                   sum and a division: r = 2 (C + 6) u, as y <= 1
//      relu, max pooling, flatten: exact, L = 1
// max|x| per layer comes from the CPU's own intermediate outputs.
double error_bound(const Network& net, Backend& cpu, const std::vector<float>& input, int n, std::size_t count) {
  constexpr double u = kFloatEps;
  double e = 0.0;
  double x_max = max_abs(input);
  for (std::size_t i = 0; i < count; ++i) {
    const Layer& l = net.layers()[i];
    std::vector<float> y(static_cast<std::size_t>(n) * l.out.size());
    cpu.forward(input.data(), n, y.data(), i + 1);
    const LayerParams& p = l.params;
    switch (l.kind) {
      case LayerKind::Conv2d:
      case LayerKind::Linear: {
        const std::size_t k = p.weight.size() / static_cast<std::size_t>(l.out.c);
        double lip = 0.0;
        for (std::size_t o = 0; o < static_cast<std::size_t>(l.out.c); ++o) {
          double row = 0.0;
          for (std::size_t j = 0; j < k; ++j) row += std::fabs(p.weight[o * k + j]);
          lip = std::max(lip, row);
        }
        e = lip * e + 2.0 * static_cast<double>(k + 2) * u * (lip * x_max + max_abs(p.bias));
        break;
      }
      case LayerKind::BatchNorm: {
        double s_max = 0.0, ms_max = 0.0;
        for (std::size_t c = 0; c < p.weight.size(); ++c) {
          const double s = std::fabs(p.weight[c]) / std::sqrt(p.running_var[c] + l.batchnorm().epsilon);
          s_max = std::max(s_max, s);
          ms_max = std::max(ms_max, std::fabs(p.running_mean[c]) * s);
        }
        e = s_max * e + 16.0 * u * (x_max * s_max + ms_max + max_abs(p.bias));
        break;
      }
      case LayerKind::AvgPool:
      case LayerKind::GlobalAvgPool: {
        const double k = l.kind == LayerKind::AvgPool ? l.pool().kernel_h * l.pool().kernel_w : l.in.h * l.in.w;
        e += 2.0 * (k + 2.0) * u * x_max;
        break;
      }
      case LayerKind::Softmax: e = 2.0 * e + 2.0 * (l.in.c + 6) * u; break;
      case LayerKind::Relu:
      case LayerKind::MaxPool:
      case LayerKind::Flatten: break;
    }
    x_max = max_abs(y);
  }
  return e;
}

// Runs layers [0, count) of net on n samples on both backends and compares. The GPU's output
// buffer is poisoned with NaN (every element must be overwritten with a finite value) and
// followed by a sentinel tail that must stay untouched.
void expect_gpu_matches_cpu(Backend& gpu, Backend& cpu, const Network& net, const std::vector<float>& input, int n,
                            std::size_t count) {
  const std::string what = "n = " + std::to_string(n) + ", layers [0, " + std::to_string(count) + ") ending at '" +
                           net.layers()[count - 1].name + "'";
  const std::size_t size = static_cast<std::size_t>(n) * net.layers()[count - 1].out.size();
  std::vector<float> want(size);
  cpu.forward(input.data(), n, want.data(), count);
  std::vector<float> got(size, std::numeric_limits<float>::quiet_NaN());
  got.resize(size + kTail, kSentinel);
  gpu.forward(input.data(), n, got.data(), count);
  for (std::size_t i = size; i < got.size(); ++i) ASSERT_EQ(got[i], kSentinel) << what << ": wrote past the output";
  got.resize(size);

  const double atol = error_bound(net, cpu, input, n, count);
  std::vector<double> ref(want.begin(), want.end()), tolerance(size);
  for (std::size_t i = 0; i < size; ++i) {
    ASSERT_TRUE(std::isfinite(want[i])) << what << ": the CPU reference is not finite at " << i;
    tolerance[i] = atol + kRtol * std::fabs(ref[i]);
  }
  expect_close(got, ref, tolerance, what + " (atol " + std::to_string(atol) + ")");
}

// Every batch size of interest and every layer count in `counts` (all layers when empty).
void check_network(Random& rng, const Network& net, std::vector<std::size_t> counts = {}) {
  if (counts.empty()) counts.push_back(net.layers().size());
  auto cpu = make_cpu_backend(net, kMaxBatch);
  auto gpu = make_gpu_backend(net, kMaxBatch);
  // The batch size changes between calls in every direction (descriptors are re-set, not recreated).
  for (int n : {3, 1, kMaxBatch, 3}) {
    const std::vector<float> input = rng.vector(static_cast<std::size_t>(n) * net.input().dims.size());
    for (std::size_t count : counts) expect_gpu_matches_cpu(*gpu, *cpu, net, input, n, count);
  }
}

// random_network with each conv/linear weight and bias divided by sqrt(K), K the terms per output
// (as trained networks are scaled): activations keep their size through the layers, so the
// error bound of a deep combination stays tight enough to catch a 1% error at the last layer.
Network scaled_random_network(Random& rng, Dims input, std::vector<Layer> layers) {
  std::vector<Layer> scaled = random_network(rng, input, std::move(layers)).layers();
  for (Layer& l : scaled) {
    if (l.kind != LayerKind::Conv2d && l.kind != LayerKind::Linear) continue;
    const float s = 1.0f / std::sqrt(static_cast<float>(l.params.weight.size() / static_cast<std::size_t>(l.out.c)));
    for (float& w : l.params.weight) w *= s;
    for (float& b : l.params.bias) b *= s;
  }
  InputSpec spec{input, std::vector<float>(static_cast<std::size_t>(input.c), 0.0f),
                 std::vector<float>(static_cast<std::size_t>(input.c), 1.0f), {}};
  return Network("scaled", spec, std::move(scaled));
}

struct OpCase {
  std::string name;
  Dims input;
  std::vector<Layer> layers;
};

TEST(GpuBackend, EveryOpAloneMatchesCpu) {
  SKIP_WITHOUT_GPU();
  Random rng;
  SCOPED_TRACE(rng.trace());
  const std::vector<OpCase> cases = {
      {"conv 3x3 pad 1", {3, 9, 11}, {conv_layer("conv", 8, 3, 1, 1)}},
      {"conv stride 2, odd size", {4, 13, 7}, {conv_layer("conv", 5, 3, 2)}},
      {"conv dilation 2", {3, 12, 10}, {conv_layer("conv", 4, 3, 1, 2, 2)}},
      {"conv groups 2, no bias", {4, 9, 9}, {conv_layer("conv", 6, 3, 1, 1, 1, 2, false)}},
      {"conv depthwise", {6, 8, 9}, {conv_layer("conv", 6, 3, 1, 1, 1, 6)}},
      {"conv 1x1", {16, 5, 5}, {conv_layer("conv", 8, 1)}},
      {"conv 3x5 rectangular", {3, 14, 15}, {rect_conv("conv", 4, true)}},
      {"conv 3x5 rectangular, no bias", {3, 14, 15}, {rect_conv("conv", 4, false)}},
      {"batchnorm", {5, 6, 7}, {batchnorm_layer("bn", 1e-3)}},
      {"relu", {3, 5, 6}, {plain_layer("relu", LayerKind::Relu)}},
      {"maxpool 3/2 pad 1", {3, 11, 10}, {pool_layer("pool", LayerKind::MaxPool, 3, 2, 1)}},
      {"maxpool 2/2", {2, 9, 8}, {pool_layer("pool", LayerKind::MaxPool, 2, 2)}},
      {"avgpool with padding counted", {3, 11, 10}, {pool_layer("pool", LayerKind::AvgPool, 3, 2, 1, true)}},
      {"avgpool without padding counted", {3, 11, 10}, {pool_layer("pool", LayerKind::AvgPool, 3, 2, 1, false)}},
      {"global avgpool", {5, 7, 9}, {plain_layer("gap", LayerKind::GlobalAvgPool)}},
      {"flatten", {2, 3, 4}, {plain_layer("flat", LayerKind::Flatten)}},
      {"linear", {37, 1, 1}, {linear_layer("fc", 11)}},
      {"linear, no bias", {37, 1, 1}, {linear_layer("fc", 11, false)}},
      {"softmax, flat", {10, 1, 1}, {plain_layer("softmax", LayerKind::Softmax)}},
      {"softmax over channels", {6, 4, 5}, {plain_layer("softmax", LayerKind::Softmax)}},
  };
  for (const OpCase& c : cases) {
    SCOPED_TRACE(c.name);
    check_network(rng, random_network(rng, c.input, c.layers));
  }
}

TEST(GpuBackend, FusedConvolutionReluAndItsIntermediateResult) {
  SKIP_WITHOUT_GPU();
  Random rng;
  SCOPED_TRACE(rng.trace());
  // Layer count 1 ends inside the fused step: the convolution's output, before the ReLU.
  check_network(rng,
                random_network(rng, {3, 10, 9}, {conv_layer("conv", 6, 3, 1, 1), plain_layer("relu", LayerKind::Relu)}),
                {1, 2});
  check_network(rng, random_network(rng, {4, 9, 9}, {conv_layer("conv", 4, 3, 2, 1, 1, 2, false),
                                                     plain_layer("relu", LayerKind::Relu)}),
                {1, 2});
  check_network(rng, random_network(rng, {20, 1, 1}, {linear_layer("fc", 9), plain_layer("relu", LayerKind::Relu)}),
                {1, 2});
}

TEST(GpuBackend, EveryLayerCountOfACombination) {
  SKIP_WITHOUT_GPU();
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = scaled_random_network(
      rng, {3, 17, 15},
      {conv_layer("c1", 8, 3, 1, 1), batchnorm_layer("bn1"), plain_layer("r1", LayerKind::Relu),
       pool_layer("mp", LayerKind::MaxPool, 3, 2, 1), conv_layer("c2", 8, 3, 1, 1, 1, 2),
       plain_layer("r2", LayerKind::Relu),
       pool_layer("ap", LayerKind::AvgPool, 2, 2, 1, false), conv_layer("c3", 6, 1, 1, 0, 1, 1, false),
       plain_layer("gap", LayerKind::GlobalAvgPool), plain_layer("flat", LayerKind::Flatten), linear_layer("fc1", 12),
       plain_layer("r3", LayerKind::Relu), linear_layer("fc2", 5), plain_layer("sm", LayerKind::Softmax)});
  std::vector<std::size_t> counts;
  for (std::size_t c = 1; c <= net.layers().size(); ++c) counts.push_back(c);
  check_network(rng, net, counts);
}

// Goldens: padding never wins a max (all inputs negative), and the divisors of average pooling
// on a constant input (Caffe's test_pooling_layer idea).
TEST(GpuBackend, PoolingPaddingGoldens) {
  SKIP_WITHOUT_GPU();
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network max = random_network(rng, {2, 5, 5}, {pool_layer("mp", LayerKind::MaxPool, 3, 2, 1)});
  auto gpu = make_gpu_backend(max, 1);
  std::vector<float> negative = rng.vector(max.input().dims.size(), -2.0f, -1.0f), out(max.output_dims().size());
  gpu->forward(negative.data(), 1, out.data());
  for (float v : out) EXPECT_LT(v, -0.5f) << "a padded zero won the max";

  for (bool include : {true, false}) {
    const Network avg = random_network(rng, {1, 4, 4}, {pool_layer("ap", LayerKind::AvgPool, 3, 1, 1, include)});
    auto g = make_gpu_backend(avg, 1);
    const std::vector<float> ones(16, 1.0f);
    std::vector<float> y(16, std::numeric_limits<float>::quiet_NaN());
    g->forward(ones.data(), 1, y.data());
    // Corner windows hold 4 real inputs of 9, edges 6, the inside 9.
    EXPECT_FLOAT_EQ(y[0], include ? 4.0f / 9.0f : 1.0f) << "corner, count_include_pad " << include;
    EXPECT_FLOAT_EQ(y[1], include ? 6.0f / 9.0f : 1.0f) << "edge, count_include_pad " << include;
    EXPECT_FLOAT_EQ(y[5], 1.0f) << "inside, count_include_pad " << include;
  }
}

TEST(GpuBackend, ShippedModelMatchesCpu) {
  SKIP_WITHOUT_GPU();
  Random rng;
  SCOPED_TRACE(rng.trace());
  const LoadedModel model = load_model(std::string(INFER_SOURCE_DIR) + "/weights/fashion.toml");
  const Network& net = model.network;
  auto cpu = make_cpu_backend(net, kMaxBatch);
  auto gpu = make_gpu_backend(net, kMaxBatch);
  const Dims d = net.input().dims;
  for (int n : {1, 3, kMaxBatch}) {
    // Normalised pixels, as the app feeds them: (p - mean[c]) / std[c], p uniform in [0, 1].
    std::vector<float> input(static_cast<std::size_t>(n) * d.size());
    for (std::size_t i = 0; i < input.size(); ++i) {
      const std::size_t c = i / (static_cast<std::size_t>(d.h) * d.w) % static_cast<std::size_t>(d.c);
      input[i] = (rng.uniform(0.0f, 1.0f) - net.input().mean[c]) / net.input().std[c];
    }
    for (std::size_t count = 1; count <= net.layers().size(); ++count) {
      expect_gpu_matches_cpu(*gpu, *cpu, net, input, n, count);
    }
  }
}

TEST(GpuBackend, BadArgumentsThrowInvalidArgument) {
  SKIP_WITHOUT_GPU();
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(rng, {2, 4, 4}, {plain_layer("r", LayerKind::Relu)});
  auto gpu = make_gpu_backend(net, 2);
  std::vector<float> in(3 * net.input().dims.size()), out(in.size());
  EXPECT_THROW(gpu->forward(in.data(), 0, out.data(), 1), std::invalid_argument);
  EXPECT_THROW(gpu->forward(in.data(), 3, out.data(), 1), std::invalid_argument);
  EXPECT_THROW(gpu->forward(in.data(), 1, out.data(), 0), std::invalid_argument);
  EXPECT_THROW(gpu->forward(in.data(), 1, out.data(), 2), std::invalid_argument);
  EXPECT_THROW(make_gpu_backend(net, 0), std::invalid_argument);
}

TEST(GpuBackend, DescriptionNamesDeviceAndVersions) {
  SKIP_WITHOUT_GPU();
  Random rng;
  const Network net = random_network(rng, {1, 2, 2}, {plain_layer("r", LayerKind::Relu)});
  auto gpu = make_gpu_backend(net, 1);
  const std::string d = gpu->description();
  EXPECT_EQ(d.rfind("gpu: ", 0), 0u) << d;
  for (const char* part : {"(sm_", ", cuDNN 9.", ", CUDA runtime "}) {
    EXPECT_NE(d.find(part), std::string::npos) << part << " missing in: " << d;
  }
  EXPECT_STREQ(gpu->device(), "gpu");
}

// Needs the library only, not a GPU: the versions it reports are consistent.
TEST(GpuBackend, LibraryReportsConsistentVersions) {
  std::shared_ptr<GpuLibrary> library;
  try {
    library = GpuLibrary::open();
  } catch (const GpuUnavailableError& e) {
    GTEST_SKIP() << e.what();
  }
  const InferGpuVersions v = library->versions();
  EXPECT_GE(v.cuda_runtime_built, 12000);
  EXPECT_EQ(v.cuda_runtime_loaded / 1000, v.cuda_runtime_built / 1000) << "CUDA runtime " << v.cuda_runtime_loaded;
  EXPECT_EQ(v.cudnn_loaded / 10000, v.cudnn_built / 10000) << "cuDNN " << v.cudnn_loaded;
  EXPECT_EQ(v.cudnn_loaded_cudart / 1000, v.cuda_runtime_built / 1000) << "cuDNN built for " << v.cudnn_loaded_cudart;
}

// On a machine without a usable GPU, the reason is one line the app can print.
TEST(GpuBackend, UnavailableReasonIsOneLine) {
  const std::string& reason = gpu_unavailable_reason();
  if (reason.empty()) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;
  EXPECT_GT(reason.size(), 20u) << reason;
}

}  // namespace
}  // namespace infer::test
