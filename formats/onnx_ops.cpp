// The per-op converters of the ONNX import: each maps one node onto the network's layers through
// the reader (onnx_reader.h), within the limits docs/model-format.md states, and refuses the rest.
#include "formats/onnx_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "formats/onnx_reader.h"
#include "graph/network.h"

namespace infer {
namespace onnx_import {
namespace {

// A window's padding, [top, left, bottom, right]: the pads attribute, or what auto_pad SAME_UPPER
// / SAME_LOWER gives for this input (ONNX: the output ceil(in / stride), the padding the windows
// then need, the odd one at the end for SAME_UPPER and at the start for SAME_LOWER).
struct Pads {
  int top = 0, left = 0, bottom = 0, right = 0;
};
Pads window_pads(Importer& m, const onnx::NodeProto& node, const Dims& in, std::pair<int, int> kernel,
                 std::pair<int, int> stride, std::pair<int, int> dilation) {
  const std::string auto_pad = string_attr(node, "auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    auto same = [&](int length, int k, int s, int d, int& begin, int& end) {
      if (s < 1) m.fail(node, "strides must be positive");
      const long long out = (static_cast<long long>(length) + s - 1) / s;
      const long long total = std::max(0LL, (out - 1) * s + (static_cast<long long>(k) - 1) * d + 1 - length);
      const long long small = total / 2, large = total - small;
      begin = static_cast<int>(auto_pad == "SAME_UPPER" ? small : large);
      end = static_cast<int>(auto_pad == "SAME_UPPER" ? large : small);
    };
    Pads p;
    same(in.h, kernel.first, stride.first, dilation.first, p.top, p.bottom);
    same(in.w, kernel.second, stride.second, dilation.second, p.left, p.right);
    return p;
  }
  if (auto_pad != "NOTSET" && auto_pad != "VALID") m.fail(node, "auto_pad " + auto_pad + " is not supported");
  const std::vector<long long> v = auto_pad == "VALID" ? std::vector<long long>{} : ints_attr(node, "pads");
  if (v.empty()) return {};
  if (v.size() != 4) m.fail(node, "pads must be 4 values [top, left, bottom, right]");
  for (long long x : v) {
    if (x < 0 || x > 1'000'000) m.fail(node, "pads out of range");
  }
  return {static_cast<int>(v[0]), static_cast<int>(v[1]), static_cast<int>(v[2]), static_cast<int>(v[3])};
}

// The window layer's own (symmetric) padding from p, and the layer it reads: x, or a pad layer of
// `value` for what is left over (asymmetric pads: one side gets more), named "<node>.pad".
std::string padded_input(Importer& m, const onnx::NodeProto& node, const std::string& x, const Pads& p, float value,
                         int& pad_h, int& pad_w) {
  pad_h = std::min(p.top, p.bottom);
  pad_w = std::min(p.left, p.right);
  if (p.top == p.bottom && p.left == p.right) return x;
  const PadAttrs extra{p.top - pad_h, p.left - pad_w, p.bottom - pad_h, p.right - pad_w, value};
  return m.add_layer(node, LayerKind::Pad, extra, {x}, ".pad").name;
}

// A pointwise op (ops.h) with the given parameters, by default its row's.
void pointwise(Importer& m, const onnx::NodeProto& node, PointwiseOp op, PointwiseAttrs attrs) {
  m.add_layer(node, layer_kind(op), attrs, {m.source(node, 0)});
}
void pointwise(Importer& m, const onnx::NodeProto& node, PointwiseOp op) {
  pointwise(m, node, op, default_pointwise_attrs(op));
}

void elementwise(Importer& m, const onnx::NodeProto& node, LayerKind kind, LayerAttrs attrs) {
  m.add_layer(node, kind, std::move(attrs), {m.source(node, 0)});
}

void conv(Importer& m, const onnx::NodeProto& node) {
  const std::string x = m.source(node, 0);
  const Constant& w = m.constant(node, 1);
  if (w.dims.size() != 4 || w.floats.empty()) m.fail(node, "the weight must be a float [K, C/group, R, S] tensor");
  for (long long d : w.dims) {
    if (d < 1 || d > 1'000'000) m.fail(node, "the weight's dimensions must be in [1, 1000000]");
  }
  const long long group = int_attr(node, "group", 1);
  if (group < 1 || group > 1'000'000) m.fail(node, "group " + std::to_string(group) + " is out of range");
  Conv2dAttrs a;
  a.out_channels = static_cast<int>(w.dims[0]);
  std::tie(a.kernel_h, a.kernel_w) =
      m.pair_attr(node, "kernel_shape", {static_cast<int>(w.dims[2]), static_cast<int>(w.dims[3])});
  if (a.kernel_h != w.dims[2] || a.kernel_w != w.dims[3]) m.fail(node, "kernel_shape differs from the weight's shape");
  std::tie(a.stride_h, a.stride_w) = m.pair_attr(node, "strides", {1, 1});
  std::tie(a.dilation_h, a.dilation_w) = m.pair_attr(node, "dilations", {1, 1});
  const Pads p = window_pads(m, node, m.shape_of(x), {a.kernel_h, a.kernel_w}, {a.stride_h, a.stride_w},
                             {a.dilation_h, a.dilation_w});
  const std::string from = padded_input(m, node, x, p, 0.0f, a.pad_h, a.pad_w);
  a.groups = static_cast<int>(group);
  a.bias = node.input_size() > 2 && !node.input(2).empty();
  Layer& layer = m.add_layer(node, LayerKind::Conv2d, a, {from});
  layer.params.weight = m.take(node, 1);
  if (a.bias) layer.params.bias = m.take(node, 2);
}

void batchnorm(Importer& m, const onnx::NodeProto& node) {
  if (int_attr(node, "training_mode", 0) != 0) m.fail(node, "training_mode = 1; export the model in eval() mode");
  // Before opset 7: is_test (0, training, by default); before opset 9: spatial (1 by default).
  if (m.opset() < 7 && int_attr(node, "is_test", 0) != 1)
    m.fail(node, "is_test = 0 (training); export the model in eval() mode");
  if (int_attr(node, "spatial", 1) != 1) m.fail(node, "spatial = 0 (statistics per element) is not supported");
  const std::string x = m.source(node, 0);
  Layer& layer = m.add_layer(node, LayerKind::BatchNorm, BatchNormAttrs{float_attr(node, "epsilon", 1e-5f)}, {x});
  layer.params.weight = m.take(node, 1);
  layer.params.bias = m.take(node, 2);
  layer.params.running_mean = m.take(node, 3);
  layer.params.running_var = m.take(node, 4);
}

// Gemm: Y = alpha A B' + beta C with B' = B or B transposed: a linear layer when alpha = beta = 1
// and A is not transposed. infer's weight is [out, in]: B itself when transB = 1, else B transposed.
void gemm(Importer& m, const onnx::NodeProto& node) {
  if (float_attr(node, "alpha", 1.0f) != 1.0f || float_attr(node, "beta", 1.0f) != 1.0f ||
      int_attr(node, "transA", 0) != 0) {
    m.fail(node, "only alpha = 1, beta = 1, transA = 0 is a linear layer");
  }
  const std::string x = m.source(node, 0);
  const Constant& b = m.constant(node, 1);
  if (b.dims.size() != 2 || b.floats.empty()) m.fail(node, "B must be a float matrix");
  const bool trans_b = int_attr(node, "transB", 0) != 0;
  if (b.dims[0] < 1 || b.dims[1] < 1 || b.dims[0] > 1'000'000 || b.dims[1] > 1'000'000)
    m.fail(node, "B's dimensions must be in [1, 1000000]");
  const std::size_t rows = static_cast<std::size_t>(b.dims[0]), cols = static_cast<std::size_t>(b.dims[1]);
  const std::size_t out = trans_b ? rows : cols, in = trans_b ? cols : rows;
  LinearAttrs a{static_cast<int>(out), node.input_size() > 2 && !node.input(2).empty()};
  Layer& layer = m.add_layer(node, LayerKind::Linear, a, {x});
  if (trans_b) {
    layer.params.weight = m.take(node, 1);
  } else {
    m.count_parameters(node, b);  // transposed below
    layer.params.weight.resize(b.floats.size());
    for (std::size_t i = 0; i < in; ++i)
      for (std::size_t o = 0; o < out; ++o) layer.params.weight[o * in + i] = b.floats[i * out + o];
  }
  if (a.bias) {
    const Constant& c = m.constant(node, 2);
    if (c.floats.size() == 1) {  // broadcast: one bias for every output
      layer.params.bias.assign(out, c.floats[0]);
    } else if (c.floats.size() == out) {
      layer.params.bias = m.take(node, 2);
    } else {
      m.fail(node, "C must hold one bias per output (" + std::to_string(out) + ") or one for all, found " +
                       std::to_string(c.floats.size()) + " values");
    }
  }
}

void pool(Importer& m, const onnx::NodeProto& node) {
  const bool max = node.op_type() == "MaxPool";
  if (max && int_attr(node, "storage_order", 0) != 0) m.fail(node, "storage_order = 1 is not supported");
  if (max && ints_attr(node, "dilations") != std::vector<long long>{} &&
      ints_attr(node, "dilations") != std::vector<long long>{1, 1}) {
    m.fail(node, "dilated pooling is not supported");
  }
  Pool2dAttrs a;
  std::tie(a.kernel_h, a.kernel_w) = m.pair_attr(node, "kernel_shape", {0, 0});
  if (a.kernel_h == 0 || a.kernel_w == 0) m.fail(node, "kernel_shape must be two sizes");
  std::tie(a.stride_h, a.stride_w) = m.pair_attr(node, "strides", {1, 1});
  a.ceil_mode = int_attr(node, "ceil_mode", 0) != 0;
  a.count_include_pad = !max && int_attr(node, "count_include_pad", 0) != 0;  // ONNX's default is 0
  if (max) a.count_include_pad = true;
  const std::string x = m.source(node, 0);
  const Pads p = window_pads(m, node, m.shape_of(x), {a.kernel_h, a.kernel_w}, {a.stride_h, a.stride_w}, {1, 1});
  if (!a.count_include_pad && (p.top != p.bottom || p.left != p.right)) {
    m.fail(node,
           "asymmetric pads with count_include_pad = 0: the windows at the larger side would average over "
           "fewer values than infer's padding counts");
  }
  // Max pooling pads with -inf, so that the extra border never wins.
  const std::string from =
      padded_input(m, node, x, p, max ? -std::numeric_limits<float>::infinity() : 0.0f, a.pad_h, a.pad_w);
  m.add_layer(node, max ? LayerKind::MaxPool : LayerKind::AvgPool, a, {from});
}

// The output height and width of a Resize by `sizes` (F.interpolate(size=...), often folded from the
// input's shape), its batch the input's whatever N is.
std::pair<long long, long long> resize_sizes(Importer& m, const onnx::NodeProto& node, const std::string& x) {
  const Constant& sizes = m.value(node, 3);
  const Dims in = m.shape_of(x);
  if (sizes.is_float || sizes.ints.size() != 4) m.fail(node, "sizes must be 4 integers [N, C, H, W]");
  for (std::size_t i = 1; i < 4; ++i) {
    if (!sizes.symbols.empty() && sizes.symbols[i] != Constant::kKnown)
      m.fail(node, "size " + std::to_string(i) + " depends on the batch size");
  }
  if (!sizes.symbols.empty() && sizes.symbols[0] == Constant::kDependsOnBatch)
    m.fail(node, "the batch size of the output is computed; infer keeps the batch as it is");
  if (sizes.ints[1] != in.c) m.fail(node, "sizes change the channels");
  return {sizes.ints[2], sizes.ints[3]};
}

// The scales of a Resize by `sizes`: output over input on each axis, the batch's 1.
std::vector<float> size_scales(Importer& m, const onnx::NodeProto& node, const std::string& x) {
  const auto [out_h, out_w] = resize_sizes(m, node, x);
  const Dims in = m.shape_of(x);
  auto scale = [&](long long out, int length, const char* axis) {
    if (out < 1 || out > 1'000'000 || out % length != 0) {
      m.fail(node, std::string("the output ") + axis + " " + std::to_string(out) +
                       " is not a whole multiple of the input's " + std::to_string(length));
    }
    return static_cast<float>(out / length);
  };
  return {1.0f, 1.0f, scale(out_h, in.h, "height"), scale(out_w, in.w, "width")};
}

// Resize (opset 11+) in linear mode: infer's resize layer, bilinear to the output size. Its
// coordinates are half_pixel's (and pytorch_half_pixel's but for an output of length 1, where
// that one samples the first row and PyTorch itself the middle) or align_corners'. By sizes, or by
// scales whose output (floor(length x scale)) is exactly length x scale: ONNX places the samples by
// the scale given, infer by output over input, the same only then.
void resize_linear(Importer& m, const onnx::NodeProto& node, const std::string& x) {
  if (m.opset() < 11) {
    m.fail(node,
           "mode 'linear' before opset 11 (asymmetric coordinates) is not supported; export at opset 11 or later");
  }
  const std::string transform = string_attr(node, "coordinate_transformation_mode", "half_pixel");
  if (transform != "half_pixel" && transform != "pytorch_half_pixel" && transform != "align_corners") {
    m.fail(node, "coordinate_transformation_mode '" + transform +
                     "' with mode 'linear' is not supported (half_pixel, pytorch_half_pixel or align_corners)");
  }
  const Dims in = m.shape_of(x);
  long long out_h = 0, out_w = 0;
  std::vector<float> scales;
  if (node.input_size() > 2 && !node.input(2).empty()) scales = m.constant(node, 2).floats;
  if (!scales.empty()) {
    if (scales.size() != 4 || scales[0] != 1.0f || scales[1] != 1.0f) {
      m.fail(node, "scales must be 4 values [1, 1, scale_h, scale_w]");
    }
    auto length = [&](float s, int from, const char* axis) {
      const double out = static_cast<double>(from) * s;
      if (!(out >= 1.0 && out <= 1'000'000.0) || out != std::floor(out)) {
        m.fail(node, std::string("the ") + axis + " scale " + value_string(s) + " of " + std::to_string(from) +
                         " is not a whole output length; export with F.interpolate(size=...)");
      }
      return static_cast<long long>(out);
    };
    out_h = length(scales[2], in.h, "height");
    out_w = length(scales[3], in.w, "width");
  } else if (node.input_size() > 3 && !node.input(3).empty()) {
    std::tie(out_h, out_w) = resize_sizes(m, node, x);
  } else {
    m.fail(node, "neither scales nor sizes are given");
  }
  if (out_h < 1 || out_h > 1'000'000 || out_w < 1 || out_w > 1'000'000) {
    m.fail(node, "the output " + std::to_string(out_h) + "x" + std::to_string(out_w) + " is out of range");
  }
  if (transform == "pytorch_half_pixel" && (out_h == 1 || out_w == 1)) {
    m.fail(node,
           "pytorch_half_pixel to an output of length 1 samples the first row or column (ONNX), where "
           "PyTorch samples the middle; infer does as PyTorch: not supported");
  }
  m.add_layer(node, LayerKind::Resize,
              ResizeAttrs{static_cast<int>(out_h), static_cast<int>(out_w), transform == "align_corners"}, {x});
}

// Resize (opset 10+) and Upsample (7 to 9) in nearest mode by whole scales on H and W (given as
// scales, or as sizes that are whole multiples): infer's upsample, out[y] = in[floor(y / s)]. ONNX
// computes the source index from a coordinate transformation and a rounding mode; each pair is
// accepted only where it gives exactly that index for every output row and column of this input
// (asymmetric with floor, as torch.onnx.export writes F.interpolate; half_pixel with either
// rounding; and others at some scales), checked here index by index. Linear mode from opset 11:
// resize_linear; cubic mode and tf_crop_and_resize are refused.
void resize(Importer& m, const onnx::NodeProto& node) {
  const bool upsample = node.op_type() == "Upsample";
  const std::string x = m.source(node, 0);
  if (m.rank(x) != 4) m.fail(node, "infer resizes [N, C, H, W] tensors; the input has rank 2");
  // Resize-18's attributes change the result (a wider filter, another output shape, other axes): a
  // file of opset 17 or less that carries them is refused rather than read without them.
  for (const char* later : {"antialias", "keep_aspect_ratio_policy", "axes"}) {
    if (attribute(node, later) != nullptr)
      m.fail(node, std::string("attribute '") + later + "' (Resize-18) is not supported");
  }
  const std::string mode = string_attr(node, "mode", "nearest");
  if (mode == "linear" && !upsample) return resize_linear(m, node, x);
  if (mode != "nearest") m.fail(node, "mode '" + mode + "' is not supported (nearest, and linear from opset 11)");
  // Before opset 11 (and in Upsample): asymmetric, the source index truncated.
  const bool v11 = !upsample && m.opset() >= 11;
  const std::string transform = v11 ? string_attr(node, "coordinate_transformation_mode", "half_pixel") : "asymmetric";
  const std::string rounding = v11 ? string_attr(node, "nearest_mode", "round_prefer_floor") : "floor";
  std::vector<float> scales;
  if (upsample && m.opset() < 9) {
    const onnx::AttributeProto* a = attribute(node, "scales");
    if (a) scales.assign(a->floats().begin(), a->floats().end());
  } else {
    const int index = v11 ? 2 : 1;  // Resize-11+: X, roi, scales, sizes
    if (node.input_size() > index && !node.input(index).empty()) scales = m.constant(node, index).floats;
    if (v11 && scales.empty() && node.input_size() > 3 && !node.input(3).empty()) scales = size_scales(m, node, x);
  }
  if (scales.size() != 4 || scales[0] != 1.0f || scales[1] != 1.0f) {
    m.fail(node, "scales must be 4 values [1, 1, scale_h, scale_w]");
  }
  const Dims in = m.shape_of(x);
  auto whole = [&](float s, int length, const char* axis) {
    if (!(s >= 1.0f && s <= 1'000'000.0f) || s != std::floor(s)) {
      m.fail(node, std::string("the ") + axis + " scale " + value_string(s) + " is not a whole number >= 1");
    }
    const int factor = static_cast<int>(s);
    // ONNX's source index of each output position, against floor(x / factor). Every mode but
    // align_corners is x / s plus a constant, the same pattern in each period of `factor`
    // positions but where the clamp acts: the first and last four periods show every case.
    if (transform == "align_corners" && factor > 1 && length > 1) {
      m.fail(
          node,
          "coordinate_transformation_mode 'align_corners' interpolates; it is not a whole-factor nearest upsampling");
    }
    const long long out = static_cast<long long>(length) * factor, period = 4LL * factor;
    for (long long i = 0; i < out; i = (i + 1 == period && out > 2 * period) ? out - period : i + 1) {
      double original = 0.0;
      const double xr = static_cast<double>(i), sc = static_cast<double>(s);
      if (transform == "asymmetric")
        original = xr / sc;
      else if (transform == "half_pixel")
        original = (xr + 0.5) / sc - 0.5;
      else if (transform == "pytorch_half_pixel")
        original = out > 1 ? (xr + 0.5) / sc - 0.5 : 0.0;
      else if (transform == "tf_half_pixel_for_nn")
        original = (xr + 0.5) / sc;
      else if (transform == "align_corners")
        original = out > 1 ? xr * (length - 1) / static_cast<double>(out - 1) : 0.0;
      else
        m.fail(node, "coordinate_transformation_mode '" + transform + "' is not supported");
      double index = 0.0;
      if (rounding == "floor")
        index = std::floor(original);
      else if (rounding == "ceil")
        index = std::ceil(original);
      else if (rounding == "round_prefer_floor")
        index = std::ceil(original - 0.5);
      else if (rounding == "round_prefer_ceil")
        index = std::floor(original + 0.5);
      else
        m.fail(node, "nearest_mode '" + rounding + "' is not supported");
      index = std::min(std::max(index, 0.0), static_cast<double>(length - 1));
      if (static_cast<long long>(index) != i / factor) {
        m.fail(node, "coordinate_transformation_mode '" + transform + "' with nearest_mode '" + rounding +
                         "' at scale " + std::to_string(factor) + " is not a whole-factor nearest upsampling (" + axis +
                         " position " + std::to_string(i) + " reads " + std::to_string(static_cast<long long>(index)) +
                         ")");
      }
    }
    return factor;
  };
  const int h = whole(scales[2], in.h, "height");
  const int w = whole(scales[3], in.w, "width");
  m.add_layer(node, LayerKind::Upsample, UpsampleAttrs{h, w}, {x});
}

// Pad in constant mode on H and W: pads [N, C, H, W begins, N, C, H, W ends] (an attribute
// before opset 11, an INT64 input after), the value an attribute or an optional scalar input.
void pad(Importer& m, const onnx::NodeProto& node) {
  const std::string x = m.source(node, 0);
  if (m.rank(x) != 4) m.fail(node, "infer pads [N, C, H, W] tensors; the input has rank 2");
  const std::string mode = string_attr(node, "mode", "constant");
  if (mode != "constant") m.fail(node, "mode '" + mode + "' is not supported (constant only)");
  std::vector<long long> pads;
  float value = 0.0f;
  if (m.opset() < 11) {
    pads = ints_attr(node, "pads");
    value = float_attr(node, "value", 0.0f);
  } else {
    pads = m.constant(node, 1).ints;
    if (node.input_size() > 2 && !node.input(2).empty()) {
      const Constant& c = m.constant(node, 2);
      if (c.floats.size() != 1) m.fail(node, "constant_value must be one float");
      value = c.floats[0];
    }
  }
  if (pads.size() != 8 || pads[0] != 0 || pads[1] != 0 || pads[4] != 0 || pads[5] != 0) {
    m.fail(node, "pads must be 8 values with none on N and C (infer pads H and W)");
  }
  for (long long v : pads) {
    if (v < 0 || v > 1'000'000) m.fail(node, "pads must be in [0, 1000000] (a negative pad crops: not supported)");
  }
  if (std::isnan(value)) m.fail(node, "the padding value is NaN");
  m.add_layer(node, LayerKind::Pad,
              PadAttrs{static_cast<int>(pads[2]), static_cast<int>(pads[3]), static_cast<int>(pads[6]),
                       static_cast<int>(pads[7]), value},
              {x});
}

void clip(Importer& m, const onnx::NodeProto& node) {
  const float inf = std::numeric_limits<float>::infinity();
  PointwiseAttrs a{-inf, inf};  // min, max; an absent bound: none
  if (m.opset() < 11) {
    a.a = float_attr(node, "min", -inf);
    a.b = float_attr(node, "max", inf);
  } else {
    auto bound = [&](int index, float fallback) {
      if (node.input_size() <= index || node.input(index).empty()) return fallback;
      const Constant& c = m.constant(node, index);
      if (c.floats.size() != 1) m.fail(node, "min and max must be one float each");
      return c.floats[0];
    };
    a.a = bound(1, -inf);
    a.b = bound(2, inf);
  }
  m.add_layer(node, LayerKind::Clip, a, {m.source(node, 0)});
}

// PyTorch's exact GELU below opset 20, read one node at a time (GeluView, onnx_reader.h).
constexpr const char* kGeluChain = "PyTorch's GELU: Div(x, sqrt 2), Erf, Add(., 1), Mul(x, .), Mul(., 0.5)";

// The one value of a one-value float constant `name`, else NaN.
float scalar_constant(const Importer& m, const std::string& name) {
  const Constant* c = m.find_constant(name);
  return c != nullptr && c->is_float && c->floats.size() == 1 ? c->floats[0] : std::numeric_limits<float>::quiet_NaN();
}

// Whether any input of the node is a channels-last view.
bool any_channels_last(const Importer& m, const onnx::NodeProto& node) {
  return std::any_of(node.input().begin(), node.input().end(),
                     [&](const std::string& input) { return m.channels_last(input); });
}

// The node's output keeps the layout of its inputs: channels-last when one of them is.
void keep_layout(Importer& m, const onnx::NodeProto& node) {
  if (any_channels_last(m, node)) m.set_channels_last(node.output(0));
}

// PyTorch's layer_norm over the last axis written out (NormView, onnx_reader.h).
constexpr const char* kNormChain =
    "PyTorch's layer_norm over the last axis: ReduceMean, Sub, Pow(., 2), ReduceMean, Add(., eps), Sqrt, Div";

// The norm chain's step `step` of the node's input `index`, else nullptr.
const NormView* norm_step(const Importer& m, const onnx::NodeProto& node, int index, int step) {
  const NormView* v = index < node.input_size() ? m.find_norm(node.input(index)) : nullptr;
  return v != nullptr && v->step == step ? v : nullptr;
}

// Div: x / sqrt 2, the GELU chain's first node (sqrt 2 as a float, or a double rounded to one); or
// (x - mean) / deviation, the end of a layer normalisation written out: a layernorm layer.
void divide(Importer& m, const onnx::NodeProto& node) {
  if (node.input_size() != 2) m.fail(node, "needs two inputs");
  const NormView* diff = norm_step(m, node, 0, 2);
  const NormView* deviation = norm_step(m, node, 1, 6);
  if (diff != nullptr && deviation != nullptr && diff->layer == deviation->layer) {
    const std::string x = diff->layer;
    const int c = m.shape_of(x).c;
    Layer& layer = m.add_layer(node, LayerKind::LayerNorm, LayerNormAttrs{deviation->epsilon}, {x});
    layer.params.weight.assign(static_cast<std::size_t>(c), 1.0f);
    layer.params.bias.assign(static_cast<std::size_t>(c), 0.0f);
    return m.set_channels_last(node.output(0));
  }
  const std::string x = m.source(node, 0);
  const float d = scalar_constant(m, node.input(1));
  if (!(std::fabs(d - 1.41421356f) <= 1e-6f)) {
    m.fail(node, "divides by " + (std::isnan(d) ? std::string("a tensor") : value_string(d)) +
                     "; infer divides only by sqrt 2, as the first node of " + kGeluChain + ", or as the last of " +
                     kNormChain);
  }
  m.define_gelu(node, GeluView{x, 1});
  keep_layout(m, node);
}

// Erf: the chain's second node.
void erf_node(Importer& m, const onnx::NodeProto& node) {
  const GeluView* g = node.input_size() > 0 ? m.find_gelu(node.input(0)) : nullptr;
  if (g == nullptr || g->step != 1) {
    if (g == nullptr) m.source(node, 0);  // a tensor nobody wrote, or a constant, is refused as such
    m.fail(node, std::string("infer computes Erf only within ") + kGeluChain);
  }
  m.define_gelu(node, GeluView{g->layer, 2});
  keep_layout(m, node);
}

// Add(erf, 1), Mul(x, 1 + erf) and Mul(x (1 + erf), 0.5), in either operand order: the chain's
// last three nodes, the last one a gelu layer; false when no operand continues a chain (a step out
// of order is then refused by source()).
bool gelu_step(Importer& m, const onnx::NodeProto& node) {
  const bool add = node.op_type() == "Add";
  for (int i : {0, 1}) {
    const GeluView* g = m.find_gelu(node.input(i));
    if (g == nullptr) continue;
    const std::string x = g->layer, other = node.input(1 - i);
    if (add && g->step == 2 && scalar_constant(m, other) == 1.0f) {
      m.define_gelu(node, GeluView{x, 3});
      return true;
    }
    if (!add && g->step == 3 && m.find_constant(other) == nullptr && m.find_gelu(other) == nullptr &&
        m.channels_last(node.input(i)) == m.channels_last(other) && m.source(node, 1 - i) == x) {
      m.define_gelu(node, GeluView{x, 4});
      return true;
    }
    if (!add && g->step == 4 && scalar_constant(m, other) == 0.5f) {
      m.add_layer(node, LayerKind::Gelu, default_pointwise_attrs(PointwiseOp::Gelu), {x});
      return true;
    }
  }
  return false;
}

// The per-channel values of a constant operand for a tensor of `channels` channels: one value for
// every channel, or one per channel along the channel axis (the last of a channels-last tensor,
// axis 1 of [N, C, H, W] or [N, features]), every other dimension 1. Empty when it is neither.
std::vector<float> per_channel(const Constant& k, int channels, bool channels_last, int rank) {
  // A constant of more dimensions than the tensor makes ONNX's result of higher rank.
  if (!k.is_float || k.dims.size() > static_cast<std::size_t>(rank)) return {};
  if (k.floats.size() == 1) return std::vector<float>(static_cast<std::size_t>(channels), k.floats[0]);
  if (k.floats.size() != static_cast<std::size_t>(channels) || k.dims.empty()) return {};
  // The axis that holds the values, counted from the end (ONNX broadcasting aligns trailing dimensions).
  const std::size_t from_end = channels_last || rank == 2 ? 1 : 3;
  if (k.dims.size() < from_end) return {};
  for (std::size_t i = 0; i < k.dims.size(); ++i) {
    const bool axis = i == k.dims.size() - from_end;
    if (k.dims[i] != (axis ? channels : 1)) return {};
  }
  return k.floats;
}

// Add or Mul of a computed tensor and a constant of one value per channel (per_channel): a bias, a
// layer scale, a layer normalisation's weight and bias written out. y = x s + t is folded into the
// layer that writes x (a convolution, linear, batch-norm or layernorm) when this node is the last
// reader of its output; else it is a 1x1 depthwise convolution. False when neither operand is a
// constant.
bool channel_affine(Importer& m, const onnx::NodeProto& node) {
  int k = -1;
  for (int i : {0, 1})
    if (m.find_constant(node.input(i)) != nullptr) k = i;
  if (k < 0) return false;
  const std::string x = m.source(node, 1 - k);
  const bool last = m.channels_last(node.input(1 - k));
  const Constant& values = m.constant(node, k);
  const int channels = m.shape_of(x).c;
  const std::vector<float> v = per_channel(values, channels, last, m.rank(x));
  if (v.empty()) {
    m.fail(node, "a constant operand of shape " + shape_string(values.dims) + " for a " +
                     (last ? "channels-last " : "") + "tensor of " + std::to_string(channels) +
                     " channels; infer takes one value, or one per channel");
  }
  const bool add = node.op_type() == "Add";
  const auto c = static_cast<std::size_t>(channels);
  std::vector<double> scale(c, 1.0), shift(c, 0.0);
  for (std::size_t i = 0; i < c; ++i) (add ? shift : scale)[i] = v[i];
  Layer* producer = m.sole_reader_layer(node, 1 - k);
  // Parameters of the sizes the layer needs (the network checks them later; a fold must not write
  // past them first): otherwise no fold.
  if (producer != nullptr) {
    const LayerParams& p = producer->params;
    const bool per_output = (producer->kind == LayerKind::Conv2d || producer->kind == LayerKind::Linear) &&
                            !p.weight.empty() && p.weight.size() % c == 0 && (p.bias.empty() || p.bias.size() == c);
    const bool per_channel_params =
        (producer->kind == LayerKind::LayerNorm || producer->kind == LayerKind::BatchNorm) && p.weight.size() == c &&
        p.bias.size() == c;
    if (!per_output && !per_channel_params) producer = nullptr;
  }
  if (producer == nullptr) {
    Conv2dAttrs a;
    a.out_channels = channels;
    a.groups = channels;
    Layer& layer = m.add_layer(node, LayerKind::Conv2d, a, {x});
    layer.params.weight.assign(scale.begin(), scale.end());
    layer.params.bias.assign(shift.begin(), shift.end());
    if (last) m.set_channels_last(node.output(0));
    return true;
  }
  // The affine map folded into the layer's parameters, each rounded once: the weights of output
  // channel i (all of a convolution's or linear layer's, the one of a normalisation) times s_i, the
  // bias (zeros where there was none) times s_i plus t_i.
  std::vector<float>& weight = producer->params.weight;
  std::vector<float>& bias = producer->params.bias;
  const std::size_t per = weight.size() / c;
  for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<float>(weight[i] * scale[i / per]);
  bias.resize(c, 0.0f);
  for (std::size_t i = 0; i < c; ++i) bias[i] = static_cast<float>(bias[i] * scale[i] + shift[i]);
  if (auto* a = std::get_if<Conv2dAttrs>(&producer->attrs)) a->bias = true;
  if (auto* a = std::get_if<LinearAttrs>(&producer->attrs)) a->bias = true;
  m.map_output(node, 0, producer->name);
  if (last) m.set_channels_last(node.output(0));
  return true;
}

void binary(Importer& m, const onnx::NodeProto& node) {
  if (node.input_size() != 2) m.fail(node, "needs two inputs");
  if (gelu_step(m, node)) return keep_layout(m, node);
  if (const NormView* v = norm_step(m, node, 0, 4); v != nullptr && node.op_type() == "Add") {
    const float eps = scalar_constant(m, node.input(1));  // the variance + eps
    if (!(eps > 0.0f) || !std::isfinite(eps)) {
      m.fail(node, "adds " + (std::isnan(eps) ? std::string("a tensor") : value_string(eps)) +
                       " to a variance; infer adds one positive epsilon, as " + kNormChain);
    }
    return m.define_norm(node, NormView{v->layer, 5, eps});
  }
  if (channel_affine(m, node)) return;
  std::string a = m.source(node, 0), b = m.source(node, 1);
  if (m.channels_last(node.input(0)) != m.channels_last(node.input(1))) {
    m.fail(node,
           "one operand is channels-last ([N, H, W, C], after a Transpose with perm [0, 2, 3, 1]) and the "
           "other is not; infer combines tensors of one layout");
  }
  const LayerKind kind = node.op_type() == "Add" ? LayerKind::Add : LayerKind::Mul;
  // ONNX broadcasting aligns trailing dimensions: only operands of one rank mean what infer computes.
  if (m.rank(a) != m.rank(b)) {
    m.fail(node, "operands of rank " + std::to_string(m.rank(a)) + " and " + std::to_string(m.rank(b)) +
                     "; infer combines tensors of one rank");
  }
  // Mul by one value per channel: infer takes the scale second.
  const Dims da = m.shape_of(a), db = m.shape_of(b);
  if (kind == LayerKind::Mul && da.h == 1 && da.w == 1 && !(db.h == 1 && db.w == 1)) std::swap(a, b);
  if (m.channels_last(node.input(0)) && da != db) {
    m.fail(node, "channels-last operands of shapes " + to_string(da) + " and " + to_string(db) +
                     "; infer combines channels-last tensors of one shape");
  }
  m.add_layer(node, kind, kind == LayerKind::Add ? LayerAttrs{AddAttrs{}} : LayerAttrs{}, {a, b});
  keep_layout(m, node);
}

// The rest of a layer normalisation written out (kNormChain): Sub(x, mean), Pow(x - mean, 2),
// Sqrt(variance + eps); the chain's ReduceMeans are reduce_mean's and its Div divide's.
void subtract(Importer& m, const onnx::NodeProto& node) {
  if (node.input_size() != 2) m.fail(node, "needs two inputs");
  const NormView* mean = norm_step(m, node, 1, 1);
  if (mean == nullptr || m.source(node, 0) != mean->layer || !m.channels_last(node.input(0))) {
    m.source(node, 0), m.source(node, 1);  // a constant or a tensor nobody wrote is refused as such
    m.fail(node, std::string("infer subtracts only within ") + kNormChain);
  }
  m.define_norm(node, NormView{mean->layer, 2});
}

void power(Importer& m, const onnx::NodeProto& node) {
  if (node.input_size() != 2) m.fail(node, "needs two inputs");
  const NormView* diff = norm_step(m, node, 0, 2);
  if (diff == nullptr || scalar_constant(m, node.input(1)) != 2.0f) {
    if (diff == nullptr) m.source(node, 0);
    m.fail(node, std::string("infer squares only within ") + kNormChain);
  }
  m.define_norm(node, NormView{diff->layer, 3});
}

void square_root(Importer& m, const onnx::NodeProto& node) {
  const NormView* v = norm_step(m, node, 0, 5);
  if (v == nullptr) {
    m.source(node, 0);
    m.fail(node, std::string("infer takes square roots only within ") + kNormChain);
  }
  m.define_norm(node, NormView{v->layer, 6, v->epsilon});
}

// LayerNormalization (opset 17) over the channels alone: the last axis of a channels-last tensor
// (ConvNeXt's blocks and LayerNorm2d) or of [N, features]; the bias is optional (0).
void layer_norm(Importer& m, const onnx::NodeProto& node) {
  const std::string x = m.source(node, 0);
  const bool last = m.channels_last(node.input(0));
  const int rank = m.rank(x);
  long long axis = int_attr(node, "axis", -1);
  if (axis < 0) axis += rank;
  if (!((last && axis == 3) || (rank == 2 && axis == 1))) {
    m.fail(node, "normalises axis " + std::to_string(int_attr(node, "axis", -1)) + " of a " +
                     (last ? "channels-last " : "") + "rank-" + std::to_string(rank) +
                     " tensor; infer normalises over the channels alone: the last axis of a channels-last "
                     "tensor (after a Transpose with perm [0, 2, 3, 1]) or of [N, features]");
  }
  const auto c = static_cast<std::size_t>(m.shape_of(x).c);
  Layer& layer = m.add_layer(node, LayerKind::LayerNorm, LayerNormAttrs{float_attr(node, "epsilon", 1e-5f)}, {x});
  layer.params.weight = m.take(node, 1);
  if (node.input_size() > 2 && !node.input(2).empty()) {
    layer.params.bias = m.take(node, 2);
  } else {
    layer.params.bias.assign(c, 0.0f);
  }
  if (last) m.set_channels_last(node.output(0));
}

// MatMul by a constant [C, K] matrix over the channels: a channels-last tensor's last axis (a 1x1
// convolution: ConvNeXt's nn.Linear layers on its permuted blocks) or [N, features] (a linear layer).
// Without a bias: an Add of one value per channel after it folds into it (channel_affine).
void matmul(Importer& m, const onnx::NodeProto& node) {
  if (node.input_size() != 2) m.fail(node, "needs two inputs");
  const std::string x = m.source(node, 0);
  const bool last = m.channels_last(node.input(0));
  const int rank = m.rank(x);
  if (!last && rank != 2) {
    m.fail(node,
           "multiplies an [N, C, H, W] tensor over W; infer multiplies over the channels: a channels-last "
           "tensor (after a Transpose with perm [0, 2, 3, 1]) or [N, features]");
  }
  const Constant& w = m.constant(node, 1);
  const int c = m.shape_of(x).c;
  if (w.dims.size() != 2 || !w.is_float || w.dims[0] != c || w.dims[1] < 1 || w.dims[1] > 1'000'000) {
    m.fail(node,
           "the second operand must be a float [" + std::to_string(c) + ", K] matrix, found " + shape_string(w.dims));
  }
  m.count_parameters(node, w);
  const auto in = static_cast<std::size_t>(c), out = static_cast<std::size_t>(w.dims[1]);
  std::vector<float> weight(in * out);  // infer's [K, C]: the transpose
  for (std::size_t i = 0; i < in; ++i)
    for (std::size_t o = 0; o < out; ++o) weight[o * in + i] = w.floats[i * out + o];
  if (rank == 2) {
    m.add_layer(node, LayerKind::Linear, LinearAttrs{static_cast<int>(out), false}, {x}).params.weight =
        std::move(weight);
    return;
  }
  Conv2dAttrs a;
  a.out_channels = static_cast<int>(out);
  a.bias = false;
  m.add_layer(node, LayerKind::Conv2d, a, {x}).params.weight = std::move(weight);
  m.set_channels_last(node.output(0));
}

void concat(Importer& m, const onnx::NodeProto& node) {
  const long long axis = int_attr(node, "axis", 1);
  if (axis != 1 && axis != -3)
    m.fail(node, "axis " + std::to_string(axis) + "; infer joins along the channels (axis 1)");
  if (node.input_size() == 1) return m.passthrough(node);  // DenseNet's torch.cat([x], 1)
  std::vector<std::string> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    inputs.push_back(m.source(node, i));
    if (m.rank(inputs.back()) != 4)
      m.fail(node, "infer joins [N, C, H, W] tensors along C; input " + std::to_string(i) + " has rank 2");
  }
  m.add_layer(node, LayerKind::Concat, {}, inputs);
}

void flatten(Importer& m, const onnx::NodeProto& node) {
  if (int_attr(node, "axis", 1) != 1)
    m.fail(node, "axis " + std::to_string(int_attr(node, "axis", 1)) + "; infer flattens each sample (axis 1)");
  m.add_layer(node, LayerKind::Flatten, {}, {m.source(node, 0)});
}

// The per-sample dimensions a Reshape asks for (its shape without the first, the batch), with 0
// copying the input's dimension at the same place and one -1 taking what is left of `size`. The
// first dimension must keep the batch: the batch size itself (folded from Shape), 0, -1 or a number.
std::vector<long long> per_sample_shape(Importer& m, const onnx::NodeProto& node, const Constant& shape,
                                        const std::vector<long long>& in, std::size_t size) {
  const bool batch = !shape.symbols.empty() && shape.symbols[0] == Constant::kBatch;
  if (!batch && !shape.symbols.empty() && shape.symbols[0] != Constant::kKnown)
    m.fail(node, "the first dimension of the shape is computed from the batch size; infer keeps the batch as it is");
  if (!batch && shape.ints[0] != -1 && shape.ints[0] < 0) m.fail(node, "the first dimension of the shape is negative");
  std::vector<long long> dims;
  long long known = 1;
  int free = -1;
  for (std::size_t i = 1; i < shape.ints.size(); ++i) {
    if (!shape.symbols.empty() && shape.symbols[i] != Constant::kKnown)
      m.fail(node, "dimension " + std::to_string(i) + " of the shape depends on the batch size");
    long long d = shape.ints[i];
    if (d == 0 && int_attr(node, "allowzero", 0) == 0) d = i - 1 < in.size() ? in[i - 1] : -2;
    if (d == -1 && free < 0) {
      free = static_cast<int>(dims.size());
    } else if (d < 1 || d > static_cast<long long>(size) || known > static_cast<long long>(size) / d) {
      // More values than a sample holds (checked before multiplying: no overflow).
      m.fail(node, "reshapes samples of " + std::to_string(size) + " values to a shape with dimension " +
                       std::to_string(i) + " = " + std::to_string(shape.ints[i]));
    } else {
      known *= d;
    }
    dims.push_back(d);
  }
  if (free >= 0) dims[static_cast<std::size_t>(free)] = static_cast<long long>(size) / known;
  long long total = 1;
  for (long long d : dims) total *= d;  // each factor <= size and their product <= size: no overflow
  if (total != static_cast<long long>(size)) {
    m.fail(node, "reshapes samples of " + std::to_string(size) + " values to " + shape_string(dims));
  }
  return dims;
}

// A channel slice: channels [begin, end) of a computed [N, C, H, W] tensor (or features of [N, F]),
// the layer reading x.
std::string channel_slice(Importer& m, const onnx::NodeProto& node, const std::string& x, long long begin,
                          long long end, const std::string& suffix = "") {
  return m
      .add_layer(node, LayerKind::ChannelSlice, ChannelSliceAttrs{static_cast<int>(begin), static_cast<int>(end)}, {x},
                 suffix.c_str())
      .name;
}

// Slice of a computed tensor along the channels alone, step 1 (ShuffleNet's x.chunk(2, dim=1) at
// opset 13 and later; the slices of known values are folded, onnx_fold.cpp).
void slice(Importer& m, const onnx::NodeProto& node) {
  const std::string x = m.source(node, 0);
  if (m.opset() < 10) m.fail(node, "a Slice of a computed tensor before opset 10 is not supported");
  auto ints = [&](int index) {
    std::vector<long long> v;
    if (index < node.input_size() && !node.input(index).empty()) {
      const Constant& c = m.constant(node, index);
      if (c.is_float || !c.known()) m.fail(node, "starts, ends, axes and steps must be known integers");
      v = c.ints;
    }
    return v;
  };
  const std::vector<long long> starts = ints(1), ends = ints(2), steps = ints(4);
  std::vector<long long> axes = ints(3);
  if (axes.empty()) axes = {0};
  const int rank = m.rank(x);
  if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || (axes[0] != 1 && axes[0] != 1 - rank) ||
      (!steps.empty() && steps != std::vector<long long>{1})) {
    m.fail(node, "slices axes " + shape_string(axes) + " with steps " + shape_string(steps) +
                     "; infer slices the channels (axis 1) alone, with step 1");
  }
  const long long c = m.shape_of(x).c;
  auto clamp = [&](long long v) { return std::clamp(v < 0 ? v + c : v, 0LL, c); };
  const long long begin = clamp(starts[0]), end = clamp(ends[0]);
  if (begin >= end) m.fail(node, "the slice of the channels is empty");
  if (begin == 0 && end == c) return m.passthrough(node);
  channel_slice(m, node, x, begin, end);
}

