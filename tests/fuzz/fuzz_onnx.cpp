// The ONNX import on arbitrary bytes: the protobuf message, the graph, attributes, initializers of
// any declared size and type, node wiring. A model that loads is run once on the CPU backend when
// its activations are small, so what the import accepts is exercised by the ops too.
// Invariants: the framing (formats/onnx_framing.h) declines, or its pieces with each initializer's
// raw_data put back parse to what protobuf parses from the whole input; loading fails only with InputError; a loaded
// network's layers read earlier layers and have positive shapes; outputs of a finite input are not checked for
// finiteness (an ONNX file's weights may overflow float32 arithmetic legitimately) but the run must not crash.
#include "onnx.pb.h"  // generated from ONNX's schema (formats/CMakeLists.txt)

#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "formats/model_file.h"
#include "formats/onnx_framing.h"
#include "infer/errors.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void check_framing(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const auto framing = infer::onnx_import::frame_onnx(
      [&bytes](std::uint64_t offset, void* out, std::size_t n) {
        FUZZ_CHECK(offset <= bytes.size() && n <= bytes.size() - offset);
        std::memcpy(out, bytes.data() + offset, n);
      },
      bytes.size());
  if (!framing) return;
  std::string rest;
  for (const auto& p : framing->pieces) {
    rest += p.bytes.empty()
                ? bytes.substr(static_cast<std::size_t>(p.file.offset), static_cast<std::size_t>(p.file.size))
                : p.bytes;
  }
  FUZZ_CHECK(rest.size() == framing->size);
  onnx::ModelProto whole, parsed;
  const bool whole_parses = whole.ParseFromString(bytes);
  FUZZ_CHECK(parsed.ParseFromString(rest) == whole_parses);
  if (!whole_parses) return;
  FUZZ_CHECK(framing->raw_data.size() == static_cast<std::size_t>(parsed.graph().initializer_size()));
  for (int i = 0; i < parsed.graph().initializer_size(); ++i) {
    if (const auto& raw = framing->raw_data[static_cast<std::size_t>(i)]) {
      parsed.mutable_graph()->mutable_initializer(i)->set_raw_data(
          bytes.substr(static_cast<std::size_t>(raw->offset), static_cast<std::size_t>(raw->size)));
    }
  }
  FUZZ_CHECK(parsed.SerializeAsString() == whole.SerializeAsString());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check_framing(data, size);
  const std::filesystem::path path = infer::fuzz::write_input("model.onnx", data, size);
  std::unique_ptr<infer::LoadedModel> model;
  try {
    model = std::make_unique<infer::LoadedModel>(infer::load_model(path));
  } catch (const infer::InputError&) {
    return 0;
  }
  const infer::Network& net = model->network;
  std::size_t largest = net.input().dims.size();
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    const infer::Layer& layer = net.layers()[i];
    FUZZ_CHECK(layer.out.c > 0 && layer.out.h > 0 && layer.out.w > 0);
    for (std::size_t a : layer.sources) FUZZ_CHECK(a <= i);
    largest = std::max(largest, layer.out.size());
  }
  if (largest > (1u << 16)) return 0;  // valid, but too large to run at fuzzing speed
  const auto backend = infer::make_cpu_backend(net, 1);
  std::vector<float> input(net.input().dims.size(), 0.5f), output(net.output_dims().size());
  backend->forward(input.data(), 1, output.data());
  return 0;
}
