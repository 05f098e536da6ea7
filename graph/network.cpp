#include "graph/network.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "graph/model_error.h"
#include "graph/fold.h"

namespace infer {
namespace {

std::size_t element_count(const std::vector<long long>& shape) {
  std::size_t n = 1;
  for (long long d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

[[noreturn]] void fail(const Layer& layer, const std::string& problem) {
  throw ModelError("layer '" + layer.name + "' (" + layer_kind_name(layer.kind) + "): " + problem);
}

void require_positive(const Layer& layer, const char* what, int value) {
  if (value <= 0) fail(layer, std::string(what) + " must be positive, found " + std::to_string(value));
}

void require_non_negative(const Layer& layer, const char* what, int value) {
  if (value < 0) fail(layer, std::string(what) + " must not be negative, found " + std::to_string(value));
}

Dims window_dims(const Layer& layer, const Dims& in, int out_c, int kh, int kw, int sh, int sw, int ph, int pw, int dh,
                 int dw) {
  require_positive(layer, "kernel height", kh);
  require_positive(layer, "kernel width", kw);
  require_positive(layer, "stride height", sh);
  require_positive(layer, "stride width", sw);
  require_non_negative(layer, "padding height", ph);
  require_non_negative(layer, "padding width", pw);
  require_positive(layer, "dilation height", dh);
  require_positive(layer, "dilation width", dw);
  const Dims out{out_c, window_output_size(in.h, kh, sh, ph, dh), window_output_size(in.w, kw, sw, pw, dw)};
  if (out.h <= 0 || out.w <= 0) {
    fail(layer, "a " + std::to_string(kh) + "x" + std::to_string(kw) + " window does not fit the input " +
                    to_string(in) + " (padding " + std::to_string(ph) + "x" + std::to_string(pw) + ")");
  }
  return out;
}

// The multi-dimensional index of flat index i of a row-major tensor of `shape`: "[1, 0, 2, 2]".
std::string index_string(std::size_t i, const std::vector<long long>& shape) {
  std::vector<long long> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    const std::size_t extent = static_cast<std::size_t>(shape[d]);
    index[d] = static_cast<long long>(i % extent);
    i /= extent;
  }
  return shape_string(index);
}

// The first value of one tensor that no backend can compute with, described; "" when none.
std::string unusable_value(const ParamShape& spec, const std::vector<float>& values) {
  const bool variance = spec.field == &LayerParams::running_var;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    const char* why = !std::isfinite(v)      ? "every parameter must be a finite number"
                      : variance && v < 0.0f ? "a variance cannot be negative"
                                             : nullptr;
    if (why) {
      return "tensor '" + spec.name + "' has " + value_string(v) + " at index " + std::to_string(i) + " (" +
             index_string(i, spec.shape) + "); " + why;
    }
  }
  return "";
}

// A batch-norm's per-channel affine form (fold.h), which both backends use, must be finite in float32.
std::string unusable_batchnorm(const Layer& layer) {
  const LayerParams& p = layer.params;
  const BatchNormAffine affine = batchnorm_affine(layer);
  for (std::size_t c = 0; c < affine.scale.size(); ++c) {
    const char* what = !std::isfinite(affine.scale[c])   ? "weight / sqrt(running_var + epsilon)"
                       : !std::isfinite(affine.shift[c]) ? "bias - running_mean * weight / sqrt(running_var + epsilon)"
                                                         : nullptr;
    if (what) {
      return "channel " + std::to_string(c) + ": " + what + " overflows float32 (weight " + value_string(p.weight[c]) +
             ", bias " + value_string(p.bias[c]) + ", running_mean " + value_string(p.running_mean[c]) +
             ", running_var " + value_string(p.running_var[c]) + ", epsilon " +
             value_string(layer.batchnorm().epsilon) + ")";
    }
  }
  return "";
}

}  // namespace

std::string value_string(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string pointwise_params_problem(PointwiseOp op, const PointwiseAttrs& p) {
  const PointwiseKeys& keys = pointwise_keys(op);
  const std::string a(keys.key_a), b(keys.key_b);
  const std::string found = ", found " + value_string(p.a) + " and " + value_string(p.b);
  switch (keys.rule) {
    case PointwiseRule::Any: return {};
    case PointwiseRule::Finite:
      return std::isfinite(p.a) && std::isfinite(p.b) ? std::string() : a + " and " + b + " must be finite" + found;
    case PointwiseRule::Ordered:  // an infinite bound is no bound; NaN fails the comparison
      return p.a <= p.b ? std::string() : a + " and " + b + " must be numbers with " + a + " <= " + b + found;
  }
  return "unknown rule" + found;
}

std::string unusable_params(const Layer& layer, const Dims& in) {
  for (const ParamShape& spec : expected_params(layer, in)) {
    const std::string problem = unusable_value(spec, layer.params.*(spec.field));
    if (!problem.empty()) return problem;
  }
  return layer.kind == LayerKind::BatchNorm ? unusable_batchnorm(layer) : "";
}

std::string shape_string(const std::vector<long long>& shape) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << ']';
  return s.str();
}

std::string to_string(const Dims& d) {
  return std::to_string(d.c) + "x" + std::to_string(d.h) + "x" + std::to_string(d.w);
}

const char* resize_mode_name(ResizeMode m) {
  switch (m) {
    case ResizeMode::TrimFit: return "trim_fit";
    case ResizeMode::Stretch: return "stretch";
    case ResizeMode::Crop: return "crop";
  }
  return "unknown";
}

const char* channel_order_name(ChannelOrder o) {
  switch (o) {
    case ChannelOrder::Rgb: return "rgb";
    case ChannelOrder::Bgr: return "bgr";
  }
  return "unknown";
}

const char* invert_mode_name(InvertMode m) {
  switch (m) {
    case InvertMode::Auto: return "auto";
    case InvertMode::Yes: return "yes";
    case InvertMode::No: return "no";
  }
  return "unknown";
}

const char* alpha_mode_name(AlphaMode m) {
  switch (m) {
    case AlphaMode::White: return "white";
    case AlphaMode::Drop: return "drop";
  }
  return "unknown";
}

const char* layer_kind_name(LayerKind k) {
  const auto i = static_cast<std::size_t>(k);
  return i < kOpCount ? kOpNames[i].data() : "unknown";  // the names are literals: NUL-terminated
}

namespace {

// The shape of an op with one input.
Dims single_output_dims(const Layer& layer, const Dims& in) {
  switch (layer.kind) {
    case LayerKind::Conv2d: {
      const Conv2dAttrs& a = layer.conv();
      require_positive(layer, "out_channels", a.out_channels);
      require_positive(layer, "groups", a.groups);
      if (in.c % a.groups != 0 || a.out_channels % a.groups != 0) {
        fail(layer, "groups = " + std::to_string(a.groups) + " must divide the input channels (" +
                        std::to_string(in.c) + ") and out_channels (" + std::to_string(a.out_channels) + ")");
      }
      return window_dims(layer, in, a.out_channels, a.kernel_h, a.kernel_w, a.stride_h, a.stride_w, a.pad_h, a.pad_w,
                         a.dilation_h, a.dilation_w);
    }
    case LayerKind::MaxPool:
    case LayerKind::AvgPool: {
      const Pool2dAttrs& a = layer.pool();
      // PyTorch and cuDNN both require the padding to be at most half the window.
      if (2 * a.pad_h > a.kernel_h || 2 * a.pad_w > a.kernel_w) {
        fail(layer, "padding must be at most half the kernel size");
      }
      const Dims floor_dims =
          window_dims(layer, in, in.c, a.kernel_h, a.kernel_w, a.stride_h, a.stride_w, a.pad_h, a.pad_w, 1, 1);
      if (!a.ceil_mode) return floor_dims;
      return Dims{in.c, pool_output_size(in.h, a.kernel_h, a.stride_h, a.pad_h, true),
                  pool_output_size(in.w, a.kernel_w, a.stride_w, a.pad_w, true)};
    }
    case LayerKind::GlobalAvgPool: return Dims{in.c, 1, 1};
    case LayerKind::Upsample: {
      const UpsampleAttrs& a = layer.upsample();
      require_positive(layer, "scale_h", a.scale_h);
      require_positive(layer, "scale_w", a.scale_w);
      const long long h = static_cast<long long>(in.h) * a.scale_h, w = static_cast<long long>(in.w) * a.scale_w;
      if (h > std::numeric_limits<int>::max() || w > std::numeric_limits<int>::max()) {
        fail(layer, "the output " + std::to_string(h) + "x" + std::to_string(w) + " is over " +
                        std::to_string(std::numeric_limits<int>::max()) + " on a side");
      }
      return Dims{in.c, static_cast<int>(h), static_cast<int>(w)};
    }
    case LayerKind::Resize: {
      const ResizeAttrs& a = layer.resize();
      require_positive(layer, "output height", a.out_h);
      require_positive(layer, "output width", a.out_w);
      return Dims{in.c, a.out_h, a.out_w};
    }
    case LayerKind::AdaptiveAvgPool: {
      const AdaptivePoolAttrs& a = layer.adaptive();
      require_positive(layer, "output height", a.out_h);
      require_positive(layer, "output width", a.out_w);
      return Dims{in.c, a.out_h, a.out_w};
    }
    case LayerKind::ChannelShuffle: {
      const int groups = layer.channel_shuffle().groups;
      require_positive(layer, "groups", groups);
      if (in.c % groups != 0) {
        fail(layer,
             "groups = " + std::to_string(groups) + " must divide the input channels (" + std::to_string(in.c) + ")");
      }
      return in;
    }
    case LayerKind::ChannelSlice: {
      const ChannelSliceAttrs& a = layer.channel_slice();
      if (a.begin < 0) fail(layer, "begin must not be negative, found " + std::to_string(a.begin));
      if (a.begin >= a.end) {
        fail(layer, "begin = " + std::to_string(a.begin) + " must be less than end = " + std::to_string(a.end));
      }
      if (a.end > in.c) {
        fail(layer, "end = " + std::to_string(a.end) + " is over the input channels (" + std::to_string(in.c) + ")");
      }
      return Dims{a.end - a.begin, in.h, in.w};
    }
    case LayerKind::Pad: {
      const PadAttrs& a = layer.pad();
      for (int p : {a.top, a.left, a.bottom, a.right}) {
        if (p < 0) fail(layer, "padding must not be negative, found " + std::to_string(p));
      }
      if (std::isnan(a.value)) fail(layer, "the padding value must be a number or an infinity, found NaN");
      const long long h = static_cast<long long>(in.h) + a.top + a.bottom,
                      w = static_cast<long long>(in.w) + a.left + a.right;
      if (h > std::numeric_limits<int>::max() || w > std::numeric_limits<int>::max()) {
        fail(layer, "the output " + std::to_string(h) + "x" + std::to_string(w) + " is over " +
                        std::to_string(std::numeric_limits<int>::max()) + " on a side");
      }
      return Dims{in.c, static_cast<int>(h), static_cast<int>(w)};
    }
    case LayerKind::Flatten:
      if (in.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        fail(layer, "the flattened input " + to_string(in) + " has " + std::to_string(in.size()) +
                        " values, more than " + std::to_string(std::numeric_limits<int>::max()));
      }
      return Dims{static_cast<int>(in.size()), 1, 1};
    case LayerKind::Linear: {
      const LinearAttrs& a = layer.linear();
      require_positive(layer, "out_features", a.out_features);
      if (in.h != 1 || in.w != 1) {
        fail(layer, "needs a flat input (add a flatten layer before it), found " + to_string(in));
      }
      return Dims{a.out_features, 1, 1};
    }
    case LayerKind::BatchNorm:
    case LayerKind::LayerNorm: {
      const double eps = layer.kind == LayerKind::BatchNorm ? layer.batchnorm().epsilon : layer.layernorm().epsilon;
      if (!(eps > 0.0) || !std::isfinite(eps)) {
        fail(layer, "epsilon must be a positive finite number, found " + value_string(eps));
      }
      return in;
    }
      INFER_CASE_POINTWISE_OPS {
        const PointwiseAttrs& a = layer.pointwise();
        const std::string problem = pointwise_params_problem(pointwise_op(layer.kind), a);
        if (!problem.empty()) fail(layer, problem);
        return in;
      }
    case LayerKind::Relu:
    case LayerKind::Softmax: return in;
    case LayerKind::Add:
    case LayerKind::Mul:
    case LayerKind::Concat: break;  // several inputs: infer_output_dims
  }
  fail(layer, "unknown layer kind");
}

std::string input_count_text(Arity arity) {
  switch (arity) {
    case Arity::One: return "one input";
    case Arity::Two: return "two inputs";
    case Arity::Many: return "two or more inputs";
  }
  return "?";
}

}  // namespace

// Whether the layer's attributes are the ones its kind reads (a Layer built in code can get this
// wrong; the model file reader cannot).
bool attrs_fit(const Layer& layer) {
  switch (layer.kind) {
    case LayerKind::Conv2d: return std::holds_alternative<Conv2dAttrs>(layer.attrs);
    case LayerKind::MaxPool:
    case LayerKind::AvgPool: return std::holds_alternative<Pool2dAttrs>(layer.attrs);
    case LayerKind::BatchNorm: return std::holds_alternative<BatchNormAttrs>(layer.attrs);
    case LayerKind::Linear: return std::holds_alternative<LinearAttrs>(layer.attrs);
    case LayerKind::Add:
      return std::holds_alternative<AddAttrs>(layer.attrs);
      INFER_CASE_POINTWISE_OPS return std::holds_alternative<PointwiseAttrs>(layer.attrs);
    case LayerKind::Relu:
    case LayerKind::GlobalAvgPool:
    case LayerKind::Flatten:
    case LayerKind::Softmax:
    case LayerKind::Mul:
    case LayerKind::Concat: return std::holds_alternative<std::monostate>(layer.attrs);
    case LayerKind::Upsample: return std::holds_alternative<UpsampleAttrs>(layer.attrs);
    case LayerKind::Pad: return std::holds_alternative<PadAttrs>(layer.attrs);
    case LayerKind::AdaptiveAvgPool: return std::holds_alternative<AdaptivePoolAttrs>(layer.attrs);
    case LayerKind::ChannelShuffle: return std::holds_alternative<ChannelShuffleAttrs>(layer.attrs);
    case LayerKind::ChannelSlice: return std::holds_alternative<ChannelSliceAttrs>(layer.attrs);
    case LayerKind::Resize: return std::holds_alternative<ResizeAttrs>(layer.attrs);
    case LayerKind::LayerNorm: return std::holds_alternative<LayerNormAttrs>(layer.attrs);
  }
  return false;
}

Dims infer_output_dims(const Layer& layer, const std::vector<Dims>& in) {
  if (!attrs_fit(layer)) fail(layer, "its attributes are another op's");
  const Arity arity = op_arity(layer.kind);
  const bool count_ok = arity == Arity::One ? in.size() == 1 : arity == Arity::Two ? in.size() == 2 : in.size() >= 2;
  if (!count_ok) fail(layer, "reads " + input_count_text(arity) + ", found " + std::to_string(in.size()));
  switch (layer.kind) {
    case LayerKind::Add:
      if (in[0] != in[1])
        fail(layer, "adds inputs of the same shape, found " + to_string(in[0]) + " and " + to_string(in[1]));
      return in[0];
    case LayerKind::Mul:
      // The second input is the same shape, or one value per channel (squeeze-and-excitation's scale).
      if (in[1] != in[0] && in[1] != Dims{in[0].c, 1, 1}) {
        fail(layer, "multiplies by an input of the same shape or of " + to_string(Dims{in[0].c, 1, 1}) +
                        " (one value per channel), found " + to_string(in[0]) + " and " + to_string(in[1]));
      }
      return in[0];
    case LayerKind::Concat: {
      long long channels = 0;
      for (const Dims& d : in) {
        if (d.h != in[0].h || d.w != in[0].w) {
          fail(layer, "joins inputs along the channels, so their heights and widths must agree, found " +
                          to_string(in[0]) + " and " + to_string(d));
        }
        channels += d.c;
      }
      if (channels > 1'000'000)
        fail(layer, "the joined input has " + std::to_string(channels) + " channels, more than 1000000");
      return Dims{static_cast<int>(channels), in[0].h, in[0].w};
    }
    default: return single_output_dims(layer, in[0]);
  }
}

void connect(const Dims& input, std::vector<Layer>& layers) {
  std::map<std::string, std::size_t> index;  // name -> activation it writes (layer i: i + 1)
  for (std::size_t i = 0; i < layers.size(); ++i) {
    Layer& layer = layers[i];
    if (layer.name == kNetworkInputName) {
      fail(layer, std::string("no layer may be named '") + kNetworkInputName + "': it stands for the network input");
    }
    if (index.count(layer.name)) throw ModelError("two layers are named '" + layer.name + "'");
    layer.sources.clear();
    layer.in_dims.clear();
    layer.readers = 0;
    if (layer.inputs.empty()) {
      layer.sources.push_back(i);
    } else {
      for (const std::string& name : layer.inputs) {
        if (name == kNetworkInputName) {
          layer.sources.push_back(0);
          continue;
        }
        const auto found = index.find(name);
        if (found == index.end()) {
          bool later = false;
          for (std::size_t j = i; j < layers.size(); ++j) later = later || layers[j].name == name;
          fail(layer, later ? "reads '" + name + "', which comes after it; list the layers in the order they run"
                            : "reads '" + name + "', which is no layer of the model (nor '" + kNetworkInputName + "')");
        }
        layer.sources.push_back(found->second);
      }
    }
    for (std::size_t a : layer.sources) {
      layer.in_dims.push_back(a == 0 ? input : layers[a - 1].out);
      if (a > 0) ++layers[a - 1].readers;
    }
    layer.in = layer.in_dims[0];
    layer.out = infer_output_dims(layer, layer.in_dims);
    index[layer.name] = i + 1;
  }
  if (layers.empty()) return;
  ++layers.back().readers;
  for (const Layer& layer : layers) {
    if (layer.readers == 0) {
      fail(layer, "its output is never read: every layer must lead to the last one, whose output is the network's");
    }
  }
}

bool feeds_only_next(const std::vector<Layer>& layers, std::size_t i) {
  if (i + 1 >= layers.size()) return false;
  const Layer& next = layers[i + 1];
  return layers[i].readers == 1 && next.sources.size() == 1 && next.sources[0] == i + 1;
}

std::vector<ParamShape> expected_params(const Layer& layer, const Dims& in) {
  const std::string& n = layer.name;
  switch (layer.kind) {
    case LayerKind::Conv2d: {
      const Conv2dAttrs& a = layer.conv();
      std::vector<ParamShape> p{
          {n + ".weight", {a.out_channels, in.c / a.groups, a.kernel_h, a.kernel_w}, &LayerParams::weight}};
      if (a.bias) p.push_back({n + ".bias", {a.out_channels}, &LayerParams::bias});
      return p;
    }
    case LayerKind::BatchNorm:
      return {{n + ".weight", {in.c}, &LayerParams::weight},
              {n + ".bias", {in.c}, &LayerParams::bias},
              {n + ".running_mean", {in.c}, &LayerParams::running_mean},
              {n + ".running_var", {in.c}, &LayerParams::running_var}};
    case LayerKind::LayerNorm:
      return {{n + ".weight", {in.c}, &LayerParams::weight}, {n + ".bias", {in.c}, &LayerParams::bias}};
    case LayerKind::Linear: {
      const LinearAttrs& a = layer.linear();
      std::vector<ParamShape> p{{n + ".weight", {a.out_features, in.c}, &LayerParams::weight}};
      if (a.bias) p.push_back({n + ".bias", {a.out_features}, &LayerParams::bias});
      return p;
    }
      INFER_CASE_PARAMETERLESS_OPS return {};
  }
  fail(layer, "unknown layer kind");  // a value outside the enum: every kind returns above
}

Network::Network(std::string name, InputSpec input, std::vector<Layer> layers)
    : name_(std::move(name)), input_(std::move(input)), layers_(std::move(layers)) {
  const Dims& d = input_.dims;
  if (d.c <= 0 || d.h <= 0 || d.w <= 0) throw ModelError("input shape must be positive, found " + to_string(d));
  if (input_.mean.size() != static_cast<std::size_t>(d.c) || input_.std.size() != static_cast<std::size_t>(d.c)) {
    throw ModelError("input mean and std need one value per channel (" + std::to_string(d.c) + "), found " +
                     std::to_string(input_.mean.size()) + " and " + std::to_string(input_.std.size()));
  }
  for (std::size_t c = 0; c < input_.std.size(); ++c) {
    const double mean = input_.mean[c], scale = input_.std[c];
    const std::string channel = " of channel " + std::to_string(c);
    if (!std::isfinite(mean))
      throw ModelError("input mean" + channel + " must be a finite number, found " + value_string(mean));
    if (!(scale > 0.0) || !std::isfinite(scale)) {
      throw ModelError("input std" + channel + " must be a positive finite number, found " + value_string(scale));
    }
    // Pixels are in [0, 1]: the largest |(pixel - mean) / std| is at one of the ends.
    const double largest = std::max(std::fabs(mean), std::fabs(1.0 - mean)) / scale;
    if (largest > FLT_MAX) {
      throw ModelError("input channel " + std::to_string(c) + ": (pixel - mean) / std reaches " +
                       value_string(largest) + " for pixels in [0, 1] (mean " + value_string(mean) + ", std " +
                       value_string(scale) + "), beyond float32");
    }
  }
  if (layers_.empty()) throw ModelError("the network has no layers");

  connect(d, layers_);
  for (Layer& layer : layers_) {
    // Parameters a layer does not use must be empty, so that a stray tensor is never ignored.
    std::vector<ParamShape> want = expected_params(layer, layer.in);
    for (auto field :
         {&LayerParams::weight, &LayerParams::bias, &LayerParams::running_mean, &LayerParams::running_var}) {
      const ParamShape* spec = nullptr;
      for (const ParamShape& p : want) {
        if (p.field == field) spec = &p;
      }
      const std::size_t found = (layer.params.*field).size();
      const std::size_t expected = spec ? element_count(spec->shape) : 0;
      if (found != expected) {
        fail(layer, (spec ? spec->name + " needs " + shape_string(spec->shape) + " = " + std::to_string(expected)
                          : std::string("an unused parameter needs 0")) +
                        " values, found " + std::to_string(found));
      }
    }
    const std::string problem = unusable_params(layer, layer.in);
    if (!problem.empty()) fail(layer, problem);
  }
  if (!input_.labels.empty() && input_.labels.size() != output_dims().size()) {
    throw ModelError("the model has " + std::to_string(input_.labels.size()) + " labels but its output has " +
                     std::to_string(output_dims().size()) + " values");
  }
}

}  // namespace infer
