// The cuDNN plan without a GPU: for networks covering every layer kind and attribute, every step's
// shapes and descriptors (read back from cuDNN) equal what the Network says; the fusion rule;
// errors that name the layer; the cuDNN libraries found at run time match the headers.
#include <gtest/gtest.h>

#include <stdexcept>

#include "backends/cudnn/plan.h"
#include "graph/model_error.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

using cudnn::Plan;
using cudnn::Step;
using cudnn::StepKind;

struct Tensor4d {
  cudnnDataType_t type;
  int n, c, h, w, ns, cs, hs, ws;
};

Tensor4d read(cudnnTensorDescriptor_t d) {
  Tensor4d t{};
  EXPECT_EQ(cudnnGetTensor4dDescriptor(d, &t.type, &t.n, &t.c, &t.h, &t.w, &t.ns, &t.cs, &t.hs, &t.ws),
            CUDNN_STATUS_SUCCESS);
  return t;
}

// A fully packed tensor [n, dims] of the given type and layout (strides read back from cuDNN).
void expect_tensor(cudnnTensorDescriptor_t d, int n, const Dims& dims, cudnnDataType_t type, cudnnTensorFormat_t format,
                   const std::string& what) {
  const Tensor4d t = read(d);
  EXPECT_EQ(t.type, type) << what;
  EXPECT_EQ(t.n, n) << what;
  EXPECT_EQ((Dims{t.c, t.h, t.w}), dims) << what;
  EXPECT_EQ(t.ns, static_cast<int>(dims.size())) << what;
  if (format == CUDNN_TENSOR_NCHW) {
    EXPECT_EQ((std::vector<int>{t.cs, t.hs, t.ws}), (std::vector<int>{dims.h * dims.w, dims.w, 1}))
        << what << " (NCHW)";
  } else {
    EXPECT_EQ((std::vector<int>{t.cs, t.hs, t.ws}), (std::vector<int>{1, dims.w * dims.c, dims.c}))
        << what << " (NHWC)";
  }
}

// A float, fully packed NCHW tensor [n, dims].
void expect_nchw(cudnnTensorDescriptor_t d, int n, const Dims& dims, const std::string& what) {
  expect_tensor(d, n, dims, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, what);
}

// Every layer kind, odd sizes, strides, padding, dilation, groups, missing biases.
std::vector<Network> zoo(Random& rng) {
  std::vector<Network> nets;
  nets.push_back(random_network(
      rng, {3, 11, 13},
      {conv_layer("c1", 8, 3, 2, 1), plain_layer("r1", LayerKind::Relu), conv_layer("c2", 8, 3, 1, 2, 2, 4, false),
       batchnorm_layer("bn2"), plain_layer("r2", LayerKind::Relu), pool_layer("mp", LayerKind::MaxPool, 3, 2, 1),
       rect_conv("c3", 6), conv_layer("dw", 6, 3, 1, 1, 1, 6), pool_layer("ap_in", LayerKind::AvgPool, 3, 1, 1, true),
       pool_layer("ap_ex", LayerKind::AvgPool, 2, 2, 1, false), plain_layer("gap", LayerKind::GlobalAvgPool),
       plain_layer("flat", LayerKind::Flatten), linear_layer("fc1", 10), plain_layer("r3", LayerKind::Relu),
       linear_layer("fc2", 5, false), plain_layer("sm", LayerKind::Softmax)}));
  nets.push_back(random_network(
      rng, {4, 7, 5},
      {conv_layer("c", 6, 1), plain_layer("sm", LayerKind::Softmax), plain_layer("r", LayerKind::Relu)}));
  nets.push_back(random_network(rng, {2, 3, 4},
                                {plain_layer("flat", LayerKind::Flatten), linear_layer("fc", 6),
                                 plain_layer("r", LayerKind::Relu), plain_layer("sm", LayerKind::Softmax)}));
  return nets;
}

TEST(CudnnPlan, StepsCoverEveryLayerWithTheNetworksShapes) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (const Network& net : zoo(rng)) {
    for (int max_batch : {1, 4}) {
      const Plan plan(net, max_batch);
      const std::vector<Layer>& layers = net.layers();
      std::size_t next = 0;
      for (const Step& step : plan.steps()) {
        SCOPED_TRACE("step " + step.name);
        ASSERT_EQ(step.first_layer, next);
        ASSERT_LT(step.last_layer, layers.size());
        EXPECT_EQ(step.in, layers[step.first_layer].in);
        EXPECT_EQ(step.out, layers[step.last_layer].out);
        next = step.last_layer + 1;
      }
      EXPECT_EQ(next, layers.size());
      ASSERT_EQ(plan.activations().size(), layers.size() + 1);
      expect_nchw(plan.activations()[0].desc.get(), max_batch, net.input().dims, "input");
      for (std::size_t i = 0; i < layers.size(); ++i) {
        EXPECT_EQ(plan.activations()[i + 1].dims, layers[i].out) << layers[i].name;
        expect_nchw(plan.activations()[i + 1].desc.get(), max_batch, layers[i].out, layers[i].name);
        EXPECT_GE(plan.buffer_bytes()[plan.activations()[i + 1].buffer], layers[i].out.size() * sizeof(float))
            << layers[i].name;
      }
    }
  }
}

