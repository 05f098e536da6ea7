// Internal to the ONNX import (read_onnx, onnx_model.h): the reader of a parsed onnx.ModelProto
// (onnx_reader.cpp) and what the per-op converters (onnx_ops.cpp) build the network with. The
// reader reads the graph's input, initializers and output, and owns the network taking shape: its
// layers, each layer's output shape and rank, which layer writes each tensor; a converter maps one
// node onto layers through it. Everything here refuses a model by throwing InputError(file,
// problem), a node's problem naming the node and its op type ("node 'Conv_12' (Conv): ...").
#pragma once

#include "onnx.pb.h"  // generated from ONNX's schema (formats/CMakeLists.txt)

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "formats/onnx_framing.h"
#include "formats/onnx_model.h"
#include "graph/network.h"

namespace infer::onnx_import {

// Folded values (onnx_fold.cpp) are shape arithmetic: a few values each. A folded tensor larger
// than kMaxFoldedValues, or folded tensors of more than kMaxFoldedTotal values in all, are refused,
// so that a small hostile file cannot make the import allocate without bound.
inline constexpr std::size_t kMaxFoldedValues = std::size_t{1} << 24;
inline constexpr std::size_t kMaxFoldedTotal = std::size_t{1} << 26;

// A tensor known at load, row-major, with its dimensions: an initializer, a Constant, or a value
// folded from them (onnx_fold.cpp). Float tensors (FLOAT, DOUBLE) as float32 in `floats`, integer
// ones (INT64, INT32: shapes, axes, indices) in `ints`.
struct Constant {
  std::vector<long long> dims;
  std::vector<float> floats;
  std::vector<long long> ints;
  bool is_float = false;  // which of the two holds the values (both are empty for an empty tensor)
  // Folded shape arithmetic only: per value, whether it is known or stands for the batch size N,
  // which is free until run time (its entry in ints is then a placeholder); empty: all known.
  static constexpr unsigned char kKnown = 0, kBatch = 1, kDependsOnBatch = 2;
  std::vector<unsigned char> symbols;
  // Whether every value is known (none stands for N or depends on it).
  bool known() const {
    for (unsigned char s : symbols)
      if (s != kKnown) return false;
    return true;
  }
};

// A channel shuffle under way (ShuffleNet's x.view(n, g, c / g, h, w).transpose(1, 2).reshape(n, c, h,
// w)): a 5-D view of a computed [N, C, H, W] tensor, which only that sequence may read; the last
// Reshape makes it a channel_shuffle layer.
struct ShuffleView {
  std::string layer;        // the [N, C, H, W] tensor viewed, by its layer
  int groups = 1;           // g: the view is [N, g, C / g, H, W]
  bool transposed = false;  // after the Transpose: [N, C / g, g, H, W]
};

// A GELU under way: PyTorch's exact nn.GELU below opset 20 is five nodes, Div(x, sqrt 2), Erf,
// Add(., 1), Mul(x, .), Mul(., 0.5); each partial result may be read only by the chain's next node,
// and the last makes one gelu layer reading x.
struct GeluView {
  std::string layer;  // x, by its layer
  int step = 1;       // the nodes read: 1 x / sqrt 2, 2 erf(x / sqrt 2), 3 1 + erf, 4 x (1 + erf)
};

// A layer normalisation written out: PyTorch's F.layer_norm over the last axis of a channels-last
// tensor x below opset 17 is ReduceMean(x), Sub(x, mean), Pow(., 2), ReduceMean, Add(., eps), Sqrt,
// Div(x - mean, .). Each partial result may be read only by the chain's next node; the Div makes
// one layernorm layer reading x (weight 1, bias 0: the Mul and Add that follow fold into it).
struct NormView {
  std::string layer;     // x, by its layer
  int step = 1;          // 1 the mean, 2 x - mean, 3 its square, 4 the variance, 5 + eps, 6 the deviation
  double epsilon = 0.0;  // from step 5 on
};

// A node's attributes by name: the attribute, or nullptr / the fallback where the node has none.
const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name);
long long int_attr(const onnx::NodeProto& node, const std::string& name, long long fallback);
float float_attr(const onnx::NodeProto& node, const std::string& name, float fallback);
std::vector<long long> ints_attr(const onnx::NodeProto& node, const std::string& name);  // {} where absent
std::string string_attr(const onnx::NodeProto& node, const std::string& name, const std::string& fallback);

