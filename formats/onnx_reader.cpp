#include "formats/onnx_reader.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <stdexcept>

#include "graph/model_error.h"
#include "platform/huge_pages.h"
#include "platform/input_file.h"
#include "platform/parallel_jobs.h"

namespace infer {

namespace onnx_import {
namespace {

// protobuf refuses messages over 2 GiB; a model that large keeps its weights as external data,
// which is not read.
constexpr std::uint64_t kMaxOnnxBytes = (std::uint64_t{2} << 30) - 1;  // protobuf counts bytes in an int

// The file as protobuf's input stream, read a block at a time into the parsed message (no copy of
// the whole file first): its pieces in order (onnx_framing.h: the file less the initializers'
// raw_data), or the whole file as it was when opened. A read that fails (the file shrank) is kept,
// not thrown through protobuf, and rethrown by rethrow_failure().
class FileStream : public google::protobuf::io::CopyingInputStream {
 public:
  FileStream(const InputFile& file, std::vector<OnnxFraming::Piece> pieces) : file_(file), pieces_(std::move(pieces)) {}

  int Read(void* buffer, int size) override {
    while (piece_ < pieces_.size() && offset_ == piece_size(pieces_[piece_])) ++piece_, offset_ = 0;
    if (piece_ == pieces_.size()) return 0;
    const OnnxFraming::Piece& p = pieces_[piece_];
    const std::uint64_t count = std::min<std::uint64_t>(static_cast<std::uint64_t>(size), piece_size(p) - offset_);
    try {
      if (p.bytes.empty()) {
        file_.read_at(p.file.offset + offset_, buffer, static_cast<std::size_t>(count));
      } else {
        std::memcpy(buffer, p.bytes.data() + offset_, static_cast<std::size_t>(count));
      }
    } catch (...) {
      failure_ = std::current_exception();
      return -1;
    }
    offset_ += count;
    return static_cast<int>(count);
  }

  void rethrow_failure() const {
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  static std::uint64_t piece_size(const OnnxFraming::Piece& p) {
    return p.bytes.empty() ? p.file.size : p.bytes.size();
  }

  const InputFile& file_;
  std::vector<OnnxFraming::Piece> pieces_;
  std::size_t piece_ = 0;
  std::uint64_t offset_ = 0;  // within pieces_[piece_]
  std::exception_ptr failure_;
};

// Little-endian T values in bytes, as an iterator (memcpy per value: any alignment), so that a
// vector is built from them in one pass instead of zeroed and then overwritten.
template <typename T>
class BytesAs {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  using pointer = const T*;
  using reference = T;

  explicit BytesAs(const char* p) : p_(p) {}
  T operator*() const {
    T v;
    std::memcpy(&v, p_, sizeof v);
    return v;
  }
  BytesAs& operator++() { return *this += 1; }
  BytesAs& operator--() { return *this += -1; }
  BytesAs& operator+=(difference_type n) {
    p_ += n * static_cast<difference_type>(sizeof(T));
    return *this;
  }
  difference_type operator-(const BytesAs& other) const {
    return (p_ - other.p_) / static_cast<difference_type>(sizeof(T));
  }
  bool operator==(const BytesAs& other) const { return p_ == other.p_; }
  bool operator!=(const BytesAs& other) const { return p_ != other.p_; }