TEST(CudnnPlan, SetBatchReSetsTheSameDescriptors) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = zoo(rng).front();
  Plan plan(net, 6);
  std::vector<cudnnTensorDescriptor_t> before;
  for (const cudnn::Activation& a : plan.activations()) before.push_back(a.desc.get());
  for (int n : {3, 1, 6}) {
    plan.set_batch(n);
    EXPECT_EQ(plan.batch(), n);
    for (std::size_t i = 0; i < before.size(); ++i) {
      EXPECT_EQ(plan.activations()[i].desc.get(), before[i]) << "activation " << i << " was recreated";
      expect_nchw(plan.activations()[i].desc.get(), n, plan.activations()[i].dims, "activation " + std::to_string(i));
    }
  }
  EXPECT_THROW(plan.set_batch(0), std::invalid_argument);
  EXPECT_THROW(plan.set_batch(7), std::invalid_argument);
  EXPECT_THROW(Plan(net, 0), std::invalid_argument);
}

TEST(CudnnPlan, ConvolutionOrLinearFollowedByReluIsOneStep) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(
      rng, {3, 8, 8},
      {conv_layer("c1", 4, 3, 1, 1), plain_layer("r1", LayerKind::Relu), conv_layer("c2", 4, 3, 1, 1),
       batchnorm_layer("bn2"), plain_layer("r2", LayerKind::Relu), plain_layer("flat", LayerKind::Flatten),
       linear_layer("fc", 5), plain_layer("r3", LayerKind::Relu)});
  const Plan plan(net, 2, cudnn::PlanOptions{Precision::Fp32, false});
  const std::vector<Step>& s = plan.steps();
  ASSERT_EQ(s.size(), 6u);
  const std::vector<std::pair<StepKind, std::string>> expected = {
      {StepKind::Convolution, "c1+r1"}, {StepKind::Convolution, "c2"}, {StepKind::BatchNorm, "bn2"},
      {StepKind::Relu, "r2"},           {StepKind::Alias, "flat"},     {StepKind::Convolution, "fc+r3"}};
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].kind, expected[i].first) << s[i].name << " is a " << cudnn::step_kind_name(s[i].kind);
    EXPECT_EQ(s[i].name, expected[i].second);
  }
  EXPECT_TRUE(s[0].fused_relu);
  EXPECT_EQ(s[0].layer_count(), 2u);
  EXPECT_FALSE(s[1].fused_relu);  // conv + bn + relu: the ReLU follows the batch-norm, not the conv
  EXPECT_TRUE(s[5].fused_relu);
  // A fused step writes its convolution's and its ReLU's output to one buffer; flatten aliases.
  const auto& a = plan.activations();
  EXPECT_EQ(a[1].buffer, a[2].buffer);
  EXPECT_NE(a[3].buffer, a[4].buffer);
  EXPECT_EQ(a[6].buffer, a[5].buffer);
  expect_nchw(a[6].desc.get(), 2, Dims{4 * 8 * 8, 1, 1}, "flatten output");
}

