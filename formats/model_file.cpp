#include "formats/model_file.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "graph/model_error.h"
#include "platform/input_file.h"
#include "formats/onnx_model.h"
#include "formats/safetensors.h"

namespace infer {
namespace {

// Version 1: a chain of the first nine ops. Version 2: a graph (layers name their inputs), more ops,
// and dropout / identity entries, which are removed at load. Both are read.
constexpr long long kFormatVersion = 2;
constexpr std::uint64_t kMaxModelTomlBytes = 16u << 20;

// Reads typed values from one TOML table, reporting problems as "<file>:<line>: ..." and
// refusing keys that no reader asked for (a misspelt attribute must not be silently ignored).
class TableReader {
 public:
  TableReader(const std::string& file, const toml::table& table, std::string context)
      : file_(file), table_(table), context_(std::move(context)) {}

  [[noreturn]] void fail(const toml::node* node, const std::string& problem) const {
    const auto line = node ? node->source().begin.line : table_.source().begin.line;
    throw InputError(file_, "line " + std::to_string(line) + ": " + context_ + problem);
  }

  const toml::node* find(const std::string& key) {
    used_.insert(key);
    return table_.get(key);
  }

  const toml::node& require(const std::string& key) {
    const toml::node* n = find(key);
    if (!n) fail(nullptr, "missing key '" + key + "'");
    return *n;
  }

  std::string string(const std::string& key) {
    const toml::node& n = require(key);
    if (!n.is_string()) fail(&n, "key '" + key + "' must be a string");
    return n.as_string()->get();
  }

  long long integer(const std::string& key) {
    const toml::node& n = require(key);
    if (!n.is_integer()) fail(&n, "key '" + key + "' must be an integer");
    return n.as_integer()->get();
  }

  int int_value(const std::string& key, int fallback, long long min_value) {
    const toml::node* n = find(key);
    if (!n) return fallback;
    if (!n->is_integer()) fail(n, "key '" + key + "' must be an integer");
    const long long v = n->as_integer()->get();
    if (v < min_value || v > 1'000'000) {
      fail(n, "key '" + key + "' = " + std::to_string(v) + " is out of range [" + std::to_string(min_value) +
                  ", 1000000]");
    }
    return static_cast<int>(v);
  }

  bool boolean(const std::string& key, bool fallback) {
    const toml::node* n = find(key);
    if (!n) return fallback;
    if (!n->is_boolean()) fail(n, "key '" + key + "' must be true or false");
    return n->as_boolean()->get();
  }

  double number(const std::string& key, double fallback) {
    const toml::node* n = find(key);
    if (!n) return fallback;
    if (!n->is_number()) fail(n, "key '" + key + "' must be a number");
    return n->value<double>().value();
  }

  // A pair [h, w] of integers; a single integer means the same value for both.
  std::pair<int, int> pair(const std::string& key, std::pair<int, int> fallback, long long min_value) {
    const toml::node* n = find(key);
    if (!n) return fallback;
    auto check = [&](const toml::node& v) {
      if (!v.is_integer()) fail(n, "key '" + key + "' must be an integer or [height, width]");
      const long long x = v.as_integer()->get();
      if (x < min_value || x > 1'000'000) {
        fail(n, "key '" + key + "' has " + std::to_string(x) + ", out of range [" + std::to_string(min_value) +
                    ", 1000000]");
      }
      return static_cast<int>(x);
    };
    if (n->is_integer()) {
      const int v = check(*n);
      return {v, v};
    }
    const toml::array* a = n->as_array();
    if (!a || a->size() != 2) fail(n, "key '" + key + "' must be an integer or [height, width]");
    return {check(*a->get(0)), check(*a->get(1))};
  }