// Split along the channels into parts (the split sizes, an attribute before opset 13 and an input
// from 13 on, or equal parts): one channel slice per output read.
void split(Importer& m, const onnx::NodeProto& node) {
  const std::string x = m.source(node, 0);
  const int rank = m.rank(x);
  const long long axis = int_attr(node, "axis", 0);
  if (axis != 1 && axis != 1 - rank)
    m.fail(node, "axis " + std::to_string(axis) + "; infer splits the channels (axis 1)");
  const long long c = m.shape_of(x).c;
  std::vector<long long> sizes = ints_attr(node, "split");
  if (m.opset() >= 13 && node.input_size() > 1 && !node.input(1).empty()) {
    const Constant& s = m.constant(node, 1);
    if (s.is_float || !s.known()) m.fail(node, "the split sizes must be known integers");
    sizes = s.ints;
  }
  const long long parts = node.output_size();
  if (sizes.empty()) {
    if (c % parts != 0) m.fail(node, std::to_string(c) + " channels do not split into " + std::to_string(parts));
    sizes.assign(static_cast<std::size_t>(parts), c / parts);
  }
  long long total = 0;
  for (long long s : sizes) {
    if (s < 1 || s > c)
      m.fail(node, "a split size of " + std::to_string(s) + " for " + std::to_string(c) + " channels");
    total += s;
  }
  if (static_cast<long long>(sizes.size()) != parts || total != c) {
    m.fail(node, "split sizes " + shape_string(sizes) + " for " + std::to_string(parts) + " outputs of " +
                     std::to_string(c) + " channels");
  }
  std::vector<std::string> layers(static_cast<std::size_t>(parts));
  long long begin = 0;
  for (int i = 0; i < node.output_size(); ++i) {
    const long long end = begin + sizes[static_cast<std::size_t>(i)];
    if (!node.output(i).empty() && m.is_read(node.output(i)))
      layers[static_cast<std::size_t>(i)] = channel_slice(m, node, x, begin, end, "." + std::to_string(i));
    begin = end;
  }
  for (int i = 0; i < node.output_size(); ++i) m.map_output(node, i, layers[static_cast<std::size_t>(i)]);
}