 private:
  const char* p_;
};

}  // namespace

OnnxModel Importer::run() {
  read_opset();
  const onnx::GraphProto& g = model_.graph();
  result_.name = g.name().empty() ? "onnx-model" : g.name();
  // The initializers' values converted on every processor (most of an import's time is the kernel
  // mapping the memory they fill); a refusal names the first bad one, as one thread would.
  const auto& initializers = g.initializer();
  if (raw_data_ && raw_data_->size() != static_cast<std::size_t>(initializers.size())) {
    throw std::logic_error("onnx import: the framing found another number of initializers than protobuf");
  }
  std::vector<Constant> converted(static_cast<std::size_t>(initializers.size()));
  std::vector<std::function<void()>> jobs;
  for (int i = 0; i < initializers.size(); ++i) {
    jobs.push_back([this, &converted, &initializers, i] {
      const onnx::TensorProto& t = initializers[i];
      const auto k = static_cast<std::size_t>(i);
      const ByteRange* raw = raw_data_ && k < raw_data_->size() && (*raw_data_)[k] ? &*(*raw_data_)[k] : nullptr;
      converted[k] = tensor(t, "initializer '" + t.name() + "'", raw);
    });
  }
  run_jobs(jobs, parallel_job_threads());
  for (int i = 0; i < initializers.size(); ++i) {
    constants_[initializers[i].name()] = std::make_shared<Constant>(std::move(converted[static_cast<std::size_t>(i)]));
  }
  for (const onnx::NodeProto& node : g.node()) {
    for (const std::string& name : node.input()) ++reads_[name];
  }
  pending_reads_ = reads_;
  for (const onnx::ValueInfoProto& out : g.output()) ++pending_reads_[out.name()];  // read when the graph ends
  read_input();
  for (const onnx::NodeProto& node : g.node()) {
    convert(*this, node);
    consumed(node);
  }
  read_output();
  return std::move(result_);
}

void Importer::fail(const std::string& problem) const { throw InputError(file_, problem); }

void Importer::fail(const onnx::NodeProto& node, const std::string& problem) const {
  fail("node '" + node_name(node) + "' (" + node.op_type() + "): " + problem);
}

std::string Importer::node_name(const onnx::NodeProto& node) {
  return !node.name().empty() ? node.name() : node.output_size() > 0 ? node.output(0) : node.op_type();
}

void Importer::read_opset() {
  for (const onnx::OperatorSetIdProto& o : model_.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") result_.opset = o.version();
  }
  if (result_.opset < kOnnxMinOpset || result_.opset > kOnnxMaxOpset) {
    fail("opset " + std::to_string(result_.opset) + " of the default ONNX domain; infer reads opsets " +
         std::to_string(kOnnxMinOpset) + " to " + std::to_string(kOnnxMaxOpset) +
         " (torch.onnx.export(..., opset_version=14) writes one in range)");
  }
}

// The `count` values of a FLOAT or INT64 tensor: its raw_data (little-endian, as x86 and ARM
// are), else its typed field `typed`; `noun` names them in the message of a size mismatch.
template <typename T, typename Repeated>
std::vector<T> Importer::values(const onnx::TensorProto& t, const Repeated& typed, std::size_t count,
                                const std::string& what, const char* noun, const ByteRange* file_raw) const {
  static_assert(sizeof(T) == sizeof(*typed.begin()), "the typed field holds T");
  const std::string& raw = t.raw_data();
  const std::uint64_t raw_size = file_raw ? file_raw->size : raw.size();
  std::vector<T> v;
  if (raw_size > 0) {
    if (raw_size != count * sizeof(T)) {
      fail(what + " has " + std::to_string(raw_size) + " bytes of data for " + std::to_string(count) + " " + noun);
    }
    reserve_large(v, count);
    if (file_raw) {
      v.resize(count);
      (*read_)(file_raw->offset, v.data(), static_cast<std::size_t>(raw_size));  // straight from the file
    } else {
      v.assign(BytesAs<T>(raw.data()), BytesAs<T>(raw.data() + raw.size()));
    }
  } else {
    if (static_cast<std::size_t>(typed.size()) != count) {
      fail(what + " has " + std::to_string(typed.size()) + " values for " + std::to_string(count));
    }
    v.assign(typed.begin(), typed.end());
  }
  return v;
}

Constant Importer::tensor(const onnx::TensorProto& t, const std::string& what, const ByteRange* file_raw) const {
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
    c.floats = values<float>(t, t.float_data(), count, what, "floats", file_raw);
    c.is_float = true;
  } else if (t.data_type() == onnx::TensorProto::INT64) {
    c.ints = values<long long>(t, t.int64_data(), count, what, "int64 values", file_raw);
  } else if (t.data_type() == onnx::TensorProto::INT32) {
    const std::vector<std::int32_t> v = values<std::int32_t>(t, t.int32_data(), count, what, "int32 values", file_raw);
    c.ints.assign(v.begin(), v.end());
  } else if (t.data_type() == onnx::TensorProto::DOUBLE) {
    const std::vector<double> v = values<double>(t, t.double_data(), count, what, "doubles", file_raw);
    c.floats.assign(v.begin(), v.end());
    c.is_float = true;
  } else {
    fail(what + " has data type " +
         onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t.data_type())) +
         "; infer reads FLOAT weights (and INT64 shapes): export the model in float32");
  }
  return c;
}