  // An array of integers in [min_value, max_value] (the key is required).
  std::vector<int> ints(const std::string& key, long long min_value, long long max_value) {
    const toml::node& n = require(key);
    const toml::array* a = n.as_array();
    if (!a) fail(&n, "key '" + key + "' must be an array of integers");
    std::vector<int> out;
    for (const toml::node& v : *a) {
      if (!v.is_integer()) fail(&n, "key '" + key + "' must be an array of integers");
      const long long x = v.as_integer()->get();
      if (x < min_value || x > max_value) {
        fail(&n, "key '" + key + "' has " + std::to_string(x) + ", out of range [" + std::to_string(min_value) + ", " +
                     std::to_string(max_value) + "]");
      }
      out.push_back(static_cast<int>(x));
    }
    return out;
  }

  std::vector<float> floats(const std::string& key) {
    const toml::node& n = require(key);
    const toml::array* a = n.as_array();
    if (!a) fail(&n, "key '" + key + "' must be an array of numbers");
    std::vector<float> out;
    for (const toml::node& v : *a) {
      if (!v.is_number()) fail(&n, "key '" + key + "' must be an array of numbers");
      const double x = v.value<double>().value();
      out.push_back(static_cast<float>(x));
      if (!std::isfinite(out.back())) {  // nan, inf, or beyond float32's range (1e39)
        fail(&n, "key '" + key + "' has " + value_string(x) + " at index " + std::to_string(out.size() - 1) +
                     "; every value must be a finite float32 number");
      }
    }
    return out;
  }

  std::vector<std::string> strings(const std::string& key) {
    const toml::node* n = find(key);
    if (!n) return {};
    const toml::array* a = n->as_array();
    if (!a) fail(n, "key '" + key + "' must be an array of strings");
    std::vector<std::string> out;
    for (const toml::node& v : *a) {
      if (!v.is_string()) fail(n, "key '" + key + "' must be an array of strings");
      out.push_back(v.as_string()->get());
    }
    return out;
  }

  // Call after reading: any key not asked for is an error.
  void reject_unknown_keys() const {
    for (auto&& [key, node] : table_) {
      if (!used_.count(std::string(key.str()))) fail(&node, "unknown key '" + std::string(key.str()) + "'");
    }
  }