// The end of a channel shuffle: the transposed [N, C / g, g, H, W] view reshaped back to [N, C, H, W].
void shuffle_end(Importer& m, const onnx::NodeProto& node, const Constant& shape) {
  const ShuffleView v = *m.find_view(node.input(0));
  const Dims in = m.shape_of(v.layer);
  const std::vector<long long> in_dims{in.c, in.h, in.w};
  const std::vector<long long> view{in.c / v.groups, v.groups, in.h, in.w};
  std::vector<long long> dims = per_sample_shape(m, node, shape, view, in.size());
  if (!v.transposed || dims != in_dims) {
    m.fail(node, "reshapes a " + std::string(v.transposed ? "transposed " : "") + "5-D view of '" + v.layer + "' to " +
                     shape_string(dims) +
                     "; infer reads such a view only as a channel shuffle: Reshape to [N, g, C / g, H, W], "
                     "Transpose(perm = [0, 2, 1, 3, 4]), Reshape back to [N, C, H, W]");
  }
  m.add_layer(node, LayerKind::ChannelShuffle, ChannelShuffleAttrs{v.groups}, {v.layer});
}

// Transpose: [N, C, H, W] to channels-last [N, H, W, C] and back (the same layer's output, seen
// another way), or the middle of a channel shuffle ([N, g, C / g, H, W] to [N, C / g, g, H, W]).
void transpose(Importer& m, const onnx::NodeProto& node) {
  const ShuffleView* v = node.input_size() > 0 ? m.find_view(node.input(0)) : nullptr;
  const std::vector<long long> perm = ints_attr(node, "perm");
  if (v == nullptr && node.input_size() > 0 && m.find_gelu(node.input(0)) == nullptr &&
      m.find_norm(node.input(0)) == nullptr) {
    const std::string x = m.source(node, 0);
    const bool last = m.channels_last(node.input(0));
    if (m.rank(x) == 4 && perm == std::vector<long long>{0, 2, 3, 1} && !last) {
      m.map_output(node, 0, x);
      return m.set_channels_last(node.output(0));
    }
    if (m.rank(x) == 4 && perm == std::vector<long long>{0, 3, 1, 2} && last) return m.map_output(node, 0, x);
  }
  if (v == nullptr || v->transposed || perm != std::vector<long long>{0, 2, 1, 3, 4}) {
    if (v == nullptr) m.source(node, 0);  // a tensor nobody wrote is refused as such
    m.fail(node, "perm " + shape_string(perm) +
                     "; infer transposes [N, C, H, W] to channels-last (perm [0, 2, 3, 1]) and back (perm [0, 3, 1, "
                     "2]), and within a channel shuffle: Reshape to [N, g, C / g, H, W], "
                     "Transpose(perm = [0, 2, 1, 3, 4]), Reshape back to [N, C, H, W]");
  }
  ShuffleView t = *v;
  t.transposed = true;
  m.define_view(node, t);
}