TEST(CudnnPlan, ConvolutionDescriptorsMatchTheLayer) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(
      rng, {6, 15, 17},
      {rect_conv("rect", 4), conv_layer("grouped", 6, 3, 2, 1, 3, 2, false),
       plain_layer("gap", LayerKind::GlobalAvgPool), plain_layer("flat", LayerKind::Flatten), linear_layer("fc", 7)});
  const Plan plan(net, 3);
  ASSERT_EQ(plan.steps().size(), 5u);
  for (std::size_t i : {0u, 1u, 4u}) {
    const Step& step = plan.steps()[i];
    const Layer& layer = net.layers()[step.first_layer];
    SCOPED_TRACE(layer.name);
    Conv2dAttrs a;  // what the step must encode; linear is a 1x1 convolution
    if (layer.kind == LayerKind::Conv2d) {
      a = layer.conv();
    } else {
      a.out_channels = layer.linear().out_features;
    }
    int ph, pw, sh, sw, dh, dw, groups;
    cudnnConvolutionMode_t mode;
    cudnnDataType_t compute;
    cudnnMathType_t math;
    ASSERT_EQ(cudnnGetConvolution2dDescriptor(step.convolution.get(), &ph, &pw, &sh, &sw, &dh, &dw, &mode, &compute),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ((std::vector<int>{ph, pw, sh, sw, dh, dw}),
              (std::vector<int>{a.pad_h, a.pad_w, a.stride_h, a.stride_w, a.dilation_h, a.dilation_w}));
    EXPECT_EQ(mode, CUDNN_CROSS_CORRELATION);
    EXPECT_EQ(compute, CUDNN_DATA_FLOAT);
    ASSERT_EQ(cudnnGetConvolutionGroupCount(step.convolution.get(), &groups), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(groups, a.groups);
    ASSERT_EQ(cudnnGetConvolutionMathType(step.convolution.get(), &math), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(math, CUDNN_FMA_MATH) << "FP32 must not run as TF32";

    cudnnDataType_t type;
    cudnnTensorFormat_t format;
    int k, c, r, s;
    ASSERT_EQ(cudnnGetFilter4dDescriptor(step.filter.get(), &type, &format, &k, &c, &r, &s), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ((std::vector<int>{k, c, r, s}),
              (std::vector<int>{a.out_channels, layer.in.c / a.groups, a.kernel_h, a.kernel_w}));
    EXPECT_EQ(format, CUDNN_TENSOR_NCHW);
    expect_nchw(step.bias.get(), 1, Dims{a.out_channels, 1, 1}, "bias");
    EXPECT_EQ(step.has_bias, a.bias);
  }
}

TEST(CudnnPlan, PoolingAndBatchNormDescriptorsMatchTheLayer) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(
      rng, {3, 9, 10},
      {pool_layer("max", LayerKind::MaxPool, 3, 2, 1), pool_layer("avg_in", LayerKind::AvgPool, 3, 1, 1, true),
       pool_layer("avg_ex", LayerKind::AvgPool, 2, 1, 1, false), batchnorm_layer("bn", 1e-3),
       plain_layer("gap", LayerKind::GlobalAvgPool)});
  const Plan plan(net, 2);
  ASSERT_EQ(plan.steps().size(), 5u);
  const cudnnPoolingMode_t modes[] = {CUDNN_POOLING_MAX, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                      CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING};
  for (std::size_t i : {0u, 1u, 2u, 4u}) {
    const Step& step = plan.steps()[i];
    const Layer& layer = net.layers()[i];
    SCOPED_TRACE(layer.name);
    cudnnPoolingMode_t mode;
    cudnnNanPropagation_t nan;
    int wh, ww, ph, pw, sh, sw;
    ASSERT_EQ(cudnnGetPooling2dDescriptor(step.pooling.get(), &mode, &nan, &wh, &ww, &ph, &pw, &sh, &sw),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(nan, CUDNN_PROPAGATE_NAN);
    if (i == 4) {  // global: one window over the whole plane
      EXPECT_EQ(mode, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING);
      EXPECT_EQ((std::vector<int>{wh, ww, ph, pw}), (std::vector<int>{layer.in.h, layer.in.w, 0, 0}));
      continue;
    }
    const Pool2dAttrs& a = layer.pool();
    EXPECT_EQ(mode, modes[i]);
    EXPECT_EQ((std::vector<int>{wh, ww, ph, pw, sh, sw}),
              (std::vector<int>{a.kernel_h, a.kernel_w, a.pad_h, a.pad_w, a.stride_h, a.stride_w}));
  }
  const Step& bn = plan.steps()[3];
  EXPECT_EQ(bn.kind, StepKind::BatchNorm);
  EXPECT_DOUBLE_EQ(bn.epsilon, 1e-3);
  expect_nchw(bn.bn_params.get(), 1, Dims{3, 1, 1}, "batch-norm parameters");
}

// The shipped model's structure: 4 x (conv + bn + relu), 2 max pools, flatten, linear, relu,
// linear, softmax (a smaller copy, same kinds and order).
Network fashion_like(Random& rng) { return random_network(rng, {1, 12, 12}, fashion_like_layers()); }

std::vector<std::string> step_names(const Plan& plan) {
  std::vector<std::string> names;
  for (const Step& s : plan.steps()) names.push_back(s.name);
  return names;
}

TEST(CudnnPlan, FoldedBatchNormJoinsItsConvolutionAndReluInOneStep) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = fashion_like(rng);
  const Plan folded(net, 3);  // PlanOptions{}: fp32, folding on
  EXPECT_EQ(step_names(folded),
            (std::vector<std::string>{"conv1+bn1+relu1", "conv2+bn2+relu2", "pool1", "conv3+bn3+relu3",
                                      "conv4+bn4+relu4", "pool2", "flatten", "fc1+relu5", "fc2", "softmax"}));
  const Step& s = folded.steps()[0];
  EXPECT_EQ(s.kind, StepKind::Convolution);
  EXPECT_TRUE(s.folded_bn);
  EXPECT_TRUE(s.fused_relu);
  EXPECT_EQ(s.first_layer, 0u);
  EXPECT_EQ(s.last_layer, 2u);
  EXPECT_EQ(s.layer_count(), 3u);
  EXPECT_TRUE(s.has_bias);
  EXPECT_FALSE(folded.steps()[4].has_bias);  // conv4 has none; its folded form has (fold.h)
  EXPECT_TRUE(folded.steps()[4].folded_bn);
  EXPECT_FALSE(folded.steps()[7].folded_bn);
  EXPECT_TRUE(folded.steps()[7].fused_relu);
  // Every activation of a fused step (conv, bn, relu outputs) shares the step's one buffer.
  const auto& a = folded.activations();
  EXPECT_EQ(a[1].buffer, a[2].buffer);
  EXPECT_EQ(a[2].buffer, a[3].buffer);
  EXPECT_NE(a[3].buffer, a[4].buffer);
  for (std::size_t i = 1; i <= 3; ++i) expect_nchw(a[i].desc.get(), 3, Dims{8, 12, 12}, "conv1 step activation");

  const Plan unfolded(net, 3, cudnn::PlanOptions{Precision::Fp32, false});
  EXPECT_EQ(step_names(unfolded), (std::vector<std::string>{"conv1", "bn1", "relu1", "conv2", "bn2", "relu2", "pool1",
                                                            "conv3", "bn3", "relu3", "conv4", "bn4", "relu4", "pool2",
                                                            "flatten", "fc1+relu5", "fc2", "softmax"}));
  EXPECT_EQ(unfolded.steps()[1].kind, StepKind::BatchNorm);
  for (const Step& step : unfolded.steps()) EXPECT_FALSE(step.folded_bn) << step.name;
}

// A residual add joins the convolution step that feeds it (its other input becomes the fused call's
// z), with the add's own ReLU or a ReLU layer after it, whichever order the add names its inputs
// in; it stays a Binary step when another layer reads the convolution's output too, when the
// batch-norm between them is not folded, and when it adds the convolution's output to itself.
TEST(CudnnPlan, AResidualAddJoinsTheConvolutionStepThatFeedsIt) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(
      rng, {4, 6, 6},
      {conv_layer("c1", 4, 3, 1, 1), batchnorm_layer("bn1"), plain_layer("r1", LayerKind::Relu),
       conv_layer("c2", 4, 3, 1, 1), batchnorm_layer("bn2"),
       reading(make_layer("add2", LayerKind::Add, AddAttrs{}), {"bn2", "r1"}), plain_layer("r2", LayerKind::Relu),
       conv_layer("c3", 4, 1), reading(make_layer("add3", LayerKind::Add, AddAttrs{true}), {"input", "c3"}),
       conv_layer("c4", 4, 1), reading(make_layer("add4", LayerKind::Add, AddAttrs{}), {"c4", "add3"}),
       reading(make_layer("both", LayerKind::Add, AddAttrs{}), {"c4", "add4"}),  // c4 is read twice: no fusion
       conv_layer("c5", 4, 1), reading(make_layer("self", LayerKind::Add, AddAttrs{}), {"c5", "c5"}),
       plain_layer("flat", LayerKind::Flatten), linear_layer("fc1", 6), linear_layer("fc2", 6),
       reading(make_layer("add_fc", LayerKind::Add, AddAttrs{true}), {"fc1", "fc2"})});
  const auto& layers = net.layers();
  const auto index = [&](const std::string& name) {
    for (std::size_t i = 0; i < layers.size(); ++i) {
      if (layers[i].name == name) return i;
    }
    ADD_FAILURE() << name;
    return std::size_t{0};
  };
  for (Precision precision : {Precision::Fp32, Precision::Fp16}) {
    SCOPED_TRACE(precision_name(precision));
    const Plan plan(net, 3, cudnn::PlanOptions{precision, true});
    EXPECT_EQ(step_names(plan), (std::vector<std::string>{"c1+bn1+r1", "c2+bn2+add2+r2", "c3+add3", "c4", "add4",
                                                          "both", "c5", "self", "flat", "fc1", "fc2+add_fc"}));
    const std::vector<Step>& s = plan.steps();
    ASSERT_EQ(s.size(), 11u);
    // z: the activation the add reads besides the step's own (activation i + 1 is layer i's output).
    const std::vector<std::pair<std::size_t, std::pair<std::string, std::size_t>>> fused = {
        {1, {"add2", index("r1") + 1}}, {2, {"add3", 0}}, {10, {"add_fc", index("fc1") + 1}}};
    for (const auto& [k, want] : fused) {
      const Step& step = s[k];
      ASSERT_TRUE(step.residual) << step.name;
      EXPECT_EQ(step.kind, StepKind::Convolution);
      EXPECT_EQ(step.residual->layer, index(want.first)) << step.name;
      EXPECT_EQ(step.residual->z, want.second) << step.name;
      EXPECT_TRUE(step.fused_relu) << step.name << ": the ReLU layer after the add, or the add's own";
      // The add's output and the ReLU's are the step's: one buffer with the convolution's.
      for (std::size_t a = step.first_layer + 1; a <= step.output(); ++a) {
        EXPECT_EQ(plan.activations()[a].buffer, plan.activations()[step.first_layer + 1].buffer) << step.name;
      }
      expect_tensor(plan.activations()[step.residual->z].desc.get(), 3, step.out, plan.storage_type(),
                    plan.storage_format(), step.name + " z");
    }
    EXPECT_TRUE(s[1].folded_bn);
    EXPECT_EQ(s[1].last_layer, index("r2"));
    EXPECT_EQ(s[2].last_layer, index("add3"));
    for (std::size_t k : {0u, 3u, 6u, 9u}) EXPECT_FALSE(s[k].residual) << s[k].name;
    for (std::size_t k : {4u, 5u, 7u}) EXPECT_EQ(s[k].kind, StepKind::Binary) << s[k].name;
  }
  // Unfolded, the add follows a batch-norm step, not the convolution.
  const Plan unfolded(net, 3, cudnn::PlanOptions{Precision::Fp32, false});
  const std::vector<std::string> names = step_names(unfolded);
  ASSERT_GE(names.size(), 6u);
  EXPECT_EQ((std::vector<std::string>(names.begin(), names.begin() + 6)),
            (std::vector<std::string>{"c1", "bn1", "r1", "c2", "bn2", "add2"}));
  EXPECT_EQ(unfolded.steps()[5].kind, StepKind::Binary);
}

TEST(CudnnPlan, OnlyABatchNormRightAfterAConvolutionOrLinearFolds) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(
      rng, {3, 8, 8},
      {conv_layer("c1", 4, 3, 1, 1), batchnorm_layer("bn1"), pool_layer("mp", LayerKind::MaxPool, 2, 2),
       batchnorm_layer("bn2"), plain_layer("r", LayerKind::Relu), plain_layer("flat", LayerKind::Flatten),
       linear_layer("fc", 6), batchnorm_layer("bn3"), plain_layer("r3", LayerKind::Relu)});
  const Plan plan(net, 2);
  EXPECT_EQ(step_names(plan), (std::vector<std::string>{"c1+bn1", "mp", "bn2", "r", "flat", "fc+bn3+r3"}));
  EXPECT_TRUE(plan.steps()[0].folded_bn);
  EXPECT_FALSE(plan.steps()[0].fused_relu);
  EXPECT_EQ(plan.steps()[2].kind, StepKind::BatchNorm);
  EXPECT_TRUE(plan.steps()[5].folded_bn);
  EXPECT_TRUE(plan.steps()[5].fused_relu);
  // A folded batch-norm is not checked against cuDNN's CUDNN_BN_MIN_EPSILON (the host folds it in
  // double); an unfolded one is. The Network refuses an epsilon <= 0 itself, so an epsilon below
  // cuDNN's minimum exists only where that minimum is positive (cuDNN 8: 1e-5; cuDNN 9: 0).
  if (CUDNN_BN_MIN_EPSILON > 0.0) {
    const Network bad_eps =
        random_network(rng, {2, 4, 4}, {conv_layer("c", 2, 1), batchnorm_layer("bn", CUDNN_BN_MIN_EPSILON / 2)});
    EXPECT_NO_THROW(Plan(bad_eps, 1));
    EXPECT_THROW(Plan(bad_eps, 1, cudnn::PlanOptions{Precision::Fp32, false}), ModelError);
  }
}