// One import: `model` (parsed from `file`, `file_bytes` long; both outlive the Importer) into an
// OnnxModel. Not thread-safe; one run() per Importer.
class Importer {
 public:
  // raw_data: where the initializers' raw_data lie in the file (onnx_framing.h), read by `read`,
  // when the model was parsed without them; null when it was parsed whole.
  Importer(std::string file, const onnx::ModelProto& model, std::size_t file_bytes,
           const std::vector<std::optional<ByteRange>>* raw_data = nullptr, const ReadAt* read = nullptr)
      : file_(std::move(file)), model_(model), raw_data_(raw_data), read_(read), max_parameters_(file_bytes) {}

  // Reads the opset, the initializers and the input, converts every node in order (convert) and
  // checks that the graph's one output is the last layer's.
  OnnxModel run();

  [[noreturn]] void fail(const std::string& problem) const;
  [[noreturn]] void fail(const onnx::NodeProto& node, const std::string& problem) const;

  // The opset of the default domain (attributes and inputs moved between opsets).
  long long opset() const { return result_.opset; }

  // The layer (by name) that writes tensor `name`; a node reading a tensor nobody wrote is refused.
  std::string source(const onnx::NodeProto& node, int index);

  // The node's input `index` as an initializer, a Constant's output or a folded value, all its
  // values known; anything else is refused.
  const Constant& constant(const onnx::NodeProto& node, int index);
  // The same where values may stand for the batch size (Constant::symbols): for the folding and the
  // readers that handle the symbols (a Reshape's shape, a Resize's sizes).
  const Constant& value(const onnx::NodeProto& node, int index);

  // Counts a constant's values as a layer's, refusing a model whose layers would hold far more values
  // than its file (one weight read by thousands of nodes).
  void count_parameters(const onnx::NodeProto& node, const Constant& c);
  // The values of the node's input `index` (a known constant, as constant()) for its layer, counted:
  // moved out of the constant when this node is its only reader, else copied.
  std::vector<float> take(const onnx::NodeProto& node, int index);

  // [h, w] from a 2-element attribute, or the fallback; anything else is refused.
  std::pair<int, int> pair_attr(const onnx::NodeProto& node, const std::string& name,
                                std::pair<int, int> fallback) const;

  // Adds a layer for `node` reading the layers `inputs`, writing the node's first output.
  // A suffix names a helper layer of the node ("<node>.pad"); the node's output is the last one added.
  // The reference is valid until the next add_layer.
  Layer& add_layer(const onnx::NodeProto& node, LayerKind kind, LayerAttrs attrs, std::vector<std::string> inputs,
                   const char* suffix = "");

  // Makes output `index` of the node the output of `layer` (an op of several outputs, such as Split),
  // or of nothing when `layer` is empty.
  void map_output(const onnx::NodeProto& node, int index, const std::string& layer);
  // Whether some node reads tensor `name` (every output but an unread one needs a layer).
  bool is_read(const std::string& name) const { return reads_.count(name) > 0; }

  // Refuses the node if another node reads one of its outputs from index `used` on.
  void no_extra_outputs(const onnx::NodeProto& node, int used);

  // The per-sample shape of a layer's output (kNetworkInputName: the input's).
  Dims shape_of(const std::string& layer) const { return shapes_.at(layer); }

  // The rank of a layer's output as ONNX sees it: 2 ([N, features]) or 4 ([N, C, H, W]).
  int rank(const std::string& layer) const { return ranks_.at(layer); }

  // Constant: its tensor, by the node's output name, for later nodes' constant().
  void read_constant(const onnx::NodeProto& node);

  // Dropout and Identity at inference: the input, unchanged.
  void passthrough(const onnx::NodeProto& node);

  // The channel shuffle under way that tensor `name` is, else nullptr; records one.
  const ShuffleView* find_view(const std::string& name) const;
  void define_view(const onnx::NodeProto& node, ShuffleView v);

  // The GELU under way that tensor `name` is part of, else nullptr; records one.
  const GeluView* find_gelu(const std::string& name) const;
  void define_gelu(const onnx::NodeProto& node, GeluView v) { gelus_[node.output(0)] = std::move(v); }