 private:
  const std::string& file_;
  const toml::table& table_;
  std::string context_;
  std::set<std::string> used_;
};

LayerKind parse_kind(TableReader& r, const std::string& type) {
  for (LayerKind k : kAllOps) {
    if (type == op_name(k)) return k;
  }
  std::string known;
  for (std::string_view name : kOpNames) known += (known.empty() ? "" : ", ") + std::string(name);
  r.fail(r.find("type"), "unknown layer type '" + type + "' (known: " + known + ")");
}

// A normalisation's epsilon (batchnorm, layernorm): positive and finite, 1e-5 (PyTorch's) when absent.
double epsilon(TableReader& named) {
  const double eps = named.number("epsilon", 1e-5);
  if (!(eps > 0.0) || !std::isfinite(eps)) {
    named.fail(named.find("epsilon"), "epsilon must be a positive finite number, found " + value_string(eps));
  }
  return eps;
}

// One [[layers]] entry. Dropout and identity compute nothing at inference: they come back as a
// Layer of kind Relu with `removed` set, to be dropped by the caller (load_layers).
struct ParsedLayer {
  Layer layer;
  bool removed = false;
};

ParsedLayer parse_layer(const std::string& file, const toml::table& t, std::size_t index, long long version) {
  TableReader r(file, t, "layers[" + std::to_string(index) + "]: ");
  ParsedLayer parsed;
  Layer& layer = parsed.layer;
  layer.name = r.string("name");
  if (layer.name.empty()) r.fail(r.find("name"), "layer name must not be empty");
  TableReader named(file, t, "layer '" + layer.name + "': ");
  named.find("name");
  const std::string type = named.string("type");
  if (const toml::node* inputs = named.find("inputs")) {
    if (version < 2) named.fail(inputs, "key 'inputs' needs format_version = 2");
    if (inputs->is_string()) {
      layer.inputs.push_back(inputs->as_string()->get());
    } else {
      layer.inputs = named.strings("inputs");
      if (layer.inputs.empty()) named.fail(inputs, "key 'inputs' must name at least one layer");
    }
  }
  if (type == "dropout" || type == "identity") {
    if (version < 2) named.fail(named.find("type"), "layer type '" + type + "' needs format_version = 2");
    if (layer.inputs.size() > 1) named.fail(named.find("inputs"), "a " + type + " layer reads one input");
    if (type == "dropout") {
      const double p = named.number("p", 0.0);
      if (!(p >= 0.0 && p < 1.0)) named.fail(named.find("p"), "key 'p' must be in [0, 1), found " + value_string(p));
    }
    named.reject_unknown_keys();
    parsed.removed = true;
    return parsed;
  }
  layer.kind = parse_kind(named, type);
  if (version < 2 && static_cast<std::size_t>(layer.kind) > static_cast<std::size_t>(LayerKind::Softmax)) {
    named.fail(named.find("type"), "layer type '" + type + "' needs format_version = 2");
  }
  switch (layer.kind) {
    case LayerKind::Conv2d: {
      Conv2dAttrs a;
      a.out_channels = named.int_value("out_channels", 0, 1);
      if (a.out_channels == 0) named.fail(nullptr, "missing key 'out_channels'");
      std::tie(a.kernel_h, a.kernel_w) = named.pair("kernel", {0, 0}, 1);
      if (a.kernel_h == 0) named.fail(nullptr, "missing key 'kernel'");
      std::tie(a.stride_h, a.stride_w) = named.pair("stride", {1, 1}, 1);
      std::tie(a.pad_h, a.pad_w) = named.pair("padding", {0, 0}, 0);
      std::tie(a.dilation_h, a.dilation_w) = named.pair("dilation", {1, 1}, 1);
      a.groups = named.int_value("groups", 1, 1);
      a.bias = named.boolean("bias", true);
      layer.attrs = a;
      break;
    }
    case LayerKind::MaxPool:
    case LayerKind::AvgPool: {
      Pool2dAttrs a;
      std::tie(a.kernel_h, a.kernel_w) = named.pair("kernel", {0, 0}, 1);
      if (a.kernel_h == 0) named.fail(nullptr, "missing key 'kernel'");
      std::tie(a.stride_h, a.stride_w) = named.pair("stride", {a.kernel_h, a.kernel_w}, 1);
      std::tie(a.pad_h, a.pad_w) = named.pair("padding", {0, 0}, 0);
      if (layer.kind == LayerKind::AvgPool) a.count_include_pad = named.boolean("count_include_pad", true);
      if (const toml::node* ceil = named.find("ceil_mode"); ceil && version < 2) {
        named.fail(ceil, "key 'ceil_mode' needs format_version = 2");
      }
      a.ceil_mode = named.boolean("ceil_mode", false);
      layer.attrs = a;
      break;
    }
    case LayerKind::BatchNorm: layer.attrs = BatchNormAttrs{epsilon(named)}; break;
    case LayerKind::LayerNorm: layer.attrs = LayerNormAttrs{epsilon(named)}; break;
    case LayerKind::Linear: {
      LinearAttrs a;
      a.out_features = named.int_value("out_features", 0, 1);
      if (a.out_features == 0) named.fail(nullptr, "missing key 'out_features'");
      a.bias = named.boolean("bias", true);
      layer.attrs = a;
      break;
    }
    case LayerKind::Add:
      layer.attrs = AddAttrs{named.boolean("relu", false)};
      break;
      INFER_CASE_POINTWISE_OPS {
        // The row's keys (ops.h); a key without a default is required, an empty one is fixed.
        const PointwiseKeys& keys = pointwise_keys(pointwise_op(layer.kind));
        auto value = [&](std::string_view key, float fallback) {
          if (key.empty()) return fallback;
          const std::string k(key);
          if (std::isnan(fallback)) named.require(k);
          return static_cast<float>(named.number(k, fallback));
        };
        PointwiseAttrs a{value(keys.key_a, keys.default_a), value(keys.key_b, keys.default_b)};
        const std::string problem = pointwise_params_problem(pointwise_op(layer.kind), a);
        if (!problem.empty()) named.fail(keys.key_a.empty() ? nullptr : named.find(std::string(keys.key_a)), problem);
        layer.attrs = a;
        break;
      }
    // No attributes: any key is refused below. Listed, not defaulted, so that a new kind is a build error.
    case LayerKind::Relu:
    case LayerKind::GlobalAvgPool:
    case LayerKind::Flatten:
    case LayerKind::Softmax:
    case LayerKind::Mul:
    case LayerKind::Concat: break;
    case LayerKind::AdaptiveAvgPool: {
      named.require("output");
      const auto [h, w] = named.pair("output", {1, 1}, 1);
      layer.attrs = AdaptivePoolAttrs{h, w};
      break;
    }
    case LayerKind::Pad: {
      const std::vector<int> p = named.ints("pads", 0, 1'000'000);
      if (p.size() != 4) named.fail(named.find("pads"), "key 'pads' must be [top, left, bottom, right]");
      const float value = static_cast<float>(named.number("value", 0.0));
      if (std::isnan(value)) named.fail(named.find("value"), "key 'value' must be a number or an infinity, found NaN");
      layer.attrs = PadAttrs{p[0], p[1], p[2], p[3], value};
      break;
    }
    case LayerKind::Upsample: {
      const auto [h, w] = named.pair("scale", {2, 2}, 1);
      layer.attrs = UpsampleAttrs{h, w};
      break;
    }
    case LayerKind::Resize: {
      named.require("size");
      const auto [h, w] = named.pair("size", {1, 1}, 1);
      if (named.find("mode") && named.string("mode") != "bilinear") {  // the one mode so far, named for the reader
        named.fail(named.find("mode"), "key 'mode' must be \"bilinear\", found \"" + named.string("mode") + "\"");
      }
      layer.attrs = ResizeAttrs{h, w, named.boolean("align_corners", false)};
      break;
    }
    case LayerKind::ChannelShuffle:
      named.require("groups");
      layer.attrs = ChannelShuffleAttrs{named.int_value("groups", 1, 1)};
      break;
    case LayerKind::ChannelSlice:  // end > C and begin >= end: the shape rule (network.cpp), naming both
      named.require("begin");
      named.require("end");
      layer.attrs = ChannelSliceAttrs{named.int_value("begin", 0, 0), named.int_value("end", 1, 1)};
      break;
  }
  named.reject_unknown_keys();
  return parsed;
}

// The [[layers]] array as the network's layers: dropout and identity entries removed, every layer
// that read one reading its input instead (by name: an entry that read the one before it by default
// names it explicitly).
std::vector<Layer> load_layers(const std::string& file, const toml::array& entries, long long version) {
  std::vector<Layer> layers;
  std::map<std::string, std::string> removed;  // a removed entry's name -> the name it passes on
  std::set<std::string> names;
  std::string previous = kNetworkInputName;  // what an entry without `inputs` reads
  auto resolve = [&](const std::string& name) {
    const auto r = removed.find(name);
    return r == removed.end() ? name : r->second;
  };
  for (std::size_t i = 0; i < entries.size(); ++i) {
    ParsedLayer parsed = parse_layer(file, *entries.get(i)->as_table(), i, version);
    Layer& layer = parsed.layer;
    const std::string line = "line " + std::to_string(entries.get(i)->source().begin.line) + ": ";
    if (layer.name == kNetworkInputName) {  // a removed entry too: it would take the input's name over
      throw InputError(file,
                       line + "no layer may be named '" + kNetworkInputName + "': it stands for the network input");
    }
    if (!names.insert(layer.name).second) {
      throw InputError(file, "line " + std::to_string(entries.get(i)->source().begin.line) +
                                 ": two layers are named '" + layer.name + "'");
    }
    const std::string real_previous = layers.empty() ? std::string(kNetworkInputName) : layers.back().name;
    if (layer.inputs.empty() && previous != real_previous) layer.inputs.push_back(previous);
    for (std::string& name : layer.inputs) name = resolve(name);
    if (parsed.removed) {
      removed[layer.name] = layer.inputs.empty() ? previous : layer.inputs[0];
      previous = removed[layer.name];
      continue;
    }
    previous = layer.name;
    layers.push_back(std::move(layer));
  }
  // The network's output is the last layer's: a trailing dropout or identity must pass that on.
  if (!layers.empty() && previous != layers.back().name) {
    throw InputError(file, "the last entry passes on '" + previous +
                               "', but the network's output is the last layer's ('" + layers.back().name +
                               "'); list the layers so that the output comes last");
  }
  return layers;
}

// One of `names` (a value's spelling, as the *_name functions of network.h give it) or `fallback`.
template <class E>
E choice(TableReader& in, const std::string& key, std::initializer_list<E> values, const char* (*name)(E), E fallback) {
  const toml::node* n = in.find(key);
  if (!n) return fallback;
  std::string known;
  for (E v : values) {
    if (n->is_string() && n->as_string()->get() == name(v)) return v;
    known += (known.empty() ? "\"" : ", \"") + std::string(name(v)) + "\"";
  }
  in.fail(n, "key '" + key + "' must be one of " + known);
}

// The [input] keys that say how an image becomes the input (network.h, Preprocessing).
Preprocessing read_preprocessing(TableReader& in, const Dims& dims) {
  Preprocessing p;
  p.resize = choice(in, "resize", {ResizeMode::TrimFit, ResizeMode::Stretch, ResizeMode::Crop}, resize_mode_name,
                    ResizeMode::Crop);
  p.resize_size = in.int_value("resize_size", 0, 1);
  if (p.resize_size != 0 && p.resize != ResizeMode::Crop)
    in.fail(in.find("resize_size"), "resize_size needs resize = \"crop\"");
  if (p.resize_size != 0 && p.resize_size < std::max(dims.h, dims.w)) {
    in.fail(in.find("resize_size"), "resize_size " + std::to_string(p.resize_size) +
                                        " is smaller than the input, which is cropped from it (" +
                                        std::to_string(dims.h) + "x" + std::to_string(dims.w) + ")");
  }
  p.channel_order =
      choice(in, "channel_order", {ChannelOrder::Rgb, ChannelOrder::Bgr}, channel_order_name, ChannelOrder::Rgb);
  p.invert =
      choice(in, "invert", {InvertMode::Auto, InvertMode::Yes, InvertMode::No}, invert_mode_name, InvertMode::No);
  // torchvision's transform (crop) drops alpha; the other modes keep what infer always did.
  p.alpha = choice(in, "alpha", {AlphaMode::White, AlphaMode::Drop}, alpha_mode_name,
                   p.resize == ResizeMode::Crop ? AlphaMode::Drop : AlphaMode::White);
  return p;
}

// The [input] table. `given`: the input shape the graph already has (an ONNX model), which the
// table may then leave out, or repeat to have it checked; null: channels, height and width are
// required. Mean and std default to 0 and 1 per channel for an ONNX model (pixels in [0, 1]).
InputSpec read_input_spec(const std::string& file, const toml::node& input_node, TableReader& r, const Dims* given) {
  if (!input_node.is_table()) r.fail(&input_node, "[input] must be a table");
  TableReader in(file, *input_node.as_table(), "[input]: ");
  InputSpec input;
  input.dims.c = in.int_value("channels", given ? given->c : 0, 1);
  input.dims.h = in.int_value("height", given ? given->h : 0, 1);
  input.dims.w = in.int_value("width", given ? given->w : 0, 1);
  if (input.dims.c == 0 || input.dims.h == 0 || input.dims.w == 0) {
    in.fail(nullptr, "channels, height and width are required");
  }
  if (given && input.dims != *given) {
    in.fail(nullptr, "channels, height and width say " + to_string(input.dims) + ", the ONNX graph's input is " +
                         to_string(*given));
  }
  const bool defaults = given && !in.find("mean") && !in.find("std");
  input.mean = defaults ? std::vector<float>(static_cast<std::size_t>(input.dims.c), 0.0f) : in.floats("mean");
  input.std = defaults ? std::vector<float>(static_cast<std::size_t>(input.dims.c), 1.0f) : in.floats("std");
  input.labels = in.strings("labels");
  input.preprocessing = read_preprocessing(in, input.dims);
  in.reject_unknown_keys();
  return input;
}

// An ONNX model read directly: the input as the graph says, pixels in [0, 1] (mean 0, std 1), the
// default preprocessing (crop), no labels.
LoadedModel load_onnx_file(const std::filesystem::path& path, const FileCheck& check) {
  if (check) check(path);
  OnnxModel onnx = read_onnx(path);
  InputSpec input;
  input.dims = onnx.input;
  input.mean.assign(static_cast<std::size_t>(onnx.input.c), 0.0f);
  input.std.assign(static_cast<std::size_t>(onnx.input.c), 1.0f);
  try {
    return LoadedModel{Network(onnx.name, std::move(input), std::move(onnx.layers)), path, path};
  } catch (const ModelError& e) {
    throw InputError(path.u8string(), e.what());
  }
}

toml::table parse_toml(const std::filesystem::path& toml_path) {
  const std::string file = toml_path.u8string();
  // A model TOML is a few KB (its labels included); the limit stops a wrong file being read whole.
  const std::string text = read_text_file(toml_path, kMaxModelTomlBytes, "a model file");
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw InputError(
        file, "line " + std::to_string(e.source().begin.line) + ": invalid TOML: " + std::string(e.description()));
  }
}

// A version 2 model TOML with `onnx = "file.onnx"`: the graph and weights from the ONNX file, the
// rest ([input]) from the TOML.
LoadedModel load_onnx_described(const std::filesystem::path& toml_path, const toml::table& root, TableReader& r,
                                const std::string& name, const FileCheck& check) {
  const std::string file = toml_path.u8string();
  std::filesystem::path onnx_path = std::filesystem::u8path(r.string("onnx"));
  if (onnx_path.is_relative()) onnx_path = toml_path.parent_path() / onnx_path;
  if (check) check(onnx_path);
  OnnxModel onnx = read_onnx(onnx_path);
  InputSpec input = read_input_spec(file, r.require("input"), r, &onnx.input);
  if (root.contains("layers") || root.contains("weights")) {
    r.fail(root.get(root.contains("layers") ? "layers" : "weights"),
           "a model with 'onnx' takes its layers and weights from the ONNX file");
  }
  r.reject_unknown_keys();
  try {
    return LoadedModel{Network(name, std::move(input), std::move(onnx.layers)), toml_path, onnx_path};
  } catch (const ModelError& e) {
    throw InputError(onnx_path.u8string(), e.what());
  }
}

LoadedModel load_from_table(const std::filesystem::path& toml_path, const toml::table& root,
                            std::filesystem::path weights_path, const FileCheck& check = {}) {
  const std::string file = toml_path.u8string();
  TableReader r(file, root, "");
  if (r.string("format") != "infer-model") r.fail(r.find("format"), "key 'format' must be \"infer-model\"");
  const long long version = r.integer("format_version");
  if (version < 1 || version > kFormatVersion) {
    r.fail(r.find("format_version"), "format_version " + std::to_string(version) +
                                         " is not supported (this build reads 1 to " + std::to_string(kFormatVersion) +
                                         ")");
  }
  const std::string name = r.string("name");
  // An ONNX graph instead of [[layers]] and weights: this file then only says what ONNX cannot
  // (labels, mean and std, preprocessing), and the input's shape if it wants it checked.
  const toml::node* onnx_key = version >= 2 ? r.find("onnx") : nullptr;
  if (onnx_key) return load_onnx_described(toml_path, root, r, name, check);
  const std::string weights_key = r.string("weights");
  if (weights_path.empty()) {
    weights_path = std::filesystem::u8path(weights_key);
    if (weights_path.is_relative()) weights_path = toml_path.parent_path() / weights_path;
  }

  const toml::node& input_node = r.require("input");
  InputSpec input = read_input_spec(file, input_node, r, nullptr);
  const toml::node& layers_node = r.require("layers");
  const toml::array* layer_array = layers_node.as_array();
  if (!layer_array || !layer_array->is_array_of_tables()) r.fail(&layers_node, "[[layers]] must be an array of tables");
  std::vector<Layer> layers = load_layers(file, *layer_array, version);
  r.reject_unknown_keys();

  // The graph's shapes give each tensor's expected shape; then read the tensors.
  try {
    connect(input.dims, layers);
  } catch (const ModelError& e) {
    throw InputError(file, e.what());
  }
  if (check) check(weights_path);
  const SafetensorsFile weights(weights_path);
  const std::string wfile = weights_path.u8string();
  std::set<std::string> used;
  for (Layer& layer : layers) {
    for (const ParamShape& p : expected_params(layer, layer.in)) {
      if (!weights.contains(p.name)) {
        throw InputError(wfile, "layer '" + layer.name + "': tensor '" + p.name + "' is missing (expected shape " +
                                    shape_string(p.shape) + ")");
      }
      const SafetensorsEntry& e = weights.entry(p.name);
      if (e.shape != p.shape) {
        throw InputError(wfile, "layer '" + layer.name + "': tensor '" + p.name + "' has shape " +
                                    shape_string(e.shape) + ", expected " + shape_string(p.shape));
      }
      layer.params.*(p.field) = weights.read_f32(p.name);
      used.insert(p.name);
    }
    // NaN or Inf in a parameter made every output "prob": null; refused here, naming the weights.
    const std::string problem = unusable_params(layer, layer.in);
    if (!problem.empty()) throw InputError(wfile, "layer '" + layer.name + "': " + problem);
  }
  for (const auto& [tensor, entry] : weights.entries()) {
    if (!used.count(tensor)) {
      throw InputError(wfile, "tensor '" + tensor + "' is not used by any layer of " + file);
    }
  }

  try {
    return LoadedModel{Network(name, std::move(input), std::move(layers)), toml_path, weights_path};
  } catch (const ModelError& e) {
    throw InputError(file, e.what());
  }
}

}  // namespace

static bool is_onnx_file(const std::filesystem::path& path) {
  const InputFile f(path);
  unsigned char head[2] = {};
  if (f.size() < sizeof head) return false;
  f.read_at(0, head, sizeof head);
  return looks_like_onnx(head, sizeof head);
}

LoadedModel load_model(const std::filesystem::path& toml_path) {
  if (is_onnx_file(toml_path)) return load_onnx_file(toml_path, {});
  return load_from_table(toml_path, parse_toml(toml_path), {});
}

LoadedModel load_model(const std::filesystem::path& toml_path, const FileCheck& check) {
  if (is_onnx_file(toml_path)) return load_onnx_file(toml_path, check);
  toml::table root = parse_toml(toml_path);
  if (check) check(toml_path);
  return load_from_table(toml_path, root, {}, check);
}

LoadedModel load_model(const std::filesystem::path& toml_path, const std::filesystem::path& weights_path) {
  return load_from_table(toml_path, parse_toml(toml_path), weights_path);
}

}  // namespace infer
