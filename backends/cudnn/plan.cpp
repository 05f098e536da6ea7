// Planning: maps layers to cuDNN calls and builds their descriptors. No device is touched here.
//
// Fusion rules:
//   conv/linear + relu               one Convolution step (cudnnConvolutionBiasActivationForward, ReLU)
//   conv/linear + batch-norm [+ relu] with fold_batchnorm and a foldable batch-norm (fold.h): one
//                                    Convolution step with folded weights and bias (the executor
//                                    folds them on the host), ReLU fused when it follows
//   conv/linear [+ batch-norm] + add [+ relu]
//                                    the add joins the step when it reads the convolution's (or
//                                    its folded batch-norm's) output and one other activation of
//                                    the storage type: that one is the fused call's z (ResNet's
//                                    shortcut), with alpha2 = 1; the add's own ReLU or a ReLU layer
//                                    after it is fused too
//   anything else                    one step per layer; an unfolded batch-norm runs with its own
//                                    raw parameters in cudnnBatchNormalizationForwardInference
// A layer is fused into the step of the layer before it only when it alone reads that layer's
// output and reads nothing else (feeds_only_next, network.h): a fused step never writes the
// intermediate results, so no other branch of the graph may need them.
// Every activation a fused step covers shares the step's one output buffer: a forward pass that
// stops inside the step writes the intermediate result there (see executor.cpp).
#include "backends/cudnn/plan.h"

#include <cmath>
#include <stdexcept>

#include "graph/fold.h"
#include "graph/model_error.h"