// Reshape with the batch dimension kept: to [N, features] (PyTorch's x.view(x.size(0), -1) or
// torch.flatten(x, 1)), or to the input's own shape (nothing to do). The shape may be folded
// (onnx_fold.cpp): its first dimension is then the batch size itself.
void reshape(Importer& m, const onnx::NodeProto& node) {
  const Constant& shape = m.value(node, 1);
  if (shape.is_float || shape.ints.empty()) m.fail(node, "the shape must be integers");
  if (node.input_size() > 0 && m.find_view(node.input(0))) return shuffle_end(m, node, shape);
  const std::string x = m.source(node, 0);
  const Dims in = m.shape_of(x);
  const std::vector<long long> in_dims =
      m.rank(x) == 2 ? std::vector<long long>{in.c} : std::vector<long long>{in.c, in.h, in.w};
  const std::vector<long long> dims = per_sample_shape(m, node, shape, in_dims, in.size());
  if (dims.size() == 1) return void(m.add_layer(node, LayerKind::Flatten, {}, {x}));
  if (dims == in_dims) return m.passthrough(node);
  if (m.rank(x) == 4 && dims.size() == 4 && dims[0] * dims[1] == in.c && dims[2] == in.h && dims[3] == in.w)
    return m.define_view(node, ShuffleView{x, static_cast<int>(dims[0]), false});  // a channel shuffle begins
  m.fail(node, "reshapes " + shape_string(in_dims) + " samples to " + shape_string(dims) +
                   "; infer reshapes to [N, features] (a flatten) or to the same shape");
}

