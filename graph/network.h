// The network: a graph of layers, listed in the order they run, with their attributes and
// parameters, and the per-sample shape of every activation. Backends execute a Network; nothing
// here knows about devices.
//
// Graph: each layer reads the outputs of earlier layers (Layer::inputs, by name; "input" is the
// network's input), by default the layer before it, so a plain list of layers is a chain. The
// network's output is the last layer's. Activation a is the network input (a = 0) or the output of
// layer a - 1: Layer::sources holds these indices, and backends index their buffers the same way.
//
// Layout conventions (same as PyTorch):
//   activations   NCHW, float32, batch dimension outermost; shapes below are per sample (C,H,W)
//   conv weight   [K, C/groups, R, S]         linear weight [out, in]
//   batch-norm    scale, shift, running mean, running variance: [C] each
#pragma once

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include "infer/preprocessing.h"
#include "graph/ops.h"

namespace infer {

// Shape of one sample's activation. A flat vector of n features is {n, 1, 1}.
struct Dims {
  int c = 0;
  int h = 0;
  int w = 0;
  std::size_t size() const { return static_cast<std::size_t>(c) * h * w; }
  bool operator==(const Dims& o) const { return c == o.c && h == o.h && w == o.w; }
  bool operator!=(const Dims& o) const { return !(*this == o); }
};
std::string to_string(const Dims& d);                           // "32x14x14"
std::string shape_string(const std::vector<long long>& shape);  // "[32, 1, 3, 3]"
std::string value_string(double v);  // for messages: "NaN", "+Inf", "-Inf", or the number ("-0.5", "1e+39")

const char* layer_kind_name(LayerKind k);  // the model file's spelling (ops.h): "conv2d", "maxpool", ...

struct Conv2dAttrs {
  int out_channels = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;
  bool bias = true;
};

// MaxPool and AvgPool. Output size uses floor division, as PyTorch's default, or with ceil_mode
// ceiling division, as PyTorch's ceil_mode=True: a last window that overhangs the padded input is
// kept as long as it starts inside the input or its left padding (pool_output_size).
struct Pool2dAttrs {
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  bool count_include_pad = true;  // AvgPool only: padded zeros count in the divisor (PyTorch default);
                                  // the overhang of a ceil_mode window never counts
  bool ceil_mode = false;
};

struct BatchNormAttrs {
  double epsilon = 1e-5;
};

struct LinearAttrs {
  int out_features = 0;
  bool bias = true;
};

// Add: out = a + b (same shapes), then a ReLU when relu is set (a residual block's sum and ReLU).
struct AddAttrs {
  bool relu = false;
};

// Upsample: nearest-neighbour by whole factors, out[y][x] = in[y / scale_h][x / scale_w] (U-Net's
// decoder; ONNX Resize in nearest mode with integer scales).
struct UpsampleAttrs {
  int scale_h = 2;
  int scale_w = 2;
};

// Pad: the input inside a border of `value`, top rows above, left columns before, and so on (the
// asymmetric padding of TensorFlow-style SAME convolutions and pooling: the ONNX import puts one
// before such a layer; -inf before a max pooling). value is a number or -inf / +inf, not NaN.
struct PadAttrs {
  int top = 0;
  int left = 0;
  int bottom = 0;
  int right = 0;
  float value = 0.0f;
};

// Adaptive average pooling to out_h x out_w (PyTorch's AdaptiveAvgPool2d): output row i averages
// input rows [floor(i H / out_h), ceil((i + 1) H / out_h)), and likewise for columns.
struct AdaptivePoolAttrs {
  int out_h = 1;
  int out_w = 1;
};
// The first and one past the last input row (or column) of output row i.
constexpr int adaptive_begin(int i, int in, int out) { return static_cast<int>(static_cast<long long>(i) * in / out); }
constexpr int adaptive_end(int i, int in, int out) {
  return static_cast<int>((static_cast<long long>(i + 1) * in + out - 1) / out);
}

// Channel shuffle (ShuffleNet; PyTorch's nn.ChannelShuffle): the C = groups * k channels of each
// sample seen as a [groups, k] matrix and transposed to [k, groups], so output channel j * groups + i
// is input channel i * k + j (i < groups, j < k). groups >= 1 must divide C; groups = 1 (or C) is
// the identity. The shape is the input's.
struct ChannelShuffleAttrs {
  int groups = 1;
};

// Channel slice (ShuffleNet V2's x.chunk(2, dim=1); ONNX Slice or Split on the channels): output
// channel c is input channel begin + c, for 0 <= begin < end <= C; the output is (end - begin) x H x W.
struct ChannelSliceAttrs {
  int begin = 0;
  int end = 0;
};

// Resize: bilinear interpolation to out_h x out_w (ONNX Resize in linear mode, PyTorch's
// F.interpolate(mode="bilinear")); graph/resize_formula.h has the formula, for every backend.
// Output row y samples input row (y + 1/2) H / out_h - 1/2 (half-pixel centres; below 0: 0), or
// y (H - 1) / (out_h - 1) with align_corners (0 when out_h = 1), and mixes the two rows around it by
// their distance; the last row stands in for the one past it. Columns likewise.
struct ResizeAttrs {
  int out_h = 1;
  int out_w = 1;
  bool align_corners = false;
};

// LayerNorm: each pixel's C values normalised over the channels, y_c = weight_c (x_c - m) /
// sqrt(v + epsilon) + bias_c, m and v the mean and the (biased) variance of that pixel's x_c.
// PyTorch's LayerNorm over the last axis of a channels-last tensor (ConvNeXt's blocks and its
// LayerNorm2d); ONNX LayerNormalization on such a view, or its decomposed form.
struct LayerNormAttrs {
  double epsilon = 1e-5;
};

// The two parameters of a pointwise op (ops.h, INFER_POINTWISE_OPS; the formulas are in
// pointwise_formula.h): clip's min and max (ReLU6 is 0, 6; an infinite bound is none), hardsigmoid's
// alpha and beta (PyTorch's are 1/6 and 1/2; ONNX's default alpha is 0.2), hardswish's fixed 1/6
// and 1/2; unused by sigmoid and silu.
struct PointwiseAttrs {
  float a = 0.0f;
  float b = 0.0f;
};

// A pointwise op's parameters when none is given: its row's defaults (NaN where a key is required).
constexpr PointwiseAttrs default_pointwise_attrs(PointwiseOp op) {
  return {pointwise_keys(op).default_a, pointwise_keys(op).default_b};
}

// What breaks the op's rule (ops.h), with the values found ("min and max must be numbers with
// min <= max, found 2 and 1"); empty when they follow it.
std::string pointwise_params_problem(PointwiseOp op, const PointwiseAttrs& p);

using LayerAttrs = std::variant<std::monostate, Conv2dAttrs, Pool2dAttrs, BatchNormAttrs, LinearAttrs, AddAttrs,
                                UpsampleAttrs, PadAttrs, AdaptivePoolAttrs, ChannelShuffleAttrs, ChannelSliceAttrs,
                                PointwiseAttrs, ResizeAttrs, LayerNormAttrs>;

// Parameters of a layer. Which vectors are used depends on the kind:
//   Conv2d / Linear: weight, bias (empty when the layer has no bias)
//   BatchNorm: weight (scale, gamma), bias (shift, beta), running_mean, running_var
//   LayerNorm: weight (gamma), bias (beta), one per channel
struct LayerParams {
  std::vector<float> weight;
  std::vector<float> bias;
  std::vector<float> running_mean;
  std::vector<float> running_var;
};

// The name that stands for the network's input in Layer::inputs; no layer may have it.
inline constexpr const char* kNetworkInputName = "input";

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::Relu;
  LayerAttrs attrs;
  LayerParams params;
  Dims in;   // the first input's shape; filled by connect()
  Dims out;  // filled by connect()
  // The layers this one reads, by name (kNetworkInputName: the network input), in order; empty:
  // the layer before it (the network input for the first layer).
  std::vector<std::string> inputs;
  // Filled by connect():
  std::vector<std::size_t> sources;  // the activations read, one per input (see the top of this file)
  std::vector<Dims> in_dims;         // their shapes; in == in_dims[0]
  int readers = 0;                   // later layers reading this output, +1 for the last layer (the network's output)