// Every descriptor's data type, layout and math type for each precision (plan.h's table).
TEST(CudnnPlan, PrecisionDecidesTypesLayoutsAndMath) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (const Network& net : {fashion_like(rng), random_network(rng, {3, 8, 8}, graph_zoo_layers())})
    for (Precision precision : {Precision::Fp32, Precision::Tf32, Precision::Fp16}) {
      for (bool fold : {true, false}) {
        SCOPED_TRACE(std::string(precision_name(precision)) + (fold ? ", folded" : ", unfolded") + ", " +
                     std::to_string(net.layers().size()) + " layers");
        const bool half = precision == Precision::Fp16;
        const cudnnDataType_t storage = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
        const cudnnTensorFormat_t format = half ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
        Plan plan(net, 4, cudnn::PlanOptions{precision, fold});
        EXPECT_EQ(plan.storage_type(), storage);
        EXPECT_EQ(plan.storage_format(), format);
        for (int n : {4, 1}) {
          plan.set_batch(n);
          const auto& acts = plan.activations();
          expect_tensor(acts[0].desc.get(), n, net.input().dims, storage, format, "input");
          for (std::size_t i = 1; i < acts.size(); ++i) {
            const Layer& layer = net.layers()[i - 1];
            // The softmax's output is float NCHW in every precision; everything before it is storage.
            const bool is_softmax = layer.kind == LayerKind::Softmax;
            expect_tensor(acts[i].desc.get(), n, layer.out, is_softmax ? CUDNN_DATA_FLOAT : storage,
                          is_softmax ? CUDNN_TENSOR_NCHW : format, layer.name);
            EXPECT_EQ(acts[i].type, is_softmax ? CUDNN_DATA_FLOAT : storage) << layer.name;
            EXPECT_GE(plan.buffer_bytes()[acts[i].buffer], layer.out.size() * acts[i].element_bytes()) << layer.name;
          }
          for (const Step& step : plan.steps()) {
            SCOPED_TRACE(step.name);
            switch (step.kind) {
              case StepKind::Convolution: {
                int ph, pw, sh, sw, dh, dw;
                cudnnConvolutionMode_t mode;
                cudnnDataType_t compute, filter_type;
                cudnnMathType_t math;
                cudnnTensorFormat_t filter_format;
                int k, c, r, s;
                ASSERT_EQ(cudnnGetConvolution2dDescriptor(step.convolution.get(), &ph, &pw, &sh, &sw, &dh, &dw, &mode,
                                                          &compute),
                          CUDNN_STATUS_SUCCESS);
                EXPECT_EQ(compute, CUDNN_DATA_FLOAT) << "float accumulation (PSEUDO_HALF_CONFIG for fp16)";
                ASSERT_EQ(cudnnGetConvolutionMathType(step.convolution.get(), &math), CUDNN_STATUS_SUCCESS);
                EXPECT_EQ(math, precision == Precision::Fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH);
                ASSERT_EQ(cudnnGetFilter4dDescriptor(step.filter.get(), &filter_type, &filter_format, &k, &c, &r, &s),
                          CUDNN_STATUS_SUCCESS);
                EXPECT_EQ(filter_type, storage);
                EXPECT_EQ(filter_format, format);
                expect_tensor(step.bias.get(), 1, Dims{k, 1, 1}, storage, format, "bias");
                // Fp16 only: the same convolution in float NCHW with FMA math (the executor's
                // per-layer fallback), its x and y re-set by set_batch like the activations.
                const cudnn::Step::FloatFallback& f = step.fallback;
                if (!half) {
                  EXPECT_FALSE(f.x || f.y || f.filter || f.convolution || f.bias)
                      << "fallback descriptors in fp32/tf32";
                  break;
                }
                ASSERT_TRUE(f.x && f.y && f.filter && f.convolution && f.bias);
                expect_nchw(f.x.get(), n, step.in, "fallback x");
                expect_nchw(f.y.get(), n, net.layers()[step.first_layer].out, "fallback y");
                expect_nchw(f.bias.get(), 1, Dims{k, 1, 1}, "fallback bias");
                int fk, fc, fr, fs;
                ASSERT_EQ(cudnnGetFilter4dDescriptor(f.filter.get(), &filter_type, &filter_format, &fk, &fc, &fr, &fs),
                          CUDNN_STATUS_SUCCESS);
                EXPECT_EQ(filter_type, CUDNN_DATA_FLOAT);
                EXPECT_EQ(filter_format, CUDNN_TENSOR_NCHW);
                EXPECT_EQ((std::vector<int>{fk, fc, fr, fs}), (std::vector<int>{k, c, r, s}));
                int fph, fpw, fsh, fsw, fdh, fdw;
                ASSERT_EQ(cudnnGetConvolution2dDescriptor(f.convolution.get(), &fph, &fpw, &fsh, &fsw, &fdh, &fdw,
                                                          &mode, &compute),
                          CUDNN_STATUS_SUCCESS);
                EXPECT_EQ((std::vector<int>{fph, fpw, fsh, fsw, fdh, fdw}), (std::vector<int>{ph, pw, sh, sw, dh, dw}));
                EXPECT_EQ(compute, CUDNN_DATA_FLOAT);
                ASSERT_EQ(cudnnGetConvolutionMathType(f.convolution.get(), &math), CUDNN_STATUS_SUCCESS);
                EXPECT_EQ(math, CUDNN_FMA_MATH) << "the fallback computes as fp32 does";
                break;
              }
              case StepKind::BatchNorm: {
                const Tensor4d bn = read(step.bn_params.get());
                EXPECT_EQ(bn.type, CUDNN_DATA_FLOAT) << "batch-norm parameters stay float for half data";
                EXPECT_EQ((std::vector<int>{bn.n, bn.c, bn.h, bn.w}), (std::vector<int>{1, step.in.c, 1, 1}));
                break;
              }
              case StepKind::Reorder:
                ASSERT_TRUE(half) << "only NHWC activations are reordered before a flatten";
                EXPECT_EQ(step.name, "flatten");
                expect_tensor(step.nchw_input.get(), n, step.in, CUDNN_DATA_HALF, CUDNN_TENSOR_NCHW, "reorder target");
                EXPECT_NE(acts[step.output()].buffer, acts[step.input()].buffer);
                break;
              case StepKind::Alias:
                EXPECT_FALSE(half) << "an NHWC flatten of 3x3 features must reorder";
                EXPECT_EQ(acts[step.output()].buffer, acts[step.input()].buffer);
                break;
              case StepKind::Softmax:
                if (half) {
                  expect_tensor(step.nchw_input.get(), n, step.in, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                "softmax float input");
                  EXPECT_GE(plan.buffer_bytes()[step.scratch], step.in.size() * sizeof(float));
                } else {
                  EXPECT_FALSE(step.nchw_input) << "a float NCHW softmax input needs no conversion";
                }
                break;
              case StepKind::Binary: {
                cudnnOpTensorOp_t op;
                cudnnDataType_t compute;
                cudnnNanPropagation_t nan;
                ASSERT_EQ(cudnnGetOpTensorDescriptor(step.op_tensor.get(), &op, &compute, &nan), CUDNN_STATUS_SUCCESS);
                const Layer& layer = net.layers()[step.first_layer];
                EXPECT_EQ(op, layer.kind == LayerKind::Add ? CUDNN_OP_TENSOR_ADD : CUDNN_OP_TENSOR_MUL);
                EXPECT_EQ(compute, CUDNN_DATA_FLOAT) << "float compute for float and half data";
                EXPECT_EQ(nan, CUDNN_PROPAGATE_NAN);
                EXPECT_EQ(step.fused_relu, layer.kind == LayerKind::Add && layer.add().relu);
                ASSERT_EQ(step.inputs.size(), 2u);
                EXPECT_EQ(step.inputs, layer.sources);
                break;
              }
              case StepKind::Concat: {
                // Each slice: its input's shape with the whole output's strides, at its first channel.
                const Layer& layer = net.layers()[step.first_layer];
                const Tensor4d whole = read(acts[step.output()].desc.get());
                ASSERT_EQ(step.slices.size(), layer.in_dims.size());
                int channel = 0;
                for (std::size_t k = 0; k < step.slices.size(); ++k) {
                  const Tensor4d t = read(step.slices[k].desc.get());
                  EXPECT_EQ((std::vector<int>{t.n, t.c, t.h, t.w}),
                            (std::vector<int>{n, layer.in_dims[k].c, layer.out.h, layer.out.w}));
                  EXPECT_EQ((std::vector<int>{t.ns, t.cs, t.hs, t.ws}),
                            (std::vector<int>{whole.ns, whole.cs, whole.hs, whole.ws}));
                  EXPECT_EQ(t.type, storage);
                  EXPECT_EQ(step.slices[k].offset_bytes, static_cast<std::size_t>(channel) *
                                                             static_cast<std::size_t>(whole.cs) *
                                                             acts[step.output()].element_bytes());
                  channel += layer.in_dims[k].c;
                }
                break;
              }
              case StepKind::Upsample: {
                // Phase (i, j), row-major: the input's shape, the whole output's strides times the
                // scales, starting at output row i, column j.
                const Layer& layer = net.layers()[step.first_layer];
                const Tensor4d whole = read(acts[step.output()].desc.get());
                const UpsampleAttrs& a = layer.upsample();
                ASSERT_EQ(step.slices.size(), static_cast<std::size_t>(a.scale_h * a.scale_w));
                for (int i = 0; i < a.scale_h; ++i) {
                  for (int j = 0; j < a.scale_w; ++j) {
                    const Step::Slice& slice = step.slices[static_cast<std::size_t>(i * a.scale_w + j)];
                    const Tensor4d t = read(slice.desc.get());
                    EXPECT_EQ((std::vector<int>{t.n, t.c, t.h, t.w}),
                              (std::vector<int>{n, layer.in.c, layer.in.h, layer.in.w}));
                    EXPECT_EQ((std::vector<int>{t.ns, t.cs, t.hs, t.ws}),
                              (std::vector<int>{whole.ns, whole.cs, whole.hs * a.scale_h, whole.ws * a.scale_w}));
                    EXPECT_EQ(t.type, storage);
                    EXPECT_EQ(slice.offset_bytes, static_cast<std::size_t>(i * whole.hs + j * whole.ws) *
                                                      acts[step.output()].element_bytes());
                  }
                }
                break;
              }
              case StepKind::Pad: {
                // One slice: the input's shape with the whole output's strides, at row top, column left.
                const Layer& layer = net.layers()[step.first_layer];
                const Tensor4d whole = read(acts[step.output()].desc.get());
                ASSERT_EQ(step.slices.size(), 1u);
                const Tensor4d t = read(step.slices[0].desc.get());
                EXPECT_EQ((std::vector<int>{t.n, t.c, t.h, t.w}),
                          (std::vector<int>{n, layer.in.c, layer.in.h, layer.in.w}));
                EXPECT_EQ((std::vector<int>{t.ns, t.cs, t.hs, t.ws}),
                          (std::vector<int>{whole.ns, whole.cs, whole.hs, whole.ws}));
                EXPECT_EQ(step.slices[0].offset_bytes,
                          static_cast<std::size_t>(layer.pad().top * whole.hs + layer.pad().left * whole.ws) *
                              acts[step.output()].element_bytes());
                EXPECT_EQ(step.pad_value, layer.pad().value);
                break;
              }
              case StepKind::ChannelShuffle: {
                // The input as [n, groups, k, H*W] with its own strides (H and W as one dimension),
                // the output as the same shape with the two channel strides transposed: element
                // [b, i, j, p] is input channel i * k + j and output channel j * groups + i.
                const Layer& layer = net.layers()[step.first_layer];
                const Tensor4d whole_in = read(acts[step.input()].desc.get());
                const Tensor4d whole_out = read(acts[step.output()].desc.get());
                const int g = layer.channel_shuffle().groups, k = layer.in.c / g;
                const Tensor4d x = read(step.shuffle_in.get()), y = read(step.shuffle_out.get());
                for (const Tensor4d& t : {whole_in, whole_out}) EXPECT_EQ(t.hs, layer.in.w * t.ws) << "H, W not one";
                EXPECT_EQ((std::vector<int>{x.n, x.c, x.h, x.w}), (std::vector<int>{n, g, k, layer.in.h * layer.in.w}));
                EXPECT_EQ((std::vector<int>{y.n, y.c, y.h, y.w}), (std::vector<int>{n, g, k, layer.in.h * layer.in.w}));
                EXPECT_EQ((std::vector<int>{x.ns, x.cs, x.hs, x.ws}),
                          (std::vector<int>{whole_in.ns, k * whole_in.cs, whole_in.cs, whole_in.ws}));
                EXPECT_EQ((std::vector<int>{y.ns, y.cs, y.hs, y.ws}),
                          (std::vector<int>{whole_out.ns, whole_out.cs, g * whole_out.cs, whole_out.ws}));
                EXPECT_EQ(x.type, acts[step.input()].type);
                EXPECT_EQ(y.type, acts[step.input()].type);
                EXPECT_EQ(acts[step.output()].format, acts[step.input()].format);
                EXPECT_NE(acts[step.output()].buffer, acts[step.input()].buffer);
                break;
              }
              case StepKind::ChannelSlice: {
                // The input's channels [begin, end): the output's shape with the whole input's
                // strides, starting at channel begin (begin * H * W elements in NCHW, begin in NHWC).
                const Layer& layer = net.layers()[step.first_layer];
                const ChannelSliceAttrs& a = layer.channel_slice();
                const Tensor4d whole_in = read(acts[step.input()].desc.get());
                const Tensor4d x = read(step.slice_in.get());
                EXPECT_EQ((std::vector<int>{x.n, x.c, x.h, x.w}),
                          (std::vector<int>{n, a.end - a.begin, layer.in.h, layer.in.w}));
                EXPECT_EQ(layer.out.c, a.end - a.begin);
                EXPECT_EQ((std::vector<int>{x.ns, x.cs, x.hs, x.ws}),
                          (std::vector<int>{whole_in.ns, whole_in.cs, whole_in.hs, whole_in.ws}));
                EXPECT_EQ(step.slice_in_offset_bytes, static_cast<std::size_t>(a.begin) *
                                                          static_cast<std::size_t>(whole_in.cs) *
                                                          acts[step.input()].element_bytes());
                if (half) {
                  EXPECT_EQ(whole_in.cs, 1) << "NHWC: the channel offset is begin elements";
                }
                EXPECT_EQ(x.type, acts[step.input()].type);
                EXPECT_EQ(acts[step.output()].type, acts[step.input()].type);
                EXPECT_EQ(acts[step.output()].format, acts[step.input()].format);
                EXPECT_NE(acts[step.output()].buffer, acts[step.input()].buffer);
                break;
              }
              case StepKind::Resize:  // the kernels read and write the input's type and layout
              case StepKind::LayerNorm:
                EXPECT_EQ(acts[step.output()].format, acts[step.input()].format);
                [[fallthrough]];
              case StepKind::Pointwise:
                EXPECT_EQ(acts[step.output()].type, acts[step.input()].type);
                EXPECT_NE(acts[step.output()].buffer, acts[step.input()].buffer);
                break;
              case StepKind::Pooling:
                // The zoo's ceil-mode max pool overhangs (8x8 -> 5x5): it must get the padded buffer.
                if (step.name == "max") {
                  EXPECT_TRUE(step.padded) << "the overhanging ceil-mode max pool is not padded";
                }
                if (step.padded) {  // ceil mode: the padded buffer, and the input's view of it
                  const Tensor4d whole = read(step.padded.get());
                  const Tensor4d view = read(step.padded_view.get());
                  const Dims& p = step.padded_dims;
                  EXPECT_EQ((std::vector<int>{whole.n, whole.c, whole.h, whole.w}),
                            (std::vector<int>{n, p.c, p.h, p.w}));
                  EXPECT_EQ((std::vector<int>{view.n, view.c, view.h, view.w}),
                            (std::vector<int>{n, step.in.c, step.in.h, step.in.w}));
                  EXPECT_EQ((std::vector<int>{view.ns, view.cs, view.hs, view.ws}),
                            (std::vector<int>{whole.ns, whole.cs, whole.hs, whole.ws}));
                  EXPECT_EQ(whole.type, storage);
                  EXPECT_GE(plan.buffer_bytes()[step.padded_buffer], p.size() * acts[step.input()].element_bytes());
                }
                break;
              case StepKind::Relu: break;
            }
          }
        }
      }
    }
}

