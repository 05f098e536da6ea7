#include "formats/onnx_model.h"

#include "onnx.pb.h"  // generated from ONNX's schema (model/CMakeLists.txt)

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "graph/model_error.h"
#include "platform/input_file.h"

namespace infer {
namespace {

// protobuf refuses messages over 2 GiB; a model that large keeps its weights as external data,
// which is not read.
constexpr std::uint64_t kMaxOnnxBytes = (std::uint64_t{2} << 30) - 1;  // ParseFromArray takes an int size

// A tensor's values as float32, row-major, with its dimensions.
struct Constant {
  std::vector<long long> dims;
  std::vector<float> floats;
  std::vector<long long> ints;  // INT64 tensors (shapes)
};

class Importer {
 public:
  Importer(std::string file, const onnx::ModelProto& model, std::size_t file_bytes)
      : file_(std::move(file)), model_(model), max_parameters_(file_bytes) {}

  OnnxModel run() {
    read_opset();
    const onnx::GraphProto& g = model_.graph();
    result_.name = g.name().empty() ? "onnx-model" : g.name();
    for (const onnx::TensorProto& t : g.initializer()) {
      constants_[t.name()] = std::make_shared<const Constant>(tensor(t, "initializer '" + t.name() + "'"));
    }
    for (const onnx::NodeProto& node : g.node()) {
      for (const std::string& name : node.input()) read_.insert(name);
    }
    read_input();
    for (const onnx::NodeProto& node : g.node()) convert(node);
    read_output();
    return std::move(result_);
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const { throw InputError(file_, problem); }

  [[noreturn]] void fail(const onnx::NodeProto& node, const std::string& problem) const {
    fail("node '" + node_name(node) + "' (" + node.op_type() + "): " + problem);
  }

  static std::string node_name(const onnx::NodeProto& node) {
    return !node.name().empty() ? node.name() : node.output_size() > 0 ? node.output(0) : node.op_type();
  }

  void read_opset() {
    for (const onnx::OperatorSetIdProto& o : model_.opset_import()) {
      if (o.domain().empty() || o.domain() == "ai.onnx") result_.opset = o.version();
    }
    if (result_.opset < kOnnxMinOpset || result_.opset > kOnnxMaxOpset) {
      fail("opset " + std::to_string(result_.opset) + " of the default ONNX domain; infer reads opsets " +
           std::to_string(kOnnxMinOpset) + " to " + std::to_string(kOnnxMaxOpset) +
           " (torch.onnx.export(..., opset_version=14) writes one in range)");
    }
  }

  Constant tensor(const onnx::TensorProto& t, const std::string& what) const {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      fail(what + " is stored outside the file (external data); save the model with its weights inside it");
    }
    Constant c;
    std::size_t count = 1;
    for (long long d : t.dims()) {
      // The file holds every value, so no tensor has more elements than the file has bytes.
      if (d < 0 || d > (1LL << 31) || (d > 0 && count > kMaxOnnxBytes / static_cast<std::size_t>(d))) {
        fail(what + " declares dimension " + std::to_string(d) + ", more values than the file can hold");
      }
      c.dims.push_back(d);
      count *= static_cast<std::size_t>(d);
    }
    if (t.data_type() == onnx::TensorProto::FLOAT) {
      c.floats = values<float>(t, t.float_data(), count, what, "floats");
    } else if (t.data_type() == onnx::TensorProto::INT64) {
      c.ints = values<long long>(t, t.int64_data(), count, what, "int64 values");
    } else {
      fail(what + " has data type " +
           onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t.data_type())) +
           "; infer reads FLOAT weights (and INT64 shapes): export the model in float32");
    }
    return c;
  }

  // The `count` values of a FLOAT or INT64 tensor: its raw_data (little-endian, as x86 and ARM
  // are), else its typed field `typed`; `noun` names them in the message of a size mismatch.
  template <typename T, typename Repeated>
  std::vector<T> values(const onnx::TensorProto& t, const Repeated& typed, std::size_t count, const std::string& what,
                        const char* noun) const {
    static_assert(sizeof(T) == sizeof(*typed.begin()), "the typed field holds T");
    const std::string& raw = t.raw_data();
    std::vector<T> v;
    if (!raw.empty()) {
      if (raw.size() != count * sizeof(T)) {
        fail(what + " has " + std::to_string(raw.size()) + " bytes of data for " + std::to_string(count) + " " + noun);
      }
      v.resize(count);
      std::memcpy(v.data(), raw.data(), raw.size());
    } else {
      if (static_cast<std::size_t>(typed.size()) != count) {
        fail(what + " has " + std::to_string(typed.size()) + " values for " + std::to_string(count));
      }
      v.assign(typed.begin(), typed.end());
    }
    return v;
  }