  const Conv2dAttrs& conv() const { return std::get<Conv2dAttrs>(attrs); }
  const Pool2dAttrs& pool() const { return std::get<Pool2dAttrs>(attrs); }
  const BatchNormAttrs& batchnorm() const { return std::get<BatchNormAttrs>(attrs); }
  const LinearAttrs& linear() const { return std::get<LinearAttrs>(attrs); }
  const AddAttrs& add() const { return std::get<AddAttrs>(attrs); }
  const UpsampleAttrs& upsample() const { return std::get<UpsampleAttrs>(attrs); }
  const PadAttrs& pad() const { return std::get<PadAttrs>(attrs); }
  const AdaptivePoolAttrs& adaptive() const { return std::get<AdaptivePoolAttrs>(attrs); }
  const ChannelShuffleAttrs& channel_shuffle() const { return std::get<ChannelShuffleAttrs>(attrs); }
  const ChannelSliceAttrs& channel_slice() const { return std::get<ChannelSliceAttrs>(attrs); }
  const PointwiseAttrs& pointwise() const { return std::get<PointwiseAttrs>(attrs); }
  const ResizeAttrs& resize() const { return std::get<ResizeAttrs>(attrs); }
  const LayerNormAttrs& layernorm() const { return std::get<LayerNormAttrs>(attrs); }
};