void Importer::read_input() {
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

void Importer::read_output() {
  const onnx::GraphProto& g = model_.graph();
  if (g.output_size() != 1) fail("the graph has " + std::to_string(g.output_size()) + " outputs; infer reads one");
  const std::string& name = g.output(0).name();
  const auto p = producer_.find(name);
  if (p == producer_.end() || result_.layers.empty() || p->second != result_.layers.back().name) {
    fail("the graph's output '" + name +
         "' is not written by its last computing node; infer's output is the last layer's");
  }
  if (channels_last(name)) {
    fail("the graph's output '" + name +
         "' is channels-last ([N, H, W, C], after a Transpose with perm [0, 2, 3, 1]); infer's outputs are [N, C, H, "
         "W] or [N, features]: transpose it back");
  }
}

std::string Importer::source(const onnx::NodeProto& node, int index) {
  if (index >= node.input_size() || node.input(index).empty())
    fail(node, "input " + std::to_string(index) + " is missing");
  const std::string& name = node.input(index);
  const auto p = producer_.find(name);
  if (p != producer_.end()) return p->second;
  if (const ShuffleView* v = find_view(name)) {
    fail(node, "input '" + name + "' is a 5-D view of '" + v->layer + "' in " + std::to_string(v->groups) +
                   " groups; infer reads such a view only as a channel shuffle: Reshape to [N, g, C / g, H, W], "
                   "Transpose(perm = [0, 2, 1, 3, 4]), Reshape back to [N, C, H, W]");
  }
  if (const GeluView* g = find_gelu(name)) {
    fail(node, "input '" + name + "' is step " + std::to_string(g->step) + " of a GELU of '" + g->layer +
                   "'; infer reads such a value only as the rest of PyTorch's GELU: Div(x, sqrt 2), Erf, "
                   "Add(., 1), Mul(x, .), Mul(., 0.5)");
  }
  if (const NormView* v = find_norm(name)) {
    fail(node, "input '" + name + "' is step " + std::to_string(v->step) + " of a layer normalisation of '" + v->layer +
                   "'; infer reads such a value only as the rest of PyTorch's layer_norm over the last axis: "
                   "ReduceMean, Sub, Pow(., 2), ReduceMean, Add(., eps), Sqrt, Div");
  }
  if (constants_.count(name)) {
    fail(node, "input '" + name + "' is a constant tensor; infer's " + node.op_type() +
                   " combines computed tensors only (a constant operand is not supported)");
  }
  fail(node, "input '" + name + "' is written by no earlier node");
}

const Constant& Importer::value(const onnx::NodeProto& node, int index) {
  if (index >= node.input_size() || node.input(index).empty())
    fail(node, "input " + std::to_string(index) + " is missing");
  const auto c = constants_.find(node.input(index));
  if (c == constants_.end()) {
    fail(node,
         "input '" + node.input(index) + "' must be an initializer or a Constant (infer reads weights from the file)");
  }
  return *c->second;
}

const Constant& Importer::constant(const onnx::NodeProto& node, int index) {
  const Constant& c = value(node, index);
  if (!c.known()) {
    fail(node, "input '" + node.input(index) + "' is computed from the batch size, which is free until run time; " +
                   node.op_type() + " needs it known at load");
  }
  return c;
}

void Importer::count_parameters(const onnx::NodeProto& node, const Constant& c) {
  parameters_ += c.floats.size();
  if (parameters_ > max_parameters_) {
    fail(node, "the layers so far hold " + std::to_string(parameters_) +
                   " parameter values, more than four times what the file stores; weights shared by many nodes are "
                   "not supported");
  }
}

std::vector<float> Importer::take(const onnx::NodeProto& node, int index) {
  const Constant& c = constant(node, index);
  count_parameters(node, c);
  const std::string& name = node.input(index);
  std::shared_ptr<Constant>& owned = constants_.at(name);
  // Moved when this node is its one reader and no other name shares it (passthrough); else copied.
  if (reads_.at(name) == 1 && owned.use_count() == 1) return std::move(owned->floats);
  return c.floats;
}

std::pair<int, int> Importer::pair_attr(const onnx::NodeProto& node, const std::string& name,
                                        std::pair<int, int> fallback) const {
  const std::vector<long long> v = ints_attr(node, name);
  if (v.empty()) return fallback;
  if (v.size() != 2 || v[0] < 0 || v[1] < 0 || v[0] > 1'000'000 || v[1] > 1'000'000) {
    fail(node, "attribute '" + name + "' must be two sizes (a 2-D window)");
  }
  return {static_cast<int>(v[0]), static_cast<int>(v[1])};
}

Layer& Importer::add_layer(const onnx::NodeProto& node, LayerKind kind, LayerAttrs attrs,
                           std::vector<std::string> inputs, const char* suffix) {
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

void Importer::map_output(const onnx::NodeProto& node, int index, const std::string& layer) {
  if (layer.empty())
    producer_.erase(node.output(index));
  else
    producer_[node.output(index)] = layer;
}

void Importer::no_extra_outputs(const onnx::NodeProto& node, int used) {
  for (int i = used; i < node.output_size(); ++i) {
    if (!node.output(i).empty() && is_read(node.output(i))) {
      fail(node, "output " + std::to_string(i) + " ('" + node.output(i) +
                     "') is read by another node; infer computes the first output only");
    }
  }
}

void Importer::read_constant(const onnx::NodeProto& node) {
  const onnx::AttributeProto* value = attribute(node, "value");
  if (!value || !value->has_t()) fail(node, "only a tensor 'value' is supported");
  constants_[node.output(0)] = std::make_shared<Constant>(tensor(value->t(), "constant '" + node.output(0) + "'"));
}

void Importer::passthrough(const onnx::NodeProto& node) {
  if (node.input_size() > 0 && constants_.count(node.input(0))) {  // exporters copy shared weights so
    constants_[node.output(0)] = constants_.at(node.input(0));     // shared, not copied
    return;
  }
  producer_[node.output(0)] = source(node, 0);
  no_extra_outputs(node, 1);
}

const ShuffleView* Importer::find_view(const std::string& name) const {
  const auto v = views_.find(name);
  return v == views_.end() ? nullptr : &v->second;
}

void Importer::define_view(const onnx::NodeProto& node, ShuffleView v) { views_[node.output(0)] = std::move(v); }

const GeluView* Importer::find_gelu(const std::string& name) const {
  const auto g = gelus_.find(name);
  return g == gelus_.end() ? nullptr : &g->second;
}

const NormView* Importer::find_norm(const std::string& name) const {
  const auto v = norms_.find(name);
  return v == norms_.end() ? nullptr : &v->second;
}

Layer* Importer::sole_reader_layer(const onnx::NodeProto& node, int index) {
  const auto p = producer_.find(node.input(index));
  if (p == producer_.end() || p->second == kNetworkInputName) return nullptr;
  const std::string& layer = p->second;
  int left = 0;  // reads not yet done of every name of the layer's output (this node's among them)
  for (const auto& [tensor, writer] : producer_) {
    if (writer != layer) continue;
    const auto r = pending_reads_.find(tensor);
    if (r != pending_reads_.end()) left += r->second;
  }
  if (left != 1) return nullptr;
  // A chain under way (a GELU, a layer normalisation, a channel shuffle) reads the layer when it ends.
  for (const auto& [tensor, v] : gelus_)
    if (v.layer == layer) return nullptr;
  for (const auto& [tensor, v] : norms_)
    if (v.layer == layer) return nullptr;
  for (const auto& [tensor, v] : views_)
    if (v.layer == layer) return nullptr;
  Layer* found = nullptr;
  for (Layer& l : result_.layers) {
    if (l.name == layer) found = &l;
    for (const std::string& input : l.inputs)
      if (input == layer) return nullptr;  // a layer reads it already
  }
  return found;
}

void Importer::consumed(const onnx::NodeProto& node) {
  for (const std::string& name : node.input()) {
    const auto r = pending_reads_.find(name);
    if (r != pending_reads_.end() && r->second > 0) --r->second;
  }
}

const Constant* Importer::find_constant(const std::string& name) const {
  const auto c = constants_.find(name);
  return c == constants_.end() ? nullptr : c->second.get();
}

void Importer::define_constant(const onnx::NodeProto& node, Constant c) {
  folded_values_ += c.floats.size() + c.ints.size();
  if (folded_values_ > kMaxFoldedTotal) {
    fail(node, "the values folded at load total more than " + std::to_string(kMaxFoldedTotal) +
                   "; shape arithmetic holds a few");
  }
  constants_[node.output(0)] = std::make_shared<Constant>(std::move(c));
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

long long int_attr(const onnx::NodeProto& node, const std::string& name, long long fallback) {
  const onnx::AttributeProto* a = attribute(node, name);
  return a ? a->i() : fallback;
}

float float_attr(const onnx::NodeProto& node, const std::string& name, float fallback) {
  const onnx::AttributeProto* a = attribute(node, name);
  return a ? a->f() : fallback;
}

std::vector<long long> ints_attr(const onnx::NodeProto& node, const std::string& name) {
  const onnx::AttributeProto* a = attribute(node, name);
  return a ? std::vector<long long>(a->ints().begin(), a->ints().end()) : std::vector<long long>{};
}

std::string string_attr(const onnx::NodeProto& node, const std::string& name, const std::string& fallback) {
  const onnx::AttributeProto* a = attribute(node, name);
  return a ? a->s() : fallback;
}

}  // namespace onnx_import

OnnxModel read_onnx(const std::filesystem::path& path) {
  using onnx_import::OnnxFraming;
  const std::string file = path.u8string();
  const InputFile in(path);
  in.check_size(onnx_import::kMaxOnnxBytes, "an ONNX model");
  const onnx_import::ReadAt read = [&in](std::uint64_t offset, void* out, std::size_t size) {
    in.read_at(offset, out, size);
  };
  // The initializers' raw_data left out of the parse and read into their tensors (onnx_framing.h),
  // or, where the framing is not what it reads, the whole file parsed and checked by protobuf.
  std::optional<OnnxFraming> framing = onnx_import::frame_onnx(read, in.size());
  std::vector<OnnxFraming::Piece> pieces;
  if (framing) {
    pieces = std::move(framing->pieces);
  } else {
    pieces.push_back({{0, in.size()}, {}});
  }
  onnx::ModelProto model;
  onnx_import::FileStream stream(in, std::move(pieces));
  google::protobuf::io::CopyingInputStreamAdaptor blocks(&stream, 1 << 20);
  const bool parsed = model.ParseFromZeroCopyStream(&blocks);
  stream.rethrow_failure();  // a parse of what a shrunken file still held may succeed
  if (!parsed) throw InputError(file, "not a valid ONNX model (the protobuf message does not parse)");
  if (!model.has_graph()) throw InputError(file, "the ONNX model has no graph");
  return onnx_import::Importer(file, model, static_cast<std::size_t>(in.size()), framing ? &framing->raw_data : nullptr,
                               &read)
      .run();
}

}  // namespace infer