// ReduceMean over H and W of an [N, C, H, W] tensor (x.mean([2, 3])): a global average pooling,
// flattened to [N, C] unless keepdims.
// Or over the last axis of a channels-last tensor (keepdims), the mean and the variance of a layer
// normalisation written out (kNormChain).
void reduce_mean(Importer& m, const onnx::NodeProto& node) {
  std::vector<long long> last_axis = ints_attr(node, "axes");
  const bool over_last = (last_axis == std::vector<long long>{-1} || last_axis == std::vector<long long>{3}) &&
                         int_attr(node, "keepdims", 1) == 1;
  if (const NormView* sq = norm_step(m, node, 0, 3); sq != nullptr && over_last) {
    return m.define_norm(node, NormView{sq->layer, 4});
  }
  const std::string x = m.source(node, 0);
  if (m.channels_last(node.input(0))) {
    if (!over_last) {
      m.fail(node, "reduces axes " + shape_string(last_axis) +
                       " of a channels-last tensor; infer reduces it only over its last axis, keeping it, as " +
                       kNormChain);
    }
    return m.define_norm(node, NormView{x, 1});
  }
  std::vector<long long> axes = ints_attr(node, "axes");
  for (long long& a : axes) a = a < 0 ? a + m.rank(x) : a;
  std::sort(axes.begin(), axes.end());
  if (m.rank(x) != 4 || axes != std::vector<long long>{2, 3}) {
    m.fail(node, "reduces axes " + shape_string(ints_attr(node, "axes")) + " of a rank-" + std::to_string(m.rank(x)) +
                     " tensor; infer averages [N, C, H, W] over H and W (axes [2, 3])");
  }
  if (int_attr(node, "keepdims", 1) != 0) return void(m.add_layer(node, LayerKind::GlobalAvgPool, {}, {x}));
  const std::string pooled = m.add_layer(node, LayerKind::GlobalAvgPool, {}, {x}, ".mean").name;
  m.add_layer(node, LayerKind::Flatten, {}, {pooled});
}