TEST(CudnnPlan, Fp16RejectsAConvolutionAfterASoftmax) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(
      rng, {4, 5, 5},
      {plain_layer("sm", LayerKind::Softmax), conv_layer("c_after", 3, 1), plain_layer("r", LayerKind::Relu)});
  EXPECT_NO_THROW(Plan(net, 2, cudnn::PlanOptions{Precision::Tf32, true}));
  try {
    Plan plan(net, 2, cudnn::PlanOptions{Precision::Fp16, true});
    ADD_FAILURE() << "fp16 accepted a convolution of a float softmax output";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("'c_after'"), std::string::npos) << e.what();
  }
  // Elementwise layers after a softmax run in float (its output type).
  const Network tail = random_network(rng, {4, 5, 5},
                                      {conv_layer("c", 6, 1), plain_layer("sm", LayerKind::Softmax),
                                       plain_layer("r", LayerKind::Relu), pool_layer("mp", LayerKind::MaxPool, 2, 1)});
  const Plan plan(tail, 2, cudnn::PlanOptions{Precision::Fp16, true});
  for (std::size_t i = 2; i <= 4; ++i) {
    expect_tensor(plan.activations()[i].desc.get(), 2, tail.layers()[i - 1].out, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                  tail.layers()[i - 1].name);
  }
}