// What the network expects at its input and what its outputs mean.
// How an image becomes the network's input, as the model declares it ([input] in the model file;
// preprocess.h does it). The defaults are torchvision's evaluation transform without its
// hard-coded sizes: no inversion, the shorter side resized, the centre cropped.
// InvertMode, ResizeMode, ChannelOrder, AlphaMode: infer/preprocessing.h (public: the API overrides them).
struct Preprocessing {
  ResizeMode resize = ResizeMode::Crop;
  int resize_size = 0;  // Crop: the shorter side before cropping; 0: max(height, width)
  ChannelOrder channel_order = ChannelOrder::Rgb;
  InvertMode invert = InvertMode::No;
  AlphaMode alpha = AlphaMode::Drop;  // applied when the image is decoded; a model file's default
                                      // follows its resize: Drop for crop, White otherwise
};
const char* resize_mode_name(ResizeMode m);      // "trim_fit", "stretch", "crop"
const char* channel_order_name(ChannelOrder o);  // "rgb", "bgr"
const char* invert_mode_name(InvertMode m);      // "auto", "yes", "no"
const char* alpha_mode_name(AlphaMode m);        // "white", "drop"

struct InputSpec {
  Dims dims;                        // C x H x W
  std::vector<float> mean;          // per channel, for pixels scaled to [0,1]
  std::vector<float> std;           // per channel
  std::vector<std::string> labels;  // one per output class
  Preprocessing preprocessing;
};

// Named shape of one parameter tensor, as the model file must provide it.
struct ParamShape {
  std::string name;              // "conv1.weight"
  std::vector<long long> shape;  // [32, 1, 3, 3]
  std::vector<float> LayerParams::*field;
};

// Resolves the graph of `layers` for a network input of shape `input`: each layer's sources and
// input shapes from its inputs, its output shape (infer_output_dims) and its reader count. Throws
// ModelError naming the layer: two layers with one name, a layer named "input", an input that names
// no layer or a later one (layers are listed in the order they run), the wrong number of inputs for
// the op, shapes the op cannot combine, or a layer other than the last whose output nobody reads.
void connect(const Dims& input, std::vector<Layer>& layers);

// True when layer i's output is read by layer i + 1 alone, and layer i + 1 reads nothing else: the
// two can be fused into one step (a convolution and its batch-norm or ReLU, ...).
bool feeds_only_next(const std::vector<Layer>& layers, std::size_t i);

class Network {
 public:
  // Validates the graph of layers (connect()), every parameter's size and values (unusable_params()) and the
  // input's mean and std (finite; std positive, and (pixel - mean) / std within float32 for pixels
  // in [0, 1]), and computes each layer's input and output shape. Throws ModelError naming the layer,
  // the expected and the found shape or value.
  Network(std::string name, InputSpec input, std::vector<Layer> layers);

  const std::string& name() const { return name_; }
  const InputSpec& input() const { return input_; }
  const std::vector<Layer>& layers() const { return layers_; }
  Dims output_dims() const { return layers_.empty() ? input_.dims : layers_.back().out; }

 private:
  std::string name_;
  InputSpec input_;
  std::vector<Layer> layers_;
};

// Output shape of a layer for the given input shapes; throws ModelError if the inputs are not valid
// for the layer (a window larger than the padded input, channels not divisible by groups, shapes an
// add cannot combine, the wrong number of inputs, ...).
Dims infer_output_dims(const Layer& layer, const std::vector<Dims>& in);
inline Dims infer_output_dims(const Layer& layer, const Dims& in) {
  return infer_output_dims(layer, std::vector<Dims>{in});
}

// The parameter tensors a layer needs for a given input shape, in file order.
std::vector<ParamShape> expected_params(const Layer& layer, const Dims& in);

// Why the values of a layer's parameters (its expected_params() for input shape `in`, already of
// the right sizes) cannot be computed with, or "" when they can: the first NaN or infinity of a
// tensor, a negative batch-norm running variance, each with its flat and multi-dimensional index
// ("tensor 'conv.weight' has NaN at index 17 ([1, 0, 2, 2]); ..."), or a batch-norm whose scale
// weight / sqrt(running_var + epsilon) or shift is beyond float32 ("channel 3: ...").
std::string unusable_params(const Layer& layer, const Dims& in);

// Output size of a sliding window along one axis (floor division, as PyTorch and cuDNN).
inline int window_output_size(int in, int kernel, int stride, int pad, int dilation) {
  // In 64 bits: attributes of up to 1e6 overflow int here. A window wider than the padded input gives
  // 0: C's division truncates toward zero, so (negative) / stride + 1 would round up to 1.
  const long long span = static_cast<long long>(in) + 2LL * pad - (static_cast<long long>(dilation) * (kernel - 1) + 1);
  if (span < 0 || stride <= 0) return 0;
  return static_cast<int>(span / stride + 1);
}

// Output size of a pooling window along one axis: floor division (window_output_size) or, with
// ceil_mode, ceiling division less a last window that would start in the right padding (PyTorch).
inline int pool_output_size(int in, int kernel, int stride, int pad, bool ceil_mode) {
  const int floor_size = window_output_size(in, kernel, stride, pad, 1);
  if (!ceil_mode || floor_size == 0) return floor_size;
  const long long span = static_cast<long long>(in) + 2LL * pad - kernel;
  long long size = (span + stride - 1) / stride + 1;
  if ((size - 1) * stride >= static_cast<long long>(in) + pad) --size;
  return static_cast<int>(size);
}

}  // namespace infer
