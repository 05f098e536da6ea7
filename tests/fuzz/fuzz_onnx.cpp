// The ONNX import on arbitrary bytes: the protobuf message, the graph, attributes, initializers of
// any declared size and type, node wiring. A model that loads is run once on the CPU backend when
// its activations are small, so what the import accepts is exercised by the ops too.
// Invariants: loading fails only with InputError; a loaded network's layers read earlier layers and
// have positive shapes; outputs of a finite input are not checked for finiteness (an ONNX file's
// weights may overflow float32 arithmetic legitimately) but the run must not crash.
#include <cstring>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "backends/cpu/cpu_backend.h"
#include "infer/errors.h"
#include "formats/model_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
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