// Softmax over the channels: axis 1, or the last axis of a flat [N, features] input.
void softmax(Importer& m, const onnx::NodeProto& node) {
  const std::string x = m.source(node, 0);
  const long long axis = int_attr(node, "axis", m.opset() >= 13 ? -1 : 1);
  const Dims in = m.shape_of(x);
  const int rank = m.rank(x);
  // infer's softmax is over the channels at each position. Opset 13 on: over `axis` alone, so axis
  // 1 (or the last axis of [N, C]). Before: over every axis from `axis` on, flattened, which is the
  // channels only when nothing follows them (rank 2, or H = W = 1).
  const bool channels = m.opset() >= 13 ? (axis == 1 || axis == -rank + 1 || (rank == 2 && axis == -1))
                                        : ((axis == 1 || axis == -rank + 1) && (rank == 2 || (in.h == 1 && in.w == 1)));
  if (!channels) {
    m.fail(node, "axis " + std::to_string(axis) + " of a rank-" + std::to_string(rank) + " tensor (opset " +
                     std::to_string(m.opset()) + "); infer's softmax is over the channels at each position");
  }
  m.add_layer(node, LayerKind::Softmax, {}, {x});
}

// What a reader does with a channels-last input (Importer::channels_last): refuse it (the node
// computes along an axis that is not the channels), keep it (an elementwise op: its output is
// channels-last too), or handle it itself.
enum class Layout { Nchw, Keeps, Own };