namespace infer::cudnn {
namespace {

// layer: the layer whose output desc describes, null for the network input. The context string is
// only built on failure (this runs in forward() when the batch size changes).
void set_tensor(const Layer* layer, cudnnTensorDescriptor_t desc, int n, const Dims& d, cudnnDataType_t type,
                cudnnTensorFormat_t format) {
  INFER_CUDNN_CHECK(layer ? layer_context(*layer) : std::string("network input"),
                    cudnnSetTensor4dDescriptor(desc, format, type, n, d.c, d.h, d.w));
}

// The filter, convolution and bias descriptors of one convolution layer for a data type, layout and
// math type. Cross-correlation is what PyTorch (and every framework) calls convolution. The compute
// type is float for every precision: for half data that is cuDNN's PSEUDO_HALF_CONFIG (half
// storage, float accumulation), which tensor cores run and which keeps sums of many terms accurate.
void set_convolution(const std::string& context, const Layer& layer, const Conv2dAttrs& a, cudnnDataType_t type,
                     cudnnTensorFormat_t format, cudnnMathType_t math, FilterDesc& filter, ConvolutionDesc& convolution,
                     TensorDesc& bias) {
  filter = FilterDesc::create(context);
  INFER_CUDNN_CHECK(context, cudnnSetFilter4dDescriptor(filter.get(), type, format, a.out_channels,
                                                        layer.in.c / a.groups, a.kernel_h, a.kernel_w));
  convolution = ConvolutionDesc::create(context);
  INFER_CUDNN_CHECK(
      context, cudnnSetConvolution2dDescriptor(convolution.get(), a.pad_h, a.pad_w, a.stride_h, a.stride_w,
                                               a.dilation_h, a.dilation_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  INFER_CUDNN_CHECK(context, cudnnSetConvolutionGroupCount(convolution.get(), a.groups));
  INFER_CUDNN_CHECK(context, cudnnSetConvolutionMathType(convolution.get(), math));
  bias = TensorDesc::create(context);
  INFER_CUDNN_CHECK(context, cudnnSetTensor4dDescriptor(bias.get(), format, type, 1, a.out_channels, 1, 1));
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
    case StepKind::Reorder: return "reorder";
    case StepKind::Binary: return "binary";
    case StepKind::Concat: return "concat";
    case StepKind::Pointwise: return "pointwise";
    case StepKind::Resize: return "resize";
    case StepKind::LayerNorm: return "layernorm";
    case StepKind::Upsample: return "upsample";
    case StepKind::Pad: return "pad";
    case StepKind::ChannelShuffle: return "channel_shuffle";
    case StepKind::ChannelSlice: return "channel_slice";
  }
  return "unknown";
}

std::string layer_context(const Layer& layer) { return "layer '" + layer.name + "'"; }

std::size_t type_bytes(cudnnDataType_t type) { return type == CUDNN_DATA_HALF ? 2 : 4; }

void require_network_dims(const Layer& layer, const char* call, int expected_n, int n, int c, int h, int w) {
  const Dims found{c, h, w};
  if (n == expected_n && found == layer.out) return;
  throw ModelError("layer '" + layer.name + "' (" + layer_kind_name(layer.kind) + "): " + call +
                   " computes the output " + std::to_string(n) + "x" + to_string(found) + ", the network expects " +
                   std::to_string(expected_n) + "x" + to_string(layer.out) + " (input " + to_string(layer.in) +
                   "); the cuDNN backend cannot run this layer as the model describes it, use the CPU backend");
}

Plan::Plan(const Network& network, int max_batch, const PlanOptions& options)
    : network_(&network),
      options_(options),
      max_batch_(max_batch),
      batch_(max_batch),
      storage_type_(options.precision == Precision::Fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT),
      storage_format_(options.precision == Precision::Fp16 ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW) {
  if (max_batch < 1) throw std::invalid_argument("max_batch must be at least 1, found " + std::to_string(max_batch));
  const std::vector<Layer>& layers = network.layers();

  relu_ = ActivationDesc::create("ReLU activation");
  // NaN propagates, as in PyTorch's relu (and the CPU backend): a NaN must never become a 0.
  INFER_CUDNN_CHECK("ReLU activation",
                    cudnnSetActivationDescriptor(relu_.get(), CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  identity_ = ActivationDesc::create("identity activation");
  INFER_CUDNN_CHECK("identity activation",
                    cudnnSetActivationDescriptor(identity_.get(), CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0.0));

  // Activation 0 is the input; activation i + 1 the output of layer i. Types, layouts and buffers
  // are assigned by the plan_* functions below (aliases reuse a buffer), in layer order.
  activations_.resize(layers.size() + 1);
  for (std::size_t i = 0; i < activations_.size(); ++i) {
    activations_[i].dims = i == 0 ? network.input().dims : layers[i - 1].out;
    activations_[i].desc = TensorDesc::create(i == 0 ? std::string("network input") : layer_context(layers[i - 1]));
  }
  activations_[0].buffer = new_buffer(network.input().dims, storage_type_);
  activations_[0].type = storage_type_;
  activations_[0].format = storage_format_;
  set_tensor(nullptr, activations_[0].desc.get(), max_batch_, activations_[0].dims, storage_type_, storage_format_);

  for (std::size_t i = 0; i < layers.size();) {
    const Layer& layer = layers[i];
    switch (layer.kind) {
      case LayerKind::Conv2d:
      case LayerKind::Linear: plan_convolution(i); break;
      case LayerKind::BatchNorm: plan_batchnorm(i); break;
      case LayerKind::Relu: plan_single(i, StepKind::Relu); break;
      case LayerKind::MaxPool:
      case LayerKind::AvgPool:
      case LayerKind::GlobalAvgPool:
      case LayerKind::AdaptiveAvgPool: plan_pooling(i); break;
      case LayerKind::Softmax: plan_softmax(i); break;
      case LayerKind::Flatten: plan_flatten(i); break;
      case LayerKind::Add:
      case LayerKind::Mul: plan_binary(i); break;
      case LayerKind::Concat: plan_concat(i); break;
      case LayerKind::Upsample: plan_upsample(i); break;
      case LayerKind::ChannelShuffle: plan_channel_shuffle(i); break;
      case LayerKind::ChannelSlice: plan_channel_slice(i); break;
      case LayerKind::Resize: plan_own_kernel(i, StepKind::Resize); break;
      case LayerKind::LayerNorm: plan_own_kernel(i, StepKind::LayerNorm); break;
      case LayerKind::Pad:
        plan_pad(i);
        break;
        INFER_CASE_POINTWISE_OPS plan_pointwise(i);
        break;
    }
    i = steps_.back().last_layer + 1;
  }
}

std::size_t Plan::new_buffer(const Dims& dims, cudnnDataType_t type) {
  buffer_bytes_.push_back(dims.size() * type_bytes(type));
  return buffer_bytes_.size() - 1;
}

// Output of layer `index` (activation index + 1): its type and layout, and its descriptor at
// max_batch.
void Plan::set_output_type(std::size_t index, cudnnDataType_t type, cudnnTensorFormat_t format) {
  Activation& a = activations_[index + 1];
  a.type = type;
  a.format = format;
  set_tensor(&network_->layers()[index], a.desc.get(), max_batch_, a.dims, type, format);
}

void Plan::set_batch(int n) {
  if (n < 1 || n > max_batch_) {
    throw std::invalid_argument("batch size " + std::to_string(n) + " is outside [1, " + std::to_string(max_batch_) +
                                "]");
  }
  if (n == batch_) return;
  const std::vector<Layer>& layers = network_->layers();
  for (std::size_t a = 0; a < activations_.size(); ++a) {
    const Activation& act = activations_[a];
    set_tensor(a == 0 ? nullptr : &layers[a - 1], act.desc.get(), n, act.dims, act.type, act.format);
  }
  for (const Step& step : steps_) {
    const Layer* layer = &layers[step.first_layer];
    if (step.nchw_input) set_tensor(layer, step.nchw_input.get(), n, step.in, step.nchw_type, CUDNN_TENSOR_NCHW);
    if (step.fallback.x) {
      set_tensor(layer, step.fallback.x.get(), n, step.in, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW);
      set_tensor(layer, step.fallback.y.get(), n, layer->out, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW);
    }
    if (!step.slices.empty()) set_slices(step, n);
    if (step.padded) set_padded(step, n);
    if (step.shuffle_in) set_shuffle(step, n);
    if (step.slice_in) set_channel_slice(step, n);
  }
  batch_ = n;
}

// A step for layer `index` alone, of `kind`, reading the layer's input; its output shape is the
// input's (elementwise) until the caller sets it.
Step Plan::layer_step(std::size_t index, StepKind kind) const {
  const Layer& layer = network_->layers()[index];
  Step step;
  step.kind = kind;
  step.first_layer = step.last_layer = index;
  step.name = layer.name;
  step.inputs = layer.sources;
  step.in = layer.in;
  step.out = layer.in;
  return step;
}

// Linear runs as a convolution: its input [n, in] is the tensor [n, in, 1, 1] and its weight
// [out, in] the filter [out, in, 1, 1]. That keeps the backend on one library (cuDNN; no cuBLAS to
// deploy, version-check and probe) and gives linear+relu the same fused bias+activation call as
// conv+relu.
void Plan::plan_convolution(std::size_t index) {
  const std::vector<Layer>& layers = network_->layers();
  const Layer& layer = layers[index];
  const bool fold_bn = options_.fold_batchnorm && batchnorm_foldable(layers, index + 1);
  std::size_t last = index + (fold_bn ? 1 : 0);
  const std::optional<Step::ResidualAdd> residual = residual_add(last);
  if (residual) last = residual->layer;
  const bool add_relu = residual && layers[last].add().relu;
  const bool relu_layer = !add_relu && feeds_only_next(layers, last) && layers[last + 1].kind == LayerKind::Relu;
  const std::string context = layer_context(layer);
  const Activation& x = input_of(index);
  require_storage_inputs(index);
  Conv2dAttrs a;  // linear: 1x1, stride 1, no padding
  if (layer.kind == LayerKind::Conv2d) {
    a = layer.conv();
  } else {
    a.out_channels = layer.linear().out_features;
    a.bias = layer.linear().bias;
  }

  Step step = layer_step(index, StepKind::Convolution);
  step.last_layer = last + (relu_layer ? 1 : 0);
  for (std::size_t i = index + 1; i <= step.last_layer; ++i) step.name += "+" + layers[i].name;
  step.folded_bn = fold_bn;
  step.fused_relu = add_relu || relu_layer;
  step.residual = residual;
  step.has_bias = a.bias;

  // Fp32: FMA math restricts cuDNN to FP32 FMA kernels. CUDNN_DEFAULT_MATH would allow TF32 tensor
  // cores on Ampere and later (10-bit mantissa products), which breaks FP32 agreement with the CPU.
  // Tf32 and Fp16 ask for tensor cores explicitly (TENSOR_OP_MATH, not ..._ALLOW_CONVERSION: float
  // data is never converted down to half).
  const cudnnMathType_t math = options_.precision == Precision::Fp32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  set_convolution(context, layer, a, storage_type_, storage_format_, math, step.filter, step.convolution, step.bias);

  int n = 0, c = 0, h = 0, w = 0;
  INFER_CUDNN_CHECK(context, cudnnGetConvolution2dForwardOutputDim(step.convolution.get(), x.desc.get(),
                                                                   step.filter.get(), &n, &c, &h, &w));
  require_network_dims(layer, "cudnnGetConvolution2dForwardOutputDim", max_batch_, n, c, h, w);
  step.out = layers[step.last_layer].out;  // a batch-norm and a ReLU keep the shape

  if (storage_type_ == CUDNN_DATA_HALF) plan_float_fallback(step, a);

  // The convolution's own output, the batch-norm's, the add's and the ReLU's share one buffer: the fused
  // call writes the last one, and a forward pass that stops inside the step writes the one it
  // stops at.
  const std::size_t buffer = new_buffer(layer.out, storage_type_);
  for (std::size_t i = index; i <= step.last_layer; ++i) {
    activations_[i + 1].buffer = buffer;
    set_output_type(i, storage_type_, storage_format_);
  }
  steps_.push_back(std::move(step));
}

// Layer last + 1 joins the convolution step ending at `last` as its residual add when it is an add
// that reads last's output, which nothing else reads, and another activation in the storage type
// and layout (the add's shape rule makes it the same shape; network.cpp). Adding the two in either
// order is the same float sum, so either input may be the convolution's.
std::optional<Step::ResidualAdd> Plan::residual_add(std::size_t last) const {
  const std::vector<Layer>& layers = network_->layers();
  if (last + 1 >= layers.size() || layers[last].readers != 1) return std::nullopt;
  const Layer& add = layers[last + 1];
  if (add.kind != LayerKind::Add) return std::nullopt;
  const std::size_t own = last + 1;  // the activation `last` writes
  const std::size_t a = add.sources[0], b = add.sources[1];
  if ((a == own) == (b == own)) return std::nullopt;  // neither, or the output added to itself
  const std::size_t z = a == own ? b : a;
  if (activations_[z].type != storage_type_ || activations_[z].format != storage_format_) return std::nullopt;
  return Step::ResidualAdd{last + 1, z};
}

// The float NCHW form of an Fp16 convolution step (Step::fallback): FMA math, as Fp32, since the
// fallback is there to run where the half tensor-op kernels do not.
void Plan::plan_float_fallback(Step& step, const Conv2dAttrs& a) const {
  const Layer& layer = network_->layers()[step.first_layer];
  const std::string context = layer_context(layer);
  Step::FloatFallback& f = step.fallback;
  f.x = TensorDesc::create(context);
  set_tensor(&layer, f.x.get(), max_batch_, layer.in, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW);
  f.y = TensorDesc::create(context);
  set_tensor(&layer, f.y.get(), max_batch_, layer.out, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW);
  set_convolution(context, layer, a, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CUDNN_FMA_MATH, f.filter, f.convolution,
                  f.bias);
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
  const Activation& x = input_of(index);
  Step step = layer_step(index, StepKind::BatchNorm);
  step.epsilon = epsilon;
  step.bn_params = TensorDesc::create(context);
  // Float parameters for float and half data alike (cuDNN derives CUDNN_DATA_FLOAT for half x).
  INFER_CUDNN_CHECK(context,
                    cudnnDeriveBNTensorDescriptor(step.bn_params.get(), x.desc.get(), CUDNN_BATCHNORM_SPATIAL));
  activations_[index + 1].buffer = new_buffer(layer.out, x.type);
  set_output_type(index, x.type, x.format);
  steps_.push_back(std::move(step));
}

// ReLU: elementwise, in the input's type and layout.
void Plan::plan_single(std::size_t index, StepKind kind) {
  const Layer& layer = network_->layers()[index];
  const Activation& x = input_of(index);
  Step step = layer_step(index, kind);
  if (step.out != layer.out)
    require_network_dims(layer, layer_kind_name(layer.kind), max_batch_, max_batch_, step.out.c, step.out.h,
                         step.out.w);
  activations_[index + 1].buffer = new_buffer(layer.out, x.type);
  set_output_type(index, x.type, x.format);
  steps_.push_back(std::move(step));
}

// Flatten: [C, H, W] as [C*H*W, 1, 1] in the network's (NCHW) feature order. An NCHW activation,
// or an NHWC one with H = W = 1, already has that order: an alias of the input's buffer. An NHWC
// activation with H*W > 1 is reordered into NCHW first (a Reorder step into a new buffer); its
// flat output is then the same memory in either layout and keeps the input's format.
void Plan::plan_flatten(std::size_t index) {
  const Layer& layer = network_->layers()[index];
  const std::string context = layer_context(layer);
  const Activation& x = input_of(index);
  Step step = layer_step(index, StepKind::Alias);  // Reorder when the input needs it, below
  step.out = Dims{static_cast<int>(layer.in.size()), 1, 1};
  if (step.out != layer.out)
    require_network_dims(layer, "flatten", max_batch_, max_batch_, step.out.c, step.out.h, step.out.w);
  const bool reorder = x.format == CUDNN_TENSOR_NHWC && layer.in.h * layer.in.w > 1;
  step.kind = reorder ? StepKind::Reorder : StepKind::Alias;
  if (reorder) {
    step.nchw_type = x.type;
    step.nchw_input = TensorDesc::create(context);
    set_tensor(&layer, step.nchw_input.get(), max_batch_, layer.in, x.type, CUDNN_TENSOR_NCHW);
  }
  activations_[index + 1].buffer = reorder ? new_buffer(layer.out, x.type) : x.buffer;
  set_output_type(index, x.type, x.format);
  steps_.push_back(std::move(step));
}

bool Plan::ends_in_class_softmax() const {
  if (steps_.empty()) return false;
  const Step& last = steps_.back();
  return last.kind == StepKind::Softmax && last.first_layer + 1 == network_->layers().size() && last.in.h == 1 &&
         last.in.w == 1;
}

// Softmax over the channels, always in float: a half input is converted by the executor into the
// step's float NCHW scratch buffer (nchw_input) first. The output is float NCHW.
void Plan::plan_softmax(std::size_t index) {
  const Layer& layer = network_->layers()[index];
  const Activation& x = input_of(index);
  Step step = layer_step(index, StepKind::Softmax);
  if (step.out != layer.out)
    require_network_dims(layer, "softmax", max_batch_, max_batch_, step.out.c, step.out.h, step.out.w);
  const bool convert = x.type != CUDNN_DATA_FLOAT || x.format != CUDNN_TENSOR_NCHW;
  if (convert) {
    step.nchw_type = CUDNN_DATA_FLOAT;
    step.nchw_input = TensorDesc::create(layer_context(layer));
    set_tensor(&layer, step.nchw_input.get(), max_batch_, layer.in, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW);
    step.scratch = new_buffer(layer.in, CUDNN_DATA_FLOAT);
  }
  activations_[index + 1].buffer = new_buffer(layer.out, CUDNN_DATA_FLOAT);
  set_output_type(index, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW);
  steps_.push_back(std::move(step));
}

// Max pooling: cuDNN never lets a padded position win (it pads with -inf), as PyTorch; ceil mode
// through a copy into a larger buffer (Step::padded).
// Average pooling: the divisor counts padded positions or not, per Pool2dAttrs::count_include_pad.
// Global average pooling: one average window over the whole H x W plane.
void Plan::plan_pooling(std::size_t index) {
  const Layer& layer = network_->layers()[index];
  const std::string context = layer_context(layer);
  const Activation& x = input_of(index);
  Pool2dAttrs a;
  cudnnPoolingMode_t mode = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
  if (layer.kind == LayerKind::GlobalAvgPool) {
    a.kernel_h = a.stride_h = layer.in.h;
    a.kernel_w = a.stride_w = layer.in.w;
  } else if (layer.kind == LayerKind::AdaptiveAvgPool) {
    // Windows of one size, side by side, only where the output divides the input; otherwise they
    // differ in size (and may overlap), which no cuDNN pooling descriptor describes.
    const AdaptivePoolAttrs& ad = layer.adaptive();
    if (layer.in.h % ad.out_h != 0 || layer.in.w % ad.out_w != 0) {
      throw ModelError(context + " (adaptive_avgpool): an output of " + std::to_string(ad.out_h) + "x" +
                       std::to_string(ad.out_w) + " that does not divide the input " + std::to_string(layer.in.h) +
                       "x" + std::to_string(layer.in.w) +
                       " pools windows of different sizes, which the cuDNN backend does not run; use --device cpu");
    }
    a.kernel_h = a.stride_h = layer.in.h / ad.out_h;
    a.kernel_w = a.stride_w = layer.in.w / ad.out_w;
  } else {
    a = layer.pool();
    if (layer.kind == LayerKind::MaxPool) {
      mode = CUDNN_POOLING_MAX;
    } else if (!a.count_include_pad) {
      mode = CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    }
  }
  Step step = layer_step(index, StepKind::Pooling);
  step.pooling = PoolingDesc::create(context);
  INFER_CUDNN_CHECK(context, cudnnSetPooling2dDescriptor(step.pooling.get(), mode, CUDNN_PROPAGATE_NAN, a.kernel_h,
                                                         a.kernel_w, a.pad_h, a.pad_w, a.stride_h, a.stride_w));
  // Ceil mode: floor division over the input grown by the last window's overhang gives the same
  // windows. For a max, the added cells hold -inf and never win; an average would count them.
  const int extra_h = std::max(0, (layer.out.h - 1) * a.stride_h + a.kernel_h - (layer.in.h + 2 * a.pad_h));
  const int extra_w = std::max(0, (layer.out.w - 1) * a.stride_w + a.kernel_w - (layer.in.w + 2 * a.pad_w));
  cudnnTensorDescriptor_t pooled = x.desc.get();
  if (extra_h > 0 || extra_w > 0) {
    if (layer.kind != LayerKind::MaxPool) {
      throw ModelError(context + " (" + layer_kind_name(layer.kind) +
                       "): ceil_mode average pooling whose last window "
                       "overhangs the padded input is not supported by the cuDNN backend (cuDNN pools with floor "
                       "division, and its divisor would count the overhang); use --device cpu");
    }
    step.padded_dims = Dims{layer.in.c, layer.in.h + extra_h, layer.in.w + extra_w};
    step.padded = TensorDesc::create(context);
    step.padded_view = TensorDesc::create(context);
    step.padded_buffer = new_buffer(step.padded_dims, x.type);
    set_padded(step, max_batch_);
    pooled = step.padded.get();
  }
  int n = 0, c = 0, h = 0, w = 0;
  INFER_CUDNN_CHECK(context, cudnnGetPooling2dForwardOutputDim(step.pooling.get(), pooled, &n, &c, &h, &w));
  require_network_dims(layer, "cudnnGetPooling2dForwardOutputDim", max_batch_, n, c, h, w);
  step.out = Dims{c, h, w};
  activations_[index + 1].buffer = new_buffer(layer.out, x.type);
  set_output_type(index, x.type, x.format);
  steps_.push_back(std::move(step));
}

const Activation& Plan::input_of(std::size_t index, std::size_t k) const {
  return activations_[network_->layers()[index].sources[k]];
}

void Plan::require_storage_inputs(std::size_t index) const {
  const Layer& layer = network_->layers()[index];
  for (std::size_t a : layer.sources) {
    if (activations_[a].type != storage_type_ || activations_[a].format != storage_format_) {
      throw ModelError(layer_context(layer) + " (" + layer_kind_name(layer.kind) +
                       ") reads a softmax's output; with "
                       "--precision " +
                       precision_name(options_.precision) + " a softmax's output is float and " +
                       layer_kind_name(layer.kind) + " reads " + (storage_type_ == CUDNN_DATA_HALF ? "half" : "float") +
                       ", use --precision fp32 or tf32");
    }
  }
}

// Add and mul: C = A op B in the storage type, computed in float (cudnnOpTensor's compute type for
// float and half data). A mul by one value per channel has B of [n, C, 1, 1]: cudnnOpTensor
// broadcasts each dimension of B that is 1. An add's ReLU is a second call, in place.
void Plan::plan_binary(std::size_t index) {
  const Layer& layer = network_->layers()[index];
  const std::string context = layer_context(layer);
  require_storage_inputs(index);
  Step step = layer_step(index, StepKind::Binary);
  step.out = layer.out;
  step.op_tensor = OpTensorDesc::create(context);
  const cudnnOpTensorOp_t op = layer.kind == LayerKind::Add ? CUDNN_OP_TENSOR_ADD : CUDNN_OP_TENSOR_MUL;
  INFER_CUDNN_CHECK(context,
                    cudnnSetOpTensorDescriptor(step.op_tensor.get(), op, CUDNN_DATA_FLOAT, CUDNN_PROPAGATE_NAN));
  step.fused_relu = layer.kind == LayerKind::Add && layer.add().relu;
  activations_[index + 1].buffer = new_buffer(layer.out, storage_type_);
  set_output_type(index, storage_type_, storage_format_);
  steps_.push_back(std::move(step));
}

// Every pointwise op (sigmoid, clip, hardsigmoid, hardswish, silu, ...): one kernel (kernels.h)
// with the CPU's formula (pointwise_formula.h), in the input's type and layout. cuDNN's legacy
// activations have sigmoid, a clipped ReLU (lower bound 0 only) and swish, but no hard-sigmoid or
// hard-swish; one kernel for all keeps one path to test.
void Plan::plan_pointwise(std::size_t index) {
  const Layer& layer = network_->layers()[index];
  const Activation& x = input_of(index);
  Step step = layer_step(index, StepKind::Pointwise);
  step.pointwise_op = static_cast<int>(pointwise_op(layer.kind));
  step.pointwise_a = layer.pointwise().a;
  step.pointwise_b = layer.pointwise().b;
  activations_[index + 1].buffer = new_buffer(layer.out, x.type);
  set_output_type(index, x.type, x.format);
  steps_.push_back(std::move(step));
}

// A layer run by one of the project's kernels (kernels.h), in the input's type and layout, where
// cuDNN's legacy API has nothing: the bilinear resize with the CPU's formula (resize_formula.h;
// cuDNN's spatial transformer samples zeros outside the input, where a resize repeats the edge) and
// the layer normalisation over the channels (cuDNN's normalisation takes its statistics as inputs).
void Plan::plan_own_kernel(std::size_t index, StepKind kind) {
  const Layer& layer = network_->layers()[index];
  const Activation& x = input_of(index);
  Step step = layer_step(index, kind);
  activations_[index + 1].buffer = new_buffer(layer.out, x.type);
  set_output_type(index, x.type, x.format);
  steps_.push_back(std::move(step));
}

// The padded input of a ceil-mode max pooling for n samples: the whole buffer, and the input's
// shape inside it with the buffer's strides (its top-left corner; the rest stays -inf).
void Plan::set_padded(const Step& step, int n) const {
  const Layer& layer = network_->layers()[step.first_layer];
  const Activation& x = input_of(step.first_layer);
  const Dims p = step.padded_dims;
  set_tensor(&layer, step.padded.get(), n, p, x.type, x.format);
  const bool nhwc = x.format == CUDNN_TENSOR_NHWC;
  INFER_CUDNN_CHECK(
      layer_context(layer),
      cudnnSetTensor4dDescriptorEx(step.padded_view.get(), x.type, n, layer.in.c, layer.in.h, layer.in.w,
                                   p.c * p.h * p.w, nhwc ? 1 : p.h * p.w, nhwc ? p.w * p.c : p.w, nhwc ? p.c : 1));
}

}  // namespace infer::cudnn
