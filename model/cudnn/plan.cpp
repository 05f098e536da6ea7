// Planning: maps layers to cuDNN calls and builds their descriptors. No device is touched here.
//
// Fusion rule: a conv2d or linear layer directly followed by a relu layer becomes one
// Convolution step (cudnnConvolutionBiasActivationForward with ReLU). Nothing else is fused: a
// batch-norm between a convolution and its ReLU keeps three steps, because the batch-norm is run
// unfolded, with its own raw parameters, by cudnnBatchNormalizationForwardInference.
#include "plan.h"

#include <cmath>
#include <stdexcept>

namespace infer::cudnn {
namespace {

// layer: the layer whose output desc describes, null for the network input. The context string is
// only built on failure (this runs in forward() when the batch size changes).
void set_nchw(const Layer* layer, cudnnTensorDescriptor_t desc, int n, const Dims& d) {
  INFER_CUDNN_CHECK(layer ? layer_context(*layer) : std::string("network input"),
                    cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, d.c, d.h, d.w));
}

}  // namespace

const char* step_kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::Convolution: return "convolution";
    case StepKind::BatchNorm: return "batchnorm";
    case StepKind::Relu: return "relu";
    case StepKind::Pooling: return "pooling";
    case StepKind::Softmax: return "softmax";
    case StepKind::Alias: return "alias";
  }
  return "unknown";
}

std::string layer_context(const Layer& layer) { return "layer '" + layer.name + "'"; }

void require_network_dims(const Layer& layer, const char* call, int expected_n, int n, int c, int h, int w) {
  const Dims found{c, h, w};
  if (n == expected_n && found == layer.out) return;
  throw ModelError("layer '" + layer.name + "' (" + layer_kind_name(layer.kind) + "): " + call +
                   " computes the output " + std::to_string(n) + "x" + to_string(found) + ", the network expects " +
                   std::to_string(expected_n) + "x" + to_string(layer.out) + " (input " + to_string(layer.in) +
                   "); the cuDNN backend cannot run this layer as the model describes it, use the CPU backend");
}