// The readers that take a channels-last tensor, for a refusal.
constexpr const char* kChannelsLastReaders =
    "LayerNormalization over the last axis, MatMul, ReduceMean over the last axis, elementwise ops, Add and Mul, "
    "and Transpose back (perm [0, 3, 1, 2])";

// The ONNX ops read (onnx_ops() lists them): op type, whether it is elementwise, whether its
// reader checks the node's outputs itself (else: exactly one is used), what it does with a
// channels-last input, and the reader.
struct Reader {
  std::string_view type;
  bool elementwise;
  bool own_outputs;
  Layout layout;
  void (*read)(Importer&, const onnx::NodeProto&);
};
const std::vector<Reader>& readers() {
  using N = const onnx::NodeProto&;
  static const std::vector<Reader> table = {
      {"Conv", false, false, Layout::Nchw, [](Importer& m, N n) { conv(m, n); }},
      {"BatchNormalization", false, false, Layout::Nchw, [](Importer& m, N n) { batchnorm(m, n); }},
      {"Gemm", false, false, Layout::Nchw, [](Importer& m, N n) { gemm(m, n); }},
      {"MaxPool", false, false, Layout::Nchw, [](Importer& m, N n) { pool(m, n); }},
      {"AveragePool", false, false, Layout::Nchw, [](Importer& m, N n) { pool(m, n); }},
      {"GlobalAveragePool", false, false, Layout::Nchw,
       [](Importer& m, N n) { elementwise(m, n, LayerKind::GlobalAvgPool, {}); }},
      {"Relu", true, false, Layout::Keeps, [](Importer& m, N n) { elementwise(m, n, LayerKind::Relu, {}); }},
      {"Sigmoid", true, false, Layout::Keeps, [](Importer& m, N n) { pointwise(m, n, PointwiseOp::Sigmoid); }},
      {"HardSwish", true, false, Layout::Keeps, [](Importer& m, N n) { pointwise(m, n, PointwiseOp::HardSwish); }},
      {"HardSigmoid", true, false, Layout::Keeps,  // ONNX's default alpha is 0.2 (the model file's, PyTorch's 1/6)
       [](Importer& m, N n) {
         pointwise(m, n, PointwiseOp::HardSigmoid, {float_attr(n, "alpha", 0.2f), float_attr(n, "beta", 0.5f)});
       }},
      {"Clip", true, false, Layout::Keeps, [](Importer& m, N n) { clip(m, n); }},
      {"LeakyRelu", true, false, Layout::Keeps,
       [](Importer& m, N n) {
         pointwise(m, n, PointwiseOp::LeakyRelu, {float_attr(n, "alpha", 0.01f), 0.0f});
       }},
      {"Div", false, false, Layout::Own, [](Importer& m, N n) { divide(m, n); }},
      {"Erf", false, false, Layout::Own, [](Importer& m, N n) { erf_node(m, n); }},
      {"Add", false, false, Layout::Own, [](Importer& m, N n) { binary(m, n); }},
      {"Mul", false, false, Layout::Own, [](Importer& m, N n) { binary(m, n); }},
      {"Concat", false, false, Layout::Nchw, [](Importer& m, N n) { concat(m, n); }},
      {"Flatten", false, false, Layout::Nchw, [](Importer& m, N n) { flatten(m, n); }},
      {"Reshape", false, false, Layout::Nchw, [](Importer& m, N n) { reshape(m, n); }},
      {"Softmax", false, false, Layout::Nchw, [](Importer& m, N n) { softmax(m, n); }},
      {"ReduceMean", false, false, Layout::Own, [](Importer& m, N n) { reduce_mean(m, n); }},
      {"Transpose", false, false, Layout::Own, [](Importer& m, N n) { transpose(m, n); }},
      {"LayerNormalization", false, false, Layout::Own, [](Importer& m, N n) { layer_norm(m, n); }},
      {"MatMul", false, false, Layout::Own, [](Importer& m, N n) { matmul(m, n); }},
      {"Sub", false, false, Layout::Own, [](Importer& m, N n) { subtract(m, n); }},
      {"Pow", false, false, Layout::Own, [](Importer& m, N n) { power(m, n); }},
      {"Sqrt", false, false, Layout::Own, [](Importer& m, N n) { square_root(m, n); }},
      {"Slice", false, false, Layout::Nchw, [](Importer& m, N n) { slice(m, n); }},
      {"Split", false, true, Layout::Nchw, [](Importer& m, N n) { split(m, n); }},
      {"Resize", false, false, Layout::Nchw, [](Importer& m, N n) { resize(m, n); }},
      {"Pad", false, false, Layout::Nchw, [](Importer& m, N n) { pad(m, n); }},
      {"Upsample", false, false, Layout::Nchw, [](Importer& m, N n) { resize(m, n); }},
      {"Constant", false, true, Layout::Keeps, [](Importer& m, N n) { m.read_constant(n); }},
      {"Dropout", true, true, Layout::Keeps, [](Importer& m, N n) { m.passthrough(n); }},
      {"Identity", true, true, Layout::Keeps, [](Importer& m, N n) { m.passthrough(n); }},
  };
  return table;
}

