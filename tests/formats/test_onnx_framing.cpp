// The ONNX file's framing (formats/onnx_framing.h): the file less the initializers' raw_data, parsed,
// with each raw_data put back from where the framing says it lies, is the message protobuf parses
// from the whole file; and where the framing declines, or the bytes are damaged, protobuf's verdict
// is unchanged. On models built here, on hand-made framings protobuf accepts (a graph given twice, a
// raw_data given twice), and on thousands of damaged copies.
#include <gtest/gtest.h>
#include "onnx.pb.h"  // generated from ONNX's schema (formats/CMakeLists.txt)

#include <cstring>
#include <random>
#include <stdexcept>
#include <string>

#include "formats/onnx_framing.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

using onnx_import::frame_onnx;
using onnx_import::OnnxFraming;

std::optional<OnnxFraming> frame(const std::string& bytes) {
  return frame_onnx(
      [&bytes](std::uint64_t offset, void* out, std::size_t size) {
        if (offset > bytes.size() || size > bytes.size() - offset) throw std::out_of_range("past the end");
        std::memcpy(out, bytes.data() + offset, size);
      },
      bytes.size());
}

// Checks the framing of `bytes` against protobuf; returns whether the framing was made.
bool expect_framing_agrees(const std::string& bytes) {
  onnx::ModelProto whole;
  const bool whole_parses = whole.ParseFromString(bytes);
  const std::optional<OnnxFraming> framing = frame(bytes);
  if (!framing) return false;
  std::string rest;
  for (const OnnxFraming::Piece& p : framing->pieces) {
    rest += p.bytes.empty()
                ? bytes.substr(static_cast<std::size_t>(p.file.offset), static_cast<std::size_t>(p.file.size))
                : p.bytes;
  }
  EXPECT_EQ(rest.size(), framing->size);
  onnx::ModelProto parsed;
  EXPECT_EQ(parsed.ParseFromString(rest), whole_parses);
  if (!whole_parses) return true;
  EXPECT_EQ(framing->raw_data.size(), static_cast<std::size_t>(parsed.graph().initializer_size()));
  for (int i = 0; i < parsed.graph().initializer_size(); ++i) {
    const std::optional<onnx_import::ByteRange>& raw = framing->raw_data[static_cast<std::size_t>(i)];
    if (raw) {
      parsed.mutable_graph()->mutable_initializer(i)->set_raw_data(
          bytes.substr(static_cast<std::size_t>(raw->offset), static_cast<std::size_t>(raw->size)));
    }
  }
  EXPECT_EQ(parsed.SerializeAsString(), whole.SerializeAsString());
  return true;
}

onnx::TensorProto* initializer(onnx::GraphProto* g, const std::string& name, const std::string& raw) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(static_cast<long long>(raw.size() / 4));
  t->set_raw_data(raw);
  return t;
}

// A model with what an exporter writes around the weights: nodes, a Constant whose tensor has a
// raw_data of its own (not an initializer's: it stays in the parse), typed initializers, names.
std::string built_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("framing");
  initializer(g, "w", "raw bytes of w....");
  initializer(g, "b", std::string(300, 'x').replace(0, 12, "raw bytes of"));
  onnx::TensorProto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(1);
  shape->add_int64_data(-1);
  initializer(g, "empty", "");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Constant");
  n->add_output("c");
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->set_raw_data("CONSTANT");
  initializer(g, "big", std::string(200000, 'y').replace(0, 12, "raw bytes of"));
  g->add_input()->set_name("x");
  g->add_output()->set_name("y");
  return m.SerializeAsString();
}

TEST(OnnxFraming, LeavesOutOnlyTheInitializersRawData) {
  const std::string bytes = built_model();
  ASSERT_TRUE(expect_framing_agrees(bytes));
  const std::optional<OnnxFraming> framing = frame(bytes);
  ASSERT_TRUE(framing);
  ASSERT_EQ(framing->raw_data.size(), 5u);
  EXPECT_TRUE(framing->raw_data[0] && framing->raw_data[1] && framing->raw_data[4]);
  EXPECT_FALSE(framing->raw_data[2]);  // int64_data
  EXPECT_LT(framing->size, 1000u);     // the weights are not in it
  std::string rest;
  for (const OnnxFraming::Piece& p : framing->pieces) {
    rest += p.bytes.empty()
                ? bytes.substr(static_cast<std::size_t>(p.file.offset), static_cast<std::size_t>(p.file.size))
                : p.bytes;
  }
  EXPECT_EQ(rest.find("raw bytes of"), std::string::npos) << "an initializer's raw_data is still in the parse";
  EXPECT_NE(rest.find("CONSTANT"), std::string::npos) << "the Constant's tensor left the parse";
}

// protobuf merges a message given twice and keeps the last of a field given twice: so does the framing.
TEST(OnnxFraming, FollowsProtobufOnRepeatedFields) {
  const std::string model = built_model();
  EXPECT_TRUE(expect_framing_agrees(model + model));  // two graphs: their initializers in order
  onnx::TensorProto t;
  t.set_name("twice");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(1);
  t.set_raw_data("raw bytes of first");
  std::string tensor = t.SerializeAsString();
  t.Clear();
  t.set_raw_data("last");
  tensor += t.SerializeAsString();  // raw_data again, later
  std::string bytes;
  bytes += '\x3a';             // field 7 (graph), wire type 2
  std::string graph = "\x2a";  // field 5 (initializer), wire type 2
  graph += static_cast<char>(tensor.size());
  graph += tensor;
  bytes += static_cast<char>(graph.size());
  bytes += graph;
  ASSERT_TRUE(expect_framing_agrees(bytes));
  EXPECT_EQ(frame(bytes)->raw_data[0]->size, 4u);
}

// Damaged copies (bytes changed, the file cut short): the framing declines or agrees with protobuf.
TEST(OnnxFraming, DamagedFilesKeepProtobufsVerdict) {
  const std::string model = built_model();
  std::mt19937 rng(12345);
  int framed = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    std::string bytes = model;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % bytes.size();
      if (rng() % 4 == 0) {
        bytes.resize(at);
        if (bytes.empty()) break;
      } else {
        bytes[at] = static_cast<char>(rng());
      }
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    framed += expect_framing_agrees(bytes) ? 1 : 0;
    if (HasFailure()) break;
  }
  EXPECT_GT(framed, 100) << "the framing declined nearly every damaged copy: the test checks little";
}

}  // namespace
}  // namespace infer::test