TEST(CudnnPlan, ErrorsNameTheLayer) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  // Below cuDNN's minimum epsilon, where it is positive (the Network refuses an epsilon <= 0 itself).
  if (CUDNN_BN_MIN_EPSILON > 0.0) {
    const Network bad_eps = random_network(rng, {2, 4, 4}, {batchnorm_layer("bn_bad", CUDNN_BN_MIN_EPSILON / 2)});
    try {
      Plan plan(bad_eps, 1);
      ADD_FAILURE() << "an epsilon below CUDNN_BN_MIN_EPSILON was accepted";
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("'bn_bad'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("CUDNN_BN_MIN_EPSILON"), std::string::npos) << e.what();
    }
  }
  // An activation of 50001 x 50001 floats: beyond what cuDNN's 4-d tensor descriptors take.
  const Network huge = random_network(rng, {1, 1, 1}, {conv_layer("huge", 1, 1, 1, 25000)});
  try {
    Plan plan(huge, 1);
    ADD_FAILURE() << "a 50001x50001 activation was accepted";
  } catch (const GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("'huge'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cudnnSetTensor4dDescriptor"), std::string::npos) << e.what();
  }
  // The shape check itself: cuDNN's shape against the network's, both in the message.
  const Network net = random_network(rng, {3, 9, 9}, {conv_layer("c1", 4, 3)});
  const Layer& c1 = net.layers()[0];
  EXPECT_NO_THROW(cudnn::require_network_dims(c1, "test", 2, 2, 4, 7, 7));
  try {
    cudnn::require_network_dims(c1, "cudnnGetConvolution2dForwardOutputDim", 2, 2, 4, 8, 8);
    ADD_FAILURE() << "a shape mismatch was accepted";
  } catch (const ModelError& e) {
    const std::string m = e.what();
    for (const char* part : {"'c1'", "2x4x8x8", "2x4x7x7", "cudnnGetConvolution2dForwardOutputDim"}) {
      EXPECT_NE(m.find(part), std::string::npos) << part << " missing in: " << m;
    }
  }
}

TEST(CudnnPlan, LoadedLibrariesMatchTheHeaders) {
  EXPECT_EQ(cudnnGetVersion() / 10000, static_cast<std::size_t>(CUDNN_MAJOR)) << "cuDNN " << cudnnGetVersion();
  EXPECT_EQ(cudnnGetCudartVersion() / 1000, static_cast<std::size_t>(CUDART_VERSION / 1000))
      << "cuDNN was built for CUDA " << cudnnGetCudartVersion();
  EXPECT_EQ(cudnnOpsVersionCheck(), CUDNN_STATUS_SUCCESS) << "libcudnn_ops missing or of another version";
  EXPECT_EQ(cudnnCnnVersionCheck(), CUDNN_STATUS_SUCCESS) << "libcudnn_cnn missing or of another version";
}

}  // namespace
}  // namespace infer::test