Plan::Plan(const Network& network, int max_batch) : network_(&network), max_batch_(max_batch), batch_(max_batch) {
  if (max_batch < 1) throw std::invalid_argument("max_batch must be at least 1, found " + std::to_string(max_batch));
  const std::vector<Layer>& layers = network.layers();

  relu_ = ActivationDesc::create("ReLU activation");
  // NaN propagates, as in PyTorch's relu (and the CPU backend): a NaN must never become a 0.
  INFER_CUDNN_CHECK("ReLU activation",
                    cudnnSetActivationDescriptor(relu_.get(), CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  identity_ = ActivationDesc::create("identity activation");
  INFER_CUDNN_CHECK("identity activation", cudnnSetActivationDescriptor(identity_.get(), CUDNN_ACTIVATION_IDENTITY,
                                                                        CUDNN_PROPAGATE_NAN, 0.0));

  // Activation 0 is the input; activation i + 1 the output of layer i. Buffers are assigned by
  // the plan_* functions below (aliases reuse one).
  activations_.resize(layers.size() + 1);
  activations_[0].dims = network.input().dims;
  activations_[0].buffer = new_buffer(network.input().dims);
  activations_[0].desc = TensorDesc::create("network input");
  set_nchw(nullptr, activations_[0].desc.get(), max_batch_, activations_[0].dims);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    Activation& a = activations_[i + 1];
    a.dims = layers[i].out;
    a.desc = TensorDesc::create(layer_context(layers[i]));
    set_nchw(&layers[i], a.desc.get(), max_batch_, a.dims);
  }

  for (std::size_t i = 0; i < layers.size();) {
    const Layer& layer = layers[i];
    switch (layer.kind) {
      case LayerKind::Conv2d:
      case LayerKind::Linear: {
        const bool fuse = i + 1 < layers.size() && layers[i + 1].kind == LayerKind::Relu;
        plan_convolution(i, fuse);
        break;
      }
      case LayerKind::BatchNorm: plan_batchnorm(i); break;
      case LayerKind::Relu: plan_single(i, StepKind::Relu); break;
      case LayerKind::MaxPool:
      case LayerKind::AvgPool:
      case LayerKind::GlobalAvgPool: plan_pooling(i); break;
      case LayerKind::Softmax: plan_single(i, StepKind::Softmax); break;
      case LayerKind::Flatten: plan_single(i, StepKind::Alias); break;
    }
    i = steps_.back().last_layer + 1;
  }
}

std::size_t Plan::new_buffer(const Dims& dims) {
  buffer_floats_.push_back(dims.size());
  return buffer_floats_.size() - 1;
}

void Plan::set_batch(int n) {
  if (n < 1 || n > max_batch_) {
    throw std::invalid_argument("batch size " + std::to_string(n) + " is outside [1, " + std::to_string(max_batch_) +
                                "]");
  }
  if (n == batch_) return;
  const std::vector<Layer>& layers = network_->layers();
  for (std::size_t a = 0; a < activations_.size(); ++a) {
    set_nchw(a == 0 ? nullptr : &layers[a - 1], activations_[a].desc.get(), n, activations_[a].dims);
  }
  batch_ = n;
}

// Linear runs as a convolution: its input [n, in] is the tensor [n, in, 1, 1] and its weight
// [out, in] the filter [out, in, 1, 1]. That keeps the backend on one library (cuDNN; no cuBLAS to
// deploy, version-check and probe) and gives linear+relu the same fused bias+activation call as
// conv+relu.
void Plan::plan_convolution(std::size_t index, bool fuse_relu) {
  const Layer& layer = network_->layers()[index];
  const std::string context = layer_context(layer);
  Conv2dAttrs a;  // linear: 1x1, stride 1, no padding
  if (layer.kind == LayerKind::Conv2d) {
    a = layer.conv();
  } else {
    a.out_channels = layer.linear().out_features;
    a.bias = layer.linear().bias;
  }

  Step step;
  step.kind = StepKind::Convolution;
  step.first_layer = index;
  step.last_layer = fuse_relu ? index + 1 : index;
  step.name = fuse_relu ? layer.name + "+" + network_->layers()[index + 1].name : layer.name;
  step.in = layer.in;
  step.fused_relu = fuse_relu;
  step.has_bias = a.bias;

  step.filter = FilterDesc::create(context);
  INFER_CUDNN_CHECK(context, cudnnSetFilter4dDescriptor(step.filter.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                        a.out_channels, layer.in.c / a.groups, a.kernel_h,
                                                        a.kernel_w));
  step.convolution = ConvolutionDesc::create(context);
  // Cross-correlation is what PyTorch (and every framework) calls convolution.
  INFER_CUDNN_CHECK(context, cudnnSetConvolution2dDescriptor(step.convolution.get(), a.pad_h, a.pad_w, a.stride_h,
                                                             a.stride_w, a.dilation_h, a.dilation_w,
                                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  INFER_CUDNN_CHECK(context, cudnnSetConvolutionGroupCount(step.convolution.get(), a.groups));
  // FMA math restricts cuDNN to FP32 FMA kernels. CUDNN_DEFAULT_MATH would allow TF32 tensor
  // cores on Ampere and later (10-bit mantissa products), which breaks FP32 agreement with the CPU.
  INFER_CUDNN_CHECK(context, cudnnSetConvolutionMathType(step.convolution.get(), CUDNN_FMA_MATH));

  step.bias = TensorDesc::create(context);
  INFER_CUDNN_CHECK(context, cudnnSetTensor4dDescriptor(step.bias.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                                                        a.out_channels, 1, 1));

  int n = 0, c = 0, h = 0, w = 0;
  INFER_CUDNN_CHECK(context, cudnnGetConvolution2dForwardOutputDim(step.convolution.get(),
                                                                   activations_[index].desc.get(),
                                                                   step.filter.get(), &n, &c, &h, &w));
  require_network_dims(layer, "cudnnGetConvolution2dForwardOutputDim", max_batch_, n, c, h, w);
  step.out = Dims{c, h, w};

  // The convolution's own output and the ReLU's share one buffer: the fused call writes the
  // ReLU's output, and a forward pass that stops after the convolution writes the convolution's.
  const std::size_t buffer = new_buffer(layer.out);
  activations_[index + 1].buffer = buffer;
  if (fuse_relu) activations_[index + 2].buffer = buffer;
  steps_.push_back(std::move(step));
}

void Plan::plan_batchnorm(std::size_t index) {
  const Layer& layer = network_->layers()[index];
  const std::string context = layer_context(layer);
  const double epsilon = layer.batchnorm().epsilon;
  if (!std::isfinite(epsilon) || epsilon < CUDNN_BN_MIN_EPSILON) {
    throw ModelError("layer '" + layer.name + "' (batchnorm): epsilon = " + std::to_string(epsilon) +
                     " is below cuDNN's minimum CUDNN_BN_MIN_EPSILON = " + std::to_string(CUDNN_BN_MIN_EPSILON) +
                     "; use the epsilon the model was trained with (PyTorch's default is 1e-5)");
  }
  Step step;
  step.kind = StepKind::BatchNorm;
  step.first_layer = step.last_layer = index;
  step.name = layer.name;
  step.in = layer.in;
  step.out = layer.in;  // elementwise
  step.epsilon = epsilon;
  step.bn_params = TensorDesc::create(context);
  INFER_CUDNN_CHECK(context, cudnnDeriveBNTensorDescriptor(step.bn_params.get(), activations_[index].desc.get(),
                                                           CUDNN_BATCHNORM_SPATIAL));
  activations_[index + 1].buffer = new_buffer(layer.out);
  steps_.push_back(std::move(step));
}

// ReLU, softmax (elementwise shapes) and flatten (an alias of its input's buffer).
void Plan::plan_single(std::size_t index, StepKind kind) {
  const Layer& layer = network_->layers()[index];
  Step step;
  step.kind = kind;
  step.first_layer = step.last_layer = index;
  step.name = layer.name;
  step.in = layer.in;
  step.out = kind == StepKind::Alias ? Dims{static_cast<int>(layer.in.size()), 1, 1} : layer.in;
  if (step.out != layer.out) require_network_dims(layer, layer_kind_name(layer.kind), max_batch_, max_batch_,
                                                  step.out.c, step.out.h, step.out.w);
  activations_[index + 1].buffer = kind == StepKind::Alias ? activations_[index].buffer : new_buffer(layer.out);
  steps_.push_back(std::move(step));
}

// Max pooling: cuDNN never lets a padded position win (it pads with -inf), as PyTorch.
// Average pooling: the divisor counts padded positions or not, per Pool2dAttrs::count_include_pad.
// Global average pooling: one average window over the whole H x W plane.
void Plan::plan_pooling(std::size_t index) {
  const Layer& layer = network_->layers()[index];
  const std::string context = layer_context(layer);
  Pool2dAttrs a;
  cudnnPoolingMode_t mode = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  if (layer.kind == LayerKind::GlobalAvgPool) {
    a.kernel_h = a.stride_h = layer.in.h;
    a.kernel_w = a.stride_w = layer.in.w;
  } else {
    a = layer.pool();
    if (layer.kind == LayerKind::MaxPool) {
      mode = CUDNN_POOLING_MAX;
    } else if (!a.count_include_pad) {
      mode = CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    }
  }
  Step step;
  step.kind = StepKind::Pooling;
  step.first_layer = step.last_layer = index;
  step.name = layer.name;
  step.in = layer.in;
  step.pooling = PoolingDesc::create(context);
  INFER_CUDNN_CHECK(context, cudnnSetPooling2dDescriptor(step.pooling.get(), mode, CUDNN_PROPAGATE_NAN, a.kernel_h,
                                                         a.kernel_w, a.pad_h, a.pad_w, a.stride_h, a.stride_w));
  int n = 0, c = 0, h = 0, w = 0;
  INFER_CUDNN_CHECK(context, cudnnGetPooling2dForwardOutputDim(step.pooling.get(), activations_[index].desc.get(),
                                                               &n, &c, &h, &w));
  require_network_dims(layer, "cudnnGetPooling2dForwardOutputDim", max_batch_, n, c, h, w);
  step.out = Dims{c, h, w};
  activations_[index + 1].buffer = new_buffer(layer.out);
  steps_.push_back(std::move(step));
}

}  // namespace infer::cudnn
