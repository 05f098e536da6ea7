// Shared helpers for the tests: fresh random data, layer builders and the comparison rule.
#pragma once

#include <gtest/gtest.h>

#ifdef _WIN32
#include <windows.h>
#endif

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graph/network.h"
#include "tests/support/pointwise_reference.h"

namespace infer::test {

// The folder of the running test executable (/proc/self/exe; GetModuleFileNameW on Windows).
inline std::filesystem::path exe_dir() {
#ifdef _WIN32
  std::wstring path(32768, L'\0');
  path.resize(GetModuleFileNameW(nullptr, path.data(), static_cast<DWORD>(path.size())));
  return std::filesystem::path(path).parent_path();
#else
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
#endif
}

// The infer executable under test: the one beside the test executable (build/bin, or a bundle's bin/).
inline std::string infer_exe() { return (exe_dir() / "infer").string(); }

// A file the shipped infer reads by default, as infer finds it: <exe_dir>/../share/infer/<relative>
// (platform/install_layout.h), e.g. shipped_file("VERSIONS.toml").
inline std::string shipped_file(const std::string& relative) {
  return (exe_dir().parent_path() / "share" / "infer" / relative).string();
}

// A file of the source tree that a test reads, by its path relative to the source root
// ("weights/fashion.toml", "tests/data/golden.safetensors", "samples"): under $INFER_TEST_DATA_DIR
// when set (a source tree, say), else under <exe_dir>/../share/infer-tests, the copy the build
// makes (infer_test_files in CMakeLists.txt) and a bundle carries. No source path is compiled in,
// so a build copied elsewhere tests the same files.
inline std::string test_file(const std::string& relative) {
  const char* env = std::getenv("INFER_TEST_DATA_DIR");
  const std::filesystem::path root =
      env != nullptr && *env != '\0' ? std::filesystem::path(env) : exe_dir().parent_path() / "share" / "infer-tests";
  return (root / relative).string();
}

// A generator seeded from std::random_device; the seed is in every failure message via
// SCOPED_TRACE so a failure can be replayed.
class Random {
 public:
  Random() : seed_(std::random_device{}()), gen_(seed_) {}
  unsigned seed() const { return seed_; }
  std::string trace() const { return "random seed " + std::to_string(seed_); }
  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(gen_); }
  int integer(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen_); }
  std::vector<float> vector(std::size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(n);
    for (float& x : v) x = uniform(lo, hi);
    return v;
  }

 private:
  unsigned seed_;
  std::mt19937 gen_;
};

// A layer of `kind` with these attributes, reading `inputs` (empty: the layer before it).
inline Layer make_layer(const std::string& name, LayerKind kind, LayerAttrs attrs = {},
                        std::vector<std::string> inputs = {}) {
  Layer layer;
  layer.name = name;
  layer.kind = kind;
  layer.attrs = std::move(attrs);
  layer.inputs = std::move(inputs);
  return layer;
}

inline Layer conv_layer(const std::string& name, int out_channels, int kernel, int stride = 1, int pad = 0,
                        int dilation = 1, int groups = 1, bool bias = true) {
  Conv2dAttrs a;
  a.out_channels = out_channels;
  a.kernel_h = a.kernel_w = kernel;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.dilation_h = a.dilation_w = dilation;
  a.groups = groups;
  a.bias = bias;
  return make_layer(name, LayerKind::Conv2d, a);
}

// A rectangular convolution with different stride, padding and dilation per axis.
inline Layer rect_conv(const std::string& name, int out_channels, bool bias = true) {
  Layer layer = conv_layer(name, out_channels, 3, 1, 1, 1, 1, bias);
  Conv2dAttrs& a = std::get<Conv2dAttrs>(layer.attrs);
  a.kernel_h = 3, a.kernel_w = 5;
  a.stride_h = 1, a.stride_w = 2;
  a.pad_h = 1, a.pad_w = 2;
  a.dilation_h = 2, a.dilation_w = 1;
  return layer;
}

inline Layer pool_layer(const std::string& name, LayerKind kind, int kernel, int stride, int pad = 0,
                        bool count_include_pad = true) {
  Pool2dAttrs a;
  a.kernel_h = a.kernel_w = kernel;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.count_include_pad = count_include_pad;
  return make_layer(name, kind, a);
}

inline Layer batchnorm_layer(const std::string& name, double epsilon = 1e-5) {
  return make_layer(name, LayerKind::BatchNorm, BatchNormAttrs{epsilon});
}

inline Layer linear_layer(const std::string& name, int out_features, bool bias = true) {
  return make_layer(name, LayerKind::Linear, LinearAttrs{out_features, bias});
}

// A layer without attributes, or a pointwise op with its row's defaults (ops.h).
inline Layer plain_layer(const std::string& name, LayerKind kind) {
  return is_pointwise(kind) ? make_layer(name, kind, default_pointwise_attrs(pointwise_op(kind)))
                            : make_layer(name, kind);
}