  void read_input() {
    const onnx::GraphProto& g = model_.graph();
    const onnx::ValueInfoProto* input = nullptr;
    int count = 0;
    for (const onnx::ValueInfoProto& v : g.input()) {
      if (constants_.count(v.name())) continue;  // older exporters list initializers as inputs too
      input = &v;
      ++count;
    }
    if (count != 1)
      fail("the graph has " + std::to_string(count) + " inputs that are not initializers; infer feeds one (the image)");
    const auto& shape = input->type().tensor_type().shape();
    std::vector<long long> dims;
    for (const auto& d : shape.dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    auto known = [&](std::size_t i) {
      if (dims[i] <= 0 || dims[i] > 1'000'000) {
        fail("input '" + input->name() + "': dimension " + std::to_string(i) +
             " must be a fixed size (an exported image size), found " +
             (dims[i] < 0 ? std::string("a free dimension") : std::to_string(dims[i])));
      }
      return static_cast<int>(dims[i]);
    };
    if (input->type().tensor_type().elem_type() != onnx::TensorProto::FLOAT)
      fail("input '" + input->name() + "' is not float32");
    if (dims.size() == 4) {
      result_.input = Dims{known(1), known(2), known(3)};
    } else if (dims.size() == 2) {
      result_.input = Dims{known(1), 1, 1};
    } else {
      fail("input '" + input->name() + "' has " + std::to_string(dims.size()) +
           " dimensions; infer reads [N, C, H, W] images (or [N, features])");
    }
    shapes_[kNetworkInputName] = result_.input;
    ranks_[kNetworkInputName] = static_cast<int>(dims.size());
    producer_[input->name()] = kNetworkInputName;
  }

  void read_output() {
    const onnx::GraphProto& g = model_.graph();
    if (g.output_size() != 1) fail("the graph has " + std::to_string(g.output_size()) + " outputs; infer reads one");
    const std::string& name = g.output(0).name();
    const auto p = producer_.find(name);
    if (p == producer_.end() || result_.layers.empty() || p->second != result_.layers.back().name) {
      fail("the graph's output '" + name +
           "' is not written by its last computing node; infer's output is the last layer's");
    }
  }

  // The layer (by name) that writes tensor `name`; a node reading a tensor nobody wrote is refused.
  std::string source(const onnx::NodeProto& node, int index) {
    if (index >= node.input_size() || node.input(index).empty())
      fail(node, "input " + std::to_string(index) + " is missing");
    const std::string& name = node.input(index);
    const auto p = producer_.find(name);
    if (p != producer_.end()) return p->second;
    if (constants_.count(name)) {
      fail(node, "input '" + name + "' is a constant tensor; infer's " + node.op_type() +
                     " combines computed tensors only (a constant operand is not supported)");
    }
    fail(node, "input '" + name + "' is written by no earlier node");
  }

  const Constant& constant(const onnx::NodeProto& node, int index) {
    if (index >= node.input_size() || node.input(index).empty())
      fail(node, "input " + std::to_string(index) + " is missing");
    const auto c = constants_.find(node.input(index));
    if (c == constants_.end()) {
      fail(node, "input '" + node.input(index) +
                     "' must be an initializer or a Constant (infer reads weights from the file)");
    }
    return *c->second;
  }

  // Copies a constant's values into a layer, refusing a model whose layers would hold far more values
  // than its file (one weight read by thousands of nodes).
  std::vector<float> take(const onnx::NodeProto& node, const Constant& c) {
    parameters_ += c.floats.size();
    if (parameters_ > max_parameters_) {
      fail(node, "the layers so far hold " + std::to_string(parameters_) +
                     " parameter values, more than four times what the file stores; weights shared by many nodes are "
                     "not supported");
    }
    return c.floats;
  }

  const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name) const {
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
  long long int_attr(const onnx::NodeProto& node, const std::string& name, long long fallback) const {
    const onnx::AttributeProto* a = attribute(node, name);
    return a ? a->i() : fallback;
  }
  float float_attr(const onnx::NodeProto& node, const std::string& name, float fallback) const {
    const onnx::AttributeProto* a = attribute(node, name);
    return a ? a->f() : fallback;
  }
  std::vector<long long> ints_attr(const onnx::NodeProto& node, const std::string& name) const {
    const onnx::AttributeProto* a = attribute(node, name);
    return a ? std::vector<long long>(a->ints().begin(), a->ints().end()) : std::vector<long long>{};
  }

  // [h, w] from a 2-element attribute, or the fallback; anything else is refused.
  std::pair<int, int> pair_attr(const onnx::NodeProto& node, const std::string& name, std::pair<int, int> fallback) {
    const std::vector<long long> v = ints_attr(node, name);
    if (v.empty()) return fallback;
    if (v.size() != 2 || v[0] < 0 || v[1] < 0 || v[0] > 1'000'000 || v[1] > 1'000'000) {
      fail(node, "attribute '" + name + "' must be two sizes (a 2-D window)");
    }
    return {static_cast<int>(v[0]), static_cast<int>(v[1])};
  }

  // A window's padding, [top, left, bottom, right]: the pads attribute, or what auto_pad SAME_UPPER
  // / SAME_LOWER gives for this input (ONNX: the output ceil(in / stride), the padding the windows
  // then need, the odd one at the end for SAME_UPPER and at the start for SAME_LOWER).
  struct Pads {
    int top = 0, left = 0, bottom = 0, right = 0;
  };
  Pads window_pads(const onnx::NodeProto& node, const Dims& in, std::pair<int, int> kernel, std::pair<int, int> stride,
                   std::pair<int, int> dilation) {
    const std::string auto_pad = string_attr(node, "auto_pad", "NOTSET");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      auto same = [&](int length, int k, int s, int d, int& begin, int& end) {
        if (s < 1) fail(node, "strides must be positive");
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
    if (auto_pad != "NOTSET" && auto_pad != "VALID") fail(node, "auto_pad " + auto_pad + " is not supported");
    const std::vector<long long> v = auto_pad == "VALID" ? std::vector<long long>{} : ints_attr(node, "pads");
    if (v.empty()) return {};
    if (v.size() != 4) fail(node, "pads must be 4 values [top, left, bottom, right]");
    for (long long x : v) {
      if (x < 0 || x > 1'000'000) fail(node, "pads out of range");
    }
    return {static_cast<int>(v[0]), static_cast<int>(v[1]), static_cast<int>(v[2]), static_cast<int>(v[3])};
  }

  // The window layer's own (symmetric) padding from p, and the layer it reads: x, or a pad layer of
  // `value` for what is left over (asymmetric pads: one side gets more), named "<node>.pad".
  std::string padded_input(const onnx::NodeProto& node, const std::string& x, const Pads& p, float value, int& pad_h,
                           int& pad_w) {
    pad_h = std::min(p.top, p.bottom);
    pad_w = std::min(p.left, p.right);
    if (p.top == p.bottom && p.left == p.right) return x;
    const PadAttrs extra{p.top - pad_h, p.left - pad_w, p.bottom - pad_h, p.right - pad_w, value};
    return add_layer(node, LayerKind::Pad, extra, {x}, ".pad").name;
  }

  // Adds a layer for `node` reading the layers `inputs`, writing the node's first output.
  // A suffix names a helper layer of the node ("<node>.pad"); the node's output is the last one added.
  Layer& add_layer(const onnx::NodeProto& node, LayerKind kind, LayerAttrs attrs, std::vector<std::string> inputs,
                   const char* suffix = "") {
    Layer layer;
    layer.name = node_name(node) + suffix;
    for (std::size_t k = result_.layers.size(); layer.name == kNetworkInputName || names_.count(layer.name); ++k) {
      layer.name = node.op_type() + "_" + std::to_string(k) + suffix;
    }
    names_.insert(layer.name);
    layer.kind = kind;
    layer.attrs = std::move(attrs);
    layer.inputs = std::move(inputs);
    // The shape now, so that a later node can ask for it (and a bad one names this node).
    std::vector<Dims> in;
    for (const std::string& name : layer.inputs) in.push_back(shapes_.at(name));
    try {
      shapes_[layer.name] = infer_output_dims(layer, in);
    } catch (const ModelError& e) {
      fail(node, e.what());
    }
    producer_[node.output(0)] = layer.name;
    ranks_[layer.name] = (layer.kind == LayerKind::Flatten || layer.kind == LayerKind::Linear) ? 2
                         : layer.kind == LayerKind::GlobalAvgPool                              ? 4
                                                                  : ranks_.at(layer.inputs[0]);
    result_.layers.push_back(std::move(layer));
    return result_.layers.back();
  }

  void no_extra_outputs(const onnx::NodeProto& node, int used) {
    for (int i = used; i < node.output_size(); ++i) {
      if (!node.output(i).empty() && read_.count(node.output(i))) {
        fail(node, "output " + std::to_string(i) + " ('" + node.output(i) +
                       "') is read by another node; infer computes the first output only");
      }
    }
  }

  // The ONNX ops read (onnx_ops() lists them): op type, whether it is elementwise, whether its
  // reader checks the node's outputs itself (else: exactly one is used), and the reader.
  struct Reader {
    std::string_view type;
    bool elementwise;
    bool own_outputs;
    void (*read)(Importer&, const onnx::NodeProto&);
  };
  static const std::vector<Reader>& readers() {
    using N = const onnx::NodeProto&;
    static const std::vector<Reader> table = {
        {"Conv", false, false, [](Importer& m, N n) { m.conv(n); }},
        {"BatchNormalization", false, false, [](Importer& m, N n) { m.batchnorm(n); }},
        {"Gemm", false, false, [](Importer& m, N n) { m.gemm(n); }},
        {"MaxPool", false, false, [](Importer& m, N n) { m.pool(n); }},
        {"AveragePool", false, false, [](Importer& m, N n) { m.pool(n); }},
        {"GlobalAveragePool", false, false, [](Importer& m, N n) { m.elementwise(n, LayerKind::GlobalAvgPool, {}); }},
        {"Relu", true, false, [](Importer& m, N n) { m.elementwise(n, LayerKind::Relu, {}); }},
        {"Sigmoid", true, false, [](Importer& m, N n) { m.pointwise(n, PointwiseOp::Sigmoid); }},
        {"HardSwish", true, false, [](Importer& m, N n) { m.pointwise(n, PointwiseOp::HardSwish); }},
        {"HardSigmoid", true, false,  // ONNX's default alpha is 0.2 (the model file's, PyTorch's 1/6)
         [](Importer& m, N n) {
           m.pointwise(n, PointwiseOp::HardSigmoid, {m.float_attr(n, "alpha", 0.2f), m.float_attr(n, "beta", 0.5f)});
         }},
        {"Clip", true, false, [](Importer& m, N n) { m.clip(n); }},
        {"LeakyRelu", true, false,
         [](Importer& m, N n) {
           m.pointwise(n, PointwiseOp::LeakyRelu, {m.float_attr(n, "alpha", 0.01f), 0.0f});
         }},
        {"Add", false, false, [](Importer& m, N n) { m.binary(n); }},
        {"Mul", false, false, [](Importer& m, N n) { m.binary(n); }},
        {"Concat", false, false, [](Importer& m, N n) { m.concat(n); }},
        {"Flatten", false, false, [](Importer& m, N n) { m.flatten(n); }},
        {"Reshape", false, false, [](Importer& m, N n) { m.reshape(n); }},
        {"Softmax", false, false, [](Importer& m, N n) { m.softmax(n); }},
        {"Resize", false, false, [](Importer& m, N n) { m.resize(n); }},
        {"Pad", false, false, [](Importer& m, N n) { m.pad(n); }},
        {"Upsample", false, false, [](Importer& m, N n) { m.resize(n); }},
        {"Constant", false, true, [](Importer& m, N n) { m.read_constant(n); }},
        {"Dropout", true, true, [](Importer& m, N n) { m.passthrough(n); }},
        {"Identity", true, true, [](Importer& m, N n) { m.passthrough(n); }},
    };
    return table;
  }

  static std::string supported_list() {
    std::string list;
    for (const Reader& r : readers()) list += (list.empty() ? "" : ", ") + std::string(r.type);
    return list;
  }

 public:
  static std::vector<OnnxOp> ops() {
    std::vector<OnnxOp> ops;
    for (const Reader& r : readers()) ops.push_back({std::string(r.type), r.elementwise});
    return ops;
  }

 private:
  void convert(const onnx::NodeProto& node) {
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      fail(node, "domain '" + node.domain() + "' is not ONNX's default domain");
    if (node.output_size() < 1) fail(node, "the node has no output");
    for (const Reader& r : readers()) {
      if (r.type != node.op_type()) continue;
      if (!r.own_outputs) no_extra_outputs(node, 1);
      return r.read(*this, node);
    }
    fail(node, "op " + node.op_type() + " is not supported (infer imports: " + supported_list() + ")");
  }

  void read_constant(const onnx::NodeProto& node) {
    const onnx::AttributeProto* value = attribute(node, "value");
    if (!value || !value->has_t()) fail(node, "only a tensor 'value' is supported");
    constants_[node.output(0)] =
        std::make_shared<const Constant>(tensor(value->t(), "constant '" + node.output(0) + "'"));
  }

  // Dropout and Identity at inference: the input, unchanged.
  void passthrough(const onnx::NodeProto& node) {
    if (node.input_size() > 0 && constants_.count(node.input(0))) {  // exporters copy shared weights so
      constants_[node.output(0)] = constants_.at(node.input(0));     // shared, not copied
      return;
    }
    producer_[node.output(0)] = source(node, 0);
    no_extra_outputs(node, 1);
  }

  // A pointwise op (ops.h) with the given parameters, by default its row's.
  void pointwise(const onnx::NodeProto& node, PointwiseOp op) { pointwise(node, op, default_pointwise_attrs(op)); }
  void pointwise(const onnx::NodeProto& node, PointwiseOp op, PointwiseAttrs attrs) {
    add_layer(node, layer_kind(op), attrs, {source(node, 0)});
  }

  void elementwise(const onnx::NodeProto& node, LayerKind kind, LayerAttrs attrs) {
    add_layer(node, kind, std::move(attrs), {source(node, 0)});
  }

  void conv(const onnx::NodeProto& node) {
    const std::string x = source(node, 0);
    const Constant& w = constant(node, 1);
    if (w.dims.size() != 4 || w.floats.empty()) fail(node, "the weight must be a float [K, C/group, R, S] tensor");
    for (long long d : w.dims) {
      if (d < 1 || d > 1'000'000) fail(node, "the weight's dimensions must be in [1, 1000000]");
    }
    const long long group = int_attr(node, "group", 1);
    if (group < 1 || group > 1'000'000) fail(node, "group " + std::to_string(group) + " is out of range");
    Conv2dAttrs a;
    a.out_channels = static_cast<int>(w.dims[0]);
    std::tie(a.kernel_h, a.kernel_w) =
        pair_attr(node, "kernel_shape", {static_cast<int>(w.dims[2]), static_cast<int>(w.dims[3])});
    if (a.kernel_h != w.dims[2] || a.kernel_w != w.dims[3]) fail(node, "kernel_shape differs from the weight's shape");
    std::tie(a.stride_h, a.stride_w) = pair_attr(node, "strides", {1, 1});
    std::tie(a.dilation_h, a.dilation_w) = pair_attr(node, "dilations", {1, 1});
    const Pads p = window_pads(node, shape_of(x), {a.kernel_h, a.kernel_w}, {a.stride_h, a.stride_w},
                               {a.dilation_h, a.dilation_w});
    const std::string from = padded_input(node, x, p, 0.0f, a.pad_h, a.pad_w);
    a.groups = static_cast<int>(group);
    a.bias = node.input_size() > 2 && !node.input(2).empty();
    Layer& layer = add_layer(node, LayerKind::Conv2d, a, {from});
    layer.params.weight = take(node, w);
    if (a.bias) layer.params.bias = take(node, constant(node, 2));
  }

  void batchnorm(const onnx::NodeProto& node) {
    if (int_attr(node, "training_mode", 0) != 0) fail(node, "training_mode = 1; export the model in eval() mode");
    // Before opset 7: is_test (0, training, by default); before opset 9: spatial (1 by default).
    if (result_.opset < 7 && int_attr(node, "is_test", 0) != 1)
      fail(node, "is_test = 0 (training); export the model in eval() mode");
    if (int_attr(node, "spatial", 1) != 1) fail(node, "spatial = 0 (statistics per element) is not supported");
    const std::string x = source(node, 0);
    Layer& layer = add_layer(node, LayerKind::BatchNorm, BatchNormAttrs{float_attr(node, "epsilon", 1e-5f)}, {x});
    layer.params.weight = take(node, constant(node, 1));
    layer.params.bias = take(node, constant(node, 2));
    layer.params.running_mean = take(node, constant(node, 3));
    layer.params.running_var = take(node, constant(node, 4));
  }

  // Gemm: Y = alpha A B' + beta C with B' = B or B transposed: a linear layer when alpha = beta = 1
  // and A is not transposed. infer's weight is [out, in]: B itself when transB = 1, else B transposed.
  void gemm(const onnx::NodeProto& node) {
    if (float_attr(node, "alpha", 1.0f) != 1.0f || float_attr(node, "beta", 1.0f) != 1.0f ||
        int_attr(node, "transA", 0) != 0) {
      fail(node, "only alpha = 1, beta = 1, transA = 0 is a linear layer");
    }
    const std::string x = source(node, 0);
    const Constant& b = constant(node, 1);
    if (b.dims.size() != 2 || b.floats.empty()) fail(node, "B must be a float matrix");
    const bool trans_b = int_attr(node, "transB", 0) != 0;
    if (b.dims[0] < 1 || b.dims[1] < 1 || b.dims[0] > 1'000'000 || b.dims[1] > 1'000'000)
      fail(node, "B's dimensions must be in [1, 1000000]");
    const std::size_t rows = static_cast<std::size_t>(b.dims[0]), cols = static_cast<std::size_t>(b.dims[1]);
    const std::size_t out = trans_b ? rows : cols, in = trans_b ? cols : rows;
    LinearAttrs a{static_cast<int>(out), node.input_size() > 2 && !node.input(2).empty()};
    Layer& layer = add_layer(node, LayerKind::Linear, a, {x});
    if (trans_b) {
      layer.params.weight = take(node, b);
    } else {
      take(node, b);  // counted; transposed below
      layer.params.weight.resize(b.floats.size());
      for (std::size_t i = 0; i < in; ++i)
        for (std::size_t o = 0; o < out; ++o) layer.params.weight[o * in + i] = b.floats[i * out + o];
    }
    if (a.bias) {
      const Constant& c = constant(node, 2);
      if (c.floats.size() == 1) {  // broadcast: one bias for every output
        layer.params.bias.assign(out, c.floats[0]);
      } else if (c.floats.size() == out) {
        layer.params.bias = take(node, c);
      } else {
        fail(node, "C must hold one bias per output (" + std::to_string(out) + ") or one for all, found " +
                       std::to_string(c.floats.size()) + " values");
      }
    }
  }

  void pool(const onnx::NodeProto& node) {
    const bool max = node.op_type() == "MaxPool";
    if (max && int_attr(node, "storage_order", 0) != 0) fail(node, "storage_order = 1 is not supported");
    if (max && ints_attr(node, "dilations") != std::vector<long long>{} &&
        ints_attr(node, "dilations") != std::vector<long long>{1, 1}) {
      fail(node, "dilated pooling is not supported");
    }
    Pool2dAttrs a;
    std::tie(a.kernel_h, a.kernel_w) = pair_attr(node, "kernel_shape", {0, 0});
    if (a.kernel_h == 0 || a.kernel_w == 0) fail(node, "kernel_shape must be two sizes");
    std::tie(a.stride_h, a.stride_w) = pair_attr(node, "strides", {1, 1});
    a.ceil_mode = int_attr(node, "ceil_mode", 0) != 0;
    a.count_include_pad = !max && int_attr(node, "count_include_pad", 0) != 0;  // ONNX's default is 0
    if (max) a.count_include_pad = true;
    const std::string x = source(node, 0);
    const Pads p = window_pads(node, shape_of(x), {a.kernel_h, a.kernel_w}, {a.stride_h, a.stride_w}, {1, 1});
    if (!a.count_include_pad && (p.top != p.bottom || p.left != p.right)) {
      fail(node,
           "asymmetric pads with count_include_pad = 0: the windows at the larger side would average over "
           "fewer values than infer's padding counts");
    }
    // Max pooling pads with -inf, so that the extra border never wins.
    const std::string from =
        padded_input(node, x, p, max ? -std::numeric_limits<float>::infinity() : 0.0f, a.pad_h, a.pad_w);
    add_layer(node, max ? LayerKind::MaxPool : LayerKind::AvgPool, a, {from});
  }

  std::string string_attr(const onnx::NodeProto& node, const std::string& name, const std::string& fallback) const {
    const onnx::AttributeProto* a = attribute(node, name);
    return a ? a->s() : fallback;
  }

  // Resize (opset 10+) and Upsample (7 to 9) in nearest mode by whole scales on H and W: infer's
  // upsample, out[y] = in[floor(y / s)]. ONNX computes the source index from a coordinate
  // transformation and a rounding mode; each pair is accepted only where it gives exactly that
  // index for every output row and column of this input (asymmetric with floor, as
  // torch.onnx.export writes F.interpolate; half_pixel with either rounding; and others at some
  // scales), checked here index by index. Sizes instead of scales, linear and cubic modes, and
  // tf_crop_and_resize are refused.
  void resize(const onnx::NodeProto& node) {
    const bool upsample = node.op_type() == "Upsample";
    const std::string x = source(node, 0);
    if (ranks_.at(x) != 4) fail(node, "infer resizes [N, C, H, W] tensors; the input has rank 2");
    const std::string mode = string_attr(node, "mode", "nearest");
    if (mode != "nearest") fail(node, "mode '" + mode + "' is not supported (nearest only)");
    // Before opset 11 (and in Upsample): asymmetric, the source index truncated.
    const bool v11 = !upsample && result_.opset >= 11;
    const std::string transform =
        v11 ? string_attr(node, "coordinate_transformation_mode", "half_pixel") : "asymmetric";
    const std::string rounding = v11 ? string_attr(node, "nearest_mode", "round_prefer_floor") : "floor";
    std::vector<float> scales;
    if (upsample && result_.opset < 9) {
      const onnx::AttributeProto* a = attribute(node, "scales");
      if (a) scales.assign(a->floats().begin(), a->floats().end());
    } else {
      const int index = v11 ? 2 : 1;  // Resize-11+: X, roi, scales, sizes
      if (v11 && node.input_size() > 3 && !node.input(3).empty()) {
        fail(node,
             "a Resize by 'sizes' is not supported; export with a scale factor (F.interpolate(scale_factor=...))");
      }
      if (node.input_size() > index && !node.input(index).empty()) scales = constant(node, index).floats;
    }
    if (scales.size() != 4 || scales[0] != 1.0f || scales[1] != 1.0f) {
      fail(node, "scales must be 4 values [1, 1, scale_h, scale_w]");
    }
    const Dims in = shape_of(x);
    auto whole = [&](float s, int length, const char* axis) {
      if (!(s >= 1.0f && s <= 1'000'000.0f) || s != std::floor(s)) {
        fail(node, std::string("the ") + axis + " scale " + value_string(s) + " is not a whole number >= 1");
      }
      const int factor = static_cast<int>(s);
      // ONNX's source index of each output position, against floor(x / factor). Every mode but
      // align_corners is x / s plus a constant, the same pattern in each period of `factor`
      // positions but where the clamp acts: the first and last four periods show every case.
      if (transform == "align_corners" && factor > 1 && length > 1) {
        fail(
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
          fail(node, "coordinate_transformation_mode '" + transform + "' is not supported");
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
          fail(node, "nearest_mode '" + rounding + "' is not supported");
        index = std::min(std::max(index, 0.0), static_cast<double>(length - 1));
        if (static_cast<long long>(index) != i / factor) {
          fail(node, "coordinate_transformation_mode '" + transform + "' with nearest_mode '" + rounding +
                         "' at scale " + std::to_string(factor) + " is not a whole-factor nearest upsampling (" + axis +
                         " position " + std::to_string(i) + " reads " + std::to_string(static_cast<long long>(index)) +
                         ")");
        }
      }
      return factor;
    };
    const int h = whole(scales[2], in.h, "height");
    const int w = whole(scales[3], in.w, "width");
    add_layer(node, LayerKind::Upsample, UpsampleAttrs{h, w}, {x});
  }

  // Pad in constant mode on H and W: pads [N, C, H, W begins, N, C, H, W ends] (an attribute
  // before opset 11, an INT64 input after), the value an attribute or an optional scalar input.
  void pad(const onnx::NodeProto& node) {
    const std::string x = source(node, 0);
    if (ranks_.at(x) != 4) fail(node, "infer pads [N, C, H, W] tensors; the input has rank 2");
    const std::string mode = string_attr(node, "mode", "constant");
    if (mode != "constant") fail(node, "mode '" + mode + "' is not supported (constant only)");
    std::vector<long long> pads;
    float value = 0.0f;
    if (result_.opset < 11) {
      pads = ints_attr(node, "pads");
      value = float_attr(node, "value", 0.0f);
    } else {
      pads = constant(node, 1).ints;
      if (node.input_size() > 2 && !node.input(2).empty()) {
        const Constant& c = constant(node, 2);
        if (c.floats.size() != 1) fail(node, "constant_value must be one float");
        value = c.floats[0];
      }
    }
    if (pads.size() != 8 || pads[0] != 0 || pads[1] != 0 || pads[4] != 0 || pads[5] != 0) {
      fail(node, "pads must be 8 values with none on N and C (infer pads H and W)");
    }
    for (long long v : pads) {
      if (v < 0 || v > 1'000'000) fail(node, "pads must be in [0, 1000000] (a negative pad crops: not supported)");
    }
    if (std::isnan(value)) fail(node, "the padding value is NaN");
    add_layer(node, LayerKind::Pad,
              PadAttrs{static_cast<int>(pads[2]), static_cast<int>(pads[3]), static_cast<int>(pads[6]),
                       static_cast<int>(pads[7]), value},
              {x});
  }

  void clip(const onnx::NodeProto& node) {
    const float inf = std::numeric_limits<float>::infinity();
    PointwiseAttrs a{-inf, inf};  // min, max; an absent bound: none
    if (result_.opset < 11) {
      a.a = float_attr(node, "min", -inf);
      a.b = float_attr(node, "max", inf);
    } else {
      auto bound = [&](int index, float fallback) {
        if (node.input_size() <= index || node.input(index).empty()) return fallback;
        const Constant& c = constant(node, index);
        if (c.floats.size() != 1) fail(node, "min and max must be one float each");
        return c.floats[0];
      };
      a.a = bound(1, -inf);
      a.b = bound(2, inf);
    }
    add_layer(node, LayerKind::Clip, a, {source(node, 0)});
  }

  void binary(const onnx::NodeProto& node) {
    if (node.input_size() != 2) fail(node, "needs two inputs");
    std::string a = source(node, 0), b = source(node, 1);
    const LayerKind kind = node.op_type() == "Add" ? LayerKind::Add : LayerKind::Mul;
    // ONNX broadcasting aligns trailing dimensions: only operands of one rank mean what infer computes.
    if (ranks_.at(a) != ranks_.at(b)) {
      fail(node, "operands of rank " + std::to_string(ranks_.at(a)) + " and " + std::to_string(ranks_.at(b)) +
                     "; infer combines tensors of one rank");
    }
    // Mul by one value per channel: infer takes the scale second.
    const Dims da = shape_of(a), db = shape_of(b);
    if (kind == LayerKind::Mul && da.h == 1 && da.w == 1 && !(db.h == 1 && db.w == 1)) std::swap(a, b);
    add_layer(node, kind, kind == LayerKind::Add ? LayerAttrs{AddAttrs{}} : LayerAttrs{}, {a, b});
  }

  void concat(const onnx::NodeProto& node) {
    const long long axis = int_attr(node, "axis", 1);
    if (axis != 1 && axis != -3)
      fail(node, "axis " + std::to_string(axis) + "; infer joins along the channels (axis 1)");
    std::vector<std::string> inputs;
    for (int i = 0; i < node.input_size(); ++i) {
      inputs.push_back(source(node, i));
      if (ranks_.at(inputs.back()) != 4)
        fail(node, "infer joins [N, C, H, W] tensors along C; input " + std::to_string(i) + " has rank 2");
    }
    add_layer(node, LayerKind::Concat, {}, inputs);
  }

  void flatten(const onnx::NodeProto& node) {
    if (int_attr(node, "axis", 1) != 1)
      fail(node, "axis " + std::to_string(int_attr(node, "axis", 1)) + "; infer flattens each sample (axis 1)");
    add_layer(node, LayerKind::Flatten, {}, {source(node, 0)});
  }

  // Reshape to [N, features] (PyTorch's x.view(x.size(0), -1) or torch.flatten(x, 1)).
  void reshape(const onnx::NodeProto& node) {
    const std::string x = source(node, 0);
    const Constant& shape = constant(node, 1);
    const Dims in = shape_of(x);
    const long long features = static_cast<long long>(in.size());
    const bool flat = shape.ints.size() == 2 && (shape.ints[1] == -1 || shape.ints[1] == features) &&
                      (shape.ints[0] == -1 || shape.ints[0] == 0 || shape.ints[0] >= 1);
    if (!flat) fail(node, "only a reshape to [N, features] (a flatten) is supported");
    add_layer(node, LayerKind::Flatten, {}, {x});
  }

  // Softmax over the channels: axis 1, or the last axis of a flat [N, features] input.
  void softmax(const onnx::NodeProto& node) {
    const std::string x = source(node, 0);
    const long long axis = int_attr(node, "axis", result_.opset >= 13 ? -1 : 1);
    const Dims in = shape_of(x);
    const int rank = ranks_.at(x);
    // infer's softmax is over the channels at each position. Opset 13 on: over `axis` alone, so axis
    // 1 (or the last axis of [N, C]). Before: over every axis from `axis` on, flattened, which is the
    // channels only when nothing follows them (rank 2, or H = W = 1).
    const bool channels = result_.opset >= 13
                              ? (axis == 1 || axis == -rank + 1 || (rank == 2 && axis == -1))
                              : ((axis == 1 || axis == -rank + 1) && (rank == 2 || (in.h == 1 && in.w == 1)));
    if (!channels) {
      fail(node, "axis " + std::to_string(axis) + " of a rank-" + std::to_string(rank) + " tensor (opset " +
                     std::to_string(result_.opset) + "); infer's softmax is over the channels at each position");
    }
    add_layer(node, LayerKind::Softmax, {}, {x});
  }

  // The per-sample shape of a layer's output (kNetworkInputName: the input's).
  Dims shape_of(const std::string& layer) const { return shapes_.at(layer); }

  std::string file_;
  const onnx::ModelProto& model_;
  OnnxModel result_;
  std::map<std::string, std::shared_ptr<const Constant>> constants_;  // initializers and Constant outputs, by name
  std::set<std::string> read_;                                        // every tensor name some node reads
  std::map<std::string, int> ranks_;             // layer name (or "input") -> its output's rank (2 or 4)
  std::size_t parameters_ = 0;                   // values copied into layers so far
  std::size_t max_parameters_ = 0;               // 4 x the file's bytes / 4: weights shared a few times at most
  std::map<std::string, std::string> producer_;  // tensor name -> the layer writing it (or "input")
  std::map<std::string, Dims> shapes_;           // layer name (or "input") -> its output's shape
  std::set<std::string> names_;
};

}  // namespace

std::vector<OnnxOp> onnx_ops() { return Importer::ops(); }

OnnxModel read_onnx(const std::filesystem::path& path) {
  const std::string file = path.u8string();
  const std::vector<unsigned char> bytes = read_input_file(path, kMaxOnnxBytes, "an ONNX model");
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw InputError(file, "not a valid ONNX model (the protobuf message does not parse)");
  }
  if (!model.has_graph()) throw InputError(file, "the ONNX model has no graph");
  return Importer(file, model, bytes.size()).run();
}

}  // namespace infer