std::string supported_list() {
  std::string list;
  for (const Reader& r : readers()) list += (list.empty() ? "" : ", ") + std::string(r.type);
  return list;
}

}  // namespace

void convert(Importer& m, const onnx::NodeProto& node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    m.fail(node, "domain '" + node.domain() + "' is not ONNX's default domain");
  if (node.output_size() < 1) m.fail(node, "the node has no output");
  if (fold(m, node)) return;
  for (const Reader& r : readers()) {
    if (r.type != node.op_type()) continue;
    if (!r.own_outputs) m.no_extra_outputs(node, 1);
    const bool channels_last = any_channels_last(m, node);
    if (channels_last && r.layout == Layout::Nchw) {
      m.fail(node,
             "reads a channels-last tensor ([N, H, W, C], after a Transpose with perm [0, 2, 3, 1]); infer "
             "reads one only with " +
                 std::string(kChannelsLastReaders));
    }
    r.read(m, node);
    if (channels_last && r.layout == Layout::Keeps) m.set_channels_last(node.output(0));
    return;
  }
  m.fail(node, "op " + node.op_type() + " is not supported (infer imports: " + supported_list() + ")");
}

}  // namespace onnx_import

std::vector<OnnxOp> onnx_ops() {
  std::vector<OnnxOp> ops;
  for (const onnx_import::Reader& r : onnx_import::readers()) ops.push_back({std::string(r.type), r.elementwise});
  return ops;
}

}  // namespace infer