// A pooling layer with nothing square (issue 32): a 3x2 kernel, 2x1 stride, 1x0 padding, so that a
// swap of any vertical and horizontal parameter changes the result.
inline Layer rect_pool(const std::string& name, LayerKind kind, bool count_include_pad = true) {
  Layer layer = pool_layer(name, kind, 3, 2, 1, count_include_pad);
  Pool2dAttrs& a = std::get<Pool2dAttrs>(layer.attrs);
  a.kernel_h = 3, a.kernel_w = 2;
  a.stride_h = 2, a.stride_w = 1;
  a.pad_h = 1, a.pad_w = 0;
  return layer;
}

// The same pooling layer with ceil_mode.
inline Layer ceil_mode(Layer pool) {
  std::get<Pool2dAttrs>(pool.attrs).ceil_mode = true;
  return pool;
}

// A layer reading `inputs` by name ("input": the network input).
inline Layer reading(Layer layer, std::vector<std::string> inputs) {
  layer.inputs = std::move(inputs);
  return layer;
}

// The shipped model's architecture at a smaller size (input 1x12x12, 8 and 16 channels): four conv +
// batch-norm + ReLU (conv4 without a bias), two max pools, two FC layers and softmax.
inline std::vector<Layer> fashion_like_layers() {
  return {conv_layer("conv1", 8, 3, 1, 1),
          batchnorm_layer("bn1"),
          plain_layer("relu1", LayerKind::Relu),
          conv_layer("conv2", 8, 3, 1, 1),
          batchnorm_layer("bn2"),
          plain_layer("relu2", LayerKind::Relu),
          pool_layer("pool1", LayerKind::MaxPool, 2, 2),
          conv_layer("conv3", 16, 3, 1, 1),
          batchnorm_layer("bn3"),
          plain_layer("relu3", LayerKind::Relu),
          conv_layer("conv4", 16, 3, 1, 1, 1, 1, false),
          batchnorm_layer("bn4"),
          plain_layer("relu4", LayerKind::Relu),
          pool_layer("pool2", LayerKind::MaxPool, 2, 2),
          plain_layer("flatten", LayerKind::Flatten),
          linear_layer("fc1", 12),
          plain_layer("relu5", LayerKind::Relu),
          linear_layer("fc2", 10),
          plain_layer("softmax", LayerKind::Softmax)};
}

// ShuffleNet V2's unit after a 3x3 convolution to 8 channels: x.chunk(2, dim=1), the second half
// through a 1x1 branch, concat with the first half, a channel shuffle of 2 groups.
inline std::vector<Layer> shufflenet_unit_layers() {
  return {conv_layer("c", 8, 3, 1, 1), make_layer("left", LayerKind::ChannelSlice, ChannelSliceAttrs{0, 4}),
          reading(make_layer("right", LayerKind::ChannelSlice, ChannelSliceAttrs{4, 8}), {"c"}),
          conv_layer("branch", 4, 1), reading(make_layer("join", LayerKind::Concat), {"left", "branch"}),
          make_layer("shuffle", LayerKind::ChannelShuffle, ChannelShuffleAttrs{2})};
}

// Every op of the graph format in one network (input 3x8x8): a residual block (conv + bn + relu,
// conv + bn, add with ReLU), two branches (one through average pooling) joined by concat, a
// squeeze-and-excitation scale (a -inf pad, ceil-mode max pooling and global pooling, two 1x1 convolutions,
// sigmoid, per-channel mul), then every pointwise op (ops.h) with its test parameters
// (pointwise_reference.h), each reading the scaled features (so each sees their whole range),
// joined by a concat; a channel shuffle of those 8 x kPointwiseCount channels in 4 groups (neighbours
// then come from different branches); a channel slice that drops the first 3 and the last 5 of them
// (later layers see neither end); a nearest upsampling by 2x3 (to 16x24); an adaptive average
// pooling back to 8x8; a bilinear resize to 6x11 (fewer rows, more columns); a layernorm over its
// channels; a flatten of those Cx6x11 features (reordered in NHWC), a linear layer and softmax. A new pointwise op
// joins by itself.
inline std::vector<Layer> graph_zoo_layers() {
  std::vector<Layer> layers = {
      conv_layer("conv1", 8, 3, 1, 1), batchnorm_layer("bn1"), plain_layer("relu1", LayerKind::Relu),
      conv_layer("conv2", 8, 3, 1, 1), batchnorm_layer("bn2"),
      reading(make_layer("res", LayerKind::Add, AddAttrs{true}), {"bn2", "relu1"}), conv_layer("branch1", 3, 1),
      reading(pool_layer("avg", LayerKind::AvgPool, 3, 1, 1, false), {"res"}),
      conv_layer("branch3", 5, 3, 1, 1, 1, 1, false),
      reading(make_layer("cat", LayerKind::Concat), {"branch1", "branch3"}),
      // TensorFlow's SAME max pooling as the ONNX import writes it: -inf below and right
      make_layer("same", LayerKind::Pad, PadAttrs{0, 0, 1, 0, -std::numeric_limits<float>::infinity()}),
      ceil_mode(pool_layer("max", LayerKind::MaxPool, 3, 2, 1)),  // 9x8 -> 5x5: the last column's window overhangs
      plain_layer("squeeze", LayerKind::GlobalAvgPool), conv_layer("se1", 4, 1),
      plain_layer("se_relu", LayerKind::Relu), conv_layer("se2", 8, 1), plain_layer("gate", LayerKind::Sigmoid),
      reading(make_layer("scale", LayerKind::Mul), {"cat", "gate"})};
  std::vector<std::string> branches;
  for (std::size_t i = 0; i < kPointwiseCount; ++i) {
    const auto op = static_cast<PointwiseOp>(i);
    branches.emplace_back(op_name(layer_kind(op)));
    layers.push_back(reading(make_layer(branches.back(), layer_kind(op), pointwise_sample(op)), {"scale"}));
  }
  layers.push_back(reading(make_layer("pointwise", LayerKind::Concat), branches));
  layers.push_back(make_layer("shuffle", LayerKind::ChannelShuffle, ChannelShuffleAttrs{4}));
  const int shuffled = 8 * static_cast<int>(kPointwiseCount);
  layers.push_back(make_layer("slice", LayerKind::ChannelSlice, ChannelSliceAttrs{3, shuffled - 5}));
  layers.push_back(make_layer("up", LayerKind::Upsample, UpsampleAttrs{2, 3}));
  layers.push_back(make_layer("adapt", LayerKind::AdaptiveAvgPool, AdaptivePoolAttrs{8, 8}));  // 16x24: windows 2x3
  layers.push_back(make_layer("resize", LayerKind::Resize, ResizeAttrs{6, 11, false}));
  layers.push_back(make_layer("norm", LayerKind::LayerNorm, LayerNormAttrs{1e-5}));
  layers.push_back(plain_layer("flatten", LayerKind::Flatten));
  layers.push_back(linear_layer("fc", 10));
  layers.push_back(plain_layer("softmax", LayerKind::Softmax));
  return layers;
}