  // The layer normalisation under way that tensor `name` is part of, else nullptr; records one.
  const NormView* find_norm(const std::string& name) const;
  void define_norm(const onnx::NodeProto& node, NormView v) { norms_[node.output(0)] = std::move(v); }

  // Channels-last tensors: a Transpose with perm [0, 2, 3, 1] of an [N, C, H, W] layer output is the
  // same layer's output seen as [N, H, W, C]; the readers that accept one (onnx_ops.cpp) compute
  // over the channels and mark their output channels-last too, until a Transpose back.
  bool channels_last(const std::string& tensor) const { return channels_last_.count(tensor) > 0; }
  void set_channels_last(const std::string& tensor) { channels_last_.insert(tensor); }

  // The layer that writes the node's input `index`, when this node is the last reader of that layer's
  // output left (under every name it has: a Transpose's output is its input's layer; a graph output
  // counts as read), no layer reads it and no chain under way (GeluView, NormView, ShuffleView) will:
  // a per-channel scale or shift may then change the layer itself. Else nullptr. The pointer is
  // valid until the next add_layer.
  Layer* sole_reader_layer(const onnx::NodeProto& node, int index);
  // Called after each node is converted: its reads are done.
  void consumed(const onnx::NodeProto& node);

  // The value of tensor `name` when it is known at load, else nullptr.
  const Constant* find_constant(const std::string& name) const;
  // Records the node's first output as the known value c (a folded node: onnx_fold.cpp).
  void define_constant(const onnx::NodeProto& node, Constant c);
  // A TensorProto's values; `what` names it in a refusal.
  Constant read_tensor(const onnx::TensorProto& t, const std::string& what) const { return tensor(t, what); }

 private:
  static std::string node_name(const onnx::NodeProto& node);
  void read_opset();
  // `file_raw`: where its raw_data is in the file, for an initializer parsed without it.
  Constant tensor(const onnx::TensorProto& t, const std::string& what, const ByteRange* file_raw = nullptr) const;
  template <typename T, typename Repeated>
  std::vector<T> values(const onnx::TensorProto& t, const Repeated& typed, std::size_t count, const std::string& what,
                        const char* noun, const ByteRange* file_raw) const;
  void read_input();
  void read_output();

  std::string file_;
  const onnx::ModelProto& model_;
  const std::vector<std::optional<ByteRange>>* raw_data_;
  const ReadAt* read_;
  OnnxModel result_;
  std::map<std::string, std::shared_ptr<Constant>> constants_;  // initializers and Constant outputs, by name
  std::map<std::string, int> reads_;                            // tensor name -> how many node inputs read it
  std::map<std::string, int> ranks_;             // layer name (or "input") -> its output's rank (2 or 4)
  std::size_t parameters_ = 0;                   // values copied into layers so far
  std::size_t max_parameters_ = 0;               // 4 x the file's bytes / 4: weights shared a few times at most
  std::map<std::string, std::string> producer_;  // tensor name -> the layer writing it (or "input")
  std::size_t folded_values_ = 0;                // values of every define_constant() so far
  std::map<std::string, ShuffleView> views_;     // tensor name -> the channel shuffle it is part of
  std::map<std::string, GeluView> gelus_;        // tensor name -> the GELU it is part of
  std::map<std::string, NormView> norms_;        // tensor name -> the layer normalisation it is part of
  std::set<std::string> channels_last_;          // tensor names seen as [N, H, W, C]
  std::map<std::string, int> pending_reads_;     // tensor name -> node inputs that read it, not yet converted
  std::map<std::string, Dims> shapes_;           // layer name (or "input") -> its output's shape
  std::set<std::string> names_;
};

// Converts one node (onnx_ops.cpp: the table of the ops onnx_ops() lists): refused unless its op is
// in the table, in the default domain, with no output but the first read by another node (but for
// the ops that check their outputs themselves).
void convert(Importer& importer, const onnx::NodeProto& node);

// Evaluates the node at load (onnx_fold.cpp) when its op is one folded_op_types() lists and its
// inputs are known (Shape: its input's shape is), recording its output as a constant; false, having
// done nothing, otherwise. Refuses (InputError naming the node) what the folding cannot compute.
bool fold(Importer& importer, const onnx::NodeProto& node);
std::vector<std::string> folded_op_types();

}  // namespace infer::onnx_import