// Builds a network with fresh random parameters for the given layers (running variances are
// positive, as trained ones are).
inline Network random_network(Random& rng, Dims input, std::vector<Layer> layers) {
  connect(input, layers);
  for (Layer& layer : layers) {
    for (const ParamShape& p : expected_params(layer, layer.in)) {
      std::size_t n = 1;
      for (long long d : p.shape) n *= static_cast<std::size_t>(d);
      layer.params.*(p.field) = p.field == &LayerParams::running_var ? rng.vector(n, 0.2f, 2.0f) : rng.vector(n);
    }
  }
  InputSpec spec{input,
                 std::vector<float>(static_cast<std::size_t>(input.c), 0.0f),
                 std::vector<float>(static_cast<std::size_t>(input.c), 1.0f),
                 {},
                 {}};
  return Network("test", spec, std::move(layers));
}

// Test names for INSTANTIATE_TEST_SUITE_P from a case's `what` field: "huge PNG header" ->
// "huge_PNG_header".
struct CaseName {
  template <typename Param>
  std::string operator()(const ::testing::TestParamInfo<Param>& info) const {
    std::string n = info.param.what;
    for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    return n;
  }
};

// The comparison rule: |got - want| <= tolerance; NaN never passes, and an infinity only where that
// infinity is expected (a -inf padding before a max pooling, seen by a partial run). Reports the
// first few offending elements with their index.
inline void expect_close(const std::vector<float>& got, const std::vector<double>& want,
                         const std::vector<double>& tolerance, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    const bool ok =
        std::isinf(want[i]) ? static_cast<double>(got[i]) == want[i] : std::isfinite(got[i]) && diff <= tolerance[i];
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i] << " +- "
                    << tolerance[i];
    }
  }
}

// Unit roundoff of float32: a float result of an exact value x is within |x| * kFloatEps of it.
constexpr double kFloatEps = 1.0 / (1 << 24);

// INFER_REQUIRE_GPU=1 makes "no usable GPU" a failure instead of a skip. GPU runners set it
// (tools/release/gpu-check.sh), so that a runner whose backend module, driver or cuDNN is missing cannot
// pass green with every GPU test skipped. Unset (or any other value), GPU tests skip as usual.
inline bool gpu_required() {
  const char* v = std::getenv("INFER_REQUIRE_GPU");
  return v != nullptr && std::string(v) == "1";
}

// The one way a GPU test ends when no GPU is usable: GTEST_SKIP with `reason`, or under
// INFER_REQUIRE_GPU=1 a failure (ADD_FAILURE) with it. Returns from the calling test body.
#define INFER_GPU_UNUSABLE(reason)                                                      \
  do {                                                                                  \
    const std::string infer_reason_ = (reason);                                         \
    if (::infer::test::gpu_required()) {                                                \
      ADD_FAILURE() << "INFER_REQUIRE_GPU=1: a failure, not a skip: " << infer_reason_; \
      return;                                                                           \
    }                                                                                   \
    GTEST_SKIP() << infer_reason_;                                                      \
  } while (false)

}  // namespace infer::test
